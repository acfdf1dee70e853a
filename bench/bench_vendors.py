"""Vendor calls per validated result, latency and tokens: guardrail vs instructor on the same faulty emulator.

Both libraries talk to the same loopback vendor emulator through the real ``openai`` SDK, under the same
seeded fault profile (formatting slips, 429s, truncations, refusals, simulated latency). Each request is
counted server-side, so retries inside the SDK or the library are all included. Run::

    .venv/bin/python bench/bench_vendors.py            # 200 calls each
    .venv/bin/python bench/bench_vendors.py --calls 50 --seed 3
    .venv/bin/python bench/bench_vendors.py --violations 0.15   # 15% of first answers break a field: re-asks

Targets (issue 3): at most 1.15 vendor calls per validated result, and fewer calls and tokens than instructor.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import openai
from pydantic import BaseModel, Field

import guardrail
from guardrail.testing import Emulator, FaultProfile, RecordedRequest


class Item(BaseModel):
    sku: str
    quantity: int = Field(ge=1)
    unit_price: float


class Order(BaseModel):
    order_id: str
    customer: str
    items: list[Item]
    priority: int = Field(ge=1, le=5)
    gift: bool


#: The share of first answers (no feedback yet) that break one field (``priority`` out of range), so re-asks
#: and their cost show up (``--violations 0.15``); the re-ask is answered correctly, with the fields it asks for.
#: 0 by default: the fault profile the calls-per-result targets were set on.
VIOLATIONS = 0.0


def answer_for(request: RecordedRequest) -> str:
    """The answer for a request: derived from the request text, so it is the same for both libraries."""
    seed = sum(map(ord, str(request.messages[:1])))
    order = {"order_id": f"ORD-{seed % 1000}", "customer": "Kim Min-jun",
             "items": [{"sku": f"SKU-{i}", "quantity": i + 1, "unit_price": 9.5 + i} for i in range(3)],
             "priority": seed % 5 + 1, "gift": seed % 2 == 0}
    first = len(request.messages) == 1
    if first and (seed * 7919) % 1000 < VIOLATIONS * 1000:
        order["priority"] = 9
    asked = set((request.schema or {}).get("properties", {}))
    if asked and asked < set(order):  # a re-ask for some fields only: answer those
        order = {key: value for key, value in order.items() if key in asked}
    return json.dumps(order)


def prompt(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Extract the order from email #{i}: Kim Min-jun wants three items."}]


def run(name: str, emu: Emulator, calls: int, one: Callable[[int], Any], seed: int) -> dict[str, Any]:
    """Make ``calls`` calls with ``one``; count validated results, requests, tokens and latencies."""
    emu.reset()
    profile = FaultProfile(seed=seed, slip=0.30, rate_limit=0.10, truncation=0.05, refusal=0.02, latency=0.05,
                           answer=answer_for)
    emu.responder = profile
    latencies: list[float] = []
    ok = 0
    for i in range(calls):
        started = time.perf_counter()
        try:
            one(i)
            ok += 1
        except Exception:  # a failed call is counted, whatever the library raised
            pass
        latencies.append(time.perf_counter() - started)
    tokens = sum(emu.tokens_served)
    completions = sum(1 for kind in profile.history if kind != "rate_limit")
    return {"name": name, "ok": ok, "requests": len(emu.requests), "completions": completions, "tokens": tokens,
            "p50": statistics.median(latencies), "p95": sorted(latencies)[int(0.95 * (len(latencies) - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7, help="the fault profile's seed (same for both libraries)")
    parser.add_argument("--violations", type=float, default=VIOLATIONS,
                        help="share of first answers breaking one field (default %(default)s)")
    args = parser.parse_args()
    globals()["VIOLATIONS"] = args.violations
    with Emulator() as emu:
        policy = guardrail.RetryPolicy(initial_wait=0.05, max_wait=1.0)
        ours = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), retry=policy)

        def guardrail_call(i: int) -> Any:
            return ours.chat.completions.create(model="gpt-4o", messages=prompt(i), response_model=Order,
                                                max_completion_tokens=400)

        rows = [run("guardrail", emu, args.calls, guardrail_call, args.seed)]
        try:
            import instructor
        except ImportError:
            instructor = None
        if instructor is not None:
            theirs = instructor.from_openai(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"),
                                            mode=instructor.Mode.TOOLS)

            def instructor_call(i: int) -> Any:
                return theirs.chat.completions.create(model="gpt-4o", messages=prompt(i), response_model=Order,
                                                      max_retries=3, max_tokens=400)

            rows.append(run("instructor", emu, args.calls, instructor_call, args.seed))
    print(f"{args.calls} calls each; faults (seed {args.seed}): 30% slips, 10% 429, 5% truncation, 2% refusal, "
          f"{args.violations:.0%} first answers breaking a field, 50 ms latency")
    print("model calls = requests answered with a completion; HTTP requests also count the 429s")
    print(f"{'library':<12}{'validated':>10}{'model calls/valid':>19}{'HTTP req/valid':>16}{'p50 ms':>8}"
          f"{'p95 ms':>8}{'tokens':>8}{'tok/valid':>10}")
    for row in rows:
        ok = max(row["ok"], 1)
        print(f"{row['name']:<12}{row['ok']:>10}{row['completions'] / ok:>19.3f}{row['requests'] / ok:>16.3f}"
              f"{row['p50'] * 1000:>8.0f}{row['p95'] * 1000:>8.0f}{row['tokens']:>8}{row['tokens'] / ok:>10.0f}")
    if len(rows) == 2:
        g, i = ({k: (v / max(r["ok"], 1) if k in ("completions", "requests", "tokens") else v)
                 for k, v in r.items()} for r in rows)
        print(f"ratio guardrail/instructor: model calls/valid {g['completions'] / i['completions']:.2f}, "
              f"HTTP requests/valid {g['requests'] / i['requests']:.2f}, tokens/valid {g['tokens'] / i['tokens']:.2f}, "
              f"p50 {g['p50'] / i['p50']:.2f}, p95 {g['p95'] / i['p95']:.2f}")


if __name__ == "__main__":
    main()
