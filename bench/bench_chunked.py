"""Tokens per valid item: a long list asked for in chunks against the same list in one answer (issue 28, §2).

The vendor is the emulator with a responder that plays a model writing a list of video segments: it answers
what the request asks for, reports usage as a real vendor would (input: a quarter of the request's characters,
the schema included; output: a quarter of the answer's characters) and is cut off at the request's output-token
limit (a truncated answer, its tokens billed). Its longest answer is ``--ceiling`` tokens (``Settings.
max_tokens_ceiling``: the model's output limit); requests start at ``--max-tokens``.

- **single**: ``create_with_result(response_model=Outline)``, one answer holding every segment. Cut off at the
  first limit, the attempt loop raises it (x2, to the ceiling) and asks again; past the ceiling it ends in
  ``OutputTruncated`` with no valid item, every token spent for nothing.
- **chunked/items**, **chunked/keys**: ``create_chunked(response_model=Segment, chunking=Chunking(key="index",
  max_items=...))``, each chunk's request carrying the items so far (``context="items"``) or their keys and the
  last three (``context="keys"``).

    python bench/bench_chunked.py [--sizes 30,60,120] [--repeats 5] [--max-items 10] [--max-tokens 1000]
                                  [--ceiling 4096]

Each repeat draws the segment titles again (another seed), so the medians are over lists of different lengths.
Printed per size: the median total tokens (input + output), valid items, tokens per valid item, requests and wall
time per call, and the ratio of each chunked run's tokens per valid item to the single answer's ("fails": no
valid item at all).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from typing import Any

import openai
from pydantic import BaseModel

import guardrail
from guardrail.call.chunked import Chunking
from guardrail.errors import GuardrailError
from guardrail.testing import Emulator, reply
from guardrail.testing.behaviours import Reply
from guardrail.testing.recording import RecordedRequest

_WORDS = ("intro", "agenda", "demo", "questions", "architecture", "results", "benchmarks", "roadmap", "pricing",
          "security", "migration", "lessons", "summary", "thanks", "live coding", "case study")


class Segment(BaseModel):
    index: int
    start: float
    end: float
    title: str


class Outline(BaseModel):
    segments: list[Segment]


def video(size: int, seed: int) -> list[dict[str, Any]]:
    """``size`` segments with titles of 2 to 12 words (their JSON is 60 to 140 characters)."""
    rng = random.Random(seed)
    out = []
    for index in range(size):
        title = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 12)))
        out.append({"index": index, "start": 30.0 * index, "end": 30.0 * index + 29.5, "title": title})
    return out


def tokens(text: str) -> int:
    return max(1, len(text) // 4)


class Model:
    """The responder: a model that writes the list it is asked for, cut off at the request's output limit."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.body
        spent_in = tokens(json.dumps(body, ensure_ascii=False))
        schema = body["response_format"]["json_schema"]
        if schema["name"] == "Chunk":
            text = body["messages"][-1]["content"]
            found = re.search(r"The items so far \((\d+)\)|There are (\d+) items so far", text)
            done_so_far = int(next(g for g in found.groups() if g)) if found else 0
            size = int(schema["schema"]["properties"]["items"].get("maxItems", 10))
            part = self.items[done_so_far:done_so_far + size]
            answer = json.dumps({"items": part, "done": done_so_far + size >= len(self.items)})
        else:
            answer = json.dumps({"segments": self.items})
        limit = int(body.get("max_completion_tokens") or body.get("max_tokens") or 1 << 30)
        if tokens(answer) > limit:
            return reply.truncated(answer[:limit * 4], usage=(spent_in, limit))
        return reply.answer(answer, usage=(spent_in, tokens(answer)))


def run(emu: Emulator, kind: str, size: int, seed: int, args: argparse.Namespace) -> dict[str, float]:
    emu.reset()
    emu.responder = Model(video(size, seed))
    settings = guardrail.Settings(max_attempts=3, max_tokens_ceiling=args.ceiling)
    client: Any = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=30),
                                 settings=settings, retry=guardrail.RetryPolicy(max_tries=1))
    messages = [{"role": "system", "content": "You segment conference talks."},
                {"role": "user", "content": f"List the {size} segments of the talk with their timings."}]
    started = time.perf_counter()
    valid = 0
    try:
        if kind == "single":
            result: Any = client.chat.completions.create_with_result(
                response_model=Outline, messages=messages, model="gpt-4o", max_tokens=args.max_tokens)
            valid = len(result.value.segments)
        else:
            chunking = Chunking(key="index", max_items=args.max_items, max_chunks=size // args.max_items + 2,
                                context="items" if kind == "chunked/items" else "keys")
            result = client.chat.completions.create_chunked(
                response_model=Segment, chunking=chunking, messages=messages, model="gpt-4o",
                max_tokens=args.max_tokens)
            valid = len(result.value)
        usage = result.usage
    except GuardrailError as error:
        usage = error.outcome.usage  # type: ignore[attr-defined]
    seconds = time.perf_counter() - started
    spent = emu.tokens_served
    assert usage.input_tokens == spent[0] and usage.output_tokens == spent[1], (usage, spent)  # every token counted
    return {"tokens": float(usage.total_tokens), "valid": float(valid), "requests": float(len(emu.requests)),
            "ms": seconds * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="30,60,120")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-items", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=1000)
    parser.add_argument("--ceiling", type=int, default=4096)
    args = parser.parse_args()
    kinds = ("single", "chunked/items", "chunked/keys")
    print(f"max_items={args.max_items} max_tokens={args.max_tokens} ceiling={args.ceiling} repeats={args.repeats}")
    print(f"{'size':>5} {'run':<14} {'tokens':>8} {'valid':>6} {'tok/item':>9} {'requests':>8} {'ms':>7} "
          f"{'vs single':>10}")
    with Emulator() as emu:
        for size in (int(s) for s in args.sizes.split(",")):
            per_item: dict[str, float] = {}
            for kind in kinds:
                runs = [run(emu, kind, size, seed, args) for seed in range(args.repeats)]
                median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
                ratios = [r["tokens"] / r["valid"] if r["valid"] else float("inf") for r in runs]
                per_item[kind] = statistics.median(ratios)
                shown = "fails" if per_item[kind] == float("inf") else f"{per_item[kind]:.1f}"
                base = per_item["single"]
                versus = "" if kind == "single" else "n/a (single fails)" if base == float("inf") else \
                    f"{per_item[kind] / base:.2f}x"
                print(f"{size:>5} {kind:<14} {median['tokens']:>8.0f} {median['valid']:>6.0f} {shown:>9} "
                      f"{median['requests']:>8.0f} {median['ms']:>7.1f} {versus:>10}")


if __name__ == "__main__":
    main()
