"""Native-mode request fields for OpenAI and the OpenAI-compatible self-hosted servers.

Every server below accepts the OpenAI client, but each constrains decoding through its own fields:

=========  ==========================================================================================
openai     ``response_format: {"type": "json_schema", "json_schema": {name, schema, strict: true}}``
vllm       ``structured_outputs: {"json": schema}`` (vLLM >= 0.12; ``guided_json`` was removed)
sglang     ``response_format`` json_schema (SGLang also takes ``regex``/``ebnf``; one constraint at a time)
llamacpp   top-level ``json_schema: schema`` (llama.cpp server; it also reads ``grammar`` for GBNF)
ollama     ``format: schema`` (Ollama's own field) and ``response_format`` json_schema for its /v1 layer
=========  ==========================================================================================

Fields the openai SDK does not know travel in ``extra_body``.
"""

from __future__ import annotations

from typing import Any

from guardrail.errors import ConfigError
from guardrail.vendors.plans import Plan


def chat_native_fields(server: str | None, plan: Plan) -> dict[str, Any]:
    """The SDK keywords that ask ``server`` (``None`` = OpenAI itself) for output constrained to the plan's schema."""
    if server is None:
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": plan.name, "schema": plan.schema, "strict": plan.strict}}}
    # Grammar engines enforce the whole schema; OpenAI's "strict" subset rules do not apply to them.
    response_format = {"type": "json_schema", "json_schema": {"name": plan.name, "schema": plan.schema}}
    if server == "sglang":
        return {"response_format": response_format}
    if server == "vllm":
        return {"extra_body": {"structured_outputs": {"json": plan.schema}}}
    if server == "llamacpp":
        return {"extra_body": {"json_schema": plan.schema}}
    if server == "ollama":
        return {"response_format": response_format, "extra_body": {"format": plan.schema}}
    raise ConfigError(f"unknown server kind {server!r}; expected vllm, sglang, llamacpp or ollama")
