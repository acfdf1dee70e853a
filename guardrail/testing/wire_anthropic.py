"""Anthropic Messages on the wire: ``POST /v1/messages``, JSON body or the SSE event stream.

Field names follow the anthropic SDK's ``Message`` and ``Raw*Event`` types.
"""

from __future__ import annotations

import json
from typing import Any

from guardrail.testing.behaviours import Reply
from guardrail.testing.rendering import Output, new_id, pieces, sse

__all__ = ["messages_body", "messages_events", "messages_stream", "tool_input"]


def tool_input(arguments: str) -> Any:
    """The ``input`` of a non-streamed ``tool_use`` block: the arguments as a JSON object when they parse
    as one; otherwise the raw string (the API documents an object, but a test of lenient parsing needs the
    broken text to arrive; the anthropic SDK passes a string through unvalidated)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    return value if isinstance(value, dict) else arguments


def _stop_reason(out: Output) -> str:
    if out.truncated:
        return "max_tokens"
    if out.kind == "refusal":
        return "refusal"
    return "tool_use" if out.kind == "tool" else "end_turn"


def _stop_details(out: Output) -> dict[str, Any] | None:
    if out.kind == "refusal" and not out.truncated:
        return {"type": "refusal", "category": None, "explanation": None}
    return None


def _usage(out: Output, output_tokens: int) -> dict[str, Any]:
    """Anthropic's usage: the cache buckets apart from ``input_tokens`` (the Output's total holds all three)."""
    return {
        "input_tokens": out.input_tokens - out.cached_tokens - out.cache_write_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": out.cache_write_tokens,
        "cache_read_input_tokens": out.cached_tokens,
        "output_tokens_details": {"thinking_tokens": min(out.reasoning_tokens, output_tokens)},
        "service_tier": "standard",
    }


def _message(out: Output, content: list[dict[str, Any]], stop: str | None, output_tokens: int) -> dict[str, Any]:
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": out.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "stop_details": _stop_details(out) if stop else None,
        "usage": _usage(out, output_tokens),
    }


def messages_body(out: Output) -> dict[str, Any]:
    """The non-streaming ``message`` object for ``out``."""
    if out.kind == "tool":
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": new_id("toolu_"),
            "name": out.tool_name,
            "input": tool_input(out.content),
        }
    else:
        block = {"type": "text", "text": out.content}
    return _message(out, [block], _stop_reason(out), out.output_tokens)


def messages_stream(out: Output, failure: Reply | None = None) -> list[bytes]:
    """SSE frames from ``message_start`` to ``message_stop``; with ``failure``, the deltas are followed by
    ``event: error`` with ``{"type": "error", "error": {"type", "message"}}`` and the stream ends."""
    return [sse(event, event=str(event["type"])) for event in messages_events(out, failure)]


def messages_events(out: Output, failure: Reply | None = None) -> list[dict[str, Any]]:
    """The stream's events as JSON objects (each with its ``type``), whatever framing carries them: SSE for the
    first-party API and Vertex AI, AWS event-stream frames for Bedrock (:mod:`.wire_platforms`)."""
    events: list[dict[str, Any]] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, **fields})

    emit("message_start", message=_message(out, [], None, min(1, out.output_tokens)))
    emit("ping")
    if out.kind == "tool":
        block: dict[str, Any] = {"type": "tool_use", "id": new_id("toolu_"), "name": out.tool_name, "input": {}}
        emit("content_block_start", index=0, content_block=block)
        for piece in pieces(out.content, out.delta_chars):
            emit("content_block_delta", index=0, delta={"type": "input_json_delta", "partial_json": piece})
    else:
        emit("content_block_start", index=0, content_block={"type": "text", "text": ""})
        for piece in pieces(out.content, out.delta_chars):
            emit("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
    if failure is not None:
        error = {"type": failure.error_type or "overloaded_error", "message": failure.message}
        emit("error", error=error)
        return events
    emit("content_block_stop", index=0)
    delta = {"stop_reason": _stop_reason(out), "stop_sequence": None, "stop_details": _stop_details(out)}
    emit("message_delta", delta=delta, usage={"output_tokens": out.output_tokens,
                                              "output_tokens_details": {"thinking_tokens": out.reasoning_tokens}})
    emit("message_stop")
    return events
