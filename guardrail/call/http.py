"""One HTTP try of a structured call: send, check the answer is the API's, read it, all within the deadline.

The attempt loop's drivers (:mod:`guardrail.call.engine`) call :func:`send_sync` / :func:`send_async` once per
HTTP try. Each asks the SDK for its *raw, unread* response (``with_streaming_response``), so the status and
content type are known before a byte of the body is read, and the body is read under guardrail's control. Both
yield the previews of a streamed answer (when a previewer is given) and, last, the
:class:`~guardrail.vendors.base.Completion`:

- **Shape.** A JSON answer must come as JSON, a stream as an event stream, and what arrives must parse and
  carry the API's fields. Anything else (an HTML page from a proxy, a JSON content type over a body that is
  not JSON, a stream event that is not JSON, an answer without the fields the endpoint lists, a stream with no
  events, a connection lost mid-body) raises :class:`~guardrail.vendors.failures.BadResponse` with the status,
  the content type and a redacted snippet, never the ``AttributeError``/``JSONDecodeError`` the SDK or an
  adapter tripped over.
- **Deadline.** The whole try ends by the call's deadline, however slowly the headers or the body (a good
  answer's or an error status's) arrive. Sync: a :mod:`watchdog <guardrail.call.watchdog>` alarm, armed before
  the request is sent, shuts the connection down at the deadline, which wakes the blocked read. Async:
  every await (the request, the body, the stream events up to the next preview) runs under
  ``asyncio.timeout``, never across a ``yield``. Either way the try raises ``TimeoutError``.

What the pieces mean (the checks and the parsing) is decided once, without I/O, by a :class:`Reading`: at each
point where something arrived (the headers, the parsed body, one stream event, the end of the stream) the two
tries hand it over, and only do the I/O, each in its own way.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator
from typing import Any, TypeVar

from guardrail.call.watchdog import Alarm, Cut, arm
from guardrail.observe.telemetry import instrumented
from guardrail.outcome import Partial
from guardrail.vendors.base import Accumulator, Completion, Endpoint
from guardrail.vendors.failures import BadResponse, cut_off

__all__ = ["HEAD_BYTES", "Reading", "Show", "deadline_passed", "send_async", "send_sync"]

#: Turns the accumulated stream into a preview to yield, or ``None`` (:class:`guardrail.call.streaming.Previewer`).
Show = Callable[[Accumulator], Partial | None]
#: What an adapter or the SDK raises on data that is not in the API's shape.
_SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)
#: The media types of a stream: SSE, and Amazon Bedrock's AWS event stream (``application/vnd.amazon.eventstream``).
_STREAM_MEDIA = ("event-stream", "vnd.amazon.eventstream")
#: Bytes of a wrong-content-type body read for its snippet (the rest is never read).
HEAD_BYTES = 4096


def deadline_passed() -> TimeoutError:
    """The error a try ends with when the call's deadline passes while the answer is on its way."""
    return TimeoutError("the call's deadline passed while the answer was arriving; the connection was closed")


def _meta(http: Any) -> tuple[int | None, str]:
    """(status, content type) of an httpx response, or (None, "") when there is none to read."""
    if http is None:
        return None, ""
    status = getattr(http, "status_code", None)
    headers = getattr(http, "headers", None) or {}
    return (status if isinstance(status, int) else None), str(headers.get("content-type") or "")


def _body(http: Any) -> bytes | None:
    try:
        content = http.content if http is not None else None
    except Exception:  # not read (or not readable): nothing to show
        return None
    return content if isinstance(content, bytes) else None


class Reading:
    """What one raw response (``http``, the SDK's httpx response or ``None``) means, piece by piece.

    One instance per try. The try asks :meth:`wrong_type` before reading the body (and passes the first
    bytes to :meth:`wrong_type_error`), then hands over the parsed answer (:meth:`answer`) or each stream event
    (:meth:`event`) and the stream's end (:meth:`end`); anything the SDK raised while reading goes through
    :meth:`failed`.
    """

    def __init__(self, endpoint: Endpoint, http: Any, *, stream: bool, tool: str | None, show: Show | None) -> None:
        self.endpoint, self.http, self.stream, self.tool, self.show = endpoint, http, stream, tool, show
        self.status, self.content_type = _meta(http)
        self._accumulator: Accumulator | None = None  # made at the first event

    def wrong_type(self) -> bool:
        """Whether the stated content type is not what the API sends (no content type: let the SDK judge)."""
        if not self.content_type:
            return False
        media = self.content_type.split(";")[0].strip().lower()
        return not any(kind in media for kind in _STREAM_MEDIA) if self.stream else not media.endswith("json")

    def wrong_type_error(self, head: bytes) -> BadResponse:
        """The error for a wrong content type, with ``head`` (the body's first bytes) as its snippet."""
        expected = "an event stream" if self.stream else "JSON"
        return BadResponse(f"the response is not the API's: status {self.status}, content type "
                           f"{self.content_type!r} where {expected} was expected", status=self.status,
                           content_type=self.content_type, code="content_type", body=head)

    def failed(self, error: Exception, what: str) -> Exception:
        """What the SDK's ``error`` while reading ``what`` (the response, a stream event) means: text that is
        not JSON, a connection cut off mid-body (both a :class:`BadResponse`), or ``error`` itself."""
        if isinstance(error, ValueError):
            doc = getattr(error, "doc", None)  # json.JSONDecodeError keeps the text it could not read
            return BadResponse(f"{what} is not JSON (status {self.status}, "
                               f"{self.content_type or 'no content type'}): {error}", status=self.status,
                               content_type=self.content_type, code="not_json",
                               body=doc if isinstance(doc, str) else _body(self.http))
        if not cut_off(error):
            return error
        return BadResponse(f"the response body was cut off (status {self.status}): {error}", status=self.status,
                           content_type=self.content_type, code="cut_off", body=None)

    def answer(self, parsed: Any) -> Completion:
        """The adapter's reading of a parsed answer; a body without the API's fields is a :class:`BadResponse`."""
        if isinstance(parsed, (str, bytes)):  # the SDK hands back text it could not read as JSON
            raise self._bad(f"the response is not JSON (status {self.status}, "
                            f"{self.content_type or 'no content type'})", "not_json", parsed)
        missing = self.endpoint.missing_fields(parsed)
        if missing:
            raise self._bad(f"the response is JSON but not the API's answer (status {self.status}): no "
                            f"{', '.join(missing)}", "shape", _body(self.http) or repr(parsed))
        try:
            return self.endpoint.read(parsed, self.tool)
        except _SHAPE_ERRORS as error:
            raise self._bad(f"the response is JSON but not in the API's shape (status {self.status}): "
                            f"{type(error).__name__}: {error}", "shape", _body(self.http) or repr(parsed)) from error

    def event(self, event: Any) -> Partial | None:
        """Take one stream event; the preview to yield now, if any."""
        if self._accumulator is None:
            self._accumulator = self.endpoint.accumulator(self.tool)
        try:
            self._accumulator.feed(event)
        except _SHAPE_ERRORS as error:
            raise self._bad(f"a stream event is not in the API's shape: {type(error).__name__}: {error}",
                            "shape", repr(event)) from error
        return self.show(self._accumulator) if self.show is not None else None

    def end(self) -> Completion:
        """The completion of a stream that ended."""
        if self._accumulator is None:
            raise self._bad(f"the event stream ended without a single event (status {self.status})", "shape",
                            _body(self.http))
        try:
            return self._accumulator.completion()
        except _SHAPE_ERRORS as error:
            raise self._bad(f"the stream's final event is not in the API's shape: {type(error).__name__}: "
                            f"{error}", "shape", None) from error

    def _bad(self, message: str, code: str, body: str | bytes | None) -> BadResponse:
        return BadResponse(message, status=self.status, content_type=self.content_type, code=code, body=body)


# -- the I/O of one try --------------------------------------------------------------------------------------
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
    async try awaits the method and wraps its value in :class:`_AsyncDirect`."""

    def __init__(self, method: Callable[..., Any], kwargs: dict[str, Any], stream: bool) -> None:
        self._call, self._stream = (method, kwargs), stream
        self.value: Any = None
        self.http_response: Any = None

    def __enter__(self) -> _Direct:
        method, kwargs = self._call
        try:
            self.value = method(**kwargs)
        except json.JSONDecodeError as error:  # the SDK read the answer itself and could not (google-genai)
            raise _unreadable(error) from error
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


def _unreadable(error: json.JSONDecodeError) -> BadResponse:
    """An SDK's own failure to read an answer body as JSON, where the SDK reads the body before returning (no
    raw-response twin): a :class:`BadResponse` (retryable). Only a decode error: anything else the call raises
    (the caller's own bad arguments, say) is not about the answer."""
    return BadResponse(f"the response is not JSON: {error}", status=None, content_type=None, code="not_json",
                       body=error.doc)


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


def send_sync(method: Callable[..., Any], endpoint: Endpoint, kwargs: dict[str, Any], *, stream: bool,
              tool: str | None, deadline: float | None, show: Show | None
              ) -> Generator[Partial | Completion, None, None]:
    """One HTTP try (see the module docstring): the previews of a stream, then the completion, its last item."""
    alarm: Alarm | None = None
    cut = Cut()
    if deadline is not None:
        # armed before sending: the SDK reads the headers, and an error status's whole body, before it returns
        alarm = arm(deadline, cut)
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
                completion = reading.answer(parsed)
            else:
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
                completion = reading.end()
    except Exception as error:
        if alarm is not None and alarm.fired and not isinstance(error, TimeoutError):
            raise deadline_passed() from error
        raise
    finally:
        if alarm is not None:
            alarm.cancel()
    yield completion


# -- async ----------------------------------------------------------------------------------------------------
async def _within(step: Awaitable[T], deadline: float | None) -> T:
    """Await one step of the try, cancelled when the deadline passes (``TimeoutError``)."""
    if deadline is None:
        return await step
    try:
        async with asyncio.timeout(deadline - time.monotonic()):
            return await step
    except TimeoutError as error:
        raise deadline_passed() from error


@contextlib.asynccontextmanager
async def _open_async(method: Callable[..., Any], kwargs: dict[str, Any], stream: bool, deadline: float | None
                      ) -> AsyncIterator[Any]:
    streaming = _raw_create(method, stream)
    if streaming is None:
        try:
            value = await _within(method(**kwargs), deadline)
        except json.JSONDecodeError as error:  # as in _Direct: the SDK could not read the answer it read itself
            raise _unreadable(error) from error
        async with value if stream and hasattr(value, "__aenter__") else contextlib.nullcontext():
            yield _AsyncDirect(value)
        return
    manager = streaming(**kwargs)
    response = await _within(manager.__aenter__(), deadline)
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


async def send_async(method: Callable[..., Any], endpoint: Endpoint, kwargs: dict[str, Any], *, stream: bool,
                     tool: str | None, deadline: float | None, show: Show | None
                     ) -> AsyncGenerator[Partial | Completion, None]:
    """The async twin of :func:`send_sync`."""
    async with _open_async(method, kwargs, stream, deadline) as response:
        reading = Reading(endpoint, response.http_response, stream=stream, tool=tool, show=show)
        if reading.wrong_type():
            raise reading.wrong_type_error(await _within(_head_async(reading.http), deadline))
        if not stream:
            try:
                parsed = await _within(response.parse(), deadline)
            except Exception as error:
                raise reading.failed(error, "the response") from error
            completion = reading.answer(parsed)
        else:
            events = (await _within(response.parse(), deadline)).__aiter__()
            while (snapshot := await _within(_next_preview(events, reading), deadline)) is not None:
                yield snapshot
            completion = reading.end()
    yield completion


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
