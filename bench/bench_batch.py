"""Memory of a validated batch job as it grows: 1,000, 10,000 and 100,000 items (issue 26, section 4).

Each job goes the whole way through the real openai SDK: the requests are built like live calls and written to
the batch input file (streamed to disk, uploaded as an open file), the job waits for the batch, its results are
read line by line and every answer goes through the parse pipeline and the gates; one item in a hundred answers
with a field missing first, so a follow-up round re-asks those items (``live_threshold=0``). The job's state is
in a SQLite file. The vendor is the emulator in a *separate process* (it keeps what it was sent; that is not this
process's memory).

Memory is this process's peak of Python allocations (``tracemalloc``), measured apart for the submission and for
reading the results, from a baseline taken right before each; bounded memory means the peaks stay flat as the
job grows 100x (after a 200-item warm-up job, so first imports and caches are not counted). Also printed: the
process's peak resident set (``ru_maxrss``, a high-water mark over the whole run, so it only ever rises) and
the wall time of each phase (for information, not a target).

    python bench/bench_batch.py [--sizes 1000,10000,100000] [--vendor openai|gemini]

Target (issue 26): the peaks do not grow with the job (100,000 items within 2x of 1,000). With ``--vendor gemini``
(google-genai, Gemini batch mode) the requests go inline and the answers come inline in the job, so each vendor
batch (at most 5,000 requests or 18 MB) is held whole while it is sent and while it is read: the peaks grow up to
that size, then stay flat.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
from pydantic import BaseModel, Field

import guardrail
import guardrail.batch
from guardrail.store import SQLiteStore


class Ticket(BaseModel):
    title: str
    priority: int = Field(ge=1, le=5)


GOOD = '{"title": "printer on fire", "priority": 2}'


def serve(url_queue: Any, stop: Any) -> None:
    """The emulator in its own process: a valid ticket for every item, a field missing first for every 100th."""
    from guardrail.testing import Emulator, reply

    with Emulator() as emu:
        def answer(request: Any) -> Any:
            text = request.conversation_text
            if "x100" in text and "previous answer" not in text:
                return reply.answer('{"title": "printer on fire"}', usage=(60, 10))
            return reply.answer(GOOD, usage=(60, 10))

        emu.responder = answer
        url_queue.put((emu.openai_base_url, emu.gemini_base_url))
        stop.wait()


def requests(count: int, vendor: str) -> Iterator[dict[str, Any]]:
    """The job's requests, made one at a time (never a list)."""
    for n in range(count):
        mark = " x100" if n % 100 == 0 else ""
        text = f"Summarise support message {n} as a ticket.{mark}"
        if vendor == "gemini":
            yield {"custom_id": f"item-{n}", "model": "gemini-2.5-flash", "contents": text}
        else:
            yield {"custom_id": f"item-{n}", "model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}]}


def client_for(urls: tuple[str, str], vendor: str) -> Any:
    if vendor == "gemini":
        from google import genai

        return genai.Client(api_key="bench", http_options={"base_url": urls[1], "timeout": 600_000})
    return openai.OpenAI(base_url=urls[0], api_key="sk-bench", max_retries=2, timeout=600)


def peak_mb(run: Any) -> tuple[float, float, Any]:
    """(peak MB of Python allocations above the baseline, seconds, the run's value)."""
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    started = time.perf_counter()
    value = run()
    seconds = time.perf_counter() - started
    return (tracemalloc.get_traced_memory()[1] - base) / 2**20, seconds, value


def job(urls: tuple[str, str], vendor: str, count: int, folder: Path) -> tuple[float, float, float, float, int, int]:
    client = client_for(urls, vendor)
    store = SQLiteStore(folder / f"jobs-{count}.db")
    try:
        submit_mb, submit_s, submitted = peak_mb(lambda: guardrail.batch.submit(
            client, requests(count, vendor), response_model=Ticket, store=store, live_threshold=0))

        def collect() -> tuple[int, int]:
            valid = reasked = 0
            for _, outcome in submitted.results(poll_interval=0):
                if isinstance(outcome, guardrail.Result):
                    valid += 1
                    reasked += len(outcome.attempts) > 1
            return valid, reasked

        results_mb, results_s, (valid, reasked) = peak_mb(collect)
    finally:
        store.close()
    return submit_mb, submit_s, results_mb, results_s, valid, reasked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="job sizes, comma-separated")
    parser.add_argument("--vendor", choices=("openai", "gemini"), default="openai", help="the SDK (default: openai)")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    url_queue, stop = context.Queue(), context.Event()
    server = context.Process(target=serve, args=(url_queue, stop), daemon=True)
    server.start()
    urls = url_queue.get(timeout=60)
    tracemalloc.start()
    peaks: list[float] = []
    try:
        print(f"{'items':>8} {'submit peak':>12} {'results peak':>13} {'valid':>8} {'re-asked':>9} "
              f"{'submit':>8} {'results':>8} {'max RSS':>9}")
        with tempfile.TemporaryDirectory(prefix="bench-batch-") as folder:
            job(urls, args.vendor, 200, Path(folder))  # warm-up: first imports, the contract, the SDK's lazy modules
            for count in (int(size) for size in args.sizes.split(",")):
                submit_mb, submit_s, results_mb, results_s, valid, reasked = job(urls, args.vendor, count,
                                                                                 Path(folder))
                peaks.append(max(submit_mb, results_mb))
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                print(f"{count:>8} {submit_mb:9.2f} MB {results_mb:10.2f} MB {valid:>8} {reasked:>9} "
                      f"{submit_s:7.1f}s {results_s:7.1f}s {rss:6.0f} MB", flush=True)
        growth = peaks[-1] / peaks[0] if peaks and peaks[0] else float("nan")
        print(f"peak growth from {args.sizes.split(',')[0]} to {args.sizes.split(',')[-1]} items: {growth:.2f}x "
              "(target: within 2x)")
    finally:
        tracemalloc.stop()
        stop.set()
        server.join(timeout=10)
    sys.exit(0)


if __name__ == "__main__":
    main()
