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

Backend errors never surface as the driver's own exceptions: a store that cannot be reached or written (a lost or
stalled Redis connection, a SQLite file locked past the busy timeout, read-only or deleted) raises
:class:`~guardrail.errors.StoreUnavailable`, any other driver failure :class:`~guardrail.errors.StoreError`, with
the driver's exception as ``__cause__`` (:func:`translated`). No operation is retried or swallowed here, so a
caller never mistakes "unknown" for "absent". Argument mistakes (a bad key or ttl) stay ``TypeError``/``ValueError``.

Counters come in two kinds: :meth:`Store.add_within_limit` (one float counter, kept for compatibility) and
:meth:`Store.add_within_limits`, several exact :class:`~decimal.Decimal` counters updated all or nothing (what
rate limits, quotas and spend budgets use, so a call refused by one limit consumes none of the others).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation
from typing import Protocol, runtime_checkable

from guardrail.errors import ConfigError, StoreError, StoreUnavailable, UsageError

__all__ = [
    "MAX_KEY_BYTES",
    "Counter",
    "Store",
    "add_exact",
    "check_counter",
    "check_counters",
    "check_key",
    "check_ttl",
    "format_number",
    "parse_decimal",
    "parse_number",
    "translated",
]

@dataclass(frozen=True, slots=True)
class Counter:
    """One fixed-window counter of :meth:`Store.add_within_limits`: add ``amount`` to ``key`` if the window's total
    stays ``<= limit``; the window starts at the first accepted add and lasts ``window`` seconds."""

    key: str
    amount: Decimal
    limit: Decimal
    window: float


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

    def add_within_limits(self, counters: Sequence[Counter]) -> int | None:
        """Add every counter's amount if *every* total stays within its limit, else add nothing.

        Returns ``None`` when added, else the index of the first counter whose total would pass its limit.

        Totals are exact decimals (stored as their text), so ``0.1`` three times is exactly ``0.3``. Distinct keys
        only. On Redis the keys must hash to one slot on a cluster (give them one ``{hash tag}``).
        """
        ...

    def close(self) -> None:
        """Release connections; the store must not be used afterwards."""
        ...


def check_key(key: str) -> None:
    """Refuse a key that is not a ``str`` or longer than :data:`MAX_KEY_BYTES` bytes of UTF-8."""
    if not isinstance(key, str):
        raise UsageError(f"store keys are str, got {type(key).__name__}")
    size = len(key.encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise ConfigError(f"store key is {size} bytes; the limit is {MAX_KEY_BYTES}")


def check_ttl(ttl: float, name: str = "ttl") -> None:
    """Refuse a time to live (or window) that is not a finite number of seconds > 0."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl) or ttl <= 0:
        raise ConfigError(f"{name} must be a finite number of seconds > 0, got {ttl!r}")


def check_counter(amount: float, limit: float) -> None:
    """Refuse a counter amount that is negative or not finite, or a limit that is not finite."""
    if isinstance(amount, bool) or not isinstance(amount, int | float) or not math.isfinite(amount) or amount < 0:
        raise ConfigError(f"amount must be a finite number >= 0, got {amount!r}")
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not math.isfinite(limit):
        raise ConfigError(f"limit must be a finite number, got {limit!r}")


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
        raise ConfigError(f"store key {key!r} holds a value that is not a counter") from None
    if not math.isfinite(value):
        raise ConfigError(f"store key {key!r} holds a value that is not a counter")
    return value


def check_counters(counters: Sequence[Counter]) -> None:
    """Refuse counters with a bad key or window, a non-finite or negative amount, a non-finite limit, or repeats."""
    seen: set[str] = set()
    for counter in counters:
        check_key(counter.key)
        check_ttl(counter.window, "window")
        if not isinstance(counter.amount, Decimal) or not counter.amount.is_finite() or counter.amount < 0:
            raise ConfigError(f"amount must be a finite Decimal >= 0, got {counter.amount!r}")
        if not isinstance(counter.limit, Decimal) or not counter.limit.is_finite():
            raise ConfigError(f"limit must be a finite Decimal, got {counter.limit!r}")
        if counter.key in seen:
            raise ConfigError(f"counter key {counter.key!r} appears twice")
        seen.add(counter.key)


_EXACT = Context(prec=400)


def add_exact(a: Decimal, b: Decimal) -> Decimal:
    """``a + b`` without rounding for any amount a budget can hold (400 significant digits)."""
    return _EXACT.add(a, b)


def parse_decimal(key: str, text: str) -> Decimal:
    """Read an exact counter's stored text; a key holding something else is a :class:`ValueError`."""
    try:
        value = Decimal(text)
    except (InvalidOperation, ValueError):
        raise ConfigError(f"store key {key!r} holds a value that is not a counter") from None
    if not value.is_finite():
        raise ConfigError(f"store key {key!r} holds a value that is not a counter")
    return value


@contextmanager
def translated(operation: str, unavailable: tuple[type[BaseException], ...],
               failed: tuple[type[BaseException], ...]) -> Iterator[None]:
    """Turn a driver's exceptions into typed ones: ``unavailable`` kinds become :class:`StoreUnavailable`, other
    ``failed`` kinds :class:`StoreError`; the driver's exception stays as ``__cause__``."""
    try:
        yield
    except StoreError:
        raise
    except unavailable as error:
        raise StoreUnavailable(f"store unavailable during {operation}: {type(error).__name__}: {error}",
                               operation=operation) from error
    except failed as error:
        raise StoreError(f"store failed during {operation}: {type(error).__name__}: {error}",
                         operation=operation) from error
