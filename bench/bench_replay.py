"""The replay corpus: what recording costs a call, and replay's speed and memory on a large recording.

1. Recording overhead: the same clean structured call against the vendor emulator, with and without
   ``wrap(client, record=PATH)``, alternating, ``--calls`` each; prints the medians and their ratio.
2. Replay: recordings of ``--records`` and ten times as many records (every other answer a regression under the
   tightened contract), replayed with ``keep=100``; prints records per second and the peak traced memory of each,
   and the ratio of the peaks (bounded memory: about 1, whatever the length).

    python bench/bench_replay.py [--calls 300] [--records 5000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import openai
from pydantic import BaseModel, Field

import guardrail
from guardrail.replay import replay
from guardrail.testing import Emulator, reply


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


class Tight(BaseModel):
    urgency: int = Field(ge=1, le=3)
    summary: str


ANSWER = '{"urgency": 4, "summary": "parcel two weeks late, customer asks for a refund"}'
MESSAGES = [{"role": "user", "content": "Where is my parcel? It is two weeks late."}]


def overhead(emu: Emulator, folder: Path, calls: int) -> None:
    emu.responder = lambda request: reply.answer(ANSWER)
    raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test")
    plain = guardrail.wrap(raw)
    recorded = guardrail.wrap(raw, record=folder / "overhead.jsonl")
    times: dict[str, list[float]] = {"plain": [], "recorded": []}
    for _ in range(20):  # warm both
        plain.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
        recorded.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    for _ in range(calls):
        for name, client in (("plain", plain), ("recorded", recorded)):
            started = time.perf_counter()
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
            times[name].append(time.perf_counter() - started)
    plain_ms, recorded_ms = (statistics.median(times[name]) * 1e3 for name in ("plain", "recorded"))
    print(f"call against the emulator: plain {plain_ms:.3f} ms, recorded {recorded_ms:.3f} ms "
          f"(x{recorded_ms / plain_ms:.2f}, +{(recorded_ms - plain_ms) * 1e3:.0f} us), median of {calls}")


def big_replays(folder: Path, records: int) -> None:
    template = json.loads((folder / "overhead.jsonl").read_text(encoding="utf-8").splitlines()[0])
    calm = dict(template, attempts=[dict(template["attempts"][0], raw=ANSWER.replace("4", "2", 1))])
    peaks = []
    for count in (records, records * 10):
        path = folder / f"replay-{count}.jsonl"
        lines = (json.dumps(template), json.dumps(calm))
        with path.open("w", encoding="utf-8") as out:
            for n in range(count):
                out.write(lines[n % 2] + "\n")
        tracemalloc.start()
        started = time.perf_counter()
        report = replay(path, Tight, keep=100)
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        peaks.append(peak)
        assert report.records == count and report.regressions == (count + 1) // 2
        print(f"replay of {count:>7} records ({path.stat().st_size / 1e6:.1f} MB): {count / seconds:,.0f} records/s "
              f"(under tracemalloc), peak traced memory {peak / 1e6:.2f} MB")
    print(f"peak memory ratio, 10x the records: {peaks[1] / peaks[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--records", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, Emulator() as emu:
        overhead(emu, Path(folder), args.calls)
        big_replays(Path(folder), args.records)


if __name__ == "__main__":
    main()
