"""Shared test configuration: hypothesis profiles and a summary line for the JSONTestSuite timings.

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
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from helpers import ToolEnv
from hypothesis import HealthCheck, settings

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

#: Filled by tests/test_jsontestsuite.py (through the fixture below): file id -> seconds one ``parse`` took.
JSONTESTSUITE_TIMES: dict[str, float] = {}


@pytest.fixture(scope="session")
def jsontestsuite_times() -> dict[str, float]:
    return JSONTESTSUITE_TIMES


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not JSONTESTSUITE_TIMES:
        return
    worst = max(JSONTESTSUITE_TIMES, key=JSONTESTSUITE_TIMES.__getitem__)
    total = sum(JSONTESTSUITE_TIMES.values())
    terminalreporter.write_line(
        f"JSONTestSuite: {len(JSONTESTSUITE_TIMES)} files parsed, "
        f"max {JSONTESTSUITE_TIMES[worst] * 1000:.2f} ms ({worst}), total {total * 1000:.1f} ms"
    )


@pytest.fixture(scope="session")
def tiny() -> Any:
    """A LocalModel over a freshly trained byte-level BPE tokenizer and a random tiny GPT-2 (session-wide)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("llguidance")
    from guardrail.testing.tiny import tiny_local_model

    return tiny_local_model()


@pytest.fixture
def env() -> ToolEnv:
    """A private tool registry over a fresh memory store (tests/helpers.py's ToolEnv)."""
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
