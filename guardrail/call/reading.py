"""Reading one raw vendor response, without I/O: the checks and the parsing both exchanges share.

:mod:`guardrail.call.exchange` does the I/O of one HTTP try, sync or async; at each point where something
arrived (the headers, the parsed body, one stream event, the end of the stream) it hands it to a
:class:`Reading`, which decides what it means:

- a content type that is not the API's (an HTML page from a proxy), a body or an event that is not JSON, an
  answer without the API's fields, a stream with no events: a :class:`~guardrail.vendors.failures.BadResponse`
  with the status, the content type and a redacted snippet, never the ``AttributeError``/``JSONDecodeError``
  the SDK or an adapter tripped over;
- a connection lost mid-body: a ``BadResponse`` (``cut_off``) too;
- otherwise the endpoint adapter's :class:`~guardrail.vendors.base.Completion`, or a preview of a stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from guardrail.outcome import Partial
from guardrail.vendors.base import Accumulator, Completion, Endpoint
from guardrail.vendors.failures import BadResponse, cut_off

#: Turns the accumulated stream into a preview to yield, or ``None`` (the drivers' previewer).
Show = Callable[[Accumulator], Partial | None]
#: What an adapter or the SDK raises on data that is not in the API's shape.
_SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)
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

    One instance per try. The exchange asks :meth:`wrong_type` before reading the body (and passes the first
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
        return "event-stream" not in media if self.stream else not media.endswith("json")

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
