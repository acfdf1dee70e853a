"""The emulator's batch APIs through the bare SDKs: uploads, status steps, results and their shapes, expiry,
cancel, errors per item, items recorded with their batch."""

from __future__ import annotations

import io
import json
from typing import Any

import anthropic
import openai
import pytest

from guardrail.testing import Emulator, reply


def openai_lines(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


def upload(client: openai.OpenAI, count: int) -> str:
    body = "".join(json.dumps({"custom_id": f"r{n}", "method": "POST", "url": "/v1/chat/completions",
                               "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"q{n}"}]}})
                   + "\n" for n in range(count))
    return client.files.create(file=("in.jsonl", io.BytesIO(body.encode())), purpose="batch").id


def test_openai_batch_steps_and_answers_each_line_by_the_script(emu: Emulator) -> None:
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0)
    file_id = upload(client, 3)
    assert client.files.retrieve(file_id).purpose == "batch"
    emu.script(reply.answer("one"), reply.error(400, message="bad one"), reply.answer("three"))
    batch = client.batches.create(input_file_id=file_id, endpoint="/v1/chat/completions", completion_window="24h")
    assert batch.status == "validating" and batch.request_counts is not None and batch.request_counts.total == 3
    steps = [client.batches.retrieve(batch.id).status for _ in range(4)]
    assert steps == ["in_progress", "finalizing", "completed", "completed"]
    done = client.batches.retrieve(batch.id)
    assert done.request_counts is not None and (done.request_counts.completed, done.request_counts.failed) == (2, 1)
    good, bad = openai_lines(client, done.output_file_id), openai_lines(client, done.error_file_id)
    assert [line["custom_id"] for line in good] == ["r0", "r2"]
    assert good[0]["response"]["body"]["choices"][0]["message"]["content"] == "one"
    assert bad[0]["response"]["status_code"] == 400 and bad[0]["response"]["body"]["error"]["message"] == "bad one"
    assert [(r.headers["x-batch-id"], r.headers["x-custom-id"]) for r in emu.requests] == \
        [(batch.id, "r0"), (batch.id, "r1"), (batch.id, "r2")]


def test_openai_expiry_and_cancel_leave_items_unrun(emu: Emulator) -> None:
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0)
    emu.responder = lambda request: reply.answer("ok")
    expiring = client.batches.create(input_file_id=upload(client, 3), endpoint="/v1/chat/completions",
                                     completion_window="24h")
    emu.batches.expire(expiring.id, after=1)
    done = client.batches.retrieve(expiring.id)
    assert done.status == "expired"
    assert [line["error"]["code"] for line in openai_lines(client, done.error_file_id)] == ["batch_expired"] * 2

    canceled = client.batches.create(input_file_id=upload(client, 2), endpoint="/v1/chat/completions",
                                     completion_window="24h")
    assert client.batches.cancel(canceled.id).status == "cancelling"
    done = client.batches.retrieve(canceled.id)
    assert done.status == "cancelled" and done.output_file_id is None
    assert {line["error"]["code"] for line in openai_lines(client, done.error_file_id)} == {"batch_cancelled"}


def test_held_batches_stay_in_progress(emu: Emulator) -> None:
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0)
    emu.responder = lambda request: reply.answer("ok")
    emu.batches.hold()
    batch = client.batches.create(input_file_id=upload(client, 1), endpoint="/v1/chat/completions",
                                  completion_window="24h")
    assert {client.batches.retrieve(batch.id).status for _ in range(5)} == {"in_progress"}
    emu.batches.hold(False)
    assert [client.batches.retrieve(batch.id).status for _ in range(2)] == ["finalizing", "completed"]


def test_anthropic_message_batch_results_stream(emu: Emulator) -> None:
    client = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="k", max_retries=0)
    emu.script(reply.answer("hi"), reply.overloaded())
    requests: Any = [{"custom_id": f"m{n}", "params": {"model": "claude-sonnet-4-5", "max_tokens": 16,
                                                      "messages": [{"role": "user", "content": "q"}]}}
                     for n in range(3)]
    batch = client.messages.batches.create(requests=requests)
    assert batch.processing_status == "in_progress" and batch.results_url is None
    emu.batches.expire(batch.id, after=2)
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended" and ended.results_url is not None
    counts = ended.request_counts
    assert (counts.succeeded, counts.errored, counts.expired, counts.processing) == (1, 1, 1, 0)
    results = {line.custom_id: line.result for line in client.messages.batches.results(batch.id)}
    assert results["m0"].type == "succeeded" and results["m0"].message.content[0].text == "hi"
    assert results["m1"].type == "errored" and results["m1"].error.error.type == "overloaded_error"
    assert results["m2"].type == "expired"


def test_unknown_batches_are_404s(emu: Emulator) -> None:
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch_nope")
    with pytest.raises(anthropic.NotFoundError):
        anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="k", max_retries=0).messages.batches.retrieve(
            "msgbatch_nope")
