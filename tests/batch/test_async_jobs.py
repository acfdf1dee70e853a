"""The async twin: jobs on openai.AsyncOpenAI and anthropic.AsyncAnthropic, the same rounds as the sync ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.batch_jobs import GOOD, Ticket, reasked, requests

import guardrail
import guardrail.batch
from guardrail.errors import GaveUp, UsageError, VendorError
from guardrail.testing import Emulator


async def collect(job: guardrail.batch.AsyncJob) -> dict[str, Any]:
    return {custom_id: outcome async for custom_id, outcome in job.results(poll_interval=0)}


def check(out: dict[str, Any], count: int) -> None:
    assert len(out) == count
    for custom_id, outcome in out.items():
        kind = custom_id.split("-")[0]
        if kind == "hopeless":
            assert isinstance(outcome, GaveUp)
        elif kind == "failed":
            assert isinstance(outcome, VendorError)
        else:
            assert isinstance(outcome, guardrail.Result) and outcome.value == Ticket.model_validate_json(GOOD)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_async_job_rounds(batch_emu: Emulator, store, vendor: str) -> None:
    import anthropic
    import openai

    async def main() -> dict[str, Any]:
        if vendor == "openai":
            client: Any = openai.AsyncOpenAI(base_url=batch_emu.openai_base_url, api_key="sk-test", max_retries=0)
            items = requests(12)
        else:
            client = anthropic.AsyncAnthropic(base_url=batch_emu.anthropic_base_url, api_key="k", max_retries=0)
            items = requests(12, model="claude-sonnet-4-5", max_tokens=256)
        job = await guardrail.batch.asubmit(client, items, response_model=Ticket, store=store, live_threshold=0)
        resumed = await guardrail.batch.aresume(client, job.id, store=store)
        return await collect(resumed)

    check(asyncio.run(main()), 12)
    assert len(batch_emu.batches.ids()) == 3  # round 0 and two re-ask rounds


def test_async_live_reasks(batch_emu: Emulator, store) -> None:
    import openai

    async def main() -> dict[str, Any]:
        client = openai.AsyncOpenAI(base_url=batch_emu.openai_base_url, api_key="sk-test", max_retries=0)
        job = await guardrail.batch.asubmit(client, requests(4, ("good", "bad")), response_model=Ticket, store=store)
        return await collect(job)

    check(asyncio.run(main()), 4)
    live = [r for r in batch_emu.requests if "x-batch-id" not in r.headers]
    assert len(live) == 2 and all(reasked(r) for r in live)


def test_sync_and_async_entry_points_refuse_the_other_kind_of_client(batch_emu: Emulator, openai_client,
                                                                     store) -> None:
    import openai

    with pytest.raises(UsageError, match="asubmit"):
        guardrail.batch.submit(openai.AsyncOpenAI(base_url=batch_emu.openai_base_url, api_key="k"), requests(1),
                               response_model=Ticket, store=store)
    with pytest.raises(UsageError, match="take an async client"):
        asyncio.run(guardrail.batch.asubmit(openai_client, requests(1), response_model=Ticket, store=store))
