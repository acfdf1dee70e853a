"""The circuit breaker is one state machine over a Store: the same transitions on a private memory store, a
MemoryStore shared by two breaker objects, a SQLite file and a real redis-server."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from guardrail.chain import CircuitBreaker, SharedCircuitBreaker
from guardrail.store import MemoryStore, RedisStore, SQLiteStore, Store


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "sqlite":
        return SQLiteStore(str(tmp_path / "breaker.sqlite3"))
    url = str(request.getfixturevalue("redis_url"))
    return RedisStore(url, prefix=f"test:{uuid.uuid4().hex[:12]}:")


def test_two_breakers_over_one_store_and_key_are_one_breaker(store: Store) -> None:
    first = CircuitBreaker(failures=2, reset_after=0.2, store=store, key="openai:gpt-4o")
    second = SharedCircuitBreaker(store, "openai:gpt-4o", failures=2, reset_after=0.2)
    other = CircuitBreaker(failures=2, reset_after=0.2, store=store, key="anthropic:claude")
    first.record(False)
    second.record(False)  # the second consecutive failure, counted on the shared record
    assert first.state == second.state == "open" and not first.allow() and not second.allow()
    assert other.state == "closed" and other.allow()  # another key is another breaker
    time.sleep(0.25)
    assert [first.allow(), second.allow(), first.allow()] == [True, False, False]  # one probe for both
    second.record(True)
    assert first.state == "closed" and first.allow()


def test_a_released_probe_is_free_again(store: Store) -> None:
    breaker = CircuitBreaker(failures=1, reset_after=0.1, store=store, key="k")
    breaker.record(False)
    time.sleep(0.15)
    assert breaker.allow() and not breaker.allow()
    breaker.release()
    assert breaker.state == "half_open" and breaker.allow()


def test_a_failed_probe_opens_it_again() -> None:
    breaker = CircuitBreaker(failures=3, reset_after=0.1)
    for _ in range(3):
        breaker.record(False)
    time.sleep(0.15)
    assert breaker.allow()
    breaker.record(False)  # one failure is enough while it is open
    assert breaker.state == "open" and not breaker.allow()


def test_a_shared_probe_lapses_but_a_private_one_is_held_until_given_back(store: Store) -> None:
    """A process holding the shared probe may have died: after ``reset_after`` another may probe. A private
    breaker's holder is this process, which always releases or records it."""
    shared = CircuitBreaker(failures=1, reset_after=0.1, store=store, key="k")
    private = CircuitBreaker(failures=1, reset_after=0.1)
    for breaker in (shared, private):
        breaker.record(False)
    time.sleep(0.15)
    assert shared.allow() and private.allow()
    time.sleep(0.15)
    assert shared.allow() and not private.allow()


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(failures=0)
    with pytest.raises(ValueError):
        SharedCircuitBreaker(MemoryStore(), "k", reset_after=0)
