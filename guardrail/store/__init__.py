"""Small atomic key-value stores (memory, SQLite, Redis) behind idempotent tool execution, quotas and approvals.

See :mod:`guardrail.store.base` for the protocol and each backend's atomicity guarantees,
:mod:`guardrail.store.idempotency` for at-most-once execution on top of it (leases, unknown outcomes, typed store
errors), and :mod:`guardrail.store.lists` for the named, versioned allow-lists policies read (on the same
protocol). :class:`RedisStore` imports redis-py only when created, so importing this package never needs it.
"""

from guardrail.errors import NothingHappened, StoreError, StoreUnavailable
from guardrail.store.base import Counter, Store
from guardrail.store.idempotency import (
    NOT_EXECUTED,
    Idempotency,
    IdempotencyConflict,
    IdempotencyFailed,
    IdempotencyInFlight,
    IdempotencyUnknown,
    ResultNotStorable,
)
from guardrail.store.lists import Lists, ListSnapshot
from guardrail.store.memory import MemoryStore
from guardrail.store.redis import RedisStore, VolatileRedisWarning
from guardrail.store.sqlite import SQLiteStore

__all__ = [
    "NOT_EXECUTED",
    "Counter",
    "Idempotency",
    "IdempotencyConflict",
    "IdempotencyFailed",
    "IdempotencyInFlight",
    "IdempotencyUnknown",
    "ListSnapshot",
    "Lists",
    "MemoryStore",
    "NothingHappened",
    "RedisStore",
    "ResultNotStorable",
    "SQLiteStore",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "VolatileRedisWarning",
]
