"""CPU of a streamed structured answer: ``create_partial`` against consuming the raw SDK stream (issue 23, §4).

The vendor is an emulator in a *separate process* that sends the whole answer at once, in ~12-character SSE
deltas (what the vendors send; ``--piece`` changes it), so the CPU measured here (``time.process_time`` of this
process) is the client's alone. For each endpoint (OpenAI Chat Completions, OpenAI Responses, Anthropic
Messages), sync and async, and each answer size:

- **raw**: the SDK's own stream (``stream=True``) read to the end, its text deltas joined and the text
  validated once with ``model_validate_json`` (what a user of the bare SDK does);
- **guardrail**: ``create_partial(..., response_model=...)`` read to the end: every preview, then the value,
  which goes through the whole parse pipeline and the gates.

    python bench/bench_stream.py [--sizes 16,64,256] [--blocks 5] [--piece 12] [--apis chat,responses,messages]

The two sides run in alternating blocks of one call each (raw, guardrail, raw, ...), ``--blocks`` each, after
one warm-up call each; the ratio is of the median CPU per call. The last column is the growth of guardrail's
CPU from one size to the next (the sizes go up 4x: linear growth is ~4x).

Targets (issue 23): guardrail <= 2x the raw stream's CPU at 64 KB; growth <= 5x for 4x the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import time
from collections.abc import Callable
from typing import Any

import anthropic
import openai
from pydantic import BaseModel

import guardrail

_SENTENCES = (
    'The parcel left the depot on Monday and was "scanned" twice before it reached the sorting hub. ',
    "Customer says: the box was damaged \\ torn at one corner; see the photo.\n",
    "Refund requested for order #4821 (two items, 39.90 EUR each) — cause: late delivery. ",
    "Next step: call the carrier, then write back within 24 hours {priority: high}. ",
)


class Section(BaseModel):
    heading: str
    body: str
    score: float
    count: int
    tags: list[str]
    done: bool


class Report(BaseModel):
    title: str
    sections: list[Section]


def answer_text(size: int) -> str:
    """A report of about ``size`` characters of JSON: sections of prose (quotes, escapes, a newline), numbers,
    lists of tags."""
    sections: list[dict[str, Any]] = []
    report = {"title": f"Weekly report ({size} chars)", "sections": sections}
    while len(json.dumps(report)) < size:
        i = len(sections)
        body = "".join(_SENTENCES[(i + k) % len(_SENTENCES)] for k in range(3))
        sections.append({"heading": f"Case {i}", "body": body, "score": round(0.5 + i * 0.37, 2), "count": i * 7,
                         "tags": ["late", "refund", f"t{i % 5}"], "done": i % 2 == 0})
    return json.dumps(report)


def serve(port_queue: Any, stop: Any, piece: int) -> None:
    """The emulator in its own process: answers each request with the report of the size its user text names."""
    from guardrail.testing import Emulator, reply

    with Emulator(check_schemas=False) as emu:
        def answer(request: Any) -> Any:
            size = int(request.last_user_text.split("=")[1])
            return reply.answer(answer_text(size)).streamed_in(piece)
        emu.responder = answer
        port_queue.put((emu.openai_base_url, emu.anthropic_base_url))
        stop.wait()


# -- the raw side: the SDK's own stream ------------------------------------------------------------------------
def _chat_text(event: Any) -> str:
    choices = event.choices
    return (choices[0].delta.content or "") if choices else ""


def _responses_text(event: Any) -> str:
    return event.delta if event.type == "response.output_text.delta" else ""


def _messages_text(event: Any) -> str:
    return event.delta.text if event.type == "content_block_delta" and event.delta.type == "text_delta" else ""


_TEXT_OF: dict[str, Callable[[Any], str]] = {"chat": _chat_text, "responses": _responses_text,
                                             "messages": _messages_text}


def _request(api: str, size: int) -> dict[str, Any]:
    prompt = f"size={size}"
    if api == "chat":
        return {"model": "gpt-4o", "messages": [{"role": "user", "content": prompt}]}
    if api == "responses":
        return {"model": "gpt-4o", "input": prompt}
    return {"model": "claude-sonnet-4-5", "max_tokens": 1_000_000, "messages": [{"role": "user", "content": prompt}]}


def _method(client: Any, api: str) -> Any:
    return {"chat": lambda: client.chat.completions, "responses": lambda: client.responses,
            "messages": lambda: client.messages}[api]()


class Sides:
    """The raw and guardrail calls of one endpoint, sync or async, each returning the validated report."""

    def __init__(self, urls: tuple[str, str], api: str, is_async: bool) -> None:
        self.api, self.is_async = api, is_async
        openai_url, anthropic_url = urls
        if api == "messages":
            make: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
            raw, wrapped = make(base_url=anthropic_url, api_key="t"), make(base_url=anthropic_url, api_key="t")
        else:
            make = openai.AsyncOpenAI if is_async else openai.OpenAI
            raw, wrapped = make(base_url=openai_url, api_key="t"), make(base_url=openai_url, api_key="t")
        self.clients = (raw, wrapped)
        self.raw = _method(raw, api)
        self.wrapped = _method(guardrail.wrap(wrapped), api)
        self.loop = asyncio.new_event_loop() if is_async else None

    def close(self) -> None:
        for client in self.clients:
            if self.loop is None:
                client.close()
            else:
                self.loop.run_until_complete(client.close())
        if self.loop is not None:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def raw_call(self, size: int) -> Report:
        text_of = _TEXT_OF[self.api]
        if self.loop is None:
            parts = [text_of(event) for event in self.raw.create(stream=True, **_request(self.api, size))]
            return Report.model_validate_json("".join(parts))

        async def run() -> Report:
            events = await self.raw.create(stream=True, **_request(self.api, size))
            parts = [text_of(event) async for event in events]
            return Report.model_validate_json("".join(parts))
        return self.loop.run_until_complete(run())

    def guarded_call(self, size: int) -> Report:
        """Read the stream as a UI does: look at each preview as it comes, keep only the last item."""
        kwargs = _request(self.api, size)
        if self.loop is None:
            return _last(self.wrapped.create_partial(response_model=Report, **kwargs))

        async def run() -> Report:
            shown, last = 0, None
            async for item in self.wrapped.create_partial(response_model=Report, **kwargs):
                shown, last = shown + 1, item
            assert shown > 1 and isinstance(last, Report), "no preview was shown"
            return last
        return self.loop.run_until_complete(run())


def _last(items: Any) -> Report:
    shown, last = 0, None
    for item in items:
        shown, last = shown + 1, item
    assert shown > 1 and isinstance(last, Report), "no preview was shown"
    return last


def cpu(fn: Callable[[], Any]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def measure(sides: Sides, size: int, blocks: int) -> tuple[float, float]:
    """Median CPU seconds per call of the raw and guardrail sides, alternating one call each."""
    expected = Report.model_validate_json(answer_text(size))
    assert sides.raw_call(size) == expected and sides.guarded_call(size) == expected  # warm, and the same answer
    raws, guards = [], []
    for _ in range(blocks):
        raws.append(cpu(lambda: sides.raw_call(size)))
        guards.append(cpu(lambda: sides.guarded_call(size)))
    return statistics.median(raws), statistics.median(guards)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,64,256", help="answer sizes in KB, comma-separated (default 16,64,256)")
    parser.add_argument("--blocks", type=int, default=5, help="calls per side and size (default 5)")
    parser.add_argument("--piece", type=int, default=12, help="characters per SSE delta (default 12)")
    parser.add_argument("--apis", default="chat,responses,messages", help="endpoints (default all three)")
    parser.add_argument("--modes", default="sync,async", help="sync, async or both (default both)")
    args = parser.parse_args()
    sizes = [int(kb) * 1024 for kb in args.sizes.split(",")]
    context = multiprocessing.get_context("spawn")
    port_queue, stop = context.Queue(), context.Event()
    server = context.Process(target=serve, args=(port_queue, stop, args.piece), daemon=True)
    server.start()
    urls = port_queue.get(timeout=60)
    try:
        print(f"{'endpoint':16} {'size':>6} {'raw SDK stream':>15} {'create_partial':>15} {'ratio':>7} {'growth':>7}"
              f"  (CPU per call, median of {args.blocks} alternating calls; {args.piece}-char deltas)")
        for api in args.apis.split(","):
            for mode in args.modes.split(","):
                sides = Sides(urls, api, mode == "async")
                try:
                    previous: float | None = None
                    for size in sizes:
                        r, g = measure(sides, size, args.blocks)
                        growth = f"{g / previous:6.2f}x" if previous else f"{'':7}"
                        previous = g
                        print(f"{api + ' ' + mode:16} {size // 1024:4} KB {r * 1000:12.1f} ms {g * 1000:12.1f} ms "
                              f"{g / r:6.2f}x {growth}", flush=True)
                finally:
                    sides.close()
        print("targets: ratio <= 2x at 64 KB; growth <= 5x for 4x the answer")
    finally:
        stop.set()
        server.join(timeout=10)


if __name__ == "__main__":
    main()
