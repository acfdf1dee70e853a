"""The two drivers of the attempt loop: ``run_sync`` and ``run_async``.

Each steps the I/O-free generator from :mod:`guardrail._engine`, performing its :class:`~guardrail._engine.Send`
effects with the SDK method under tenacity transport retries, inside the call's telemetry span. They
differ only in ``await``; every decision is in the engine.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tenacity import AsyncRetrying, Retrying

from guardrail._engine import Call, Loop, Received, Send, attempt_loop
from guardrail.errors import CallError
from guardrail.outcome import Result
from guardrail.retry import RetryPolicy
from guardrail.telemetry import call_span, finish_span
from guardrail.vendors.base import Endpoint
from guardrail.vendors.failures import Failure, classify


def run_sync(call: Call, method: Callable[..., Any], policy: RetryPolicy) -> Result[Any]:
    """Run the call's attempt loop with a synchronous SDK method."""
    with call_span(call.endpoint.provider, call.model, dict(call.kwargs)) as (span, trace_id):
        call = dataclasses.replace(call, trace_id=trace_id)
        deadline_at = _deadline(policy)
        loop = attempt_loop(call)
        try:
            effect = next(loop)
            while True:
                effect = loop.send(_send_sync(method, call.endpoint, effect, policy, deadline_at))
        except StopIteration as stop:
            result: Result[Any] = stop.value
            finish_span(span, result, None, capture_content=call.settings.capture_content)
            return result
        except CallError as error:
            finish_span(span, error.outcome, error, capture_content=call.settings.capture_content)
            raise


async def run_async(call: Call, method: Callable[..., Awaitable[Any]], policy: RetryPolicy) -> Result[Any]:
    """Run the call's attempt loop with an asynchronous SDK method."""
    with call_span(call.endpoint.provider, call.model, dict(call.kwargs)) as (span, trace_id):
        call = dataclasses.replace(call, trace_id=trace_id)
        deadline_at = _deadline(policy)
        loop: Loop = attempt_loop(call)
        try:
            effect = next(loop)
            while True:
                effect = loop.send(await _send_async(method, call.endpoint, effect, policy, deadline_at))
        except StopIteration as stop:
            result: Result[Any] = stop.value
            finish_span(span, result, None, capture_content=call.settings.capture_content)
            return result
        except CallError as error:
            finish_span(span, error.outcome, error, capture_content=call.settings.capture_content)
            raise


def _deadline(policy: RetryPolicy) -> float | None:
    return None if policy.deadline is None else time.monotonic() + policy.deadline


def _with_timeout(kwargs: dict[str, Any], deadline_at: float | None) -> dict[str, Any] | None:
    """The request keywords with the SDK timeout cut to the time left; ``None`` when no time is left."""
    if deadline_at is None:
        return kwargs
    left = deadline_at - time.monotonic()
    if left <= 0:
        return None
    given = kwargs.get("timeout")
    if isinstance(given, (int, float)) and given <= left:
        return kwargs
    return {**kwargs, "timeout": left}


def _deadline_failure(calls: int, started: float) -> Received:
    error = TimeoutError("the call's deadline passed")
    return Received(None, Failure("retryable", None, "deadline", str(error), None, error), calls,
                    time.monotonic() - started)


def _send_sync(method: Callable[..., Any], endpoint: Endpoint, effect: Send, policy: RetryPolicy,
               deadline_at: float | None) -> Received:
    started, calls = time.monotonic(), 0
    try:
        for attempt in Retrying(**policy.tenacity_kwargs(deadline_at)):
            with attempt:
                kwargs = _with_timeout(effect.kwargs, deadline_at)
                if kwargs is None:
                    return _deadline_failure(calls, started)
                calls += 1
                response = method(**kwargs)
                if effect.stream:
                    accumulator = endpoint.accumulator()
                    with response:
                        for event in response:
                            accumulator.feed(event)
                    completion = accumulator.completion()
                else:
                    completion = endpoint.read(response)
    except Exception as error:
        return _failed(error, calls, started)
    return Received(completion, None, calls, time.monotonic() - started)


async def _send_async(method: Callable[..., Awaitable[Any]], endpoint: Endpoint, effect: Send,
                      policy: RetryPolicy, deadline_at: float | None) -> Received:
    started, calls = time.monotonic(), 0
    try:
        async for attempt in AsyncRetrying(**policy.tenacity_kwargs(deadline_at)):
            with attempt:
                kwargs = _with_timeout(effect.kwargs, deadline_at)
                if kwargs is None:
                    return _deadline_failure(calls, started)
                calls += 1
                response = await method(**kwargs)
                if effect.stream:
                    accumulator = endpoint.accumulator()
                    async with response:
                        async for event in response:
                            accumulator.feed(event)
                    completion = accumulator.completion()
                else:
                    completion = endpoint.read(response)
    except Exception as error:
        return _failed(error, calls, started)
    return Received(completion, None, calls, time.monotonic() - started)


def _failed(error: Exception, calls: int, started: float) -> Received:
    failure = classify(error)
    if failure is None:
        raise error
    return Received(None, failure, calls, time.monotonic() - started)

