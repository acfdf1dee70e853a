"""A real ``redis-server`` for tests: the ``redis_url`` fixture (import it into a test module to use it).

The server runs on a free port in a temporary directory with persistence off, for the whole session, and is shut
down at the end. If ``redis-server`` (or the redis package) is missing, tests that use it are skipped with the
reason, unless ``GUARDRAIL_REQUIRE_REDIS=1`` is set: then they fail, so CI cannot silently lose the Redis coverage.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = ["redis_url", "start_redis_server", "stop_redis_server"]

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


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``redis://127.0.0.1:PORT/0`` of a private ``redis-server`` started for this session."""
    executable = shutil.which("redis-server")
    if executable is None:
        unavailable("redis-server is not on PATH")
    try:
        import redis  # noqa: F401
    except ImportError:
        unavailable("the redis package (redis-py) is not installed")
    process, port = start_redis_server(executable, tmp_path_factory.mktemp("redis"))
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        stop_redis_server(process)
