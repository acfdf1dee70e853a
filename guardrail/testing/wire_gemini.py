"""Gemini ``generateContent`` on the wire: ``POST /{version}/models/{model}:generateContent`` (JSON) and
``:streamGenerateContent?alt=sse`` (an event stream of the same responses in pieces), on the Gemini API's paths
and on Vertex AI's (``/{version}/[projects/{p}/locations/{l}/]publishers/google/models/{model}:...``).

Field names follow the REST API (camelCase), as the google-genai SDK reads them: ``candidates[0].content.parts``,
``finishReason``, ``promptFeedback.blockReason``, ``usageMetadata`` (``promptTokenCount`` includes the cached
part, ``cachedContentTokenCount``; ``candidatesTokenCount`` excludes the thinking, ``thoughtsTokenCount``).
Errors are Google's ``{"error": {"code", "message", "status"}}`` (:func:`gemini_error`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from guardrail.testing.behaviours import Reply
from guardrail.testing.rendering import Output, new_id, pieces, sse

__all__ = ["GEMINI_PATH", "gemini_body", "gemini_error", "gemini_stream"]

#: The request paths of the Gemini API and of Vertex AI: the model and the method are in the path.
GEMINI_PATH = re.compile(r"^/v1[a-z0-9]*/(?:projects/[^/]+/locations/[^/]+/)?(?:publishers/[^/]+/)?models/"
                         r"(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")

#: Google's canonical status names of the HTTP statuses the emulator answers with.
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
           503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def _args(arguments: str) -> dict[str, Any] | None:
    """Function call arguments as the object the API sends (``None``: not an object, which the API cannot send)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _finish(out: Output, reply: Reply | None) -> str:
    if out.truncated:
        return "MAX_TOKENS"
    if out.kind == "refusal":
        return (reply.code if reply is not None and reply.code else None) or "SAFETY"
    if out.kind == "tool" and _args(out.content) is None:
        return "MALFORMED_FUNCTION_CALL"
    return "STOP"


def _usage(out: Output, output_tokens: int) -> dict[str, Any]:
    thoughts = min(out.reasoning_tokens, output_tokens)
    usage: dict[str, Any] = {"promptTokenCount": out.input_tokens, "candidatesTokenCount": output_tokens - thoughts,
                             "totalTokenCount": out.input_tokens + output_tokens}
    if out.cached_tokens:
        usage["cachedContentTokenCount"] = out.cached_tokens
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def _response(out: Output, parts: list[dict[str, Any]] | None, finish: str | None, output_tokens: int,
              response_id: str) -> dict[str, Any]:
    candidate: dict[str, Any] = {"index": 0}
    if parts is not None:
        candidate["content"] = {"role": "model", "parts": parts}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": _usage(out, output_tokens), "modelVersion": out.model,
            "responseId": response_id}


def _blocked(out: Output, reply: Reply, response_id: str) -> dict[str, Any]:
    """A blocked prompt: ``promptFeedback.blockReason`` and no candidates."""
    return {"promptFeedback": {"blockReason": reply.code or "SAFETY"},
            "usageMetadata": {"promptTokenCount": out.input_tokens, "totalTokenCount": out.input_tokens},
            "modelVersion": out.model, "responseId": response_id}


def _parts(out: Output, text: str) -> list[dict[str, Any]] | None:
    """The parts of an answer holding ``text`` (a safety stop or a malformed call has none)."""
    if out.kind == "refusal":
        return None
    if out.kind == "tool":
        args = _args(out.content)
        return None if args is None else [{"functionCall": {"name": out.tool_name, "args": args}}]
    return [{"text": text}]


def gemini_body(out: Output, reply: Reply | None = None) -> dict[str, Any]:
    """The non-streaming ``GenerateContentResponse`` for ``out`` (``reply``: the behaviour, for a refusal's
    finish reason and a blocked prompt)."""
    if reply is not None and reply.kind == "refusal" and reply.variant == "prompt_blocked":
        return _blocked(out, reply, new_id(""))
    return _response(out, _parts(out, out.content), _finish(out, reply), out.output_tokens, new_id(""))


def gemini_stream(out: Output, reply: Reply | None, failure: Reply | None = None) -> list[bytes]:
    """SSE frames (``data: {response}``), each a ``GenerateContentResponse`` with the next piece of text (a
    function call comes whole, in one frame, as the API sends it); the last carries the finish reason and the
    whole usage. With ``failure``, the pieces are followed by ``{"error": {...}}`` and the stream ends."""
    response_id = new_id("")
    if reply is not None and reply.kind == "refusal" and reply.variant == "prompt_blocked":
        return [sse(_blocked(out, reply, response_id))]
    frames: list[bytes] = []
    texts = pieces(out.content, out.delta_chars) if out.kind == "text" else []
    for index, piece in enumerate(texts[:-1] if failure is None else texts):
        frames.append(sse(_response(out, [{"text": piece}], None, min(index + 1, out.output_tokens), response_id)))
    if failure is not None:
        frames.append(sse(gemini_error(503, failure.message or "The model is overloaded.")))
        return frames
    last = texts[-1] if texts else ""
    frames.append(sse(_response(out, _parts(out, last), _finish(out, reply), out.output_tokens, response_id)))
    return frames


def gemini_error(status: int, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Google's error body: ``{"error": {"code", "message", "status"[, "details"]}}``."""
    error: dict[str, Any] = {"code": status, "message": message,
                             "status": _STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")}
    if details:
        error["details"] = details
    return {"error": error}
