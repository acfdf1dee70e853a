"""At most once, even when things break: idempotent tool calls under crashes, slow tools and store failures.

Every scenario runs in real processes (``tests/tools/idempotency_worker.py``) against a real SQLite file or a real
``redis-server`` (a private one here, since tests restart and stall it). Each execution of the tool appends one
line to a log file before anything else, so executions are counted exactly, even for a process killed mid-tool.
The rule checked everywhere: exactly one execution, or a typed error (a ``GuardrailError``); never a second
execution, never a driver exception.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.redis_server import free_port, pings, stop_redis_server, unavailable

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("idempotency_worker.py")
KINDS = ["sqlite", "redis"]


class RedisProcess:
    """A private redis-server on a fixed port that tests may stop, restart (with or without AOF) and stall."""

    def __init__(self, executable: str, directory: Path) -> None:
        self.executable, self.directory, self.port = executable, directory, free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *, aof: bool = False) -> None:
        command = [self.executable, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
                   "--save", "", "--appendonly", "yes" if aof else "no", "--appendfsync", "always",
                   "--enable-debug-command", "yes"]
        if not aof:  # a server without persistence starts empty: drop what an earlier AOF run left
            shutil.rmtree(self.directory / "appendonlydir", ignore_errors=True)
        log = (self.directory / "redis.log").open("ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        for _ in range(500):
            if pings(self.port):
                return
            time.sleep(0.02)
        raise RuntimeError("the private redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            stop_redis_server(self.process)
            self.process = None


@pytest.fixture(scope="module")
def redis_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisProcess]:
    executable = shutil.which("redis-server")
    if executable is None:
        unavailable("redis-server is not on PATH")
    server = RedisProcess(executable, tmp_path_factory.mktemp("private-redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "executions.log"


def make_base(kind: str, request: pytest.FixtureRequest, tmp_path: Path, log: Path) -> dict[str, Any]:
    """The worker config shared by every process of one test: the store, the key, the log."""
    config: dict[str, Any] = {"kind": kind, "log": str(log), "key": f"order-{uuid.uuid4().hex[:8]}",
                              "prefix": f"faults:{uuid.uuid4().hex[:8]}:", "behaviour": "ok"}
    if kind == "redis":
        server: RedisProcess = request.getfixturevalue("redis_process")
        if server.process is None or server.process.poll() is not None:
            server.start()
        config["location"] = server.url
    else:
        config["location"] = str(tmp_path / "store.sqlite3")
    return config


@pytest.fixture(params=KINDS)
def base(request: pytest.FixtureRequest, tmp_path: Path, log: Path) -> dict[str, Any]:
    return make_base(str(request.param), request, tmp_path, log)


@pytest.fixture
def redis_base(request: pytest.FixtureRequest, tmp_path: Path, log: Path) -> dict[str, Any]:
    return make_base("redis", request, tmp_path, log)


@pytest.fixture
def sqlite_base(request: pytest.FixtureRequest, tmp_path: Path, log: Path) -> dict[str, Any]:
    return make_base("sqlite", request, tmp_path, log)


def spawn(config: dict[str, Any], **changes: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, str(WORKER), json.dumps({**config, **changes})], cwd=ROOT, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str]) -> dict[str, Any]:
    """The worker's last JSON line; a worker that died of an uncaught exception fails the test with its stderr."""
    out, err = process.communicate(timeout=90)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, f"worker printed no outcome (rc {process.returncode}):\n{err[-3000:]}"
    outcome: dict[str, Any] = json.loads(lines[-1])
    return outcome


def call(config: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return finish(spawn(config, **changes))


def executions(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def wait_for_executions(log: Path, count: int) -> None:
    """Block until the tool has logged ``count`` executions (the sync point "the tool is now running")."""
    for _ in range(3000):
        if executions(log) >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"the tool never reached {count} executions")


def typed(outcome: dict[str, Any], name: str) -> dict[str, Any]:
    assert outcome["outcome"] == "error" and outcome["type"] == name, outcome
    assert outcome["guardrail"] is True, f"{name} must be a GuardrailError"
    return outcome


# -- crashes -----------------------------------------------------------------------------------------------------


def test_kill_9_mid_tool_is_an_unknown_outcome_never_a_rerun(base: dict[str, Any], log: Path) -> None:
    runner = spawn(base, behaviour="hang", lease=0.5)
    wait_for_executions(log, 1)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    unknown = typed(call(base, wait=20), "IdempotencyUnknown")  # waits out the dead runner's lease, then says so
    assert unknown["key"] == base["key"] and unknown["started_at"] > 0
    assert executions(log) == 1
    # The application learns the charge never went through and says so; only then does the key run again.
    assert call(base, resolve=True)["outcome"] == "result"
    assert executions(log) == 2
    assert call(base)["value"] == {"charged": True} and executions(log) == 2, "and then it is replayed"


def test_sigint_mid_tool_is_an_unknown_outcome_at_once(base: dict[str, Any], log: Path) -> None:
    runner = spawn(base, behaviour="hang", lease=30.0)
    wait_for_executions(log, 1)
    runner.send_signal(signal.SIGINT)
    assert finish(runner) == {"outcome": "interrupted"}
    # The interrupted runner released its lease: the next caller needs no waiting (wait=0) to learn the state.
    typed(call(base, wait=0), "IdempotencyUnknown")
    assert executions(log) == 1


# -- slow tools --------------------------------------------------------------------------------------------------


def test_a_tool_slower_than_its_lease_runs_once_for_concurrent_retries(base: dict[str, Any], log: Path,
                                                                        tmp_path: Path) -> None:
    slow = {"behaviour": "until", "until": str(tmp_path / "go"), "lease": 0.3}
    runner = spawn(base, **slow)
    wait_for_executions(log, 1)
    retries = [spawn(base, **slow, wait=60) for _ in range(2)]
    time.sleep(2.0)  # the runner outlives several leases while the retries poll (nothing asserted on time)
    (tmp_path / "go").touch()
    outcomes = [finish(process) for process in [runner, *retries]]
    assert [outcome.get("value") for outcome in outcomes] == [{"charged": True}] * 3, outcomes
    assert executions(log) == 1


def test_retries_that_stop_waiting_get_in_flight_not_a_second_run(base: dict[str, Any], log: Path,
                                                                   tmp_path: Path) -> None:
    slow = {"behaviour": "until", "until": str(tmp_path / "go"), "lease": 0.3}
    runner = spawn(base, **slow)
    wait_for_executions(log, 1)
    typed(call(base, **slow, wait=0.5), "IdempotencyInFlight")
    (tmp_path / "go").touch()
    assert finish(runner)["value"] == {"charged": True}
    assert executions(log) == 1


# -- outcomes that are not a plain result ------------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["circular", "bytes", "big"])
def test_an_unstorable_result_is_recorded_and_replayed(base: dict[str, Any], log: Path, behaviour: str) -> None:
    first = typed(call(base, behaviour=behaviour), "ResultNotStorable")
    second = typed(call(base, behaviour=behaviour), "ResultNotStorable")
    assert first["reason"] == second["reason"]
    assert executions(log) == 1


def test_a_tool_raising_after_its_side_effect_is_replayed_not_rerun(base: dict[str, Any], log: Path) -> None:
    first = call(base, behaviour="raise")
    assert first["outcome"] == "error" and first["type"] == "RuntimeError", "the first caller gets the tool's error"
    replayed = typed(call(base, behaviour="raise"), "IdempotencyFailed")
    assert replayed["error_type"] == "RuntimeError"
    assert executions(log) == 1


# -- the store fails ---------------------------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_a_store_that_is_down_before_the_claim_runs_nothing(base: dict[str, Any], log: Path, tmp_path: Path) -> None:
    if base["kind"] == "redis":
        down = {"location": f"redis://127.0.0.1:{closed_port()}/0", "timeout": 0.5}
    else:
        down = {"location": str(tmp_path / "no-such-directory" / "store.sqlite3")}
    outcome = typed(call(base, **down), "StoreUnavailable")
    assert outcome["executed"] is False
    assert executions(log) == 0


def test_a_redis_stall_at_claim_time_leaves_no_ghost(redis_base: dict[str, Any], log: Path,
                                                    redis_process: RedisProcess) -> None:
    import redis

    stalled = threading.Event()

    def stall() -> None:
        client = redis.Redis.from_url(redis_process.url)
        stalled.set()
        client.execute_command("DEBUG", "SLEEP", "2")
        client.close()

    worker = spawn(redis_base, timeout=0.3, lease=1.0, go_on_stdin=True)
    assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
    staller = threading.Thread(target=stall)
    staller.start()
    stalled.wait()
    time.sleep(0.2)  # the DEBUG SLEEP is (almost surely) on the wire before the worker's first command
    assert worker.stdin is not None
    worker.stdin.write("go\n")
    worker.stdin.flush()
    outcome = typed(finish(worker), "StoreUnavailable")
    staller.join()
    assert outcome["executed"] is False and outcome["claimed"] in (False, None), outcome
    assert executions(log) == 0
    # Whatever the stalled server did with the claim, it is either gone or expires within the 1 s lease.
    assert call(redis_base, wait=10)["value"] == {"charged": True}
    assert executions(log) == 1


@pytest.mark.parametrize("aof", [False, True], ids=["no-persistence", "aof"])
def test_redis_restarted_mid_call(redis_base: dict[str, Any], log: Path, redis_process: RedisProcess,
                                  aof: bool) -> None:
    redis_process.stop()
    redis_process.start(aof=aof)
    try:
        runner = spawn(redis_base, behaviour="slow", sleep=2.0, lease=1.0)
        wait_for_executions(log, 1)
        redis_process.stop()
        redis_process.start(aof=aof)
        retry = spawn(redis_base, behaviour="slow", sleep=2.0, lease=1.0, wait=30) if aof else None
        first = finish(runner)
        # The runner kept going through the outage and recorded its outcome afterwards.
        assert first["value"] == {"charged": True}, first
        if retry is not None:  # with AOF the claim survived the restart: the retry waited for it and replayed
            assert finish(retry)["value"] == {"charged": True}
        assert call(redis_base)["value"] == {"charged": True}
        assert executions(log) == 1
    finally:
        redis_process.stop()
        redis_process.start()


def test_redis_down_while_the_tool_runs(redis_base: dict[str, Any], log: Path, redis_process: RedisProcess,
                                        tmp_path: Path) -> None:
    redis_process.stop()
    redis_process.start(aof=True)
    try:
        runner = spawn(redis_base, behaviour="until", until=str(tmp_path / "go"), lease=0.6, timeout=0.5)
        wait_for_executions(log, 1)
        redis_process.stop()  # down while the tool runs, and still down when it finishes
        (tmp_path / "go").touch()
        outcome = typed(finish(runner), "StoreUnavailable")
        assert outcome["executed"] is True and outcome["result_stored"] is False, outcome
        redis_process.start(aof=True)
        # The started record survived (AOF); its lease lapsed: unknown, not a second run.
        typed(call(redis_base, wait=20), "IdempotencyUnknown")
        assert executions(log) == 1
    finally:
        redis_process.stop()
        redis_process.start()


def hold_sqlite_lock(path: str) -> sqlite3.Connection:
    """Another writer that takes the database's write lock and keeps it until closed."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    conn.execute("BEGIN EXCLUSIVE")
    return conn


def test_a_locked_sqlite_file_before_the_claim_runs_nothing(sqlite_base: dict[str, Any], log: Path) -> None:
    call(sqlite_base, key="create-the-file")
    locker = hold_sqlite_lock(sqlite_base["location"])
    try:
        outcome = typed(call(sqlite_base, timeout=0.3), "StoreUnavailable")
    finally:
        locker.rollback() if locker.in_transaction else None
        locker.close()
    assert outcome["executed"] is False and outcome["claimed"] in (False, None)
    assert executions(log) == 1, "only the set-up call ran"
    assert call(sqlite_base)["value"] == {"charged": True} and executions(log) == 2


def test_a_sqlite_lock_while_saving_is_typed_and_never_reruns(sqlite_base: dict[str, Any], log: Path) -> None:
    runner = spawn(sqlite_base, behaviour="slow", sleep=0.8, timeout=0.3, lease=0.6)
    wait_for_executions(log, 1)
    locker = hold_sqlite_lock(sqlite_base["location"])
    try:
        outcome = typed(finish(runner), "StoreUnavailable")
    finally:
        locker.rollback()
        locker.close()
    assert outcome["executed"] is True and outcome["result_stored"] is False, outcome
    typed(call(sqlite_base, wait=20), "IdempotencyUnknown")  # the outcome was never recorded: unknown, not re-run
    assert executions(log) == 1


def test_a_sqlite_file_deleted_mid_call_is_typed_and_never_reruns(sqlite_base: dict[str, Any], log: Path) -> None:
    runner = spawn(sqlite_base, behaviour="slow", sleep=1.0)
    waiting = spawn(sqlite_base, go_on_stdin=True)  # a long-lived process that opened the store before the deletion
    wait_for_executions(log, 1)
    assert waiting.stdout is not None and waiting.stdout.readline().strip() == "ready"
    for suffix in ("", "-wal", "-shm"):
        Path(sqlite_base["location"] + suffix).unlink(missing_ok=True)
    outcome = typed(finish(runner), "StoreUnavailable")
    assert outcome["executed"] is True and outcome["result_stored"] is False
    assert waiting.stdin is not None
    waiting.stdin.write("go\n")
    waiting.stdin.flush()
    typed(finish(waiting), "StoreUnavailable")
    assert executions(log) == 1
