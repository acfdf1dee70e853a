"""Behaviours: what the emulated model (or vendor) does with one request.

A behaviour is an immutable :class:`Reply` value, built by the constructors below (re-exported as the
``guardrail.testing.reply`` namespace: ``reply.answer(...)``, ``reply.rate_limited(...)``, ...). The same
value works on every endpoint; the wire modules render it in each vendor's shape, so one script can drive
an OpenAI and an Anthropic client alike.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from guardrail.errors import ConfigError

#: The behaviour constructors and :class:`Reply`: the one list of them, re-exported as ``guardrail.testing.reply``
#: and by ``guardrail.testing`` (the other public names here are imported by name).
__all__ = [
    "Reply",
    "answer",
    "cut",
    "drop",
    "error",
    "html_page",
    "logprobs",
    "malformed_event",
    "not_json",
    "overloaded",
    "rate_limited",
    "raw",
    "refusal",
    "schema_rejected",
    "server_error",
    "stream_error",
    "text",
    "timeout",
    "tool_call",
    "truncated",
]

ReplyKind = Literal["answer", "text", "tool_call", "truncated", "refusal", "error", "timeout", "drop", "stream_error",
                    "raw", "malformed_event", "cut"]
#: Error flavours the wire modules render per vendor (a plain ``error`` is rendered as given).
ErrorVariant = Literal["plain", "schema_rejected", "rate_limited", "spend_limit", "server_error", "overloaded",
                       "prompt_blocked"]

DEFAULT_REFUSAL = "I'm sorry, but I can't help with that."

#: One generated token and the alternatives at its position: ``(token, ((alternative, logprob), ...))``.
TokenStep = tuple[str, tuple[tuple[str, float], ...]]
#: Characters per streamed text delta (a vendor's SSE deltas are a token or a few: about this long).
STREAM_PIECE = 12
#: OpenAI's logprob for "very unlikely" (a probability of 0 given to :func:`logprobs` is sent as this).
VERY_UNLIKELY = -9999.0


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One behaviour of the emulated vendor. Build it with the module's constructors, not directly.

    Attributes:
        kind: which behaviour (``"answer"``, ``"text"``, ``"tool_call"``, ``"truncated"``, ``"refusal"``,
            ``"error"``, ``"timeout"``, ``"drop"``, ``"stream_error"``).
        text: the model's output text (tool arguments for a tool call, the refusal text for a refusal, the
            text sent before the error for ``stream_error``).
        name: the tool name for ``tool_call`` (``None``: the forced tool, else ``"output"``).
        usage: ``(input_tokens, output_tokens)`` to report instead of the estimate.
        status, error_type, code, message, param, variant: the HTTP error to answer with (``kind == "error"``), or
            the error event of ``stream_error``; for a :func:`refusal`, ``code`` is Gemini's finish (or block)
            reason and ``variant`` ``"prompt_blocked"`` a blocked prompt.
        headers: extra response headers, as ``(name, value)`` pairs.
        seconds: how long ``timeout`` stalls.
        then: what ``timeout`` does after the stall (``None``: close the connection).
        delay: seconds to wait before answering (added to the emulator's ``latency``); see :meth:`after`.
        tokens: for :func:`logprobs`, the generated tokens with the alternatives (and logprobs) at each position;
            ``None``: a request that asks for logprobs gets the text split into words, each certain.
        content_type: the ``content-type`` of a :func:`raw` body.
        line: the bad line a :func:`malformed_event` puts in the middle of a stream.
        fraction: how much of the body :func:`cut` sends before closing the connection.
        every, piece: trickle the body out ``piece`` bytes at a time, ``every`` seconds apart (see
            :meth:`trickled`); ``every == 0`` sends it at once.
        slow_head: trickle the status line and headers too (``trickled(..., headers=True)``).
        delta_chars: characters of text per streamed delta (see :meth:`streamed_in`).
        cached_tokens, cache_write_tokens, reasoning_tokens: the usage details to report (see
            :meth:`with_usage_details`).
    """

    kind: ReplyKind
    text: str = ""
    name: str | None = None
    usage: tuple[int, int] | None = None
    status: int = 200
    error_type: str | None = None
    code: str | None = None
    message: str = ""
    variant: ErrorVariant = "plain"
    headers: tuple[tuple[str, str], ...] = ()
    param: str | None = None
    seconds: float = 0.0
    then: Reply | None = None
    delay: float = 0.0
    tokens: tuple[TokenStep, ...] | None = None
    content_type: str = ""
    line: str = ""
    fraction: float = 1.0
    every: float = 0.0
    piece: int = 1
    slow_head: bool = False
    delta_chars: int = STREAM_PIECE
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def with_usage_details(self, *, cached: int = 0, cache_write: int = 0, reasoning: int = 0) -> Reply:
        """The same behaviour reporting prompt-cache and reasoning tokens in its usage, as each vendor does.

        The counts are parts of the input and output totals (the behaviour's ``usage``, or the estimate):
        OpenAI sends ``prompt_tokens_details.cached_tokens`` / ``completion_tokens_details.reasoning_tokens``
        (Responses: ``input_tokens_details`` / ``output_tokens_details``) within its totals; Anthropic sends
        ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` *apart from* ``input_tokens`` (which is
        then the total less both) and ``output_tokens_details.thinking_tokens``. ``cache_write`` is
        Anthropic's alone (OpenAI writes its cache for free and does not report it).
        """
        if min(cached, cache_write, reasoning) < 0:
            raise ValueError("with_usage_details() counts must be 0 or more")
        return dataclasses.replace(self, cached_tokens=int(cached), cache_write_tokens=int(cache_write),
                                   reasoning_tokens=int(reasoning))

    def after(self, seconds: float) -> Reply:
        """The same behaviour, answered ``seconds`` later (simulated model latency)."""
        return dataclasses.replace(self, delay=seconds)

    def trickled(self, every: float, piece: int = 1, *, headers: bool = False) -> Reply:
        """The same behaviour with its body sent ``piece`` bytes at a time, ``every`` seconds apart.

        Each read the client makes returns within ``every`` seconds, so a per-read timeout never fires while
        the whole body takes as long as its length says: the case only a wall-clock deadline bounds. The
        status line and headers go out at once unless ``headers`` is true (then they trickle too, before the
        body); JSON bodies, error bodies (:func:`error`, :func:`server_error`...) and streams trickle alike.
        When the client closes the connection before the body is finished, :attr:`Emulator.closed_early`
        counts it.
        """
        if every < 0 or piece < 1:
            raise ConfigError("trickled() needs every >= 0 and piece >= 1")
        return dataclasses.replace(self, every=float(every), piece=int(piece), slow_head=bool(headers))

    def streamed_in(self, chars: int) -> Reply:
        """The same behaviour with a streamed answer's text (or tool arguments) sent ``chars`` characters per
        delta event (by default :data:`STREAM_PIECE`, about what the vendors send)."""
        if chars < 1:
            raise ConfigError("streamed_in() needs chars >= 1")
        return dataclasses.replace(self, delta_chars=int(chars))


def _usage(usage: tuple[int, int] | None) -> tuple[int, int] | None:
    if usage is None:
        return None
    prompt, completion = usage
    return (int(prompt), int(completion))


def answer(text: str, *, usage: tuple[int, int] | None = None) -> Reply:
    """The model answers ``text``: as the forced tool's arguments when the request forces a tool (verbatim,
    even when it is not valid JSON), otherwise as message text. What most tests use."""
    return Reply(kind="answer", text=text, usage=_usage(usage))


def text(text: str, *, usage: tuple[int, int] | None = None) -> Reply:
    """Always plain message text, even when the request forces a tool."""
    return Reply(kind="text", text=text, usage=_usage(usage))


def logprobs(
    steps: Sequence[Mapping[str, float] | Sequence[Any]],
    *,
    truncated: bool = False,
    usage: tuple[int, int] | None = None,
) -> Reply:
    """The model answers token by token with a scripted distribution at each position (for code that reads
    logprobs, such as ``guardrail.choose``).

    Each step is a mapping ``{token: probability}``, whose most probable token is the one generated (as at
    temperature 0; the first of equals), or a pair ``(token, {alternative: probability})`` to generate
    ``token`` instead (it must be one of the alternatives). The answer text is the generated tokens joined.
    A Chat Completions request with ``"logprobs": true`` gets ``choices[0].logprobs.content``: per step the
    ``token``, its ``logprob``, its UTF-8 ``bytes`` and ``top_logprobs``, the ``top_logprobs`` most probable
    alternatives (as many as the request asked for, most probable first). A probability of 0 is sent as
    OpenAI's "very unlikely" logprob, -9999.0. Requests without logprobs, and the other endpoints, see only
    the text. ``truncated=True`` ends it like :func:`truncated` (``finish_reason "length"``). Without
    ``usage``, the output tokens reported are the number of steps.

    Example: ``reply.logprobs([{"yes": 0.7, "no": 0.3}])`` answers ``"yes"`` with ``no`` at 0.3 beside it.
    """
    if not steps:
        raise ConfigError("logprobs() needs at least one step")
    rendered: list[TokenStep] = []
    for index, step in enumerate(steps):
        if isinstance(step, Mapping):
            chosen, table = None, step
        elif isinstance(step, Sequence) and not isinstance(step, str) and len(step) == 2 \
                and isinstance(step[0], str) and isinstance(step[1], Mapping):
            chosen, table = step[0], step[1]
        else:
            raise ConfigError(f"step {index}: expected {{token: probability}} or (token, {{token: probability}}), "
                             f"got {step!r}")
        if not table or not all(isinstance(token, str) and token for token in table):
            raise ConfigError(f"step {index}: alternatives must be non-empty token strings")
        for token, probability in table.items():
            if isinstance(probability, bool) or not isinstance(probability, int | float) \
                    or not 0.0 <= probability <= 1.0:
                raise ConfigError(f"step {index}: probability of {token!r} must be in [0, 1], got {probability!r}")
        if chosen is None:
            chosen = max(table, key=lambda token: table[token])
        elif chosen not in table:
            raise ConfigError(f"step {index}: the generated token {chosen!r} is not among its alternatives")
        alternatives = tuple((token, math.log(p) if p > 0 else VERY_UNLIKELY) for token, p in table.items())
        rendered.append((chosen, alternatives))
    text = "".join(token for token, _ in rendered)
    return Reply(kind="truncated" if truncated else "text", text=text, usage=_usage(usage), tokens=tuple(rendered))


def tool_call(
    arguments: str | Mapping[str, Any], name: str | None = None, *, usage: tuple[int, int] | None = None
) -> Reply:
    """Always a tool call with ``arguments`` (a mapping is JSON-encoded); ``name`` defaults to the forced
    tool's name, else ``"output"``."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return Reply(kind="tool_call", text=encoded, name=name, usage=_usage(usage))


def truncated(text: str, *, usage: tuple[int, int] | None = None) -> Reply:
    """Partial output cut off by the token limit, placed like :func:`answer` places it, with the vendor's
    signal: chat ``finish_reason "length"``, responses ``status "incomplete"`` with
    ``incomplete_details.reason "max_output_tokens"``, Anthropic ``stop_reason "max_tokens"``."""
    return Reply(kind="truncated", text=text, usage=_usage(usage))


def refusal(text: str = DEFAULT_REFUSAL, *, usage: tuple[int, int] | None = None, reason: str | None = None,
            prompt: bool = False) -> Reply:
    """The model refuses: chat ``message.refusal`` (content null, finish_reason ``"stop"``); responses a
    message whose content item is ``{"type": "refusal", "refusal": text}``; Anthropic ``stop_reason
    "refusal"`` with the text as a text block; Gemini a candidate without content whose ``finishReason`` is
    ``reason`` (default ``"SAFETY"``; ``"RECITATION"``, ``"PROHIBITED_CONTENT"``, ...), or with ``prompt`` a
    blocked prompt (``promptFeedback.blockReason`` = ``reason``, no candidates). The other vendors ignore
    ``reason`` and ``prompt``."""
    return Reply(kind="refusal", text=text, usage=_usage(usage), code=reason,
                 variant="prompt_blocked" if prompt else "plain")


def error(
    status: int,
    *,
    type: str | None = None,  # the vendors' own field name
    code: str | None = None,
    message: str = "The vendor emulator was scripted to fail this request.",
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """An HTTP error in the vendor's body shape: OpenAI ``{"error": {"message", "type", "param", "code"}}``,
    Anthropic ``{"type": "error", "error": {"type", "message"}}`` (with ``details.error_code`` = ``code``
    when given, which is what the anthropic SDK uses to pick an error subclass). ``type`` defaults to the
    vendor's usual type for the status."""
    return Reply(
        kind="error",
        status=status,
        error_type=type,
        code=code,
        message=message,
        headers=tuple((headers or {}).items()),
    )


def schema_rejected(message: str | None = None) -> Reply:
    """The 400 a vendor gives a schema it will not accept: OpenAI code ``"invalid_json_schema"`` (or
    ``"invalid_function_parameters"`` when the schema came as a tool), type ``"invalid_request_error"``;
    Anthropic ``invalid_request_error`` with a message about the schema."""
    return Reply(kind="error", status=400, variant="schema_rejected", message=message or "")


def rate_limited(
    retry_after: float | None = None, retry_after_ms: int | None = None, spend_limit: bool = False
) -> Reply:
    """A 429 with ``retry-after`` (seconds) and/or ``retry-after-ms`` headers when given.

    ``spend_limit=True`` is the kind retrying cannot fix: OpenAI's quota body (type and code
    ``"insufficient_quota"``); Anthropic's ``rate_limit_error`` with ``details.error_code
    "enforced_spend_limit_reached"`` (the anthropic SDK raises ``EnforcedSpendLimitReachedError``, a
    ``RateLimitError`` subclass)."""
    headers: list[tuple[str, str]] = []
    if retry_after is not None:
        headers.append(("retry-after", _number(retry_after)))
    if retry_after_ms is not None:
        headers.append(("retry-after-ms", str(int(retry_after_ms))))
    return Reply(
        kind="error",
        status=429,
        variant="spend_limit" if spend_limit else "rate_limited",
        headers=tuple(headers),
    )


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def server_error(status: int = 500, *, message: str | None = None) -> Reply:
    """A 5xx server error (OpenAI ``server_error``, Anthropic ``api_error``)."""
    return Reply(kind="error", status=status, variant="server_error", message=message or "")


def overloaded() -> Reply:
    """Anthropic's 529 ``overloaded_error``; on the OpenAI endpoints a 503 ``server_error``."""
    return Reply(kind="error", status=529, variant="overloaded")


def timeout(seconds: float, then: Reply | None = None) -> Reply:
    """Stall ``seconds`` before answering, so the client's own timeout fires first. After the stall the
    emulator serves ``then``, or closes the connection when ``then`` is ``None``. ``Emulator.stop()`` cuts
    the stall short."""
    return Reply(kind="timeout", seconds=seconds, then=then)


def drop() -> Reply:
    """Close the connection without any response (the SDKs raise ``APIConnectionError``)."""
    return Reply(kind="drop")


def raw(body: str, *, status: int = 200, content_type: str = "text/html; charset=utf-8",
        headers: Mapping[str, str] | None = None) -> Reply:
    """Send ``body`` verbatim with this status and content type, to streaming requests as well: what a proxy,
    gateway or captive portal in front of the vendor sends instead of the API's answer."""
    return Reply(kind="raw", text=body, status=status, content_type=content_type,
                 headers=tuple((headers or {}).items()))


def html_page(status: int = 200, title: str = "Service temporarily unavailable") -> Reply:
    """An HTML page (as a proxy sends it) with ``status``, 200 by default."""
    page = (f"<!DOCTYPE html>\n<html><head><title>{title}</title></head>\n"
            f"<body><h1>{title}</h1><p>The upstream server did not answer. Please try again later.</p></body></html>\n")
    return raw(page, status=status)


def not_json(body: str = '{"id": "chatcmpl-emulator", "choices": [{"index": 0, "mess', *, status: int = 200) -> Reply:
    """A body labelled ``application/json`` that is not JSON (by default an answer cut off mid-way, with an
    honest ``content-length``)."""
    return raw(body, status=status, content_type="application/json")


def malformed_event(text: str = "{}", line: str = "data: {not json") -> Reply:
    """For a streaming request: the answer ``text`` streamed as usual, with ``line`` (a data line that is not
    JSON, by default) in the middle of the events; on the Anthropic endpoint a line without an ``event:`` field
    goes out as a ``content_block_delta`` event (the anthropic SDK skips unnamed events). For a non-streaming
    request: ``line`` as a body labelled ``application/json``."""
    return Reply(kind="malformed_event", text=text, line=line)


def cut(text: str = "{}", fraction: float = 0.5) -> Reply:
    """The answer ``text`` rendered as usual, but only its first ``fraction`` of bytes are sent before the
    connection closes: a JSON body falls short of its ``content-length``, a stream stops mid-event without
    the end of its chunked encoding."""
    if not 0.0 <= fraction < 1.0:
        raise ConfigError("cut() needs 0 <= fraction < 1")
    return Reply(kind="cut", text=text, fraction=fraction)


def stream_error(
    text_before: str = "",
    type: str = "overloaded_error",  # the vendors' own field name
    message: str = "Overloaded",
) -> Reply:
    """For a streaming request: stream ``text_before`` as deltas, then an error event, then end the stream.

    Anthropic: ``event: error`` with ``{"type": "error", "error": {"type", "message"}}``. OpenAI chat: a
    ``data:`` line with ``{"error": {...}}`` (``overloaded_error`` is sent as type ``server_error``).
    OpenAI responses: ``event: error`` with ``{"type": "error", "code", "message", "param"}`` as that API
    documents. For a non-streaming request it behaves like :func:`overloaded`.
    """
    return Reply(kind="stream_error", text=text_before, error_type=type, message=message)
