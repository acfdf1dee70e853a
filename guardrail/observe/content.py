"""Opt-in content capture in the shape of the GenAI semantic conventions (``Settings(capture_content=True)``).

Each attempt becomes one ``gen_ai.client.inference.operation.details`` event on the call's span, with
``gen_ai.system_instructions``, ``gen_ai.input.messages`` and ``gen_ai.output.messages`` as the conventions'
JSON message schemas describe them (``{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call",
"id", "name", "arguments"}, {"type": "tool_call_response", "id", "result"}]}``, plus ``finish_reason`` on
output messages). Span event attributes cannot hold structures, so each is a JSON string, as the conventions
allow on spans. The input is what guardrail actually sent for that attempt (its instruction and repair turns
included), read from the request by :mod:`guardrail.vendors.semconv` (the only reader of vendor shapes).
Every value passes through :func:`guardrail.observe.redact.redact` first: API keys, tokens and the like never
reach the span.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from guardrail.observe.redact import redact
from guardrail.outcome import Attempt
from guardrail.vendors.semconv import input_messages, output_messages

__all__ = ["EVENT", "event_attributes"]

#: The conventions' event name for one inference's details.
EVENT = "gen_ai.client.inference.operation.details"


def event_attributes(attempt: Attempt, request: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of one attempt's event: its redacted input, system instructions and output."""
    system, messages = input_messages(request)
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "guardrail.attempt": attempt.number,
                                  "gen_ai.input.messages": _json(messages),
                                  "gen_ai.output.messages": _json(output_messages(attempt))}
    if system:
        attributes["gen_ai.system_instructions"] = _json(system)
    return attributes


def _json(value: Any) -> str:
    return json.dumps(redact(value), ensure_ascii=False, default=str)
