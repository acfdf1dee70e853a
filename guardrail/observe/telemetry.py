"""What guardrail reports while it works: log events, one OpenTelemetry span per call, and its metrics' inputs.

**Events.** :class:`EventLogger` (``get_logger(name)``) writes guardrail's events (``guardrail.call.start``,
``guardrail.attempt``, ``guardrail.call.end``, ``guardrail.audit`` ...). A library should not print, and
structlog's out-of-the-box configuration writes every event to stdout, so until the application calls
``structlog.configure(...)`` the events go to the stdlib loggers ``guardrail`` and ``guardrail.audit`` instead,
at INFO, as ``event key=value ...`` with the fields also in ``record.guardrail``; they are silent unless the
application enables those loggers (``logging.basicConfig(level=logging.INFO)``). Once structlog is configured,
events go through the application's structlog pipeline with their fields as keywords. The choice is made per
event, so configuring structlog after importing guardrail works. structlog is never imported here: an
application that configured it has imported it already, so it is looked up in ``sys.modules`` per event.

**The call's span** follows the OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.response.id`` (the last
answer's), ``server.address``/``server.port``, ``gen_ai.usage.input_tokens``/``output_tokens`` with
``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_creation.input_tokens`` and
``gen_ai.usage.reasoning.output_tokens``, ``gen_ai.response.finish_reasons``, ``error.type``) plus guardrail's own
``guardrail.*`` attributes (mode, attempts, fixes, vendor calls, schema hash, ``guardrail.cost.usd`` when the
``cost`` extra prices the model). Message content is not recorded unless ``Settings.capture_content`` is set;
then each attempt adds one ``gen_ai.client.inference.operation.details`` event (:mod:`guardrail.observe.content`)
whose messages pass through :func:`guardrail.observe.redact.redact` first (as do error messages on the span).
Without an OpenTelemetry SDK configured no span is opened and the trace id is the current context's, else a random
one, so every error still carries an id to search logs by.

**The destination** (:class:`Target`): ``gen_ai.provider.name`` is the endpoint's (``openai``, ``anthropic``, or
a self-hosted server kind), except that an ``openai.AzureOpenAI``/``AsyncAzureOpenAI`` client is
``azure.ai.openai``, the conventions' own name for Azure OpenAI (it speaks OpenAI's wire format but bills and
fails as Azure); ``server.address``/``server.port`` come from the SDK client's ``base_url`` (the port defaults to
443 for https, 80 for http). When the SDK method guardrail calls is wrapped by an OpenTelemetry instrumentation (a
``wrapt`` wrapper whose function lives under ``opentelemetry.instrumentation.*``, as
``opentelemetry-instrumentation-openai-v2`` installs on ``Completions.create``), that instrumentation already
records ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration`` for every HTTP request guardrail
sends through it; guardrail then records neither (:mod:`guardrail.observe.metrics`). The method actually called
is the SDK's ``with_streaming_response`` twin, which keeps the instrumented ``create`` it was built from as
``__wrapped__``; both are inspected.

One structured call is one :class:`CallReport`: it opens the span, times each HTTP request for the GenAI client
metrics, and at the end puts the outcome on the span, counts it (:func:`guardrail.observe.metrics.record_call`,
only when a meter provider is configured) and logs the end.
"""

from __future__ import annotations

import contextlib
import logging
import random
import sys
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from guardrail.errors import CallError
from guardrail.observe import content, cost, metrics
from guardrail.observe.cost import AZURE_OPENAI
from guardrail.observe.redact import redact_text
from guardrail.outcome import Outcome, Result, Usage

__all__ = ["AZURE_OPENAI", "CallReport", "EventLogger", "Target", "cache_hit_span", "collecting", "get_logger",
           "instrumented", "internal_span", "mark_failed", "target_of", "tier_span", "tracing"]


# -- events ----------------------------------------------------------------------------------------------------
class EventLogger:
    """``info``/``warning``/``error``/``debug`` (event, **fields), routed as the module docstring says."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._stdlib = logging.getLogger(name)

    def debug(self, event: str, **fields: Any) -> None:
        self._emit(logging.DEBUG, "debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._emit(logging.INFO, "info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._emit(logging.WARNING, "warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._emit(logging.ERROR, "error", event, fields)

    def _emit(self, level: int, method: str, event: str, fields: dict[str, Any]) -> None:
        structlog = sys.modules.get("structlog")
        if structlog is not None and structlog.is_configured():
            getattr(structlog.get_logger(self.name), method)(event, **fields)
        elif self._stdlib.isEnabledFor(level):
            rendered = " ".join(f"{key}={value!r}" for key, value in fields.items())
            self._stdlib.log(level, "%s %s", event, rendered, extra={"guardrail": dict(fields, event=event)})


def get_logger(name: str = "guardrail") -> EventLogger:
    """The event logger for ``name`` (``guardrail``, ``guardrail.audit``)."""
    return EventLogger(name)


log = get_logger("guardrail")
_tracer = trace.get_tracer("guardrail")


# -- is anyone listening? ------------------------------------------------------------------------------------------
def tracing() -> bool:
    """Whether the application configured a tracer provider. Without one (the API's default proxy, or the
    explicit no-op provider) every span is a no-op, so a call opens none and only reads the current trace id."""
    return not isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def collecting() -> bool:
    """Whether the application configured a meter provider (the API's default proxy, or an explicit no-op
    provider, records nothing). Checked per call, so a provider set after import counts at once."""
    provider = otel_metrics.get_meter_provider()
    return not isinstance(provider, otel_metrics.NoOpMeterProvider) and type(provider).__name__ != "_ProxyMeterProvider"


def random_trace_id() -> str:
    """A trace id (32 hex digits) for a call no tracing gave one, so its logs and errors can still be joined."""
    return f"{random.getrandbits(128):032x}"


def current_trace_id() -> str:
    """The current context's trace id (a propagated parent's, or the caller's span's), else a random one."""
    current = trace.get_current_span().get_span_context()
    return format(current.trace_id, "032x") if current.is_valid else random_trace_id()


# -- the destination -----------------------------------------------------------------------------------------------
#: How far ``__wrapped__`` chains are followed looking for an instrumentation's wrapper.
_MAX_UNWRAP = 8


@dataclass(frozen=True, slots=True)
class Target:
    """The telemetry identity of one call's destination (see the module docstring)."""

    provider: str
    address: str | None = None
    port: int | None = None
    #: An OpenTelemetry instrumentation already records the GenAI client metrics of these requests.
    instrumented: bool = False

    def attributes(self) -> dict[str, Any]:
        """``gen_ai.provider.name`` plus ``server.address``/``server.port`` when known."""
        found: dict[str, Any] = {"gen_ai.provider.name": self.provider}
        if self.address:
            found["server.address"] = self.address
            if self.port is not None:
                found["server.port"] = self.port
        return found


def target_of(method: Callable[..., Any], provider: str) -> Target:
    """The :class:`Target` of a bound SDK ``create`` method (``provider``: the endpoint's provider name).

    Remembered per SDK resource while what it depends on stays the same object (the method's class attribute,
    which an instrumentation replaces, the streaming twin, the client's ``base_url``): a call pays a lookup.
    """
    resource = getattr(method, "__self__", None)
    if resource is None:  # a plain function (the raw-response flavor's): nothing to learn a server from
        return Target(provider, instrumented=instrumented(method))
    name = getattr(method, "__name__", "create")
    client = getattr(resource, "_client", None)
    streaming = getattr(getattr(resource, "with_streaming_response", None), name, None)
    # the streaming twin by identity: it wraps the resource's own bound method, so holding it in the value of a
    # WeakKeyDictionary keyed by the resource would keep the resource (and its client's sockets) alive forever
    key = (provider, name, getattr(type(resource), name, None), id(streaming), getattr(client, "base_url", None))
    try:
        known = _TARGETS.get(resource)
    except TypeError:  # not weak-referenceable
        known = None
    if known is not None and known[0] == key:
        return known[1]
    if provider == "openai" and _is_azure(client):
        provider = AZURE_OPENAI
    address, port = _server(key[-1])
    target = Target(provider, address, port, instrumented(method) or instrumented(streaming))
    with contextlib.suppress(TypeError):
        _TARGETS[resource] = (key, target)
    return target


_TARGETS: weakref.WeakKeyDictionary[Any, tuple[tuple[Any, ...], Target]] = weakref.WeakKeyDictionary()


def instrumented(function: Any) -> bool:
    """Whether ``function`` (or anything it wraps) is an OpenTelemetry instrumentation's ``wrapt`` wrapper."""
    for _ in range(_MAX_UNWRAP):
        if function is None:
            return False
        wrapper = getattr(function, "_self_wrapper", None)  # wrapt's FunctionWrapper/BoundFunctionWrapper
        if wrapper is not None and str(getattr(wrapper, "__module__", "")).startswith("opentelemetry.instrumentation"):
            return True
        function = getattr(function, "__wrapped__", None)
    return False


def _is_azure(client: Any) -> bool:
    openai = sys.modules.get("openai")  # an Azure client means openai is imported already
    if openai is None or client is None:
        return False
    kinds = tuple(kind for kind in (getattr(openai, "AzureOpenAI", None), getattr(openai, "AsyncAzureOpenAI", None))
                  if isinstance(kind, type))
    return bool(kinds) and isinstance(client, kinds)


def _server(url: Any) -> tuple[str | None, int | None]:
    """(host, port) of an httpx URL (or URL text); the scheme's default port when none is written."""
    if url is None:
        return None, None
    host = getattr(url, "host", None)
    if host is None:  # a plain string
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(str(url))
            return parts.hostname, parts.port or _default_port(parts.scheme)
        except ValueError:
            return None, None
    port = getattr(url, "port", None)
    return (str(host) or None), (port if isinstance(port, int) else _default_port(str(getattr(url, "scheme", ""))))


def _default_port(scheme: str) -> int | None:
    return {"https": 443, "http": 80}.get(scheme)


# -- one structured call ---------------------------------------------------------------------------------------------
class CallReport:
    """One structured call as observability sees it (see the module docstring).

    Entering opens the call's span (or, without tracing, only reads its trace id) and logs the start;
    :meth:`request` times each HTTP request for the GenAI client metrics; :meth:`end` puts the outcome on the span,
    counts it and logs the end. A :class:`~guardrail.errors.CallError` leaving the block ends the call with it.
    ``method`` is the SDK method the requests go through (its client names the server), ``provider`` the
    endpoint's provider name.
    """

    __slots__ = ("_opened", "capture", "collect", "model", "requests", "span", "target", "trace_id")

    def __init__(self, method: Callable[..., Any], provider: str, model: str, *, temperature: float | None,
                 max_tokens: int | None, capture_content: bool) -> None:
        self.target = target_of(method, provider)
        self.collect = collecting()  # whether metrics have a provider to go to, asked once per call
        self.model = model
        self.capture = capture_content
        #: Each attempt's request keywords, for content capture.
        self.requests: list[Mapping[str, Any]] = []
        self._opened: AbstractContextManager[tuple[Span, str]] = (
            _traced(self.target, model, temperature, max_tokens) if tracing() else _Untraced(self.target, model))

    @property
    def provider(self) -> str:
        """``gen_ai.provider.name`` as telemetry and pricing see it (``azure.ai.openai`` for Azure OpenAI)."""
        return self.target.provider

    def __enter__(self) -> CallReport:
        self.span, self.trace_id = self._opened.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> Any:
        if isinstance(error, CallError):
            self.end(error.outcome, error)
        return self._opened.__exit__(kind, error, traceback)

    def request(self, kwargs: Mapping[str, Any], *, first: bool) -> _Request:
        """One HTTP request about to be sent with ``kwargs`` (``first``: the first of its attempt, whose request
        content capture records), as a context manager that times it (see :class:`_Request`)."""
        if first and self.capture:
            self.requests.append(kwargs)
        return _Request(self)

    def end(self, outcome: Outcome, error: CallError | None) -> None:
        """The call's end: its span's attributes and the end event, and guardrail's counters."""
        if self.span.is_recording():
            _describe(self.span, outcome, error, self.capture, self.requests)
        log.info("guardrail.call.end", trace_id=outcome.trace_id, provider=outcome.provider, model=outcome.model,
                 mode=outcome.mode, attempts=len(outcome.attempts), vendor_calls=outcome.vendor_calls,
                 input_tokens=outcome.usage.input_tokens, output_tokens=outcome.usage.output_tokens,
                 seconds=round(outcome.seconds, 4), error=type(error).__name__ if error else None)
        if self.collect:
            metrics.record_call(self.target, outcome, error, outcome.value if isinstance(outcome, Result) else None)


class _Request:
    """One HTTP request in flight: when it ends, the GenAI client metrics for it (unless an instrumentation
    records them already, or no meter provider is configured). The driver sets :attr:`usage` and
    :attr:`response_model` from the completion once the answer is read."""

    __slots__ = ("report", "response_model", "started", "usage")

    def __init__(self, report: CallReport) -> None:
        self.report = report
        self.usage: Usage | None = None
        self.response_model: str | None = None
        self.started = time.monotonic()

    def __enter__(self) -> _Request:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: Any) -> None:
        report = self.report
        if not report.collect or report.target.instrumented:
            return
        failed: str | None = None
        if kind is not None:
            failed = "cancelled" if kind is GeneratorExit or kind.__name__ == "CancelledError" else kind.__name__
        metrics.record_request(report.target, report.model, time.monotonic() - self.started, self.usage,
                               self.response_model, failed)


class _Untraced:
    """The call's span without tracing: no span, only the trace id and the start event."""

    __slots__ = ("model", "provider")

    def __init__(self, target: Target, model: str) -> None:
        self.provider, self.model = target.provider, model

    def __enter__(self) -> tuple[Span, str]:
        trace_id = current_trace_id()
        log.info("guardrail.call.start", trace_id=trace_id, provider=self.provider, model=self.model)
        return trace.INVALID_SPAN, trace_id

    def __exit__(self, *exc: object) -> None:
        return None


def _request_attributes(destination: dict[str, Any], model: str) -> dict[str, Any]:
    """A call span's request attributes: the operation, ``destination`` (provider, server) and the model."""
    return {"gen_ai.operation.name": "chat", **destination, "gen_ai.request.model": model,
            "gen_ai.output.type": "json"}


@contextmanager
def _traced(target: Target, model: str, temperature: float | None, max_tokens: int | None
            ) -> Iterator[tuple[Span, str]]:
    """The call's span (``chat MODEL``) with the request settings the caller set; yields it and its trace id."""
    attributes = _request_attributes(target.attributes(), model)
    if temperature is not None:
        attributes["gen_ai.request.temperature"] = temperature
    if max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = max_tokens
    with _tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes,
                                       record_exception=False, set_status_on_exception=False) as span:
        trace_id = current_trace_id()  # the span's own, being current
        log.info("guardrail.call.start", trace_id=trace_id, provider=target.provider, model=model)
        yield span, trace_id


def _describe(span: Span, outcome: Outcome, error: BaseException | None, capture_content: bool,
              requests: list[Mapping[str, Any]]) -> None:
    """The outcome's attributes, content events and status on a recording span."""
    reasons = [a.finish_reason for a in outcome.attempts if a.finish_reason]
    last = outcome.attempts[-1] if outcome.attempts else None
    usage = outcome.usage
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cached_input_tokens,
        "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
        "gen_ai.usage.reasoning.output_tokens": usage.reasoning_tokens,
        "gen_ai.response.finish_reasons": reasons,
        "guardrail.mode": outcome.mode,
        "guardrail.attempts": len(outcome.attempts),
        "guardrail.vendor_calls": outcome.vendor_calls,
        "guardrail.fixes": len(last.fixes) if last else 0,
        "guardrail.schema_hash": outcome.schema_hash,
    }
    answered = next((a for a in reversed(outcome.attempts) if a.response_model or a.response_id), None)
    if answered is not None and answered.response_model:
        attributes["gen_ai.response.model"] = answered.response_model
    if answered is not None and answered.response_id:
        attributes["gen_ai.response.id"] = answered.response_id
    if cost.available():  # priced only when a span records it
        spent = outcome.cost_usd
        if spent is not None:
            attributes["guardrail.cost.usd"] = spent
    span.set_attributes(attributes)
    if capture_content:
        for attempt, sent in zip(outcome.attempts, requests, strict=False):
            span.add_event(content.EVENT, content.event_attributes(attempt, sent))
    if error is not None:
        span.set_attribute("error.type", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, redact_text(str(error))[:200]))


# -- spans of the response cache and the chain ----------------------------------------------------------------------
def cache_hit_span(target_provider: str, model: str, mode: str, schema_hash: str) -> str:
    """Record a call answered from the response cache: a ``chat MODEL`` span (``guardrail.cached`` true,
    ``guardrail.vendor_calls`` 0, nothing sent) when tracing is on, and the ``guardrail.call.cached`` event.
    Returns the call's trace id, as a :class:`CallReport` gives it."""
    if not tracing():
        trace_id = current_trace_id()
    else:
        attributes = {**_request_attributes({"gen_ai.provider.name": target_provider}, model), "guardrail.cached": True,
                      "guardrail.mode": mode, "guardrail.attempts": 0, "guardrail.vendor_calls": 0,
                      "guardrail.schema_hash": schema_hash}
        with _tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes):
            trace_id = current_trace_id()
    log.info("guardrail.call.cached", trace_id=trace_id, provider=target_provider, model=model, mode=mode)
    return trace_id


@contextmanager
def tier_span(name: str, kind: str) -> Iterator[Span]:
    """A span around one chain tier's run (``guardrail.chain.tier NAME``): a vendor tier's call span is its child,
    and a local, rules or default tier, which makes no vendor call, still shows up in the trace with its time.
    A tier that raised gets ``error.type`` and an error status (the message redacted)."""
    attributes = {"guardrail.chain.tier": name, "guardrail.chain.kind": kind}
    with internal_span(f"guardrail.chain.tier {name}", attributes) as span:
        yield span


@contextmanager
def internal_span(name: str, attributes: Mapping[str, Any]) -> Iterator[Span]:
    """An INTERNAL span ``name``, current while the block runs; an exception leaving the block marks it failed
    (:func:`mark_failed`) and goes on."""
    with _tracer.start_as_current_span(name, kind=SpanKind.INTERNAL, attributes=attributes,
                                       record_exception=False, set_status_on_exception=False) as span:
        try:
            yield span
        except Exception as error:
            mark_failed(span, error)
            raise


def mark_failed(span: Span, error: BaseException) -> None:
    """``error.type`` (the class name) and an error status whose message is redacted and cut to 200 characters."""
    span.set_attribute("error.type", type(error).__name__)
    span.set_status(Status(StatusCode.ERROR, redact_text(str(error))[:200]))
