"""Re-asks: what the model is sent after an answer failed, on every endpoint.

A re-ask carries the caller's messages, the latest failed answer once and one feedback message listing its
problems; older failed answers are not replayed, so the request does not grow with each attempt. When only a
few fields of an object failed, the re-ask asks for those fields only (a schema of just them) and merges the
reply into the rest of the previous answer, which is then validated as a whole.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, model_validator
from support.calls import endpoint_client, endpoint_method

import guardrail
from guardrail.call.reask import top_field
from guardrail.gates.semantic import relation
from guardrail.parse.report import json_path
from guardrail.testing import Emulator, reply

APIS = ["chat", "responses", "messages"]


class Score(BaseModel):
    label: str
    score: int = Field(ge=1, le=5)


class Order(BaseModel):
    order_id: str
    customer: str
    priority: int = Field(ge=1, le=5)
    gift: bool
    start: int = 0
    end: int = 0


GOOD = {"order_id": "A-1", "customer": "Kim", "priority": 3, "gift": False, "start": 1, "end": 2}


def _call(emu: Emulator, api: str, model: Any, answers: list[str], **create: Any) -> Any:
    emu.script(*(reply.answer(text) for text in answers))
    client = guardrail.wrap(endpoint_client(emu, api, is_async=False), settings=guardrail.Settings(max_attempts=3))
    method, kwargs = endpoint_method(client, api)
    return method.create_with_result(response_model=model, **kwargs, **create)


def _properties(request: Any) -> set[str]:
    schema = request.schema
    if schema is None:  # prompt/json modes: the schema is in the messages; the native/tool ones are asserted
        raise AssertionError("no structured-output schema in the request")
    return set(schema.get("properties", {}))


@pytest.mark.parametrize("api", APIS)
def test_a_reask_replays_only_the_latest_answer_and_its_problems(api: str) -> None:
    answers = ['{"label": 1.5, "score": 9}', '{"label": 2.5, "score": 7}', '{"label": "third", "score": 4}']
    with Emulator() as emu:
        assert _call(emu, api, Score, answers).value == Score(label="third", score=4)
        first, second, third = emu.requests
    sent = [json.dumps(request.messages) for request in (second, third)]
    assert '9' in sent[0] and '7' in sent[1] and '9' not in sent[1]  # the second answer replayed, not the first
    assert "7" in third.last_user_text and "9" not in third.last_user_text
    assert len(third.messages) == len(second.messages) == len(first.messages) + 2  # the same size every time


@pytest.mark.parametrize("api", APIS)
def test_a_few_failing_fields_are_asked_for_alone_and_merged_into_the_rest(api: str) -> None:
    first = json.dumps({**GOOD, "priority": 9})
    with Emulator() as emu:
        result = _call(emu, api, Order, [first, '{"priority": 4}'])
        ask, fields = emu.requests
    assert result.value == Order(**{**GOOD, "priority": 4})
    assert _properties(ask) == set(Order.model_fields) and _properties(fields) == {"priority"}
    assert "`priority`" in fields.last_user_text and "less than or equal to 5" in fields.last_user_text
    assert [attempt.error_kind for attempt in result.attempts] == ["schema_violation", None]


def test_a_field_reply_that_still_fails_is_asked_for_again() -> None:
    first = json.dumps({**GOOD, "priority": 9})
    with Emulator() as emu:
        result = _call(emu, "chat", Order, [first, '{"priority": 0}', '{"priority": 2}'])
        requests = emu.requests
    assert result.value.priority == 2 and result.value.order_id == "A-1"
    assert [_properties(request) for request in requests[1:]] == [{"priority"}, {"priority"}]


def test_a_reply_with_more_than_the_fields_is_read_as_a_whole_answer_never_cut_down() -> None:
    first = json.dumps({**GOOD, "priority": 9})
    whole = json.dumps({**GOOD, "customer": "Lee", "priority": 2})
    with Emulator() as emu:
        result = _call(emu, "chat", Order, [first, whole], mode="prompt")
    assert result.value == Order(**{**GOOD, "customer": "Lee", "priority": 2})  # "Lee" kept, not the old "Kim"


def test_a_reply_with_other_keys_that_is_no_whole_answer_is_refused_not_trimmed() -> None:
    first = json.dumps({**GOOD, "priority": 9})
    with Emulator() as emu:
        result = _call(emu, "chat", Order, [first, '{"priority": 2, "customer": 5.5}', '{"priority": 2}'])
    assert result.value.customer == "Kim" and result.value.priority == 2
    assert [attempt.error_kind for attempt in result.attempts] == ["schema_violation", "schema_violation", None]


def test_the_merged_answer_is_held_to_the_rules_as_a_whole() -> None:
    first = json.dumps({**GOOD, "priority": 9, "start": 9, "end": 5})
    with Emulator() as emu:
        result = _call(emu, "chat", Order, [first, '{"priority": 2}', json.dumps(GOOD)],
                       rules=[relation("start", "<", "end")])
        _, fields, whole = emu.requests
    assert result.value == Order(**GOOD)
    assert _properties(fields) == {"priority"} and _properties(whole) == set(Order.model_fields)


class Ranged(BaseModel):
    low: int
    high: int
    note: str = ""

    @model_validator(mode="after")
    def ordered(self) -> Ranged:
        if self.low > self.high:
            raise ValueError("low must not exceed high")
        return self


@pytest.mark.parametrize(("model", "answer"), [
    (Score, '{"label": 1.5, "score": 9}'),             # half the fields or more fail
    (Ranged, '{"low": 5, "high": 1, "note": "x"}'),  # a problem of the whole object
    ({"type": "object", "properties": {k: {"type": "integer", "maximum": 5} for k in "abcd"}, "required": ["a"]},
     '{"a": 1, "b": 2, "c": 3, "d": 9}'),          # a JSON Schema contract (plain data, no field model)
])
def test_a_full_reask_where_a_field_reask_would_not_be_safe(model: Any, answer: str) -> None:
    with Emulator() as emu:
        emu.script(reply.answer(answer), reply.answer("{}"))
        client = guardrail.wrap(endpoint_client(emu, "chat", is_async=False),
                                settings=guardrail.Settings(max_attempts=2))
        method, kwargs = endpoint_method(client, "chat")
        with pytest.raises(guardrail.GuardrailError):
            method.create(response_model=model, **kwargs)
        assert len(emu.requests) == 2
        fields = set(model.model_fields) if isinstance(model, type) else set(model["properties"])
        assert _properties(emu.requests[1]) == fields
        assert "only these fields" not in emu.requests[1].last_user_text


def test_a_streamed_call_never_asks_for_fields() -> None:
    first = json.dumps({**GOOD, "priority": 9})
    with Emulator() as emu:
        emu.script(reply.answer(first), reply.answer(json.dumps(GOOD)))
        client = guardrail.wrap(endpoint_client(emu, "chat", is_async=False))
        method, kwargs = endpoint_method(client, "chat")
        with method.create_partial(response_model=Order, **kwargs) as previews:
            assert list(previews)[-1] == Order(**GOOD)
        assert _properties(emu.requests[1]) == set(Order.model_fields)


@given(st.lists(st.one_of(st.text(max_size=6), st.integers(0, 9)), min_size=1, max_size=4))
def test_the_top_field_of_a_violation_path_is_the_first_key(parts: list[str | int]) -> None:
    path = json_path(parts)
    assert top_field(path) == (parts[0] if isinstance(parts[0], str) else None)
    assert top_field("$") is None
