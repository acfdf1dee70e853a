"""Observability:
OpenTelemetry spans (:mod:`.telemetry`), structured log events (:mod:`.logs`) and redaction of secrets (:mod:`.redact`).

Only the OpenTelemetry *API* is used; the SDK and exporters belong to the application.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.observe.logs import EventLogger, get_logger

_NAMES: dict[str, str] = {
    "EventLogger": "guardrail.observe.logs",
    "get_logger": "guardrail.observe.logs",
}

__all__ = [
    "EventLogger",
    "get_logger",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
