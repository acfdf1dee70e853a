"""What every test folder shares: hypothesis profiles, the vendor emulators, a tool registry and a redis-server.

Each folder's own ``conftest.py`` holds what only its tests use; importable helpers (plain functions, classes and
constants) live in ``tests/support/`` (on ``sys.path`` through pytest's ``pythonpath`` setting).

Profiles (pick one with ``HYPOTHESIS_PROFILE=...``):

- ``guardrail`` (default): sized so the whole property suite stays well under a minute on two cores;
- ``thorough``: ten times the examples, for a slow local or nightly run;
- ``quick``: a quarter of the examples, chosen automatically for the quick loop ``pytest -m "not slow"``
  (unless ``HYPOTHESIS_PROFILE`` says otherwise); CI and the README's test command run the full profile.

Both set ``deadline=None``: parse time depends on the machine, and a per-example deadline would turn a
slow CI box into flaky failures. Hang guards in the tests themselves are generous, per-input bounds.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings
from support.redis_server import start_redis_server, stop_redis_server, unavailable
from support.tool_env import ToolEnv

if TYPE_CHECKING:
    from guardrail.testing import Emulator

settings.register_profile(
    "guardrail",
    deadline=None,
    max_examples=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "thorough",
    parent=settings.get_profile("guardrail"),
    max_examples=1000,
)
settings.register_profile(
    "quick",
    parent=settings.get_profile("guardrail"),
    max_examples=25,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "guardrail"))


def pytest_configure(config: pytest.Config) -> None:
    if config.option.markexpr.replace(" ", "") == "notslow" and "HYPOTHESIS_PROFILE" not in os.environ:
        settings.load_profile("quick")


@pytest.fixture
def env() -> ToolEnv:
    """A private tool registry over a fresh memory store (tests/support/tool_env.py's ToolEnv)."""
    return ToolEnv()


@pytest.fixture
def emu(guardrail_emulator: Emulator) -> Emulator:
    """The vendor emulator of one test: the guardrail pytest plugin's ``guardrail_emulator`` (a fresh one per
    test, schema checks on, no latency). Tests that need an emulator with special arguments build their own."""
    return guardrail_emulator


@pytest.fixture
def emulators() -> Iterator[tuple[Emulator, Emulator]]:
    """Two vendor emulators of one test (a chain's primary and backup)."""
    from guardrail.testing import Emulator

    with Emulator() as primary, Emulator() as backup:
        yield primary, backup


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``redis://127.0.0.1:PORT/0`` of a private ``redis-server`` started for this session (persistence off).

    If ``redis-server`` (or the redis package) is missing, the tests that use it are skipped with the reason,
    unless ``GUARDRAIL_REQUIRE_REDIS=1`` is set: then they fail, so CI cannot silently lose the Redis coverage."""
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
