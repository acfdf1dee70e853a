"""Telemetry for vendor calls: one OpenTelemetry span per call and an event per attempt (:mod:`guardrail.observe.logs`).

The span follows the OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.provider.name`` (``azure.ai.openai`` for an Azure OpenAI client), ``gen_ai.request.model``,
``gen_ai.response.model``, ``gen_ai.response.id`` (the last answer's), ``server.address``/``server.port``,
``gen_ai.usage.input_tokens``/``output_tokens`` with ``gen_ai.usage.cache_read.input_tokens``,
``gen_ai.usage.cache_creation.input_tokens`` and ``gen_ai.usage.reasoning.output_tokens``,
``gen_ai.response.finish_reasons``, ``error.type``) plus guardrail's own ``guardrail.*`` attributes (mode,
attempts, fixes, vendor calls, schema hash, ``guardrail.cost.usd`` when the ``cost`` extra prices the model).
Message content is not recorded unless ``Settings.capture_content`` is set; then each attempt adds one
``gen_ai.client.inference.operation.details`` event (:mod:`guardrail.observe.content`) whose messages pass
through :func:`guardrail.observe.redact.redact` first (as do error messages on the span). Without an
OpenTelemetry SDK configured, spans are no-ops and the trace id is a random one, so every error still carries
an id to search logs by.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from guardrail.observe import content, cost
from guardrail.observe.logs import get_logger
from guardrail.observe.redact import redact_text
from guardrail.observe.target import Target
from guardrail.outcome import Outcome

log = get_logger("guardrail")
_tracer = trace.get_tracer("guardrail")


def tracing() -> bool:
    """Whether the application configured a tracer provider. Without one (the API's default proxy, or the
    explicit no-op provider) every span is a no-op, so a call opens none and only reads the current trace id."""
    return not isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def random_trace_id() -> str:
    """A trace id (32 hex digits) for a call no tracing gave one, so its logs and errors can still be joined."""
    return f"{random.getrandbits(128):032x}"


def current_trace_id() -> str:
    """The current context's trace id (a propagated parent's, or the caller's span's), else a random one."""
    current = trace.get_current_span().get_span_context()
    return format(current.trace_id, "032x") if current.is_valid else random_trace_id()


def cache_hit_span(target_provider: str, model: str, mode: str, schema_hash: str) -> str:
    """Record a call answered from the response cache: a ``chat MODEL`` span (``guardrail.cached`` true,
    ``guardrail.vendor_calls`` 0, nothing sent) when tracing is on, and the ``guardrail.call.cached`` event.
    Returns the call's trace id, as :func:`call_span` gives it."""
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


def call_span(target: Target, model: str, *, temperature: float | None = None,
              max_tokens: int | None = None) -> AbstractContextManager[tuple[Span, str]]:
    """The call's span as a context manager; entering yields it and the trace id (the span's, or a random one
    when tracing is off).

    ``temperature`` and ``max_tokens`` are what the caller's request set (the endpoint reads them). Without a
    tracer provider no span is opened (it would be a no-op): the span given is the invalid one, and the trace
    id the current context's when it has one (a propagated parent), else a random one."""
    if not tracing():
        return _Untraced(target.provider, model)
    return _traced(target, model, temperature, max_tokens)


class _Untraced:
    """:func:`call_span` without tracing: no span, only the trace id and the start event."""

    __slots__ = ("model", "provider")

    def __init__(self, provider: str, model: str) -> None:
        self.provider, self.model = provider, model

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


def finish_span(span: Span, outcome: Outcome, error: BaseException | None, *, capture_content: bool,
                requests: Sequence[Mapping[str, Any]] = ()) -> None:
    """Put the outcome on the span and log the call's end; ``requests`` are the SDK keywords each attempt
    sent (for content capture)."""
    if span.is_recording():
        _describe(span, outcome, error, capture_content, requests)
    log.info("guardrail.call.end", trace_id=outcome.trace_id, provider=outcome.provider, model=outcome.model,
             mode=outcome.mode, attempts=len(outcome.attempts), vendor_calls=outcome.vendor_calls,
             input_tokens=outcome.usage.input_tokens, output_tokens=outcome.usage.output_tokens,
             seconds=round(outcome.seconds, 4), error=type(error).__name__ if error else None)


def _describe(span: Span, outcome: Outcome, error: BaseException | None, capture_content: bool,
              requests: Sequence[Mapping[str, Any]]) -> None:
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
    if cost.available():  # priced only when someone records it
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


@contextmanager
def tier_span(name: str, kind: str) -> Iterator[Span]:
    """A span around one chain tier's run (``guardrail.chain.tier NAME``): a vendor tier's call span is its child,
    and a local, rules or default tier, which makes no vendor call, still shows up in the trace with its time.
    A tier that raised gets ``error.type`` and an error status (the message redacted)."""
    attributes = {"guardrail.chain.tier": name, "guardrail.chain.kind": kind}
    with _tracer.start_as_current_span(f"guardrail.chain.tier {name}", kind=SpanKind.INTERNAL, attributes=attributes,
                                       record_exception=False, set_status_on_exception=False) as span:
        try:
            yield span
        except Exception as error:
            span.set_attribute("error.type", type(error).__name__)
            span.set_status(Status(StatusCode.ERROR, redact_text(str(error))[:200]))
            raise
