"""Local constrained decoding with a tiny, randomly initialised transformers model and a freshly trained
byte-level BPE tokenizer (nothing downloaded). Random weights make the model adversarial: whatever it
"wants", the grammar mask must only let schema-valid JSON out."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("llguidance")

import guardrail  # noqa: E402
from guardrail.local import LocalModel, Uncertain  # noqa: E402


class Flat(BaseModel):
    name: str = Field(max_length=12)
    count: int = Field(ge=0, le=99)
    ok: bool


class Color(StrEnum):
    red = "red"
    green = "green"
    blue = "blue"


class Pick(BaseModel):
    color: Color
    size: Literal["S", "M", "L"]


class Bounded(BaseModel):
    score: int = Field(ge=-100, le=100)
    tags: list[Literal["a", "b", "c"]] = Field(min_length=1, max_length=3)


class Inner(BaseModel):
    x: int = Field(ge=-5, le=5)


class Nested(BaseModel):
    inner: Inner
    items: list[Inner] = Field(max_length=2)


class Tree(BaseModel):
    label: Literal["a", "b"]
    children: list[Tree] = Field(max_length=1)


class Korean(BaseModel):
    설명: str = Field(max_length=8)


CONTRACTS: list[tuple[Any, int]] = [(Flat, 40), (Pick, 30), (Bounded, 30), (Nested, 30), (Tree, 30),
                                    (Korean, 40)]


@pytest.mark.parametrize(("contract", "count"), CONTRACTS, ids=[c.__name__ for c, _ in CONTRACTS])
@pytest.mark.slow
def test_every_generation_at_temperature_one_is_schema_valid(tiny: LocalModel, contract: Any, count: int) -> None:
    for seed in range(count):
        value, trace = tiny.generate_with_trace("Reply with JSON:", contract, temperature=1.0,
                                                max_new_tokens=400, seed=seed)
        assert isinstance(value, contract)
        contract.model_validate_json(trace.text)  # the raw text itself is valid, no repair needed
        assert trace.text == trace.text.strip() and "\n" not in trace.text  # compact JSON
        assert trace.sampled > 0


def test_total_generations_reach_the_issue_target() -> None:
    assert sum(count for _, count in CONTRACTS) >= 200


@pytest.mark.slow
def test_jump_forward_forces_the_predictable_tokens_and_grammars_are_cached(tiny: LocalModel) -> None:
    _, first = tiny.generate_with_trace("x", Pick, seed=1)
    _, second = tiny.generate_with_trace("x", Pick, seed=2)
    assert first.forced > 0  # keys and punctuation were appended without sampling
    assert second.grammar_cache_hit  # compiled once per (schema, engine version, tokenizer)
    assert first.report is not None and first.report.ok


def test_seeded_generation_is_deterministic(tiny: LocalModel) -> None:
    a = tiny.generate_with_trace("x", Flat, seed=7)[1].text
    b = tiny.generate_with_trace("x", Flat, seed=7)[1].text
    assert a == b


def test_hitting_the_token_limit_is_truncated_not_closed_up(tiny: LocalModel) -> None:
    with pytest.raises(guardrail.TruncatedError) as caught:
        tiny.generate("x", Nested, max_new_tokens=3, seed=0)
    assert caught.value.text and not caught.value.text.endswith("}")


def test_greedy_decoding_is_valid_too(tiny: LocalModel) -> None:
    assert isinstance(tiny.generate("x", Tree, temperature=0, max_new_tokens=400), Tree)


def test_choose_gives_a_distribution_that_sums_to_one_and_handles_shared_prefixes(tiny: LocalModel) -> None:
    options = ["billing", "billing dispute", "shipping", "배송"]
    choice = guardrail.choose("Category of: my parcel is late ->", options, backend=tiny)
    assert set(choice.probabilities) == set(options)
    assert abs(sum(choice.probabilities.values()) - 1.0) < 1e-6
    assert all(0 < p < 1 for p in choice.probabilities.values())
    assert choice.probabilities["billing"] != choice.probabilities["billing dispute"]  # scored in full


def test_choose_ranks_an_option_first_when_the_logits_favour_it(tiny: LocalModel) -> None:
    token = tiny.tokenizer("shipping")["input_ids"]
    bias = torch.zeros(tiny.vocab_size)
    bias[token] = 50.0  # make the model love the tokens of "shipping"
    head = tiny.model.lm_head
    original = head.bias
    head.bias = torch.nn.Parameter(bias)
    try:
        choice = guardrail.choose("Category:", ["billing", "shipping", "account"], backend=tiny)
    finally:
        head.bias = original
    assert choice.best == "shipping" and choice.confidence > 0.99


def test_low_confidence_is_a_typed_uncertain_outcome(tiny: LocalModel) -> None:
    with pytest.raises(Uncertain) as caught:
        guardrail.choose("Category:", ["a1", "b2", "c3", "d4", "e5"], backend=tiny, threshold=0.999)
    assert abs(sum(caught.value.choice.probabilities.values()) - 1) < 1e-6
    with pytest.raises(ValueError):
        guardrail.choose("x", ["same", "same"], backend=tiny)


def test_a_local_model_is_a_tier_of_the_chain(tiny: LocalModel) -> None:
    import openai

    from guardrail.chain.tiers import Chain, local, safe_default, vendor
    from guardrail.testing import Emulator, reply

    with Emulator() as emu:
        emu.responder = lambda request: reply.server_error(503)
        chain = Chain([
            vendor(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), "gpt-4o",
                   retry=guardrail.RetryPolicy(max_tries=1)),
            local(tiny, max_new_tokens=400),
            safe_default({"color": "red", "size": "S"}),
        ])

        @guardrail.structured(chain=chain)
        def pick(description: str) -> Pick:
            """Pick a colour and a size."""
            raise NotImplementedError

        result = pick.with_result("a small red shirt")
    assert result.tier == "local" and isinstance(result.value, Pick) and not result.degraded
    assert [d.tier for d in result.departures] == ["openai:gpt-4o"]
