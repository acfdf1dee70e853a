"""Vendor adapters: one per wire format (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages)."""
