"""What tokens cost in US dollars, from the maintained ``genai-prices`` table (the ``cost`` extra).

guardrail keeps no prices of its own: :func:`usd` asks ``genai_prices.calc_price`` for one request's usage
(input with its cache reads and writes, output), at the model that answered. The table's provider ids differ
from the ``gen_ai.provider.name`` values in a few places (``azure.ai.openai`` is ``azure`` there); self-hosted
servers (``vllm``, ``ollama``...) have no price, so their cost is unknown, never zero.

Without the extra installed, every cost is ``None`` (unknown) and importing this module loads nothing: the
package (about 0.7 s to import, for its price data) is imported on the first price asked for. A dollar budget
(``Budget(max_usd=...)``) needs the price, so there a missing extra is a
:class:`~guardrail.errors.MissingExtra` and an unknown model a :class:`~guardrail.errors.PriceUnknown`.
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from types import ModuleType
from typing import Any

from guardrail._optional import require
from guardrail.errors import PriceUnknown
from guardrail.outcome import Usage

__all__ = ["AZURE_OPENAI", "available", "usd", "usd_per_token"]

#: ``gen_ai.provider.name`` of Azure OpenAI in the GenAI semantic conventions (an ``openai.AzureOpenAI`` client's
#: calls: :func:`guardrail.observe.telemetry.target_of`); genai-prices names it ``azure``.
AZURE_OPENAI = "azure.ai.openai"

#: ``gen_ai.provider.name`` -> the genai-prices provider id (names not listed have no price).
PROVIDERS = {"openai": "openai", "anthropic": "anthropic", AZURE_OPENAI: "azure",
             # the Gemini API (genai-prices has one table for Google's models, Vertex AI's included)
             "gcp.gemini": "google",
             # Claude on the cloud platforms, and the hosted OpenAI-compatible providers (guardrail.vendors.profiles)
             "aws.bedrock": "aws", "gcp.vertex_ai": "google", "groq": "groq", "together": "together",
             "fireworks": "fireworks", "deepseek": "deepseek", "mistral_ai": "mistral", "openrouter": "openrouter",
             "x_ai": "x-ai"}


@functools.cache
def available() -> bool:
    """Whether the ``cost`` extra (``genai-prices``) is installed (checked once, without importing it)."""
    return importlib.util.find_spec("genai_prices") is not None


@functools.lru_cache(maxsize=4096)
def usd(usage: Usage, provider: str, model: str) -> float | None:
    """What ``usage`` cost at ``model`` of ``provider``, in US dollars; ``None`` when unknown (no extra, a
    provider or model the table does not price). Nothing billed costs 0.0. Memoised: one price computation
    costs about 0.4 ms, and calls with the same prompt report the same usage again and again."""
    if not usage.total_tokens:
        return 0.0
    priced = PROVIDERS.get(provider)
    if priced is None or not model or not available():
        return None
    prices = _prices()
    try:
        found = prices.calc_price(_usage(prices, usage), model, provider_id=priced)
    except LookupError:
        return None
    return float(found.total_price)


def usd_per_token(provider: str, model: str) -> float:
    """The dearer of the model's input and output price per token, in US dollars: what a dollar budget turns
    into tokens at. :class:`~guardrail.errors.MissingExtra` without the extra; :class:`PriceUnknown` when the
    table does not price the model."""
    priced = PROVIDERS.get(provider)
    if priced is None or not model:
        raise PriceUnknown(f"no price for provider {provider!r}: Budget(max_usd=...) needs a priced model "
                           f"(genai-prices prices {', '.join(sorted(PROVIDERS))})", provider=provider, model=model)
    require("genai_prices", "cost", "Budget(max_usd=...)")
    try:
        return _rate(priced, model)
    except LookupError as error:
        raise PriceUnknown(f"genai-prices has no price for model {model!r} of {priced!r}, so Budget(max_usd=...) "
                           f"cannot be kept: {error}", provider=provider, model=model) from None


@functools.lru_cache(maxsize=256)
def _rate(provider_id: str, model: str) -> float:
    """A million input tokens' and a million output tokens' price, the dearer, per token (cached per model)."""
    prices = _prices()
    million = 1_000_000
    dearer = max(prices.calc_price(prices.Usage(input_tokens=million), model, provider_id=provider_id).total_price,
                 prices.calc_price(prices.Usage(output_tokens=million), model, provider_id=provider_id).total_price)
    return float(dearer) / million


def _prices() -> ModuleType:
    return require("genai_prices", "cost", "cost in US dollars")


def _usage(prices: ModuleType, usage: Usage) -> Any:
    """genai-prices' usage: its ``input_tokens`` include the cache buckets, as guardrail's do."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return prices.Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                            cache_read_tokens=usage.cached_input_tokens or None,
                            cache_write_tokens=usage.cache_write_tokens or None)
