"""Shared pieces of the wire modules: the vendor-neutral :class:`Output`, ids, SSE frames, stream pieces."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

from guardrail.testing.behaviours import STREAM_PIECE, Reply, TokenStep
from guardrail.testing.recording import RecordedRequest, estimate_tokens

__all__ = ["DEFAULT_MODEL", "Output", "new_id", "now", "pieces", "resolve", "sse"]

#: Echoed as ``model`` when a request names none.
DEFAULT_MODEL = "emulated-model"

@dataclass(frozen=True)
class Output:
    """What the emulated model produced, before any vendor's shape is applied.

    ``kind`` is ``"text"`` (message text), ``"tool"`` (a call of ``tool_name`` with ``content`` as its
    arguments) or ``"refusal"``; ``truncated`` marks output cut off by the token limit; ``forced`` says the
    request forced a tool by name (OpenAI then reports ``finish_reason "stop"``, not ``"tool_calls"``).
    ``top_logprobs`` is how many alternatives per token a Chat Completions request asked for with
    ``"logprobs": true`` (``None``: it did not ask for logprobs); ``tokens`` are the scripted tokens
    (:func:`~guardrail.testing.reply.logprobs`), ``None`` when the behaviour scripted none.
    """

    kind: Literal["text", "tool", "refusal"]
    content: str
    tool_name: str
    truncated: bool
    forced: bool
    input_tokens: int
    output_tokens: int
    model: str
    top_logprobs: int | None = None
    tokens: tuple[TokenStep, ...] | None = None
    #: Parts of ``input_tokens`` read from / written to the prompt cache, and of ``output_tokens`` spent reasoning.
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    #: Characters per streamed delta (:meth:`~guardrail.testing.behaviours.Reply.streamed_in`).
    delta_chars: int = STREAM_PIECE


def resolve(reply: Reply, request: RecordedRequest) -> Output:
    """Turn a content behaviour (answer, text, tool_call, truncated, refusal, stream_error, and the answers that
    malformed_event and cut spoil) into an Output."""
    forced = request.forced_tool
    kind: Literal["text", "tool", "refusal"]
    if reply.kind in ("answer", "truncated", "malformed_event", "cut"):
        kind = "tool" if forced else "text"
    elif reply.kind == "tool_call":
        kind = "tool"
    elif reply.kind == "refusal":
        kind = "refusal"
    else:
        kind = "text"
    if reply.usage is not None:
        input_tokens, output_tokens = reply.usage
    else:
        output_tokens = len(reply.tokens) if reply.tokens is not None else estimate_tokens(reply.text)
        input_tokens = estimate_tokens(request.prompt_text)
    return Output(
        kind=kind,
        content=reply.text,
        tool_name=reply.name or forced or "output",
        truncated=reply.kind == "truncated",
        forced=forced is not None and request.api != "messages" and _named_choice(request),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model=request.model or DEFAULT_MODEL,
        top_logprobs=_top_logprobs(request),
        tokens=reply.tokens,
        cached_tokens=min(reply.cached_tokens, input_tokens),
        cache_write_tokens=min(reply.cache_write_tokens, max(0, input_tokens - reply.cached_tokens)),
        reasoning_tokens=min(reply.reasoning_tokens, output_tokens),
        delta_chars=reply.delta_chars,
    )


def _top_logprobs(request: RecordedRequest) -> int | None:
    """Alternatives per token a Chat Completions request asked for (``None``: no ``"logprobs": true``)."""
    if request.api != "chat" or request.body.get("logprobs") is not True:
        return None
    count = request.body.get("top_logprobs")
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


def _named_choice(request: RecordedRequest) -> bool:
    choice = request.body.get("tool_choice")
    return isinstance(choice, dict) and choice.get("type") == "function"


def new_id(prefix: str) -> str:
    """A plausible vendor id: ``prefix`` plus 24 random hex digits."""
    return prefix + uuid.uuid4().hex[:24]


def now() -> int:
    """Current Unix time in whole seconds, as the vendors stamp ``created``."""
    return int(time.time())


def pieces(text: str, size: int = STREAM_PIECE) -> list[str]:
    """``text`` split into the deltas a stream sends, ``size`` characters each (none for empty text)."""
    return [text[index : index + size] for index in range(0, len(text), size)]


def sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    """One Server-Sent Events frame: optional ``event:`` line, one ``data:`` line, blank line."""
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()
