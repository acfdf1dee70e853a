"""The semantic gate: rules over validated answers, through the wrapped client against the emulator; paths through
lists and missing fields, odd statuses, missing context and hostile values."""

from __future__ import annotations

import asyncio
import math
from datetime import date
from enum import StrEnum
from typing import Any, Literal

import openai
import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs
from support.tool_env import OPEN, ToolEnv, audits

import guardrail
from guardrail.errors import Declined, GuardrailError, RuleError
from guardrail.gates.semantic import (
    Violation,
    evaluate,
    exit_status,
    implies,
    in_range,
    member_of,
    non_empty,
    relation,
    rule,
    select,
)
from guardrail.testing import Emulator, reply


class Category(StrEnum):
    billing = "billing"
    other = "other"


class Ticket(BaseModel):
    urgency: int
    category: Category
    summary: str


class Booking(BaseModel):
    start: date
    end: date
    room: str


class Answer(BaseModel):
    status: Literal["answered", "refused", "unknown"]
    text: str = ""
    evidence: list[str] = []


def ask(emu: Emulator, model: Any, **kwargs: Any) -> Any:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5),
                            retry=guardrail.RetryPolicy(max_tries=1))
    return client.chat.completions.create_with_result(model="gpt-4o", messages=[{"role": "user", "content": "go"}],
                                                      response_model=model, **kwargs)


def test_cross_field_relation_goes_back_as_feedback_then_passes(emu: Emulator) -> None:
    emu.script(reply.answer('{"start": "2026-12-05", "end": "2026-12-01", "room": "A"}'),
               reply.answer('{"start": "2026-12-01", "end": "2026-12-05", "room": "A"}'))
    result = ask(emu, Booking, rules=[relation("start", "<", "end")])
    assert result.value.end == date(2026, 12, 5) and len(result.attempts) == 2
    first = result.attempts[0]
    assert first.error_kind == "semantic_violation" and "$.start" in (first.feedback or "")
    assert "$.start" in emu.requests[1].last_user_text and "well-formed but wrong" in emu.requests[1].last_user_text


def test_implication_rule(emu: Emulator) -> None:
    rules = [implies(("urgency", "==", 5), ("category", "!=", "other"))]
    emu.script(reply.answer('{"urgency": 5, "category": "other", "summary": "x"}'),
               reply.answer('{"urgency": 5, "category": "billing", "summary": "x"}'))
    result = ask(emu, Ticket, rules=rules)
    assert result.value.category is Category.billing
    assert "$.category" in emu.requests[1].last_user_text


def test_membership_in_runtime_context_and_end_on_fail(emu: Emulator) -> None:
    rules = [member_of("evidence[*]", "retrieved", on_fail="end", what="a retrieved document id")]
    emu.script(reply.answer('{"status": "answered", "text": "t", "evidence": ["doc-1", "doc-9"]}'))
    with pytest.raises(guardrail.SemanticRejected) as caught:
        ask(emu, Answer, rules=rules, context={"retrieved": {"doc-1", "doc-2"}})
    assert "$.evidence[1]" in str(caught.value)
    assert len(emu.requests) == 1  # ended: no repair round


def test_exit_status_is_a_typed_non_answer(emu: Emulator) -> None:
    emu.script(reply.answer('{"status": "unknown", "text": ""}'))
    with pytest.raises(Declined) as caught:
        ask(emu, Answer, rules=[exit_status("status")])
    assert caught.value.status == "unknown" and caught.value.value.status == "unknown"
    assert len(emu.requests) == 1


def test_empty_answers_are_sent_back(emu: Emulator) -> None:
    emu.script(reply.answer('{"result": []}'), reply.answer('{"result": ["a"]}'))
    result = ask(emu, list[str], rules=[non_empty()])
    assert result.value == ["a"]


def test_decorator_rules_and_context_callable(emu: Emulator) -> None:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5))
    known = {"A", "B"}

    @guardrail.structured(client=client, model="gpt-4o", rules=[member_of("room", "rooms")],
                          context=lambda: {"rooms": known})
    def book(request: str) -> Booking:
        """Book a room."""
        raise NotImplementedError

    emu.script(reply.answer('{"start": "2026-12-01", "end": "2026-12-02", "room": "Z"}'),
               reply.answer('{"start": "2026-12-01", "end": "2026-12-02", "room": "B"}'))
    assert book("a room tomorrow").room == "B"
    assert "'Z' is not a known id" in emu.requests[1].last_user_text


def test_custom_rule_callables() -> None:
    @rule
    def summary_short(value: Any, context: Any) -> Any:
        return None if len(value.summary) < 10 else Violation("$.summary", "keep it under 10 characters")

    @rule(on_fail="end")
    def never(value: Any, context: Any) -> bool:
        return False

    ticket = Ticket(urgency=1, category=Category.billing, summary="a long summary")
    verdict = evaluate([summary_short, never], ticket, {})
    assert [v.path for v in verdict.violations] == ["$.summary", "$"] and verdict.end
    assert evaluate([in_range("urgency", 1, 5)], ticket, {}).ok
    assert not evaluate([in_range("urgency", 2, 5)], ticket, {}).ok


def test_select_paths() -> None:
    data = {"items": [{"sku": "a"}, {"sku": "b"}, {}], "n": 1}
    assert select(data, "items[*].sku") == [("$.items[0].sku", "a"), ("$.items[1].sku", "b")]
    assert select(data, "items[1]") == [("$.items[1]", {"sku": "b"})]
    assert select(data, "$") == [("$", data)] and select(data, "missing.x") == []
    with pytest.raises(ValueError):
        relation("a", "=~", "b")


@pytest.mark.parametrize("api", ["sync", "async"])
def test_a_rule_that_cannot_be_evaluated_is_a_typed_error_after_one_request(emu: Emulator, api: str) -> None:
    """A rule missing its context, or a rule whose own code raises, is a program fault: RuleError at once,
    with the original exception chained, never a re-ask and never a builtin escaping."""
    import re

    from guardrail.errors import GuardrailError, RuleError

    def broken(value: Any, context: Any) -> Any:
        return 1 / 0

    cases = [([member_of("evidence[*]", "retrieved")], None, "needs context['retrieved']"),
             ([rule(broken)], ZeroDivisionError, "raised ZeroDivisionError")]
    for rules, cause, message in cases:
        emu.reset()
        emu.script(reply.answer('{"status": "answered", "text": "x", "evidence": ["a"]}'))
        with pytest.raises(RuleError, match=re.escape(message)) as caught:
            if api == "sync":
                ask(emu, Answer, rules=rules)
            else:
                client = guardrail.wrap(openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5))
                asyncio.run(client.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": "go"}], response_model=Answer, rules=rules))
        assert isinstance(caught.value, GuardrailError)
        assert caught.value.rule in (rules[0].name,)
        assert (type(caught.value.__cause__) is cause) if cause else caught.value.__cause__ is None
        assert len(emu.requests) == 1  # not sent back to the model


def test_evaluate_wraps_a_raising_rule_and_keeps_the_others_typed() -> None:
    from guardrail.errors import RuleError

    @rule(name="explodes")
    def explodes(value: Any, context: Any) -> Any:
        raise AttributeError("'NoneType' object has no attribute 'x'")

    with pytest.raises(RuleError, match="explodes") as caught:
        evaluate([relation("a", "<", "b"), explodes], {"a": 1, "b": 2}, {})
    assert isinstance(caught.value.__cause__, AttributeError)


# ------------------------------------------------------------------------------- paths, statuses and hostile values


def test_semantic_paths_through_lists_and_missing_fields() -> None:
    value = {"items": [{"sku": "a"}, {}, {"sku": None}], "meta": {"ids": [1, 2]}}
    assert select(value, "items[*].sku") == [("$.items[0].sku", "a"), ("$.items[2].sku", None)]
    assert select(value, "items[5].sku") == [] and select(value, "nope.deeper[*]") == []
    assert select(value, "$.meta.ids[1]") == [("$.meta.ids[1]", 2)]
    assert evaluate([relation("start", "<", "end")], {"start": 1}, {}).ok  # a missing side is not checked
    assert not evaluate([relation("start", "<", "end")], {"start": 2, "end": "x"}, {}).ok  # incomparable fails
    assert not evaluate([in_range("items[*].n", 0, 1)], {"items": [{"n": 0.5}, {"n": True}]}, {}).ok


def test_exit_status_on_non_string_statuses() -> None:
    for status, declined in (("answered", None), ("refused", "refused"), (None, "None"), (True, "True"), (0, "0"),
                             (["answered"], "['answered']")):
        assert evaluate([exit_status()], {"status": status}, {}).declined == declined
    assert evaluate([exit_status()], {"other": 1}, {}).declined is None  # no status field at all: an answer


def test_member_of_with_missing_context_key_is_a_clear_error() -> None:
    with pytest.raises(RuleError, match="context"):
        evaluate([member_of("ids[*]", "retrieved")], {"ids": ["a"]}, {})
    assert not evaluate([member_of("ids[*]", "retrieved")], {"ids": ["a", "z"]}, {"retrieved": ["a"]}).ok


def test_member_of_rule_on_a_tool_gives_a_typed_audited_outcome(env: ToolEnv) -> None:
    env.add(lambda asset_id: asset_id, OPEN, name="reboot", rules=[member_of("asset_id", "assets")])
    with guardrail.identity(user="u"), capture_logs() as logs, pytest.raises(GuardrailError):
        env.call("reboot", {"asset_id": "srv-1"})
    assert len(audits(logs)) == 1


def test_member_of_with_unhashable_model_values_is_a_violation() -> None:
    verdict = evaluate([member_of("evidence[*]", "retrieved")], {"evidence": [{"id": "a"}, ["a"]]},
                       {"retrieved": ["a"]})
    assert len(verdict.violations) == 2


def test_in_range_rejects_nan() -> None:
    assert not evaluate([in_range("score", 0, 1)], {"score": math.nan}, {}).ok


def test_malformed_rule_paths_are_refused_when_the_rule_is_built() -> None:
    with pytest.raises(ValueError):
        in_range("scores[-1]", 0, 1)
