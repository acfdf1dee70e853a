"""What a canary reports: a span per routed call, a span per decision, two counters and log events.

Metrics (OpenTelemetry API; no-ops until the application configures a meter provider):

==============================  ==========  =========================================================================
``guardrail.canary.calls``      {call}      routed calls (``guardrail.canary.name``, ``.arm``, ``.outcome``:
                                            ``valid`` or the failure kind, ``.fallback``: a re-run on control)
``guardrail.canary.decisions``  {decision}  decisions made (``guardrail.canary.name``, ``guardrail.canary.decision``:
                                            ``rollback`` or ``promote``): a rollback alert counts these
==============================  ==========  =========================================================================

Spans: ``guardrail.canary NAME`` (INTERNAL) around each routed call, with the arm, the state it was routed under
and the outcome; the arm's own call span (a vendor request, a chain tier) is its child. A decision adds a child span
``guardrail.canary.decision NAME`` carrying the counts and bounds it was made on. Events (:mod:`guardrail.observe.
telemetry`'s logger, so structlog once the application configures it): ``guardrail.canary.call`` (debug) per call,
``guardrail.canary.decision`` per decision (a warning for a rollback), ``guardrail.canary.store_error`` when the
store could not be read or written (the call itself is not affected).
"""

from __future__ import annotations

from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, SpanKind

from guardrail._version import __version__
from guardrail.observe.telemetry import get_logger, internal_span, mark_failed

__all__ = ["call_span", "counted", "decided", "log", "store_failed"]

log = get_logger("guardrail")
_tracer = trace.get_tracer("guardrail")
_meter = metrics.get_meter("guardrail", __version__)
_calls = _meter.create_counter("guardrail.canary.calls", unit="{call}",
                               description="Calls a canary routed, by arm and outcome.")
_decisions = _meter.create_counter("guardrail.canary.decisions", unit="{decision}",
                                   description="Canary decisions (rollbacks and promotions).")


def call_span(name: str, arm: str, state: str) -> Span:
    """A started (not yet current) span for one routed call; the caller makes it current and ends it."""
    attributes = {"guardrail.canary.name": name, "guardrail.canary.arm": arm, "guardrail.canary.state": state}
    return _tracer.start_span(f"guardrail.canary {name}", kind=SpanKind.INTERNAL, attributes=attributes)


def counted(span: Span, name: str, arm: str, outcome: str, error: BaseException | None, *,
            fallback: bool = False) -> None:
    """One routed call's outcome on its span, in the counter and in the log (``fallback``: the re-run on control
    after the candidate failed, recorded beside the candidate's outcome)."""
    span.set_attribute("guardrail.canary.fallback.outcome" if fallback else "guardrail.canary.outcome", outcome)
    if error is not None:
        mark_failed(span, error)
    _calls.add(1, {"guardrail.canary.name": name, "guardrail.canary.arm": arm, "guardrail.canary.outcome": outcome,
                   "guardrail.canary.fallback": fallback})
    log.debug("guardrail.canary.call", canary=name, arm=arm, outcome=outcome, fallback=fallback)


def decided(name: str, record: dict[str, Any]) -> None:
    """A decision made (by this process): its span, counter and log event."""
    attributes = {"guardrail.canary.name": name, "guardrail.canary.decision": record["decision"],
                  "guardrail.canary.reason": record["reason"]}
    for arm in ("control", "candidate"):
        attributes[f"guardrail.canary.{arm}.calls"] = record[arm]["calls"]
        attributes[f"guardrail.canary.{arm}.failures"] = record[arm]["failures"]
    for bound in ("lower", "upper"):
        if record.get(bound) is not None:
            attributes[f"guardrail.canary.difference.{bound}"] = record[bound]
    with internal_span(f"guardrail.canary.decision {name}", attributes):
        pass
    _decisions.add(1, {"guardrail.canary.name": name, "guardrail.canary.decision": record["decision"]})
    emit = log.warning if record["decision"] == "rollback" else log.info
    emit("guardrail.canary.decision", canary=name, **{key: value for key, value in record.items() if key != "name"})


def store_failed(name: str, operation: str, error: BaseException) -> None:
    """The store could not be read or written; the call goes on (routed to control when the state is unknown)."""
    log.warning("guardrail.canary.store_error", canary=name, operation=operation, error=type(error).__name__,
                message=str(error)[:200])
