"""Batched grammar-masked generation: rows of different lengths and jump-forward runs share forward passes
and still decode exactly as they would alone; failures are per row and lose nothing."""

from __future__ import annotations

import copy
import re
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("llguidance")

import guardrail  # noqa: E402
from guardrail.errors import ConfigError  # noqa: E402
from guardrail.local import BatchFailed, Grammar, LocalModel, Regex  # noqa: E402
from guardrail.local.grammar import tokenizer_key  # noqa: E402
from guardrail.testing.tiny import tiny_model, train_tokenizer  # noqa: E402


class Item(BaseModel):
    name: str = Field(max_length=10)
    size: Literal["S", "M", "L"]
    count: int = Field(ge=0, le=500)


class Pair(BaseModel):
    left: Item
    right: list[Item] = Field(max_length=2)
    note: str = Field(max_length=6)


class Leaf(BaseModel):
    tag: Literal["x", "yy", "zzz"]
    kids: list[Leaf] = Field(max_length=2)


PROMPTS = ["x", "Reply with JSON for a red shirt, size small, three of them:", "배송이 늦어요. JSON:",
           "{\"name\": \"item 3\", \"count\": 3} -> ", "a b c d e f g h i j k l m n o p q r s t u v w x y z"]


@pytest.fixture(scope="module")
def exact(tiny: LocalModel) -> LocalModel:
    """The session model in float64, so batching (padding) cannot flip a token through rounding."""
    return LocalModel(copy.deepcopy(tiny.model).double(), tiny.tokenizer, device="cpu")


@pytest.mark.parametrize("contract", [Item, Leaf])
@pytest.mark.slow
def test_greedy_batch_rows_equal_their_single_generations(exact: LocalModel, contract: Any) -> None:
    batch, traces = exact.generate_batch_with_traces(PROMPTS, contract, temperature=0, max_new_tokens=120)
    for prompt, value, trace in zip(PROMPTS, batch, traces, strict=True):
        (alone,), (alone_trace,) = exact.generate_batch_with_traces([prompt], contract, temperature=0,
                                                                    max_new_tokens=120)
        assert trace.text == alone_trace.text
        assert repr(value) == repr(alone)  # a value, or the same error (a greedy tree may run out of tokens)
        assert (trace.sampled, trace.forced) == (alone_trace.sampled, alone_trace.forced)


@pytest.mark.slow
def test_sampled_batch_row_i_equals_a_single_generation_seeded_seed_plus_i(exact: LocalModel) -> None:
    values = exact.generate_batch(PROMPTS, Item, temperature=1.0, seed=40, max_new_tokens=120)
    assert all(isinstance(v, Item) for v in values)
    for i, prompt in enumerate(PROMPTS):
        assert values[i] == exact.generate(prompt, Item, temperature=1.0, seed=40 + i, max_new_tokens=120)


@pytest.mark.slow
def test_a_batch_of_sixteen_at_temperature_one_is_all_schema_valid(tiny: LocalModel) -> None:
    prompts = [f"Prompt number {i}: " + "배송 " * (i % 4) for i in range(16)]
    for contract in (Item, Pair):
        values, traces = tiny.generate_batch_with_traces(prompts, contract, temperature=1.0, seed=3,
                                                         max_new_tokens=300)
        assert all(isinstance(v, contract) for v in values), [t.text for t in traces]
        for trace in traces:
            contract.model_validate_json(trace.text)
            assert len(trace.step_forward_seconds) == len(trace.step_mask_seconds) > 0
            assert trace.mask_wait_seconds >= 0 and trace.sampled > 0


@pytest.mark.slow
def test_overlapping_the_mask_with_the_forward_pass_changes_nothing(tiny: LocalModel) -> None:
    kwargs: dict[str, Any] = {"temperature": 1.0, "seed": 11, "max_new_tokens": 200}
    with_overlap = tiny.generate_batch_with_traces(PROMPTS, Leaf, overlap=True, **kwargs)[1]
    without = tiny.generate_batch_with_traces(PROMPTS, Leaf, overlap=False, **kwargs)[1]
    assert [t.text for t in with_overlap] == [t.text for t in without]
    assert [t.stop_reason for t in with_overlap] == [t.stop_reason for t in without]


def test_jump_forward_off_samples_every_token_and_is_still_valid(tiny: LocalModel) -> None:
    value, trace = tiny.generate_with_trace("x", Item, seed=5, jump_forward=False, max_new_tokens=200)
    assert isinstance(value, Item) and trace.forced == 0
    value, trace = tiny.generate_with_trace("x", Item, seed=5, jump_forward=True, max_new_tokens=200)
    assert isinstance(value, Item) and trace.forced > 0


def test_top_k_one_and_a_tiny_top_p_are_greedy(exact: LocalModel) -> None:
    greedy = exact.generate_with_trace("x", Leaf, temperature=0, max_new_tokens=150)[1].text
    assert exact.generate_with_trace("x", Leaf, temperature=1.0, top_k=1, seed=1, max_new_tokens=150)[1].text == greedy
    assert exact.generate_with_trace("x", Leaf, temperature=1.0, top_p=1e-9, seed=2,
                                     max_new_tokens=150)[1].text == greedy


def test_failed_rows_are_reported_with_every_other_rows_value(tiny: LocalModel) -> None:
    prompts = [f"p{i}" for i in range(8)]
    results, traces = tiny.generate_batch_with_traces(prompts, Leaf, temperature=1.0, seed=0, max_new_tokens=12)
    failed = [r for r in results if isinstance(r, Exception)]
    assert failed, "12 tokens should cut off some random trees"
    assert all(isinstance(r, guardrail.TruncatedJSONError) for r in failed)
    assert all(isinstance(r, (Leaf, guardrail.TruncatedJSONError)) for r in results)
    with pytest.raises(BatchFailed) as caught:
        tiny.generate_batch(prompts, Leaf, temperature=1.0, seed=0, max_new_tokens=12)
    assert [type(r) for r in caught.value.results] == [type(r) for r in results]
    assert set(caught.value.errors) == {i for i, r in enumerate(results) if isinstance(r, Exception)}
    assert tiny.generate_batch(prompts, Leaf, temperature=1.0, seed=0, max_new_tokens=12,
                               return_exceptions=True)[0].__class__ is results[0].__class__
    for result, trace in zip(results, traces, strict=True):
        if isinstance(result, Exception):
            assert trace.stop_reason == "max_new_tokens" and result.text == trace.text


def test_a_full_context_is_truncation_not_a_crash() -> None:
    tokenizer = train_tokenizer()
    small = LocalModel(tiny_model(tokenizer, context=24), tokenizer, device="cpu")
    with pytest.raises(guardrail.TruncatedJSONError, match="context"):
        small.generate("a b c d e f g h i j k l m n o p", Leaf, seed=0, max_new_tokens=100)


@pytest.mark.slow
def test_a_rotary_position_model_batches_exactly_too() -> None:
    """Llama-style models take positions from ``position_ids`` (rotary), not a learned table."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer) + 24, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.eos_token_id)
    llama = LocalModel(LlamaForCausalLM(config).double(), tokenizer, device="cpu")
    batch, traces = llama.generate_batch_with_traces(PROMPTS, Item, temperature=0, max_new_tokens=80)
    for prompt, trace in zip(PROMPTS, traces, strict=True):
        assert llama.generate_with_trace(prompt, Item, temperature=0, max_new_tokens=80)[1].text == trace.text
    assert all(isinstance(v, Item) for v in batch)


def test_tokenizer_cache_key_follows_content_not_the_object() -> None:
    first, second = train_tokenizer(), train_tokenizer()
    assert first is not second and tokenizer_key(first) == tokenizer_key(second)
    assert tokenizer_key(train_tokenizer(vocab_size=500)) != tokenizer_key(first)


def test_bad_batch_arguments_are_refused(tiny: LocalModel) -> None:
    with pytest.raises(ValueError):
        tiny.generate_batch("one string", Item)
    with pytest.raises(ValueError):
        tiny.generate_batch([], Item)
    with pytest.raises(ValueError):
        tiny.generate("x", Item, top_p=0)


def test_a_local_model_is_accepted_as_a_chain_tier_and_as_the_decorators_client(tiny: LocalModel) -> None:
    from guardrail.chain.tiers import Chain, safe_default

    chain = Chain([tiny, safe_default({"name": "n", "size": "S", "count": 0})])
    result = chain.run(Item, system="Describe an item.", user="a shirt")
    assert result.tier == "local" and isinstance(result.value, Item)

    @guardrail.structured(client=tiny)
    def describe(text: str) -> Item:
        """Describe the item in the text."""
        raise NotImplementedError

    assert isinstance(describe("a red shirt"), Item)
    assert describe.with_result("a red shirt").tier == "local"
    with pytest.raises(TypeError, match="LocalModel"):
        Chain([object()])  # type: ignore[list-item]


def test_an_async_decorated_function_runs_the_local_model_in_a_worker_thread(tiny: LocalModel) -> None:
    import asyncio

    @guardrail.structured(client=tiny)
    async def describe(text: str) -> Item:
        """Describe the item in the text."""
        raise NotImplementedError

    assert isinstance(asyncio.run(describe("a red shirt")), Item)


@pytest.mark.slow
def test_the_gpu_benchmark_script_runs_its_tiny_configuration_on_cpu() -> None:
    """bench/gpu_local.py is run by hand on a CUDA machine; this keeps it from rotting between such runs."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "gpu_local.py"
    done = subprocess.run([sys.executable, str(script), "--tiny", "--max-new-tokens", "8", "--batches", "1,3"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("mask waited for") == 4 and "batch 3:" in done.stdout


class Long(BaseModel):
    numbers: list[int] = Field(min_length=5000)  # at least 10,000 tokens: cannot finish in 0.05 s


def test_a_timeout_cuts_the_output_off_as_truncated(tiny: LocalModel) -> None:
    with pytest.raises(guardrail.TruncatedJSONError, match="timeout"):
        tiny.generate("x", Long, seed=0, max_new_tokens=100_000, timeout=0.05, temperature=1.0)
    with pytest.raises(ValueError):
        tiny.generate("x", Leaf, timeout=0)


def test_an_output_layer_exactly_the_tokenizers_size_works_too() -> None:
    tokenizer = train_tokenizer()
    exact_size = LocalModel(tiny_model(tokenizer, extra_vocab=0), tokenizer, device="cpu")
    assert exact_size.vocab_size == len(tokenizer)
    values = exact_size.generate_batch([f"p{i}" for i in range(6)], Item, seed=0, max_new_tokens=200)
    assert all(isinstance(v, Item) for v in values)


@pytest.mark.parametrize(("rows", "vocab", "columns"), [(1, 640, 20), (3, 100, 4), (2, 64, 1), (4, 33, 2)])
@pytest.mark.slow
def test_the_plain_mask_fallback_equals_llguidances_compiled_kernel(rows: int, vocab: int, columns: int) -> None:
    import llguidance.torch as masks

    from guardrail.local.decode import plain_apply_mask

    generator = torch.Generator().manual_seed(vocab)
    logits = torch.randn(rows, vocab, generator=generator)
    bitmask = torch.randint(-2**31, 2**31 - 1, (rows, columns), dtype=torch.int32, generator=generator)
    expected, got = logits.clone(), logits.clone()
    masks.apply_token_bitmask_inplace(expected, bitmask)
    plain_apply_mask(got, bitmask)
    assert torch.equal(expected, got)
    assert torch.isinf(got).any()


def test_generation_falls_back_to_plain_masking_when_the_kernel_cannot_compile(
        tiny: LocalModel, monkeypatch: pytest.MonkeyPatch) -> None:
    import llguidance.torch as masks

    from guardrail.local import decode

    def no_compiler(logits: Any, bitmask: Any) -> None:
        raise RuntimeError("InductorError: no C compiler found")  # what torch.compile raises without gcc

    expected = tiny.generate_with_trace("x", Item, seed=9, max_new_tokens=200)[1].text
    monkeypatch.setattr(masks, "apply_token_bitmask_inplace", no_compiler)
    monkeypatch.setattr(decode, "COMPILED_KERNEL", [True])
    value, trace = tiny.generate_with_trace("x", Item, seed=9, max_new_tokens=200)
    assert isinstance(value, Item) and trace.text == expected
    assert decode.COMPILED_KERNEL == [False]


def test_a_model_smaller_than_its_tokenizer_and_streaming_a_local_client_are_clear_errors(tiny: LocalModel) -> None:
    tokenizer = train_tokenizer()
    with pytest.raises(ValueError, match="output layer"):
        LocalModel(tiny_model(tokenizer, extra_vocab=-10), tokenizer, device="cpu")

    @guardrail.structured(client=tiny)
    def describe(text: str) -> Item:
        """Describe the item in the text."""
        raise NotImplementedError

    with pytest.raises(TypeError, match="LocalModel"):
        describe.stream("a red shirt")


# ------------------------------------------------------------------------------ a different contract per row

MIXED: list[Any] = [Item, Regex(r"[a-z]{2,4}-\d\d"), Leaf, Grammar('root ::= "예" | "아니요" | "maybe " [0-9]'), Item]


def test_each_row_gets_its_own_contract_and_decodes_as_alone(exact: LocalModel) -> None:
    batch, traces = exact.generate_batch_with_traces(PROMPTS, output_types=MIXED, temperature=0, max_new_tokens=120)
    for prompt, kind, value, trace in zip(PROMPTS, MIXED, batch, traces, strict=True):
        (alone,), (alone_trace,) = exact.generate_batch_with_traces([prompt], kind, temperature=0, max_new_tokens=120)
        assert trace.text == alone_trace.text and repr(value) == repr(alone)
    assert isinstance(batch[0], Item) and isinstance(batch[4], Item)
    assert re.fullmatch(r"[a-z]{2,4}-\d\d", batch[1]) and re.fullmatch("예|아니요|maybe [0-9]", batch[3])


def test_mixed_rows_at_temperature_one_are_each_valid(tiny: LocalModel) -> None:
    for seed in range(4):
        values = tiny.generate_batch(PROMPTS, output_types=MIXED, seed=seed, max_new_tokens=150,
                                     return_exceptions=True)
        for kind, value in zip(MIXED, values, strict=True):
            if isinstance(value, guardrail.TruncatedJSONError):
                continue  # a recursive Leaf may run out of tokens: reported, never returned
            if isinstance(kind, Regex):
                assert re.fullmatch(kind.pattern, value)
            elif isinstance(kind, Grammar):
                assert re.fullmatch("예|아니요|maybe [0-9]", value)
            else:
                assert isinstance(value, kind)


@pytest.mark.parametrize("options", [{}, {"output_type": Item, "output_types": [Item] * 5},
                                     {"output_types": [Item] * 4}, {"output_types": "abcde"}])
def test_output_type_or_one_output_type_per_row(tiny: LocalModel, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        tiny.generate_batch(PROMPTS, **options)
