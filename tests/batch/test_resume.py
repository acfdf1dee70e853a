"""A job picked up by another process or store handle: submitted and partly collected in one, resumed and
collected whole in another (fresh client, store reopened), on a SQLite file and on a real redis-server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.batch_jobs import Ticket, requests

import guardrail
import guardrail.batch
from guardrail.errors import BatchJobError, ConfigError
from guardrail.store import RedisStore, SQLiteStore
from guardrail.testing import Emulator

ROOT = Path(__file__).resolve().parents[2]


def asked(emu: Emulator) -> Counter[tuple[str, str]]:
    """How often each (vendor batch, custom_id) was answered."""
    return Counter((r.headers["x-batch-id"], r.headers["x-custom-id"]) for r in emu.requests
                   if "x-batch-id" in r.headers)


def fresh_openai(emu: Emulator) -> Any:
    import openai

    return openai.OpenAI(base_url=emu.openai_base_url, api_key="sk-test", max_retries=0)


def check_whole(out: dict[str, Any], emu: Emulator) -> None:
    assert sorted(out) == sorted(r["custom_id"] for r in requests(12))
    for custom_id, outcome in out.items():
        good = custom_id.split("-")[0] not in ("hopeless", "failed")
        assert isinstance(outcome, guardrail.Result) == good, (custom_id, outcome)
    counts = asked(emu)
    assert set(counts.values()) == {1}, "an item was asked twice in one round"
    assert len({batch for batch, _ in counts}) == 3  # round 0 and the two re-ask rounds, none repeated


def test_a_process_killed_while_collecting_is_resumed_by_another(batch_emu, db):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    done = subprocess.run([sys.executable, "-m", "support.batch_worker", batch_emu.openai_base_url, str(db), "job-1",
                           "3"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert len(done.stdout.split()) == 3

    store = SQLiteStore(db)  # reopened, with a fresh client: only the job id is carried over
    job = guardrail.batch.resume(fresh_openai(batch_emu), "job-1", store=store)  # response_model imported by name
    out = dict(job.results(poll_interval=0))
    check_whole(out, batch_emu)
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_collection_stopped_in_a_later_round_goes_on_from_the_store(batch_emu, openai_client, db, redis_url,
                                                                      backend):
    def open_store() -> Any:
        return SQLiteStore(db) if backend == "sqlite" else RedisStore(redis_url, prefix=f"t-{db.parent.name}:")

    first = open_store()
    job = guardrail.batch.submit(openai_client, requests(12), response_model=Ticket, store=first, live_threshold=0)
    for _, outcome in job.results(poll_interval=0):
        if isinstance(outcome, guardrail.Result) and len(outcome.attempts) == 2:
            break  # the first item settled in round 1: round 2 is not started yet
    first.close()

    second = open_store()
    resumed = guardrail.batch.resume(fresh_openai(batch_emu), job.id, store=second, response_model=Ticket)
    assert resumed.status().round == 1
    out = dict(resumed.results(poll_interval=0))
    check_whole(out, batch_emu)
    second.close()


def test_resume_checks_the_job_and_the_contract(batch_emu, openai_client, store):
    with pytest.raises(BatchJobError, match="no batch job"):
        guardrail.batch.resume(openai_client, "nope", store=store)
    job = guardrail.batch.submit(openai_client, requests(1), response_model=Ticket, store=store)

    class Other(Ticket):
        extra: int

    with pytest.raises(ConfigError, match="not the contract"):
        guardrail.batch.resume(openai_client, job.id, store=store, response_model=Other)


def test_a_stop_while_the_follow_up_round_is_sent_loses_no_item(batch_emu, openai_client, store, monkeypatch):
    from guardrail.vendors.openai_batch import OpenAIBatch

    job = guardrail.batch.submit(openai_client, requests(12, ("bad",)), response_model=Ticket, store=store,
                                 live_threshold=0)
    monkeypatch.setattr(OpenAIBatch, "max_items", 5)  # the follow-up round: three files, 5 + 5 + 2 items
    real_submit, sent = OpenAIBatch.submit, []

    def submit_then_stop(self: OpenAIBatch, client: Any, lines: Any, **kwargs: Any) -> str:
        if len(sent) == 1:
            raise KeyboardInterrupt  # the process is stopped after the first file became a batch
        sent.append(real_submit(self, client, lines, **kwargs))
        return sent[-1]

    monkeypatch.setattr(OpenAIBatch, "submit", submit_then_stop)
    with pytest.raises(KeyboardInterrupt):
        for _ in job.results(poll_interval=0):
            pass
    monkeypatch.setattr(OpenAIBatch, "submit", real_submit)

    again = guardrail.batch.resume(fresh_openai(batch_emu), job.id, store=SQLiteStore(store.path))
    out = dict(again.results(poll_interval=0))
    assert sorted(out) == sorted(r["custom_id"] for r in requests(12, ("bad",)))
    assert all(isinstance(o, guardrail.Result) and len(o.attempts) == 2 for o in out.values())
    follow_up = Counter(custom_id for batch, custom_id in asked(batch_emu) if batch != batch_emu.batches.ids()[0])
    assert set(follow_up.values()) == {1}  # each item asked once more: the 5 sent before the stop are not resent


def test_a_submission_stopped_midway_is_not_read_as_a_whole_job(batch_emu, openai_client, store):
    def requests_then_stop() -> Any:
        yield from requests(3)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        guardrail.batch.submit(openai_client, requests_then_stop(), response_model=Ticket, store=store,
                               job_id="half")
    job = guardrail.batch.resume(openai_client, "half", store=store)
    with pytest.raises(BatchJobError, match="did not finish"):
        list(job.results(poll_interval=0))
