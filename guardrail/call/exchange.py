"""One HTTP try of a structured call: send, check the answer is the API's, read it, all within the deadline.

The drivers (:mod:`guardrail.call.drivers`) call :func:`exchange_sync` / :func:`exchange_async` once per HTTP
try. Each asks the SDK for its *raw, unread* response (``with_streaming_response``), so the status and
content type are known before a byte of the body is read, and the body is read under guardrail's control:

- **Shape.** A JSON answer must come as JSON, a stream as an event stream, and what arrives must parse and
  carry the API's fields. Anything else (an HTML page from a proxy, a JSON content type over a body that is
  not JSON, a stream event that is not JSON, an answer without the fields the endpoint lists) raises
  :class:`~guardrail.vendors.failures.BadResponse` with the status, the content type and a redacted snippet,
  never the ``AttributeError``/``JSONDecodeError`` the SDK or an adapter tripped over.
- **Deadline.** The whole try ends by the call's deadline, however slowly the headers or the body (a good
  answer's or an error status's) arrive. Sync: a :mod:`watchdog <guardrail.call.watchdog>` alarm, armed before
  the request is sent, shuts the connection down at the deadline, which wakes the blocked read. Async:
  every await (the request, the body, the stream events up to the next preview) runs under
  ``asyncio.timeout``, never across a ``yield``. Either way the try raises ``TimeoutError``.

What the pieces mean (the checks and the parsing) is decided once, without I/O, by a
:class:`~guardrail.call.reading.Reading`; the two exchanges here only do the I/O, each in its own way.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator
from typing import Any, TypeVar

from guardrail.call.reading import HEAD_BYTES, Reading, Show, deadline_passed
from guardrail.call.watchdog import Alarm, Cut, arm
from guardrail.observe.target import instrumented
from guardrail.outcome import Partial
from guardrail.vendors.base import Completion, Endpoint

T = TypeVar("T")

def _full(head: bytearray, chunk: bytes) -> bool:
    """Add a chunk of a wrong-content-type body to its snippet; whether the snippet is long enough now."""
    head += chunk
    return len(head) >= HEAD_BYTES


def _streaming_create(method: Callable[..., Any]) -> Callable[..., Any] | None:
    """The SDK's ``with_streaming_response`` twin of a bound ``create`` method, when it has one."""
    resource = getattr(method, "__self__", None)
    streaming = getattr(resource, "with_streaming_response", None)
    found = getattr(streaming, getattr(method, "__name__", "create"), None)
    return found if callable(found) else None


class _Direct:
    """Stands in for the SDK's raw response when the method has no ``with_streaming_response``: the SDK reads
    a plain answer itself; a stream keeps its own ``response`` and is closed on leaving. Sync only: the
    async exchange awaits the method and wraps its value in :class:`_AsyncDirect`."""

    def __init__(self, method: Callable[..., Any], kwargs: dict[str, Any], stream: bool) -> None:
        self._call, self._stream = (method, kwargs), stream
        self.value: Any = None
        self.http_response: Any = None

    def __enter__(self) -> _Direct:
        method, kwargs = self._call
        self.value = method(**kwargs)
        self.http_response = getattr(self.value, "response", None)
        if self._stream and hasattr(self.value, "__enter__"):
            self.value.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> Any:
        if self._stream and hasattr(self.value, "__exit__"):
            return self.value.__exit__(kind, error, traceback)
        return None

    def parse(self) -> Any:
        return self.value


class _AsyncDirect:
    """:class:`_Direct` for an async method's value (its ``parse`` is awaited, as the SDK's async one is)."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.http_response = getattr(value, "response", None)

    async def parse(self) -> Any:
        return self.value


# -- sync -----------------------------------------------------------------------------------------------------
def _raw_create(method: Callable[..., Any], stream: bool) -> Callable[..., Any] | None:
    """The ``with_streaming_response`` twin to call, or ``None`` to call ``method`` itself: a stream through a
    method an OpenTelemetry instrumentation wraps (``opentelemetry-instrumentation-openai-v2`` wraps the
    stream it returns in its own object, which has no raw response) is read the SDK's plain way."""
    if stream and instrumented(method):
        return None
    return _streaming_create(method)


class _Opened:
    """The try's raw response as a context manager: entering sends the request, leaving closes the response."""

    __slots__ = ("_manager",)

    def __init__(self, method: Callable[..., Any], kwargs: dict[str, Any], stream: bool) -> None:
        streaming = _raw_create(method, stream)
        self._manager: Any = streaming(**kwargs) if streaming is not None else _Direct(method, kwargs, stream)

    def __enter__(self) -> Any:
        return self._manager.__enter__()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> Any:
        return self._manager.__exit__(kind, error, traceback)


def _head_sync(http: Any) -> bytes:
    head = bytearray()
    with contextlib.suppress(Exception):
        for chunk in http.iter_bytes():
            if _full(head, chunk):
                break
    return bytes(head)


def exchange_sync(method: Callable[..., Any], endpoint: Endpoint, kwargs: dict[str, Any], *, stream: bool,
                  tool: str | None, deadline_at: float | None, show: Show | None
                  ) -> Generator[Partial, None, Completion]:
    """One HTTP try (see the module docstring): yields previews of a stream, returns the completion."""
    alarm: Alarm | None = None
    cut = Cut()
    if deadline_at is not None:
        # armed before sending: the SDK reads the headers, and an error status's whole body, before it returns
        alarm = arm(deadline_at, cut)
    try:
        with _Opened(method, kwargs, stream) as response:
            http = response.http_response
            cut.attach(http)
            reading = Reading(endpoint, http, stream=stream, tool=tool, show=show)
            if reading.wrong_type():
                raise reading.wrong_type_error(_head_sync(http))
            if not stream:
                try:
                    parsed = response.parse()
                except Exception as error:
                    raise reading.failed(error, "the response") from error
                cut.over()  # the body is read and the connection back in the pool: never cut it now
                return reading.answer(parsed)
            events = iter(response.parse())
            while True:
                try:
                    event = next(events)
                except StopIteration:
                    cut.over()
                    break
                except Exception as error:
                    raise reading.failed(error, "a stream event") from error
                if (snapshot := reading.event(event)) is not None:
                    cut.pause()  # while the preview is out, this thread runs the consumer's code, not the try
                    yield snapshot
                    cut.follow()
            if alarm is not None and alarm.fired:  # a connection closed at the deadline may look like an end
                raise deadline_passed()
            return reading.end()
    except Exception as error:
        if alarm is not None and alarm.fired and not isinstance(error, TimeoutError):
            raise deadline_passed() from error
        raise
    finally:
        if alarm is not None:
            alarm.cancel()


# -- async ----------------------------------------------------------------------------------------------------
async def _within(step: Awaitable[T], deadline_at: float | None) -> T:
    """Await one step of the try, cancelled when the deadline passes (``TimeoutError``)."""
    if deadline_at is None:
        return await step
    try:
        async with asyncio.timeout(deadline_at - time.monotonic()):
            return await step
    except TimeoutError as error:
        raise deadline_passed() from error


@contextlib.asynccontextmanager
async def _open_async(method: Callable[..., Any], kwargs: dict[str, Any], stream: bool, deadline_at: float | None
                      ) -> AsyncIterator[Any]:
    streaming = _raw_create(method, stream)
    if streaming is None:
        value = await _within(method(**kwargs), deadline_at)
        async with value if stream and hasattr(value, "__aenter__") else contextlib.nullcontext():
            yield _AsyncDirect(value)
        return
    manager = streaming(**kwargs)
    response = await _within(manager.__aenter__(), deadline_at)
    try:
        yield response
    finally:
        await manager.__aexit__(None, None, None)


async def _head_async(http: Any) -> bytes:
    head = bytearray()
    with contextlib.suppress(Exception):
        async for chunk in http.aiter_bytes():
            if _full(head, chunk):
                break
    return bytes(head)


async def exchange_async(method: Callable[..., Any], endpoint: Endpoint, kwargs: dict[str, Any], *, stream: bool,
                         tool: str | None, deadline_at: float | None, show: Show | None
                         ) -> AsyncGenerator[Partial | Completion, None]:
    """The async twin of :func:`exchange_sync`; the completion is its last item (async generators return
    nothing)."""
    async with _open_async(method, kwargs, stream, deadline_at) as response:
        reading = Reading(endpoint, response.http_response, stream=stream, tool=tool, show=show)
        if reading.wrong_type():
            raise reading.wrong_type_error(await _within(_head_async(reading.http), deadline_at))
        if not stream:
            try:
                parsed = await _within(response.parse(), deadline_at)
            except Exception as error:
                raise reading.failed(error, "the response") from error
            yield reading.answer(parsed)
            return
        events = (await _within(response.parse(), deadline_at)).__aiter__()
        while (snapshot := await _within(_next_preview(events, reading), deadline_at)) is not None:
            yield snapshot
        yield reading.end()


async def _next_preview(events: AsyncIterator[Any], reading: Reading) -> Partial | None:
    """Read stream events up to the next preview (``None``: the stream ended), under one deadline timeout: a
    timeout per event would cost more than reading the event does."""
    while True:
        try:
            event = await events.__anext__()
        except StopAsyncIteration:
            return None
        except Exception as error:
            raise reading.failed(error, "a stream event") from error
        if (snapshot := reading.event(event)) is not None:
            return snapshot
