"""The rows that name every vendor batch API: which :class:`~guardrail.vendors.batches.BatchApi` batches an
endpoint's requests for a client of an SDK. :mod:`guardrail.batch` finds a vendor's batch API here, never by its
name; adding one adds its module and a row of :data:`BATCH_APIS`."""

from __future__ import annotations

from collections.abc import Callable

from guardrail.errors import ConfigError
from guardrail.vendors.anthropic_batch import AnthropicBatch
from guardrail.vendors.batches import BatchApi
from guardrail.vendors.gemini_batch import GeminiBatch
from guardrail.vendors.openai_batch import OpenAIBatch

__all__ = ["BATCH_APIS", "batch_api"]


def _openai_batch(api: str) -> BatchApi | None:
    return OpenAIBatch(api) if api in ("chat", "responses") else None


def _anthropic_batch(api: str) -> BatchApi | None:
    return AnthropicBatch() if api == "messages" else None


def _gemini_batch(api: str) -> BatchApi | None:
    return GeminiBatch() if api == "gemini" else None


#: The vendors' batch APIs: each row makes the batch API for an endpoint's ``api`` (``None``: not its API).
BATCH_APIS: tuple[Callable[[str], BatchApi | None], ...] = (_openai_batch, _anthropic_batch,
                                                                _gemini_batch)


def batch_api(sdk: str, api: str) -> BatchApi:
    """The batch API that batches ``api`` requests for clients of ``sdk`` (a row of :data:`BATCH_APIS`); a
    :class:`~guardrail.errors.ConfigError` when that vendor has none for that API."""
    for make in BATCH_APIS:
        found = make(api)
        if found is not None and found.sdk == sdk:
            return found
    raise ConfigError(f"no batch API for {sdk} {api!r} requests")
