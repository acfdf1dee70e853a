"""Small atomic key-value stores (memory, SQLite, Redis) behind idempotent tool execution, quotas and approvals.

See :mod:`guardrail.store.base` for the protocol and each backend's atomicity guarantees, and
:mod:`guardrail.store.idempotency` for at-most-once execution on top of it. :class:`RedisStore` imports redis-py
only when created, so importing this package never needs it.
"""

from guardrail.store.base import Store
from guardrail.store.idempotency import Idempotency, IdempotencyConflict, IdempotencyInFlight
from guardrail.store.memory import MemoryStore
from guardrail.store.redis import RedisStore
from guardrail.store.sqlite import SQLiteStore

__all__ = [
    "Idempotency",
    "IdempotencyConflict",
    "IdempotencyInFlight",
    "MemoryStore",
    "RedisStore",
    "SQLiteStore",
    "Store",
]
