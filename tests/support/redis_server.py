"""A real ``redis-server`` for tests: started on a free port in a temporary directory with persistence off.

The session's server is the ``redis_url`` fixture of ``tests/conftest.py``; tests that restart or stall a server
start their own with these functions. :func:`unavailable` skips a test when Redis is missing, or fails it when
``GUARDRAIL_REQUIRE_REDIS=1`` is set, so CI cannot silently lose the Redis coverage.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = ["free_port", "pings", "start_redis_server", "stop_redis_server", "unavailable"]

#: How long a freshly started server gets to answer PING.
STARTUP_TIMEOUT = 10.0


def unavailable(reason: str) -> NoReturn:
    """Skip, or fail when the environment says Redis is required."""
    if os.environ.get("GUARDRAIL_REQUIRE_REDIS") == "1":
        pytest.fail(f"{reason} (GUARDRAIL_REQUIRE_REDIS=1 requires Redis tests to run)")
    pytest.skip(f"{reason}; set GUARDRAIL_REQUIRE_REDIS=1 to make this a failure")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pings(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def start_redis_server(executable: str, directory: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``redis-server`` on a free port (a few tries: the port can be taken between probe and bind)."""
    last_error = ""
    for attempt in range(3):
        port = free_port()
        log = directory / f"redis-{attempt}.log"
        with log.open("wb") as out:
            command = [executable, "--port", str(port), "--bind", "127.0.0.1"]
            command += ["--save", "", "--appendonly", "no", "--dir", str(directory)]
            process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline and process.poll() is None:
            if pings(port):
                return process, port
            time.sleep(0.02)
        stop_redis_server(process)
        last_error = log.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"redis-server did not answer PING after 3 tries; last log:\n{last_error}")


def stop_redis_server(process: subprocess.Popen[bytes]) -> None:
    """Terminate the server (SIGTERM, then SIGKILL after 5 s) and reap it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
