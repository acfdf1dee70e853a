"""Typed store errors, expiry that removes entries, durability warnings, and the caller's key in messages.

Stores are real: SQLite files in tmp_path, a real redis-server (the session's one, and a closed port for "down").
"""

from __future__ import annotations

import socket
import sqlite3
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import guardrail
from guardrail.errors import GuardrailError, StoreError, StoreUnavailable
from guardrail.store import (
    NOT_EXECUTED,
    Counter,
    Idempotency,
    IdempotencyConflict,
    IdempotencyUnknown,
    MemoryStore,
    RedisStore,
    SQLiteStore,
    Store,
    VolatileRedisWarning,
)
from guardrail.store.idempotency import LEASE_SUFFIX
from guardrail.tools.execute import ToolRegistry, execute_tool_call, resolve, tool
from guardrail.tools.policy.loader import parse_policy

OPERATIONS: list[tuple[str, tuple[Any, ...]]] = [
    ("get", ("k",)), ("put_if_absent", ("k", "v", 60)), ("compare_and_set", ("k", "v", "w", 60)),
    ("delete_if", ("k", "v")), ("add_within_limit", ("c", 1, 10, 60)),
    ("add_within_limits", ([Counter("c", Decimal(1), Decimal(10), 60)],)),
]


def test_store_errors_are_guardrail_errors() -> None:
    assert issubclass(StoreUnavailable, StoreError) and issubclass(StoreError, GuardrailError)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize(("operation", "args"), OPERATIONS, ids=[op for op, _ in OPERATIONS])
def test_a_redis_server_that_is_down_raises_store_unavailable(operation: str, args: tuple[Any, ...]) -> None:
    import redis

    store = RedisStore(f"redis://127.0.0.1:{closed_port()}/0", timeout=0.5)  # the start-up check stays silent
    with pytest.raises(StoreUnavailable) as caught:
        getattr(store, operation)(*args)
    assert caught.value.operation == operation
    assert isinstance(caught.value.__cause__, redis.ConnectionError)


def test_an_idempotent_call_on_a_store_that_is_down_runs_nothing() -> None:
    store = RedisStore(f"redis://127.0.0.1:{closed_port()}/0", timeout=0.5)
    runs: list[int] = []
    with pytest.raises(StoreUnavailable) as caught:
        Idempotency(store).run("order-7", "fp", lambda: str(runs.append(1)))
    assert runs == [] and caught.value.key == "order-7"
    assert caught.value.executed is False and caught.value.claimed in (False, None)


def test_a_redis_server_without_persistence_is_warned_about(redis_url: str) -> None:
    with pytest.warns(VolatileRedisWarning, match="appendonly"):
        RedisStore(redis_url).close()


WRITES = OPERATIONS[1:]  # in WAL mode a writer's lock never blocks readers


@pytest.mark.parametrize(("operation", "args"), WRITES, ids=[op for op, _ in WRITES])
def test_a_locked_sqlite_file_raises_store_unavailable(tmp_path: Path, operation: str,
                                                       args: tuple[Any, ...]) -> None:
    path = tmp_path / "locked.sqlite3"
    store = SQLiteStore(path, timeout=0.05)
    locker = sqlite3.connect(path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreUnavailable) as caught:
            getattr(store, operation)(*args)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    store.close()


def test_an_unopenable_sqlite_path_raises_store_unavailable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable):
        SQLiteStore(tmp_path / "missing-directory" / "store.sqlite3")
    with pytest.raises(StoreUnavailable):
        SQLiteStore(tmp_path)  # a directory, not a file


def test_a_sqlite_file_deleted_in_use_raises_store_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "gone.sqlite3"
    store = SQLiteStore(path)
    assert store.put_if_absent("k", "v", 60)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with pytest.raises(StoreUnavailable, match="deleted or replaced"):
        store.get("k")
    with pytest.raises(StoreUnavailable, match="deleted or replaced"):
        store.put_if_absent("k", "again", 60)
    assert not path.exists(), "nothing was written into a fresh file behind the application's back"


def test_a_closed_sqlite_store_raises_a_store_error(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "closed.sqlite3")
    store.close()
    with pytest.raises(StoreError):
        store.get("k")


# -- expiry removes entries ------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_memory_store_sweeps_expired_entries_without_them_being_touched() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock, sweep_every=10)
    for i in range(100):
        store.put_if_absent(f"short-{i}", "v", 5)
    store.put_if_absent("long", "v", 3600)
    assert store.size() == 101
    clock.now += 6  # expired, but no sweep is due yet: entries stay until touched or swept
    assert store.get("long") == "v" and store.size() == 101
    clock.now += 5  # a sweep is due: any operation performs it
    assert store.get("long") == "v"
    assert store.size() == 1


def test_sqlite_store_gives_expired_space_back(tmp_path: Path) -> None:
    path = tmp_path / "shrinks.sqlite3"
    store = SQLiteStore(path)
    for i in range(400):
        store.put_if_absent(f"k{i}", "x" * 4000, 0.05)
    store.put_if_absent("stays", "v", 3600)
    pages = sqlite3.connect(path).execute("PRAGMA page_count").fetchone()[0]
    time.sleep(0.1)  # let the rows expire (nothing timed is asserted)
    assert store.sweep() == 400
    after = sqlite3.connect(path).execute("PRAGMA page_count").fetchone()[0]
    assert after < pages / 10, (pages, after)
    assert store.get("stays") == "v"
    store.close()


# -- through execute_tool_call: the caller's key, resolve, rerun_safe, reconcile ----------------------------------


def charge_tool(store: Store, **options: Any) -> tuple[ToolRegistry, list[int]]:
    registry, charged = ToolRegistry(), []

    @tool(policy=parse_policy('tool = "charge"\nidempotency = "required"\n[[allow]]\nid = "all"\n'),
          registry=registry, **options)
    def charge(amount: int) -> dict[str, int]:
        charged.append(amount)
        return {"charged": amount}

    return registry, charged


def vanish(store: Store, registry: ToolRegistry, key: str, amount: int) -> None:
    """Leave the record a runner killed mid-tool leaves: started, no lease (done by a real kill in the faults test,
    reproduced here through the public API: a run interrupted by KeyboardInterrupt)."""
    def interrupted(amount: int) -> None:
        raise KeyboardInterrupt

    found = registry.get("charge")
    assert found is not None
    original, found.fn = found.fn, interrupted
    try:
        with guardrail.identity(user="u"), pytest.raises(KeyboardInterrupt):
            execute_tool_call("charge", {"amount": amount}, idempotency_key=key, registry=registry, store=store)
    finally:
        found.fn = original


def test_messages_name_the_callers_key_not_the_internal_one() -> None:
    store = MemoryStore()
    registry, _ = charge_tool(store)
    with guardrail.identity(user="u"):
        execute_tool_call("charge", {"amount": 1}, idempotency_key="order-42", registry=registry, store=store)
        with pytest.raises(IdempotencyConflict) as caught:
            execute_tool_call("charge", {"amount": 2}, idempotency_key="order-42", registry=registry, store=store)
    assert caught.value.key == "order-42" and "'order-42'" in str(caught.value)
    assert "charge:" not in str(caught.value)


def test_an_unknown_outcome_is_resolved_by_the_application() -> None:
    store = MemoryStore()
    registry, charged = charge_tool(store)
    vanish(store, registry, "order-9", 5)
    with guardrail.identity(user="u"):
        with pytest.raises(IdempotencyUnknown) as caught:
            execute_tool_call("charge", {"amount": 5}, idempotency_key="order-9", registry=registry, store=store)
        assert caught.value.key == "order-9"
        assert resolve("charge", "order-9", result={"charged": 5}, registry=registry, store=store) is True
        assert execute_tool_call("charge", {"amount": 5}, idempotency_key="order-9", registry=registry,
                                 store=store) == {"charged": 5}
    assert charged == []


def test_a_reconcile_hook_and_rerun_safe_tools() -> None:
    store = MemoryStore()
    asked: list[tuple[str, dict[str, Any]]] = []

    def reconcile(unknown: IdempotencyUnknown, arguments: dict[str, Any]) -> Any:
        asked.append((unknown.key, arguments))
        return NOT_EXECUTED if arguments["amount"] == 1 else {"charged": "found downstream"}

    registry, charged = charge_tool(store, reconcile=reconcile)
    vanish(store, registry, "a", 1)
    vanish(store, registry, "b", 2)
    with guardrail.identity(user="u"):
        assert execute_tool_call("charge", {"amount": 1}, idempotency_key="a", registry=registry,
                                 store=store) == {"charged": 1}
        assert execute_tool_call("charge", {"amount": 2}, idempotency_key="b", registry=registry,
                                 store=store) == {"charged": "found downstream"}
    assert charged == [1] and asked == [("a", {"amount": 1}), ("b", {"amount": 2})]

    safe_store = MemoryStore()
    registry, charged = charge_tool(safe_store, rerun_safe=True)
    vanish(safe_store, registry, "c", 3)
    with guardrail.identity(user="u"):
        assert execute_tool_call("charge", {"amount": 3}, idempotency_key="c", registry=registry,
                                 store=safe_store) == {"charged": 3}
    assert charged == [3]


# -- claims whose write timed out ------------------------------------------------------------------------------


class TimesOutAfterWriting:
    """A real store whose first lease write lands and then reports a timeout, as a stalled server does; with
    ``retries``, the driver retries the write instead (as redis-py's retrying client does), so the retry finds the
    key taken by its own first attempt."""

    def __init__(self, store: Store, *, retries: bool) -> None:
        self.store, self.retries, self.tripped = store, retries, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def put_if_absent(self, key: str, value: str, ttl: float) -> bool:
        landed = self.store.put_if_absent(key, value, ttl)
        if self.tripped or not key.endswith(LEASE_SUFFIX):
            return landed
        self.tripped = True
        if self.retries:
            return self.store.put_if_absent(key, value, ttl)  # the retry: the key is taken (by us)
        raise StoreUnavailable("timed out after writing", operation="put_if_absent")


@pytest.fixture(params=["sqlite", "redis"])
def real_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "sqlite":
        opened: Store = SQLiteStore(tmp_path / "ghost.sqlite3")
    else:
        opened = RedisStore(request.getfixturevalue("redis_url"), prefix=f"ghost:{uuid.uuid4().hex[:8]}:")
    yield opened
    opened.close()


def test_a_claim_that_landed_before_a_timeout_is_cleaned_not_left_as_a_ghost(real_store: Store) -> None:
    flaky = TimesOutAfterWriting(real_store, retries=False)
    with pytest.raises(StoreUnavailable) as caught:
        Idempotency(flaky).run("k", "fp", lambda: '"never"')  # type: ignore[arg-type]
    assert caught.value.claimed is False and caught.value.executed is False
    assert real_store.get("idempotency:k" + LEASE_SUFFIX) is None, "the landed claim was deleted"
    assert Idempotency(real_store, wait=0).run("k", "fp", lambda: '"ran"') == ('"ran"', False)


def test_a_retrying_client_recognizes_its_own_claim(real_store: Store) -> None:
    flaky = TimesOutAfterWriting(real_store, retries=True)
    assert Idempotency(flaky, wait=0).run("k", "fp", lambda: '"ran"') == ('"ran"', False)  # type: ignore[arg-type]
