"""Tests of ``guardrail.batch``: jobs through the real openai, anthropic and google-genai SDKs against the
emulator's batch APIs, their state in a real SQLite file and a real redis-server (``redis_url`` from
tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.batch_jobs import Model

from guardrail.store import SQLiteStore
from guardrail.testing import Emulator


@pytest.fixture
def batch_emu(emu: Emulator) -> Emulator:
    """The test's emulator answering every request with the batch tests' model."""
    emu.responder = Model()
    return emu


@pytest.fixture
def openai_client(batch_emu: Emulator) -> Any:
    import openai

    return openai.OpenAI(base_url=batch_emu.openai_base_url, api_key="sk-test", max_retries=0)


@pytest.fixture
def anthropic_client(batch_emu: Emulator) -> Any:
    import anthropic

    return anthropic.Anthropic(base_url=batch_emu.anthropic_base_url, api_key="sk-ant-test", max_retries=0)


@pytest.fixture
def gemini_client(batch_emu: Emulator) -> Any:
    from google import genai
    from google.genai import types

    return genai.Client(api_key="test", http_options=types.HttpOptions(base_url=batch_emu.gemini_base_url,
                                                                       timeout=5000))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "jobs.db"


@pytest.fixture
def store(db: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(db)
    yield opened
    opened.close()
