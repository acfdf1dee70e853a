"""Tests for ``guardrail.schema.lower``: lowering pydantic JSON Schemas to vendor dialects, with a report.

1. Pydantic contracts (nested models, optionals, defaults, tuples, sets, dicts, literals, enums, unions,
   recursion, bounds, formats, non-object roots, extra="allow", $ref with a description) lowered for
   each dialect: the sent schema is checked by an independent structural checker (written here, not
   borrowed from the implementation), real values of the original type validate against it (by a small
   validator of the strict subset, also written here), and the report says what it must.
2. Nothing is dropped silently: every constraint keyword of the original has a report entry.
3. The MaskBench corpus: every schema in every dialect, no exception, structure holds when ok.
4. Hypothesis: random schema-like dicts never make ``lower`` raise, are never mutated, lower deterministically.
5. Input safety: 10,000-deep nesting, reference cycles, exponential inlining, vendor size limits.
"""

from __future__ import annotations

import copy
import datetime
import enum
import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import AnyUrl, BaseModel, ConfigDict, Field, TypeAdapter, confloat, conint, constr

from guardrail.schema.lower import CompileEntry, CompileReport, Lowered, lower
from guardrail.schema.tree import at_pointer

STRICT = ("openai_strict", "anthropic_strict")
DIALECTS = (*STRICT, "grammar", "advisory")

# --------------------------------------------------------------------------------------------------------
# An independent checker of the strict subsets and a small validator of what they can express


OPENAI_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
ANTHROPIC_FORMATS = OPENAI_FORMATS | {"uri"}
COMMON_FORBIDDEN = {
    "oneOf", "allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies",
    "patternProperties", "propertyNames", "contains", "minProperties", "maxProperties", "uniqueItems",
    "prefixItems", "minLength", "maxLength", "discriminator", "definitions", "unevaluatedProperties",
    "additionalItems", "$dynamicRef", "$recursiveRef",
}
FORBIDDEN = {
    "openai_strict": COMMON_FORBIDDEN | {"default"},
    "anthropic_strict": COMMON_FORBIDDEN | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                            "multipleOf", "maxItems"},
}
LOOKAROUND = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<|\\[bB]")


def subschemas(schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node of a lowered schema (root, $defs, properties, items, anyOf), iteratively."""
    stack = [("", schema)]
    while stack:
        path, node = stack.pop()
        yield path, node
        for name, sub in (node.get("$defs") or {}).items():
            stack.append((f"{path}/$defs/{name}", sub))
        for name, sub in (node.get("properties") or {}).items():
            stack.append((f"{path}/properties/{name}", sub))
        if isinstance(node.get("items"), dict):
            stack.append((f"{path}/items", node["items"]))
        for i, sub in enumerate(node.get("anyOf") or []):
            stack.append((f"{path}/anyOf/{i}", sub))


def strict_violations(schema: dict[str, Any], dialect: str) -> list[str]:
    """What makes ``schema`` unacceptable to the strict ``dialect`` (empty when it fits)."""
    bad: list[str] = []
    if schema.get("type") != "object":
        bad.append("root is not an object schema")
    defs = schema.get("$defs") or {}
    graph: dict[str, set[str]] = {}
    for path, node in subschemas(schema):
        if not isinstance(node, dict):
            bad.append(f"{path}: not a dict")
            continue
        for kw in FORBIDDEN[dialect] & set(node):
            bad.append(f"{path}: forbidden keyword {kw}")
        if "$defs" in node and path:
            bad.append(f"{path}: nested $defs")
        types = node.get("type")
        types = [types] if isinstance(types, str) else (types or [])
        if "$ref" in node:
            ref = node["$ref"]
            if set(node) != {"$ref"}:
                bad.append(f"{path}: $ref with siblings {sorted(set(node) - {'$ref'})}")
            if not ref.startswith("#/$defs/") or ref[len("#/$defs/"):] not in defs:
                bad.append(f"{path}: dangling $ref {ref}")
            owner = path.split("/")[2] if path.startswith("/$defs/") else ""
            graph.setdefault(owner, set()).add(ref[len("#/$defs/"):])
        elif not types and not any(k in node for k in ("anyOf", "enum", "const")):
            bad.append(f"{path}: untyped")
        if "object" in types:
            if node.get("additionalProperties") is not False:
                bad.append(f"{path}: additionalProperties is not false")
            props = node.get("properties")
            if not isinstance(props, dict):
                bad.append(f"{path}: object without properties")
                props = {}
            required = node.get("required", [])
            if not set(required) <= set(props):
                bad.append(f"{path}: required names without properties")
            if dialect == "openai_strict" and set(required) != set(props):
                bad.append(f"{path}: not every property is required")
        if "array" in types and not isinstance(node.get("items"), dict):
            bad.append(f"{path}: array without items")
        if "format" in node and node["format"] not in (
                OPENAI_FORMATS if dialect == "openai_strict" else ANTHROPIC_FORMATS):
            bad.append(f"{path}: format {node['format']}")
        if dialect == "anthropic_strict":
            if node.get("minItems", 0) > 1:
                bad.append(f"{path}: minItems > 1")
            if "pattern" in node and LOOKAROUND.search(node["pattern"]):
                bad.append(f"{path}: pattern with lookaround/backreference")
            for kw in ("enum", "const"):
                values = node.get("enum", []) if kw == "enum" else [node.get("const")]
                if any(isinstance(v, (dict, list)) for v in values):
                    bad.append(f"{path}: non-scalar {kw}")
    if dialect == "anthropic_strict" and _has_cycle(graph):
        bad.append("recursive $defs")
    return bad


def shares_containers(output: Any, original: Any) -> bool:
    """Whether any dict/list of ``output`` is an object of ``original`` (the output must be a fresh copy)."""
    def containers(value: Any) -> set[int]:
        found, stack = set(), [value]
        while stack:
            node = stack.pop()
            if isinstance(node, (dict, list)):
                found.add(id(node))
                stack.extend(node.values() if isinstance(node, dict) else node)
        return found
    return bool(containers(output) & containers(original))


def check_report(lowered: Lowered) -> None:
    """Report invariants: one entry per (path, keyword) (limits aside), ok iff nothing rejected."""
    keys = [(e.path, e.keyword) for e in lowered.report.entries if e.keyword != "limits"]
    assert len(keys) == len(set(keys)), lowered.report.summary()
    assert lowered.report.ok == (not lowered.report.rejected)


def without_added_descriptions(lowered: Lowered, original: dict[str, Any]) -> dict[str, Any]:
    """A grammar lowering's schema with the words it added taken out again (each described node's description
    put back as ``original`` has it): what must equal the original, since a grammar schema is sent whole."""
    out = copy.deepcopy(lowered.schema)
    for path in {e.path for e in lowered.report.described}:
        node, before = at_pointer(out, path), at_pointer(original, path)
        if "description" in before:
            node["description"] = before["description"]
        else:
            del node["description"]
    return out


def _has_cycle(graph: dict[str, set[str]]) -> bool:
    state: dict[str, int] = {}
    for start in graph:
        stack = [(start, iter(graph.get(start, ())))]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return True
            elif nxt not in state:
                state[nxt] = 1
                stack.append((nxt, iter(graph.get(nxt, ()))))
    return False


def valid(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> bool:
    """Does ``value`` satisfy a lowered strict schema? (type, enum, const, properties, items, anyOf, $ref,
    bounds, pattern; formats are not checked)."""
    root = root if root is not None else schema
    if "$ref" in schema:
        return valid(value, root["$defs"][schema["$ref"].split("/")[-1]], root)
    if "anyOf" in schema and not any(valid(value, b, root) for b in schema["anyOf"]):
        return False
    if "enum" in schema and not any(_eq(value, v) for v in schema["enum"]):
        return False
    if "const" in schema and not _eq(value, schema["const"]):
        return False
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_is_type(value, t) for t in types):
            return False
    if isinstance(value, dict) and "properties" in schema:
        props = schema["properties"]
        if schema.get("additionalProperties") is False and not set(value) <= set(props):
            return False
        if not set(schema.get("required", [])) <= set(value):
            return False
        if not all(valid(v, props[k], root) for k, v in value.items() if k in props):
            return False
    if isinstance(value, list):
        if "items" in schema and not all(valid(v, schema["items"], root) for v in value):
            return False
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
            return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for kw, ok in (("minimum", lambda b: value >= b), ("maximum", lambda b: value <= b),
                       ("exclusiveMinimum", lambda b: value > b), ("exclusiveMaximum", lambda b: value < b)):
            if kw in schema and not ok(schema[kw]):
                return False
    return not (isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value))


def _eq(a: Any, b: Any) -> bool:
    return (type(a) is type(b) and a == b) or (
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool)
        and not isinstance(b, bool) and a == b)


def _is_type(value: Any, t: str) -> bool:
    return {
        "null": value is None, "boolean": isinstance(value, bool), "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "array": isinstance(value, list), "object": isinstance(value, dict),
    }[t]


def constraint_sites(schema: dict[str, Any]) -> set[tuple[str, str]]:
    """(pointer, keyword) for every constraint keyword in a pydantic schema (its own shapes only)."""
    listed = {"type", "enum", "const", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
              "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
              "prefixItems", "required", "additionalProperties", "anyOf", "oneOf", "allOf", "$ref", "default",
              "discriminator"}
    out = set()
    stack = [("", schema)]
    while stack:
        path, node = stack.pop()
        out.update((path, k) for k in node if k in listed)
        for key in ("$defs", "properties"):
            stack.extend((f"{path}/{key}/{n}", s) for n, s in (node.get(key) or {}).items())
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                stack.append((f"{path}/{key}", node[key]))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            stack.extend((f"{path}/{key}/{i}", s) for i, s in enumerate(node.get(key) or []))
    return out


# --------------------------------------------------------------------------------------------------------
# Contracts


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    city: str
    zip: str | None = None


class Person(BaseModel):
    name: str
    age: int = 30
    nickname: str | None = None
    email: str | None = Field(default=None, pattern=r"^[^@\s]+@[^@\s]+$")
    address: Address = Field(description="where they live")
    tags: list[str] = []
    color: Color = Color.RED


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = 9


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good: bool = True


class Owner(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    either: int | str
    pair: tuple[int, str]
    unique: set[int]
    mapping: dict[str, int]


class NoMap(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]
    either: int | str
    pair: tuple[int, str]
    same: tuple[int, int, int]
    unique: set[int]


class Tree(BaseModel):
    value: int
    children: list[Tree] = []


class Bounded(BaseModel):
    code: constr(min_length=2, max_length=5, pattern=r"^[A-Z]+$")  # type: ignore[valid-type]
    qty: conint(ge=1, le=10)  # type: ignore[valid-type]
    ratio: confloat(gt=0, lt=1, multiple_of=0.25)  # type: ignore[valid-type]
    items: list[int] = Field(min_length=2, max_length=4)


class Formats(BaseModel):
    url: AnyUrl
    when: datetime.datetime
    day: datetime.date
    ident: uuid.UUID
    word: str = Field(pattern=r"\bcat\b")


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class Segment(BaseModel):
    start: float
    end: float
    text: str


class Wrapper(BaseModel):
    inner: Segment = Field(description="the segment")
    kind: Color


SAMPLES: dict[str, tuple[Any, list[Any]]] = {
    "person": (Person, [Person(name="a", address=Address(street="s", city="c")),
                        Person(name="b", age=5, nickname="bee", email="x@y", tags=["t"], color=Color.GREEN,
                               address=Address(street="s", city="c", zip="1"))]),
    "nomap": (NoMap, [NoMap(pet=Cat(), either=1, pair=(1, "a"), same=(1, 2, 3), unique={1, 2}),
                      NoMap(pet=Dog(good=False), either="x", pair=(2, "b"), same=(0, 0, 0), unique=set())]),
    "tree": (Tree, [Tree(value=1, children=[Tree(value=2), Tree(value=3, children=[Tree(value=4)])])]),
    "bounded": (Bounded, [Bounded(code="AB", qty=3, ratio=0.5, items=[1, 2])]),
    "formats": (Formats, [Formats(url="https://x.org/a", when=datetime.datetime(2024, 1, 2, 3, 4, 5),
                                  day=datetime.date(2024, 1, 2), ident=uuid.uuid4(), word="a cat")]),
    "open": (Open, [Open(name="n")]),
    "wrapper": (Wrapper, [Wrapper(inner=Segment(start=0, end=1.5, text="t"), kind=Color.GREEN)]),
    "segments": (list[Segment], [[Segment(start=0, end=1, text="a"), Segment(start=1, end=2, text="b")], []]),
    "int": (int, [0, -5, 10**6]),
    "literal": (Literal["yes", "no"], ["yes", "no"]),
    "optional_model": (Address | None, [None, Address(street="s", city="c")]),
    "enum": (Color, [Color.RED]),
}
#: (contract, dialect) pairs that must be rejected, with the keyword that says why.
EXPECTED_REJECTIONS = {
    ("tree", "anthropic_strict"): "$ref",
}
MAPPING_CONTRACTS = {"owner": Owner, "dict": dict[str, int], "any_object": dict[str, Any]}


def _schema(contract: Any) -> dict[str, Any]:
    return TypeAdapter(contract).json_schema()


def _dump(contract: Any, value: Any) -> Any:
    return TypeAdapter(contract).dump_python(value, mode="json")


# --------------------------------------------------------------------------------------------------------
# 1. Contracts, per dialect


@pytest.mark.parametrize("dialect", STRICT)
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_strict_contracts_fit_the_subset_and_accept_real_values(name: str, dialect: str) -> None:
    contract, values = SAMPLES[name]
    schema = _schema(contract)
    before = copy.deepcopy(schema)
    lowered = lower(schema, dialect)  # type: ignore[arg-type]
    assert schema == before, "input mutated"
    expected = EXPECTED_REJECTIONS.get((name, dialect))
    if expected:
        assert not lowered.report.ok
        assert expected in {e.keyword for e in lowered.report.rejected}
        return
    assert lowered.report.ok, lowered.report.summary()
    assert strict_violations(lowered.schema, dialect) == []
    assert not shares_containers(lowered.schema, schema)
    check_report(lowered)
    json.dumps(lowered.schema)
    for value in values:
        dumped = _dump(contract, value)
        sent = {lowered.wrapped: dumped} if lowered.wrapped else dumped
        assert valid(sent, lowered.schema), (dumped, lowered.schema)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("name", sorted(SAMPLES) + sorted(MAPPING_CONTRACTS))
def test_every_constraint_has_an_entry(name: str, dialect: str) -> None:
    """Nothing is dropped silently: each constraint keyword of the original appears in the report."""
    contract = SAMPLES[name][0] if name in SAMPLES else MAPPING_CONTRACTS[name]
    schema = _schema(contract)
    report = lower(schema, dialect).report  # type: ignore[arg-type]
    if not report.ok and dialect in STRICT:
        return  # a rejected lowering may stop at the rejected node
    reported = {(e.path, e.keyword) for e in report.entries}
    assert constraint_sites(schema) - reported == set()


def test_non_object_roots_are_wrapped_for_strict_dialects_only() -> None:
    for contract in (list[Segment], int, Literal["a", "b"], Color, Address | None):
        schema = _schema(contract)
        for dialect in STRICT:
            lowered = lower(schema, dialect)  # type: ignore[arg-type]
            assert lowered.wrapped == "result"
            assert lowered.schema["required"] == ["result"] and list(lowered.schema["properties"]) == ["result"]
            assert [(e.path, e.keyword, e.action) for e in lowered.report.entries if e.keyword == "root"] == [
                ("", "root", "lowered")]
        assert lower(schema, "grammar").wrapped is None
        assert lower(schema, "grammar").schema == schema
        assert lower(schema, "advisory").wrapped is None
        advisory = lower(schema, "advisory", wrap_root=True, wrap_key="answer")
        assert advisory.wrapped == "answer" and advisory.schema["properties"]["answer"].get("type") != "object"
    assert lower(_schema(Person), "openai_strict").wrapped is None
    wrapped = lower(_schema(list[Segment]), "openai_strict", wrap_key="segments").schema
    assert set(wrapped) == {"type", "properties", "required", "additionalProperties", "$defs"}
    assert wrapped["properties"]["segments"]["items"] == {"$ref": "#/$defs/Segment"}


def test_openai_optional_fields_become_required_and_nullable() -> None:
    lowered = lower(_schema(Person), "openai_strict")
    assert lowered.absent_as_null
    props = lowered.schema["properties"]
    assert set(lowered.schema["required"]) == set(props)
    assert "null" in props["age"]["type"] and props["age"]["type"][0] == "integer"
    assert props["nickname"]["anyOf"][-1] == {"type": "null"}
    assert {"type": "null"} in props["address"]["properties"]["zip"]["anyOf"]
    assert all("default" not in node for _, node in subschemas(lowered.schema))
    entries = {(e.path, e.keyword): e for e in lowered.report.entries}
    assert entries[("", "required")].action == "lowered"
    assert entries[("", "required")].detail == (
        "optional -> required + nullable (a null means absent): age, tags, color; "
        "optional -> required, already nullable: nickname, email")
    assert entries[("/$defs/Address", "required")].action == "lowered"
    assert entries[("/properties/age", "default")].action == "lowered"
    assert valid({**_dump(Person, SAMPLES["person"][1][0]), "age": None}, lowered.schema)
    assert not valid({k: v for k, v in _dump(Person, SAMPLES["person"][1][0]).items() if k != "age"},
                     lowered.schema)


def test_anthropic_keeps_optional_fields_and_defaults() -> None:
    lowered = lower(_schema(Person), "anthropic_strict")
    assert not lowered.absent_as_null
    assert lowered.report.ok
    assert sorted(lowered.schema["required"]) == ["address", "name"]
    assert lowered.schema["properties"]["age"] == {"title": "Age", "type": "integer", "default": 30}
    assert valid({"name": "x", "address": {"street": "s", "city": "c"}}, lowered.schema)


def test_unions_tuples_sets() -> None:
    for dialect in STRICT:
        lowered = lower(_schema(NoMap), dialect)  # type: ignore[arg-type]
        props = lowered.schema["properties"]
        assert props["pet"]["anyOf"] == [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]
        assert props["either"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
        assert props["pair"]["items"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
        assert props["same"]["items"] == {"type": "integer"}
        assert props["unique"] == {"title": "Unique", "type": "array", "items": {"type": "integer"},
                                   "description": "No duplicate items"}  # uniqueItems restated in words
        by = {(e.path, e.keyword): e.action for e in lowered.report.entries}
        assert by[("/properties/pet", "oneOf")] == "lowered"
        assert by[("/properties/pet", "discriminator")] == "post_validated"
        assert by[("/properties/either", "anyOf")] == "enforced"
        assert by[("/properties/pair", "prefixItems")] == "lowered"
        assert by[("/properties/unique", "uniqueItems")] == "post_validated"
        if dialect == "openai_strict":
            assert (props["pair"]["minItems"], props["pair"]["maxItems"]) == (2, 2)
            assert by[("/properties/pair", "minItems")] == "enforced"
        else:
            assert "minItems" not in props["pair"] and by[("/properties/pair", "minItems")] == "post_validated"


def test_mappings_are_rejected_in_strict_modes_but_not_elsewhere() -> None:
    for name, contract in MAPPING_CONTRACTS.items():
        schema = _schema(contract)
        for dialect in STRICT:
            report = lower(schema, dialect).report  # type: ignore[arg-type]
            assert not report.ok, name
            assert {e.keyword for e in report.rejected} == {"additionalProperties"}, report.summary()
            assert "silent data loss" in report.rejected[0].detail
        assert lower(schema, "grammar").report.ok and lower(schema, "advisory").report.ok


def test_extra_allow_is_lowered_with_a_note() -> None:
    for dialect in STRICT:
        lowered = lower(_schema(Open), dialect)  # type: ignore[arg-type]
        assert lowered.report.ok and lowered.schema["additionalProperties"] is False
        entry = next(e for e in lowered.report.entries if e.keyword == "additionalProperties")
        assert (entry.path, entry.action) == ("", "lowered") and "won't be produced" in entry.detail


def test_ref_with_description_is_inlined() -> None:
    schema = _schema(Wrapper)
    assert schema["properties"]["inner"] == {"$ref": "#/$defs/Segment", "description": "the segment"}
    for dialect in STRICT:
        lowered = lower(schema, dialect)  # type: ignore[arg-type]
        inner = lowered.schema["properties"]["inner"]
        assert "$ref" not in inner and inner["description"] == "the segment" and inner["type"] == "object"
        assert set(inner["properties"]) == {"start", "end", "text"}
        assert ("/properties/inner", "$ref", "lowered") in {(e.path, e.keyword, e.action)
                                                            for e in lowered.report.entries}


def test_recursion_openai_keeps_refs_anthropic_rejects() -> None:
    schema = _schema(Tree)
    assert schema["$ref"] == "#/$defs/Tree"
    openai = lower(schema, "openai_strict")
    assert openai.report.ok and openai.wrapped is None and openai.schema["type"] == "object"
    assert openai.schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert any(e.keyword == "$ref" and e.detail == "recursive reference" and e.action == "enforced"
               for e in openai.report.entries)
    anthropic = lower(schema, "anthropic_strict")
    assert [(e.keyword, e.action) for e in anthropic.report.rejected] == [("$ref", "rejected")]
    assert "recursi" in anthropic.report.rejected[0].detail
    assert lower(schema, "grammar").report.ok
    advisory = lower(schema, "advisory", wrap_root=True)
    assert advisory.wrapped is None and advisory.schema["type"] == "object"
    assert advisory.schema["$defs"] == schema["$defs"]


def test_bounds_and_formats_per_dialect() -> None:
    def actions(contract: Any, dialect: str) -> dict[tuple[str, str], str]:
        report = lower(_schema(contract), dialect).report  # type: ignore[arg-type]
        return {(e.path.rsplit("/", 1)[-1], e.keyword): e.action for e in report.entries}

    openai, anthropic, grammar = (actions(Bounded, d) for d in ("openai_strict", "anthropic_strict", "grammar"))
    assert openai[("qty", "minimum")] == openai[("ratio", "multipleOf")] == "enforced"
    assert openai[("code", "minLength")] == openai[("code", "maxLength")] == "post_validated"
    assert openai[("code", "pattern")] == openai[("items", "minItems")] == openai[("items", "maxItems")] == "enforced"
    assert anthropic[("qty", "minimum")] == anthropic[("ratio", "exclusiveMinimum")] == "post_validated"
    assert anthropic[("items", "minItems")] == anthropic[("items", "maxItems")] == "post_validated"
    assert anthropic[("code", "pattern")] == "enforced"
    assert grammar[("code", "minLength")] == grammar[("qty", "minimum")] == "enforced"
    assert grammar[("ratio", "multipleOf")] == grammar[("ratio", "exclusiveMinimum")] == "post_validated"

    openai, anthropic, grammar = (actions(Formats, d) for d in ("openai_strict", "anthropic_strict", "grammar"))
    assert openai[("url", "format")] == "post_validated" and anthropic[("url", "format")] == "enforced"
    assert grammar[("url", "format")] == "post_validated"
    for field in ("when", "day", "ident"):
        assert openai[(field, "format")] == anthropic[(field, "format")] == grammar[(field, "format")] == "enforced"
    assert openai[("word", "pattern")] == "enforced" and anthropic[("word", "pattern")] == "post_validated"
    sent = lower(_schema(Formats), "anthropic_strict").schema["properties"]
    assert "pattern" not in sent["word"] and sent["url"]["format"] == "uri"


def test_grammar_and_advisory_send_the_schema_unchanged() -> None:
    schema = _schema(Owner)
    grammar = lower(schema, "grammar")
    # unchanged but for the words restating what the decoder does not enforce (uniqueItems)
    assert grammar.schema["properties"]["unique"]["description"] == "No duplicate items"
    assert without_added_descriptions(grammar, schema) == schema and grammar.schema is not schema
    assert grammar.report.ok
    assert grammar.report.lowered == () and not grammar.absent_as_null
    advisory = lower(schema, "advisory")
    assert advisory.schema == schema and advisory.report.ok
    assert {e.action for e in advisory.report.entries} == {"post_validated"}
    unresolvable = {"type": "object", "properties": {"a": {"$ref": "https://example.com/x.json"}}}
    assert not lower(unresolvable, "grammar").report.ok
    assert lower(unresolvable, "advisory").report.ok
    assert not lower(unresolvable, "openai_strict").report.ok


def test_report_api() -> None:
    lowered = lower(_schema(NoMap), "openai_strict")
    report = lowered.report
    assert isinstance(lowered, Lowered) and isinstance(report, CompileReport)
    assert all(isinstance(e, CompileEntry) for e in report.entries)
    for action in ("enforced", "lowered", "post_validated", "rejected"):
        assert report.by_action(action) == getattr(report, action)  # type: ignore[arg-type]
        assert all(e.action == action for e in report.by_action(action))  # type: ignore[arg-type]
    assert len(report.enforced) + len(report.lowered) + len(report.post_validated) == len(report.entries)
    lines = report.summary().splitlines()
    assert len(lines) == len(report.entries) + 1 and lines[0].startswith("openai_strict: ok")
    data = json.loads(json.dumps(report.to_dict()))
    assert data["ok"] is True and data["dialect"] == "openai_strict" and len(data["entries"]) == len(report.entries)
    rejected = lower(_schema(Owner), "openai_strict").report
    assert not rejected.ok and rejected.summary().startswith("openai_strict: REJECTED")
    assert rejected.rejected[0].path == "/properties/mapping"


def test_bad_arguments() -> None:
    for bad in (None, [], "schema", 1, True):
        with pytest.raises(TypeError):
            lower(bad, "openai_strict")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        lower({}, "no_such_dialect")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        lower({}, "openai_strict", wrap_key="")
    cyclic: dict[str, Any] = {"type": "object", "properties": {}}
    cyclic["properties"]["self"] = cyclic
    with pytest.raises(ValueError):
        lower(cyclic, "grammar")


# --------------------------------------------------------------------------------------------------------
# Hand-written schemas: merging, unions, references


def test_allof_merges_exactly_or_rejects() -> None:
    schema = {
        "$defs": {"Base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
        "allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"name": {"type": "string"}}, "required": ["name"]}],
    }
    for dialect in STRICT:
        lowered = lower(schema, dialect)  # type: ignore[arg-type]
        assert lowered.report.ok, lowered.report.summary()
        assert lowered.schema["properties"] == {"id": {"type": "integer"}, "name": {"type": "string"}}
        assert lowered.schema["required"] == ["id", "name"]
        assert ("", "allOf", "lowered") in {(e.path, e.keyword, e.action) for e in lowered.report.entries}
    clash = {"allOf": [{"type": "string", "pattern": "a"}, {"type": "string", "pattern": "b"}]}
    report = lower({"type": "object", "properties": {"x": clash}}, "openai_strict").report
    assert [(e.path, e.keyword) for e in report.rejected] == [("/properties/x", "allOf")]
    closed = {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False},
                        {"type": "object", "properties": {"b": {"type": "string"}}}]}
    assert not lower(closed, "openai_strict").report.ok


def test_union_siblings_are_distributed_and_contradicting_branches_dropped() -> None:
    schema = {"type": "object", "properties": {"v": {
        "type": "string", "maxLength": 9, "anyOf": [{"pattern": "^a"}, {"type": "null"}, {"enum": ["x", "ab"]}]}}}
    lowered = lower(schema, "openai_strict")
    assert lowered.report.ok, lowered.report.summary()
    branches = lowered.schema["properties"]["v"]["anyOf"]
    said = "At most 9 characters"  # the distributed maxLength, restated in each branch
    assert branches[0] == {"type": "string", "pattern": "^a", "description": said}
    assert branches[1] == {"type": "string", "enum": ["x", "ab"], "description": said}
    assert branches[-1] == {"type": "null"}  # the nullable wrapper for an optional property
    assert any("dropped" in e.detail for e in lowered.report.entries)


def test_references_of_every_kind() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"$ref": "#/definitions/A"},
            "b": {"$ref": "#/properties/a"},
            "c": {"$ref": "#anchor"},
            "d": {"$ref": "#/definitions/A", "description": "with a sibling"},
        },
        "required": ["a", "b", "c", "d"],
        "definitions": {"A": {"type": "integer", "minimum": 1}, "B": {"$anchor": "anchor", "type": "boolean"}},
    }
    lowered = lower(schema, "openai_strict")
    assert lowered.report.ok, lowered.report.summary()
    props = lowered.schema["properties"]
    assert props["a"] == {"$ref": "#/$defs/A"} and props["c"] == {"$ref": "#/$defs/B"}
    assert lowered.schema["$defs"] == {"A": {"type": "integer", "minimum": 1}, "B": {"type": "boolean"}}
    assert props["b"] == {"type": "integer", "minimum": 1}
    assert props["d"] == {"description": "with a sibling", "type": "integer", "minimum": 1}
    assert not strict_violations(lowered.schema, "openai_strict")


def test_reference_cycles_terminate() -> None:
    cases = [
        {"$ref": "#"},
        {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}, "$ref": "#/$defs/A"},
        {"type": "object", "properties": {"me": {"$ref": "#"}, "x": {"$ref": "#/properties/me"}}},
        {"$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}], "type": "object"}}, "$ref": "#/$defs/A"},
        {"type": "object", "properties": {"n": {"anyOf": [{"$ref": "#/properties/n"}, {"type": "null"}]}}},
    ]
    for schema in cases:
        for dialect in DIALECTS:
            lowered = lower(schema, dialect)  # type: ignore[arg-type]
            json.dumps(lowered.schema)
            if dialect == "anthropic_strict" and schema is not cases[0]:
                assert not lowered.report.ok
            if dialect in STRICT and lowered.report.ok:
                assert not strict_violations(lowered.schema, dialect)
    root_recursion = lower(cases[2], "openai_strict")
    assert root_recursion.report.ok, root_recursion.report.summary()
    assert root_recursion.schema["properties"]["me"]["anyOf"][0] == {"$ref": "#/$defs/root"}


# --------------------------------------------------------------------------------------------------------
# 3. MaskBench


def _find_corpus() -> Path | None:
    here = Path(__file__).resolve().parents[2]
    for root in (os.environ.get("GUARDRAIL_CORPORA"), here.parent / "shared" / "corpora", "/work/shared/corpora"):
        if root and (Path(root) / "maskbench").is_dir():
            return Path(root) / "maskbench"
    return None


MASKBENCH = _find_corpus()


@pytest.mark.skipif(MASKBENCH is None, reason="MaskBench corpus not found")
@pytest.mark.slow
def test_maskbench_lowers_in_every_dialect() -> None:
    assert MASKBENCH is not None
    schemas = [json.loads(line)["schema"] for f in sorted(MASKBENCH.glob("*.jsonl")) for line in f.open()]
    assert len(schemas) > 1000
    counts = {d: {"ok": 0, "rejected": 0} for d in DIALECTS}
    for schema in schemas:
        before = json.dumps(schema, sort_keys=True)
        for dialect in DIALECTS:
            lowered = lower(schema, dialect)  # type: ignore[arg-type]
            counts[dialect]["ok" if lowered.report.ok else "rejected"] += 1
            check_report(lowered)
            assert not shares_containers(lowered.schema, schema)
            if dialect in STRICT and lowered.report.ok:
                assert strict_violations(lowered.schema, dialect) == [], (schema, lowered.report.summary())
            if dialect == "grammar":
                assert without_added_descriptions(lowered, schema) == schema and lowered.wrapped is None
        assert json.dumps(schema, sort_keys=True) == before
    print("MaskBench ok/rejected per dialect:", counts)
    total = len(schemas)
    assert counts["advisory"]["ok"] == total
    assert counts["grammar"]["ok"] > 0.98 * total
    for dialect in STRICT:
        assert 0.5 * total < counts[dialect]["ok"] < total  # most fit; the corpus has maps, `{}` and recursion
    assert counts["anthropic_strict"]["ok"] <= counts["openai_strict"]["ok"]


# --------------------------------------------------------------------------------------------------------
# 4. Hypothesis


REFS = st.sampled_from(["#/$defs/A", "#/$defs/B", "#", "#/properties/a", "#/definitions/C", "#nope", "x.json",
                        "#/$defs/A/properties/a", "#/$defs/A/items"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text("ab", max_size=2))
TYPES = st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null", "bogus"])
LEAVES = st.one_of(
    st.fixed_dictionaries({"type": TYPES}),
    st.fixed_dictionaries({"type": st.lists(TYPES, max_size=3)}),
    st.fixed_dictionaries({"enum": st.lists(SCALARS | st.lists(SCALARS, max_size=2), max_size=3)}),
    st.fixed_dictionaries({"const": SCALARS}),
    st.fixed_dictionaries({"$ref": REFS}),
    st.fixed_dictionaries({"type": st.just("string")}, optional={
        "pattern": st.sampled_from(["^a", "(?=a)", r"\1", "[", "x"]),
        "format": st.sampled_from(["uri", "date", "email", "weird"]), "minLength": st.integers(0, 3)}),
    st.fixed_dictionaries({"type": st.just("integer")}, optional={
        "minimum": st.integers(-2, 2), "exclusiveMaximum": st.booleans() | st.integers(0, 5),
        "multipleOf": st.integers(1, 3), "default": SCALARS}),
    st.just({}), st.booleans(),
)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    names = st.sampled_from(["a", "b", "c/d", "~e"])
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("object")}, optional={
            "properties": st.dictionaries(names, children, max_size=3),
            "required": st.lists(names, max_size=3),
            "additionalProperties": st.booleans() | children,
            "patternProperties": st.dictionaries(st.just("^x"), children, max_size=1),
            "minProperties": st.integers(0, 2), "default": st.dictionaries(names, SCALARS, max_size=1),
        }),
        st.fixed_dictionaries({"type": st.just("array")}, optional={
            "items": children | st.lists(children, max_size=2), "prefixItems": st.lists(children, max_size=3),
            "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3), "uniqueItems": st.booleans(),
        }),
        st.fixed_dictionaries({}, optional={
            "anyOf": st.lists(children, max_size=3), "oneOf": st.lists(children, max_size=3),
            "allOf": st.lists(children, max_size=3), "not": children, "type": TYPES,
            "discriminator": st.just({"propertyName": "a"}), "$ref": REFS, "description": st.just("d"),
            "if": children, "then": children, "properties": st.dictionaries(names, children, max_size=2),
        }),
    )


SCHEMAS = st.recursive(LEAVES, _extend, max_leaves=12)
DOCUMENTS = st.builds(
    lambda body, defs, definitions: {**body, "$defs": defs, "definitions": definitions}
    if isinstance(body, dict) else {"allOf": [body], "$defs": defs},
    SCHEMAS, st.fixed_dictionaries({}, optional={"A": SCHEMAS, "B": SCHEMAS}),
    st.fixed_dictionaries({}, optional={"C": SCHEMAS}),
)


@given(DOCUMENTS)
@pytest.mark.slow
def test_random_schemas_never_raise_never_mutate_and_are_deterministic(schema: dict[str, Any]) -> None:
    before = copy.deepcopy(schema)
    for dialect in DIALECTS:
        first = lower(schema, dialect)  # type: ignore[arg-type]
        assert schema == before
        second = lower(schema, dialect)  # type: ignore[arg-type]
        assert first == second
        json.dumps(first.schema)
        json.dumps(first.report.to_dict())
        check_report(first)
        assert not shares_containers(first.schema, schema)
        if dialect in STRICT and first.report.ok:
            assert strict_violations(first.schema, dialect) == [], first.report.summary()
        if dialect == "advisory":
            assert first.report.ok and first.schema == schema


@given(st.one_of(st.none(), st.integers(), st.text(), st.lists(st.integers())))
def test_non_mapping_input_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError):
        lower(value, "openai_strict")


# --------------------------------------------------------------------------------------------------------
# 5. Input safety and vendor limits


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
    return schema


@pytest.mark.slow
def test_ten_thousand_levels_do_not_recurse() -> None:
    deep = _nested(10_000)
    for dialect in DIALECTS:
        lowered = lower(deep, dialect)  # type: ignore[arg-type]
        if dialect == "advisory":
            assert lowered.report.ok
        else:
            assert [(e.keyword, e.action) for e in lowered.report.rejected] == [("limits", "rejected")]
    chain: dict[str, Any] = {"type": "object", "properties": {}, "$defs": {}}
    for i in range(3000):
        chain["$defs"][f"D{i}"] = {"type": "array", "items": {"$ref": f"#/$defs/D{i + 1}"}}
    chain["$defs"]["D3000"] = {"type": "integer"}
    chain["properties"]["x"] = {"$ref": "#/$defs/D0"}
    for dialect in DIALECTS:
        assert lower(chain, dialect).report is not None  # type: ignore[arg-type]


def test_openai_nesting_limit_and_anthropic_has_none() -> None:
    assert lower(_nested(10), "openai_strict").report.ok
    report = lower(_nested(11), "openai_strict").report
    assert [(e.keyword, e.action) for e in report.rejected] == [("limits", "rejected")]
    assert "nested 11 levels" in report.rejected[0].detail
    assert lower(_nested(100), "anthropic_strict").report.ok


def test_exponential_inlining_hits_the_node_budget() -> None:
    defs = {f"D{i}": {"type": "object", "properties": {
        "l": {"$ref": f"#/$defs/D{i + 1}", "description": "l"},
        "r": {"$ref": f"#/$defs/D{i + 1}", "description": "r"}}, "required": ["l", "r"]} for i in range(40)}
    defs["D40"] = {"type": "integer"}
    lowered = lower({"$ref": "#/$defs/D0", "$defs": defs}, "anthropic_strict")
    assert any(e.keyword == "limits" and "subschemas" in e.detail for e in lowered.report.rejected)


def test_size_limits() -> None:
    def obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
        return {"type": "object", "properties": props, "required": list(props) if required is None else required}

    many = obj({f"p{i}": {"type": "integer"} for i in range(5001)})
    assert "limits" in {e.keyword for e in lower(many, "openai_strict").report.rejected}
    # an enum over OpenAI's limits is left out of the strict schema (the type stays) and validated after parsing
    enum = obj({"e": {"type": "integer", "enum": list(range(1001))}})
    shed = lower(enum, "openai_strict")
    assert shed.report.ok and shed.schema["properties"]["e"] == {"type": "integer"}
    assert [(e.path, e.keyword, e.action) for e in shed.report.post_validated] == [("/properties/e", "enum",
                                                                                    "post_validated")]
    kept = lower(obj({"e": {"type": "integer", "enum": list(range(1000))}}), "openai_strict")
    assert kept.report.ok and kept.schema["properties"]["e"]["enum"] == list(range(1000))
    big = obj({"e": {"type": "string", "enum": [f"{i:0>70}" for i in range(251)]}})
    assert lower(big, "openai_strict").schema["properties"]["e"] == {"type": "string"}
    two = obj({"a": {"enum": [f"a{i}" for i in range(600)]}, "b": {"enum": list(range(500))}})
    lowered = lower(two, "openai_strict")  # 1,100 values: only the larger enum goes, the other still fits
    assert lowered.schema["properties"]["a"] == {"type": "string"}
    assert len(lowered.schema["properties"]["b"]["enum"]) == 500
    mixed = obj({"m": {"enum": [*range(600), *map(str, range(600))]}})  # no one type to keep: still rejected
    assert "limits" in {e.keyword for e in lower(mixed, "openai_strict").report.rejected}
    optional = obj({f"o{i}": {"type": "integer"} for i in range(25)}, required=[])
    assert "limits" in {e.keyword for e in lower(optional, "anthropic_strict").report.rejected}
    assert lower(obj({f"o{i}": {"type": "integer"} for i in range(24)}, []), "anthropic_strict").report.ok
    unions = obj({f"u{i}": {"type": ["integer", "null"]} for i in range(17)})
    assert "limits" in {e.keyword for e in lower(unions, "anthropic_strict").report.rejected}

    class ManyOptional(BaseModel):
        model_config = ConfigDict(extra="forbid")
        a0: int | None = None
        a1: int | None = None
        a2: int | None = None
        a3: int | None = None
        a4: int | None = None
        a5: int | None = None
        a6: int | None = None
        a7: int | None = None
        a8: int | None = None
        a9: int | None = None
        b0: int | None = None
        b1: int | None = None
        b2: int | None = None
        b3: int | None = None
        b4: int | None = None
        b5: int | None = None
        b6: int | None = None

    report = lower(_schema(ManyOptional), "anthropic_strict").report
    assert [e.detail for e in report.rejected] == ["17 properties typed by anyOf or a type array (max 16)"]
    assert lower(_schema(ManyOptional), "openai_strict").report.ok

