"""Benchmark: per-call compile time of a per-request enum on the local tier (issue 28). Prints medians and ratios
measured in this one run.

    python bench/bench_enum_compile.py           # about a minute on two CPU cores
    python bench/bench_enum_compile.py --quick   # fewer calls

The contract: an invoice-like model (a fixed part of a dozen fields, nested lines, bounded strings and numbers)
whose ``product_id`` must be one of the IDs retrieved for this request: 10, 1,000 or 10,000 fresh IDs per call.
Each call's work is what :meth:`LocalModel.generate` does before its first forward pass (``LocalModel._plan``:
contract, grammar, matcher), over a freshly trained 32,000-id byte-level BPE tokenizer:

- **recompile** (the baseline): a contract built per call (``create_model`` with ``Literal[*ids]``, not timed),
  compiled from scratch: contract, schema lowering and engine validation (a cache miss: new schema each call),
  then the matcher;
- **per-request enum**: the fixed contract from the cache, ``enums={"product_id": ids}`` spliced into its
  cached engine schema as a JSON ``enum``, then the matcher (its share is printed apart: llguidance builds
  its lexer for the whole grammar there, which no caching on guardrail's side can skip);
- **no enum**: the fixed contract alone from the cache (the floor: the matcher of the fixed part).

Not a test: nothing here asserts on time. Read the table.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from guardrail.local import LocalModel
from guardrail.testing.tiny import tiny_model, train_tokenizer


class Line(BaseModel):
    sku: str = Field(max_length=10)
    quantity: int = Field(ge=1, le=99)
    unit_price: float = Field(ge=0, le=10_000)


class Order(BaseModel):
    product_id: str
    customer: str = Field(max_length=20)
    email: str = Field(max_length=40, pattern=r"^[a-z0-9.]+@[a-z0-9.]+$")
    status: Literal["draft", "sent", "paid", "overdue"]
    priority: int = Field(ge=1, le=5)
    lines: list[Line] = Field(min_length=1, max_length=5)
    note: str | None = Field(default=None, max_length=60)
    currency: Literal["EUR", "USD", "KRW", "JPY"]
    gift: bool
    tags: list[Literal["new", "sale", "gift", "bulk"]] = Field(max_length=4)


def fresh_ids(count: int, rng: random.Random) -> list[str]:
    """``count`` distinct IDs like those a retrieval step returns (new ones every call)."""
    return [f"P{rng.randrange(10**9):09d}-{rng.choice('ABCDEFGH')}" for _ in range(count)]


def per_call_contract(ids: list[str]) -> Any:
    """The contract a caller without per-request enums builds each call."""
    fields: dict[str, Any] = {name: (info.annotation, info) for name, info in Order.model_fields.items()}
    fields["product_id"] = (Literal[tuple(ids)], ...)
    return create_model("OrderForThisRequest", **fields)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    tokenizer = train_tokenizer(32_000)
    local = LocalModel(tiny_model(tokenizer), tokenizer, device="cpu")
    rng = random.Random(0)
    local._plan(Order, None)  # warm: the llguidance tokenizer and the fixed contract's grammar are cached
    print(f"tokenizer: {len(tokenizer)} ids; fixed contract: {len(Order.model_fields)} fields + nested lines")
    print(f"{'ids':>6} {'recompile ms':>13} {'per-request ms':>15} {'ratio':>7} {'of which matcher ms':>20} "
          f"{'no enum ms':>11}")
    for count in (10, 1_000, 10_000):
        calls = (5 if count == 10_000 else 9) if args.quick else (11 if count == 10_000 else 25)
        recompile, spliced, floor, matcher = [], [], [], []
        for _ in range(calls):
            ids = fresh_ids(count, rng)
            contract = per_call_contract(ids)
            started = time.perf_counter()
            local._plan(contract, None)
            recompile.append(time.perf_counter() - started)
            ids = fresh_ids(count, rng)
            started = time.perf_counter()
            plan = local._plan(Order, {"product_id": ids})
            spliced.append(time.perf_counter() - started)
            matcher.append(plan.matcher_seconds)
            started = time.perf_counter()
            local._plan(Order, None)
            floor.append(time.perf_counter() - started)
        ratio = statistics.median(recompile) / statistics.median(spliced)
        print(f"{count:>6} {median_ms(recompile):>13.2f} {median_ms(spliced):>15.2f} {ratio:>6.1f}x "
              f"{median_ms(matcher):>20.2f} {median_ms(floor):>11.2f}")
    print("medians over the calls; recompile = contract + lowering + engine validation + matcher of a per-call "
          "model;\nper-request = cached fixed part + spliced enum + matcher; no enum = cached fixed part + matcher.")


if __name__ == "__main__":
    main()
