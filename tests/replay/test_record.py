"""Recording: wrap/decorator/chain with record= write one redacted record per structured call, through the real SDKs."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel, Field
from support.replay_contracts import Dunder, Ticket, Versioned, records, ticket

import guardrail
from guardrail.chain import Chain, vendor
from guardrail.contract import compile_contract
from guardrail.replay import JsonlRecorder, Recorder
from guardrail.testing import Emulator, reply

FAST = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.05, deadline=20)
MESSAGES = [{"role": "user", "content": "My parcel is two weeks late"}]


@pytest.fixture(autouse=True)
def _clean_config() -> Any:
    from guardrail.call import reset_config

    reset_config()
    yield
    reset_config()


def openai_client(emu: Emulator, recording: Path | Recorder, *, is_async: bool = False) -> Any:
    cls: Any = openai.AsyncOpenAI if is_async else openai.OpenAI
    return guardrail.wrap(cls(base_url=emu.openai_base_url, api_key="test", timeout=10), retry=FAST, record=recording)


def anthropic_client(emu: Emulator, recording: Path, *, is_async: bool = False) -> Any:
    cls: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
    return guardrail.wrap(cls(base_url=emu.anthropic_base_url, api_key="test", timeout=10), retry=FAST,
                          record=recording)


def test_a_clean_a_repaired_and_a_failed_call_each_leave_one_record(emu: Emulator, recording: Path) -> None:
    client = openai_client(emu, recording)
    emu.script(reply.answer(ticket(4)),
               reply.answer(ticket(9)), reply.answer(ticket(2)),
               reply.answer("no idea"), reply.answer("still no idea"), reply.answer(ticket(7)))
    assert client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket).urgency == 4
    result = client.chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES, response_model=Ticket,
                                                        prompt_version="v7")
    assert result.value.urgency == 2
    with pytest.raises(guardrail.GaveUp):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)

    clean, repaired, failed = records(recording)
    schema_hash = compile_contract(Ticket).schema_hash
    for record in (clean, repaired, failed):
        assert record["guardrail_record"] == 1
        assert (record["provider"], record["api"], record["model"]) == ("openai", "chat", "gpt-4o")
        assert record["contract"] == "support.replay_contracts.Ticket"
        assert record["schema_hash"] == schema_hash and record["schema_version"] is None
        assert record["request_hash"] == clean["request_hash"]  # one prompt, one hash (prompt_version aside)
        assert len(record["request_hash"]) == 64
    assert [a["raw"] for a in clean["attempts"]] == [ticket(4)]
    assert clean["outcome"] == {"ok": True, "value": {"urgency": 4, "summary": "late parcel"}}
    assert clean["prompt_version"] is None and repaired["prompt_version"] == "v7"
    assert [a["raw"] for a in repaired["attempts"]] == [ticket(9), ticket(2)]
    assert [a["error"] for a in repaired["attempts"]] == ["schema_violation", None]
    assert repaired["outcome"]["value"]["urgency"] == 2
    assert repaired["vendor_calls"] == 2 and result.vendor_calls == 2
    assert [a["raw"] for a in failed["attempts"]] == ["no idea", "still no idea", ticket(7)]
    assert [a["error"] for a in failed["attempts"]] == ["no_json", "no_json", "schema_violation"]
    assert failed["outcome"]["ok"] is False
    assert (failed["outcome"]["error"], failed["outcome"]["kind"]) == ("GaveUp", "gave_up")
    assert sum(record["vendor_calls"] for record in (clean, repaired, failed)) == len(emu.requests) == 6
    assert all(a["answer"] == {"wrapped": None, "absent_as_null": False} for a in failed["attempts"])


def test_another_prompt_has_another_request_hash(emu: Emulator, recording: Path) -> None:
    client = openai_client(emu, recording)
    emu.script(reply.answer(ticket(1)), reply.answer(ticket(1)))
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "other"}],
                                   response_model=Ticket)
    first, second = records(recording)
    assert first["request_hash"] != second["request_hash"]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_anthropic_messages_are_recorded_sync_and_async(emu: Emulator, recording: Path, is_async: bool) -> None:
    client = anthropic_client(emu, recording, is_async=is_async)
    emu.script(reply.answer("Sure! " + ticket(3)))
    call = client.messages.create(model="claude-haiku-4-5", max_tokens=200, messages=MESSAGES, response_model=Ticket)
    value = asyncio.run(call) if is_async else call
    assert value.urgency == 3
    (record,) = records(recording)
    assert (record["provider"], record["api"]) == ("anthropic", "messages")
    assert record["outcome"] == {"ok": True, "value": {"urgency": 3, "summary": "late parcel"}}
    assert record["attempts"][0]["raw"] is not None and ticket(3) in record["attempts"][0]["raw"]


def test_async_openai_calls_are_recorded(emu: Emulator, recording: Path) -> None:
    client = openai_client(emu, recording, is_async=True)
    emu.script(reply.answer(ticket(8)), reply.answer(ticket(5)))

    async def go() -> Any:
        return await client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)

    assert asyncio.run(go()).urgency == 5
    (record,) = records(recording)
    assert [a["error"] for a in record["attempts"]] == ["schema_violation", None]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_the_decorator_records_with_its_version(emu: Emulator, recording: Path, is_async: bool) -> None:
    raw: Any = (openai.AsyncOpenAI if is_async else openai.OpenAI)(base_url=emu.openai_base_url, api_key="test")
    emu.script(reply.answer(ticket(2)))
    if is_async:
        @guardrail.structured(async_client=raw, model="gpt-4o", record=recording, version="triage-3")
        async def triage_async(inquiry: str) -> Ticket:
            """Triage an inquiry."""
            raise AssertionError

        value = asyncio.run(triage_async("late"))
    else:
        @guardrail.structured(client=raw, model="gpt-4o", record=recording, version="triage-3")
        def triage(inquiry: str) -> Ticket:
            """Triage an inquiry."""
            raise AssertionError

        value = triage("late")
    assert value.urgency == 2
    (record,) = records(recording)
    assert record["prompt_version"] == "triage-3"
    assert record["outcome"]["value"] == {"urgency": 2, "summary": "late parcel"}


def test_configure_record_applies_to_decorated_functions(emu: Emulator, recording: Path) -> None:
    guardrail.configure(client=openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), model="gpt-4o",
                        record=str(recording))

    @guardrail.structured
    def triage(inquiry: str) -> Ticket:
        """Triage an inquiry."""
        raise AssertionError

    emu.script(reply.answer(ticket(1)))
    triage("late")
    assert len(records(recording)) == 1


def test_a_chain_records_its_vendor_tiers_calls(emu: Emulator, recording: Path) -> None:
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10)
    chain = Chain([vendor(client, "gpt-4o", retry=FAST)], record=recording)
    emu.script(reply.answer(ticket(5)))
    result = chain.run(Ticket, system="Triage.", user="late parcel", prompt_version="chain-1")
    assert result.value.urgency == 5
    (record,) = records(recording)
    assert record["prompt_version"] == "chain-1" and record["outcome"]["ok"] is True


def test_secrets_are_redacted_in_outputs_values_and_context(emu: Emulator, recording: Path) -> None:
    key = "sk-proj-abcdefghijklmnopqrstuvwx"
    client = openai_client(emu, recording)
    emu.script(reply.answer(ticket(2, f"customer pasted {key}")))
    value = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket,
                                           context={"api_key": "hunter2-not-a-pattern", "tier": "gold"})
    assert key in value.summary  # the caller gets the answer as it is; only the record is redacted
    text = recording.read_text(encoding="utf-8")
    assert key not in text and "hunter2" not in text
    (record,) = records(recording)
    assert record["attempts"][0]["raw"] == ticket(2, "customer pasted [REDACTED]")
    assert record["outcome"]["value"]["summary"] == "customer pasted [REDACTED]"
    assert record["context"] == {"api_key": "[REDACTED]", "tier": "gold"}


@pytest.mark.parametrize(("contract", "version"), [(Versioned, "2024-06"), (Dunder, "3")])
def test_a_contract_names_its_schema_version(emu: Emulator, recording: Path, contract: Any, version: str) -> None:
    client = openai_client(emu, recording)
    emu.script(reply.answer(ticket(1)))
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=contract)
    assert records(recording)[0]["schema_version"] == version


def test_vendor_errors_refusals_and_cut_off_answers_are_recorded_without_answers(emu: Emulator,
                                                                                 recording: Path) -> None:
    client = openai_client(emu, recording)
    emu.script(reply.server_error(500), reply.server_error(500), reply.refusal("I can't help with that."),
               reply.truncated('{"urgency": 1, "summ'), reply.truncated('{"urgency": 1, "summ'))
    with pytest.raises(guardrail.VendorUnavailable):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    with pytest.raises(guardrail.Refused):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    with pytest.raises(guardrail.GaveUp):  # OutputTruncated: cut off twice
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    unavailable, refused, truncated = records(recording)
    assert unavailable["outcome"]["error"] == "VendorUnavailable" and unavailable["vendor_calls"] == 2
    assert [a["raw"] for a in unavailable["attempts"]] == [None]
    assert refused["outcome"]["error"] == "Refused"
    assert truncated["outcome"]["error"] == "OutputTruncated"
    assert [a["raw"] for a in truncated["attempts"]] == ['{"urgency": 1, "summ'] * 2
    for record in (unavailable, refused, truncated):
        assert all("answer" not in attempt for attempt in record["attempts"])


class Order(BaseModel):
    sku: str
    quantity: int = Field(ge=1)
    note: str
    gift: bool


def test_a_field_reask_records_the_merged_whole_it_validated(emu: Emulator, recording: Path) -> None:
    client = openai_client(emu, recording)
    emu.script(reply.answer('{"sku": "A-1", "quantity": 0, "note": "x", "gift": false}'),
               reply.answer('{"quantity": 2}'))
    value = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Order)
    assert value.quantity == 2
    (record,) = records(recording)
    second = record["attempts"][1]
    assert second["raw"] == '{"quantity": 2}'
    assert json.loads(second["answer"]["text"]) == {"sku": "A-1", "quantity": 2, "note": "x", "gift": False}


def test_a_wrapped_root_is_recorded_with_its_key(emu: Emulator, recording: Path) -> None:
    client = openai_client(emu, recording)
    emu.script(reply.tool_call('{"result": [1, 2, 3]}'))
    assert client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=list[int],
                                          mode="tool") == [1, 2, 3]
    (record,) = records(recording)
    assert record["mode"] == "tool" and record["attempts"][0]["answer"]["wrapped"] is not None
    assert record["contract"] == "list[int]"


class Exploding(Recorder):
    def write(self, record: dict[str, Any]) -> None:
        raise OSError("disk full")


def test_a_recorder_that_fails_never_fails_the_call(emu: Emulator) -> None:
    client = openai_client(emu, Exploding())
    emu.script(reply.answer(ticket(3)))
    assert client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket).urgency == 3


def test_wrapping_a_wrapped_client_with_record_records_only_through_the_new_view(emu: Emulator,
                                                                               recording: Path) -> None:
    plain = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), retry=FAST)
    recorded = guardrail.wrap(plain, record=recording)
    emu.script(reply.answer(ticket(1)), reply.answer(ticket(2)))
    plain.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    recorded.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert [r["outcome"]["value"]["urgency"] for r in records(recording)] == [2]


def test_several_threads_append_whole_lines(emu: Emulator, recording: Path) -> None:
    emu.responder = lambda request: reply.answer(ticket(1 + len(str(request.body["messages"])) % 5))
    client = openai_client(emu, JsonlRecorder(recording))
    failures: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(10):
                client.chat.completions.create(model="gpt-4o", response_model=Ticket,
                                               messages=[{"role": "user", "content": f"thread {n} call {i}"}])
        except BaseException as error:  # pragma: no cover - reported below
            failures.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    found = records(recording)  # every line parses: no interleaved writes
    assert len(found) == 60 == len(emu.requests)
    assert len({record["request_hash"] for record in found}) == 60


def test_record_takes_a_path_or_a_recorder_only(emu: Emulator) -> None:
    with pytest.raises(guardrail.GuardrailError, match="record="):
        guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), record=42)  # type: ignore[call-overload]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_streamed_call_is_recorded_once_with_its_whole_answer(emu: Emulator, recording: Path,
                                                              is_async: bool) -> None:
    client = openai_client(emu, recording, is_async=is_async)
    emu.script(reply.answer(ticket(3)))
    kwargs: dict[str, Any] = {"model": "gpt-4o", "messages": MESSAGES, "response_model": Ticket, "stream": True}
    if is_async:
        async def go() -> Any:
            async with client.chat.completions.create_partial(**kwargs) as items:
                return [item async for item in items][-1]

        last = asyncio.run(go())
    else:
        with client.chat.completions.create_partial(**kwargs) as items:
            last = list(items)[-1]
    assert last.urgency == 3
    (record,) = records(recording)
    assert [a["raw"] for a in record["attempts"]] == [ticket(3)] and record["outcome"]["ok"] is True


def _record_three(emu: Emulator, record: Any) -> None:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), retry=FAST, record=record)
    emu.script(reply.answer(ticket(1)), reply.answer(ticket(4)), reply.answer(ticket(5)))
    for n in range(3):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": f"case {n}"}],
                                       response_model=Ticket)


def test_a_sqlite_store_holds_a_recording_several_writers_share(emu: Emulator, tmp_path: Path) -> None:
    from support.replay_contracts import Tight

    from guardrail.replay import StoreRecorder, replay
    from guardrail.store import SQLiteStore

    path = tmp_path / "records.db"
    _record_three(emu, SQLiteStore(path))  # record=store: a StoreRecorder with the default name
    _record_three(emu, StoreRecorder(SQLiteStore(path)))  # another writer on the same file
    reader = StoreRecorder(SQLiteStore(path))
    assert reader.count() == 6
    lines = list(reader.lines())
    assert [json.loads(line)["outcome"]["value"]["urgency"] for line in lines] == [1, 4, 5, 1, 4, 5]
    report = replay(reader.lines(), Tight)
    assert (report.records, report.still_valid, report.regressions) == (6, 2, 4)


def test_a_redis_store_holds_a_recording(emu: Emulator, redis_url: str) -> None:
    from support.replay_contracts import Tight

    from guardrail.replay import StoreRecorder, replay
    from guardrail.store import RedisStore

    recorder = StoreRecorder(RedisStore(redis_url), name=f"test-{id(emu)}")
    _record_three(emu, recorder)
    assert recorder.count() == 3
    report = replay(recorder.lines(), Tight)
    assert (report.records, report.regressions) == (3, 2)
