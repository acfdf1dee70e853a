"""Benchmark of local constrained decoding (issue 7). Prints medians and ratios measured in this one run.

    python bench/bench_local.py            # about two minutes on two CPU cores
    python bench/bench_local.py --quick    # fewer generations

What it measures, on a randomly initialised GPT-2 (4 layers, width 256) over a freshly trained 32,000-id
byte-level BPE tokenizer (nothing downloaded):

- compile time of the contract's grammar: cold (caches cleared) and cached, plus the one-off llguidance
  tokenizer build;
- per-token mask time (median, p95) beside the forward time of the same model, batch 1 and batch 16, and the
  part of the mask time the loop waits for when masks are computed while the forward pass runs;
- tokens per second with and without jump-forward;
- guardrail's loop (``LocalModel.generate``, which also parses and validates) against a bare llguidance loop
  (forward, fill mask, apply, argmax, consume) on the same model, schema and prompts, greedy so both produce
  the same tokens. Target: at most 1.1x the bare loop's time.

Not a test: nothing here asserts on time. Read the table. GPU numbers: bench/gpu_local.py.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Literal

import torch
from pydantic import BaseModel, Field

from guardrail.contract import compile_contract
from guardrail.local import LocalModel
from guardrail.local.decode import forward_pass
from guardrail.local.grammar import clear_caches, compile_grammar, lltokenizer
from guardrail.testing.tiny import tiny_model, train_tokenizer


class Item(BaseModel):
    name: str = Field(max_length=16)
    size: Literal["small", "medium", "large"]
    count: int = Field(ge=0, le=1000)
    tags: list[Literal["new", "sale", "gift"]] = Field(max_length=3)


class Line(BaseModel):
    sku: str = Field(max_length=10)
    quantity: int = Field(ge=1, le=99)


class Invoice(BaseModel):
    customer: str = Field(max_length=20)
    status: Literal["draft", "sent", "paid", "overdue"]
    lines: list[Line] = Field(min_length=1, max_length=3)
    note: str | None = Field(default=None, max_length=12)


class Korean(BaseModel):
    요약: str = Field(max_length=12)
    긴급도: int = Field(ge=1, le=5)


CONTRACTS: list[Any] = [Item, Invoice, Korean]
PROMPTS = ["Describe the item as JSON:", "Invoice for ACME, two lines, sent:", "배송이 늦어요. 요약과 긴급도:"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


def bare_loop(local: LocalModel, grammar: str, prompt: str, max_new_tokens: int) -> str:
    """The minimal llguidance loop: no jump-forward, no parse, no traces, no threads, greedy."""
    import llguidance
    import llguidance.torch as masks

    model, tokenizer = local.model, local.tokenizer
    matcher = llguidance.LLMatcher(lltokenizer(tokenizer, local.vocab_size), grammar)
    bitmask = masks.allocate_token_bitmask(1, local.vocab_size)
    pending = list(tokenizer(prompt)["input_ids"])
    produced: list[int] = []
    cache = None
    while len(produced) < max_new_tokens:
        with torch.no_grad():
            out, cache = forward_pass(model, cache, input_ids=torch.tensor([pending]), logits_to_keep=1)
        logits = out.logits[0, -1:].float()
        masks.fill_next_token_bitmask(matcher, bitmask, 0)
        masks.apply_token_bitmask_inplace(logits, bitmask)
        token = int(logits[0].argmax())
        matcher.consume_token(token)
        produced.append(token)
        if matcher.is_stopped():
            break
        pending = [token]
    text: str = tokenizer.decode([t for t in produced if t != tokenizer.eos_token_id])
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer generations")
    parser.add_argument("--vocab", type=int, default=32000, help="tokenizer size (default 32000)")
    args = parser.parse_args()
    runs = 3 if args.quick else 9
    torch.set_num_threads(max(1, torch.get_num_threads()))

    started = time.perf_counter()
    tokenizer = train_tokenizer(args.vocab)
    print(f"tokenizer: {len(tokenizer)} ids, trained in {time.perf_counter() - started:.1f} s")
    local = LocalModel(tiny_model(tokenizer, layers=4, width=256, extra_vocab=64), tokenizer, device="cpu")
    params = sum(p.numel() for p in local.model.parameters()) / 1e6
    print(f"model: GPT-2, 4 layers, width 256, {params:.1f} M parameters, vocab {local.vocab_size}, "
          f"torch threads {torch.get_num_threads()}")

    print("\n== compile ==")
    clear_caches()
    started = time.perf_counter()
    lltokenizer(tokenizer, local.vocab_size)
    print(f"llguidance tokenizer build (once per tokenizer): {ms(time.perf_counter() - started)}")
    for contract in CONTRACTS:
        compiled = compile_contract(contract)
        cold, cached = [], []
        for _ in range(runs):
            clear_caches()
            lltokenizer(tokenizer, local.vocab_size)
            t0 = time.perf_counter()
            compile_grammar(compiled.schema, compiled.schema_hash, tokenizer, local.vocab_size)
            cold.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            hit = compile_grammar(compiled.schema, compiled.schema_hash, tokenizer, local.vocab_size)
            cached.append(time.perf_counter() - t0)
            assert hit.cache_hit
        print(f"{contract.__name__:8} cold {ms(statistics.median(cold))}   cached {ms(statistics.median(cached))}"
              f"   ratio {statistics.median(cold) / statistics.median(cached):8.0f}x")

    print("\n== per-token mask vs forward (batch 1, mask not overlapped) ==")
    mask_steps: list[float] = []
    forward_steps: list[float] = []
    for contract, prompt in zip(CONTRACTS, PROMPTS, strict=True):
        for seed in range(runs):
            _, [trace] = local.generate_batch_with_traces([prompt], contract, seed=seed, max_new_tokens=200,
                                                          overlap=False)
            mask_steps += trace.step_mask_seconds
            forward_steps += trace.step_forward_seconds
    print(f"mask    median {ms(statistics.median(mask_steps))}  p95 {ms(percentile(mask_steps, 0.95))}"
          f"   ({len(mask_steps)} steps)")
    print(f"forward median {ms(statistics.median(forward_steps))}  p95 {ms(percentile(forward_steps, 0.95))}")
    print(f"mask / forward (medians): {statistics.median(mask_steps) / statistics.median(forward_steps):.3f}")

    print("\n== batch 16: mask time as a fraction of the decode step ==")
    prompts = [f"{PROMPTS[i % 3]} #{i}" for i in range(16)]
    local.generate_batch_with_traces(prompts, Invoice, seed=99, max_new_tokens=200)  # warm up batch-16 shapes
    for overlap in (False, True):
        computed: list[float] = []
        waited: list[float] = []
        forwards: list[float] = []
        whole: list[float] = []
        for seed in range(max(2, runs // 2)):
            _, traces = local.generate_batch_with_traces(prompts, Invoice, seed=seed, max_new_tokens=200,
                                                         overlap=overlap)
            longest = max(traces, key=lambda t: len(t.step_forward_seconds))  # it saw every step of the batch
            step = longest.forward_seconds + longest.mask_wait_seconds
            computed.append(longest.mask_seconds / step)
            waited.append(longest.mask_wait_seconds / step)
            forwards += longest.step_forward_seconds
            whole += longest.step_seconds
        print(f"overlap={overlap!s:5}  step median {ms(statistics.median(whole))}  forward median "
              f"{ms(statistics.median(forwards))}   mask computed "
              f"{statistics.median(computed):.3f} of the step, waited for {statistics.median(waited):.3f}")

    print("\n== jump-forward ==")
    for jump in (False, True):
        tokens = 0
        forced = 0
        t0 = time.perf_counter()
        for contract, prompt in zip(CONTRACTS, PROMPTS, strict=True):
            for seed in range(runs):
                _, trace = local.generate_with_trace(prompt, contract, seed=seed, max_new_tokens=200,
                                                     jump_forward=jump)
                tokens += trace.sampled + trace.forced
                forced += trace.forced
        elapsed = time.perf_counter() - t0
        print(f"jump_forward={jump!s:5}  {tokens / elapsed:8.1f} tokens/s  ({forced}/{tokens} forced)")

    print("\n== guardrail loop vs bare llguidance loop (greedy, same tokens) ==")
    for contract, prompt in zip(CONTRACTS, PROMPTS, strict=True):
        compiled = compile_contract(contract)
        grammar = compile_grammar(compiled.schema, compiled.schema_hash, tokenizer, local.vocab_size).grammar
        bare_times, ours_same, ours_default = [], [], []
        same = True
        for _ in range(runs):
            t0 = time.perf_counter()
            expected = bare_loop(local, grammar, prompt, 200)
            bare_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            _, trace = local.generate_with_trace(prompt, contract, temperature=0, max_new_tokens=200,
                                                 jump_forward=False)
            ours_same.append(time.perf_counter() - t0)
            same = same and trace.text == expected
            t0 = time.perf_counter()
            local.generate_with_trace(prompt, contract, temperature=0, max_new_tokens=200)
            ours_default.append(time.perf_counter() - t0)
        bare = statistics.median(bare_times)
        print(f"{contract.__name__:8} bare {ms(bare)}  guardrail (no jump-forward) {ms(statistics.median(ours_same))}"
              f" = {statistics.median(ours_same) / bare:.3f}x   guardrail (default) "
              f"{ms(statistics.median(ours_default))} = {statistics.median(ours_default) / bare:.3f}x"
              f"   same text: {same}")


if __name__ == "__main__":
    main()
