"""Sorting a vendor SDK's exception into what guardrail does next: retry, change mode, or stop.

Both official SDKs raise errors of the same shape (``status_code``, ``response`` with headers, ``body``),
so this reads them by shape and needs neither SDK imported; google-genai's ``APIError`` carries the status as
``code`` and the error JSON as ``details`` (it is recognised by class, looked up only once the SDK is loaded), and
a Google ``RetryInfo`` detail counts as a requested wait. Retryable: 408, 409, 429, 5xx, Anthropic's
529, timeouts, dropped connections, and an overload sent as an error event in the middle of a stream.
Never retryable: other 4xx (bad request, auth, not found) and spend-limit/quota errors that waiting
cannot fix. A 400 about the JSON schema is its own kind: the caller moves to the next mode.

A response that is not in the API's shape (an HTML page from a proxy, a JSON content type over a body that
is not JSON, a stream event that is not JSON or lacks the API's fields) arrives as a :class:`BadResponse`
raised by the drivers; it is retryable (the proxy, gateway or network that spoiled it may not spoil the
next one). Every failure carries a :func:`snippet` of the body: the start of it, secrets redacted.
"""

from __future__ import annotations

import email.utils
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Literal

from guardrail.errors import Signal
from guardrail.observe.redact import redact_text

FailureKind = Literal["retryable", "schema_rejected", "fatal"]

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
#: Error codes and types meaning "you are out of money or quota": a 429 that retrying cannot fix.
_SPEND_MARKERS = ("insufficient_quota", "spend_limit", "billing", "credit_balance", "quota_exceeded")
#: Codes (OpenAI) and message phrases (both) of a 400 that rejects the structured-output schema.
_SCHEMA_CODES = frozenset({"invalid_json_schema", "invalid_function_parameters", "invalid_schema"})
_SCHEMA_PHRASES = ("json schema", "json_schema", "input_schema", "schema is too complex", "invalid schema",
                   "output_config.format", "response_format", "'strict'", "strict mode",
                   # Gemini: generation_config.response_json_schema / responseJsonSchema, function parameters
                   "responsejsonschema", "response_schema", "responseschema", "parametersjsonschema",
                   "parameters_json_schema",
                   "strict: extra inputs")  # a platform without strict tools (Vertex AI, Bedrock) refusing the field
#: Error types/codes of an error event inside a stream that a new request may not meet.
_RETRYABLE_STREAM_TYPES = frozenset({"server_error", "overloaded_error", "api_error", "rate_limit_error",
                                     "rate_limit_exceeded", "timeout", "internal_error", "service_unavailable"})
#: Amazon Bedrock's exceptions inside a response stream that a new request may not meet (members of
#: bedrock-runtime's ``ResponseStream``; the anthropic SDK raises them as an error event with status 200).
_BEDROCK_STREAM_RETRYABLE = frozenset({"internalServerException", "serviceUnavailableException",
                                       "throttlingException", "modelTimeoutException"})
#: The transport errors (a request that never got a whole answer: refused or dropped connections, timeouts),
#: as (module, class) of each SDK and of the HTTP client under them. A class is looked up only in a module that
#: is already imported: an error can only come from a module that is loaded.
_TRANSPORT_CLASSES = (("openai", "APIConnectionError"), ("anthropic", "APIConnectionError"),
                      ("httpx2", "TransportError"), ("httpcore2", "NetworkError"), ("httpcore2", "TimeoutException"),
                      ("httpcore2", "RemoteProtocolError"),
                      # google-genai's async client sends through aiohttp when it is installed
                      ("aiohttp", "ClientConnectionError"), ("aiohttp", "ClientPayloadError"))
#: The errors of a connection lost in the middle of a body (what the SDKs raise, or raise from, then).
#: SDK errors that carry the HTTP status as ``code`` (and the error JSON as ``details``) where the others have
#: ``status_code`` and ``body``: google-genai's ``APIError`` (``ClientError`` 4xx, ``ServerError`` 5xx).
_CODED_CLASSES = (("google.genai.errors", "APIError"),)
_CUT_CLASSES = (("httpx2", "RemoteProtocolError"), ("httpx2", "ReadError"), ("httpcore2", "RemoteProtocolError"),
                ("httpcore2", "ReadError"), ("http.client", "IncompleteRead"),
                ("aiohttp", "ClientPayloadError"), ("aiohttp", "ServerDisconnectedError"))


@dataclass(frozen=True, slots=True)
class Failure:
    """A vendor error, classified.

    ``retry_after`` is the server's requested wait in seconds (``retry-after-ms``, ``retry-after`` in
    seconds or as an HTTP date), ``None`` when it gave none.
    """

    kind: FailureKind
    status: int | None
    code: str | None
    message: str
    retry_after: float | None
    error: BaseException
    #: The start of the response body (secrets redacted), when there was one to show.
    snippet: str | None = None


#: Characters of a response body kept in a snippet (after redaction), and how much of it is scanned.
SNIPPET_CHARS = 200
_SCAN_CHARS = 4096
_SPACES = re.compile(r"\s+")


def snippet(body: str | bytes | None) -> str | None:
    """The start of a response body for an error message: whitespace collapsed, secrets redacted, at most
    :data:`SNIPPET_CHARS` characters. Redaction runs before the cut, so a secret is never half-shown."""
    if body is None:
        return None
    text = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else str(body)
    text = redact_text(_SPACES.sub(" ", text[:_SCAN_CHARS]).strip())
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS - 1] + "\u2026"


class BadResponse(Signal):
    """A response that is not in the API's shape, raised by the drivers in place of whatever the SDK or the
    adapter tripped over (``AttributeError``, ``JSONDecodeError``, a validation error).

    Attributes:
        status: the HTTP status of the response (``None`` when the SDK did not show it).
        content_type: its ``content-type`` header.
        code: what was wrong: ``"not_json"`` (the body or an event is not JSON), ``"content_type"`` (not the
            content type the API sends), ``"shape"`` (JSON without the API's fields).
        snippet: the start of the body or event, redacted (:func:`snippet`).
    """

    def __init__(self, message: str, *, status: int | None, content_type: str | None, code: str,
                 body: str | bytes | None) -> None:
        super().__init__(message)
        self.status = status
        self.content_type = content_type
        self.code = code
        self.snippet = snippet(body)


def classify(error: BaseException) -> Failure | None:
    """Classify an exception raised by an SDK call; ``None`` means it is not a vendor error at all."""
    if isinstance(error, BadResponse):
        return Failure("retryable", error.status, error.code, str(error), None, error, error.snippet)
    coded = _loaded(_CODED_CLASSES)
    if coded and isinstance(error, coded):
        status, body = getattr(error, "code", None), getattr(error, "details", None)
    else:
        status, body = getattr(error, "status_code", None), getattr(error, "body", None)
    if isinstance(status, int):
        shown = _body_snippet(body, error)
        if body is not None and not isinstance(body, dict):  # not the API's error JSON: a proxy's page, say
            # (a 2xx here is an error event inside a stream whose data is not JSON: spoiled, so retryable)
            status_kind_: FailureKind = "retryable" if status in RETRYABLE_STATUS or status >= 500 or status < 300 \
                else "fatal"
            return Failure(status_kind_, status, None, f"status {status} with a body that is not the API's error "
                           f"JSON ({_content_type(error)})", retry_after(_headers(error)), error, shown)
        code, etype, message = _error_fields(body, error)
        headers = _headers(error)
        wait = retry_after(headers)
        if wait is None:
            wait = _retry_info(body)
        markers = " ".join(x for x in (code, etype) if x).lower()
        if etype == "overloaded_error" or (status == 200 and etype in {"api_error", "overloaded_error"}) or \
                (status == 200 and etype in _BEDROCK_STREAM_RETRYABLE):
            # Anthropic reports an overload that arrives mid-stream as a 200 with an error event.
            return Failure("retryable", status, code or etype, message, wait, error, shown)
        if any(m in markers for m in _SPEND_MARKERS):
            return Failure("fatal", status, code or etype, message, None, error, shown)
        if status == 400 and (code in _SCHEMA_CODES or any(p in message.lower() for p in _SCHEMA_PHRASES)):
            return Failure("schema_rejected", status, code or etype, message, None, error, shown)
        status_kind: FailureKind = "retryable" if status in RETRYABLE_STATUS or status >= 500 else "fatal"
        return Failure(status_kind, status, code or etype, message, wait, error, shown)
    body = getattr(error, "body", None)
    if isinstance(body, dict):  # an error event in the middle of a stream (no HTTP status of its own)
        code, etype, message = _error_fields(body, error)
        found = {x for x in (code, etype) if x}
        kind: FailureKind = "retryable" if found & _RETRYABLE_STREAM_TYPES else "fatal"
        return Failure(kind, None, code or etype, message, None, error)
    if isinstance(error, (TimeoutError, ConnectionError, *_loaded(_TRANSPORT_CLASSES))):
        return Failure("retryable", None, type(error).__name__, str(error), None, error)
    return None


def cut_off(error: BaseException) -> bool:
    """Whether ``error``, or an error it was raised from, is a connection lost in the middle of a body (the
    anthropic SDK raises its own ``APIConnectionError`` from httpx's ``RemoteProtocolError`` while a stream is
    read; openai lets httpx's through)."""
    classes = _loaded(_CUT_CLASSES)
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, classes):
            return True
        seen.add(id(current))
        current = current.__cause__
    return False


def _loaded(names: tuple[tuple[str, str], ...]) -> tuple[type[BaseException], ...]:
    """The exception classes of ``names`` whose modules are imported (the others cannot have raised)."""
    found = []
    for module_name, class_name in names:
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module is not None else None
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def _error_fields(body: Any, error: BaseException) -> tuple[str | None, str | None, str]:
    """(code, type, message) from an OpenAI ``{"error": {...}}`` or Anthropic ``{"type": "error", "error": {...}}``."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(inner, dict):
        return getattr(error, "code", None), getattr(error, "type", None), str(getattr(error, "message", error))
    code = inner.get("code")
    if isinstance(code, int):  # Gemini's code is the HTTP status again; its kind is "status" (RESOURCE_EXHAUSTED)
        code = None
    details = inner.get("details")
    if code is None and isinstance(details, dict):
        code = details.get("error_code")
    etype = inner.get("type") or inner.get("status")
    message = inner.get("message") or str(error)
    return (str(code) if code is not None else None, str(etype) if etype is not None else None, str(message))


def _retry_info(body: Any) -> float | None:
    """The wait a Google API error asks for in its details (``google.rpc.RetryInfo`` ``retryDelay``: ``"37s"``)."""
    inner = body.get("error") if isinstance(body, dict) else None
    details = inner.get("details") if isinstance(inner, dict) else None
    for detail in details if isinstance(details, list) else ():
        delay = detail.get("retryDelay") if isinstance(detail, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None


def _body_snippet(body: Any, error: BaseException) -> str | None:
    """The redacted start of an error response's body (the SDK keeps it on ``.response``)."""
    response = getattr(error, "response", None)
    try:
        text = response.text if response is not None else None
    except Exception:  # a streamed response whose body was never read: nothing to show
        text = None
    if text is None and isinstance(body, str):
        text = body
    return snippet(text)


def _content_type(error: BaseException) -> str:
    return str(_headers(error).get("content-type") or "no content type")


def _headers(error: BaseException) -> Any:
    response = getattr(error, "response", None)
    return getattr(response, "headers", None) or {}


def retry_after(headers: Any, *, now: float | None = None) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, else ``retry-after`` (seconds or HTTP-date)."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class StreamError(Signal):
    """An error event inside a stream that the SDK yields instead of raising (OpenAI Responses).

    ``body`` has the same shape as an SDK error body, so :func:`classify` sorts it like any other.
    """

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(str(body.get("message") or body))
        self.body = body
