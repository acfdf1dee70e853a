"""Vendor requests and answers as the GenAI semantic conventions' message shapes (for content capture).

The conventions describe input and output messages as ``{"role", "parts": [...]}`` whatever the vendor; this
module reads the request shapes guardrail sends (Chat Completions ``messages``, Responses ``input`` and
``instructions``, Messages ``messages`` and ``system``, Gemini ``contents`` and ``config.system_instruction``)
into that shape, so :mod:`guardrail.observe.content`
never reads a vendor's keys itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardrail.outcome import Attempt

__all__ = ["input_messages", "output_messages"]

_SYSTEM_ROLES = frozenset({"system", "developer"})


def input_messages(request: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system instruction parts, input messages) from the SDK keywords of any of the three APIs."""
    if "contents" in request:  # Gemini generateContent
        return _gemini(request)
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


def _field(holder: Any, name: str) -> Any:
    """A field of a Gemini request piece, a dict or an SDK object alike."""
    return holder.get(name) if isinstance(holder, Mapping) else getattr(holder, name, None)


def _gemini_parts(parts: Any) -> list[dict[str, Any]]:
    """Gemini parts (text, ``function_call``, ``function_response``) as convention parts."""
    if isinstance(parts, str):
        return [{"type": "text", "content": parts}]
    found: list[dict[str, Any]] = []
    for part in parts if isinstance(parts, (list, tuple)) else [parts]:
        if isinstance(part, str):
            found.append({"type": "text", "content": part})
        elif _field(part, "function_call") is not None:
            call = _field(part, "function_call")
            found.append(_tool_call(_field(call, "id"), _field(call, "name"), _field(call, "args")))
        elif _field(part, "function_response") is not None:
            response = _field(part, "function_response")
            found.append(_tool_result(_field(response, "id"), _field(response, "response")))
        elif isinstance(_field(part, "text"), str):
            found.append({"type": "text", "content": _field(part, "text")})
    return found


def _gemini(request: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system parts, messages) of a Gemini request: ``config.system_instruction`` and ``contents`` (a string,
    one turn, or turns whose role ``model`` is the assistant's)."""
    instruction = _field(request.get("config"), "system_instruction")
    system = [] if instruction is None else _gemini_parts(_field(instruction, "parts") or instruction)
    contents = request.get("contents")
    turns = contents if isinstance(contents, (list, tuple)) else [contents]
    messages: list[dict[str, Any]] = []
    for turn in turns:
        if turn is None:
            continue
        parts = _field(turn, "parts")
        if parts is None:  # a loose string or part: one user turn
            messages.append({"role": "user", "parts": _gemini_parts(turn)})
            continue
        role = _field(turn, "role")
        messages.append({"role": "assistant" if role == "model" else str(role or "user"),
                         "parts": _gemini_parts(parts)})
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


def output_messages(attempt: Attempt) -> list[dict[str, Any]]:
    """The attempt's answer as one output message (none when no answer came back)."""
    if attempt.raw is None and attempt.finish_reason is None:
        return []
    part = (_tool_call(None, None, attempt.raw) if attempt.mode == "tool"
            else {"type": "text", "content": attempt.raw or ""})
    return [{"role": "assistant", "parts": [part], "finish_reason": attempt.finish_reason or ""}]
