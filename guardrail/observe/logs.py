"""guardrail's event logger: structlog when the application configured it, stdlib ``logging`` otherwise.

A library should not print. structlog's out-of-the-box configuration writes every event to stdout, so until
the application calls ``structlog.configure(...)`` guardrail's events (``guardrail.call.start``,
``guardrail.attempt``, ``guardrail.audit`` ...) go to the stdlib loggers ``guardrail`` and ``guardrail.audit``
instead, at INFO, as ``event key=value ...`` with the fields also in ``record.guardrail``; they are silent
unless the application enables those loggers (``logging.basicConfig(level=logging.INFO)``). Once structlog is
configured, events go through the application's structlog pipeline with their fields as keywords. The choice
is made per event, so configuring structlog after importing guardrail works.

structlog is never imported here: an application that configured it has imported it already, so it is looked
up in ``sys.modules`` per event. That keeps structlog (and the rich tracebacks it loads) off ``import guardrail``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

__all__ = ["EventLogger", "get_logger"]


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
