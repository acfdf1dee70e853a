"""Usage details and cost: cached and reasoning tokens read from every endpoint (the emulator reports them as each
vendor does), dollars from genai-prices (never a hand-kept price: expectations are asked of the same table), and
dollar budgets kept per attempt."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anthropic
import genai_prices
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import guardrail
from guardrail.errors import PriceUnknown
from guardrail.observe import cost
from guardrail.outcome import Usage
from guardrail.testing import Emulator, reply
from guardrail.vendors.anthropic_messages import messages_usage
from guardrail.vendors.base import count
from guardrail.vendors.openai_chat import chat_usage
from guardrail.vendors.openai_responses import responses_usage


class Contact(BaseModel):
    name: str


FAST = guardrail.RetryPolicy(initial_wait=0.01, max_wait=0.05)
ASK = [{"role": "user", "content": "who?"}]


def _price(provider: str, model: str, usage: Usage) -> float:
    """What genai-prices itself says (the expectation is the table's, not a number kept here)."""
    found = genai_prices.calc_price(genai_prices.Usage(input_tokens=usage.input_tokens,
                                                       output_tokens=usage.output_tokens,
                                                       cache_read_tokens=usage.cached_input_tokens or None,
                                                       cache_write_tokens=usage.cache_write_tokens or None),
                                    model, provider_id=provider)
    return float(found.total_price)


def _call(emu: Emulator, api: str, stream: bool, **extra: Any) -> guardrail.Result[Any]:
    """One structured call on ``api`` (chat / responses / messages), streamed or not, through the real SDKs."""
    if api == "messages":
        raw: Any = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=10)
        method: Any = guardrail.wrap(raw, retry=FAST).messages
        kwargs: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 500, "messages": ASK}
    else:
        raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10)
        wrapped: Any = guardrail.wrap(raw, retry=FAST)
        method = wrapped.chat.completions if api == "chat" else wrapped.responses
        kwargs = {"model": "gpt-4o", **({"messages": ASK} if api == "chat" else {"input": "who?"})}
    kwargs.update(extra)
    if stream:
        kwargs["stream"] = True
    result: guardrail.Result[Any] = method.create_with_result(response_model=Contact, **kwargs)
    return result


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_cached_and_reasoning_tokens_are_read_on_every_endpoint(api: str, stream: bool) -> None:
    write = 30 if api == "messages" else 0  # only Anthropic reports cache writes
    with Emulator() as emu:
        emu.script(reply.answer('{"name": "Ada"}', usage=(1000, 120)).with_usage_details(
            cached=600, cache_write=write, reasoning=80))
        result = _call(emu, api, stream)
    assert result.usage == Usage(1000, 120, cached_input_tokens=600, reasoning_tokens=80, cache_write_tokens=write)


def test_usage_sums_every_detail_across_attempts() -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": 1.5}', usage=(100, 10)).with_usage_details(cached=40, reasoning=5),
                   reply.answer('{"name": "Ada"}', usage=(200, 20)).with_usage_details(cached=50, reasoning=7))
        result = _call(emu, "chat", False)
    assert result.usage == Usage(300, 30, cached_input_tokens=90, reasoning_tokens=12)


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_cost_is_the_price_tables_for_every_billed_attempt(api: str) -> None:
    first = Usage(1000, 50, cached_input_tokens=400)
    second = Usage(1500, 80, cached_input_tokens=400)
    with Emulator() as emu:
        emu.script(reply.rate_limited(retry_after=0),
                   reply.answer('{"name": 1.5}', usage=(1000, 50)).with_usage_details(cached=400),
                   reply.answer('{"name": "Ada"}', usage=(1500, 80)).with_usage_details(cached=400))
        result = _call(emu, api, False)
    provider, model = ("anthropic", "claude-sonnet-4-5") if api == "messages" else ("openai", "gpt-4o")
    expected = _price(provider, model, first) + _price(provider, model, second)
    assert result.cost_usd == pytest.approx(expected, rel=1e-9)
    assert expected > 0


def test_cost_is_priced_at_the_model_that_answered() -> None:
    with Emulator() as emu:  # the emulator echoes the requested model; a dated snapshot is priced as such
        emu.script(reply.answer('{"name": "Ada"}', usage=(1000, 100)))
        result = _call(emu, "chat", False, model="gpt-4o-mini-2024-07-18")
    assert result.attempts[-1].response_model == "gpt-4o-mini-2024-07-18"
    assert result.cost_usd == pytest.approx(_price("openai", "gpt-4o-mini-2024-07-18", Usage(1000, 100)))


def test_unknown_prices_are_none_never_zero() -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": "Ada"}', usage=(10, 5)), reply.answer('{"name": "Ada"}', usage=(10, 5)))
        unpriced = _call(emu, "chat", False, model="no-such-model-anywhere")
        raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10)
        hosted = guardrail.wrap(raw, server="vllm", retry=FAST).chat.completions.create_with_result(
            model="gpt-4o", messages=ASK, response_model=Contact)
    assert unpriced.cost_usd is None
    assert hosted.cost_usd is None  # a self-hosted server has no list price, even for a familiar name


def test_azure_openai_is_its_own_provider_and_priced_as_azure(spans: InMemorySpanExporter) -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": "Ada"}', usage=(1000, 100)))
        raw = openai.AzureOpenAI(base_url=emu.openai_base_url, api_key="test", api_version="2024-10-21", timeout=10)
        result = guardrail.wrap(raw, retry=FAST).chat.completions.create_with_result(
            model="gpt-4o", messages=ASK, response_model=Contact)
    assert result.provider == "azure.ai.openai"
    assert result.cost_usd == pytest.approx(_price("azure", "gpt-4o", Usage(1000, 100)))
    (span,) = spans.get_finished_spans()
    assert dict(span.attributes or {})["gen_ai.provider.name"] == "azure.ai.openai"


def test_cost_goes_on_the_span_and_the_cost_metric(spans: InMemorySpanExporter, collect: Callable[[], Any]) -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": "Ada"}', usage=(1000, 100)).with_usage_details(cached=200))
        result = _call(emu, "chat", False)
    assert result.cost_usd is not None
    (span,) = spans.get_finished_spans()
    assert dict(span.attributes or {})["guardrail.cost.usd"] == pytest.approx(result.cost_usd)
    found = collect()
    assert found.count("guardrail.cost") == pytest.approx(result.cost_usd)


# -- dollar budgets -------------------------------------------------------------------------------------------
def test_a_dollar_budget_stops_before_the_attempt_that_could_pass_it() -> None:
    rate = cost.usd_per_token("openai", "gpt-4o")  # the dearer of input and output, per token
    first = _price("openai", "gpt-4o", Usage(2000, 500))
    budget = guardrail.Budget(max_usd=first + 20 * rate)  # after attempt 1, room for 20 tokens: too few
    with Emulator() as emu:
        emu.script(reply.answer('{"name": 1.5}', usage=(2000, 500)), reply.answer('{"name": "Ada"}'))
        with pytest.raises(guardrail.BudgetExceeded) as caught:
            _call(emu, "chat", False, budget=budget)
        sent = emu.requests
    assert len(sent) == 1 and caught.value.outcome.vendor_calls == 1
    # the first request's output limit was lowered to what the dollars allowed at the dearer rate
    limit = sent[0].body["max_completion_tokens"]
    assert 0 < limit <= (first + 20 * rate) / rate


def test_a_dollar_budget_that_is_enough_lets_the_call_through() -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": 1.5}', usage=(100, 10)), reply.answer('{"name": "Ada"}', usage=(100, 10)))
        result = _call(emu, "chat", False, budget=guardrail.Budget(max_usd=1.0))
    assert result.value == Contact(name="Ada") and result.cost_usd is not None and result.cost_usd < 1.0


def test_a_dollar_budget_on_an_unpriced_model_sends_nothing() -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": "Ada"}'))
        with pytest.raises(PriceUnknown) as caught:
            _call(emu, "chat", False, model="no-such-model-anywhere", budget=guardrail.Budget(max_usd=1.0))
        assert emu.requests == []
    assert caught.value.model == "no-such-model-anywhere" and isinstance(caught.value, guardrail.GuardrailError)


def test_a_dollar_budget_holds_for_async_clients_too() -> None:
    async def run(emu: Emulator) -> None:
        raw = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10)
        client = guardrail.wrap(raw, retry=FAST)
        await client.chat.completions.create(model="gpt-4o", messages=ASK, response_model=Contact,
                                             budget=guardrail.Budget(max_usd=1e-9))

    with Emulator() as emu:
        emu.script(reply.answer('{"name": "Ada"}'))
        with pytest.raises(guardrail.BudgetExceeded):
            asyncio.run(run(emu))
        assert emu.requests == []


def test_budget_rejects_a_negative_dollar_cap() -> None:
    with pytest.raises(ValueError, match="max_usd"):
        guardrail.Budget(max_usd=-1)


# -- reading usage never trips on what a vendor sends ---------------------------------------------------------
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                         st.sampled_from(["prompt_tokens", "completion_tokens", "input_tokens", "output_tokens",
                                          "prompt_tokens_details", "cached_tokens", "completion_tokens_details",
                                          "reasoning_tokens", "cache_read_input_tokens", "output_tokens_details",
                                          "cache_creation_input_tokens", "thinking_tokens", "input_tokens_details"]),
                         inner, max_size=6), max_leaves=12)


@given(_JSON)
def test_usage_readers_take_any_json_and_count_only_integers(usage: Any) -> None:
    for read in (chat_usage, responses_usage, messages_usage):
        found = read(usage)
        assert all(isinstance(getattr(found, name), int) and not isinstance(getattr(found, name), bool)
                   for name in ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens",
                                "cache_write_tokens"))
    assert count(usage, "no_such_field") == 0


def test_a_chain_dollar_budget_is_shared_across_its_tiers() -> None:
    from guardrail.chain import Chain, safe_default, vendor

    first = _price("openai", "gpt-4o", Usage(2000, 500))
    rate = cost.usd_per_token("openai", "gpt-4o")
    with Emulator() as emu:
        raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10, max_retries=0)
        chain = Chain([vendor(raw, "gpt-4o", name="primary", max_attempts=1, retry=FAST),
                       vendor(raw, "gpt-4o", name="backup", retry=FAST),
                       safe_default(Contact(name="nobody"), name="fallback")],
                      budget=guardrail.Budget(max_usd=first + 20 * rate))
        emu.script(reply.answer('{"name": 1.5}', usage=(2000, 500)), reply.answer('{"name": "Ada"}'))
        result = chain.create_with_result(response_model=Contact, messages=ASK)
        assert len(emu.requests) == 1  # the backup was stopped by what the primary spent
    assert result.tier == "fallback"
    assert [departure.tier for departure in result.departures] == ["primary", "backup"]
    assert isinstance(result.departures[1].error, guardrail.BudgetExceeded)
