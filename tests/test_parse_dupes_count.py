"""The counting duplicate-key screen (``parse.dupes``): it may clear text only when no object repeats a key.

Whatever text the exact validator accepts, the counting screen must never say "no repeat" for text in
which some object gives a key twice; the fast path then keeps pydantic's last-one-wins reading away from
the caller (a conflicting repeat is ambiguous, an exact one collapses with a fix).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import jiter
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, BeforeValidator, Field, model_validator

import guardrail
from guardrail.errors import ParseError
from guardrail.parse.dupes import counter_for, may_repeat_key


class Item(BaseModel):
    sku: str
    quantity: int = Field(ge=0)
    note: str | None = None


class Order(BaseModel):
    order_id: str
    items: list[Item]
    gift: Item | None = None


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


class Injecting(BaseModel):
    a: int = 0
    b: int = 0

    @model_validator(mode="before")
    @classmethod
    def add_b(cls, data: Any) -> Any:
        return {**data, "b": 1} if isinstance(data, dict) else data


class FromString(BaseModel):
    inner: Annotated[Item, BeforeValidator(lambda v: json.loads(v) if isinstance(v, str) else v)]


def _has_repeat(text: str) -> bool:
    try:
        jiter.from_json(text.encode(), catch_duplicate_keys=True)
    except ValueError:
        return True
    return False


def _repeat_one_key(value: Any, choice: int) -> tuple[str, bool]:
    """JSON text of ``value`` where the ``choice``-th object (if any) gives its first key a second time."""
    counter = [0]

    def dump(v: Any) -> str:
        if isinstance(v, dict):
            members = [f"{json.dumps(k)}: {dump(x)}" for k, x in v.items()]
            if members and counter[0] == choice:
                members.append(members[0])
            counter[0] += 1
            return "{" + ", ".join(members) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(dump(x) for x in v) + "]"
        return json.dumps(v)

    text = dump(value)
    return text, counter[0] > choice


items = st.builds(dict, sku=st.text(max_size=5), quantity=st.integers(0, 9))
orders = st.builds(dict, order_id=st.text(max_size=5), items=st.lists(items, max_size=4))


def trees(depth: int) -> Any:
    if depth == 0:
        return st.builds(dict, name=st.text(max_size=3))
    return st.builds(dict, name=st.text(max_size=3), children=st.lists(trees(depth - 1), max_size=3))


@settings(max_examples=200, deadline=None)
@given(value=orders, choice=st.integers(0, 5))
def test_a_repeated_key_is_never_cleared_orders(value: dict[str, Any], choice: int) -> None:
    text, repeated = _repeat_one_key(value, choice)
    validated = Order.model_validate_json(text, strict=True)
    assert repeated == _has_repeat(text)
    if repeated:
        assert may_repeat_key(text, validated, Order)


@settings(max_examples=200, deadline=None)
@given(value=trees(3), choice=st.integers(0, 8))
def test_a_repeated_key_is_never_cleared_trees(value: dict[str, Any], choice: int) -> None:
    text, repeated = _repeat_one_key(value, choice)
    validated = Tree.model_validate_json(text, strict=True)
    if repeated:
        assert may_repeat_key(text, validated, Tree)
    else:
        assert not may_repeat_key(text, validated, Tree)


@settings(max_examples=100, deadline=None)
@given(value=orders, choice=st.integers(0, 5))
def test_an_exact_repeat_through_parse_collapses_with_a_fix(value: dict[str, Any], choice: int) -> None:
    text, repeated = _repeat_one_key(value, choice)
    report = guardrail.parse_report(text, Order)
    assert report.value == Order.model_validate(value)
    fixes = [fix.kind for cand in report.candidates for fix in cand.fixes]
    assert ("duplicate_key" in fixes) == repeated


def test_a_clean_text_is_cleared_by_counting_alone() -> None:
    text = json.dumps({"order_id": "A", "items": [{"sku": "x", "quantity": 1}, {"sku": "y", "quantity": 2}]})
    counter = counter_for(Order)
    assert counter is not None
    assert counter(Order.model_validate_json(text)) == text.count(":")


class OwnSchema(BaseModel):
    a: int = 0

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return handler(source)


@pytest.mark.parametrize("model", [Injecting, FromString, OwnSchema, dict[str, int], list[Any]])
def test_unsound_shapes_are_not_counted(model: Any) -> None:
    # A before-validator can set fields no key of the text gave; then counts prove nothing: jiter decides.
    assert counter_for(model) is None


def test_a_model_validator_adding_fields_cannot_hide_a_repeat() -> None:
    text = '{"a": 1, "a": 2}'
    assert may_repeat_key(text, Injecting.model_validate_json(text), Injecting)
    with pytest.raises(ParseError) as error:
        guardrail.parse(text, Injecting)
    assert error.value.kind == "ambiguous"
