"""Opt-in content capture in the shape of the GenAI semantic conventions (``Settings(capture_content=True)``).

Each attempt becomes one ``gen_ai.client.inference.operation.details`` event on the call's span, with
``gen_ai.system_instructions``, ``gen_ai.input.messages`` and ``gen_ai.output.messages`` as the conventions'
JSON message schemas describe them (``{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call",
"id", "name", "arguments"}, {"type": "tool_call_response", "id", "result"}]}``, plus ``finish_reason`` on
output messages). Span event attributes cannot hold structures, so each is a JSON string, as the conventions
allow on spans. The input is what guardrail actually sent for that attempt (its instruction and repair turns
included), read from the three request shapes (Chat Completions ``messages``, Responses ``input`` and
``instructions``, Messages ``messages`` and ``system``). Every value passes through
:func:`guardrail.observe.redact.redact` first: API keys, tokens and the like never reach the span.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from guardrail.observe.redact import redact
from guardrail.outcome import Attempt

__all__ = ["EVENT", "event_attributes"]

#: The conventions' event name for one inference's details.
EVENT = "gen_ai.client.inference.operation.details"
_SYSTEM_ROLES = frozenset({"system", "developer"})


def event_attributes(attempt: Attempt, request: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes of one attempt's event: its redacted input, system instructions and output."""
    system, messages = _input(request)
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "guardrail.attempt": attempt.number,
                                  "gen_ai.input.messages": _json(messages),
                                  "gen_ai.output.messages": _json(_output(attempt))}
    if system:
        attributes["gen_ai.system_instructions"] = _json(system)
    return attributes


def _json(value: Any) -> str:
    return json.dumps(redact(value), ensure_ascii=False, default=str)


def _input(request: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system instruction parts, input messages) from the SDK keywords of any of the three APIs."""
    system: list[dict[str, Any]] = []
    for key in ("system", "instructions"):  # Messages / Responses
        system.extend(_parts(request.get(key)))
    messages: list[dict[str, Any]] = []
    given = request.get("messages")
    if given is None:
        given = request.get("input")
    if isinstance(given, str):
        given = [{"role": "user", "content": given}]
    for item in given or ():
        if not isinstance(item, Mapping):
            continue
        role = str(item.get("role") or "")
        kind = item.get("type")
        if kind == "function_call":  # Responses items
            messages.append({"role": "assistant", "parts": [_tool_call(item.get("call_id"), item.get("name"),
                                                                       item.get("arguments"))]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "parts": [_tool_result(item.get("call_id"), item.get("output"))]})
        elif role in _SYSTEM_ROLES:
            system.extend(_parts(item.get("content")))
        elif role == "tool":  # Chat Completions tool result
            messages.append({"role": "tool", "parts": [_tool_result(item.get("tool_call_id"), item.get("content"))]})
        else:
            parts = _parts(item.get("content"))
            for call in item.get("tool_calls") or ():
                function = call.get("function") or {} if isinstance(call, Mapping) else {}
                parts.append(_tool_call(call.get("id") if isinstance(call, Mapping) else None,
                                        function.get("name"), function.get("arguments")))
            messages.append({"role": role or "user", "parts": parts})
    return system, messages


def _parts(content: Any) -> list[dict[str, Any]]:
    """Message content (a string or a list of blocks) as convention parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else [content]:
        if not isinstance(block, Mapping):
            parts.append({"type": "text", "content": str(block)})
            continue
        kind = block.get("type")
        if kind == "tool_use":
            parts.append(_tool_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "tool_result":
            parts.append(_tool_result(block.get("tool_use_id"), block.get("content")))
        elif "text" in block:
            parts.append({"type": "text", "content": block.get("text")})
        else:
            parts.append({"type": str(kind or "unknown")})
    return parts


def _tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def _tool_result(call_id: Any, result: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "result": result}


def _output(attempt: Attempt) -> list[dict[str, Any]]:
    """The attempt's answer as one output message (none when no answer came back)."""
    if attempt.raw is None and attempt.finish_reason is None:
        return []
    part = (_tool_call(None, None, attempt.raw) if attempt.mode == "tool"
            else {"type": "text", "content": attempt.raw or ""})
    return [{"role": "assistant", "parts": [part], "finish_reason": attempt.finish_reason or ""}]
