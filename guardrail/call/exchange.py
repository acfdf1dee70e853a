"""One HTTP try of a structured call: send, check the answer is the API's, read it, all within the deadline.

The drivers (:mod:`guardrail.call.drivers`) call :func:`exchange_sync` / :func:`exchange_async` once per HTTP
try. Each asks the SDK for its *raw, unread* response (``with_streaming_response``), so the status and
content type are known before a byte of the body is read, and the body is read under guardrail's control:

- **Shape.** A JSON answer must come as JSON, a stream as an event stream, and what arrives must parse and
  carry the API's fields. Anything else (an HTML page from a proxy, a JSON content type over a body that is
  not JSON, a stream event that is not JSON, an answer without ``choices``) raises
  :class:`~guardrail.vendors.failures.BadResponse` with the status, the content type and a redacted snippet,
  never the ``AttributeError``/``JSONDecodeError`` the SDK or an adapter tripped over.
- **Deadline.** The whole try ends by the call's deadline, however slowly the headers or the body (a good
  answer's or an error status's) arrive. Sync: a :mod:`watchdog <guardrail.call.watchdog>` alarm, armed before
  the request is sent, shuts the connection down at the deadline, which wakes the blocked read. Async:
  every await (the request, the body, each stream event) runs under
  ``asyncio.timeout``, never across a ``yield``. Either way the try raises ``TimeoutError``.

The checks are plain functions shared by both; the two exchanges differ only in ``await``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, TypeVar

from guardrail.call.watchdog import Alarm, Cut, arm, install_hooks, watching
from guardrail.outcome import Partial
from guardrail.vendors.base import Accumulator, Completion, Endpoint
from guardrail.vendors.failures import BadResponse

T = TypeVar("T")
#: Turns the accumulated stream into a preview to yield, or ``None`` (the drivers' previewer).
Show = Callable[[Accumulator], Partial | None]
#: What an adapter or the SDK raises on data that is not in the API's shape.
_SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)
#: Errors of a connection lost mid-body (httpx's names; the SDKs let them through while a body is read).
_CUT_NAMES = frozenset({"RemoteProtocolError", "ReadError", "IncompleteRead"})
#: Bytes of a wrong-content-type body read for its snippet (the rest is never read).
_HEAD_BYTES = 4096


def deadline_passed() -> TimeoutError:
    """The error a try ends with when the call's deadline passes while the answer is on its way."""
    return TimeoutError("the call's deadline passed while the answer was arriving; the connection was closed")


# -- the checks, shared by both exchanges -------------------------------------------------------------------
def _meta(http: Any) -> tuple[int | None, str]:
    """(status, content type) of an httpx response, or (None, "") when there is none to read."""
    if http is None:
        return None, ""
    status = getattr(http, "status_code", None)
    headers = getattr(http, "headers", None) or {}
    return (status if isinstance(status, int) else None), str(headers.get("content-type") or "")


def _wrong_type(content_type: str, stream: bool) -> bool:
    """Whether a stated content type is not what the API sends (no content type: let the SDK judge)."""
    if not content_type:
        return False
    media = content_type.split(";")[0].strip().lower()
    return "event-stream" not in media if stream else not media.endswith("json")


def _wrong_type_error(http: Any, stream: bool, head: bytes) -> BadResponse:
    status, content_type = _meta(http)
    expected = "an event stream" if stream else "JSON"
    return BadResponse(f"the response is not the API's: status {status}, content type {content_type!r} where "
                       f"{expected} was expected", status=status, content_type=content_type, code="content_type",
                       body=head)


def _body(http: Any) -> bytes | None:
    try:
        content = http.content if http is not None else None
    except Exception:  # not read (or not readable): nothing to show
        return None
    return content if isinstance(content, bytes) else None


def _not_json(http: Any, error: BaseException, what: str) -> BadResponse:
    status, content_type = _meta(http)
    doc = getattr(error, "doc", None)  # json.JSONDecodeError keeps the text it could not read
    return BadResponse(f"{what} is not JSON (status {status}, {content_type or 'no content type'}): {error}",
                       status=status, content_type=content_type, code="not_json",
                       body=doc if isinstance(doc, str) else _body(http))


def _cut_off(http: Any, error: Exception) -> Exception:
    """A connection lost while the body was arriving, as a :class:`BadResponse` with the status (other errors
    are returned as they are)."""
    if type(error).__name__ not in _CUT_NAMES:
        return error
    status, content_type = _meta(http)
    return BadResponse(f"the response body was cut off (status {status}): {error}", status=status,
                       content_type=content_type, code="cut_off", body=None)


def _read(endpoint: Endpoint, http: Any, parsed: Any, tool: str | None) -> Completion:
    """The adapter's reading of a parsed answer; a body without the API's fields is a :class:`BadResponse`."""
    status, content_type = _meta(http)
    if isinstance(parsed, (str, bytes)):  # the SDK hands back text it could not read as JSON
        raise BadResponse(f"the response is not JSON (status {status}, {content_type or 'no content type'})",
                          status=status, content_type=content_type, code="not_json", body=parsed)
    missing = [name for name in endpoint.list_fields if not isinstance(getattr(parsed, name, None), list)]
    if missing:
        raise BadResponse(f"the response is JSON but not the API's answer (status {status}): no "
                          f"{', '.join(missing)}", status=status, content_type=content_type, code="shape",
                          body=_body(http) or repr(parsed))
    try:
        return endpoint.read(parsed, tool)
    except _SHAPE_ERRORS as error:
        raise BadResponse(f"the response is JSON but not in the API's shape (status {status}): "
                          f"{type(error).__name__}: {error}", status=status, content_type=content_type,
                          code="shape", body=_body(http) or repr(parsed)) from error


def _feed(accumulator: Accumulator, http: Any, event: Any) -> None:
    try:
        accumulator.feed(event)
    except _SHAPE_ERRORS as error:
        status, content_type = _meta(http)
        raise BadResponse(f"a stream event is not in the API's shape: {type(error).__name__}: {error}",
                          status=status, content_type=content_type, code="shape", body=repr(event)) from error


def _finish(accumulator: Accumulator, http: Any, events: int) -> Completion:
    status, content_type = _meta(http)
    if events == 0:
        raise BadResponse(f"the event stream ended without a single event (status {status})", status=status,
                          content_type=content_type, code="shape", body=_body(http))
    try:
        return accumulator.completion()
    except _SHAPE_ERRORS as error:
        raise BadResponse(f"the stream's final event is not in the API's shape: {type(error).__name__}: {error}",
                          status=status, content_type=content_type, code="shape", body=None) from error


def _streaming_create(method: Callable[..., Any]) -> Callable[..., Any] | None:
    """The SDK's ``with_streaming_response`` twin of a bound ``create`` method, when it has one."""
    resource = getattr(method, "__self__", None)
    streaming = getattr(resource, "with_streaming_response", None)
    found = getattr(streaming, getattr(method, "__name__", "create"), None)
    return found if callable(found) else None


class _Direct:
    """Stands in for the SDK's raw response when the method has no ``with_streaming_response``: the SDK has
    already read a plain answer; a stream keeps its own ``response``."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.http_response = getattr(value, "response", None)

    def parse(self) -> Any:
        return self.value


class _AsyncDirect(_Direct):
    """:class:`_Direct` for an async method (its ``parse`` is awaited, as the SDK's async one is)."""

    async def parse(self) -> Any:
        return self.value


# -- sync -----------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _open_sync(method: Callable[..., Any], kwargs: dict[str, Any]) -> Iterator[Any]:
    streaming = _streaming_create(method)
    if streaming is None:
        value = method(**kwargs)
        with value if kwargs.get("stream") and hasattr(value, "__enter__") else contextlib.nullcontext():
            yield _Direct(value)
        return
    with streaming(**kwargs) as response:
        yield response


@contextlib.contextmanager
def _open_watched(method: Callable[..., Any], kwargs: dict[str, Any], cut: Cut) -> Iterator[Any]:
    """:func:`_open_sync` with the hooks reporting to ``cut`` while the SDK sends and reads (only then: the
    context variable must not stay set across the exchange's ``yield``)."""
    with contextlib.ExitStack() as stack:
        with watching(cut):
            response = stack.enter_context(_open_sync(method, kwargs))
        yield response


def _hook(method: Callable[..., Any]) -> None:
    """Let the watchdog learn this SDK client's connections (see :mod:`guardrail.call.watchdog`)."""
    sdk = getattr(getattr(method, "__self__", None), "_client", None)
    install_hooks(getattr(sdk, "_client", None))


def _head_sync(http: Any) -> bytes:
    head = b""
    with contextlib.suppress(Exception):
        for chunk in http.iter_bytes():
            head += chunk
            if len(head) >= _HEAD_BYTES:
                break
    return head


def exchange_sync(method: Callable[..., Any], endpoint: Endpoint, kwargs: dict[str, Any], *, stream: bool,
                  tool: str | None, deadline_at: float | None, show: Show | None
                  ) -> Generator[Partial, None, Completion]:
    """One HTTP try (see the module docstring): yields previews of a stream, returns the completion."""
    alarm: Alarm | None = None
    cut = Cut()
    if deadline_at is not None:
        # armed before sending: the SDK reads the headers, and an error status's whole body, before it returns
        _hook(method)
        alarm = arm(deadline_at, cut)
    try:
        with _open_watched(method, kwargs, cut) as response:
            http = response.http_response
            if http is not None:
                cut.attach(getattr(http, "extensions", {}).get("network_stream"))
            if _wrong_type(_meta(http)[1], stream):
                raise _wrong_type_error(http, stream, _head_sync(http))
            if not stream:
                try:
                    parsed = response.parse()
                except ValueError as error:
                    raise _not_json(http, error, "the response") from error
                except Exception as error:
                    raise _cut_off(http, error) from error
                return _read(endpoint, http, parsed, tool)
            accumulator, events = endpoint.accumulator(tool), 0
            iterator = iter(response.parse())
            while True:
                try:
                    event = next(iterator)
                except StopIteration:
                    break
                except ValueError as error:
                    raise _not_json(http, error, "a stream event") from error
                except Exception as error:
                    raise _cut_off(http, error) from error
                events += 1
                _feed(accumulator, http, event)
                snapshot = show(accumulator) if show is not None else None
                if snapshot is not None:
                    yield snapshot
            if alarm is not None and alarm.fired:  # a connection closed at the deadline may look like an end
                raise deadline_passed()
            return _finish(accumulator, http, events)
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
async def _open_async(method: Callable[..., Any], kwargs: dict[str, Any], deadline_at: float | None
                      ) -> AsyncIterator[Any]:
    streaming = _streaming_create(method)
    if streaming is None:
        value = await _within(method(**kwargs), deadline_at)
        async with value if kwargs.get("stream") and hasattr(value, "__aenter__") else contextlib.nullcontext():
            yield _AsyncDirect(value)
        return
    manager = streaming(**kwargs)
    response = await _within(manager.__aenter__(), deadline_at)
    try:
        yield response
    finally:
        await manager.__aexit__(None, None, None)


async def _head_async(http: Any) -> bytes:
    head = b""
    with contextlib.suppress(Exception):
        async for chunk in http.aiter_bytes():
            head += chunk
            if len(head) >= _HEAD_BYTES:
                break
    return head


async def exchange_async(method: Callable[..., Any], endpoint: Endpoint, kwargs: dict[str, Any], *, stream: bool,
                         tool: str | None, deadline_at: float | None, show: Show | None
                         ) -> AsyncGenerator[Partial | Completion, None]:
    """The async twin of :func:`exchange_sync`; the completion is its last item (async generators return
    nothing)."""
    async with _open_async(method, kwargs, deadline_at) as response:
        http = response.http_response
        if _wrong_type(_meta(http)[1], stream):
            raise _wrong_type_error(http, stream, await _within(_head_async(http), deadline_at))
        if not stream:
            try:
                parsed = await _within(response.parse(), deadline_at)
            except ValueError as error:
                raise _not_json(http, error, "the response") from error
            except Exception as error:
                raise _cut_off(http, error) from error
            yield _read(endpoint, http, parsed, tool)
            return
        accumulator, events = endpoint.accumulator(tool), 0
        iterator = (await _within(response.parse(), deadline_at)).__aiter__()
        while True:
            try:
                event = await _within(iterator.__anext__(), deadline_at)
            except StopAsyncIteration:
                break
            except ValueError as error:
                raise _not_json(http, error, "a stream event") from error
            except Exception as error:
                raise _cut_off(http, error) from error
            events += 1
            _feed(accumulator, http, event)
            snapshot = show(accumulator) if show is not None else None
            if snapshot is not None:
                yield snapshot
        yield _finish(accumulator, http, events)
