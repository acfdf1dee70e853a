"""The default store: a dict behind one lock, for a single process."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from decimal import Decimal

from guardrail.store.base import (
    Counter,
    add_exact,
    check_counter,
    check_counters,
    check_key,
    check_ttl,
    format_number,
    parse_decimal,
    parse_number,
)

__all__ = ["MemoryStore"]

#: Expired entries are swept once the dict has grown to twice its size after the previous sweep (and at least this).
_MIN_SWEEP = 1024


class MemoryStore:
    """A :class:`~guardrail.store.Store` in process memory: a dict and one :class:`threading.Lock`.

    Every operation holds the lock for its whole read-decide-write, so operations are atomic across threads (and
    across asyncio tasks that call them from threads). Nothing is shared with other processes: use
    :class:`~guardrail.store.SQLiteStore` or :class:`~guardrail.store.RedisStore` when several processes must agree.
    Expiry uses ``clock`` (:func:`time.monotonic` by default), so wall-clock jumps do not move it. Expired entries
    are dropped when next touched, and swept in bulk by any operation once ``sweep_every`` seconds have passed since
    the last sweep or the dict has doubled: memory stays bounded by the live keys, and an idle key does not linger
    past its expiry by more than ``sweep_every`` (plus the time to the next operation).
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, sweep_every: float = 1.0) -> None:
        check_ttl(sweep_every, "sweep_every")
        self._data: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._sweep_every = sweep_every
        self._next_sweep = _MIN_SWEEP
        self._next_sweep_at = clock() + sweep_every

    def size(self) -> int:
        """How many entries are held, live or not yet swept (not ``__len__``: an empty store must stay truthy)."""
        return len(self._data)

    def _now(self) -> float:
        """The clock, sweeping expired entries first when a sweep is due. Call with the lock held."""
        now = self._clock()
        if now >= self._next_sweep_at:
            self._sweep(now)
        return now

    def _sweep(self, now: float) -> None:
        self._data = {k: v for k, v in self._data.items() if v[1] > now}
        self._next_sweep = max(_MIN_SWEEP, 2 * len(self._data))
        self._next_sweep_at = now + self._sweep_every

    def _live(self, key: str, now: float) -> str | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        if entry[1] <= now:
            del self._data[key]
            return None
        return entry[0]

    def _set(self, key: str, value: str, expires_at: float, now: float) -> None:
        self._data[key] = (value, expires_at)
        if len(self._data) >= self._next_sweep:
            self._sweep(now)

    def get(self, key: str) -> str | None:
        check_key(key)
        with self._lock:
            return self._live(key, self._now())

    def put_if_absent(self, key: str, value: str, ttl: float) -> bool:
        check_key(key)
        check_ttl(ttl)
        with self._lock:
            now = self._now()
            if self._live(key, now) is not None:
                return False
            self._set(key, value, now + ttl, now)
            return True

    def compare_and_set(self, key: str, expected: str, value: str, ttl: float) -> bool:
        check_key(key)
        check_ttl(ttl)
        with self._lock:
            now = self._now()
            if self._live(key, now) != expected:
                return False
            self._set(key, value, now + ttl, now)
            return True

    def delete_if(self, key: str, expected: str) -> bool:
        check_key(key)
        with self._lock:
            if self._live(key, self._now()) != expected:
                return False
            del self._data[key]
            return True

    def add_within_limit(self, key: str, amount: float, limit: float, window: float) -> tuple[bool, float]:
        check_key(key)
        check_ttl(window, "window")
        check_counter(amount, limit)
        with self._lock:
            now = self._now()
            text = self._live(key, now)
            current = 0.0 if text is None else parse_number(key, text)
            total = current + amount
            if total > limit:
                return False, current
            if amount > 0:
                expires_at = now + window if text is None else self._data[key][1]
                self._set(key, format_number(total), expires_at, now)
            return True, total

    def add_within_limits(self, counters: Sequence[Counter]) -> int | None:
        check_counters(counters)
        with self._lock:
            now = self._now()
            updates = []
            for index, counter in enumerate(counters):
                text = self._live(counter.key, now)
                current = Decimal(0) if text is None else parse_decimal(counter.key, text)
                total = add_exact(current, counter.amount)
                if total > counter.limit:
                    return index
                expires_at = now + counter.window if text is None else self._data[counter.key][1]
                updates.append((counter.key, str(total), expires_at, counter.amount > 0))
            for key, text, expires_at, changed in updates:
                if changed:
                    self._set(key, text, expires_at, now)
            return None

    def close(self) -> None:
        """Drop every entry (there is nothing else to release)."""
        with self._lock:
            self._data.clear()
