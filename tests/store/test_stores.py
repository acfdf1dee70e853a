"""The store layer: every protocol operation and the idempotency helper, on memory, a real SQLite file and a real
redis-server; then the same keys hammered from many threads, many asyncio tasks and several processes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.waiting import in_threads

from guardrail.errors import GuardrailError
from guardrail.store import (
    NOT_EXECUTED,
    Idempotency,
    IdempotencyConflict,
    IdempotencyFailed,
    IdempotencyInFlight,
    IdempotencyUnknown,
    MemoryStore,
    NothingHappened,
    RedisStore,
    ResultNotStorable,
    SQLiteStore,
    Store,
)
from guardrail.store.base import MAX_KEY_BYTES
from guardrail.store.idempotency import LEASE_SUFFIX

REPO = Path(__file__).resolve().parents[2]

#: Short enough to keep the file fast, long enough that a loaded two-core machine still sees "before" as before.
TTL = 0.2
AFTER_TTL = 0.35


@pytest.fixture(params=["memory", "sqlite", "redis"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def location(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a backend keeps its data: a SQLite file in tmp_path, or the session's redis-server."""
    if kind == "redis":
        return str(request.getfixturevalue("redis_url"))
    if kind == "sqlite":
        return str(tmp_path / "store.sqlite3")
    return ""


@pytest.fixture
def prefix() -> str:
    """A fresh Redis key prefix per test, so tests sharing the server never see each other's keys."""
    return f"test:{uuid.uuid4().hex[:12]}:"


def open_store(kind: str, location: str, prefix: str) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(location)
    return RedisStore(location, prefix=prefix)


@pytest.fixture
def store(kind: str, location: str, prefix: str) -> Iterator[Store]:
    opened = open_store(kind, location, prefix)
    yield opened
    opened.close()


# --- the protocol ---------------------------------------------------------------------------------------------------


def test_every_backend_satisfies_the_protocol(store: Store) -> None:
    assert isinstance(store, Store)


def test_put_if_absent_and_get(store: Store) -> None:
    assert store.get("k") is None
    assert store.put_if_absent("k", "v1", 60) is True
    assert store.put_if_absent("k", "v2", 60) is False
    assert store.get("k") == "v1"
    assert store.put_if_absent("ключ 🔑", "значение 🔒", 60) is True
    assert store.get("ключ 🔑") == "значение 🔒"
    assert store.put_if_absent("empty", "", 60) is True
    assert store.get("empty") == ""


def test_expired_keys_behave_as_absent(store: Store) -> None:
    store.put_if_absent("k", "old", TTL)
    store.put_if_absent("cas", "old", TTL)
    store.put_if_absent("del", "old", TTL)
    store.put_if_absent("long", "stays", 60)
    time.sleep(AFTER_TTL)
    assert store.get("k") is None
    assert store.compare_and_set("cas", "old", "new", 60) is False
    assert store.get("cas") is None
    assert store.delete_if("del", "old") is False
    assert store.put_if_absent("k", "new", 60) is True
    assert store.get("k") == "new"
    assert store.get("long") == "stays"


def test_compare_and_set(store: Store) -> None:
    assert store.compare_and_set("k", "anything", "v", 60) is False, "absent key never matches"
    assert store.get("k") is None
    store.put_if_absent("k", "a", 60)
    assert store.compare_and_set("k", "b", "c", 60) is False
    assert store.get("k") == "a"
    assert store.compare_and_set("k", "a", "b", 60) is True
    assert store.get("k") == "b"
    assert store.compare_and_set("k", "a", "c", 60) is False, "the old expected value no longer matches"
    # the new ttl replaces the old one
    assert store.compare_and_set("k", "b", "short", TTL) is True
    time.sleep(AFTER_TTL)
    assert store.get("k") is None


def test_delete_if(store: Store) -> None:
    assert store.delete_if("k", "v") is False
    store.put_if_absent("k", "v", 60)
    assert store.delete_if("k", "other") is False
    assert store.get("k") == "v"
    assert store.delete_if("k", "v") is True
    assert store.get("k") is None
    assert store.delete_if("k", "v") is False
    assert store.put_if_absent("k", "again", 60) is True


def test_add_within_limit_at_the_boundary(store: Store) -> None:
    assert store.add_within_limit("c", 1, 3, 60) == (True, 1.0)
    assert store.add_within_limit("c", 2, 3, 60) == (True, 3.0), "total == limit is allowed"
    assert store.add_within_limit("c", 1, 3, 60) == (False, 3.0), "nothing is added past the limit"
    assert store.add_within_limit("c", 0.5, 3, 60) == (False, 3.0)
    assert store.add_within_limit("c", 0, 3, 60) == (True, 3.0), "amount 0 reads the total"
    assert store.add_within_limit("c", 1, 10, 60) == (True, 4.0), "the limit is per call (e.g. raised quota)"
    # a first add over the limit creates nothing; a zero add does not start a window either
    assert store.add_within_limit("big", 5, 4, 60) == (False, 0.0)
    assert store.get("big") is None
    assert store.add_within_limit("zero", 0, 4, 60) == (True, 0.0)
    assert store.get("zero") is None


def test_add_within_limit_is_exact_and_reads_the_same_on_every_backend(store: Store) -> None:
    totals = [store.add_within_limit("spend", 0.1, 1.0, 60)[1] for _ in range(3)]
    assert totals == [0.1, 0.1 + 0.1, 0.1 + 0.1 + 0.1]
    assert store.get("spend") == "0.30000000000000004"
    store.add_within_limit("ints", 2, 10, 60)
    assert store.get("ints") == "2"
    assert store.add_within_limit("tiny", 1e-12, 1, 60) == (True, 1e-12)
    assert store.add_within_limit("tiny", 1e-12, 1, 60) == (True, 2e-12)


def test_add_within_limit_window_is_fixed_from_the_first_add(store: Store) -> None:
    window = 0.3
    start = time.monotonic()
    assert store.add_within_limit("rate", 1, 2, window) == (True, 1.0)
    time.sleep(0.15)
    assert store.add_within_limit("rate", 1, 2, window) == (True, 2.0), "later adds do not extend the window"
    assert store.add_within_limit("rate", 1, 2, window) == (False, 2.0)
    time.sleep(max(0.0, start + window + 0.05 - time.monotonic()))
    assert store.add_within_limit("rate", 1, 2, window) == (True, 1.0), "the counter reset after the window"


def test_arguments_are_checked(store: Store) -> None:
    longest = "k" * MAX_KEY_BYTES
    assert store.put_if_absent(longest, "v", 60) is True
    assert store.get(longest) == "v"
    with pytest.raises(ValueError, match="bytes"):
        store.get(longest + "k")
    with pytest.raises(ValueError, match="bytes"):
        store.put_if_absent("é" * (MAX_KEY_BYTES // 2 + 1), "v", 60)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="ttl"):
            store.put_if_absent("k", "v", bad)
        with pytest.raises(ValueError, match="ttl"):
            store.compare_and_set("k", "v", "w", bad)
        with pytest.raises(ValueError, match="window"):
            store.add_within_limit("c", 1, 10, bad)
    with pytest.raises(ValueError, match="amount"):
        store.add_within_limit("c", -1, 10, 60)
    with pytest.raises(ValueError, match="limit"):
        store.add_within_limit("c", 1, float("inf"), 60)
    store.put_if_absent("text", "not a number", 60)
    with pytest.raises(ValueError, match="not a counter"):
        store.add_within_limit("text", 1, 10, 60)
    assert store.get("c") is None, "refused calls change nothing"


def test_add_within_limit_never_exceeds_the_limit_under_50_threads(store: Store) -> None:
    limit = 50.0
    accepted: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(50)

    def worker(i: int) -> None:
        amount = float(1 + i % 3)
        barrier.wait()
        for _ in range(3):
            ok, total = store.add_within_limit("budget", amount, limit, 60)
            assert total <= limit
            if ok:
                with lock:
                    accepted.append(amount)

    in_threads(worker, 50)
    assert sum(accepted) <= limit
    assert sum(accepted) > limit - 3, "rejections only happen when the next amount would not fit"
    assert store.add_within_limit("budget", 0, limit, 60) == (True, sum(accepted))


def test_redis_store_accepts_a_client_and_leaves_it_open(redis_url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    store = RedisStore(client, prefix=prefix)
    assert store.put_if_absent("k", "v", 60) is True
    assert store.get("k") == "v"
    assert client.get(prefix + "k") == "v", "keys carry the prefix"
    assert store.add_within_limit("c", 1.5, 2, 60) == (True, 1.5)
    assert store.compare_and_set("k", "v", "w", 60) is True
    assert store.delete_if("k", "w") is True
    store.close()
    assert client.ping() is True
    client.close()


def test_sqlite_store_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "persist.sqlite3"
    first = SQLiteStore(path)
    first.put_if_absent("k", "v", 60)
    first.add_within_limit("c", 2, 5, 60)
    first.close()
    second = SQLiteStore(path)
    assert second.get("k") == "v"
    assert second.add_within_limit("c", 2, 5, 60) == (True, 4.0)
    second.close()


# --- idempotency ----------------------------------------------------------------------------------------------------


class Executions:
    """A lock-protected count of executions, and an execute that records itself."""

    def __init__(self, delay: float = 0.0) -> None:
        self.count = 0
        self.delay = delay
        self._lock = threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            self.count += 1
            n = self.count
        time.sleep(self.delay)
        return json.dumps({"execution": n})


def test_errors_are_guardrail_errors() -> None:
    assert issubclass(IdempotencyConflict, GuardrailError)
    assert issubclass(IdempotencyInFlight, GuardrailError)


def test_run_executes_once_then_replays(store: Store) -> None:
    idem = Idempotency(store)
    execute = Executions()
    assert idem.run("call-1", "fp", execute) == ('{"execution": 1}', False)
    assert idem.run("call-1", "fp", execute) == ('{"execution": 1}', True)
    assert idem.run("call-2", "fp", execute) == ('{"execution": 2}', False)
    assert execute.count == 2
    record = json.loads(store.get("idempotency:call-1") or "")
    assert record == {"state": "done", "fingerprint": "fp", "result": '{"execution": 1}'}


def test_50_threads_one_key_execute_once(store: Store) -> None:
    idem = Idempotency(store, wait=20)
    execute = Executions(delay=0.05)
    barrier = threading.Barrier(50)
    outcomes: list[tuple[str, bool]] = []
    lock = threading.Lock()

    def worker() -> None:
        barrier.wait()
        outcome = idem.run("shared", "same-args", execute)
        with lock:
            outcomes.append(outcome)

    in_threads(lambda _: worker(), 50)
    assert execute.count == 1
    assert len(outcomes) == 50
    assert {result for result, _ in outcomes} == {'{"execution": 1}'}
    assert sorted(replayed for _, replayed in outcomes) == [False] + [True] * 49


def test_50_asyncio_tasks_one_key_execute_once(store: Store) -> None:
    idem = Idempotency(store, wait=20)
    count = 0

    async def execute() -> str:
        nonlocal count
        count += 1
        await asyncio.sleep(0.05)
        return '{"ok": true}'

    async def main() -> list[tuple[str, bool]]:
        return await asyncio.gather(*(idem.arun("shared", "same-args", execute) for _ in range(50)))

    outcomes = asyncio.run(main())
    assert count == 1
    assert {result for result, _ in outcomes} == {'{"ok": true}'}
    assert sorted(replayed for _, replayed in outcomes) == [False] + [True] * 49


def test_same_key_different_arguments_conflicts(store: Store) -> None:
    idem = Idempotency(store)
    execute = Executions()
    idem.run("k", "fp-1", execute)
    with pytest.raises(IdempotencyConflict) as caught:
        idem.run("k", "fp-2", execute)
    assert caught.value.key == "k"
    with pytest.raises(IdempotencyConflict):
        asyncio.run(idem.arun("k", "fp-2", _never_async))
    assert execute.count == 1


def test_conflict_is_immediate_while_in_flight(store: Store) -> None:
    idem = Idempotency(store, wait=10)
    started, release = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        release.wait(10)
        return "1"

    thread = threading.Thread(target=idem.run, args=("k", "fp-1", slow))
    thread.start()
    started.wait(10)
    # wait=0: had the second caller waited for the first instead of refusing, it would get IdempotencyInFlight
    with pytest.raises(IdempotencyConflict):
        Idempotency(store, wait=0).run("k", "fp-2", _never)
    release.set()
    thread.join()


def test_a_failed_execution_is_recorded_and_replayed(store: Store) -> None:
    idem = Idempotency(store)
    runs = []

    def boom() -> str:
        runs.append(1)
        raise RuntimeError("tool failed sk-secretSECRETsecret0123456789")

    with pytest.raises(RuntimeError, match="tool failed"):
        idem.run("k", "fp", boom)
    with pytest.raises(IdempotencyFailed) as caught:
        idem.run("k", "fp", boom)
    assert caught.value.key == "k" and caught.value.error_type == "RuntimeError"
    assert "secretSECRET" not in caught.value.message, "the recorded message is redacted"
    assert runs == [1], "a failure after the action may have acted: never run twice"

    async def aboom() -> str:
        runs.append(2)
        raise RuntimeError("async tool failed")

    with pytest.raises(RuntimeError, match="async tool failed"):
        asyncio.run(idem.arun("ak", "fp", aboom))
    with pytest.raises(IdempotencyFailed):
        asyncio.run(idem.arun("ak", "fp", aboom))
    with pytest.raises(IdempotencyFailed):
        idem.run("ak", "fp", _never)
    assert runs == [1, 2]


def test_nothing_happened_and_rerun_safe_release_the_key(store: Store) -> None:
    idem = Idempotency(store)

    def refused() -> str:
        raise NothingHappened("the bank refused before charging")

    with pytest.raises(NothingHappened):
        idem.run("k", "fp", refused)
    assert store.get("idempotency:k") is None
    assert idem.run("k", "fp", lambda: "2") == ("2", False)

    safe = Idempotency(store, rerun_safe=True)
    with pytest.raises(RuntimeError):
        safe.run("s", "fp", _boom)
    assert safe.run("s", "fp", lambda: "ran") == ("ran", False), "rerun_safe keeps today's retry-on-failure"

    async def two() -> str:
        return "2"

    with pytest.raises(RuntimeError):
        asyncio.run(safe.arun("as", "fp", _aboom))
    assert asyncio.run(safe.arun("as", "fp", two)) == ("2", False)


def test_a_cancelled_async_execution_leaves_an_unknown_outcome(store: Store) -> None:
    idem = Idempotency(store)

    async def main() -> None:
        started = asyncio.Event()

        async def hangs() -> str:
            started.set()
            await asyncio.sleep(60)
            return "never"

        task = asyncio.create_task(idem.arun("k", "fp", hangs))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    with pytest.raises(IdempotencyUnknown) as caught:
        idem.run("k", "fp", _never)
    assert caught.value.key == "k" and caught.value.attempt == 1 and caught.value.started_at > 0
    assert idem.resolve("k", failed=True) is True, "the application says it took no effect"
    assert idem.run("k", "fp", lambda: "ran") == ("ran", False)


def test_a_non_text_result_is_recorded_as_not_storable(store: Store) -> None:
    idem = Idempotency(store)
    runs = []

    def returns_a_dict() -> Any:
        runs.append(1)
        return {"not": "text"}

    with pytest.raises(ResultNotStorable, match="not storable") as caught:
        idem.run("k", "fp", returns_a_dict)
    assert "UsageError" in caught.value.reason and "JSON text" in caught.value.reason  # guardrail's error, typed
    assert "'not'" in caught.value.preview
    with pytest.raises(ResultNotStorable):
        idem.run("k", "fp", returns_a_dict)
    assert runs == [1]


def test_results_over_the_size_limit_are_not_storable(store: Store) -> None:
    idem = Idempotency(store, max_result_bytes=1000)
    runs = []

    def big() -> str:
        runs.append(1)
        return json.dumps("é" * 600, ensure_ascii=False)  # 1202 bytes of UTF-8

    with pytest.raises(ResultNotStorable, match="limit is 1000"):
        idem.run("k", "fp", big)
    with pytest.raises(ResultNotStorable):
        idem.run("k", "fp", big)
    assert runs == [1]
    fits = json.dumps("é" * 400, ensure_ascii=False)  # 802 bytes
    assert idem.run("fits", "fp", lambda: fits) == (fits, False)


def test_a_waiter_replays_the_failure_of_the_executor(store: Store) -> None:
    idem = Idempotency(store, wait=10)
    started, go = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def fails_later() -> str:
        started.set()
        go.wait(10)
        raise RuntimeError("first executor failed")

    def first() -> None:
        try:
            idem.run("k", "fp", fails_later)
        except RuntimeError as error:
            failure.append(error)

    thread = threading.Thread(target=first)
    thread.start()
    started.wait(10)
    def wait_for_it() -> None:
        with pytest.raises(IdempotencyFailed) as caught:
            idem.run("k", "fp", _never)  # a waiter never takes over a failed run
        failure.append(caught.value)

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    go.set()
    thread.join()
    waiter.join()
    assert sorted(type(error).__name__ for error in failure) == ["IdempotencyFailed", "RuntimeError"]


@pytest.mark.slow
def test_a_result_expires_after_ttl(store: Store) -> None:
    idem = Idempotency(store, ttl=TTL)
    execute = Executions()
    assert idem.run("k", "fp", execute)[1] is False
    assert idem.run("k", "fp", execute)[1] is True
    time.sleep(AFTER_TTL)
    assert idem.run("k", "fp", execute) == ('{"execution": 2}', False)
    # after expiry even other arguments are accepted: the key is new again
    time.sleep(AFTER_TTL)
    assert idem.run("k", "other", execute) == ('{"execution": 3}', False)


class Ticks:
    """A fake monotonic clock that moves one second per reading: waits end after a counted number of looks."""

    def __init__(self) -> None:
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        return float(self.readings)


def test_in_flight_elsewhere_raises_after_wait(store: Store) -> None:
    clock = Ticks()
    idem = Idempotency(store, wait=5, poll=0.001, clock=clock)
    claim = json.dumps({"state": "started", "fingerprint": "fp", "owner": "elsewhere", "attempt": 1,
                        "started_at": 1.0})
    store.put_if_absent("idempotency:k", claim, 60)
    store.put_if_absent("idempotency:k" + LEASE_SUFFIX, "elsewhere", 60)
    with pytest.raises(IdempotencyInFlight) as caught:
        idem.run("k", "fp", _never)
    assert caught.value.key == "k" and caught.value.waited == 5
    assert clock.readings == 6, "one reading for the deadline, then one per look until it passed"
    with pytest.raises(IdempotencyInFlight):
        asyncio.run(idem.arun("k", "fp", _never_async))
    assert store.get("idempotency:k") == claim, "the other executor's record is untouched"
    assert store.get("idempotency:k" + LEASE_SUFFIX) == "elsewhere", "and so is its lease"


def test_a_vanished_executor_leaves_an_unknown_outcome_until_resolved(store: Store) -> None:
    claim = json.dumps({"state": "started", "fingerprint": "fp", "owner": "crashed", "attempt": 1,
                        "started_at": 1234.5})
    store.put_if_absent("idempotency:k", claim, 60)
    store.put_if_absent("idempotency:k" + LEASE_SUFFIX, "crashed", TTL)  # its lease runs out, nobody renews it
    idem = Idempotency(store, wait=10)
    with pytest.raises(IdempotencyUnknown) as caught:
        idem.run("k", "fp", _never)
    assert caught.value.started_at == 1234.5 and caught.value.key == "k"
    with pytest.raises(IdempotencyConflict):
        idem.run("k", "other-args", _never)
    assert idem.resolve("k", result='"it did happen"') is True
    assert idem.run("k", "fp", _never) == ('"it did happen"', True)
    assert idem.resolve("k", failed=True) is False, "nothing unknown left to settle"


def test_a_reconcile_hook_settles_an_unknown_outcome(store: Store) -> None:
    for key in ("yes", "no", "unsure"):
        claim = json.dumps({"state": "started", "fingerprint": "fp", "owner": "gone", "attempt": 1,
                            "started_at": 1.0})
        store.put_if_absent("idempotency:" + key, claim, 60)
    asked: list[IdempotencyUnknown] = []

    def reconcile(unknown: IdempotencyUnknown) -> str | object | None:
        asked.append(unknown)
        return {"yes": '"charged"', "no": NOT_EXECUTED, "unsure": None}[unknown.key]

    idem = Idempotency(store, reconcile=reconcile)  # type: ignore[arg-type]
    assert idem.run("yes", "fp", _never) == ('"charged"', True)
    assert idem.run("yes", "fp", _never) == ('"charged"', True)
    assert idem.run("no", "fp", lambda: '"ran now"') == ('"ran now"', False)
    with pytest.raises(IdempotencyUnknown):
        idem.run("unsure", "fp", _never)
    assert [unknown.key for unknown in asked] == ["yes", "no", "unsure"]
    rerun = Idempotency(store, rerun_safe=True)
    assert rerun.run("unsure", "fp", lambda: '"again"') == ('"again"', False)
    assert json.loads(store.get("idempotency:unsure") or "")["state"] == "done"


def test_a_foreign_value_under_the_key_is_a_conflict(store: Store) -> None:
    store.put_if_absent("idempotency:k", "not json", 60)
    with pytest.raises(IdempotencyConflict, match="not an idempotency record"):
        Idempotency(store).run("k", "fp", _never)


def test_idempotency_arguments_are_checked() -> None:
    store = MemoryStore()
    with pytest.raises(ValueError):
        Idempotency(store, ttl=0)
    with pytest.raises(ValueError):
        Idempotency(store, wait=-1)
    with pytest.raises(ValueError):
        Idempotency(store, poll=0)
    with pytest.raises(ValueError):
        Idempotency(store, lease=float("nan"))
    with pytest.raises(ValueError):
        Idempotency(store, max_result_bytes=0)
    with pytest.raises(ValueError):
        Idempotency(store).resolve("k")
    assert Idempotency(store).lease == 30.0


def _boom() -> str:
    raise RuntimeError("boom")


async def _aboom() -> str:
    raise RuntimeError("boom")


def _never() -> str:
    raise AssertionError("must not execute")


async def _never_async() -> str:
    raise AssertionError("must not execute")


# --- across processes -----------------------------------------------------------------------------------------------

WORKER = r"""
import json, os, sys, threading, time
from guardrail.store import Idempotency, RedisStore, SQLiteStore

kind, location, prefix, log_path = sys.argv[1:5]
threads, keys, index = int(sys.argv[5]), [f"key-{i}" for i in range(int(sys.argv[6]))], int(sys.argv[7])
store = SQLiteStore(location) if kind == "sqlite" else RedisStore(location, prefix=prefix)
idem = Idempotency(store, wait=20)
log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
seen, lock = {}, threading.Lock()

def execute_for(key):
    def execute():
        os.write(log, f"{key}\n".encode())  # one write() on an O_APPEND file: lines never interleave
        time.sleep(0.01)
        return json.dumps({"key": key, "pid": os.getpid()})
    return execute

def work(n):
    # even threads walk the keys in the same order in every process (head-on collisions), odd ones from a
    # per-process offset (so every process gets to claim some keys first)
    offset = (n if n % 2 == 0 else n + 7 * index) % len(keys)
    for key in keys[offset:] + keys[:offset]:
        result, replayed = idem.run(key, "fp-" + key, execute_for(key))
        with lock:
            seen.setdefault(key, set()).add(result)

barrier = threading.Barrier(threads + 1)

def thread_main(n):
    barrier.wait()
    work(n)

pool = [threading.Thread(target=thread_main, args=(n,)) for n in range(threads)]
for t in pool: t.start()
print("ready", flush=True)
start_at = float(sys.stdin.readline())  # the same wall-clock instant for every process
time.sleep(max(0.0, start_at - time.time()))
barrier.wait()
for t in pool: t.join()
store.close()
print(json.dumps({key: sorted(results) for key, results in seen.items()}), flush=True)
"""


def results_of(seen: list[dict[str, list[str]]]) -> set[str]:
    return {result for per_process in seen for results in per_process.values() for result in results}


@pytest.mark.parametrize("shared", ["sqlite", "redis"])
@pytest.mark.slow
def test_processes_sharing_a_store_execute_each_key_once(
    shared: str, request: pytest.FixtureRequest, tmp_path: Path, prefix: str
) -> None:
    location = str(request.getfixturevalue("redis_url")) if shared == "redis" else str(tmp_path / "shared.sqlite3")
    processes, threads, keys = 3, 8, 20
    script, log = tmp_path / "worker.py", tmp_path / "executions.log"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    args = [sys.executable, str(script), shared, location, prefix, str(log), str(threads), str(keys)]
    workers = [
        subprocess.Popen(
            [*args, str(index)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for index in range(processes)
    ]
    try:
        for worker in workers:  # every process is up and connected before any of them starts: a real race
            assert worker.stdout is not None
            assert worker.stdout.readline().strip() == "ready", worker.stderr.read() if worker.stderr else ""
        start_at = f"{time.time() + 0.2!r}\n"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write(start_at)
            worker.stdin.flush()
        outputs = [worker.communicate(timeout=60) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    for worker, (_, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
    executed = Counter(log.read_text().split())
    assert executed == Counter({f"key-{i}": 1 for i in range(keys)}), "each key executed exactly once in total"
    seen = [json.loads(out) for out, _ in outputs]
    for i in range(keys):
        results = {result for per_process in seen for result in per_process[f"key-{i}"]}
        assert len(results) == 1, f"every thread of every process got the same result for key-{i}"
    pids = {json.loads(result)["pid"] for result in results_of(seen)}
    assert pids <= {worker.pid for worker in workers}
    per_process = Counter(json.loads(result)["pid"] for result in results_of(seen))
    print(f"{shared}: keys executed per process: {sorted(per_process.values())}")  # shown with -s
