"""The key-value protocol behind idempotent tool execution, quotas and approvals, and helpers every backend shares.

A :class:`Store` holds short string values under string keys, each with a time to live, and offers only
operations that are atomic on their own: a conditional insert, a compare-and-set, a conditional delete and a
fixed-window counter. Nothing needs a multi-operation transaction, which is what lets the same protocol sit on a
dict, a SQLite file and a Redis server.

Common rules (checked by every backend with the helpers below):

- keys are ``str`` of at most :data:`MAX_KEY_BYTES` bytes of UTF-8, values are ``str``;
- every ``ttl`` and ``window`` is in seconds and must be finite and ``> 0`` (:class:`ValueError` otherwise);
- a key whose time to live has passed behaves exactly as if it were absent, for every operation;
- counter amounts must be finite and ``>= 0`` and limits finite; counter totals are stored as the text of the
  float (:func:`format_number`), so :meth:`Store.get` on a counter key reads the same string on every backend.

Atomicity, backend by backend:

- :class:`~guardrail.store.MemoryStore`: one :class:`threading.Lock` around every operation; atomic across the
  threads of one process, nothing is shared with other processes. Expiry uses the monotonic clock.
- :class:`~guardrail.store.SQLiteStore`: every write is one ``BEGIN IMMEDIATE`` transaction (it takes the
  database's write lock before reading, so a read-decide-write cannot interleave with another writer), which makes
  each operation atomic across threads *and* across processes on the same host sharing the file. WAL mode keeps
  readers off the writers' backs; the busy timeout makes a contended writer wait instead of failing at once.
  Expiry uses the wall clock (``time.time``) because the file outlives the process: a clock jump moves expiry.
  Not for network file systems (SQLite's locking is unreliable there).
- :class:`~guardrail.store.RedisStore`: ``put_if_absent`` is ``SET NX PX``; the other conditional operations are
  Lua scripts, which Redis runs without interleaving any other command; atomic across every process and host that
  talks to the server. Each operation touches one key, so it also works on Redis Cluster. Expiry uses the
  server's clock, with millisecond resolution (at least 1 ms). Needs Redis >= 6.0 (``KEEPTTL``).

Backend errors (a locked SQLite file past the busy timeout, a lost Redis connection) propagate as the driver's
own exceptions; no operation is retried or swallowed here, so a caller never mistakes "unknown" for "absent".
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

__all__ = [
    "MAX_KEY_BYTES",
    "Store",
    "check_counter",
    "check_key",
    "check_ttl",
    "format_number",
    "parse_number",
]

#: Longest key accepted, in bytes of UTF-8 (Redis's own limit is far higher; this keeps records and indexes small).
MAX_KEY_BYTES = 512


@runtime_checkable
class Store(Protocol):
    """A small key-value store whose every operation is atomic on its own (see the module docstring)."""

    def get(self, key: str) -> str | None:
        """The live value under ``key``, or ``None`` if absent or expired."""
        ...

    def put_if_absent(self, key: str, value: str, ttl: float) -> bool:
        """Store ``value`` for ``ttl`` seconds only if ``key`` is absent (or expired); ``True`` if stored."""
        ...

    def compare_and_set(self, key: str, expected: str, value: str, ttl: float) -> bool:
        """Replace the value with ``value`` (new time to live ``ttl``) only if it currently equals ``expected``."""
        ...

    def delete_if(self, key: str, expected: str) -> bool:
        """Delete ``key`` only if its live value equals ``expected``; ``True`` if deleted."""
        ...

    def add_within_limit(self, key: str, amount: float, limit: float, window: float) -> tuple[bool, float]:
        """A fixed-window counter: add ``amount`` only if the window's total stays ``<= limit``.

        Returns ``(True, new_total)`` when added, ``(False, current_total)`` when not (nothing is added). The
        window starts at the first accepted add and the counter resets ``window`` seconds later. An ``amount`` of
        0 reads the total without starting a window.
        """
        ...

    def close(self) -> None:
        """Release connections; the store must not be used afterwards."""
        ...


def check_key(key: str) -> None:
    """Refuse a key that is not a ``str`` or longer than :data:`MAX_KEY_BYTES` bytes of UTF-8."""
    if not isinstance(key, str):
        raise TypeError(f"store keys are str, got {type(key).__name__}")
    size = len(key.encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise ValueError(f"store key is {size} bytes; the limit is {MAX_KEY_BYTES}")


def check_ttl(ttl: float, name: str = "ttl") -> None:
    """Refuse a time to live (or window) that is not a finite number of seconds > 0."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"{name} must be a finite number of seconds > 0, got {ttl!r}")


def check_counter(amount: float, limit: float) -> None:
    """Refuse a counter amount that is negative or not finite, or a limit that is not finite."""
    if isinstance(amount, bool) or not isinstance(amount, int | float) or not math.isfinite(amount) or amount < 0:
        raise ValueError(f"amount must be a finite number >= 0, got {amount!r}")
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not math.isfinite(limit):
        raise ValueError(f"limit must be a finite number, got {limit!r}")


def format_number(x: float) -> str:
    """The shortest of ``%.15g``/``%.16g``/``%.17g`` that reads back as exactly ``x``.

    The Redis backend computes totals in Lua and formats them the same way, so a counter's stored text is identical
    on every backend and no precision is lost between adds.
    """
    for precision in (15, 16):
        text = f"{x:.{precision}g}"
        if float(text) == x:
            return text
    return f"{x:.17g}"


def parse_number(key: str, text: str) -> float:
    """Read a counter's stored text; a key holding something else is a :class:`ValueError`, not a silent 0."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"store key {key!r} holds a value that is not a counter") from None
    if not math.isfinite(value):
        raise ValueError(f"store key {key!r} holds a value that is not a counter")
    return value
