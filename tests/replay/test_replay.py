"""Replay: recorded answers re-read under a changed contract give exactly the known regressions, newly valid records
and changed values, without a request to any vendor; any text or line gives a typed outcome, never a crash."""

from __future__ import annotations

import contextlib
import copy
import json
import tracemalloc
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.replay_contracts import Loose, Ticket, Tight, WithOwner, WithPriority, records, ticket

import guardrail
from guardrail.gates.semantic import rule
from guardrail.replay import judge_answer, read_records, replay
from guardrail.testing import Emulator, reply

FAST = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.05, deadline=20)
MESSAGES = [{"role": "user", "content": "triage"}]


def client_for(emu: Emulator, recording: Path) -> Any:
    return guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10), retry=FAST,
                          record=recording)


def record_answers(emu: Emulator, recording: Path, urgencies: list[int]) -> None:
    """One clean call per urgency, each recorded."""
    client = client_for(emu, recording)
    emu.script(*(reply.answer(ticket(u, f"case {n}")) for n, u in enumerate(urgencies)))
    for n, _ in enumerate(urgencies):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": f"case {n}"}],
                                       response_model=Ticket)


URGENCIES = [1, 2, 3, 4, 5, 4]


def test_a_tightened_contract_gives_exactly_the_known_regressions(emu: Emulator, recording: Path) -> None:
    record_answers(emu, recording, URGENCIES)
    sent = len(emu.requests)
    report = replay(recording, Tight)
    assert len(emu.requests) == sent  # no vendor was called
    assert (report.records, report.still_valid, report.regressions, report.newly_valid, report.still_failing,
            report.skipped, report.changed, report.unreadable) == (6, 3, 3, 0, 0, 0, 0, 0)
    assert [each.line for each in report.regressed] == [4, 5, 6]
    for each, urgency in zip(report.regressed, [4, 5, 4], strict=True):
        assert each.before == {"urgency": urgency, "summary": f"case {each.line - 1}"}
        assert each.after.kind == "schema_violation"
        assert [(p.path, p.message) for p in each.after.problems] == [
            ("$.urgency", f"Input should be less than or equal to 3 (got {urgency})")]
    recorded = records(recording)
    assert [each.request_hash for each in report.regressed] == [recorded[i]["request_hash"] for i in (3, 4, 5)]
    assert [each.trace_id for each in report.regressed] == [recorded[i]["trace_id"] for i in (3, 4, 5)]


def test_the_same_contract_replays_with_nothing_changed(emu: Emulator, recording: Path) -> None:
    record_answers(emu, recording, URGENCIES)
    report = replay(recording, Ticket)
    assert (report.records, report.still_valid, report.regressions, report.changed) == (6, 6, 0, 0)


def test_a_new_required_field_fails_every_record_at_that_path(emu: Emulator, recording: Path) -> None:
    record_answers(emu, recording, URGENCIES)
    report = replay(recording, WithOwner)
    assert (report.regressions, report.still_valid) == (6, 0)
    assert {p.path for each in report.regressed for p in each.after.problems} == {"$.owner"}


def test_a_new_defaulted_field_changes_every_value(emu: Emulator, recording: Path) -> None:
    record_answers(emu, recording, URGENCIES[:2])
    report = replay(recording, WithPriority)
    assert (report.still_valid, report.changed, report.regressions) == (2, 2, 0)
    assert report.changes[0].after.value == {"urgency": 1, "summary": "case 0", "priority": "normal"}


def test_a_loosened_contract_makes_failed_calls_newly_valid(emu: Emulator, recording: Path) -> None:
    client = client_for(emu, recording)
    emu.script(reply.answer(ticket(9)), reply.answer(ticket(8)), reply.answer(ticket(7)),  # gave up
               reply.answer(ticket(6)), reply.answer(ticket(2)),  # repaired
               reply.answer("nothing here"), reply.answer("nope"), reply.answer("no"))  # gave up, no JSON
    for _ in range(3):
        with contextlib.suppress(guardrail.GaveUp):
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    report = replay(recording, Loose)
    assert (report.records, report.newly_valid, report.still_valid, report.still_failing, report.regressions) == \
        (3, 1, 1, 1, 0)
    (fixed,) = report.fixed
    assert fixed.line == 1 and fixed.before == "gave_up"
    assert fixed.after.value == {"urgency": 9, "summary": "late parcel"}  # the first answer it accepts, as the loop
    (changed,) = report.changes  # the repaired call: its first answer is accepted now
    assert changed.before["urgency"] == 2 and changed.after.value["urgency"] == 6


def test_records_without_an_answer_are_skipped(emu: Emulator, recording: Path) -> None:
    client = client_for(emu, recording)
    emu.script(reply.server_error(500), reply.server_error(500), reply.refusal("No."), reply.answer(ticket(1)))
    for _ in range(2):
        with pytest.raises(guardrail.GuardrailError):
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    report = replay(recording, Tight)
    assert (report.records, report.skipped, report.still_valid) == (3, 2, 1)


def test_rules_are_held_to_the_recorded_context(emu: Emulator, recording: Path) -> None:
    client = client_for(emu, recording)
    emu.script(reply.answer(ticket(5)), reply.answer(ticket(5)), reply.answer(ticket(2)))
    for cap in (5, 4, 4):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket,
                                       context={"cap": cap} if cap == 5 else {"cap": 4})

    @rule
    def under_cap(value: Any, context: Any) -> Any:
        return None if value.urgency <= context["cap"] else f"urgency above {context['cap']}"

    report = replay(recording, Ticket, rules=[under_cap])
    assert (report.still_valid, report.regressions) == (2, 1)
    (regressed,) = report.regressed
    assert regressed.line == 2 and regressed.after.kind == "semantic_violation"
    assert [p.message for p in regressed.after.problems] == ["urgency above 4"]


def test_a_json_schema_contract_replays_too(emu: Emulator, recording: Path) -> None:
    record_answers(emu, recording, URGENCIES)
    schema = {"type": "object", "title": "TightSchema", "additionalProperties": False,
              "properties": {"urgency": {"type": "integer", "minimum": 1, "maximum": 3},
                             "summary": {"type": "string"}}, "required": ["urgency", "summary"]}
    report = replay(recording, schema)
    assert report.contract == "TightSchema"
    assert [each.line for each in report.regressed] == [4, 5, 6] and report.still_valid == 3


def test_field_reasks_and_wrapped_roots_replay_as_they_were_read(emu: Emulator, recording: Path) -> None:
    from pydantic import BaseModel, Field

    class Order(BaseModel):
        sku: str
        quantity: int = Field(ge=1)
        note: str
        gift: bool

    client = client_for(emu, recording)
    emu.script(reply.answer('{"sku": "A-1", "quantity": 0, "note": "x", "gift": false}'),
               reply.answer('{"quantity": 2}'))
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Order)
    report = replay(recording, Order)
    assert (report.still_valid, report.changed, report.regressions) == (1, 0, 0)

    recording.unlink()
    emu.script(reply.tool_call('{"result": [1, 2, 3]}'))
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=list[int], mode="tool")
    assert (replay(recording, list[int]).still_valid, replay(recording, list[int]).changed) == (1, 0)
    tightened = replay(recording, list[bool])
    assert tightened.regressions == 1 and tightened.regressed[0].after.problems[0].path.startswith("$.result")


def test_lines_that_are_not_records_are_counted_never_fatal(emu: Emulator, recording: Path) -> None:
    record_answers(emu, recording, [1, 4])
    with recording.open("a", encoding="utf-8") as out:
        out.write("not json\n\n")
        out.write(json.dumps({"guardrail_record": 99, "attempts": [], "outcome": {}}) + "\n")
        out.write(recording.read_text(encoding="utf-8").splitlines()[0][:40])  # a line cut short by a crash
    report = replay(recording, Tight)
    assert (report.records, report.regressions, report.unreadable) == (2, 1, 3)
    assert report.unreadable_lines == [3, 5, 6]


def test_keep_bounds_the_details_not_the_counts(emu: Emulator, recording: Path) -> None:
    record_answers(emu, recording, URGENCIES)
    report = replay(recording, Tight, keep=1)
    assert report.regressions == 3 and [each.line for each in report.regressed] == [4]
    assert report.to_dict()["details"]["regressions"][0]["line"] == 4


def one_record(emu: Emulator, recording: Path) -> dict[str, Any]:
    record_answers(emu, recording, [2])
    (record,) = records(recording)
    recording.unlink()
    return record


def test_any_recorded_text_replays_to_a_typed_outcome(emu: Emulator, recording: Path) -> None:
    template = one_record(emu, recording)

    @given(text=st.text(max_size=300), wrapped=st.sampled_from([None, "result", 5]), absent=st.booleans())
    def check(text: str, wrapped: Any, absent: bool) -> None:
        record = copy.deepcopy(template)
        record["attempts"][0]["raw"] = text
        record["attempts"][0]["answer"] = {"wrapped": wrapped, "absent_as_null": absent}
        report = replay([json.dumps(record)], Ticket)
        assert report.records == 1 and report.still_valid + report.regressions == 1
        judged = judge_answer(text, Ticket, wrapped=wrapped, absent_as_null=absent)
        assert judged.ok or (judged.kind and judged.problems)

    check()


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4), max_leaves=20)


def test_any_record_shape_or_line_replays_without_a_crash(emu: Emulator, recording: Path) -> None:
    template = one_record(emu, recording)
    keys = sorted(template)

    @given(key=st.sampled_from(keys), value=JSON, line=st.text(max_size=200))
    def check(key: str, value: Any, line: str) -> None:
        record = copy.deepcopy(template)
        record[key] = value
        report = replay([json.dumps(record), line], Tight)
        assert report.records + report.unreadable >= 1
        assert report.records == (report.still_valid + report.regressions + report.newly_valid
                                  + report.still_failing + report.skipped)
        for _number, found in read_records([line]):
            assert found is None or isinstance(found, dict)

    check()


def test_memory_stays_bounded_however_long_the_recording(emu: Emulator, recording: Path, tmp_path: Path) -> None:
    template = json.dumps(one_record(emu, recording))
    regressing = template.replace('\\"urgency\\": 2', '\\"urgency\\": 5').replace('"urgency":2', '"urgency":5')
    peaks = []
    for count in (400, 4000):
        path = tmp_path / f"big-{count}.jsonl"
        path.write_text("".join(f"{template if n % 2 else regressing}\n" for n in range(count)), encoding="utf-8")
        tracemalloc.start()
        report = replay(path, Tight, keep=50)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert (report.records, report.regressions, len(report.regressed)) == (count, count // 2, 50)
    small, large = peaks
    assert large < 1.5 * small + 256 * 1024, peaks  # ten times the records, about the same memory
