"""OpenAI Chat Completions on the wire: ``POST /v1/chat/completions``, JSON body or SSE chunks.

Field names follow the openai SDK's ``ChatCompletion`` / ``ChatCompletionChunk`` types. A request with
``"logprobs": true`` gets ``choices[0].logprobs`` as ``{"content": [...], "refusal": null}`` (the refusal's
tokens under ``"refusal"`` for a refusal; both null for a tool call), one ``ChatCompletionTokenLogprob`` per
token: ``token``, ``logprob``, ``bytes`` (UTF-8) and ``top_logprobs`` (the ``top_logprobs`` most probable
alternatives, most probable first; empty when the request asked for none). The tokens are the ones a
:func:`~guardrail.testing.reply.logprobs` behaviour scripted, else the text split into words (a word with the
spaces before it), each with logprob 0. Streamed, each such token is one delta carrying its own entry.
"""

from __future__ import annotations

import re
from typing import Any

from guardrail.testing.behaviours import Reply, TokenStep
from guardrail.testing.recording import RecordedRequest
from guardrail.testing.rendering import Output, new_id, now, pieces, sse
from guardrail.testing.wire_errors import openai_stream_error_type

__all__ = ["chat_body", "chat_stream"]


def _usage(out: Output) -> dict[str, Any]:
    return {
        "prompt_tokens": out.input_tokens,
        "completion_tokens": out.output_tokens,
        "total_tokens": out.input_tokens + out.output_tokens,
        "prompt_tokens_details": {"cached_tokens": out.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": out.reasoning_tokens,
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


def _steps(out: Output) -> tuple[TokenStep, ...]:
    if out.tokens is not None:
        return out.tokens
    return tuple((word, ((word, 0.0),)) for word in re.findall(r"\s*\S+|\s+", out.content))


def _entry(step: TokenStep, top: int) -> dict[str, Any]:
    """One ``ChatCompletionTokenLogprob``: the generated token and the ``top`` most probable alternatives."""
    token, alternatives = step
    logprob = next(value for name, value in alternatives if name == token)
    ranked = sorted(alternatives, key=lambda item: -item[1])[:top]
    return {
        "token": token,
        "logprob": logprob,
        "bytes": list(token.encode()),
        "top_logprobs": [{"token": name, "logprob": value, "bytes": list(name.encode())} for name, value in ranked],
    }


def _logprobs(out: Output, steps: tuple[TokenStep, ...] | None = None) -> dict[str, Any] | None:
    """``choices[0].logprobs`` for ``out`` (only the given ``steps`` when streaming a piece), or ``None``."""
    if out.top_logprobs is None:
        return None
    if out.kind == "tool":
        return {"content": None, "refusal": None}
    entries = [_entry(step, out.top_logprobs) for step in (_steps(out) if steps is None else steps)]
    if out.kind == "refusal":
        return {"content": None, "refusal": entries}
    return {"content": entries, "refusal": None}


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
        "choices": [
            {"index": 0, "message": message, "logprobs": _logprobs(out), "finish_reason": _finish_reason(out)}
        ],
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

    def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: dict[str, Any] | None = None) -> bytes:
        frame: dict[str, Any] = {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}],
        }
        if include_usage:
            frame["usage"] = None
        return sse(frame)

    frames: list[bytes] = []
    if out.kind != "tool" and out.top_logprobs is not None:
        # One delta per token, each with its own logprobs entry (as the API streams them).
        if out.kind == "refusal":
            frames.append(chunk({"role": "assistant", "content": None, "refusal": ""}))
        else:
            frames.append(chunk({"role": "assistant", "content": "", "refusal": None}))
        field = "refusal" if out.kind == "refusal" else "content"
        frames.extend(chunk({field: step[0]}, logprobs=_logprobs(out, (step,))) for step in _steps(out))
    elif out.kind == "text":
        frames.append(chunk({"role": "assistant", "content": "", "refusal": None}))
        frames.extend(chunk({"content": piece}) for piece in pieces(out.content, out.delta_chars))
    elif out.kind == "refusal":
        frames.append(chunk({"role": "assistant", "content": None, "refusal": ""}))
        frames.extend(chunk({"refusal": piece}) for piece in pieces(out.content, out.delta_chars))
    else:
        call = {
            "index": 0,
            "id": new_id("call_"),
            "type": "function",
            "function": {"name": out.tool_name, "arguments": ""},
        }
        frames.append(chunk({"role": "assistant", "content": None, "tool_calls": [call]}))
        frames.extend(
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in pieces(out.content, out.delta_chars)
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
