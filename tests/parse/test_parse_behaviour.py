"""Behaviour tests for guardrail's parse layer, written against the spec (issue text), not the implementation.

Every test drives the public API (``guardrail.parse`` / ``guardrail.parse_report``) with real model-like
text and asserts on values, error kinds, fixes (kind + JSON path) and the feedback sent back to the model.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from guardrail import GuardrailError, ParseError, SchemaViolationError, TruncatedJSONError, parse, parse_report
from guardrail.errors import AmbiguousError, InputLimitError, NoJSONError
from guardrail.parse import Fix, Limits, ParseReport

# --------------------------------------------------------------------------------------------------------
# Contracts used throughout
# --------------------------------------------------------------------------------------------------------


class Person(BaseModel):
    name: str
    age: int


class Segment(BaseModel):
    start: float
    duration: float
    text: str


class Transcript(BaseModel):
    title: str
    segments: list[Segment]


class Priced(BaseModel):
    unit_price: float = 0.0


class Product(BaseModel):
    name: str
    unit_price: float


class Wrapper(BaseModel):
    product: Priced


class Category(StrEnum):
    billing = "billing"
    technical = "technical"
    other = "other"


class Ticket(BaseModel):
    category: Category


class Rating(BaseModel):
    score: int


class Measure(BaseModel):
    value: float


class Flag(BaseModel):
    enabled: bool


class Tagged(BaseModel):
    tags: list[str]


class TaggedMin(BaseModel):
    tags: list[str] = Field(min_length=3)


class LineItem(BaseModel):
    name: str
    price: float


class Order(BaseModel):
    items: list[LineItem]


class Config(BaseModel):
    options: dict[str, int]


class Reading(BaseModel):
    value: float | None


class StrictPerson(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    age: int


class StrictLine(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    price: float


class StrictOrder(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[StrictLine]


class LoosePerson(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    age: int


class OpenPerson(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    age: int


class OpenPriced(BaseModel):
    model_config = ConfigDict(extra="allow")
    unit_price: float = 0.0


class TwoFolds(BaseModel):
    """Two fields that fold to the same normalized name: no drift rename may be guessed."""

    unit_price: float
    unitprice: float


KIM = Person(name="Kim", age=30)
KIM_JSON = '{"name": "Kim", "age": 30}'
FORBIDDEN_IN_FEEDBACK = ("http", "errors.pydantic.dev", "Traceback")


def fix_kinds(report: ParseReport) -> list[str]:
    return [f.kind for f in report.fixes]


def fixes_of(report: ParseReport, kind: str) -> list[Fix]:
    return [f for f in report.fixes if f.kind == kind]


def assert_clean_feedback(error: ParseError) -> None:
    assert error.feedback.strip()
    for bad in FORBIDDEN_IN_FEEDBACK:
        assert bad not in error.feedback, f"{bad!r} leaked into feedback: {error.feedback!r}"


# --------------------------------------------------------------------------------------------------------
# 0. Fast path and report basics
# --------------------------------------------------------------------------------------------------------


def test_clean_json_takes_fast_path_without_fixes():
    report = parse_report(KIM_JSON, Person)
    assert report.ok
    assert report.value == KIM
    assert report.fast_path is True
    assert report.fixes == []
    assert report.error is None


def test_parse_returns_typed_value_for_list_contract():
    text = '[{"start": 0, "duration": 1.5, "text": "hi"}, {"start": 1.5, "duration": 2, "text": "there"}]'
    value = parse(text, list[Segment])
    assert value == [Segment(start=0.0, duration=1.5, text="hi"), Segment(start=1.5, duration=2.0, text="there")]


def test_wrapped_json_does_not_take_fast_path():
    report = parse_report("```json\n" + KIM_JSON + "\n```", Person)
    assert report.ok and report.value == KIM
    assert report.fast_path is False


# --------------------------------------------------------------------------------------------------------
# 1. Stripping wrappers
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected_fix"),
    [
        pytest.param("```json\n" + KIM_JSON + "\n```", "strip_fence", id="fence-json"),
        pytest.param("```JSON\n" + KIM_JSON + "\n```", "strip_fence", id="fence-JSON-upper"),
        pytest.param("```\n" + KIM_JSON + "\n```", "strip_fence", id="fence-bare"),
        pytest.param("~~~\n" + KIM_JSON + "\n~~~", "strip_fence", id="fence-tilde"),
        pytest.param("~~~json\n" + KIM_JSON + "\n~~~", "strip_fence", id="fence-tilde-json"),
        pytest.param("<json>" + KIM_JSON + "</json>", "strip_tag", id="xml-tag"),
        pytest.param("<json>\n" + KIM_JSON + "\n</json>", "strip_tag", id="xml-tag-newlines"),
        pytest.param("Sure! Here's the JSON:\n" + KIM_JSON + "\nHope this helps!", "strip_prose", id="prose"),
        pytest.param("Sure! Here's the JSON: " + KIM_JSON, "strip_prose", id="prose-before-same-line"),
        pytest.param(KIM_JSON + "\n\nHope this helps!", "strip_prose", id="prose-after"),
        pytest.param("네, 요청하신 JSON입니다:\n" + KIM_JSON + "\n도움이 되셨길 바랍니다!", "strip_prose",
                     id="korean-prose"),
        pytest.param("네, 요청하신 JSON입니다:\n```json\n" + KIM_JSON + "\n```\n더 필요하신 것이 있으면 말씀해 주세요.",
                     "strip_fence", id="korean-prose-and-fence"),
        pytest.param("Sure! Here's the JSON:\n```json\n" + KIM_JSON + "\n```\nHope this helps!", "strip_fence",
                     id="prose-and-fence"),
    ],
)
def test_wrappers_are_stripped(text, expected_fix):
    report = parse_report(text, Person)
    assert report.ok, report.error
    assert report.value == KIM
    assert expected_fix in fix_kinds(report)
    assert all(f.path == "$" for f in report.fixes if f.kind.startswith("strip_"))


def test_fence_and_prose_both_reported():
    report = parse_report("Here you go:\n```json\n" + KIM_JSON + "\n```\nCheers!", Person)
    assert report.ok
    assert {"strip_fence", "strip_prose"} <= set(fix_kinds(report))


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("\ufeff" + KIM_JSON, id="bom-prefix"),
        pytest.param("\u200b" + KIM_JSON + "\u200b", id="zero-width-around"),
        pytest.param('{"name": "Kim",\u200b "age": 30}', id="zero-width-between-tokens"),
        pytest.param('{\ufeff"name": "Kim", "age":\u2060 30}', id="bom-and-word-joiner-inside"),
        pytest.param("```json\n\ufeff" + KIM_JSON + "\n```", id="bom-in-fence"),
    ],
)
def test_bom_and_zero_width_characters_are_removed(text):
    assert parse(text, Person) == KIM


def test_zero_width_between_tokens_is_recorded_as_fix():
    report = parse_report('{"name": "Kim",\u200b "age": 30}', Person)
    assert report.ok
    assert "invisible_char" in fix_kinds(report)


def test_zero_width_inside_string_value_is_kept():
    # Inside a string it is content, not formatting: only wrappers/between-token characters go.
    value = parse('Here:\n{"name": "K\u200bim", "age": 30}', Person)
    assert value.name == "K\u200bim"


# --------------------------------------------------------------------------------------------------------
# 2. Choosing among candidates
# --------------------------------------------------------------------------------------------------------

EXAMPLE = '{"name": "<string>", "age": "<int>"}'
ANSWER = '{"name": "Kim", "age": 30}'


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"The format is {EXAMPLE}.\nHere is the answer: {ANSWER}", id="example-first"),
        pytest.param(f"Answer: {ANSWER}\n(Format was {EXAMPLE}.)", id="answer-first"),
        pytest.param(f"```json\n{EXAMPLE}\n```\nFilled in:\n```json\n{ANSWER}\n```", id="two-fences-example-first"),
        pytest.param(f"```json\n{ANSWER}\n```\nTemplate:\n```json\n{EXAMPLE}\n```", id="two-fences-answer-first"),
    ],
)
def test_candidate_chosen_by_fit_not_position(text):
    report = parse_report(text, Person)
    assert report.ok, report.error
    assert report.value == KIM
    assert len(report.candidates) >= 2


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"name": "Kim", "age": 30}\nor maybe\n{"name": "Lee", "age": 41}', id="prose"),
        pytest.param('```json\n{"name": "Kim", "age": 30}\n```\n```json\n{"name": "Lee", "age": 41}\n```',
                     id="two-fences"),
    ],
)
def test_two_different_valid_candidates_are_ambiguous(text):
    with pytest.raises(AmbiguousError) as info:
        parse(text, Person)
    assert info.value.kind == "ambiguous"
    assert_clean_feedback(info.value)
    report = parse_report(text, Person)
    assert not report.ok and report.value is None
    assert isinstance(report.error, AmbiguousError)


def test_exact_repeat_is_not_ambiguous():
    text = f"Here it is:\n```json\n{ANSWER}\n```\nAgain, the final answer: {ANSWER}"
    assert parse(text, Person) == KIM


def test_repeat_with_different_formatting_is_not_ambiguous():
    text = '{"name": "Kim", "age": 30}\n\nFinal: {"age":30,"name":"Kim"}'
    assert parse(text, Person) == KIM


# --------------------------------------------------------------------------------------------------------
# 3. Syntax repair
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param('{"name": "Kim", "age": 30,}', "trailing_comma", id="trailing-comma-object"),
        pytest.param("{'name': 'Kim', 'age': 30}", "single_quotes", id="single-quotes"),
        pytest.param("{\u201cname\u201d: \u201cKim\u201d, \u201cage\u201d: 30}", "smart_quotes", id="smart-quotes"),
        pytest.param('{"name": "Kim", // the name\n "age": 30}', "comment", id="line-comment"),
        pytest.param('{"name": "Kim", /* years */ "age": 30}', "comment", id="block-comment"),
        pytest.param('{name: "Kim", age: 30}', "unquoted_key", id="unquoted-keys"),
        pytest.param('{"name": "Kim"\n "age": 30}', "missing_comma", id="missing-comma"),
        pytest.param('{"name": "Kim", "age": 30}}', "stray_closer", id="stray-closing-brace"),
    ],
)
def test_syntax_repairs(text, kind):
    report = parse_report(text, Person)
    assert report.ok, report.error
    assert report.value == KIM
    assert kind in fix_kinds(report)


def test_trailing_comma_in_array_and_its_path():
    report = parse_report('{"tags": ["a", "b",]}', Tagged)
    assert report.ok
    assert report.value == Tagged(tags=["a", "b"])
    [fix] = fixes_of(report, "trailing_comma")
    assert fix.path.startswith("$.tags")


def test_trailing_comma_in_nested_object_path():
    report = parse_report('{"items": [{"name": "a", "price": 1.5,}]}', Order)
    assert report.ok
    [fix] = fixes_of(report, "trailing_comma")
    assert fix.path.startswith("$.items[0]")


@pytest.mark.parametrize(
    ("literal", "expected"),
    [("True", True), ("False", False)],
)
def test_python_boolean_literals(literal, expected):
    report = parse_report(f'{{"enabled": {literal}}}', Flag)
    assert report.ok
    assert report.value == Flag(enabled=expected)
    assert "python_literal" in fix_kinds(report)


def test_python_none_literal():
    report = parse_report('{"value": None}', Reading)
    assert report.ok
    assert report.value == Reading(value=None)
    assert "python_literal" in fix_kinds(report)


def test_raw_newline_inside_string_is_kept_as_newline():
    report = parse_report('{"name": "Kim\nJung", "age": 30}', Person)
    assert report.ok, report.error
    assert report.value.name == "Kim\nJung"
    assert report.fixes, "the raw control character repair must be recorded"


def test_repairs_do_not_touch_string_content():
    # '//' inside a string is not a comment; 'True'/'None' inside a string are not literals;
    # single quotes inside a double-quoted string stay.
    text = "{'name': \"http://x.y/None // True, 'quoted'\", 'age': 30,}"
    value = parse(text, Person)
    assert value.name == "http://x.y/None // True, 'quoted'"
    assert value.age == 30


def test_several_repairs_at_once_with_paths():
    text = (
        "Sure! Here's the order:\n```json\n"
        "{\n  items: [\n    {'name': 'pen', 'price': 1.5,},  // cheap\n"
        "    {\u201cname\u201d: \u201cbook\u201d, \u201cprice\u201d: 12}\n  ],\n}\n```\nHope this helps!"
    )
    report = parse_report(text, Order)
    assert report.ok, report.error
    assert report.value == Order(items=[LineItem(name="pen", price=1.5), LineItem(name="book", price=12.0)])
    kinds = set(fix_kinds(report))
    assert {"strip_fence", "unquoted_key", "single_quotes", "trailing_comma", "comment", "smart_quotes"} <= kinds
    assert any(f.kind == "unquoted_key" and f.path == "$.items" for f in report.fixes)


def test_stray_closer_inside_array():
    report = parse_report('{"tags": ["a", "b"]]}', Tagged)
    assert report.ok, report.error
    assert report.value == Tagged(tags=["a", "b"])
    assert "stray_closer" in fix_kinds(report)


# NaN / Infinity -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nonfinite_becomes_null_where_optional(literal):
    report = parse_report(f'{{"value": {literal}}}', Reading)
    assert report.ok, report.error
    assert report.value == Reading(value=None)
    [fix] = fixes_of(report, "nonfinite_to_null")
    assert fix.path == "$.value"
    assert fix.after is None


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nonfinite_is_schema_violation_where_null_not_allowed(literal):
    with pytest.raises(SchemaViolationError) as info:
        parse(f'{{"value": {literal}}}', Measure)
    assert info.value.kind == "schema_violation"
    assert "$.value" in info.value.feedback
    assert_clean_feedback(info.value)


def test_nan_inside_string_is_untouched():
    class Note(BaseModel):
        text: str

    assert parse('{"text": "NaN means not a number"}', Note).text == "NaN means not a number"


def test_nonfinite_never_yields_a_float_nan():
    report = parse_report('{"value": NaN}', Measure)
    assert not report.ok
    assert report.value is None or not (isinstance(report.value.value, float) and math.isnan(report.value.value))


# --------------------------------------------------------------------------------------------------------
# 4. Truncation
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"name": "Kim", "age": 30', id="only-last-brace-missing"),
        pytest.param('{"name": "Kim", "age": 30\n', id="only-last-brace-missing-newline"),
        pytest.param('{"name": "Kim", "age": 3', id="cut-in-number"),
        pytest.param('{"name": "Ki', id="cut-in-string"),
        pytest.param('{"name": "Kim", "ag', id="cut-in-key"),
        pytest.param('{"name": "Kim", "age":', id="cut-after-colon"),
        pytest.param('{"name": "Kim",', id="cut-after-comma"),
        pytest.param("```json\n" + '{"name": "Kim", "age": 30', id="unclosed-fence"),
        pytest.param("Sure! Here's the JSON:\n" + '{"name": "Kim", "age": 30', id="prose-then-cut"),
        pytest.param('```json\n{"name": "Kim", "age": 30\n```', id="closed-fence-missing-brace"),
    ],
)
def test_truncated_is_reported_never_closed(text):
    with pytest.raises(TruncatedJSONError) as info:
        parse(text, Person)
    err = info.value
    assert err.kind == "truncated"
    assert err.text == text
    assert_clean_feedback(err)
    report = parse_report(text, Person)
    assert not report.ok and report.value is None
    assert isinstance(report.error, TruncatedJSONError)


def test_truncated_list_of_objects():
    text = '[{"start": 0, "duration": 1, "text": "a"}, {"start": 1, "duration": 2, "te'
    with pytest.raises(TruncatedJSONError):
        parse(text, list[Segment])


def test_truncated_answer_after_a_complete_example_is_truncated():
    text = 'Example: {"name": "Ann", "age": 1}\nNow the real answer:\n{"name": "Kim", "age": 3'
    report = parse_report(text, Person)
    assert isinstance(report.error, TruncatedJSONError)
    assert report.value is None


def test_truncated_feedback_says_where():
    with pytest.raises(TruncatedJSONError) as info:
        parse('{"items": [{"name": "pen", "price": 1.5}, {"name": "bo', Order)
    assert "$.items" in info.value.feedback


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(KIM_JSON + "\nLet me know if you need anyth", id="cut-prose-epilogue"),
        pytest.param("```json\n" + KIM_JSON + "\n```\nHope this hel", id="fence-then-cut-prose"),
        pytest.param(KIM_JSON + "\n\nNote: the age is approximate (based on", id="cut-parenthetical"),
    ],
)
def test_closed_json_followed_by_cut_off_prose_is_fine(text):
    assert parse(text, Person) == KIM


# --------------------------------------------------------------------------------------------------------
# 5. Field names
# --------------------------------------------------------------------------------------------------------

SEG_ALIASES = {"startTime": "start", "length": "duration"}


def test_alias_table_on_list_contract():
    text = '[{"startTime": 0.5, "length": 1.5, "text": "hi"}, {"startTime": 2, "length": 1, "text": "yo"}]'
    report = parse_report(text, list[Segment], aliases=SEG_ALIASES)
    assert report.ok, report.error
    assert report.value == [Segment(start=0.5, duration=1.5, text="hi"), Segment(start=2, duration=1, text="yo")]
    alias_fixes = {(f.path, f.before, f.after) for f in fixes_of(report, "alias")}
    assert ("$[0].start", "startTime", "start") in alias_fixes
    assert ("$[1].duration", "length", "duration") in alias_fixes


def test_alias_table_applies_at_depth():
    text = '{"title": "t", "segments": [{"startTime": 1, "length": 2, "text": "x"}]}'
    report = parse_report(text, Transcript, aliases=SEG_ALIASES)
    assert report.ok, report.error
    assert report.value.segments == [Segment(start=1, duration=2, text="x")]
    paths = {f.path for f in fixes_of(report, "alias")}
    assert paths == {"$.segments[0].start", "$.segments[0].duration"}


def test_without_alias_table_unknown_names_fail():
    text = '[{"startTime": 0.5, "length": 1.5, "text": "hi"}]'
    with pytest.raises(SchemaViolationError) as info:
        parse(text, list[Segment])
    assert "$[0].start" in info.value.feedback


def test_alias_table_works_with_forbid_model():
    report = parse_report('{"fullName": "Kim", "age": 30}', StrictPerson, aliases={"fullName": "name"})
    assert report.ok, report.error
    assert report.value == StrictPerson(name="Kim", age=30)


@pytest.mark.parametrize("key", ["unitPrice", "Unit_Price", "UNIT_PRICE", "UnitPrice", "unit-price"])
def test_case_drift_without_table(key):
    report = parse_report(f'{{"name": "pen", "{key}": 4.5}}', Product)
    assert report.ok, report.error
    assert report.value == Product(name="pen", unit_price=4.5)
    [fix] = fixes_of(report, "case_drift")
    assert fix.path == "$.unit_price"
    assert fix.before == key and fix.after == "unit_price"


def test_case_drift_nested():
    report = parse_report('{"product": {"UnitPrice": 2.5}}', Wrapper)
    assert report.ok, report.error
    assert report.value.product.unit_price == 2.5
    assert any(f.kind == "case_drift" and f.path == "$.product.unit_price" for f in report.fixes)


def test_case_drift_not_applied_when_two_fields_match():
    report = parse_report('{"UnitPrice": 5}', TwoFolds)
    assert not report.ok
    assert isinstance(report.error, SchemaViolationError)
    assert "case_drift" not in fix_kinds(report)


def test_field_and_drifted_alias_with_different_values_is_ambiguous():
    with pytest.raises(AmbiguousError) as info:
        parse('{"name": "pen", "unit_price": 4.5, "unitPrice": 5}', Product)
    assert "$.unit_price" in info.value.feedback
    assert_clean_feedback(info.value)


def test_field_and_table_alias_with_different_values_is_ambiguous():
    text = '[{"start": 0, "startTime": 3, "duration": 1, "text": "x"}]'
    with pytest.raises(AmbiguousError):
        parse(text, list[Segment], aliases=SEG_ALIASES)


def test_field_and_drifted_alias_with_same_value_is_fine():
    report = parse_report('{"name": "pen", "unit_price": 4.5, "unitPrice": 4.5}', Product)
    assert report.ok, report.error
    assert report.value == Product(name="pen", unit_price=4.5)


def test_fast_path_does_not_drop_drifted_field():
    report = parse_report('{"unitPrice": 5}', Priced)
    assert report.ok, report.error
    assert report.value.unit_price == 5.0
    assert "case_drift" in fix_kinds(report)


def test_fast_path_does_not_drop_nested_drifted_field():
    assert parse('{"product": {"unitPrice": 7}}', Wrapper).product.unit_price == 7.0


def test_drift_renamed_not_kept_as_extra_on_allow_model():
    value = parse('{"unitPrice": 5}', OpenPriced)
    assert value.unit_price == 5.0
    assert "unitPrice" not in (value.model_extra or {})


# --------------------------------------------------------------------------------------------------------
# 6. Coercion (lossless only)
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "text", "expected", "kind", "path"),
    [
        pytest.param(Measure, '{"value": "4.2"}', Measure(value=4.2), "coerce_number", "$.value", id="str-float"),
        pytest.param(Rating, '{"score": "5"}', Rating(score=5), "coerce_integer", "$.score", id="str-int"),
        pytest.param(Rating, '{"score": 4.0}', Rating(score=4), "coerce_integer", "$.score", id="float-int"),
        pytest.param(Flag, '{"enabled": "true"}', Flag(enabled=True), "coerce_bool", "$.enabled", id="str-true"),
        pytest.param(Flag, '{"enabled": "false"}', Flag(enabled=False), "coerce_bool", "$.enabled",
                     id="str-false"),
        pytest.param(Tagged, '{"tags": "sub-1,sub-2"}', Tagged(tags=["sub-1", "sub-2"]), "split_list", "$.tags",
                     id="comma-list"),
        pytest.param(Tagged, '{"tags": "[\\"a\\", \\"b\\"]"}', Tagged(tags=["a", "b"]), "decode_embedded_json",
                     "$.tags", id="embedded-array"),
        pytest.param(Config, '{"options": "{\\"x\\": 1}"}', Config(options={"x": 1}), "decode_embedded_json",
                     "$.options", id="embedded-object"),
        pytest.param(Ticket, '{"category": "Billing "}', Ticket(category=Category.billing), "enum_fold",
                     "$.category", id="enum-case-space"),
        pytest.param(Ticket, '{"category": "TECHNICAL"}', Ticket(category=Category.technical), "enum_fold",
                     "$.category", id="enum-upper"),
    ],
)
def test_lossless_coercions(model, text, expected, kind, path):
    report = parse_report(text, model)
    assert report.ok, report.error
    assert report.value == expected
    assert any(f.kind == kind and f.path == path for f in report.fixes), report.fixes


def test_coerced_value_has_exact_type():
    assert type(parse('{"score": "5"}', Rating).score) is int
    assert type(parse('{"value": "4.2"}', Measure).value) is float
    assert parse('{"enabled": "true"}', Flag).enabled is True


def test_single_object_wrapped_into_list():
    report = parse_report('{"items": {"name": "pen", "price": 1.5}}', Order)
    assert report.ok, report.error
    assert report.value == Order(items=[LineItem(name="pen", price=1.5)])
    [fix] = fixes_of(report, "wrap_list")
    assert fix.path == "$.items"


def test_single_object_wrapped_for_root_list_contract():
    value = parse('{"start": 0, "duration": 1, "text": "x"}', list[Segment])
    assert value == [Segment(start=0, duration=1, text="x")]


def test_comma_list_is_never_padded_to_min_length():
    with pytest.raises(SchemaViolationError) as info:
        parse('{"tags": "sub-1,sub-2"}', TaggedMin)
    assert "$.tags" in info.value.feedback
    assert_clean_feedback(info.value)


def test_comma_list_meeting_min_length_passes():
    assert parse('{"tags": "a, b, c"}', TaggedMin).tags == ["a", "b", "c"]


@pytest.mark.parametrize("raw", ["4/5", "high (4)", "3-4", "1,234", "N/A", "", "five", "05", "4.5"])
def test_lossy_string_to_int_refused(raw):
    text = f'{{"score": "{raw}"}}'
    with pytest.raises(SchemaViolationError) as info:
        parse(text, Rating)
    err = info.value
    assert err.kind == "schema_violation"
    assert "$.score" in err.feedback
    assert_clean_feedback(err)
    assert not any(f.kind.startswith("coerce") for f in err.report.fixes)


@pytest.mark.parametrize("raw", ["4/5", "high (4)", "3-4", "1,234", "N/A"])
def test_lossy_string_to_float_refused(raw):
    with pytest.raises(SchemaViolationError) as info:
        parse(f'{{"value": "{raw}"}}', Measure)
    assert "$.value" in info.value.feedback


@pytest.mark.parametrize(
    ("raw", "label"),
    [("4.5", "fractional float"), ("true", "boolean"), ("false", "boolean"), ("[4]", "array")],
)
def test_non_integer_json_values_refused_for_int(raw, label):
    with pytest.raises(SchemaViolationError) as info:
        parse(f'{{"score": {raw}}}', Rating)
    assert "$.score" in info.value.feedback, label


@pytest.mark.parametrize("raw", ['"결제"', '"bill"', '"billing department"'])
def test_enum_refuses_non_member(raw):
    with pytest.raises(SchemaViolationError) as info:
        parse(f'{{"category": {raw}}}', Ticket)
    assert "$.category" in info.value.feedback
    assert_clean_feedback(info.value)


def test_string_bool_refused_for_int_and_int_for_bool():
    with pytest.raises(SchemaViolationError):
        parse('{"score": "true"}', Rating)
    with pytest.raises(SchemaViolationError):
        parse('{"enabled": 1}', Flag)


def test_an_integer_where_a_string_is_expected_is_its_digits_and_a_float_is_not():
    # Issue 23: 42 -> "42" is lossless (the digits as written); 4.50 -> "4.5" would not be, so a float stays a
    # violation, and so does a bool.
    report = parse_report('{"name": 42, "age": 30}', Person)
    assert report.value == Person(name="42", age=30)
    assert [(fix.kind, fix.path) for fix in report.fixes] == [("coerce_string", "$.name")]
    for text in ('{"name": 4.50, "age": 30}', '{"name": true, "age": 30}'):
        with pytest.raises(SchemaViolationError) as info:
            parse(text, Person)
        assert "$.name" in info.value.feedback


# --------------------------------------------------------------------------------------------------------
# 7. Validation and extra fields
# --------------------------------------------------------------------------------------------------------


def test_extra_forbid_rejects_unknown_field_with_path():
    with pytest.raises(SchemaViolationError) as info:
        parse('{"name": "Kim", "age": 30, "nickname": "K"}', StrictPerson)
    err = info.value
    assert "$.nickname" in err.feedback
    assert "not allowed" in err.feedback
    assert_clean_feedback(err)


def test_extra_forbid_nested_path():
    text = '{"items": [{"name": "a", "price": 1}, {"name": "b", "price": 2, "colour": "red"}]}'
    with pytest.raises(SchemaViolationError) as info:
        parse(text, StrictOrder)
    assert "$.items[1].colour" in info.value.feedback


def test_extra_ignore_drops_unknown_field():
    value = parse('{"name": "Kim", "age": 30, "nickname": "K"}', LoosePerson)
    assert value == LoosePerson(name="Kim", age=30)
    assert not hasattr(value, "nickname")


def test_extra_allow_keeps_unknown_field():
    value = parse('{"name": "Kim", "age": 30, "nickname": "K"}', OpenPerson)
    assert value.name == "Kim" and value.age == 30
    assert value.model_extra == {"nickname": "K"}


def test_missing_required_field_feedback():
    with pytest.raises(SchemaViolationError) as info:
        parse('{"name": "Kim"}', Person)
    err = info.value
    assert "$.age" in err.feedback
    assert "missing" in err.feedback
    assert_clean_feedback(err)


def test_wrong_type_feedback_names_path_and_input():
    with pytest.raises(SchemaViolationError) as info:
        parse('{"items": [{"name": "a", "price": 1}, {"name": "b", "price": "cheap"}]}', Order)
    fb = info.value.feedback
    assert "$.items[1].price" in fb
    assert "cheap" in fb


def test_schema_violation_through_wrappers_keeps_fixes():
    text = "```json\n{'name': 'Kim', 'age': 'old'}\n```"
    report = parse_report(text, Person)
    assert isinstance(report.error, SchemaViolationError)
    assert "single_quotes" in fix_kinds(report)
    assert "$.age" in report.error.feedback


# --------------------------------------------------------------------------------------------------------
# Errors: kinds, hierarchy, parse_report never raises, no_json, limits
# --------------------------------------------------------------------------------------------------------

FAILING = [
    pytest.param("I'm sorry, I can't help with that.", Person, NoJSONError, "no_json", id="no-json"),
    pytest.param("", Person, NoJSONError, "no_json", id="empty"),
    pytest.param("Use {curly} braces for objects.", Person, NoJSONError, "no_json", id="brace-in-prose"),
    pytest.param('{"name": "Kim", "age": 3', Person, TruncatedJSONError, "truncated", id="truncated"),
    pytest.param('{"name": "A", "age": 1} {"name": "B", "age": 2}', Person, AmbiguousError, "ambiguous",
                 id="ambiguous"),
    pytest.param('{"name": "Kim", "age": "4/5"}', Person, SchemaViolationError, "schema_violation",
                 id="schema"),
]


@pytest.mark.parametrize(("text", "model", "cls", "kind"), FAILING)
def test_error_kinds_and_hierarchy(text, model, cls, kind):
    with pytest.raises(cls) as info:
        parse(text, model)
    err = info.value
    assert isinstance(err, ParseError) and isinstance(err, GuardrailError)
    assert err.kind == kind
    assert err.text == text
    assert isinstance(err.report, ParseReport)
    assert str(err).startswith(kind)
    assert_clean_feedback(err)


@pytest.mark.parametrize(("text", "model", "cls", "kind"), FAILING)
def test_parse_report_never_raises(text, model, cls, kind):
    report = parse_report(text, model)
    assert report.ok is False
    assert report.value is None
    assert isinstance(report.error, cls)
    assert report.error.kind == kind
    with pytest.raises(cls):
        report.unwrap()


def test_feedback_caps_many_violations_and_stays_clean():
    class Many(BaseModel):
        a: int
        b: int
        c: int

    err = parse_report('{"a": "x", "b": "y", "c": "z"}', Many).error
    assert isinstance(err, SchemaViolationError)
    for path in ("$.a", "$.b", "$.c"):
        assert path in err.feedback
    assert_clean_feedback(err)


def test_input_over_byte_limit():
    text = '{"name": "' + "x" * 200 + '", "age": 30}'
    with pytest.raises(InputLimitError) as info:
        parse(text, Person, limits=Limits(max_bytes=100))
    err = info.value
    assert isinstance(err, SchemaViolationError)
    assert err.kind == "schema_violation"
    assert err.limit == "max_bytes"
    assert_clean_feedback(err)


def test_input_over_depth_limit():
    text = '{"value": ' + "[" * 30 + "]" * 30 + "}"
    with pytest.raises(InputLimitError) as info:
        parse(text, dict, limits=Limits(max_depth=10))
    assert info.value.limit == "max_depth"
    report = parse_report(text, dict, limits=Limits(max_depth=10))
    assert isinstance(report.error, InputLimitError)


# --------------------------------------------------------------------------------------------------------
# More wrapper / repair / truncation / coercion edges
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("```json\r\n" + KIM_JSON + "\r\n```\r\n", id="crlf-fence"),
        pytest.param("````json\n" + KIM_JSON + "\n````", id="four-backtick-fence"),
        pytest.param("<json>\n```json\n" + KIM_JSON + "\n```\n</json>", id="tag-around-fence"),
        pytest.param("Here: <json>" + KIM_JSON + "</json> Thanks", id="tag-inside-prose"),
        pytest.param("Sure [as requested]! Here's the JSON: " + KIM_JSON, id="brackets-in-prose"),
        pytest.param("// answer\n" + KIM_JSON + " // done", id="comment-like-prose"),
    ],
)
def test_more_wrappers(text):
    assert parse(text, Person) == KIM


def test_tag_fix_is_recorded_inside_prose():
    report = parse_report("Here: <json>" + KIM_JSON + "</json> Thanks", Person)
    assert {"strip_tag", "strip_prose"} <= set(fix_kinds(report))


def test_valid_format_example_and_valid_answer_are_ambiguous():
    # Both satisfy the contract and differ: guardrail must not guess which one is "the answer".
    text = 'Example: {"name": "Jane", "age": 25}\nAnswer: {"name": "Kim", "age": 30}'
    assert isinstance(parse_report(text, Person).error, AmbiguousError)


def test_drifted_repeat_is_an_exact_repeat_after_normalization():
    assert parse('{"name": "Kim", "age": 30}\n{"Name": "Kim", "AGE": 30}', Person) == KIM


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("{'name': 'O\\'Brien', 'age': 30}", "O'Brien", id="escaped-single-quote"),
        pytest.param("{'name': 'say \"hi\"', 'age': 30}", 'say "hi"', id="double-quotes-in-single"),
        pytest.param("{\u2018name\u2019: \u2018Kim\u2019, \u2018age\u2019: 30}", "Kim", id="smart-single-quotes"),
        pytest.param('{"name": "Kim\tLee", "age": 30}', "Kim\tLee", id="raw-tab"),
    ],
)
def test_quote_repairs_keep_string_content(text, expected):
    assert parse(text, Person).name == expected


def test_missing_comma_between_array_objects():
    text = '[{"start": 0, "duration": 1, "text": "a"}\n{"start": 1, "duration": 1, "text": "b"}]'
    report = parse_report(text, list[Segment])
    assert report.ok, report.error
    assert [s.text for s in report.value] == ["a", "b"]
    assert [f.path for f in fixes_of(report, "missing_comma")] == ["$[1]"]


def test_missing_comma_after_nested_object_member():
    class Inner(BaseModel):
        b: int

    class Outer(BaseModel):
        a: Inner
        c: int

    report = parse_report('{"a": {"b": 1}\n "c": 2}', Outer)
    assert report.ok, report.error
    assert report.value.c == 2 and report.value.a.b == 1
    assert "missing_comma" in fix_kinds(report)


def test_stray_closer_in_array_of_objects():
    report = parse_report('{"items": [{"name": "a", "price": 1}}]}', Order)
    assert report.ok, report.error
    assert report.value == Order(items=[LineItem(name="a", price=1)])
    assert "stray_closer" in fix_kinds(report)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"name": "Kim", "age": 030}', id="leading-zero"),
        pytest.param('{"name": "Kim", "age": 0x1E}', id="hex"),
        pytest.param('{"name": "Kim", "age": 30 years}', id="unit-suffix"),
    ],
)
def test_non_json_numbers_are_not_guessed(text):
    assert not parse_report(text, Person).ok


def test_nonfinite_in_list_paths():
    class Floats(BaseModel):
        values: list[float]

    class MaybeFloats(BaseModel):
        values: list[float | None]

    err = parse_report('{"values": [1, NaN, 2]}', Floats).error
    assert isinstance(err, SchemaViolationError)
    assert "$.values[1]" in err.feedback
    report = parse_report('{"values": [1, NaN, 2]}', MaybeFloats)
    assert report.ok
    assert report.value.values == [1.0, None, 2.0]
    assert [f.path for f in fixes_of(report, "nonfinite_to_null")] == ["$.values[1]"]


def test_nan_string_is_not_a_number():
    with pytest.raises(SchemaViolationError):
        parse('{"value": "NaN"}', Reading)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('```json\n{"name": "Kim", "age": 30\n```\nHope this helps!', id="fence-closed-then-prose"),
        pytest.param('[{"start": 0, "duration": 1, "text": "a"}', id="root-list-bracket-missing"),
        pytest.param('<json>{"name": "Kim", "age": 30</json>', id="tag-closed-brace-missing"),
    ],
)
def test_more_truncation(text):
    model = list[Segment] if text.startswith("[") else Person
    report = parse_report(text, model)
    assert isinstance(report.error, TruncatedJSONError), report.error


def test_missing_last_brace_followed_by_prose_is_never_closed_up():
    report = parse_report('{"name": "Kim", "age": 30\nHope this helps!', Person)
    assert not report.ok
    assert report.value is None


def test_unclosed_fence_around_complete_json_is_fine():
    assert parse("```json\n" + KIM_JSON + "\n", Person) == KIM


def test_case_drift_inside_forbid_list_items():
    report = parse_report('{"items": [{"name": "a", "Price": 1}]}', StrictOrder)
    assert report.ok, report.error
    assert [f.path for f in fixes_of(report, "case_drift")] == ["$.items[0].price"]


def test_case_drift_on_forbid_model():
    class StrictPriced(BaseModel):
        model_config = ConfigDict(extra="forbid")
        unit_price: float

    assert parse('{"unitPrice": 5}', StrictPriced).unit_price == 5.0


def test_two_drifted_spellings_with_different_values_are_ambiguous():
    with pytest.raises(AmbiguousError):
        parse('{"name": "pen", "unitPrice": 4.5, "UnitPrice": 5}', Product)


def test_embedded_array_items_are_coerced_too():
    report = parse_report('{"items": "[{\\"name\\": \\"a\\", \\"price\\": \\"1.5\\"}]"}', Order)
    assert report.ok, report.error
    assert report.value == Order(items=[LineItem(name="a", price=1.5)])
    assert any(f.kind == "coerce_number" and f.path == "$.items[0].price" for f in report.fixes)


def test_embedded_string_that_is_not_json_is_not_split():
    # "[a, b]" looks like an array but is not JSON; it must not be comma-split into ["[a", "b]"].
    with pytest.raises(SchemaViolationError):
        parse('{"tags": "[a, b]"}', Tagged)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('{"score": "5.0"}', 5, id="str-5.0"),
        pytest.param('{"score": " 5 "}', 5, id="str-padded"),
        pytest.param('{"score": "-3"}', -3, id="str-negative"),
    ],
)
def test_more_lossless_integer_coercions(text, expected):
    assert parse(text, Rating).score == expected


@pytest.mark.parametrize("raw", ['"yes"', '"1"', '"on"'])
def test_non_boolean_strings_refused(raw):
    with pytest.raises(SchemaViolationError):
        parse(f'{{"enabled": {raw}}}', Flag)


def test_enum_folding_in_literal_optional_and_list():
    from typing import Literal

    class Lit(BaseModel):
        category: Literal["billing", "technical"]

    class Opt(BaseModel):
        category: Category | None = None

    class Many(BaseModel):
        categories: list[Category]

    assert parse('{"category": "Billing "}', Lit).category == "billing"
    assert parse('{"category": " BILLING"}', Opt).category is Category.billing
    assert parse('{"categories": ["Billing", " technical"]}', Many).categories == [Category.billing,
                                                                                  Category.technical]


def test_enum_feedback_names_allowed_values():
    with pytest.raises(SchemaViolationError) as info:
        parse('{"category": "결제"}', Ticket)
    fb = info.value.feedback
    assert "$.category" in fb and "billing" in fb and "결제" in fb


def test_split_list_for_optional_list():
    class OptTags(BaseModel):
        tags: list[str] | None = None

    assert parse('{"tags": "a, b"}', OptTags).tags == ["a", "b"]


# --------------------------------------------------------------------------------------------------------
# Regressions: bugs found by an independent review of the parse layer, now fixed
# --------------------------------------------------------------------------------------------------------


def test_drift_inside_wrapped_single_object_is_normalized():
    assert parse('{"unitPrice": 5}', list[Priced]) == [Priced(unit_price=5.0)]


def test_alias_table_applies_to_wrapped_single_object():
    value = parse('{"startTime": 0, "length": 1, "text": "x"}', list[Segment], aliases=SEG_ALIASES)
    assert value == [Segment(start=0, duration=1, text="x")]


def test_drift_inside_embedded_json_object_is_normalized():
    assert parse('{"product": "{\\"unitPrice\\": 3}"}', Wrapper).product.unit_price == 3.0


def test_overflowing_numeric_string_is_refused():
    report = parse_report('{"value": "1e400"}', Measure)
    assert isinstance(report.error, SchemaViolationError), report.value


@pytest.mark.parametrize("text", ['{"value": 1e400}', '{"value": -1E+999}', '```json\n{"value": 1e400}\n```'])
def test_overflowing_number_literal_is_judged_like_infinity(text):
    report = parse_report(text, Measure)
    assert isinstance(report.error, SchemaViolationError), report.value
    assert "$.value" in report.error.feedback


def test_same_number_int_and_float_spelling_is_one_value():
    assert parse('{"name": "pen", "unit_price": 5, "unitPrice": 5.0}', Product).unit_price == 5.0


# Issue 14 changed both (they were documented as last-wins and as a schema violation): a key given twice
# with different values is ambiguous (naming the key), and a closer that ends the root early with members
# after it is a syntax error at the member, never a shorter object.


@pytest.mark.parametrize("text", ['{"name": "Kim", "age": 30, "age": 31}', '{"name": "Kim", "age": "30", "age": 31}'])
def test_conflicting_duplicate_key_is_ambiguous(text):
    report = parse_report(text, Person)
    assert isinstance(report.error, AmbiguousError), report.value
    assert "$.age" in report.error.feedback


def test_early_root_close_is_a_syntax_error_not_a_shorter_object():
    class Inner(BaseModel):
        b: int

    class Outer(BaseModel):
        a: Inner
        c: int = 0

    report = parse_report('{"a": {"b": 1}}, "c": 2}', Outer)
    assert report.error is not None and report.error.kind == "syntax_error", report.value
    assert report.error.position == 17


@pytest.mark.parametrize("text", ['{"inf": 1}', '{"nan": 2}', '{"-Infinity": 3}', '```json\n{"1e400": 4}\n```'])
def test_float_keyed_mapping_refuses_non_finite_keys(text):
    report = parse_report(text, dict[float, int])
    assert isinstance(report.error, SchemaViolationError), report.value
    assert "not a finite number" in report.error.feedback


def test_float_keyed_mapping_keeps_finite_keys():
    assert parse('{"1.5": 3, "-2": 4}', dict[float, int]) == {1.5: 3, -2.0: 4}


# -- issue 14, class 4: a leading scalar before prose, an unquoted word where only a string fits ------------

@pytest.mark.parametrize(("text", "value"), [('"x"\n\nHope this helps', "x"), ("42\n\nLet me know", 42),
                                             ("true\n\nthanks!", True), ("  -3.5\nThat is the delta.", -3.5),
                                             ('"a: b"\nAnything else?', "a: b"), ("null\n\nNothing found.", None)])
@pytest.mark.parametrize("contract", [Any, object])
def test_a_whole_scalar_on_its_own_line_before_prose_is_the_answer(text, value, contract):
    report = parse_report(text, contract)
    assert report.error is None and report.value == value and type(report.value) is type(value)
    assert [fix.kind for fix in report.fixes] == ["strip_prose"]


@pytest.mark.parametrize("text", ["42\n\n43", '"x"\n\n"y"', "42\n\nnull", "42 apples\nThat is all.",
                                  "NaN\n\nsorry", "Here: 42\n\nthanks", "42"[:0] + "4 2\nok"])
def test_a_leading_scalar_is_refused_when_the_reply_reads_another_way(text):
    report = parse_report(text, Any)
    assert isinstance(report.error, NoJSONError), report.value


def test_a_leading_scalar_never_satisfies_an_object_contract():
    report = parse_report('"x"\n\nHope this helps', Person)
    assert isinstance(report.error, NoJSONError) and report.error.kind == "no_json", report.value


class Named(BaseModel):
    name: str
    age: int = 0


class MaybeNamed(BaseModel):
    name: str | None


class AnyNamed(BaseModel):
    name: str | int


def test_an_unquoted_word_is_the_string_where_the_field_takes_only_a_string():
    report = parse_report('{"name": Kim, "age": 3}', Named)
    assert report.value == Named(name="Kim", age=3)
    assert [(fix.kind, fix.path, fix.after) for fix in report.fixes] == [("bare_string", "$.name", "Kim")]
    listed = parse_report('[{"name": Kim}, {"name": "Lee"}, {"name": O-Brien}]', list[Named])
    assert [n.name for n in listed.value] == ["Kim", "Lee", "O-Brien"]
    assert [fix.path for fix in listed.fixes] == ["$[0].name", "$[2].name"]


@pytest.mark.parametrize(("text", "contract"), [
    ('{"name": Kim}', MaybeNamed),  # null is a reading of the field too
    ('{"name": Kim}', AnyNamed),
    ('{"name": Kim}', Any),
    ('{"name": Kim}', dict[str, Any]),
    ('{"name": Kim Lee}', Named),  # two words
    ('{"name": Kim, "age": three}', Named),  # the word for an int
])
def test_an_unquoted_word_stays_a_syntax_error_where_another_reading_could_validate(text, contract):
    report = parse_report(text, contract)
    assert report.error is not None and report.error.kind == "syntax_error", report.value
    assert report.error.position == text.index("Kim" if "three" not in text else "three")


@pytest.mark.parametrize("word", ["True", "None", "null", "true", "NaN"])
def test_a_literal_word_is_never_read_as_a_string(word):
    report = parse_report('{"name": ' + word + '}', Named)
    assert report.error is not None, report.value


def test_an_unquoted_word_outside_an_object_member_is_read_only_in_a_whole_flat_array_of_strings():
    # Issue 23: a whole reply [Kim] under list[str] has one reading; in prose a bracketed remark reads the same,
    # and under list[Any] the word may stand for any value.
    report = parse_report("[Kim]", list[str])
    assert report.value == ["Kim"] and [(f.kind, f.path) for f in report.fixes] == [("bare_string", "$[0]")]
    assert parse_report("See [Kim] for details.", list[str]).error is not None
    assert parse_report("[Kim]", list[Any]).error is not None
    assert parse_report('[["Kim", Lee]]', list[list[str]]).error is not None
