"""Observability: log events and OpenTelemetry spans (:mod:`.telemetry`), metrics (:mod:`.metrics`), prices
(:mod:`.cost`), content capture (:mod:`.content`) and redaction of secrets (:mod:`.redact`).

Only the OpenTelemetry *API* is used; the SDK and exporters belong to the application.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.observe.telemetry import EventLogger, get_logger

_NAMES: dict[str, str] = {
    "EventLogger": "guardrail.observe.telemetry",
    "get_logger": "guardrail.observe.telemetry",
}

__all__ = [
    "EventLogger",
    "get_logger",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
