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


def _repeat_one_key(value: Any, choice: int, ascii_only: bool = True) -> tuple[str, bool]:
    """JSON text of ``value`` where the ``choice``-th object (if any) gives its first key a second time; strings
    written with escapes (``ascii_only``) or raw."""
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
        return json.dumps(v, ensure_ascii=ascii_only)

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


#: Strings full of colons (timestamps, URLs, "key: value" notes) and non-ASCII, written raw or escaped.
colon_text = st.text(alphabet=st.sampled_from(["a", ":", "é", "한", " ", "/"]), max_size=6)
colon_items = st.builds(dict, sku=colon_text, quantity=st.integers(0, 9),
                        note=st.one_of(st.none(), colon_text))
colon_orders = st.builds(dict, order_id=colon_text, items=st.lists(colon_items, max_size=3))


@settings(max_examples=300, deadline=None)
@given(value=colon_orders, choice=st.integers(0, 5), ascii_only=st.booleans())
def test_colons_in_strings_never_clear_a_repeat(value: dict[str, Any], choice: int, ascii_only: bool) -> None:
    text, repeated = _repeat_one_key(value, choice, ascii_only)
    validated = Order.model_validate_json(text, strict=True)
    assert repeated == _has_repeat(text)
    assert may_repeat_key(text, validated, Order) == repeated
    if not repeated and "\\u" not in text:  # written raw: counting alone clears it, however many colons
        counter = counter_for(Order, strings=True)
        assert counter is not None and counter(validated) == text.count(":")


@pytest.mark.parametrize("text", [
    # the losing copy's value holds a written colon; the winning copy's an escaped one
    '{"order_id": "a:b", "order_id": "\\u003a\\u003a", "items": []}',
    '{"order_id": "x", "order_id": "\\u003a", "items": []}',
    '{"order_id": "x", "items": [{"sku": "s", "quantity": 1, "sku": "\\u003a"}]}',
    '{"order_id": "x:", "items": [], "order_id": "y"}',
])
def test_an_escaped_colon_cannot_stand_in_for_a_repeated_member(text: str) -> None:
    validated = Order.model_validate_json(text, strict=True)
    assert _has_repeat(text)
    assert may_repeat_key(text, validated, Order)


def test_a_clean_text_with_timestamps_and_urls_is_cleared_by_counting_alone() -> None:
    """Counting the colons of string values clears the common case (times, URLs) without a full parse."""
    value = {"order_id": "2026-12-01T10:00:00Z", "items": [{"sku": "https://x.example/a:b", "quantity": 1,
                                                            "note": "note: fragile"}]}
    text = json.dumps(value, ensure_ascii=False)
    counter = counter_for(Order, strings=True)
    assert counter is not None
    assert counter(Order.model_validate_json(text)) == text.count(":")
    fields_only = counter_for(Order)
    assert fields_only is not None and fields_only(Order.model_validate_json(text)) < text.count(":")
    assert not may_repeat_key(text, Order.model_validate_json(text), Order)
