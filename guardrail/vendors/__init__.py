"""Vendor adapters: one per wire format (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages).

Each endpoint (:class:`ChatCompletions`, :class:`Responses`, :class:`Messages`) implements :class:`Endpoint`
and answers a :class:`Completion`. Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.vendors.anthropic_messages import Messages
    from guardrail.vendors.base import Completion, Endpoint
    from guardrail.vendors.openai_chat import ChatCompletions
    from guardrail.vendors.openai_responses import Responses

_NAMES: dict[str, str] = {
    "ChatCompletions": "guardrail.vendors.openai_chat",
    "Completion": "guardrail.vendors.base",
    "Endpoint": "guardrail.vendors.base",
    "Messages": "guardrail.vendors.anthropic_messages",
    "Responses": "guardrail.vendors.openai_responses",
}

__all__ = [
    "ChatCompletions",
    "Completion",
    "Endpoint",
    "Messages",
    "Responses",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
