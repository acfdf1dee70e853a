"""Property: whatever the model sends, a wrapped call returns a valid value or raises a CallError - nothing else.

Arbitrary model text (and valid JSON wrapped in fences and prose) goes through the real openai SDK, the
emulator and the attempt loop. A value that comes back must satisfy the contract; a failure must carry
every raw output.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError, ValidationInfo, field_validator

import guardrail
from guardrail.errors import CallError
from guardrail.testing import Emulator, reply


class Reading(BaseModel):
    sensor: str
    value: float
    ok: bool
    tags: list[str] = Field(default_factory=list, max_length=3)


@pytest.fixture(scope="module")
def setup() -> Iterator[tuple[Emulator, Any]]:
    with Emulator() as emu:
        raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5)
        yield emu, guardrail.wrap(raw, retry=guardrail.RetryPolicy(max_tries=1))


def ask(setup: tuple[Emulator, Any], outputs: list[str]) -> Any:
    emu, client = setup
    emu.reset()
    emu.script(*(reply.answer(o) for o in outputs))
    return client.chat.completions.create_with_result(model="gpt-4o", messages=[{"role": "user", "content": "go"}],
                                                      response_model=Reading, max_attempts=len(outputs))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.text(max_size=200), min_size=1, max_size=2))
def test_any_text_gives_a_valid_value_or_a_call_error(setup: tuple[Emulator, Any], outputs: list[str]) -> None:
    try:
        result = ask(setup, outputs)
    except CallError as error:
        assert error.raw_outputs == outputs[: len(error.raw_outputs)]
        assert len(error.outcome.attempts) <= len(outputs)
        return
    assert isinstance(result.value, Reading)
    Reading.model_validate(result.value.model_dump())


readings = st.builds(Reading, sensor=st.text(min_size=1, max_size=20),
                     value=st.floats(allow_nan=False, allow_infinity=False, width=32),
                     ok=st.booleans(), tags=st.lists(st.text(max_size=5), max_size=3))
wrappers = st.sampled_from(["{}", "```json\n{}\n```", "Sure! Here it is:\n{}\nHope this helps!", "<json>{}</json>"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(readings, wrappers)
def test_wrapped_valid_answers_come_back_equal_in_one_call(setup: tuple[Emulator, Any], value: Reading,
                                                           wrapper: str) -> None:
    text = wrapper.replace("{}", json.dumps(value.model_dump()), 1)
    result = ask(setup, [text])
    assert result.value == value
    assert result.vendor_calls == 1


class Reserved(BaseModel):
    """A contract whose validator depends on the call's context: the code must be one the caller allows."""

    code: str
    seats: int = Field(ge=1)

    @field_validator("code")
    @classmethod
    def allowed(cls, code: str, info: ValidationInfo) -> str:
        if code not in (info.context or {}).get("codes", ()):
            raise ValueError(f"code {code!r} is not allowed here")
        return code


codes = st.text(alphabet="ABCDEFGH", min_size=1, max_size=3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(codes, st.integers(min_value=-2, max_value=9), st.sets(codes, max_size=4), wrappers)
def test_with_context_the_wrapper_agrees_with_pydantic_given_the_same_context(
        setup: tuple[Emulator, Any], code: str, seats: int, allowed: set[str], wrapper: str) -> None:
    """On every parse path (clean, fenced, in prose, tagged) the call accepts exactly what pydantic accepts
    with the same context, and returns the same value; the with_raw_response flavor agrees too."""
    emu, client = setup
    payload = json.dumps({"code": code, "seats": seats})
    context = {"codes": allowed}
    try:
        expected: Reserved | None = Reserved.model_validate_json(payload, context=context)
    except ValidationError:
        expected = None
    for method in (client.chat.completions, client.with_raw_response.chat.completions):
        emu.reset()
        emu.script(reply.answer(wrapper.replace("{}", payload, 1)))
        try:
            got = method.create(model="gpt-4o", messages=[{"role": "user", "content": "go"}],
                                response_model=Reserved, max_attempts=1, context=context)
        except guardrail.GaveUp:
            assert expected is None
            continue
        value = got if isinstance(got, Reserved) else got.parse()
        assert expected is not None and value == expected
