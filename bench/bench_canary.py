"""What a canary costs a call: the same clean structured call against the vendor emulator, directly and through a
:class:`guardrail.Canary` (both arms the same wrapped client, so only the canary's work differs) whose counts live
in a memory store, a SQLite file and (when ``--redis URL`` is given) a Redis server; alternating (each first in
turn), ``--calls`` each.
Prints the medians, their ratio to the direct call and the added microseconds. The canary has the default share
(5 %) and stays live throughout (``min_samples`` is never reached): every call reads the decision and counts itself
(two store operations), and a candidate call also tests the counts (four reads more).

    python bench/bench_canary.py [--calls 300] [--redis redis://127.0.0.1:6379/0]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
from pydantic import BaseModel, Field

import guardrail
from guardrail.store import MemoryStore, RedisStore, SQLiteStore, Store
from guardrail.testing import Emulator, reply


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


ANSWER = '{"urgency": 4, "summary": "parcel two weeks late, customer asks for a refund"}'
MESSAGES = [{"role": "user", "content": "Where is my parcel? It is two weeks late."}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--redis", default=None, help="a Redis URL to measure the Redis store too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, Emulator() as emu:
        emu.responder = lambda request: reply.answer(ANSWER)
        client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"))
        stores: dict[str, Store] = {"memory": MemoryStore(), "sqlite": SQLiteStore(Path(folder) / "canary.db")}
        if args.redis:
            stores["redis"] = RedisStore(args.redis, prefix="bench:canary:")
        targets: dict[str, Any] = {"direct": client}
        for kind, store in stores.items():
            canary = guardrail.Canary(client, client, store=store, name="bench", min_samples=10**9)
            canary.reset()
            targets[kind] = canary
        calls: dict[str, Callable[[], Any]] = {
            name: (lambda target=target: target.chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                                        response_model=Ticket))
            for name, target in targets.items()}
        times: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(20):  # warm every path
            for call in calls.values():
                call()
        names = list(calls)
        for round_ in range(args.calls):
            for name in names[round_ % len(names):] + names[:round_ % len(names)]:  # each goes first in turn
                call = calls[name]
                started = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - started)
        direct = statistics.median(times["direct"]) * 1e3
        print(f"direct call against the emulator: {direct:.3f} ms (median of {args.calls})")
        for name in stores:
            ms = statistics.median(times[name]) * 1e3
            print(f"through a canary, {name:>6} store: {ms:.3f} ms (x{ms / direct:.2f}, +{(ms - direct) * 1e3:.0f} us)")
        for store in stores.values():
            store.close()


if __name__ == "__main__":
    main()
