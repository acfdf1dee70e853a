"""pytest fixtures for the vendor emulator, registered through the ``pytest11`` entry point ``guardrail``.

Every fixture name starts with ``guardrail_`` so that none can shadow or collide with a fixture of the project
that installed guardrail, and this module imports nothing but pytest when pytest loads it: the emulator and the
SDKs are imported when a fixture is first used. An unrelated project's test run is not affected.

Fixtures:

- ``guardrail_emulator``: a started :class:`~guardrail.testing.Emulator`, stopped after the test.
- ``guardrail_openai`` / ``guardrail_async_openai``: ``openai.OpenAI`` / ``AsyncOpenAI`` pointed at it.
- ``guardrail_anthropic`` / ``guardrail_async_anthropic``: ``anthropic.Anthropic`` / ``AsyncAnthropic``
  pointed at it.
- ``guardrail_gemini``: ``google.genai.Client`` pointed at it (its ``.aio`` is the async client).

The clients use ``api_key="test"``, ``max_retries=0`` (a test scripts every attempt itself; google-genai retries
nothing unless asked) and a :data:`CLIENT_TIMEOUT` second timeout. A client fixture whose SDK is not installed skips
the test, saying which extra to install.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import anthropic
    import google.genai
    import openai

    from guardrail.testing.emulator import Emulator

__all__ = [
    "CLIENT_TIMEOUT",
    "guardrail_anthropic",
    "guardrail_async_anthropic",
    "guardrail_async_openai",
    "guardrail_emulator",
    "guardrail_gemini",
    "guardrail_openai",
]

#: Seconds before a fixture client gives up on a request.
CLIENT_TIMEOUT = 5.0


def _sdk(name: str) -> Any:
    """The vendor SDK module ``name``, or a skip naming the extra that brings it."""
    return pytest.importorskip(name, reason=f"{name} is not installed: pip install 'guardrail-llm[{name}]'")


@pytest.fixture
def guardrail_emulator() -> Iterator[Emulator]:
    """A started vendor emulator (schema checks on, no latency), stopped after the test."""
    from guardrail.testing.emulator import Emulator

    with Emulator() as emulator:
        yield emulator


def _client(emulator: Emulator, sdk: str, cls: str) -> Any:
    """A real ``sdk.cls`` client (``openai.OpenAI``, ``anthropic.AsyncAnthropic``...) talking to ``emulator``."""
    base_url = emulator.anthropic_base_url if sdk == "anthropic" else emulator.openai_base_url
    return getattr(_sdk(sdk), cls)(base_url=base_url, api_key="test", max_retries=0, timeout=CLIENT_TIMEOUT)


@pytest.fixture
def guardrail_openai(guardrail_emulator: Emulator) -> Iterator[openai.OpenAI]:
    """A real ``openai.OpenAI`` client talking to ``guardrail_emulator``."""
    client: openai.OpenAI = _client(guardrail_emulator, "openai", "OpenAI")
    yield client
    client.close()


@pytest.fixture
def guardrail_async_openai(guardrail_emulator: Emulator) -> openai.AsyncOpenAI:
    """A real ``openai.AsyncOpenAI`` client talking to ``guardrail_emulator``."""
    client: openai.AsyncOpenAI = _client(guardrail_emulator, "openai", "AsyncOpenAI")
    return client


@pytest.fixture
def guardrail_anthropic(guardrail_emulator: Emulator) -> Iterator[anthropic.Anthropic]:
    """A real ``anthropic.Anthropic`` client talking to ``guardrail_emulator``."""
    client: anthropic.Anthropic = _client(guardrail_emulator, "anthropic", "Anthropic")
    yield client
    client.close()


@pytest.fixture
def guardrail_async_anthropic(guardrail_emulator: Emulator) -> anthropic.AsyncAnthropic:
    """A real ``anthropic.AsyncAnthropic`` client talking to ``guardrail_emulator``."""
    client: anthropic.AsyncAnthropic = _client(guardrail_emulator, "anthropic", "AsyncAnthropic")
    return client


@pytest.fixture
def guardrail_gemini(guardrail_emulator: Emulator) -> Iterator[google.genai.Client]:
    """A real ``google.genai.Client`` talking to ``guardrail_emulator`` (``client.aio`` for async calls)."""
    genai = pytest.importorskip("google.genai", reason="google-genai is not installed: "
                                "pip install 'guardrail-llm[gemini]'")
    options = genai.types.HttpOptions(base_url=guardrail_emulator.gemini_base_url, timeout=int(CLIENT_TIMEOUT * 1000))
    client: google.genai.Client = genai.Client(api_key="test", http_options=options)
    yield client
    client.close()
