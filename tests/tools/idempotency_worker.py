"""One process of the idempotency fault tests: run one guarded, idempotent tool call and print what happened.

Usage: ``python tests/tools/idempotency_worker.py '<json config>'``. The config names the store (``kind``: ``sqlite`` or
``redis``, ``location``, ``prefix``, ``timeout``), the call (``key``, ``lease``, ``wait``) and how the tool behaves
(``behaviour``). Every execution of the tool appends one line (``key pid``) to ``log`` with a single ``write()``
on an ``O_APPEND`` file, before doing anything else, so executions are counted exactly even when the process is
killed mid-tool. The last stdout line is JSON: ``{"outcome": "result", "value": ...}``, ``{"outcome": "error",
"type": ..., "guardrail": bool, ...}`` or ``{"outcome": "interrupted"}``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any

import structlog

structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))

import guardrail  # noqa: E402
from guardrail.errors import GuardrailError  # noqa: E402
from guardrail.store import RedisStore, SQLiteStore, Store  # noqa: E402
from guardrail.tools.execute import ToolRegistry, execute_tool_call, tool  # noqa: E402
from guardrail.tools.policy.loader import parse_policy  # noqa: E402

POLICY = 'tool = "act"\nidempotency = "required"\n[[allow]]\nid = "all"\n'


def open_store(config: dict[str, Any]) -> Store:
    if config["kind"] == "redis":
        return RedisStore(config["location"], prefix=config["prefix"], timeout=config.get("timeout", 5.0),
                          check_persistence=False)
    return SQLiteStore(config["location"], timeout=config.get("timeout", 5.0))


def behave(behaviour: str, config: dict[str, Any]) -> Any:
    """What the tool does after its side effect (the log line) happened."""
    if behaviour == "slow":
        time.sleep(config["sleep"])
    elif behaviour == "until":  # runs until the test creates the file named "until"
        for _ in range(6000):
            if os.path.exists(config["until"]):
                break
            time.sleep(0.01)
    elif behaviour == "hang":
        time.sleep(120)
    elif behaviour == "raise":
        raise RuntimeError("the downstream failed after charging")
    elif behaviour == "circular":
        loop: list[Any] = []
        loop.append(loop)
        return loop
    elif behaviour == "bytes":
        return b"\xff\xfe not utf-8"
    elif behaviour == "big":
        return "x" * 2_000_000
    return {"charged": True}


def main() -> None:
    config = json.loads(sys.argv[1])
    registry = ToolRegistry()
    log = config["log"]

    @tool(policy=parse_policy(POLICY), registry=registry)
    def act(order: str) -> Any:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, f"{order} {os.getpid()}\n".encode())
        os.close(fd)
        return behave(config["behaviour"], config)

    outcome: dict[str, Any]
    try:
        store = open_store(config)
        if config.get("go_on_stdin"):  # opened; now wait for the test's signal
            print("ready", flush=True)
            sys.stdin.readline()
        with guardrail.identity(tenant="t", user="u"):
            if config.get("resolve"):
                from guardrail.tools.execute import resolve

                resolved = resolve("act", config["key"], failed=True, registry=registry, store=store)
                print(json.dumps({"outcome": "resolved", "value": resolved}), flush=True)
            value = execute_tool_call("act", {"order": config["key"]}, idempotency_key=config["key"],
                                      registry=registry, store=store, lease=config.get("lease", 30.0),
                                      wait=config.get("wait", 30.0))
        outcome = {"outcome": "result", "value": value}
    except KeyboardInterrupt:
        outcome = {"outcome": "interrupted"}
    except Exception as error:
        outcome = {"outcome": "error", "type": type(error).__name__, "guardrail": isinstance(error, GuardrailError),
                   "message": str(error)}
        for name in ("key", "claimed", "executed", "result_stored", "started_at", "reason", "error_type"):
            if hasattr(error, name):
                outcome[name] = getattr(error, name)
    print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main()
