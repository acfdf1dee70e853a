"""Answers with exactly one reading are accepted, with a recorded fix; two readings are not.

Each class is written into random JSON values the way models write it, and the value must come back (or the
answer be refused, where a second reading could validate):

- an unquoted single-token member value (a word, an identifier, a UUID, a version, a timestamp) where the field
  takes a plain string and nothing else (``bare_string``); a number with digit separators where it takes a
  number and nothing else (``digit_separator``);
- Python tuples and parenthesised literals (``python_tuple``); ``TRUE``/``FALSE``/``NULL`` in any case
  (``literal_case``); a leading comma in an object (``leading_comma``); Unicode spaces between tokens
  (``invisible_char``); a missing comma between array elements of different kinds (``missing_comma``);
- an integer where the contract takes only a string (``coerce_string``);
- a whole reply of escaped JSON (``escaped_json``), of plain text under ``str`` (``plain_text``), of one string
  with raw control characters (``control_char_in_string``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from guardrail import parse, parse_report
from guardrail.errors import JSONSyntaxError
from guardrail.parse.lexicon import INVISIBLE
from guardrail.parse.tokens import same_json

PROPERTY = settings(max_examples=150, deadline=None)

# --------------------------------------------------------------------------------------------------------
# Unquoted member values
# --------------------------------------------------------------------------------------------------------

identifiers = st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$\-]{0,12}", fullmatch=True).filter(
    lambda w: w.lower() not in ("true", "false", "null", "none", "nan", "infinity", "undefined", "nil"))
uuids = st.uuids().map(str)
versions = st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){2,3}", fullmatch=True)
timestamps = st.datetimes().map(lambda d: d.isoformat() + "Z")
tokens = identifiers | uuids | versions | timestamps


def unquoted(members: dict[str, str], sep: str = ", ") -> str:
    return "{" + sep.join(f"{json.dumps(k)}: {v}" for k, v in members.items()) + "}"


@PROPERTY
@given(members=st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), tokens, min_size=1, max_size=4),
       sep=st.sampled_from([", ", ",\n  ", "\n  "]))
@example(members={"rowId": "57eeeeb1-450b-482c-81b9-4be77e95dee2"}, sep=", ")
@example(members={"date": "2024-10-18T18:35:22.229Z", "v": "1.1.1"}, sep="\n  ")
def test_an_unquoted_token_is_the_string_where_only_a_string_fits(members: dict[str, str], sep: str) -> None:
    text = unquoted(members, sep)
    report = parse_report(text, dict[str, str])
    assert report.value == members, report.error
    assert [f.kind for f in report.fixes if f.kind != "missing_comma"] == ["bare_string"] * len(members)
    for other in (dict[str, Any], dict[str, str | None], dict[str, str | int], Any):
        # another type fits too: the word may stand for a value of that type
        assert isinstance(parse_report(text, other).error, JSONSyntaxError), other


@pytest.mark.parametrize("text", ['{"a": New York}', '{"a": undefined}', '{"a": nil}', '{"a": 10-20}',
                                  '{"a": 1/3}', '{"a": 05}', '{"a": 1e}', '{"a": x y}'])
def test_unquoted_values_with_two_readings_or_none_are_refused(text: str) -> None:
    assert isinstance(parse_report(text, dict[str, str]).error, JSONSyntaxError)


def _grouped(n: int, size: int) -> str:
    digits = str(abs(n))
    head = len(digits) % size or size
    groups = [digits[:head]] + [digits[i : i + size] for i in range(head, len(digits), size)]
    return ("-" if n < 0 else "") + "_".join(groups)


@PROPERTY
@given(numbers=st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), st.integers(-10**12, 10**12),
                               min_size=1, max_size=4), size=st.sampled_from([2, 3, 4]))
def test_digit_separators_are_the_number_where_only_a_number_fits(numbers: dict[str, int], size: int) -> None:
    text = unquoted({k: _grouped(v, size) for k, v in numbers.items()})
    assert parse(text, dict[str, int]) == numbers
    assert parse(text, dict[str, float]) == numbers
    if any("_" in _grouped(v, size) for v in numbers.values()):
        for other in (dict[str, str], dict[str, str | int], Any):  # the text "1_234" is a second reading
            assert not parse_report(text, other).ok, other


# --------------------------------------------------------------------------------------------------------
# Python and JavaScript habits
# --------------------------------------------------------------------------------------------------------

scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12)


def pythonish(value: Any, rng: st.DataObject) -> str:
    """``value`` written the way Python and JavaScript habits write it: lists as tuples, literals in any
    case, Unicode spaces between tokens, a leading comma in an object."""
    space = rng.draw(st.sampled_from(["", " ", "\u2003", "\u3000", "\u202f"]))
    if isinstance(value, list):
        items = [pythonish(item, rng) for item in value]
        if rng.draw(st.booleans()):
            if len(items) == 1:
                return "(" + items[0] + ",)"
            return "(" + ", ".join(items) + ")"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, dict):
        members = [json.dumps(k) + ":" + space + pythonish(v, rng) for k, v in value.items()]
        lead = "," if members and rng.draw(st.booleans()) else ""
        return "{" + lead + ", ".join(members) + "}"
    if value is None or isinstance(value, bool):
        word = json.dumps(value)
        return rng.draw(st.sampled_from([word, word.upper(), word.capitalize()]))
    return json.dumps(value)


@PROPERTY
@given(value=st.dictionaries(st.text(max_size=5), values, max_size=4), data=st.data())
def test_python_and_javascript_habits_read_back_unchanged(value: dict[str, Any], data: st.DataObject) -> None:
    text = pythonish(value, data)
    report = parse_report(text, Any)
    assert report.ok, f"{text!r}: {report.error!r}"
    assert same_json(report.value, value), f"{text!r} read as {report.value!r}"


@pytest.mark.parametrize(("text", "expected"), [
    ("(1)", 1), ('("x")', "x"), ("()", []), ("(1,)", [1]), ('("a", "b", "c")', ["a", "b", "c"]),
    ("((1, 2), (3, 4))", [[1, 2], [3, 4]]), ('{"a": ((1))}', {"a": 1}), ('{"a": [(1, 2)]}', {"a": [[1, 2]]}),
    ("```python\n(1, 2)\n```", [1, 2]),
])
def test_a_tuple_or_parenthesised_literal_has_one_reading(text: str, expected: Any) -> None:
    report = parse_report(text, Any)
    assert same_json(report.value, expected), report.error
    assert "python_tuple" in [f.kind for f in report.fixes]


@pytest.mark.parametrize("text", ["(see below)", "Done (1) then {", "(1, 2", '{"a": (1, 2]}', "[(1]"])
def test_parentheses_in_prose_or_unbalanced_are_no_value(text: str) -> None:
    assert not parse_report(text, Any).ok


@pytest.mark.parametrize(("text", "expected"), [
    ('["a" 2]', ["a", 2]), ('[1 "a", true]', [1, "a", True]), ('["foo)" null]', ["foo)", None]),
    ('[true 1]', [True, 1]),
])
def test_a_missing_comma_between_elements_of_different_kinds_has_one_reading(text: str, expected: Any) -> None:
    report = parse_report(text, Any)
    assert same_json(report.value, expected), report.error
    assert "missing_comma" in [f.kind for f in report.fixes]


@pytest.mark.parametrize("text", ['["a" "b"]', "[1 2]", '["a" "b" 1]'])
def test_adjacent_elements_with_a_second_reading_are_refused(text: str) -> None:
    assert not parse_report(text, list[Any]).ok


def test_a_number_between_unescaped_inner_quotes_stays_inside_the_string() -> None:
    assert parse('["size "2" in", "x"]', list[Any]) == ['size "2" in', "x"]


# --------------------------------------------------------------------------------------------------------
# Toward the contract: an integer where only a string fits
# --------------------------------------------------------------------------------------------------------


class Ticket(BaseModel):
    id: str
    count: int
    flag: bool


@PROPERTY
@given(ident=st.integers(), count=st.integers(), flag=st.booleans())
def test_an_integer_where_only_a_string_fits_is_its_digits(ident: int, count: int, flag: bool) -> None:
    text = json.dumps({"id": ident, "count": count, "flag": flag})
    report = parse_report(text, Ticket)
    assert report.value == Ticket(id=str(ident), count=count, flag=flag)
    assert [(f.kind, f.path) for f in report.fixes] == [("coerce_string", "$.id")]


@pytest.mark.parametrize(("text", "contract"), [('{"id": 1.50, "count": 1, "flag": true}', Ticket),
                                                ('{"id": true, "count": 1, "flag": true}', Ticket),
                                                ("[1]", list[str | int])])
def test_no_string_is_made_from_a_float_or_a_bool_or_where_a_number_fits(text: str, contract: Any) -> None:
    report = parse_report(text, contract)
    assert "coerce_string" not in [f.kind for f in report.fixes]


# --------------------------------------------------------------------------------------------------------
# Whole replies: escaped JSON, plain text, a string with raw control characters
# --------------------------------------------------------------------------------------------------------

plain_strings = st.text(st.characters(codec="utf-8", exclude_characters='"\\', exclude_categories=("Cc", "Cs")),
                        max_size=8)
plain_values = st.recursive(st.none() | st.booleans() | st.integers() | plain_strings,
                            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain_strings, inner,
                                                                                        max_size=4), max_leaves=10)


@PROPERTY
@given(value=st.lists(plain_values, min_size=1, max_size=3) | st.dictionaries(plain_strings, plain_values,
                                                                              min_size=1, max_size=3),
       indent=st.sampled_from([None, 2]))
@example(value={"key": "value"}, indent=None)
def test_escaped_json_reads_back_unchanged(value: Any, indent: int | None) -> None:
    """JSON copied out of a JSON string without its outer quotes: every quote escaped. (Non-ASCII characters
    raw: an escape such as ``\\u00e9`` makes two readings, see below.)"""
    dumped = json.dumps(value, indent=indent, ensure_ascii=False)
    escaped = json.dumps(dumped)[1:-1]
    assume(re.match(r'(?:[\[{](?: |\\n)*)*\\"', escaped) is not None)  # it opens with an escaped quote
    report = parse_report(escaped, Any)
    if "\\\\" in escaped:
        # An escaped backslash (``\\u00e9``, ``\\n``): escaped once (``é``, a newline), or only its quotes
        # escaped (a backslash, then ``u00e9``): two readings, refused where they differ (the review of issue 23).
        assert not report.ok or same_json(report.value, value), escaped
        return
    assert report.ok, f"{escaped!r}: {report.error!r}"
    assert same_json(report.value, value)
    assert "escaped_json" in [f.kind for f in report.fixes]


@pytest.mark.parametrize("text", ['\\"hello \\\\"world\\\\"\\"', '{\\"a\\": "b"}', '\\"hello"', '\\"abc'])
def test_escaped_json_with_a_second_reading_is_refused(text: str) -> None:
    assert not parse_report(text, Any).ok


prose = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40).filter(
    lambda t: t.strip() and t.strip()[0] not in "\"'`\u201c\u2018\\{[(" and not re.search(r"[{\[(<]", t)
    and "```" not in t and "~~~" not in t)


@PROPERTY
@given(text=prose)
@example(text="She said: no way")
@example(text="https://www.bible.com/")
def test_a_plain_text_reply_under_str_is_the_text(text: str) -> None:
    report = parse_report(text, str)
    if report.ok:
        assert report.value == text.strip().strip(INVISIBLE).strip()
    else:  # refused only where the reply is a JSON value of its own (a float, a literal): never plain text then
        assert report.candidates, report.error
    if report.ok and "plain_text" in [f.kind for f in report.fixes]:
        assert not parse_report(text, Any).ok  # under Any the text is no value: a remark reads the same


def test_plain_text_is_only_read_under_a_plain_string_contract() -> None:
    assert parse("hello world", str) == "hello world"
    assert parse("```\nhello world\n```", str) == "hello world"
    for contract in (str | None, str | int, Any, list[str]):
        assert not parse_report("hello world", contract).ok, contract


@PROPERTY
@given(value=st.text(max_size=20), control=st.sampled_from(["\n", "\t", "\r", "\x08", "\x0c", "\x00"]))
def test_a_lone_string_with_raw_control_characters_is_read(value: str, control: str) -> None:
    inner = json.dumps(value)[1:-1] + control + json.dumps(value)[1:-1]
    report = parse_report('"' + inner + '"', Any)
    assert report.value == value + control + value, report.error
    assert "control_char_in_string" in [f.kind for f in report.fixes]
