"""A store on a Redis server, shared by every process and host that reaches it.

Needs the ``redis`` package (redis-py), imported only when a :class:`RedisStore` is created, so the rest of
guardrail works without it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from guardrail.store.base import check_counter, check_key, check_ttl

if TYPE_CHECKING:
    import redis as redis_py

__all__ = ["RedisStore"]

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
    """

    def __init__(self, client: str | redis_py.Redis, *, prefix: str = "guardrail:") -> None:
        try:
            import redis as redis_py
        except ImportError as error:  # pragma: no cover - depends on the environment
            raise ImportError("RedisStore needs the redis package: pip install redis") from error
        if isinstance(client, str):
            self._client: redis_py.Redis = redis_py.Redis.from_url(client)
            self._owned = True
        else:
            self._client = client
            self._owned = False
        self.prefix = prefix
        self._cas = self._client.register_script(_COMPARE_AND_SET)
        self._delete_if = self._client.register_script(_DELETE_IF)
        self._add = self._client.register_script(_ADD_WITHIN_LIMIT)
        self._response_error: type[Exception] = redis_py.ResponseError

    def _key(self, key: str) -> str:
        check_key(key)
        return self.prefix + key

    def get(self, key: str) -> str | None:
        value = self._client.get(self._key(key))
        return None if value is None else _text(value)

    def put_if_absent(self, key: str, value: str, ttl: float) -> bool:
        full = self._key(key)
        check_ttl(ttl)
        return bool(self._client.set(full, value, nx=True, px=_ms(ttl)))

    def compare_and_set(self, key: str, expected: str, value: str, ttl: float) -> bool:
        full = self._key(key)
        check_ttl(ttl)
        return bool(self._cas(keys=[full], args=[expected, value, _ms(ttl)]))

    def delete_if(self, key: str, expected: str) -> bool:
        return bool(self._delete_if(keys=[self._key(key)], args=[expected]))

    def add_within_limit(self, key: str, amount: float, limit: float, window: float) -> tuple[bool, float]:
        full = self._key(key)
        check_ttl(window, "window")
        check_counter(amount, limit)
        # repr() of a float reads back exactly in Lua's tonumber (strtod).
        args: list[str | int] = [repr(float(amount)), repr(float(limit)), _ms(window)]
        try:
            accepted, total = self._add(keys=[full], args=args)
        except self._response_error as error:
            if "not a counter" in str(error):
                raise ValueError(f"store key {key!r} holds a value that is not a counter") from None
            raise
        return bool(accepted), float(_text(total))

    def close(self) -> None:
        """Close the client if this store created it (from a URL); a client passed in is left to its owner."""
        if self._owned:
            self._client.close()
