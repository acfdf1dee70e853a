"""The two drivers of the attempt loop: sync and async.

Each steps the I/O-free generator from :mod:`guardrail.call.engine`, performing its :class:`~guardrail.call.engine.Send`
effects with the SDK method under tenacity transport retries, inside the call's telemetry span; one HTTP
try (shape checks, the wall-clock deadline while the answer arrives) is :mod:`guardrail.call.exchange`'s. They
differ only in ``await``; every decision is in the engine.

``iterate_sync``/``iterate_async`` yield :class:`~guardrail.outcome.Partial` previews while a streamed answer
arrives (when ``previews`` is on) and the :class:`~guardrail.Result` last; ``run_sync``/``run_async`` just
return the result.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import AbstractContextManager, aclosing, closing
from typing import Any

from opentelemetry.trace import Span
from tenacity import AsyncRetrying, Retrying

from guardrail.call.engine import DEADLINE, Call, Received, Send, attempt_loop
from guardrail.call.exchange import exchange_async, exchange_sync
from guardrail.call.retry import RetryPolicy, timeout_seconds
from guardrail.errors import CallError
from guardrail.observe.metrics import Request, collecting, record_call
from guardrail.observe.target import Target, target_of
from guardrail.observe.telemetry import call_span, finish_span
from guardrail.outcome import Outcome, Partial, Result
from guardrail.parse.incremental import GrowingJSON
from guardrail.vendors.base import Accumulator, Completion, Pieces
from guardrail.vendors.failures import Failure, classify

Item = Partial | Result[Any]
#: What previews may spend, in the units of their cost (a character of text copied is 1, about 0.1 ns), for each
#: piece of a streamed answer and for each character of it: previews cost at most a constant per piece and per
#: character received, as reading the stream does, so a stream costs time linear in its length. About a third
#: of what the leanest SDK (anthropic) spends reading a piece of ~12 characters.
PREVIEW_PER_PIECE = 64 * 1024
PREVIEW_PER_CHAR = 1024
#: What a preview costs besides the copies: building it and handing it through the generators to the consumer
#: (about 6 us sync, 15 us async): a preview every other piece of a short answer.
PREVIEW_OVERHEAD = 128 * 1024
#: What the first previews may spend before the answer has earned anything: the first eight come at once.
PREVIEW_START = 1024 * 1024


def run_sync(call: Call, method: Callable[..., Any], policy: RetryPolicy) -> Result[Any]:
    """Run the call's attempt loop with a synchronous SDK method; return the result."""
    with closing(iterate_sync(call, method, policy, previews=False)) as items:
        for item in items:
            if isinstance(item, Result):
                return item
    raise AssertionError("the attempt loop ended without a result")  # pragma: no cover


async def run_async(call: Call, method: Callable[..., Awaitable[Any]], policy: RetryPolicy) -> Result[Any]:
    """Run the call's attempt loop with an asynchronous SDK method; return the result.

    The generator is closed before returning, so the call's span ends here, in the caller's context.
    """
    async with aclosing(iterate_async(call, method, policy, previews=False)) as items:
        async for item in items:
            if isinstance(item, Result):
                return item
    raise AssertionError("the attempt loop ended without a result")  # pragma: no cover


def iterate_sync(call: Call, method: Callable[..., Any], policy: RetryPolicy, *,
                 previews: bool) -> Generator[Item, None, None]:
    """Run the loop, yielding previews of streamed answers (if ``previews``) and the result last."""
    with _Attempts(call, method, policy) as attempts:
        for effect in attempts:
            attempts.received = yield from _send_sync(method, _Tries(attempts, effect, previews), policy)
        yield attempts.result()


async def iterate_async(call: Call, method: Callable[..., Awaitable[Any]], policy: RetryPolicy, *,
                        previews: bool) -> AsyncGenerator[Item, None]:
    """The async twin of :func:`iterate_sync`."""
    with _Attempts(call, method, policy) as attempts:
        for effect in attempts:
            async with aclosing(_send_async(method, _Tries(attempts, effect, previews), policy)) as sent:
                async for item in sent:
                    if isinstance(item, Received):
                        attempts.received = item
                    else:
                        yield item
        yield attempts.result()


class _Attempts:
    """The engine's attempt loop as an iterator of its :class:`Send` effects, for both drivers, inside the
    call's telemetry span (entering opens it): a driver performs each effect, sets :attr:`received` to what came
    back, and asks for the next; when the loop ends, :meth:`result` is the result and the span is finished
    with it. A call that fails finishes the span with its error."""

    def __init__(self, call: Call, method: Callable[..., Any], policy: RetryPolicy) -> None:
        self.call = call
        self.target = target_of(method, call.endpoint.provider)
        self.collect = collecting()  # whether metrics have a provider to go to, asked once per call
        self.deadline_at = _deadline(policy, call)
        self.sent_requests: list[dict[str, Any]] = []  # each attempt's keywords, for content capture
        self.received: Received | None = None
        self._result: Result[Any] | None = None
        self._span = _span(call, self.target)
        self._started = False

    def __enter__(self) -> _Attempts:
        self.span, trace_id = self._span.__enter__()
        self._loop = attempt_loop(self.call, trace_id=trace_id, provider=self.target.provider)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> Any:
        if isinstance(error, CallError):
            self.finish(error.outcome, error)
        return self._span.__exit__(kind, error, traceback)

    def result(self) -> Result[Any]:
        assert self._result is not None, "the attempt loop has not ended"
        return self._result

    def __iter__(self) -> _Attempts:
        return self

    def __next__(self) -> Send:
        try:
            if not self._started:
                self._started = True
                effect = next(self._loop)
            else:
                received, self.received = self.received, None
                assert received is not None, "a driver asked for the next effect without performing this one"
                effect = self._loop.send(received)
        except StopIteration as stop:
            self._result = stop.value
            self.finish(stop.value, None)
            raise
        if self.call.settings.capture_content:
            self.sent_requests.append(effect.kwargs)
        return effect

    def finish(self, outcome: Outcome, error: CallError | None) -> None:
        """The call's end: its span's attributes and guardrail's counters (:mod:`guardrail.observe.metrics`)."""
        finish_span(self.span, outcome, error, capture_content=self.call.settings.capture_content,
                    requests=self.sent_requests)
        record_call(self.target, outcome, error, outcome.value if isinstance(outcome, Result) else None,
                    collect=self.collect)


def _span(call: Call, target: Target) -> AbstractContextManager[tuple[Span, str]]:
    """The call's telemetry span, with the request settings the endpoint reads from the caller's keywords."""
    return call_span(target, call.model, temperature=call.endpoint.temperature(call.kwargs),
                     max_tokens=call.endpoint.max_tokens(call.kwargs))


def _deadline(policy: RetryPolicy, call: Call) -> float | None:
    """The call's deadline as a ``time.monotonic()`` value (by default the call's or the client's timeout)."""
    timeout = timeout_seconds(call.kwargs.get("timeout"))
    seconds = policy.deadline_seconds(call.timeout if timeout is None else timeout)
    return None if seconds is None else time.monotonic() + seconds


def _with_timeout(kwargs: dict[str, Any], deadline_at: float | None, client_timeout: float | None
                  ) -> dict[str, Any] | None:
    """The request keywords with the SDK timeout cut to the time left; ``None`` when no time is left.

    The deadline only shortens a timeout: the call's own ``timeout=``, else the client's, still applies.
    """
    if deadline_at is None:
        return kwargs
    left = deadline_at - time.monotonic()
    if left <= 0:
        return None
    given = kwargs.get("timeout", client_timeout)
    if isinstance(given, (int, float)) and given <= left:
        return kwargs if "timeout" in kwargs else {**kwargs, "timeout": given}
    return {**kwargs, "timeout": left}


class Previewer:
    """Turns a streamed answer into :class:`Partial` previews, reading each piece of it once.

    A :class:`~guardrail.parse.incremental.GrowingJSON` carries the reading across pieces. A preview is made
    when what it shows changed, where the text ends on the way to the answer (not inside a number, a literal
    or an escape), and at a bounded rate: each piece received earns :data:`PREVIEW_PER_PIECE` units and each
    character :data:`PREVIEW_PER_CHAR`, and a preview spends what it costs (:data:`PREVIEW_OVERHEAD`, and the
    text so far, the open containers and the string being written that it copies). So previews cost at most a
    constant per piece and character of the answer, however long it grows: a preview at every piece of a short
    answer, one every few pieces of a very long one.
    """

    def __init__(self, effect: Send) -> None:
        self.attempt = effect.attempt
        self.wrapped = effect.wrapped
        self.pieces: Pieces | None = None
        self.json = GrowingJSON()
        self.read = self.size = 0  # pieces and characters read
        self.shown = 0  # the version of the last preview
        self.allowance = PREVIEW_START

    def __call__(self, accumulator: Accumulator) -> Partial | None:
        pieces = accumulator.answer()
        if pieces is not self.pieces:  # the answer moved (the output tool's call began): read it from the start
            self.pieces, self.json, self.read, self.size, self.shown = pieces, GrowingJSON(), 0, 0, 0
        parts, growing = pieces.parts, self.json
        if self.read == len(parts):
            return None
        for part in parts[self.read:] if self.read + 1 < len(parts) else (parts[-1],):
            growing.feed(part)
        self.allowance += PREVIEW_PER_PIECE * (len(parts) - self.read) + PREVIEW_PER_CHAR * (pieces.size - self.size)
        self.read, self.size = len(parts), pieces.size
        if growing.version == self.shown or not growing.settled or PREVIEW_OVERHEAD + self.size > self.allowance:
            return None
        cost = PREVIEW_OVERHEAD + self.size + growing.cost()
        if cost > self.allowance:
            return None
        self.allowance -= cost
        self.shown = growing.version
        data = growing.value()
        if self.wrapped is not None:  # show the contract's shape, not the vendor wrapper
            data = data.get(self.wrapped) if isinstance(data, dict) else None
        if data is None:
            return None
        return Partial(data, pieces.text(), self.attempt)


class _Tries:
    """The transport tries of one :class:`Send` (the first, then tenacity's retries): what both drivers count
    and conclude."""

    def __init__(self, attempts: _Attempts, effect: Send, previews: bool) -> None:
        self.call, self.effect, self.deadline_at = attempts.call, effect, attempts.deadline_at
        self.target, self.collect = attempts.target, attempts.collect
        self.previews = previews and effect.stream
        self.started, self.calls = time.monotonic(), 0

    def kwargs(self) -> dict[str, Any] | None:
        """The next try's request keywords (its SDK timeout cut to the time left); ``None``: no time is left."""
        kwargs = _with_timeout(self.effect.kwargs, self.deadline_at, self.call.timeout)
        if kwargs is not None:
            self.calls += 1
        return kwargs

    def exchange(self) -> dict[str, Any]:
        """The exchange's options for the next try (a fresh previewer each, when previews are on)."""
        return dict(stream=self.effect.stream, tool=self.effect.tool, deadline_at=self.deadline_at,
                    show=Previewer(self.effect) if self.previews else None)

    def received(self, completion: Completion | None = None, failure: Failure | None = None) -> Received:
        return Received(completion, failure, self.calls, time.monotonic() - self.started)

    def out_of_time(self) -> Received:
        error = TimeoutError("the call's deadline passed")
        return self.received(None, Failure("retryable", None, DEADLINE, str(error), None, error))

    def failed(self, error: Exception) -> Received:
        """The failure left when the tries end; a retryable one that ran into the deadline is the deadline's."""
        failure = classify(error)
        if failure is None:
            raise error
        if failure.kind == "retryable" and self.deadline_at is not None and time.monotonic() >= self.deadline_at:
            said = failure.message if "deadline" in failure.message else f"{failure.message} (the deadline passed)"
            failure = dataclasses.replace(failure, code=DEADLINE, message=said)
        return self.received(None, failure)


def _send_sync(method: Callable[..., Any], tries: _Tries, policy: RetryPolicy) -> Generator[Partial, None, Received]:
    try:  # the first try runs without tenacity: most calls need no other, and building the retry state costs
        return (yield from _try_sync(method, tries))
    except Exception as error:
        failed: Exception | None = error
    try:
        for attempt in Retrying(**policy.tenacity_kwargs(tries.deadline_at)):
            with attempt:
                if failed is not None:  # tenacity's first try is the failed one, judged as any other
                    first, failed = failed, None
                    raise first
                received = yield from _try_sync(method, tries)
    except Exception as error:
        return tries.failed(error)
    return received


def _try_sync(method: Callable[..., Any], tries: _Tries) -> Generator[Partial, None, Received]:
    """One HTTP try: its keywords (``out_of_time`` when none are left), the exchange, its GenAI client metrics."""
    kwargs = tries.kwargs()
    if kwargs is None:
        return tries.out_of_time()
    with Request(tries.target, tries.call.model, collect=tries.collect) as sent:
        completion = yield from exchange_sync(method, tries.call.endpoint, kwargs, **tries.exchange())
        sent.usage, sent.response_model = completion.usage, completion.model
    return tries.received(completion)


async def _send_async(method: Callable[..., Awaitable[Any]], tries: _Tries, policy: RetryPolicy
                      ) -> AsyncGenerator[Partial | Received, None]:
    failed: Exception | None = None
    try:  # as in _send_sync: the first try without tenacity
        async with aclosing(_try_async(method, tries)) as items:
            async for item in items:
                yield item
        return
    except Exception as error:
        failed = error
    try:
        async for attempt in AsyncRetrying(**policy.tenacity_kwargs(tries.deadline_at)):
            with attempt:
                if failed is not None:
                    first, failed = failed, None
                    raise first
                async with aclosing(_try_async(method, tries)) as items:
                    async for item in items:
                        yield item
    except Exception as error:
        yield tries.failed(error)


async def _try_async(method: Callable[..., Awaitable[Any]], tries: _Tries
                     ) -> AsyncGenerator[Partial | Received, None]:
    """The async twin of :func:`_try_sync`; the :class:`Received` is its last item."""
    kwargs = tries.kwargs()
    if kwargs is None:
        yield tries.out_of_time()
        return
    completion: Completion | None = None
    with Request(tries.target, tries.call.model, collect=tries.collect) as sent:
        async with aclosing(exchange_async(method, tries.call.endpoint, kwargs, **tries.exchange())) as items:
            async for item in items:
                if isinstance(item, Completion):
                    completion = item
                    sent.usage, sent.response_model = item.usage, item.model
                else:
                    yield item
    assert completion is not None
    yield tries.received(completion)
