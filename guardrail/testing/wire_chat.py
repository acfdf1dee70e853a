"""OpenAI Chat Completions on the wire: ``POST /v1/chat/completions``, JSON body or SSE chunks.

Field names follow the openai SDK's ``ChatCompletion`` / ``ChatCompletionChunk`` types.
"""

from __future__ import annotations

from typing import Any

from guardrail.testing.behaviours import Reply
from guardrail.testing.recording import RecordedRequest
from guardrail.testing.rendering import Output, new_id, now, pieces, sse
from guardrail.testing.wire_errors import openai_stream_error_type

__all__ = ["chat_body", "chat_stream"]


def _usage(out: Output) -> dict[str, Any]:
    return {
        "prompt_tokens": out.input_tokens,
        "completion_tokens": out.output_tokens,
        "total_tokens": out.input_tokens + out.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _finish_reason(out: Output) -> str:
    if out.truncated:
        return "length"
    if out.kind == "tool" and not out.forced:
        return "tool_calls"
    # A tool forced by name ends with "stop", as OpenAI reports it.
    return "stop"


def chat_body(out: Output) -> dict[str, Any]:
    """The non-streaming ``chat.completion`` object for ``out``."""
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None, "annotations": []}
    if out.kind == "text":
        message["content"] = out.content
    elif out.kind == "refusal":
        message["refusal"] = out.content
    else:
        message["tool_calls"] = [
            {
                "id": new_id("call_"),
                "type": "function",
                "function": {"name": out.tool_name, "arguments": out.content},
            }
        ]
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": now(),
        "model": out.model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": _finish_reason(out)}],
        "usage": _usage(out),
        "service_tier": "default",
        "system_fingerprint": "fp_emulator",
    }


def chat_stream(out: Output, request: RecordedRequest, failure: Reply | None = None) -> list[bytes]:
    """SSE frames for a streamed completion; with ``failure`` (a ``stream_error``), the deltas are followed by
    a ``data: {"error": {...}}`` line and the stream ends without ``[DONE]``."""
    options = request.body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    base: dict[str, Any] = {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": now(),
        "model": out.model,
        "service_tier": "default",
        "system_fingerprint": "fp_emulator",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        frame: dict[str, Any] = {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            frame["usage"] = None
        return sse(frame)

    frames: list[bytes] = []
    if out.kind == "text":
        frames.append(chunk({"role": "assistant", "content": "", "refusal": None}))
        frames.extend(chunk({"content": piece}) for piece in pieces(out.content))
    elif out.kind == "refusal":
        frames.append(chunk({"role": "assistant", "content": None, "refusal": ""}))
        frames.extend(chunk({"refusal": piece}) for piece in pieces(out.content))
    else:
        call = {
            "index": 0,
            "id": new_id("call_"),
            "type": "function",
            "function": {"name": out.tool_name, "arguments": ""},
        }
        frames.append(chunk({"role": "assistant", "content": None, "tool_calls": [call]}))
        frames.extend(
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}) for piece in pieces(out.content)
        )
    if failure is not None:
        error = {
            "message": failure.message,
            "type": openai_stream_error_type(failure.error_type),
            "param": None,
            "code": None,
        }
        frames.append(sse({"error": error}))
        return frames
    frames.append(chunk({}, _finish_reason(out)))
    if include_usage:
        frames.append(sse({**base, "choices": [], "usage": _usage(out)}))
    frames.append(sse("[DONE]"))
    return frames
