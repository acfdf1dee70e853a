"""A reasoning field after the answer fields is found (the model writes fields in schema order), at any depth;
a reasoning field first, or none, is not."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from guardrail.schema.order import REASONING_NAMES, is_reasoning, late_reasoning


class Late(BaseModel):
    answer: str
    score: int
    reasoning: str


class Early(BaseModel):
    chain_of_thought: str
    answer: str


class Step(BaseModel):
    verdict: bool
    stepRationale: str  # camel case on purpose


class Outer(BaseModel):
    thinking: str
    steps: list[Step]


def test_a_reasoning_field_after_the_answer_is_found_with_the_fields_it_follows() -> None:
    (late,) = late_reasoning(Late.model_json_schema())
    assert (late.path, late.name, late.after) == ("/properties/reasoning", "reasoning", ("answer", "score"))
    assert "put 'reasoning' first" in str(late)


def test_a_reasoning_field_first_is_fine_and_nested_objects_are_checked_too() -> None:
    assert late_reasoning(Early.model_json_schema()) == []
    (late,) = late_reasoning(Outer.model_json_schema())
    assert late.path == "/$defs/Step/properties/stepRationale" and late.after == ("verdict",)


@pytest.mark.parametrize(("name", "reads"), [("reasoning", True), ("final_rationale", True), ("myAnalysis", True),
                                             ("Explanation", True), ("reasoning_score", False),
                                             ("thoughtful", False), ("answer", False)])
def test_reasoning_names(name: str, reads: bool) -> None:
    assert is_reasoning(name) is reads


@given(st.lists(st.sampled_from(["answer", "score", "label", *REASONING_NAMES]), unique=True, max_size=8))
def test_found_exactly_when_a_reasoning_name_follows_another_name(names: list[str]) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {name: {"type": "string"} for name in names}}
    found = {late.name for late in late_reasoning(schema)}
    expected = {name for index, name in enumerate(names)
                if is_reasoning(name) and any(not is_reasoning(before) for before in names[:index])}
    assert found == expected
