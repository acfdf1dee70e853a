"""Tests of ``guardrail.replay``: recording structured calls (the wrapper on every SDK, sync and async, the
decorator, the chain) through the real SDK clients against the vendor emulator, and replaying the recordings under
changed contracts, from Python and from the ``guardrail replay`` command.

Shared here: ``recording``, a JSONL path in the test's temporary directory. The contracts and helpers the tests
share are in ``tests/support/replay_contracts.py`` (the command imports the contracts from there by name).
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    """Where the test's calls are recorded (not created until the first record)."""
    return tmp_path / "calls.jsonl"
