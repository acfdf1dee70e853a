"""OpenAI batch jobs end to end: the real openai SDK uploads, creates, polls and reads the emulator's batch API."""

from __future__ import annotations

from typing import Any

import pytest
from support.batch_jobs import GOOD, KINDS, USAGE, Ticket, collect, reasked, requests

import guardrail
import guardrail.batch
from guardrail.errors import BatchItemFailed, BatchJobError, GaveUp, UsageError, VendorError
from guardrail.outcome import Usage
from guardrail.testing import Emulator, reply


def batch_items(emu: Emulator) -> list[tuple[str, str]]:
    """(vendor batch id, custom_id) of every item the emulator answered in a batch, in order."""
    return [(r.headers["x-batch-id"], r.headers["x-custom-id"]) for r in emu.requests if "x-batch-id" in r.headers]


def test_mixed_job_is_validated_and_only_failed_items_are_asked_again(batch_emu, openai_client, store):
    job = guardrail.batch.submit(openai_client, requests(12), response_model=Ticket, store=store, live_threshold=0)
    out = collect(job)
    assert sorted(out) == sorted(r["custom_id"] for r in requests(12))
    for custom_id, outcome in out.items():
        kind = custom_id.split("-")[0]
        if kind in ("good", "repairable", "bad", "flaky"):
            assert isinstance(outcome, guardrail.Result), (custom_id, outcome)
            assert outcome.value == Ticket.model_validate_json(GOOD)
        if kind == "repairable":
            assert outcome.fixes and len(outcome.attempts) == 1
        if kind == "hopeless":
            assert isinstance(outcome, GaveUp) and len(outcome.outcome.attempts) == 3
        if kind == "failed":
            assert isinstance(outcome, VendorError) and outcome.status == 400
    rounds: dict[str, list[str]] = {}
    for batch_id, custom_id in batch_items(batch_emu):
        rounds.setdefault(batch_id, []).append(custom_id)
    first, *again = rounds.values()
    assert len(first) == 12
    # round 1 asks only the items that failed validation (bad, hopeless) or got a retryable error (flaky)
    assert sorted(again[0]) == sorted(c for c in first if c.split("-")[0] in ("bad", "hopeless", "flaky"))
    assert sorted(again[1]) == sorted(c for c in first if c.startswith("hopeless"))
    assert len(again) == 2  # three attempts for hopeless: max_attempts


def test_reasks_carry_the_live_loops_feedback_and_usage_adds_up(batch_emu, openai_client, store):
    job = guardrail.batch.submit(openai_client, requests(3, ("bad",)), response_model=Ticket, store=store,
                                 live_threshold=0)
    out = collect(job)
    followups = [r for r in batch_emu.requests if reasked(r)]
    assert len(followups) == 3
    assert all("priority" in r.conversation_text for r in followups)  # the feedback names the missing field
    for outcome in out.values():
        assert [a.usage for a in outcome.attempts] == [Usage(*USAGE), Usage(*USAGE)]
        assert outcome.usage == Usage(2 * USAGE[0], 2 * USAGE[1])
        assert outcome.attempts[0].error is not None and outcome.attempts[1].error is None


def test_few_failed_items_are_asked_again_live(batch_emu, openai_client, store):
    job = guardrail.batch.submit(openai_client, requests(6, ("good", "bad")), response_model=Ticket, store=store,
                                 live_threshold=5)
    out = collect(job)
    assert all(isinstance(o, guardrail.Result) for o in out.values())
    live = [r for r in batch_emu.requests if "x-batch-id" not in r.headers]
    assert len(live) == 3 and all(reasked(r) for r in live)
    assert len({b for b, _ in batch_items(batch_emu)}) == 1  # no follow-up batch
    assert out["bad-1"].usage == Usage(2 * USAGE[0], 2 * USAGE[1])


def test_expired_and_canceled_items_are_typed_errors(batch_emu, openai_client, store):
    job = guardrail.batch.submit(openai_client, requests(4, ("good",)), response_model=Ticket, store=store)
    batch_emu.batches.expire(after=1)
    out = collect(job)
    assert isinstance(out["good-0"], guardrail.Result)
    for custom_id in ("good-1", "good-2", "good-3"):
        assert isinstance(out[custom_id], BatchItemFailed) and out[custom_id].reason == "expired"

    job = guardrail.batch.submit(openai_client, requests(2, ("good",)), response_model=Ticket, store=store)
    job.cancel()
    out = collect(job)
    assert {type(o) for o in out.values()} == {BatchItemFailed} and {o.reason for o in out.values()} == {"canceled"}


def test_status_moves_through_the_vendor_states(batch_emu, openai_client, store):
    job = guardrail.batch.submit(openai_client, requests(2, ("good",)), response_model=Ticket, store=store)
    seen = []
    while not (status := job.status()).ended:
        seen.append(status.batches[0].status)
    seen.append(status.batches[0].status)
    assert seen == ["in_progress", "finalizing", "completed"]
    assert (status.total, status.done, status.errored) == (2, 2, 0)


def test_wait_times_out_with_a_typed_error(batch_emu, openai_client, store):
    batch_emu.batches.hold()
    job = guardrail.batch.submit(openai_client, requests(1, ("good",)), response_model=Ticket, store=store)
    with pytest.raises(BatchJobError, match="has not ended"):
        job.wait(poll_interval=0.01, timeout=0.05)


def test_requests_are_checked_before_anything_is_sent(batch_emu, openai_client, store):
    with pytest.raises(UsageError, match="custom_id"):
        guardrail.batch.submit(openai_client, [{"model": "m", "messages": []}], response_model=Ticket, store=store)
    twice = requests(1, ("good",)) * 2
    with pytest.raises(UsageError, match="twice"):
        guardrail.batch.submit(openai_client, twice, response_model=Ticket, store=store)
    with pytest.raises(UsageError, match="response_format"):
        guardrail.batch.submit(openai_client, [{**requests(1)[0], "response_format": {"type": "json_object"}}],
                               response_model=Ticket, store=store)
    assert batch_items(batch_emu) == []


@pytest.mark.parametrize("kind", KINDS)
def test_a_wrapped_client_batches_the_same(batch_emu, openai_client, store, kind):
    wrapped = guardrail.wrap(openai_client)
    job = guardrail.batch.submit(wrapped, requests(1, (kind,)), response_model=Ticket, store=store,
                                 live_threshold=0)
    (_, outcome), = collect(job).items()
    assert isinstance(outcome, guardrail.Result) == (kind not in ("hopeless", "failed"))


def test_answers_are_held_to_the_rules_and_a_broken_rule_is_asked_again(batch_emu, openai_client, store):
    from guardrail.gates.semantic import member_of

    def model(request: Any) -> Any:
        title = "printer on fire" if reasked(request) else "made up"
        return reply.answer(f'{{"title": "{title}", "priority": 2}}', usage=USAGE)

    batch_emu.responder = model
    job = guardrail.batch.submit(openai_client, requests(2, ("good",)), response_model=Ticket, store=store,
                                 rules=[member_of("title", "titles")], context={"titles": ["printer on fire"]},
                                 live_threshold=0)
    out = collect(job)
    for outcome in out.values():
        assert outcome.value.title == "printer on fire" and len(outcome.attempts) == 2
        assert outcome.attempts[0].error_kind == "semantic_violation"
    resumed = guardrail.batch.resume(openai_client, job.id, store=store, rules=[member_of("title", "titles")],
                                     context={"titles": ["printer on fire"]})
    assert {c: o.value for c, o in collect(resumed).items()} == {c: o.value for c, o in out.items()}


def test_results_are_read_as_a_stream(batch_emu, openai_client, store):
    from guardrail.batch.records import Records

    job = guardrail.batch.submit(openai_client, requests(20, ("good",)), response_model=Ticket, store=store)
    results = job.results(poll_interval=0)
    first, _ = next(results)
    records = Records(store, job.id)
    answered = [n for n in range(20) if records.item(f"good-{n}")[1].replies]  # type: ignore[index]
    assert answered == [int(first.split("-")[1])]  # one line read, one item recorded: nothing read ahead
    assert len(list(results)) == 19


def test_cost_adds_up_across_rounds(batch_emu, openai_client, store):
    job = guardrail.batch.submit(openai_client, requests(2, ("good", "bad")), response_model=Ticket, store=store,
                                 live_threshold=0)
    out = collect(job)
    once, twice = out["good-0"].cost_usd, out["bad-1"].cost_usd
    assert once is not None and once > 0
    assert twice == pytest.approx(2 * once)  # the same usage per answer, two answers


def test_the_responses_api_batches_too(batch_emu, openai_client, store):
    items = [{"custom_id": r["custom_id"], "model": "gpt-4o-mini", "input": r["messages"][0]["content"]}
             for r in requests(4, ("good", "bad"))]
    job = guardrail.batch.submit(openai_client, items, response_model=Ticket, store=store, api="responses",
                                 live_threshold=0)
    out = collect(job)
    assert all(isinstance(o, guardrail.Result) for o in out.values())
    assert [len(o.attempts) for o in out.values()] == [1, 1, 2, 2]
    assert {r.api for r in batch_emu.requests} == {"responses"}


def test_a_platform_client_with_a_batch_service_of_its_own_is_refused(batch_emu, store):
    import openai

    from guardrail.errors import ConfigError

    azure = openai.AzureOpenAI(azure_endpoint=batch_emu.base_url, api_key="k", api_version="2024-10-21")
    with pytest.raises(ConfigError, match="AzureOpenAI"):
        guardrail.batch.submit(azure, requests(1), response_model=Ticket, store=store)


def test_a_recording_client_records_each_batch_item_once_with_its_final_outcome(batch_emu, store, tmp_path):
    import json

    import openai

    recording = tmp_path / "calls.jsonl"
    client = guardrail.wrap(openai.OpenAI(base_url=batch_emu.openai_base_url, api_key="sk-test", max_retries=0),
                            record=recording)
    items = requests(4, ("good", "bad"))
    job = guardrail.batch.submit(client, items, response_model=Ticket, store=store, live_threshold=0)
    out = collect(job)
    records = [json.loads(line) for line in recording.read_text().splitlines()]
    assert len(records) == len(items) == len(out)
    assert all(record["outcome"]["ok"] for record in records)
    # the re-asked items carry both answers the batch rounds read: the one missing a field, then the valid one
    assert sorted(len(record["attempts"]) for record in records) == [1, 1, 2, 2]
    assert all(json.loads(record["attempts"][-1]["raw"]) == json.loads(GOOD) for record in records)
