"""Fixtures of the canary tests: the OpenTelemetry SDK (``spans``, ``collect`` from ``support.otel``) and the
stores a canary shares its counts through (a SQLite file in the test's directory, the session's redis-server).

The contracts, the emulator responder and the routing-key helpers are in ``tests/support/canary_arms.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.canary_worker import SharedStore
from support.otel import collect, spans

from guardrail.call import reset_config

__all__ = ["clean_config", "collect", "shared", "spans"]


@pytest.fixture(autouse=True)
def clean_config() -> Iterator[None]:
    reset_config()
    yield
    reset_config()


@pytest.fixture(params=["sqlite", "redis"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SharedStore]:
    """One shared store per test: the same SQLite file, or the session's redis-server under a fresh prefix."""
    if request.param == "redis":
        found = SharedStore("redis", str(request.getfixturevalue("redis_url")), f"test:{uuid.uuid4().hex[:12]}:")
    else:
        found = SharedStore("sqlite", str(tmp_path / "canary.db"), "")
    yield found
    for store in found.opened:
        store.close()
