"""Per-request enums on the local tier: a field of a fixed contract narrowed per call to values known only then
(up to 10,000 IDs), spliced into the cached engine schema as a JSON enum."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
llguidance = pytest.importorskip("llguidance")

from support.puppet import steer  # noqa: E402

from guardrail.errors import ConfigError, SchemaViolationError  # noqa: E402
from guardrail.local import LocalModel, Regex  # noqa: E402
from guardrail.local.enums import check, parse_path, piece, splice  # noqa: E402
from guardrail.local.grammar import compile_grammar  # noqa: E402

IDS = [f"SKU-{i:05d}" for i in range(10_000)]
ODD_IDS = ['a"b', "c\\d", "한글-1", "😀", "x y", "a.b", "(x)", "[", "$^", "\t", "é", "a", "ab", "abc", "-", "\u2028"]


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1, le=9)


class Order(BaseModel):
    product_id: str
    note: str = Field(max_length=8)
    lines: list[Line] = Field(max_length=2)
    backup: str | None = Field(None, max_length=6)


def test_ten_thousand_ids_every_generation_picks_one_of_them(tiny: LocalModel) -> None:
    allowed = set(IDS)
    for seed in range(12):
        value, trace = tiny.generate_with_trace("Pick:", Order, enums={"product_id": IDS}, seed=seed,
                                                max_new_tokens=200)
        assert isinstance(value, Order) and value.product_id in allowed, trace.text
        assert trace.grammar_cache_hit or seed == 0  # the fixed part is compiled once


def test_nested_array_and_optional_paths_hold_with_odd_values(tiny: LocalModel) -> None:
    enums = {"product_id": ODD_IDS, "lines[].sku": ["left", "right", "위"], "backup": ["b1", "b2"]}
    for seed in range(10):
        value = tiny.generate("?", Order, enums=enums, seed=seed, max_new_tokens=250)
        assert value.product_id in ODD_IDS
        assert all(line.sku in ("left", "right", "위") for line in value.lines)
        assert value.backup in (None, "b1", "b2")


def test_a_puppet_gets_exactly_the_id_it_aims_at_and_never_one_outside(tiny: LocalModel) -> None:
    target = {"product_id": "SKU-04242", "note": "n", "lines": []}
    got, _ = steer(tiny.tokenizer, Order, json.dumps(target, separators=(",", ":")), enums={"product_id": IDS})
    assert isinstance(got, Order) and got.product_id == "SKU-04242"
    for value in ODD_IDS:
        got, text = steer(tiny.tokenizer, Order, json.dumps({**target, "product_id": value}, separators=(",", ":"),
                                                            ensure_ascii=False), enums={"product_id": ODD_IDS})
        assert isinstance(got, Order) and got.product_id == value, (value, text)
    got, text = steer(tiny.tokenizer, Order, json.dumps({**target, "product_id": "SKU-99999"}, separators=(",", ":")),
                      enums={"product_id": IDS[:100]})
    assert isinstance(got, Order) and got.product_id in IDS[:100], text


def test_non_string_values_are_an_enum(tiny: LocalModel) -> None:
    class Qty(BaseModel):
        qty: int

    for seed in range(5):
        assert tiny.generate("?", Qty, enums={"qty": [3, 17, 404]}, seed=seed).qty in (3, 17, 404)


def test_the_cached_engine_schema_is_never_mutated(tiny: LocalModel) -> None:
    from guardrail.contract import compile_contract

    contract = compile_contract(Order)
    compiled = compile_grammar(contract.schema, contract.schema_hash, tiny.tokenizer, tiny.vocab_size)
    before = json.dumps(compiled.engine_schema, sort_keys=True)
    spliced = splice(compiled.engine_schema or {}, {"lines[].sku": ["a"], "product_id": ["b"]})
    assert json.dumps(compiled.engine_schema, sort_keys=True) == before
    assert json.dumps(spliced, sort_keys=True) != before


@pytest.mark.parametrize(("enums", "why"), [
    ({"nope": ["a"]}, "names no property"),
    ({"lines.sku": ["a"]}, "names no property"),
    ({"product_id": []}, "at least one value"),
    ({"product_id": "abc"}, "list"),
    ({"": ["a"]}, "non-empty"),
    ({"a..b": ["a"]}, "empty property name"),
])
def test_bad_enums_are_config_errors(tiny: LocalModel, enums: Any, why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        tiny.generate("?", Order, enums=enums)


def test_enums_do_not_apply_to_a_regex(tiny: LocalModel) -> None:
    with pytest.raises(ConfigError):
        tiny.generate("?", Regex("a"), enums={"x": ["a"]})


def test_the_post_check_refuses_a_value_outside_the_enum() -> None:
    data = {"product_id": "SKU-1", "lines": [{"sku": "a"}, {"sku": "zz"}]}
    check(data, {"product_id": ["SKU-1"]}, "text")
    with pytest.raises(SchemaViolationError, match="lines"):
        check(data, {"lines[].sku": ["a", "b"]}, "text")


def test_pieces_drop_duplicates_and_keep_types() -> None:
    assert piece(["b", "a", "b"]) == {"enum": ["b", "a"]}
    assert piece([1, True, 1, None, {"k": 1}]) == {"enum": [1, True, None, {"k": 1}]}


def test_paths_parse() -> None:
    assert parse_path("a.b[].c") == ["a", "b", "[]", "c"]
    assert parse_path("m[][]") == ["m", "[]", "[]"]


odd_values = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0, max_size=6)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=st.lists(odd_values, min_size=1, max_size=30, unique=True), seed=st.integers(0, 2**16))
def test_random_enums_every_value_generated_is_one_of_them(tiny: LocalModel, values: list[str], seed: int) -> None:
    class One(BaseModel):
        pick: str

    value = tiny.generate("?", One, enums={"pick": values}, seed=seed, max_new_tokens=80)
    assert value.pick in values
