"""Telemetry for vendor calls: one OpenTelemetry span per call and an event per attempt (:mod:`guardrail.observe.logs`).

The span follows the OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``/``output_tokens``,
``gen_ai.response.finish_reasons``, ``error.type``) plus guardrail's own ``guardrail.*`` attributes (mode,
attempts, fixes, vendor calls, schema hash). Message content is not recorded unless
``Settings.capture_content`` is set, and then only after :func:`guardrail.observe.redact.redact_text` (as are error
messages on the span). Without an OpenTelemetry SDK configured, spans are no-ops and the
trace id is a random one, so every error still carries an id to search logs by.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from guardrail.observe.logs import get_logger
from guardrail.observe.redact import redact_text
from guardrail.outcome import Outcome

log = get_logger("guardrail")
_tracer = trace.get_tracer("guardrail")


@contextmanager
def call_span(provider: str, model: str, request: dict[str, Any]) -> Iterator[tuple[Span, str]]:
    """Open the call's span; yields it and the trace id (the span's, or a random one when tracing is off)."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
                                  "gen_ai.request.model": model, "gen_ai.output.type": "json"}
    for key, name in (("temperature", "gen_ai.request.temperature"), ("max_tokens", "gen_ai.request.max_tokens"),
                      ("max_completion_tokens", "gen_ai.request.max_tokens"),
                      ("max_output_tokens", "gen_ai.request.max_tokens")):
        if isinstance(request.get(key), (int, float)):
            attributes[name] = request[key]
    with _tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes,
                                       record_exception=False, set_status_on_exception=False) as span:
        context = span.get_span_context()
        trace_id = format(context.trace_id, "032x") if context.is_valid else uuid.uuid4().hex
        log.info("guardrail.call.start", trace_id=trace_id, provider=provider, model=model)
        yield span, trace_id


def finish_span(span: Span, outcome: Outcome, error: BaseException | None, *, capture_content: bool) -> None:
    """Put the outcome on the span and log the call's end."""
    reasons = [a.finish_reason for a in outcome.attempts if a.finish_reason]
    last = outcome.attempts[-1] if outcome.attempts else None
    span.set_attributes({
        "gen_ai.usage.input_tokens": outcome.usage.input_tokens,
        "gen_ai.usage.output_tokens": outcome.usage.output_tokens,
        "gen_ai.response.finish_reasons": reasons,
        "guardrail.mode": outcome.mode,
        "guardrail.attempts": len(outcome.attempts),
        "guardrail.vendor_calls": outcome.vendor_calls,
        "guardrail.fixes": len(last.fixes) if last else 0,
        "guardrail.schema_hash": outcome.schema_hash,
    })
    if capture_content:
        for attempt in outcome.attempts:
            span.add_event("guardrail.output", {"guardrail.attempt": attempt.number,
                                                "content": redact_text(attempt.raw or "")})
    if error is not None:
        span.set_attribute("error.type", type(error).__name__)
        span.set_status(Status(StatusCode.ERROR, redact_text(str(error))[:200]))
    log.info("guardrail.call.end", trace_id=outcome.trace_id, provider=outcome.provider, model=outcome.model,
             mode=outcome.mode, attempts=len(outcome.attempts), vendor_calls=outcome.vendor_calls,
             input_tokens=outcome.usage.input_tokens, output_tokens=outcome.usage.output_tokens,
             seconds=round(outcome.seconds, 4), error=type(error).__name__ if error else None)
