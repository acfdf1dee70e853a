"""OpenAI Responses on the wire: ``POST /v1/responses``, JSON body or the typed SSE event stream.

Field names follow the openai SDK's ``Response`` and ``Response*Event`` types.
"""

from __future__ import annotations

from typing import Any

from guardrail.testing.behaviours import Reply
from guardrail.testing.recording import RecordedRequest
from guardrail.testing.rendering import Output, new_id, now, pieces, sse
from guardrail.testing.wire_errors import openai_stream_error_type

__all__ = ["responses_body", "responses_stream"]


def _usage(out: Output) -> dict[str, Any]:
    return {
        "input_tokens": out.input_tokens,
        "input_tokens_details": {"cached_tokens": out.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": out.output_tokens,
        "output_tokens_details": {"reasoning_tokens": out.reasoning_tokens},
        "total_tokens": out.input_tokens + out.output_tokens,
    }


def _envelope(request: RecordedRequest, out: Output, rid: str, created: int) -> dict[str, Any]:
    body = request.body
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": out.model,
        "output": [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": body.get("metadata") or {},
    }


def _part(out: Output, text: str) -> dict[str, Any]:
    if out.kind == "refusal":
        return {"type": "refusal", "refusal": text}
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _item(out: Output, item_id: str, call_id: str, status: str, content: str) -> dict[str, Any]:
    if out.kind == "tool":
        return {
            "id": item_id,
            "type": "function_call",
            "status": status,
            "arguments": content,
            "call_id": call_id,
            "name": out.tool_name,
        }
    parts = [_part(out, content)] if status != "in_progress" else []
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": parts}


def _finish(envelope: dict[str, Any], out: Output, item: dict[str, Any]) -> dict[str, Any]:
    done = dict(envelope)
    done["status"] = "incomplete" if out.truncated else "completed"
    if out.truncated:
        done["incomplete_details"] = {"reason": "max_output_tokens"}
    else:
        done["completed_at"] = envelope["created_at"]
    done["output"] = [item]
    done["usage"] = _usage(out)
    return done


def _ids(out: Output) -> tuple[str, str]:
    return (new_id("fc_") if out.kind == "tool" else new_id("msg_")), new_id("call_")


def responses_body(request: RecordedRequest, out: Output) -> dict[str, Any]:
    """The non-streaming ``response`` object for ``out``."""
    item_id, call_id = _ids(out)
    status = "incomplete" if out.truncated else "completed"
    envelope = _envelope(request, out, new_id("resp_"), now())
    return _finish(envelope, out, _item(out, item_id, call_id, status, out.content))


def responses_stream(request: RecordedRequest, out: Output, failure: Reply | None = None) -> list[bytes]:
    """SSE frames from ``response.created`` to ``response.completed`` / ``response.incomplete``; with
    ``failure``, the deltas are followed by an ``error`` event and ``response.failed``."""
    frames: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        frames.append(sse({"type": kind, "sequence_number": len(frames), **fields}, event=kind))

    item_id, call_id = _ids(out)
    envelope = _envelope(request, out, new_id("resp_"), now())
    emit("response.created", response=envelope)
    emit("response.in_progress", response=envelope)
    emit("response.output_item.added", output_index=0, item=_item(out, item_id, call_id, "in_progress", ""))
    where: dict[str, Any] = {"item_id": item_id, "output_index": 0}
    deltas = pieces(out.content, out.delta_chars)
    if out.kind == "tool":
        for piece in deltas:
            emit("response.function_call_arguments.delta", **where, delta=piece)
    else:
        emit("response.content_part.added", **where, content_index=0, part=_part(out, ""))
        delta_kind = "response.refusal.delta" if out.kind == "refusal" else "response.output_text.delta"
        extra: dict[str, Any] = {} if out.kind == "refusal" else {"logprobs": []}
        for piece in deltas:
            emit(delta_kind, **where, content_index=0, delta=piece, **extra)
    if failure is not None:
        code = openai_stream_error_type(failure.error_type)
        emit("error", code=code, message=failure.message, param=None)
        failed = dict(envelope, status="failed", error={"code": code, "message": failure.message})
        emit("response.failed", response=failed)
        return frames
    status = "incomplete" if out.truncated else "completed"
    item = _item(out, item_id, call_id, status, out.content)
    if out.kind == "tool":
        emit("response.function_call_arguments.done", **where, name=out.tool_name, arguments=out.content)
    elif out.kind == "refusal":
        emit("response.refusal.done", **where, content_index=0, refusal=out.content)
        emit("response.content_part.done", **where, content_index=0, part=_part(out, out.content))
    else:
        emit("response.output_text.done", **where, content_index=0, text=out.content, logprobs=[])
        emit("response.content_part.done", **where, content_index=0, part=_part(out, out.content))
    emit("response.output_item.done", output_index=0, item=item)
    final = _finish(envelope, out, item)
    emit("response.incomplete" if out.truncated else "response.completed", response=final)
    return frames
