"""A store on a Redis server, shared by every process and host that reaches it.

Needs the ``redis`` package (redis-py), imported only when a :class:`RedisStore` is created, so the rest of
guardrail works without it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from guardrail.store.base import (
    Counter,
    add_exact,
    check_counter,
    check_counters,
    check_key,
    check_ttl,
    parse_decimal,
    translated,
)

if TYPE_CHECKING:
    import redis as redis_py

from guardrail._optional import require
from guardrail.errors import ConfigError

__all__ = ["RedisStore", "VolatileRedisWarning"]


class VolatileRedisWarning(UserWarning):
    """The Redis server keeps nothing on disk (no AOF, no RDB snapshots): a restart forgets every idempotency
    record, so a retry after a restart can run a side effect a second time. Use ``appendonly yes``."""

# Lua compares the stored string with ARGV byte for byte; a missing key reads as false, never equal to a string.
_COMPARE_AND_SET = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""

_DELETE_IF = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

# Numbers go back to the client as strings: Redis truncates Lua numbers to integers, and Lua's tostring keeps only
# 14 digits. fmt() is guardrail.store.base.format_number, so totals read the same as on the other backends.
_ADD_WITHIN_LIMIT = """
local function fmt(x)
  for p = 15, 16 do
    local s = string.format('%.' .. p .. 'g', x)
    if tonumber(s) == x then return s end
  end
  return string.format('%.17g', x)
end
local stored = redis.call('GET', KEYS[1])
local current = 0
if stored then
  current = tonumber(stored)
  if current == nil then return redis.error_reply('guardrail: not a counter') end
end
local amount = tonumber(ARGV[1])
local total = current + amount
if total > tonumber(ARGV[2]) then return {0, fmt(current)} end
if amount > 0 then
  if stored then
    redis.call('SET', KEYS[1], fmt(total), 'KEEPTTL')
  else
    redis.call('SET', KEYS[1], fmt(total), 'PX', ARGV[3])
  end
end
return {1, fmt(total)}
"""


def _ms(seconds: float) -> int:
    """Seconds to whole milliseconds, rounded up (never expire early) and at least 1."""
    return max(1, math.ceil(seconds * 1000))


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class RedisStore:
    """A :class:`~guardrail.store.Store` on Redis (>= 6.0): atomic across every client of the server.

    ``put_if_absent`` is ``SET NX PX``; ``compare_and_set``, ``delete_if`` and ``add_within_limit`` are Lua scripts
    (registered once, sent as ``EVALSHA``), which Redis runs without interleaving other commands. Each touches one
    key, so the store works on Redis Cluster too. Times to live are whole milliseconds (rounded up, at least 1 ms)
    on the server's clock.

    Args:
        client: a ``redis://`` / ``rediss://`` / ``unix://`` URL (the store creates the client and
            :meth:`close` closes it), or a ``redis.Redis`` you created (shared; :meth:`close` leaves it open).
            Either ``decode_responses`` setting works.
        prefix: prepended to every key, so several applications (or tests) can share one database.
        timeout: socket timeout (seconds) of a client created from a URL: a stalled server raises
            :class:`~guardrail.errors.StoreUnavailable` after this long instead of hanging the caller.
        check_persistence: ask the server at start-up whether it persists data and warn
            (:class:`VolatileRedisWarning`) if it does not; an unreachable server is not an error here.

    Driver failures are typed: connection and timeout errors raise :class:`~guardrail.errors.StoreUnavailable`,
    other server errors :class:`~guardrail.errors.StoreError`.
    """

    def __init__(self, client: str | redis_py.Redis, *, prefix: str = "guardrail:", timeout: float = 5.0,
                 check_persistence: bool = True) -> None:
        driver = require("redis", "redis", "guardrail.store.RedisStore")
        if isinstance(client, str):
            check_ttl(timeout, "timeout")
            self._client: redis_py.Redis = driver.Redis.from_url(
                client, socket_timeout=timeout, socket_connect_timeout=timeout)
            self._owned = True
        else:
            self._client = client
            self._owned = False
        self.prefix = prefix
        self._cas = self._client.register_script(_COMPARE_AND_SET)
        self._delete_if = self._client.register_script(_DELETE_IF)
        self._add = self._client.register_script(_ADD_WITHIN_LIMIT)
        self._response_error: type[Exception] = driver.ResponseError
        self._watch_error: type[Exception] = driver.WatchError
        self._unavailable: tuple[type[BaseException], ...] = (
            driver.ConnectionError, driver.TimeoutError, driver.BusyLoadingError, OSError)
        self._failed: tuple[type[BaseException], ...] = (driver.RedisError, UnicodeDecodeError)
        if check_persistence:
            self._warn_if_volatile()

    def _translated(self, operation: str) -> AbstractContextManager[None]:
        return translated(operation, self._unavailable, self._failed)

    def _warn_if_volatile(self) -> None:
        """Warn when the server reports neither AOF nor RDB snapshots (or say nothing if it cannot be asked)."""
        try:
            persistence = self._client.info("persistence")
            save = self._client.config_get("save").get("save", "")
        except Exception:  # unreachable, or CONFIG disabled (managed Redis): the check is best effort
            return
        save_text = save.decode() if isinstance(save, bytes) else str(save)
        if not int(persistence.get("aof_enabled", 0)) and not save_text.strip():
            warnings.warn("the Redis server keeps no data on disk (appendonly no, no save points): after a restart "
                          "idempotency records are gone and a retried call can run again; enable appendonly",
                          VolatileRedisWarning, stacklevel=3)

    def _key(self, key: str) -> str:
        check_key(key)
        return self.prefix + key

    def get(self, key: str) -> str | None:
        full = self._key(key)
        with self._translated("get"):
            value = self._client.get(full)
        return None if value is None else _text(value)

    def put_if_absent(self, key: str, value: str, ttl: float) -> bool:
        full = self._key(key)
        check_ttl(ttl)
        with self._translated("put_if_absent"):
            return bool(self._client.set(full, value, nx=True, px=_ms(ttl)))

    def compare_and_set(self, key: str, expected: str, value: str, ttl: float) -> bool:
        full = self._key(key)
        check_ttl(ttl)
        with self._translated("compare_and_set"):
            return bool(self._cas(keys=[full], args=[expected, value, _ms(ttl)]))

    def delete_if(self, key: str, expected: str) -> bool:
        full = self._key(key)
        with self._translated("delete_if"):
            return bool(self._delete_if(keys=[full], args=[expected]))

    def add_within_limit(self, key: str, amount: float, limit: float, window: float) -> tuple[bool, float]:
        full = self._key(key)
        check_ttl(window, "window")
        check_counter(amount, limit)
        # repr() of a float reads back exactly in Lua's tonumber (strtod).
        args: list[str | int] = [repr(float(amount)), repr(float(limit)), _ms(window)]
        with self._translated("add_within_limit"):
            try:
                accepted, total = self._add(keys=[full], args=args)
            except self._response_error as error:
                if "not a counter" in str(error):
                    raise ConfigError(f"store key {key!r} holds a value that is not a counter") from None
                raise
        return bool(accepted), float(_text(total))

    def add_within_limits(self, counters: Sequence[Counter]) -> int | None:
        """Optimistic transaction: ``WATCH`` the keys, read them, decide in exact decimals, ``MULTI``/``EXEC`` the
        new totals; a concurrent change to any watched key aborts ``EXEC`` and the whole decision is retried."""
        check_counters(counters)
        keys = [self._key(counter.key) for counter in counters]
        with self._translated("add_within_limits"), self._client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(*keys)  # type: ignore[no-untyped-call]
                    updates = []
                    for index, (counter, full) in enumerate(zip(counters, keys, strict=True)):
                        stored = pipe.get(full)
                        current = Decimal(0) if stored is None else parse_decimal(counter.key, _text(stored))
                        total = add_exact(current, counter.amount)
                        if total > counter.limit:
                            pipe.unwatch()
                            return index
                        if counter.amount > 0:
                            updates.append((full, str(total), stored is None, counter.window))
                    pipe.multi()
                    for full, text, fresh, window in updates:
                        if fresh:
                            pipe.set(full, text, px=_ms(window))
                        else:
                            pipe.set(full, text, keepttl=True)
                    pipe.execute()
                    return None
                except self._watch_error:
                    continue

    def close(self) -> None:
        """Close the client if this store created it (from a URL); a client passed in is left to its owner."""
        if self._owned:
            with self._translated("close"):
                self._client.close()
