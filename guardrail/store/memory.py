"""The default store: a dict behind one lock, for a single process."""

from __future__ import annotations

import threading
import time

from guardrail.store.base import check_counter, check_key, check_ttl, format_number, parse_number

__all__ = ["MemoryStore"]

#: Expired entries are swept once the dict has grown to twice its size after the previous sweep (and at least this).
_MIN_SWEEP = 1024


class MemoryStore:
    """A :class:`~guardrail.store.Store` in process memory: a dict and one :class:`threading.Lock`.

    Every operation holds the lock for its whole read-decide-write, so operations are atomic across threads (and
    across asyncio tasks that call them from threads). Nothing is shared with other processes: use
    :class:`~guardrail.store.SQLiteStore` or :class:`~guardrail.store.RedisStore` when several processes must agree.
    Expiry uses :func:`time.monotonic`, so wall-clock jumps do not move it. Expired entries are dropped when next
    touched and swept in bulk whenever the dict doubles, so memory stays bounded by the live keys (amortised O(1)).
    """

    def __init__(self) -> None:
        self._data: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._next_sweep = _MIN_SWEEP

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
            self._data = {k: v for k, v in self._data.items() if v[1] > now}
            self._next_sweep = max(_MIN_SWEEP, 2 * len(self._data))

    def get(self, key: str) -> str | None:
        check_key(key)
        with self._lock:
            return self._live(key, time.monotonic())

    def put_if_absent(self, key: str, value: str, ttl: float) -> bool:
        check_key(key)
        check_ttl(ttl)
        with self._lock:
            now = time.monotonic()
            if self._live(key, now) is not None:
                return False
            self._set(key, value, now + ttl, now)
            return True

    def compare_and_set(self, key: str, expected: str, value: str, ttl: float) -> bool:
        check_key(key)
        check_ttl(ttl)
        with self._lock:
            now = time.monotonic()
            if self._live(key, now) != expected:
                return False
            self._set(key, value, now + ttl, now)
            return True

    def delete_if(self, key: str, expected: str) -> bool:
        check_key(key)
        with self._lock:
            if self._live(key, time.monotonic()) != expected:
                return False
            del self._data[key]
            return True

    def add_within_limit(self, key: str, amount: float, limit: float, window: float) -> tuple[bool, float]:
        check_key(key)
        check_ttl(window, "window")
        check_counter(amount, limit)
        with self._lock:
            now = time.monotonic()
            text = self._live(key, now)
            current = 0.0 if text is None else parse_number(key, text)
            total = current + amount
            if total > limit:
                return False, current
            if amount > 0:
                expires_at = now + window if text is None else self._data[key][1]
                self._set(key, format_number(total), expires_at, now)
            return True, total

    def close(self) -> None:
        """Drop every entry (there is nothing else to release)."""
        with self._lock:
            self._data.clear()
