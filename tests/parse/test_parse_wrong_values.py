"""The parse layer never returns a confident wrong value, names its errors exactly, and accepts
unambiguous answers it used to refuse, recording a fix for each.

Five classes, each with examples and (for the first three) hypothesis properties:

1. a fragment never wins: a returned value is one whole top-level candidate, never a piece of a broken one;
2. a key given twice with different values is ambiguous at any depth; an exact repeat collapses (a fix);
3. members after a slip are never dropped as prose;
4. unambiguous answers (bare enum members, ``TRUE``, ``.5``, backticks, one element a line, unescaped
   inner quotes...) are read, each with a recorded fix; two readings are refused;
5. a mismatched closer is a syntax error at its position, not truncated.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from guardrail import ParseError, TruncatedJSONError, parse, parse_report
from guardrail.errors import AmbiguousError, JSONSyntaxError
from guardrail.parse.tokens import same_json

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Item(BaseModel):
    name: str
    qty: int = 1


class Order(BaseModel):
    items: list[Item]
    note: str | None = None


class Color(Enum):
    red = "red"
    cafe = "café"
    light_blue = "Light Blue"


def kinds(report: Any) -> list[str]:
    return [f.kind for f in report.fixes]


# 1. A fragment never wins ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "contract", "position"), [
    pytest.param('{"a": ["x", "y"}, "b": ["z"]}', list[str], 15, id="issue-example"),
    pytest.param('{"items": [1, 2, 3, 4, 5} "n": 5}', list[int], 24, id="five-element-list"),
    pytest.param('{"a" 1, "text": "[1, 2]"}', list[int], 5, id="array-inside-a-string"),
    pytest.param('{"a": 1 oops, "b": "{\\"x\\": 1}", "c": {"x": 1}}', dict[str, int], 8, id="object-in-broken-object"),
    pytest.param('[{"name": "a"}, {"name": "b"} {"name": "c"}; {"name": "d"}]', Item, 43, id="element-of-broken-list"),
    pytest.param('Answer: [[], {"name": "pen"}, @]', Item, 30, id="garbage-element"),
])
def test_a_piece_of_a_broken_value_is_never_the_answer(text: str, contract: Any, position: int) -> None:
    report = parse_report(text, contract)
    assert isinstance(report.error, JSONSyntaxError), report.value
    assert report.error.kind == "syntax_error"
    assert report.error.position == position
    assert f"at character {position}" in report.error.feedback


def test_an_unclosed_broken_value_encloses_everything_after_it() -> None:
    text = '{"a": [1, 2, oops\nlater: [3, 4]'
    report = parse_report(text, list[int])
    assert isinstance(report.error, JSONSyntaxError), report.value


def test_an_object_inside_a_string_value_is_not_a_candidate() -> None:
    # The whole value is valid for Any; for Item, the object written inside the string must not be taken.
    text = '{"reply": "use {\\"name\\": \\"pen\\"} here"}'
    assert parse(text, Any) == {"reply": 'use {"name": "pen"} here'}
    with pytest.raises(ParseError) as info:
        parse(text, Item)
    assert info.value.kind == "schema_violation"


def test_a_whole_value_after_a_broken_one_that_closed_is_still_a_whole_candidate() -> None:
    text = 'Draft: {"name": "pen" "qty": oops}\nFinal: {"name": "pen", "qty": 2}'
    assert parse(text, Item) == Item(name="pen", qty=2)


def test_prose_with_a_stray_opener_then_the_answer_still_parses() -> None:
    assert parse('See {note here} and [Note]: {"name": "pen"}', Item) == Item(name="pen")


_json_scalars = st.one_of(st.integers(-1000, 1000), st.text(max_size=5), st.booleans(), st.none())
_json_values = st.recursive(_json_scalars, lambda inner: st.one_of(
    st.lists(inner, min_size=1, max_size=4), st.dictionaries(st.text(min_size=1, max_size=4), inner, min_size=1,
                                                             max_size=4)), max_leaves=12)
_nested = st.one_of(st.lists(_json_values, min_size=1, max_size=4),
                    st.dictionaries(st.text(min_size=1, max_size=4), _json_values, min_size=1, max_size=4))


def _sub_containers(value: Any) -> list[Any]:
    out: list[Any] = []
    pending = list(value.values()) if isinstance(value, dict) else list(value)
    while pending:
        node = pending.pop()
        if isinstance(node, (dict, list)):
            out.append(node)
            pending.extend(node.values() if isinstance(node, dict) else node)
    return out


def _structural_positions(text: str) -> list[int]:
    """Positions of , : ] } outside strings, strictly inside the outer container."""
    out, in_string, escaped = [], False, False
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in ",:]}" and 0 < i < len(text) - 1:
            out.append(i)
    return out


@PROPERTY
@given(_nested, st.data(), st.sampled_from(["@", "}", "]", ";", " oops "]),
       st.sampled_from(["", "Answer: ", "```json\n"]))
@pytest.mark.slow
def test_no_returned_value_is_a_proper_sub_value_of_a_broken_candidate(value: Any, data: Any, junk: str,
                                                                      prefix: str) -> None:
    text = json.dumps(value, ensure_ascii=False)
    positions = _structural_positions(text)
    assume(positions)
    at = data.draw(st.sampled_from(positions))
    broken = text[:at] + junk + text[at:]
    try:
        json.loads(broken)
        assume(False)  # still valid JSON: not a broken candidate
    except ValueError:
        pass
    report = parse_report(prefix + broken, Any)
    if report.ok:
        subs = [s for s in _sub_containers(value) if not same_json(s, value)]
        assert not any(same_json(report.value, s) and isinstance(report.value, (dict, list)) for s in subs), (
            broken, report.value)
        assert report.fixes, (broken, report.value)  # and whatever was accepted was a recorded repair


# 2. Duplicate keys -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "contract", "path"), [
    pytest.param('{"a": 1, "a": 2}', Any, "$.a", id="root-any"),
    pytest.param('{"a": 1, "a": 2}', dict[str, int], "$.a", id="root-dict"),
    pytest.param('[{"x": {"b": true, "b": 1}}]', Any, "$[0].x.b", id="true-is-not-1"),
    pytest.param('{"items": [{"name": "a"}, {"name": "b", "name": "c"}]}', Order, "$.items[1].name", id="in-list"),
    pytest.param('Sure:\n```json\n{"k": {"v": "1", "v": 1}}\n```', dict[str, Any], "$.k.v", id="fenced-string-vs-int"),
    pytest.param("{'a': 1, 'a': 2,}", Any, "$.a", id="scanner-path"),
    pytest.param('{"a": [1, 2], "a": [2, 1]}', Any, "$.a", id="lists-in-other-order"),
])
def test_conflicting_duplicate_keys_are_ambiguous_naming_the_path(text: str, contract: Any, path: str) -> None:
    report = parse_report(text, contract)
    assert isinstance(report.error, AmbiguousError), report.value
    assert path in report.error.feedback
    with pytest.raises(AmbiguousError):
        parse(text, contract)


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param('{"a": 1, "a": 1}', {"a": 1}, id="same-int"),
    pytest.param('{"a": 1, "a": 1.0}', {"a": 1}, id="one-number-two-spellings"),
    pytest.param('[{"a": {"b": [1, null]}, "a": {"b": [1, null]}}]', [{"a": {"b": [1, None]}}], id="nested-equal"),
    pytest.param('Here: {"a": "x", "a": "x"} done', {"a": "x"}, id="in-prose"),
])
def test_identical_duplicates_collapse_with_a_fix(text: str, expected: Any) -> None:
    report = parse_report(text, Any)
    assert report.ok, report.error
    assert same_json(report.value, expected)
    assert "duplicate_key" in kinds(report)


_different_pairs = st.tuples(_json_values, _json_values).filter(lambda p: not same_json(p[0], p[1]))


@PROPERTY
@given(st.dictionaries(st.text(min_size=1, max_size=4), _json_values, max_size=3), st.text(min_size=1, max_size=4),
       _different_pairs, st.sampled_from(["{}", '{"outer": [{}]}', "[1, {}]", 'x ```json\n{"o": {}}\n``` y']),
       st.sampled_from([Any, dict[str, Any], list[Any]]))
@pytest.mark.slow
def test_conflicting_duplicates_never_validate(base: dict[str, Any], key: str, pair: tuple[Any, Any], frame: str,
                                               contract: Any) -> None:
    members = [json.dumps(k) + ": " + json.dumps(v) for k, v in base.items() if k != key]
    members.insert(0, json.dumps(key) + ": " + json.dumps(pair[0]))
    members.append(json.dumps(key) + ": " + json.dumps(pair[1]))
    obj = "{" + ", ".join(members) + "}"
    text = frame.replace("{}", obj, 1)
    report = parse_report(text, contract)
    assert not report.ok, (text, report.value)
    if isinstance(report.error, AmbiguousError):
        assert "given twice" in report.error.feedback


# 3. Members are never dropped as prose -------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ('{"name": "pen"}, "qty": 5}', Item(name="pen", qty=5)),
    ('{"name": "pen"} "qty": 5}', Item(name="pen", qty=5)),
    ('{"items": [{"name": "a"}]}, "note": "rush"}', Order(items=[Item(name="a")], note="rush")),
    ('Result: {"name": "pen"}, qty: 5}', Item(name="pen", qty=5)),
])
def test_members_after_an_early_close_are_merged_when_that_is_the_one_reading(text: str, expected: Any) -> None:
    """Issue 23 (issue 14 made these syntax errors): a stray ``}`` with members after it, where no member of
    the object is an object, can only be an extra character; the members belong to the object."""
    report = parse_report(text, type(expected))
    assert report.value == expected, report.error
    assert "stray_closer" in kinds(report)


@pytest.mark.parametrize("text", [
    '{"item": {"name": "pen"}}, "qty": 5}', '{"item": {"name": "pen"}, "n": 1}, "qty": 5}',
    '{"name": "pen"}], "qty": 5}', '["pen"], "qty"]'])
def test_members_after_an_early_close_with_two_readings_make_a_syntax_error(text: str) -> None:
    report = parse_report(text, Any)
    assert isinstance(report.error, JSONSyntaxError), report.value


def test_prose_after_a_value_is_still_prose() -> None:
    report = parse_report('{"name": "pen"}\nNote: the quantity defaults to one.', Item)
    assert report.value == Item(name="pen")
    assert "strip_prose" in kinds(report)


# 4. Unambiguous answers, each with a recorded fix --------------------------------------------------------


@pytest.mark.parametrize(("text", "contract", "expected", "fix"), [
    pytest.param("Red", Color, Color.red, "bare_enum", id="enum-case"),
    pytest.param("  CAFE ", Color, Color.cafe, "bare_enum", id="enum-accent"),
    pytest.param("light blue", Color, Color.light_blue, "bare_enum", id="enum-space-inside"),
    pytest.param("Billing", Literal["billing", "shipping"], "billing", "bare_enum", id="literal"),
    pytest.param("```\nShipping\n```", Literal["billing", "shipping"], "shipping", "bare_enum", id="literal-fenced"),
    pytest.param("TRUE", bool, True, "bare_literal", id="TRUE"),
    pytest.param("False", bool, False, "bare_literal", id="False"),
    pytest.param("Null", type(None), None, "bare_literal", id="Null"),
    pytest.param(".5", float, 0.5, "bare_number", id="leading-dot"),
    pytest.param("1.", float, 1.0, "bare_number", id="trailing-dot"),
    pytest.param("hello", str, "hello", "bare_string", id="unquoted-token"),
    pytest.param("`two words`", str, "two words", "backtick_quotes", id="backticks"),
    pytest.param('"""two words"""', str, "two words", "triple_quotes", id="triple-quotes"),
    pytest.param("'single'", str, "single", "single_quotes", id="single-quotes"),
    pytest.param("`x`", Any, "x", "backtick_quotes", id="quoted-under-any"),
    pytest.param("two words", str, "two words", "plain_text", id="unquoted-phrase"),  # issue 23: plain text
    pytest.param("\u201ctwo words\u201d", str, "two words", "smart_quotes", id="smart-quotes"),
    pytest.param("'it\\'s'", str, "it's", "single_quotes", id="escaped-single-quote"),
])
def test_whole_reply_scalars(text: str, contract: Any, expected: Any, fix: str) -> None:
    report = parse_report(text, contract)
    assert report.ok, report.error
    assert report.value == expected and type(report.value) is type(expected)
    assert fix in kinds(report)


@pytest.mark.parametrize(("text", "contract"), [
    pytest.param("True", bool | str, id="bool-or-string"),
    pytest.param("ca", Literal["cab", "cat"], id="no-member"),
    pytest.param("1.5", int, id="fraction-for-int"),
    pytest.param("The answer is Red", Color, id="prose-around-member"),
    pytest.param("hello", Any, id="bare-word-under-any"),
    pytest.param("two words", Any, id="plain-text-under-any"),
    pytest.param("two words", str | None, id="plain-text-under-optional"),
    pytest.param('"two words', str, id="plain-text-opening-with-a-quote"),
    pytest.param("True", Any, id="python-literal-under-any"),
])
def test_whole_reply_scalars_refused_when_not_exactly_one_reading(text: str, contract: Any) -> None:
    assert not parse_report(text, contract).ok


def test_two_readings_of_a_bare_reply_is_ambiguous() -> None:
    assert isinstance(parse_report("True", bool | str).error, AmbiguousError)


def test_enum_folding_is_accent_insensitive_inside_json_too() -> None:
    class Paint(BaseModel):
        color: Color

    report = parse_report('{"color": "Cafe"}', Paint)
    assert report.value == Paint(color=Color.cafe)
    assert "enum_fold" in kinds(report)


@pytest.mark.parametrize(("text", "expected", "fix"), [
    pytest.param('{"a": `x`, "b": ```y```}', {"a": "x", "b": "y"}, "backtick_quotes", id="backticks"),
    pytest.param('{"a": """say "hi" """}', {"a": 'say "hi" '}, "triple_quotes", id="triple-quotes"),
    pytest.param('["a"\n"b"\n"c"]', ["a", "b", "c"], "missing_comma", id="elements-one-a-line"),
    pytest.param('[1\n2\n3]', [1, 2, 3], "missing_comma", id="numbers-one-a-line"),
    pytest.param('{"a": 1\n"b": 2}', {"a": 1, "b": 2}, "missing_comma", id="members-one-a-line"),
    pytest.param('{"note": "say "hi" to her"}', {"note": 'say "hi" to her'}, "inner_quotes", id="inner-quotes"),
    pytest.param('{"n": "a "b" c", "m": "d"}', {"n": 'a "b" c', "m": "d"}, "inner_quotes", id="inner-quotes-then-more"),
    pytest.param('[.5, 1., -.25]', [0.5, 1.0, -0.25], "number_form", id="number-forms"),
])
def test_unambiguous_slips_inside_values(text: str, expected: Any, fix: str) -> None:
    report = parse_report(text, Any)
    assert report.ok, report.error
    assert same_json(report.value, expected)
    assert fix in kinds(report)


@pytest.mark.parametrize("text", [
    '["a" "b"]',  # same line: one string with a space, or two elements?
    '[1 2]',  # 12, or two numbers?
    '["say "hi", "x"]',  # where does the first string end?
    '{"a": "x "y", "z"}',
])
def test_slips_with_two_readings_are_refused(text: str) -> None:
    assert not parse_report(text, Any).ok


@PROPERTY
@given(_nested, st.sampled_from(["trailing_comma", "single_quotes", "python_literal", "comment", "newline"]))
@pytest.mark.slow
def test_every_accepted_repair_is_recorded(value: Any, slip: str) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=1)
    if slip == "trailing_comma":
        slipped = text[:-1].rstrip() + ",\n" + text[-1]
    elif slip == "single_quotes":
        slipped = text.replace('"', "'") if "'" not in text and "\\" not in text else text + " "
    elif slip == "python_literal":
        slipped = text.replace("true", "True").replace("null", "None")
    elif slip == "comment":
        slipped = text[0] + " // a comment\n" + text[1:]
    else:
        slipped = text.replace(",\n", "\n")
    assume(slipped.strip() != text.strip())
    report = parse_report(slipped, Any)
    try:
        strict = json.loads(slipped)
    except ValueError:
        strict = None
    if report.ok and (strict is None or not same_json(strict, report.value)):
        assert report.fixes, slipped


# 5. Error kinds --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "position"), [
    pytest.param('["a"}', 4, id="array-closed-by-brace"),
    pytest.param('{"a": 1]', 7, id="object-closed-by-bracket"),
    pytest.param('{"a": [1, 2}}', 11, id="inner-array-closed-by-brace"),
    pytest.param('Here: ["a", "b"} thanks', 15, id="in-prose"),
])
def test_a_mismatched_closer_is_a_syntax_error_at_its_position(text: str, position: int) -> None:
    report = parse_report(text, Any)
    assert isinstance(report.error, JSONSyntaxError), report.value
    assert not isinstance(report.error, TruncatedJSONError)
    assert report.error.position == position


def test_a_doubled_closer_is_still_a_recorded_repair() -> None:
    report = parse_report('{"a": ["x"]]}', Any)
    assert report.value == {"a": ["x"]}
    assert "stray_closer" in kinds(report)


def test_an_unclosed_triple_backtick_string_is_a_syntax_error() -> None:
    report = parse_report('{"code": ```print(1)}', Any)
    assert report.error is not None and report.error.kind == "syntax_error"


@pytest.mark.parametrize("text", ['["a"', '{"a": [1, 2', '{"a": "b', '```json\n{"a": 1,\n'])
def test_truncated_only_when_the_text_ends_inside_a_value(text: str) -> None:
    assert isinstance(parse_report(text, Any).error, TruncatedJSONError)
