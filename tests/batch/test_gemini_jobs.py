"""Gemini batch mode end to end: the real google-genai SDK creates, polls and cancels the emulator's batch jobs
and reads their inlined responses; the jobs' state in a real SQLite file."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from google import genai
from google.genai import types
from support.batch_jobs import GOOD, USAGE, Ticket, collect, gemini_requests, reasked, rounds_of

import guardrail
import guardrail.batch
from guardrail.errors import BatchItemFailed, BatchJobError, ConfigError, GaveUp, UsageError, VendorError
from guardrail.outcome import Usage
from guardrail.store import SQLiteStore
from guardrail.testing import Emulator


def fresh(emu: Emulator) -> genai.Client:
    return genai.Client(api_key="test", http_options=types.HttpOptions(base_url=emu.gemini_base_url, timeout=5000))


def check(out: dict[str, Any], count: int) -> None:
    assert sorted(out) == sorted(r["custom_id"] for r in gemini_requests(count))
    for custom_id, outcome in out.items():
        kind = custom_id.split("-")[0]
        if kind in ("good", "repairable", "bad", "flaky"):
            assert isinstance(outcome, guardrail.Result), (custom_id, outcome)
            assert outcome.value == Ticket.model_validate_json(GOOD)
        elif kind == "hopeless":
            assert isinstance(outcome, GaveUp) and len(outcome.outcome.attempts) == 3
        else:
            assert isinstance(outcome, VendorError) and outcome.status == 400, (custom_id, outcome)


def test_mixed_job_is_validated_and_only_failed_items_are_asked_again(batch_emu, gemini_client, store):
    job = guardrail.batch.submit(gemini_client, gemini_requests(12), response_model=Ticket, store=store,
                                 live_threshold=0)
    out = collect(job)
    check(out, 12)
    assert out["repairable-1"].fixes and len(out["repairable-1"].attempts) == 1
    first, second, third = rounds_of(batch_emu)
    assert len(first) == 12
    assert sorted(second) == sorted(c for c in first if c.split("-")[0] in ("bad", "hopeless", "flaky"))
    assert sorted(third) == sorted(c for c in first if c.startswith("hopeless"))
    assert {r.api for r in batch_emu.requests} == {"gemini"}
    assert all(reasked(r) for r in batch_emu.requests if r.headers.get("x-custom-id", "").startswith("bad")
               and r.headers["x-batch-id"] != batch_emu.batches.ids()[0])


@pytest.mark.parametrize("mode", ["native", "tool", "json", "prompt"])
def test_every_mode_batches_and_its_reasks_replay_the_answer(batch_emu, gemini_client, store, mode):
    job = guardrail.batch.submit(gemini_client, gemini_requests(4, ("good", "bad")), response_model=Ticket,
                                 store=store, mode=mode, live_threshold=0)
    out = collect(job)
    assert all(isinstance(o, guardrail.Result) and o.value == Ticket.model_validate_json(GOOD) for o in out.values())
    assert [len(o.attempts) for o in out.values()] == [1, 1, 2, 2]
    sent = [r for r in batch_emu.requests if "x-batch-id" in r.headers]
    assert all((r.forced_tool is not None) == (mode == "tool") for r in sent)
    again = [r for r in sent if r.headers["x-batch-id"] != batch_emu.batches.ids()[0]]
    assert len(again) == 2 and all(reasked(r) for r in again)
    if mode == "tool":  # the replayed function call carries the signature Gemini 3 asks for, through the JSON line
        turns = again[0].body["contents"]
        assert [t["role"] for t in turns] == ["user", "model", "user"]
        assert turns[1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"


def test_usage_and_cost_add_up_across_rounds(batch_emu, gemini_client, store):
    job = guardrail.batch.submit(gemini_client, gemini_requests(2, ("good", "bad")), response_model=Ticket,
                                 store=store, live_threshold=0)
    out = collect(job)
    assert out["good-0"].usage == Usage(*USAGE)
    assert [a.usage for a in out["bad-1"].attempts] == [Usage(*USAGE), Usage(*USAGE)]
    assert out["bad-1"].usage == Usage(2 * USAGE[0], 2 * USAGE[1])
    once, twice = out["good-0"].cost_usd, out["bad-1"].cost_usd
    assert once is not None and once > 0
    assert twice == pytest.approx(2 * once)


def test_requests_are_built_by_the_gemini_endpoint(batch_emu, gemini_client, store):
    items = gemini_requests(1, ("good",), config={"max_output_tokens": 256, "system_instruction": "Be brief."})
    collect(guardrail.batch.submit(gemini_client, items, response_model=Ticket, store=store))
    (sent,) = [r for r in batch_emu.requests if "x-batch-id" in r.headers]
    assert sent.api == "gemini" and sent.model == "gemini-2.5-flash"
    assert sent.max_tokens == 256
    assert sent.output_format is not None or sent.forced_tool is not None  # the plan's mode travelled
    assert sent.system.startswith("Be brief.")


@pytest.mark.parametrize("live_threshold", [0, 5], ids=["follow-up-batch", "live"])
def test_sdk_objects_and_bytes_travel_through_the_store_unchanged(batch_emu, gemini_client, db, live_threshold):
    image = bytes(range(256))
    picture = types.Part.from_bytes(data=image, mime_type="image/png")
    items = [{"custom_id": f"bad-{n}", "model": "gemini-2.5-flash",
              "contents": [types.Content(role="user", parts=[types.Part(text=f"ticket {n}: bad"), picture])],
              "config": types.GenerateContentConfig(max_output_tokens=300, system_instruction="Be brief.")}
             for n in range(2)]
    job = guardrail.batch.submit(gemini_client, items, response_model=Ticket, store=SQLiteStore(db),
                                 live_threshold=live_threshold)
    out = collect(guardrail.batch.resume(fresh(batch_emu), job.id, store=SQLiteStore(db)))
    assert all(isinstance(o, guardrail.Result) and len(o.attempts) == 2 for o in out.values())
    assert len(batch_emu.requests) == 4 and sum(reasked(r) for r in batch_emu.requests) == 2
    for sent in batch_emu.requests:  # the first ask and the re-ask (in a batch or live) carry the same image
        (data,) = [part["inlineData"] if "inlineData" in part else part["inline_data"]
                   for turn in sent.body["contents"] for part in turn["parts"]
                   if "inlineData" in part or "inline_data" in part]
        assert base64.b64decode(data["data"].replace("-", "+").replace("_", "/")) == image  # the SDK's URL-safe base64
        assert sent.max_tokens == 300 and sent.system.startswith("Be brief.")


def test_few_failed_items_are_asked_again_live(batch_emu, gemini_client, store):
    job = guardrail.batch.submit(gemini_client, gemini_requests(4, ("good", "bad")), response_model=Ticket,
                                 store=store, live_threshold=5)
    out = collect(job)
    assert all(isinstance(o, guardrail.Result) and o.value == Ticket.model_validate_json(GOOD) for o in out.values())
    live = [r for r in batch_emu.requests if "x-batch-id" not in r.headers]
    assert len(live) == 2 and all(reasked(r) and r.api == "gemini" for r in live)
    assert out["bad-1"].usage == Usage(2 * USAGE[0], 2 * USAGE[1])


def test_expired_and_canceled_items_are_typed_errors(batch_emu, gemini_client, store):
    job = guardrail.batch.submit(gemini_client, gemini_requests(3, ("good",)), response_model=Ticket, store=store)
    batch_emu.batches.expire(after=2)
    out = collect(job)
    assert [type(out[f"good-{n}"]) for n in range(3)] == [guardrail.Result, guardrail.Result, BatchItemFailed]
    assert out["good-2"].reason == "expired"

    job = guardrail.batch.submit(gemini_client, gemini_requests(2, ("good",)), response_model=Ticket, store=store)
    job.cancel()
    out = collect(job)
    assert {type(o) for o in out.values()} == {BatchItemFailed} and {o.reason for o in out.values()} == {"canceled"}


def test_a_job_that_leaves_items_out_of_its_answers_fails_loudly(batch_emu, gemini_client, store):
    job = guardrail.batch.submit(gemini_client, gemini_requests(3, ("good",)), response_model=Ticket, store=store)
    batch_emu.batches.expire(after=1, omit=True)  # the unrun items are not in the answers at all
    with pytest.raises(BatchJobError, match="answers for 1 of its 3 requests"):
        collect(job)


def test_status_moves_through_the_job_states(batch_emu, gemini_client, store):
    job = guardrail.batch.submit(gemini_client, gemini_requests(6), response_model=Ticket, store=store)
    seen = []
    while not (status := job.status()).ended:
        seen.append(status.batches[0].status)
        assert (status.total, status.done) == (6, 0)  # the size from the job's name; done once it has ended
    seen.append(status.batches[0].status)
    assert seen == ["JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"]
    assert (status.total, status.done, status.errored) == (6, 6, 2)  # failed and flaky answered with errors


def test_a_big_round_is_split_into_several_jobs(batch_emu, gemini_client, store, monkeypatch):
    from guardrail.vendors.gemini_batch import GeminiBatch

    monkeypatch.setattr(GeminiBatch, "max_items", 4)
    job = guardrail.batch.submit(gemini_client, gemini_requests(10, ("good",)), response_model=Ticket, store=store)
    out = collect(job)
    assert len(out) == 10 and all(isinstance(o, guardrail.Result) for o in out.values())
    assert [len(r) for r in rounds_of(batch_emu)] == [4, 4, 2]
    assert len(job.status().batches) == 3


def test_a_collection_stopped_midway_goes_on_from_the_reopened_store(batch_emu, gemini_client, db):
    first = SQLiteStore(db)
    job = guardrail.batch.submit(gemini_client, gemini_requests(12), response_model=Ticket, store=first,
                                 live_threshold=0)
    for _, outcome in job.results(poll_interval=0):
        if isinstance(outcome, guardrail.Result) and len(outcome.attempts) == 2:
            break  # the first item settled in round 1: round 2 is not started yet
    first.close()

    second = SQLiteStore(db)  # reopened, with a fresh client: only the job id is carried over
    resumed = guardrail.batch.resume(fresh(batch_emu), job.id, store=second)
    assert resumed.status().round == 1
    out = collect(resumed)
    second.close()
    check(out, 12)
    answered = [(r.headers["x-batch-id"], r.headers["x-custom-id"]) for r in batch_emu.requests
                if "x-batch-id" in r.headers]
    assert len(answered) == len(set(answered)), "an item was asked twice in one round"
    assert len(batch_emu.batches.ids()) == 3


def test_async_job_rounds(batch_emu, store):
    async def main() -> dict[str, Any]:
        client = fresh(batch_emu).aio
        job = await guardrail.batch.asubmit(client, gemini_requests(12), response_model=Ticket, store=store,
                                            live_threshold=0)
        resumed = await guardrail.batch.aresume(client, job.id, store=store)
        return {custom_id: outcome async for custom_id, outcome in resumed.results(poll_interval=0)}

    check(asyncio.run(main()), 12)
    assert len(batch_emu.batches.ids()) == 3


def test_what_a_batch_item_cannot_carry_is_refused_before_anything_is_sent(batch_emu, gemini_client, store):
    items = gemini_requests(1, ("good",), config={"http_options": {"timeout": 1000}})
    with pytest.raises(UsageError, match="http_options"):
        guardrail.batch.submit(gemini_client, items, response_model=Ticket, store=store)
    assert batch_emu.batches.ids() == []


def test_a_wrapped_client_batches_the_same(batch_emu, gemini_client, store):
    wrapped = guardrail.wrap(gemini_client)
    out = collect(guardrail.batch.submit(wrapped, gemini_requests(2, ("good", "bad")), response_model=Ticket,
                                         store=store, live_threshold=0))
    assert [len(o.attempts) for o in out.values()] == [1, 2]
    assert len(batch_emu.batches.ids()) == 2


def test_a_job_of_several_models_is_refused(batch_emu, gemini_client, store):
    items = gemini_requests(1, ("good",)) + gemini_requests(1, ("bad",), model="gemini-2.5-pro")
    with pytest.raises(UsageError, match="one model's"):
        guardrail.batch.submit(gemini_client, [items[0], {**items[1], "custom_id": "other"}], response_model=Ticket,
                               store=store)
    assert batch_emu.batches.ids() == []


def test_a_vertex_ai_client_is_refused(batch_emu, store):
    vertex = genai.Client(vertexai=True, api_key="test", http_options=types.HttpOptions(
        base_url=batch_emu.gemini_base_url))
    with pytest.raises(ConfigError, match="Client"):
        guardrail.batch.submit(vertex, gemini_requests(1), response_model=Ticket, store=store)
