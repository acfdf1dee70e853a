"""execute_tool_call across processes: two processes sharing one Redis (and one SQLite file) run a
side-effecting tool once per idempotency key, however many threads in each race for it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

WORKER = textwrap.dedent("""
    import logging, os, sys, threading, time
    import structlog
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    import guardrail
    from guardrail.tools.policy.loader import parse_policy
    from guardrail.store import RedisStore, SQLiteStore
    from guardrail.tools.execute import ToolRegistry, execute_tool_call, tool

    kind, where, log, start_at = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    store = RedisStore(where) if kind == "redis" else SQLiteStore(where)
    registry = ToolRegistry()
    policy = parse_policy('tool = "charge"\\nidempotency = "required"\\n[[allow]]\\nid = "all"\\n')

    @tool(policy=policy, registry=registry)
    def charge(order: str, amount: float) -> str:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{order}\\n".encode())
        os.close(fd)
        time.sleep(0.02)
        return f"charged {order}"

    def worker():
        with guardrail.identity(tenant="t", user="u"):
            for key in range(10):
                result = execute_tool_call("charge", {"order": f"o{key}", "amount": 5.0},
                                           idempotency_key=f"k{key}", registry=registry, store=store)
                assert result == f"charged o{key}", result

    time.sleep(max(0.0, start_at - time.time()))
    threads = [threading.Thread(target=worker) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print("ok")
""")


def race(kind: str, where: str, tmp_path: Path) -> Counter[str]:
    import time

    log = tmp_path / "executions.log"
    start_at = time.time() + 2.0
    processes = [subprocess.Popen([sys.executable, "-c", WORKER, kind, where, str(log), str(start_at)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
                 for _ in range(2)]
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0 and out.strip().endswith("ok"), err[-2000:]
    return Counter(log.read_text().split())


@pytest.mark.slow
def test_two_processes_sharing_redis_execute_each_key_once(redis_url: str, tmp_path: Path) -> None:
    counts = race("redis", redis_url, tmp_path)
    assert counts == Counter({f"o{i}": 1 for i in range(10)})


@pytest.mark.slow
def test_two_processes_sharing_a_sqlite_file_execute_each_key_once(tmp_path: Path) -> None:
    counts = race("sqlite", str(tmp_path / "store.db"), tmp_path)
    assert counts == Counter({f"o{i}": 1 for i in range(10)})


@pytest.mark.parametrize("kind", ["redis"])
def test_idempotency_with_different_arguments_is_a_conflict_across_processes(redis_url: str, kind: str) -> None:
    import guardrail
    from guardrail.store import IdempotencyConflict, RedisStore
    from guardrail.tools.execute import ToolRegistry, execute_tool_call, tool
    from guardrail.tools.policy.loader import parse_policy

    registry = ToolRegistry()

    @tool(policy=parse_policy('tool = "charge"\nidempotency = "required"\n[[allow]]\nid = "all"\n'),
          registry=registry)
    def charge(order: str, amount: float) -> str:
        return f"charged {order} {amount}"

    store = RedisStore(redis_url)
    with guardrail.identity(user="u"):
        assert execute_tool_call("charge", {"order": "x", "amount": 1.0}, idempotency_key="conflict-key",
                                 registry=registry, store=store) == "charged x 1.0"
        with pytest.raises(IdempotencyConflict):
            execute_tool_call("charge", {"order": "x", "amount": 2.0}, idempotency_key="conflict-key",
                              registry=registry, store=store)
