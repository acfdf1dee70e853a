"""Tests of ``guardrail.call``: the wrapped client on every endpoint (sync, async, streamed), drop-in fidelity and
the SDKs' own suites, the decorator, the attempt loop, re-asks, retries, deadlines and the watchdog, the fault
matrix, and the response cache.

Shared here: ``clean_config``, for tests that set guardrail's process-wide configuration (a module opts in with
``pytestmark = pytest.mark.usefixtures("clean_config")``). SDK clients, wrapped clients and the printer ticket
most tests ask for are in ``tests/support/calls.py``; ``emu``, ``emulators`` and ``redis_url`` come from
``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from guardrail.call import reset_config


@pytest.fixture
def clean_config() -> Iterator[None]:
    """guardrail's configuration as the environment gives it, before and after the test."""
    reset_config()
    yield
    reset_config()
