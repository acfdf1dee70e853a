"""Anthropic Message Batches end to end: the real anthropic SDK creates, polls and streams the emulator's results."""

from __future__ import annotations

from support.batch_jobs import GOOD, USAGE, Ticket, collect, reasked, requests, rounds_of

import guardrail
import guardrail.batch
from guardrail.errors import BatchItemFailed, GaveUp, VendorError
from guardrail.outcome import Usage


def test_mixed_job_is_validated_and_only_failed_items_are_asked_again(batch_emu, anthropic_client, store):
    job = guardrail.batch.submit(anthropic_client, requests(12, model="claude-sonnet-4-5", max_tokens=512),
                                 response_model=Ticket, store=store, live_threshold=0)
    out = collect(job)
    assert len(out) == 12
    for custom_id, outcome in out.items():
        kind = custom_id.split("-")[0]
        if kind in ("good", "repairable", "bad", "flaky"):
            assert isinstance(outcome, guardrail.Result), (custom_id, outcome)
            assert outcome.value == Ticket.model_validate_json(GOOD)
        elif kind == "hopeless":
            assert isinstance(outcome, GaveUp)
        else:
            assert isinstance(outcome, VendorError) and outcome.status == 400
    first, second, third = rounds_of(batch_emu)
    assert sorted(second) == sorted(c for c in first if c.split("-")[0] in ("bad", "hopeless", "flaky"))
    assert sorted(third) == sorted(c for c in first if c.startswith("hopeless"))
    assert out["bad-2"].usage == Usage(2 * USAGE[0], 2 * USAGE[1])
    assert all(reasked(r) for r in batch_emu.requests if r.headers.get("x-custom-id", "").startswith("bad")
               and r.headers["x-batch-id"] != batch_emu.batches.ids()[0])


def test_requests_are_built_by_the_messages_endpoint(batch_emu, anthropic_client, store):
    job = guardrail.batch.submit(anthropic_client, requests(1, ("good",), model="claude-sonnet-4-5",
                                                            max_tokens=256), response_model=Ticket, store=store)
    collect(job)
    (sent,) = [r for r in batch_emu.requests if "x-batch-id" in r.headers]
    assert sent.api == "messages" and sent.body["max_tokens"] == 256
    assert sent.output_format is not None or sent.forced_tool is not None  # the plan's mode travelled


def test_expired_and_canceled_items_are_typed_errors(batch_emu, anthropic_client, store):
    job = guardrail.batch.submit(anthropic_client, requests(3, ("good",), model="claude-sonnet-4-5", max_tokens=64),
                                 response_model=Ticket, store=store)
    batch_emu.batches.expire(after=2)
    out = collect(job)
    assert [type(out[f"good-{n}"]) for n in range(3)] == [guardrail.Result, guardrail.Result, BatchItemFailed]
    assert out["good-2"].reason == "expired"

    job = guardrail.batch.submit(anthropic_client, requests(2, ("good",), model="claude-sonnet-4-5", max_tokens=64),
                                 response_model=Ticket, store=store)
    job.cancel()
    assert {o.reason for o in collect(job).values()} == {"canceled"}


def test_a_huge_round_is_split_into_chunks(batch_emu, anthropic_client, store, monkeypatch):
    from guardrail.vendors.anthropic_batch import AnthropicBatch

    monkeypatch.setattr(AnthropicBatch, "max_items", 4)
    job = guardrail.batch.submit(anthropic_client, requests(10, ("good",), model="claude-sonnet-4-5", max_tokens=64),
                                 response_model=Ticket, store=store)
    assert [len(r) for r in rounds_of(batch_emu)] == []  # nothing answered before the batches are read
    out = collect(job)
    assert len(out) == 10 and all(isinstance(o, guardrail.Result) for o in out.values())
    assert [len(r) for r in rounds_of(batch_emu)] == [4, 4, 2]
    assert len(job.status().batches) == 3
