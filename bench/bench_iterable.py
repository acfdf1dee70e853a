"""CPU of ``create_iterable``: a list of N items, each yielded as it is finished, grows linearly with N (issue 28 §1).

The vendor is an emulator in a *separate process* that sends the whole answer at once in ~12-character SSE deltas
(``--piece``), so the CPU measured here (``time.process_time`` of this process) is the client's alone. For each
endpoint (``--apis``), sync, and each list length:

- **raw**: the SDK's own stream (``stream=True``) read to the end, its text deltas joined and validated once as the
  whole list (``TypeAdapter(ListOfSegments).validate_json``): what a user of the bare SDK does, items only at the end;
- **iterable**: ``create_iterable(..., response_model=Segment)`` read to the end: every item read and validated
  (the parse layer, one item at a time) as soon as its ``,`` arrives, then the whole answer judged by the attempt loop.

    python bench/bench_iterable.py [--counts 50,200,800] [--blocks 5] [--piece 12] [--apis chat,messages]

The two sides run in alternating blocks of one call each, after one warm-up call each; the columns are the median
CPU per call, the ratio iterable/raw, and the growth of iterable's CPU from one count to the next (the counts go up
4x: linear growth is ~4x, quadratic ~16x).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from collections.abc import Callable
from typing import Any

import anthropic
import openai
from pydantic import BaseModel, TypeAdapter

import guardrail


class Segment(BaseModel):
    title: str
    start: float
    end: float
    speakers: list[str]


class Segments(BaseModel):
    items: list[Segment]


def answer_text(count: int) -> str:
    return json.dumps({"items": [{"title": f"Segment {i}: the \"part\" where \\ things happen", "start": i * 12.5,
                                  "end": i * 12.5 + 11.0, "speakers": ["Ann", f"guest {i % 7}"]}
                                 for i in range(count)]})


def serve(port_queue: Any, stop: Any, piece: int) -> None:
    """The emulator in its own process: answers each request with the list of the length its user text names."""
    from guardrail.testing import Emulator, reply

    with Emulator(check_schemas=False) as emu:
        def answer(request: Any) -> Any:
            return reply.answer(answer_text(int(request.last_user_text.split("=")[1]))).streamed_in(piece)
        emu.responder = answer
        port_queue.put((emu.openai_base_url, emu.anthropic_base_url))
        stop.wait()


def _request(api: str, count: int) -> dict[str, Any]:
    prompt = f"count={count}"
    if api == "chat":
        return {"model": "gpt-4o", "messages": [{"role": "user", "content": prompt}]}
    if api == "responses":
        return {"model": "gpt-4o", "input": prompt}
    return {"model": "claude-sonnet-4-5", "max_tokens": 1_000_000, "messages": [{"role": "user", "content": prompt}]}


def _text(api: str, event: Any) -> str:
    if api == "chat":
        return (event.choices[0].delta.content or "") if event.choices else ""
    if api == "responses":
        return str(event.delta) if event.type == "response.output_text.delta" else ""
    return str(event.delta.text) if event.type == "content_block_delta" and event.delta.type == "text_delta" else ""


def _method(client: Any, api: str) -> Any:
    return {"chat": lambda: client.chat.completions, "responses": lambda: client.responses,
            "messages": lambda: client.messages}[api]()


_WHOLE = TypeAdapter(Segments)


class Sides:
    def __init__(self, urls: tuple[str, str], api: str) -> None:
        self.api = api
        openai_url, anthropic_url = urls
        if api == "messages":
            raw, wrapped = (anthropic.Anthropic(base_url=anthropic_url, api_key="t") for _ in range(2))
        else:
            raw, wrapped = (openai.OpenAI(base_url=openai_url, api_key="t") for _ in range(2))
        self.raw = _method(raw, api)
        self.wrapped = _method(guardrail.wrap(wrapped), api)

    def raw_call(self, count: int) -> list[Segment]:
        parts = [_text(self.api, event) for event in self.raw.create(stream=True, **_request(self.api, count))]
        return _WHOLE.validate_json("".join(parts)).items

    def iterable_call(self, count: int) -> list[Segment]:
        stream = self.wrapped.create_iterable(response_model=Segment, **_request(self.api, count))
        items = list(stream)
        assert stream.result is not None and len(stream.result.attempts) == 1
        return items


def cpu(fn: Callable[[], Any]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def measure(sides: Sides, count: int, blocks: int) -> tuple[float, float]:
    expected = Segments.model_validate_json(answer_text(count)).items
    assert sides.raw_call(count) == expected and sides.iterable_call(count) == expected  # warm, the same list
    raws, items = [], []
    for _ in range(blocks):
        raws.append(cpu(lambda: sides.raw_call(count)))
        items.append(cpu(lambda: sides.iterable_call(count)))
    return statistics.median(raws), statistics.median(items)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--counts", default="50,200,800", help="list lengths, comma-separated (default 50,200,800)")
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--piece", type=int, default=12, help="characters per SSE delta (default 12)")
    parser.add_argument("--apis", default="chat,messages")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    context = multiprocessing.get_context("spawn")
    ports, stop = context.Queue(), context.Event()
    server = context.Process(target=serve, args=(ports, stop, args.piece), daemon=True)
    server.start()
    try:
        urls = ports.get(timeout=60)
        print(f"{'api':<10} {'items':>6} {'KB':>7} {'raw ms':>9} {'iterable ms':>12} {'ratio':>6} {'growth':>7}")
        for api in args.apis.split(","):
            sides, last = Sides(urls, api), None
            for count in counts:
                raw, items = measure(sides, count, args.blocks)
                growth = f"{items / last:.2f}x" if last else "-"
                print(f"{api:<10} {count:>6} {len(answer_text(count)) / 1024:>7.1f} {raw * 1e3:>9.1f} "
                      f"{items * 1e3:>12.1f} {items / raw:>5.2f}x {growth:>7}")
                last = items
    finally:
        stop.set()
        server.join(timeout=10)


if __name__ == "__main__":
    main()
