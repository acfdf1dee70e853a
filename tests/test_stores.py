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

import pytest
from redis_server import redis_url  # noqa: F401  (registers the session fixture that starts redis-server)

from guardrail.errors import GuardrailError
from guardrail.store import (
    Idempotency,
    IdempotencyConflict,
    IdempotencyInFlight,
    MemoryStore,
    RedisStore,
    SQLiteStore,
    Store,
)
from guardrail.store.base import MAX_KEY_BYTES

REPO = Path(__file__).resolve().parents[1]

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

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(accepted) <= limit
    assert sum(accepted) > limit - 3, "rejections only happen when the next amount would not fit"
    assert store.add_within_limit("budget", 0, limit, 60) == (True, sum(accepted))


def test_redis_store_accepts_a_client_and_leaves_it_open(redis_url: str, prefix: str) -> None:  # noqa: F811
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

    threads = [threading.Thread(target=worker) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
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
    begin = time.monotonic()
    with pytest.raises(IdempotencyConflict):
        idem.run("k", "fp-2", _never)
    assert time.monotonic() - begin < 2
    release.set()
    thread.join()


def test_a_failed_execution_stores_nothing(store: Store) -> None:
    idem = Idempotency(store)

    def boom() -> str:
        raise RuntimeError("tool failed")

    with pytest.raises(RuntimeError, match="tool failed"):
        idem.run("k", "fp", boom)
    assert store.get("idempotency:k") is None
    assert idem.run("k", "fp", lambda: "2") == ("2", False)

    async def aboom() -> str:
        raise RuntimeError("async tool failed")

    with pytest.raises(RuntimeError, match="async tool failed"):
        asyncio.run(idem.arun("ak", "fp", aboom))
    assert store.get("idempotency:ak") is None

    async def two() -> str:
        return "2"

    assert asyncio.run(idem.arun("ak", "fp", two)) == ("2", False)


def test_a_cancelled_async_execution_releases_its_claim(store: Store) -> None:
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
    assert store.get("idempotency:k") is None
    assert idem.run("k", "fp", lambda: "ran") == ("ran", False)


def test_a_non_text_result_is_refused_and_stores_nothing(store: Store) -> None:
    idem = Idempotency(store)
    with pytest.raises(TypeError, match="JSON text"):
        idem.run("k", "fp", lambda: {"not": "text"})  # type: ignore[arg-type,return-value]
    assert store.get("idempotency:k") is None


def test_a_waiter_takes_over_when_the_executor_fails(store: Store) -> None:
    idem = Idempotency(store, wait=10)
    started = threading.Event()
    failure: list[BaseException] = []

    def fails_later() -> str:
        started.set()
        time.sleep(0.2)
        raise RuntimeError("first executor failed")

    def first() -> None:
        try:
            idem.run("k", "fp", fails_later)
        except RuntimeError as error:
            failure.append(error)

    thread = threading.Thread(target=first)
    thread.start()
    started.wait(10)
    execute = Executions()
    assert idem.run("k", "fp", execute) == ('{"execution": 1}', False), "the waiter ran it itself"
    thread.join()
    assert len(failure) == 1
    assert execute.count == 1


def test_a_result_expires_after_ttl(store: Store) -> None:
    idem = Idempotency(store, ttl=TTL)
    assert idem.in_flight_ttl == TTL
    execute = Executions()
    assert idem.run("k", "fp", execute)[1] is False
    assert idem.run("k", "fp", execute)[1] is True
    time.sleep(AFTER_TTL)
    assert idem.run("k", "fp", execute) == ('{"execution": 2}', False)
    # after expiry even other arguments are accepted: the key is new again
    time.sleep(AFTER_TTL)
    assert idem.run("k", "other", execute) == ('{"execution": 3}', False)


def test_in_flight_elsewhere_raises_after_wait(store: Store) -> None:
    idem = Idempotency(store, wait=0.2)
    claim = json.dumps({"state": "in_flight", "fingerprint": "fp", "owner": "elsewhere"})
    store.put_if_absent("idempotency:k", claim, 60)
    begin = time.monotonic()
    with pytest.raises(IdempotencyInFlight) as caught:
        idem.run("k", "fp", _never)
    assert 0.2 <= time.monotonic() - begin < 5
    assert caught.value.key == "k"
    with pytest.raises(IdempotencyInFlight):
        asyncio.run(idem.arun("k", "fp", _never_async))
    assert store.get("idempotency:k") == claim, "the other executor's claim is untouched"


def test_a_crashed_executors_claim_expires(store: Store) -> None:
    idem = Idempotency(store, wait=10)
    claim = json.dumps({"state": "in_flight", "fingerprint": "fp", "owner": "crashed"})
    store.put_if_absent("idempotency:k", claim, TTL)
    begin = time.monotonic()
    assert idem.run("k", "fp", lambda: "ran") == ("ran", False)
    assert time.monotonic() - begin >= TTL * 0.9


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
        Idempotency(store, in_flight_ttl=float("nan"))
    assert Idempotency(store).in_flight_ttl == 300.0


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
