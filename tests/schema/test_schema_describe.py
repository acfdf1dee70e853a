"""Constraints a dialect does not enforce are restated in words in the description of their field: the wording,
the merge with the user's description, and properties over random constrained schemas (every dropped keyword is
described, the user's text is kept whole as the prefix, lowering stays deterministic, nothing enforced is said)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from guardrail.schema.describe import DESCRIBED, merge_description, restate
from guardrail.schema.lower import lower
from guardrail.testing.reach import constraints, locate, reach, said_in_words

# -------------------------------------------------------------------------------------------------------- wording


def words(node: dict[str, Any], *keywords: str) -> list[str]:
    return [phrase for phrase, _ in restate(node, keywords or list(node))]


def test_wording_of_each_kind() -> None:
    assert words({"type": "integer", "minimum": 1, "maximum": 5}) == ["an integer from 1 to 5"]
    assert words({"type": "number", "exclusiveMinimum": 0, "maximum": 1}) == ["a number greater than 0 and at most 1"]
    assert words({"type": "integer", "minimum": 1}) == ["an integer of at least 1"]
    assert words({"minimum": 1, "exclusiveMaximum": 9}) == ["at least 1 and less than 9"]
    assert words({"type": "number", "multipleOf": 0.5}) == ["a multiple of 0.5"]
    assert words({"minimum": 1, "exclusiveMinimum": True}) == ["greater than 1"]  # draft 4
    assert words({"type": "string", "maxLength": 80}) == ["at most 80 characters"]
    assert words({"minLength": 1}) == ["at least 1 character"] and words({"minLength": 2, "maxLength": 2}) == [
        "exactly 2 characters"]
    assert words({"minItems": 2, "maxItems": 5, "uniqueItems": True}) == ["2 to 5 items", "no duplicate items"]
    assert words({"uniqueItems": False}) == []
    assert words({"pattern": r"^[A-Z]{3}-\d+$"}) == [r"matches the pattern ^[A-Z]{3}-\d+$"]
    assert words({"format": "date"}) == ["a date, YYYY-MM-DD"]
    assert words({"format": "no-such-format"}) == []  # validators ignore unknown formats: nothing to say
    assert words({"minProperties": 1, "maxProperties": 3}) == ["1 to 3 properties"]
    assert words({"enum": [{"a": 1}, [2]]}) == ['one of {"a":1}, [2]']
    assert words({"const": "x"}) == ['exactly "x"']
    assert words({"dependentRequired": {"a": ["b"]}}) == ['if "a" is given, so is "b"']
    assert words({"not": {"const": 0}}) == ['does not match {"const":0}']
    assert words({"contains": {"type": "integer"}, "minContains": 2}) == [
        'at least 2 items matching {"type":"integer"}']
    assert words({"if": {"const": 1}, "then": {"minimum": 0}}, "if", "then") == [
        'if it matches {"const":1}, it matches {"minimum":0}']
    assert words({"prefixItems": [{"type": "integer", "title": "W"}, {"type": "string"}]}, "prefixItems") == [
        'items in this order: {"type":"integer"}, {"type":"string"}']
    # only the keywords asked for are said: an enforced minimum beside a dropped exclusiveMaximum
    assert words({"type": "integer", "minimum": 1, "exclusiveMaximum": 9}, "exclusiveMaximum") == [
        "an integer less than 9"]


def test_merging_keeps_the_users_text_whole() -> None:
    assert merge_description("How urgent", ["an integer from 1 to 5"]) == "How urgent (an integer from 1 to 5)"
    assert merge_description(None, ["at most 80 characters", "matches the pattern ^a"]) == (
        "At most 80 characters; matches the pattern ^a")
    assert merge_description("  ", ["x"]) == "  X"  # a blank description says nothing, but is kept
    assert merge_description("Note (see above).", ["x"]) == "Note (see above). (x)"
    assert merge_description("kept", []) is None


def test_merged_members_each_apply() -> None:
    """allOf members with different values of a removed keyword: the tighter bound is said, or every value."""
    schema = {"type": "object", "properties": {"v": {"allOf": [
        {"type": "string", "maxLength": 9, "not": {"const": "a"}}, {"maxLength": 5, "not": {"const": "b"}}]}}}
    sent = lower(schema, "anthropic_strict").schema["properties"]["v"]
    assert sent["description"] == 'At most 5 characters; does not match {"const":"a"}; does not match {"const":"b"}'


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5, description="How urgent")
    title: str = Field(max_length=80)


def test_a_tuple_of_different_items_says_their_order() -> None:
    class Parcel(BaseModel):
        parcel: tuple[int, str]
        same: tuple[int, int]

    for dialect in ("openai_strict", "anthropic_strict"):
        lowered = lower(Parcel.model_json_schema(), dialect)  # type: ignore[arg-type]
        sent = lowered.schema["properties"]
        assert sent["parcel"]["items"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
        assert sent["parcel"]["description"].startswith('Items in this order: {"type":"integer"}, {"type":"string"}')
        assert "order" not in sent["same"].get("description", "")  # one item schema: the order says nothing
        entry = next(e for e in lowered.report.entries if e.keyword == "prefixItems" and "parcel" in e.path)
        assert entry.action == "lowered" and entry.described.startswith("items in this order")


def test_report_says_where_each_dropped_keyword_is_described() -> None:
    report = lower(Ticket.model_json_schema(), "anthropic_strict").report
    said = {(e.path, e.keyword): e.described for e in report.entries}
    assert said[("/properties/urgency", "minimum")] == said[("/properties/urgency", "maximum")] == (
        "an integer from 1 to 5")
    assert said[("/properties/title", "maxLength")] == "at most 80 characters"
    assert said[("/properties/urgency", "type")] == ""  # enforced: nothing said
    assert {e.keyword for e in report.described} == {"minimum", "maximum", "maxLength"}
    openai = lower(Ticket.model_json_schema(), "openai_strict").report
    assert {e.keyword for e in openai.described} == {"maxLength"}  # OpenAI enforces the bounds
    assert lower(Ticket.model_json_schema(), "advisory").report.described == ()  # the schema is shown whole


# ----------------------------------------------------------------------------------------- random constrained schemas

descriptions = st.one_of(st.none(), st.just(""), st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
                         st.sampled_from(["How urgent", "Note (see above).", "Ends with a period."]))


def _with(draw: Any, node: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    for kw, values in options.items():
        if draw(st.booleans()):
            node[kw] = draw(values)
    description = draw(descriptions)
    if description is not None:
        node["description"] = description
    return node


@st.composite
def leaf(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["integer", "number", "string", "enum", "const", "boolean"]))
    small = st.integers(-5, 20)
    if kind in ("integer", "number"):
        return _with(draw, {"type": kind}, {
            "minimum": small, "maximum": small, "exclusiveMinimum": small, "exclusiveMaximum": small,
            "multipleOf": st.sampled_from([0.5, 2, 3])})
    if kind == "string":
        return _with(draw, {"type": "string"}, {
            "minLength": st.integers(0, 4), "maxLength": st.integers(4, 90),
            "pattern": st.sampled_from([r"^[A-Z]{3}-\d+$", r"\bcat\b", "^(?=a)", "x"]),
            "format": st.sampled_from(["date", "date-time", "email", "uri", "uuid", "hostname", "color"])})
    if kind == "enum":
        return _with(draw, {"type": "string", "enum": draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3,
                                                                    unique=True))}, {})
    if kind == "const":
        return _with(draw, {"const": draw(st.sampled_from([1, "x", True]))}, {})
    return _with(draw, {"type": "boolean"}, {})


def _object(draw: Any, children: Any) -> dict[str, Any]:
    props = draw(st.dictionaries(st.sampled_from(["a", "b", "name", "이름", "x y"]), children, min_size=1,
                                 max_size=3))
    node = {"type": "object", "properties": props, "additionalProperties": False,
            "required": draw(st.lists(st.sampled_from(sorted(props)), unique=True))}
    return _with(draw, node, {"minProperties": st.integers(0, 2), "maxProperties": st.integers(2, 4)})


@st.composite
def composite(draw: Any, children: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["array", "object", "optional", "tuple"]))
    if kind == "tuple":
        members = draw(st.lists(children, min_size=1, max_size=3))
        return {"type": "array", "prefixItems": members, "minItems": len(members), "maxItems": len(members)}
    if kind == "array":
        return _with(draw, {"type": "array", "items": draw(children)}, {
            "minItems": st.integers(0, 3), "maxItems": st.integers(3, 9), "uniqueItems": st.booleans()})
    if kind == "optional":
        inner = draw(children)
        return {"anyOf": [inner, {"type": "null"}], **({"description": "maybe"} if draw(st.booleans()) else {})}
    return _object(draw, children)


nodes = st.recursive(leaf(), composite, max_leaves=8)


@st.composite
def schemas(draw: Any) -> dict[str, Any]:
    root = _object(draw, nodes)
    if draw(st.booleans()):  # a constrained definition, referenced from a property (and a list of it)
        root["$defs"] = {"Def": draw(nodes)}
        root["properties"]["ref"] = {"$ref": "#/$defs/Def"}
        root["properties"]["refs"] = {"type": "array", "items": {"$ref": "#/$defs/Def"}}
    return root


def _descriptions(schema: dict[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """Every (data location, description) of ``schema``."""
    return [(loc, node["description"]) for loc in sorted(set(_locations(schema))) for node in locate(schema, loc)
            if isinstance(node.get("description"), str)]


def _locations(schema: dict[str, Any]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    stack: list[tuple[tuple[str, ...], Any, int]] = [((), schema, 0)]
    while stack:
        loc, node, hops = stack.pop()
        if not isinstance(node, dict) or hops > 8:
            continue
        found.append(loc)
        for kw in ("anyOf", "oneOf", "allOf"):
            stack.extend((loc, b, hops) for b in node.get(kw) or ())
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            stack.append((loc, schema.get("$defs", {}).get(ref.split("/")[-1]), hops + 1))
        for name, sub in (node.get("properties") or {}).items():
            stack.append(((*loc, name), sub, hops))
        if isinstance(node.get("items"), dict):
            stack.append(((*loc, "[]"), node["items"], hops))
    return found


@settings(max_examples=150, deadline=None)
@given(schemas())
def test_every_dropped_keyword_is_described_and_the_users_text_kept(schema: dict[str, Any]) -> None:
    before = copy.deepcopy(schema)
    for dialect in ("openai_strict", "anthropic_strict", "grammar", "advisory"):
        lowered = lower(schema, dialect)  # type: ignore[arg-type]
        again = lower(copy.deepcopy(schema), dialect)  # type: ignore[arg-type]
        assert json.dumps(lowered.schema) == json.dumps(again.schema), "lowering is not deterministic"
        assert lowered.report == again.report
        assert schema == before, "input mutated"
        if not lowered.report.ok:
            continue
        # every keyword the dialect does not enforce (and that has words) is described, in the report too
        for entry in lowered.report.entries:
            if entry.action == "post_validated" and entry.keyword in DESCRIBED and dialect != "advisory":
                nothing_to_say = (entry.keyword == "format" and "'color'" in entry.detail) or (
                    entry.keyword == "uniqueItems" and "uniqueItems\": false" in json.dumps(schema))
                assert entry.described or nothing_to_say, (dialect, entry, lowered.report.summary())
            if entry.action not in ("post_validated", "lowered"):
                assert entry.described == "", entry
        # each constraint reaches the model: kept as a keyword, or said in words at that very field
        shown = [(lowered.schema, True)]
        for constraint in constraints(schema):
            if constraint.keyword == "format" and constraint.value == "color":
                continue
            assert reach(constraint, shown) != "missing", (dialect, str(constraint), lowered.schema)
            if dialect != "grammar":  # strict: what is sent is enforced, so it is not said twice
                for node in locate(lowered.schema, constraint.location):
                    if node.get(constraint.keyword) == constraint.value:
                        assert not said_in_words(constraint, node.get("description")), str(constraint)
        # the user's description is kept whole, as the prefix of what is sent
        sent_descriptions = _descriptions(lowered.schema)
        for loc, given_text in _descriptions(schema):
            assert any(at == loc and text.startswith(given_text) for at, text in sent_descriptions), (loc, given_text)
        if dialect == "advisory":
            assert lowered.schema == schema  # shown whole: no words added
