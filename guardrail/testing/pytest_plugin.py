"""pytest fixtures for the vendor emulator, registered through the ``pytest11`` entry point ``guardrail``.

Fixtures:

- ``vendor_emulator``: a started :class:`~guardrail.testing.Emulator`, stopped after the test.
- ``openai_client`` / ``async_openai_client``: ``openai.OpenAI`` / ``AsyncOpenAI`` pointed at it.
- ``anthropic_client`` / ``async_anthropic_client``: ``anthropic.Anthropic`` / ``AsyncAnthropic`` pointed at it.

The clients use ``api_key="test"``, ``max_retries=0`` (a test scripts every attempt itself) and a
:data:`CLIENT_TIMEOUT` second timeout. The SDKs are imported only when a client fixture is used, so the
plugin costs nothing in projects without them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from guardrail.testing.emulator import Emulator

if TYPE_CHECKING:
    import anthropic
    import openai

__all__ = [
    "CLIENT_TIMEOUT",
    "anthropic_client",
    "async_anthropic_client",
    "async_openai_client",
    "openai_client",
    "vendor_emulator",
]

#: Seconds before a fixture client gives up on a request.
CLIENT_TIMEOUT = 5.0


@pytest.fixture
def vendor_emulator() -> Iterator[Emulator]:
    """A started vendor emulator (schema checks on, no latency), stopped after the test."""
    with Emulator() as emulator:
        yield emulator


@pytest.fixture
def openai_client(vendor_emulator: Emulator) -> Iterator[openai.OpenAI]:
    """A real ``openai.OpenAI`` client talking to ``vendor_emulator``."""
    import openai

    client = openai.OpenAI(
        base_url=vendor_emulator.openai_base_url, api_key="test", max_retries=0, timeout=CLIENT_TIMEOUT
    )
    yield client
    client.close()


@pytest.fixture
def async_openai_client(vendor_emulator: Emulator) -> openai.AsyncOpenAI:
    """A real ``openai.AsyncOpenAI`` client talking to ``vendor_emulator``."""
    import openai

    return openai.AsyncOpenAI(
        base_url=vendor_emulator.openai_base_url, api_key="test", max_retries=0, timeout=CLIENT_TIMEOUT
    )


@pytest.fixture
def anthropic_client(vendor_emulator: Emulator) -> Iterator[anthropic.Anthropic]:
    """A real ``anthropic.Anthropic`` client talking to ``vendor_emulator``."""
    import anthropic

    client = anthropic.Anthropic(
        base_url=vendor_emulator.anthropic_base_url, api_key="test", max_retries=0, timeout=CLIENT_TIMEOUT
    )
    yield client
    client.close()


@pytest.fixture
def async_anthropic_client(vendor_emulator: Emulator) -> anthropic.AsyncAnthropic:
    """A real ``anthropic.AsyncAnthropic`` client talking to ``vendor_emulator``."""
    import anthropic

    return anthropic.AsyncAnthropic(
        base_url=vendor_emulator.anthropic_base_url, api_key="test", max_retries=0, timeout=CLIENT_TIMEOUT
    )
