"""The circuit breaker of a chain tier: one state machine whose state lives in a :class:`~guardrail.store.Store`.

Per vendor+model: the breaker opens after ``failures`` consecutive failures; while open, no calls at all; after
``reset_after`` seconds it lets exactly one probe through (half-open); a success closes it, a failure opens it
again. The state is one small JSON record (``count``, ``opened_at``, ``probe_at``) and every change is a
compare-and-set on it, so the same machine serves one process (the default: a private
:class:`~guardrail.store.MemoryStore`) and many (a SQLite or Redis store: one process opens it for all, and
across all of them only one half-open probe goes out).

The transitions are pure functions of the record and the time (:func:`_allowed`, :func:`_released`,
:func:`_recorded`); :class:`CircuitBreaker` only reads, applies one and writes it back.

Where the store is private, time is :func:`time.monotonic` (wall-clock jumps do not move it) and a claimed probe
is held until it is released or recorded (the chain always does one of them). Where the store is shared, time is
:func:`time.time` (every process reads the same clock) and a claimed probe lapses after ``reset_after``, so a
process that died holding it does not keep the breaker shut.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar

from guardrail.errors import ConfigError
from guardrail.store.base import Store
from guardrail.store.memory import MemoryStore

__all__ = ["CircuitBreaker", "SharedCircuitBreaker"]

R = TypeVar("R")
Record = dict[str, Any]

#: The record of a closed breaker (also what a missing record means).
CLOSED: Final[Record] = {"count": 0, "opened_at": None, "probe_at": None}
#: Compare-and-set attempts per operation before giving up (other processes keep changing the record).
CAS_TRIES: Final = 50


def _name(record: Record, now: float, reset_after: float) -> str:
    if record["opened_at"] is None:
        return "closed"
    return "half_open" if now - record["opened_at"] >= reset_after else "open"


def _allowed(record: Record, now: float, reset_after: float, lease: float | None) -> tuple[Record, bool]:
    """Whether a call may go out, and the record after it (the half-open probe claimed when it is due)."""
    opened, probe = record["opened_at"], record["probe_at"]
    if opened is None:
        return record, True
    probing = probe is not None and (lease is None or now - probe < lease)
    if now - opened < reset_after or probing:
        return record, False
    return {**record, "probe_at": now}, True


def _released(record: Record) -> Record:
    """The record after an allowed call that never reached the vendor: a claimed probe is free again."""
    return record if record["probe_at"] is None else {**record, "probe_at": None}


def _recorded(record: Record, ok: bool, now: float, failures: int) -> Record:
    """The record after an allowed call's outcome: a success closes; a failure counts and (re)opens at the limit."""
    if ok:
        return dict(CLOSED)
    count = record["count"] + 1
    reopen = record["opened_at"] is not None or count >= failures
    return {"count": count, "opened_at": now if reopen else None, "probe_at": None}


class CircuitBreaker:
    """A tier's breaker (see the module docstring). ``store`` and ``key`` share it; without a store it is private.

    Thread-safe: operations of one breaker object hold its lock, and each is a compare-and-set on the store, which
    is atomic across processes; asyncio code uses it from the event loop thread the same way.
    """

    def __init__(self, failures: int = 5, reset_after: float = 30.0, *, store: Store | None = None,
                 key: str = "default", ttl: float = 86400.0) -> None:
        if failures < 1 or reset_after <= 0:
            raise ConfigError("failures must be >= 1 and reset_after > 0")
        self.failures = failures
        self.reset_after = reset_after
        self.shared = store is not None
        self.store: Store = store if store is not None else MemoryStore()
        self.key = f"breaker:{key}"
        self.ttl = ttl
        self._clock: Callable[[], float] = time.time if self.shared else time.monotonic
        self._lease = reset_after if self.shared else None
        self._lock = threading.Lock()

    def _read(self) -> tuple[str | None, Record]:
        raw = self.store.get(self.key)
        return raw, (json.loads(raw) if raw else dict(CLOSED))

    def _change(self, step: Callable[[Record, float], tuple[Record, R]], gave_up: R) -> R:
        """Apply one transition as a compare-and-set; ``gave_up`` if the record kept changing underneath."""
        with self._lock:
            for _ in range(CAS_TRIES):
                raw, record = self._read()
                new, answer = step(record, self._clock())
                if new == record:
                    return answer
                text = json.dumps(new, sort_keys=True)
                written = (self.store.put_if_absent(self.key, text, self.ttl) if raw is None
                           else self.store.compare_and_set(self.key, raw, text, self.ttl))
                if written:
                    return answer
        return gave_up

    @property
    def state(self) -> str:
        """``closed``, ``open`` or ``half_open``."""
        with self._lock:
            return _name(self._read()[1], self._clock(), self.reset_after)

    def allow(self) -> bool:
        """Whether a call may go out now (claims the single half-open probe when it is due)."""
        return self._change(lambda record, now: _allowed(record, now, self.reset_after, self._lease), False)

    def release(self) -> None:
        """Give back an allowed call that never reached the vendor (no success, no failure; frees a claimed probe)."""
        self._change(lambda record, now: (_released(record), None), None)

    def record(self, ok: bool) -> None:
        """Report the outcome of an allowed call."""
        self._change(lambda record, now: (_recorded(record, ok, now, self.failures), None), None)


class SharedCircuitBreaker(CircuitBreaker):
    """A :class:`CircuitBreaker` over ``store`` under ``key``, with the store and key given first (the same
    machine as ``CircuitBreaker(store=store, key=key)``)."""

    def __init__(self, store: Store, key: str, failures: int = 5, reset_after: float = 30.0,
                 ttl: float = 86400.0) -> None:
        super().__init__(failures, reset_after, store=store, key=key, ttl=ttl)
