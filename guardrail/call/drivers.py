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
from contextlib import aclosing, closing
from typing import Any

from tenacity import AsyncRetrying, Retrying

from guardrail.call.engine import DEADLINE, Call, Received, Send, attempt_loop
from guardrail.call.exchange import exchange_async, exchange_sync
from guardrail.call.retry import RetryPolicy, timeout_seconds
from guardrail.errors import CallError
from guardrail.observe.telemetry import call_span, finish_span
from guardrail.outcome import Partial, Result
from guardrail.parse.partial import preview
from guardrail.vendors.base import Accumulator, Completion
from guardrail.vendors.failures import Failure, classify

Item = Partial | Result[Any]
#: Previews stop for answers longer than this (each preview re-reads the text so far).
MAX_PREVIEW_CHARS = 256 * 1024


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
    with call_span(call.endpoint.provider, call.model, dict(call.kwargs)) as (span, trace_id):
        call = dataclasses.replace(call, trace_id=trace_id)
        deadline_at = _deadline(policy, call)
        loop = attempt_loop(call)
        try:
            effect = next(loop)
            while True:
                received: Received | None = None
                with closing(_send_sync(method, call, effect, policy, deadline_at, previews)) as sent:
                    for item in sent:
                        if isinstance(item, Received):
                            received = item
                        else:
                            yield item
                assert received is not None
                effect = loop.send(received)
        except StopIteration as stop:
            finish_span(span, stop.value, None, capture_content=call.settings.capture_content)
            yield stop.value
        except CallError as error:
            finish_span(span, error.outcome, error, capture_content=call.settings.capture_content)
            raise


async def iterate_async(call: Call, method: Callable[..., Awaitable[Any]], policy: RetryPolicy, *,
                        previews: bool) -> AsyncGenerator[Item, None]:
    """The async twin of :func:`iterate_sync`."""
    with call_span(call.endpoint.provider, call.model, dict(call.kwargs)) as (span, trace_id):
        call = dataclasses.replace(call, trace_id=trace_id)
        deadline_at = _deadline(policy, call)
        loop = attempt_loop(call)
        try:
            effect = next(loop)
            while True:
                received: Received | None = None
                async with aclosing(_send_async(method, call, effect, policy, deadline_at, previews)) as sent:
                    async for item in sent:
                        if isinstance(item, Received):
                            received = item
                        else:
                            yield item
                assert received is not None
                effect = loop.send(received)
        except StopIteration as stop:
            finish_span(span, stop.value, None, capture_content=call.settings.capture_content)
            yield stop.value
        except CallError as error:
            finish_span(span, error.outcome, error, capture_content=call.settings.capture_content)
            raise


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


def _deadline_failure(calls: int, started: float) -> Received:
    error = TimeoutError("the call's deadline passed")
    return Received(None, Failure("retryable", None, DEADLINE, str(error), None, error), calls,
                    time.monotonic() - started)


class _Previewer:
    """Turns the accumulated text into a new :class:`Partial` when the preview changed."""

    def __init__(self, effect: Send) -> None:
        self.attempt = effect.attempt
        self.wrapped = effect.wrapped
        self.last: Any = None

    def __call__(self, accumulator: Accumulator) -> Partial | None:
        text = accumulator.text()
        if len(text) > MAX_PREVIEW_CHARS:
            return None
        data = preview(text)
        if self.wrapped is not None:  # show the contract's shape, not the vendor wrapper
            data = data.get(self.wrapped) if isinstance(data, dict) else None
        if data is None or data == self.last:
            return None
        self.last = data
        return Partial(data, text, self.attempt)


def _send_sync(method: Callable[..., Any], call: Call, effect: Send, policy: RetryPolicy,
               deadline_at: float | None, previews: bool) -> Generator[Partial | Received, None, None]:
    started, calls = time.monotonic(), 0
    try:
        for attempt in Retrying(**policy.tenacity_kwargs(deadline_at)):
            with attempt:
                kwargs = _with_timeout(effect.kwargs, deadline_at, call.timeout)
                if kwargs is None:
                    yield _deadline_failure(calls, started)
                    return
                calls += 1
                completion = yield from exchange_sync(
                    method, call.endpoint, kwargs, stream=effect.stream, tool=effect.tool, deadline_at=deadline_at,
                    show=_Previewer(effect) if previews and effect.stream else None)
    except Exception as error:
        yield _failed(error, calls, started, deadline_at)
        return
    yield Received(completion, None, calls, time.monotonic() - started)


async def _send_async(method: Callable[..., Awaitable[Any]], call: Call, effect: Send, policy: RetryPolicy,
                      deadline_at: float | None, previews: bool) -> AsyncGenerator[Partial | Received, None]:
    started, calls = time.monotonic(), 0
    completion: Completion | None = None
    try:
        async for attempt in AsyncRetrying(**policy.tenacity_kwargs(deadline_at)):
            with attempt:
                kwargs = _with_timeout(effect.kwargs, deadline_at, call.timeout)
                if kwargs is None:
                    yield _deadline_failure(calls, started)
                    return
                calls += 1
                show = _Previewer(effect) if previews and effect.stream else None
                async with aclosing(exchange_async(method, call.endpoint, kwargs, stream=effect.stream,
                                                   tool=effect.tool, deadline_at=deadline_at, show=show)) as items:
                    async for item in items:
                        if isinstance(item, Completion):
                            completion = item
                        else:
                            yield item
    except Exception as error:
        yield _failed(error, calls, started, deadline_at)
        return
    assert completion is not None
    yield Received(completion, None, calls, time.monotonic() - started)


def _failed(error: Exception, calls: int, started: float, deadline_at: float | None) -> Received:
    """The failure left when transport tries end; a retryable one that ran into the deadline is the deadline's."""
    failure = classify(error)
    if failure is None:
        raise error
    if failure.kind == "retryable" and deadline_at is not None and time.monotonic() >= deadline_at:
        said = failure.message if "deadline" in failure.message else f"{failure.message} (the deadline passed)"
        failure = dataclasses.replace(failure, code=DEADLINE, message=said)
    return Received(None, failure, calls, time.monotonic() - started)
