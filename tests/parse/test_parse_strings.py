"""What lies inside a string is content: code, markdown, fences, braces, quotes and prose markers in string
values never cut, shorten or replace the value that holds them, also when the model writes the newlines of
that content raw; and data is never dropped or swallowed by a repair.

1. Round trips: arbitrary JSON values whose strings are drawn from code, markdown and markers, dumped with
   ``json.dumps``, with and without the newlines (tabs, carriage returns) inside strings written raw, and
   wrapped the ways models wrap them, come back as the original value; a raw control character is kept and
   recorded (``control_char_in_string``); every prefix of such a text is ``truncated``, the whole never.
2. Never dropped: a value that closes early and goes on (``{"a": 1}, "b": 2}``, ``["a"], "b"]``, after a
   doubled closer too) is a syntax error at the first dropped member, never the shorter value, under any
   contract; an unescaped-inner-quote repair never reads a key, or a closer followed by more structure, as
   part of a string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from guardrail import ParseError, parse, parse_report
from guardrail.errors import JSONSyntaxError, TruncatedJSONError
from guardrail.parse.tokens import same_json

# --------------------------------------------------------------------------------------------------------
# Strategies: strings as models write them
# --------------------------------------------------------------------------------------------------------

#: What models put in string values: code with braces and comments, markdown with fences, markup and SQL
#: with quotes, backslashes, and the markers a reader of chatty text looks for.
PIECES = [
    "```python\ndef f(x):\n    return {'a': x}\n```", "```c\nint main() {\n    return 0;\n}\n```",
    '```json\n{"a": 1, "b": [1, 2]}\n```', "```\nplain\n```", "~~~\ntilde\n~~~", "````\nfour\n````",
    "int main() {\n}", "if (x) { y(); }", "{", "}", "[", "]", "{}", "[1, 2]", '{"nested": "json"}',
    '<div class="x">hi</div>', 'SELECT * FROM t WHERE a = "b";', "C:\\Users\\me", "a\\nb", "\\", '"',
    'say "hi" to her', "// comment", "# heading\n\n- item", "/* block */", "<think>why</think>", "<think>",
    "</think>", "</json>", "<json>", "Here is the JSON:", 'Here is the JSON:\n{"a": 1}', "```", "~~~", "\n",
    "\n\n", "\t", "\r\n", "line one\nline two", "key: value", '"a": 1,', '], "b": [', "}, {", "true", "null",
    "42", "é 한국어 \U0001f600", "'single'", "`tick`", "```json", "\n```\n", "\n~~~\n", "    ```",
]

content = st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=5).map("".join)
keys = st.sampled_from(["code", "text", "a", "summary", "html", "", "```", "{", "note\nline"]) | st.text(max_size=6)
scalars = content | st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4), max_leaves=12)
roots = st.lists(values, min_size=1, max_size=4) | st.dictionaries(keys, values, min_size=1, max_size=4)

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_ESCAPE = re.compile(r"\\(.)", re.S)
#: The escapes a model writes raw inside strings: ``\n`` most of all, tabs and carriage returns too.
RAW = {"escaped": {}, "raw newlines": {"n": "\n"}, "raw controls": {"n": "\n", "t": "\t", "r": "\r"}}


def dump(value: Any, indent: int | None, raw: dict[str, str], ensure_ascii: bool = True) -> str:
    """``json.dumps(value)`` with the escapes in ``raw`` inside its strings written as the raw characters."""
    text = json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)
    return _STRING.sub(lambda m: _ESCAPE.sub(lambda e: raw.get(e.group(1), e.group(0)), m.group(0)), text)


#: The ways models wrap an answer.
WRAPS: dict[str, Callable[[str], str]] = {
    "bare": lambda s: s,
    "json fence": lambda s: f"```json\n{s}\n```",
    "bare fence": lambda s: f"```\n{s}\n```",
    "tilde fence": lambda s: f"~~~\n{s}\n~~~",
    "prose lines": lambda s: f"Here is the JSON you asked for:\n{s}\nLet me know if you need anything else.",
    "prose and fence": lambda s: f"Sure! The result is below.\n\n```json\n{s}\n```\n\nI hope this helps.",
    "inline prose": lambda s: f"Here is the JSON: {s} Hope this helps!",
    "tag": lambda s: f"<json>{s}</json>",
    "think, then fence": lambda s: f"<think>\nThe user wants JSON.\n</think>\n```\n{s}\n```",
}


def parsed(text: str, contract: Any = Any) -> Any:
    try:
        return parse(text, contract)
    except ParseError as error:
        raise AssertionError(f"parse raised {error!r} for {text!r}") from error


# --------------------------------------------------------------------------------------------------------
# 1. What is inside a string is content
# --------------------------------------------------------------------------------------------------------


@settings(max_examples=300)
@given(value=roots, indent=st.sampled_from([None, 2]), raw=st.sampled_from(list(RAW)),
       wrap=st.sampled_from(list(WRAPS)), ensure_ascii=st.booleans())
@example(value={"a": "```c\nint main() {\n}\n```"}, indent=None, raw="raw newlines", wrap="bare", ensure_ascii=True)
@example(value={"a": "```c\nint main() {\n}\n```", "b": 1}, indent=2, raw="raw newlines", wrap="json fence",
         ensure_ascii=True)
@example(value=["x\n```\n", {"k": "\n```json\n{}\n```\n"}], indent=None, raw="raw newlines", wrap="prose lines",
         ensure_ascii=True)
@example(value={"code": "```python\nprint(1)\n```", "lang": "py"}, indent=2, raw="raw newlines",
         wrap="prose and fence", ensure_ascii=False)
@example(value={"t": "<think>\n</think>\nHere is the JSON:\n{}"}, indent=None, raw="raw controls", wrap="tag",
         ensure_ascii=True)
def test_a_value_whose_strings_hold_code_and_markers_comes_back_unchanged(
        value: Any, indent: int | None, raw: str, wrap: str, ensure_ascii: bool) -> None:
    text = WRAPS[wrap](dump(value, indent, RAW[raw], ensure_ascii))
    got = parsed(text)
    assert same_json(got, value), f"parse gave {got!r}, expected {value!r}, text {text!r}"


class Snippet(BaseModel):
    language: str
    code: str
    notes: list[str] = []
    review: str | None = None


snippets = st.builds(Snippet, language=st.sampled_from(["python", "c", "markdown", "sql"]), code=content,
                     notes=st.lists(content, max_size=3), review=st.none() | content)


@settings(max_examples=150)
@given(snippet=snippets, indent=st.sampled_from([None, 2]), raw=st.sampled_from(list(RAW)),
       wrap=st.sampled_from(list(WRAPS)))
def test_a_typed_answer_whose_strings_hold_code_comes_back_unchanged(snippet: Snippet, indent: int | None, raw: str,
                                                                     wrap: str) -> None:
    text = WRAPS[wrap](dump(snippet.model_dump(), indent, RAW[raw]))
    assert parsed(text, Snippet) == snippet


@settings(max_examples=100)
@given(value=roots, indent=st.sampled_from([None, 2]))
def test_a_raw_control_character_in_a_string_is_kept_and_recorded(value: Any, indent: int | None) -> None:
    escaped = dump(value, indent, {})
    text = dump(value, indent, RAW["raw controls"])
    report = parse_report(text, Any)
    assert report.ok, report.error
    assert same_json(report.value, value)
    recorded = "control_char_in_string" in [fix.kind for fix in report.fixes]
    assert recorded == (text != escaped), report.fixes


@settings(max_examples=40)
@given(value=roots, wrap=st.sampled_from(["{}", "Here is the JSON you asked for:\n{}", "```json\n{}"]))
@example(value={"a": "\n```json\n{}\n```\n", "b": [1]}, wrap="{}")
@example(value={"a": "\n```\n[1, 2]\n```\n"}, wrap="```json\n{}")
@pytest.mark.slow
def test_every_prefix_of_a_text_with_raw_newlines_is_truncated_and_the_whole_is_not(value: Any, wrap: str) -> None:
    """``truncated`` means the text ends inside a value: every prefix that cuts the value (a fence line the
    cut leaves inside a string included) is truncated, never a value found inside a string; the whole text
    is the value."""
    dumped = dump(value, None, RAW["raw newlines"])
    for cut in range(1, len(dumped)):
        text = wrap.replace("{}", dumped[:cut], 1)
        report = parse_report(text, Any)
        assert isinstance(report.error, TruncatedJSONError), f"cut at {cut}: {text!r} gave {report.value!r}"
    assert same_json(parsed(wrap.replace("{}", dumped, 1)), value)


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param('{"a": "```c\nint main() {\n}\n```"}', {"a": "```c\nint main() {\n}\n```"}, id="issue-example"),
    pytest.param('{"code": "\n```python\nprint(1)\n```\n", "lang": "py"}',
                 {"code": "\n```python\nprint(1)\n```\n", "lang": "py"}, id="fenced-block-in-a-string"),
    pytest.param('```json\n{"a": "x\n```\ny"}\n```', {"a": "x\n```\ny"}, id="string-closes-the-outer-fence"),
    pytest.param('Here:\n{"a": "\n```json\n{}\n```\n"}\nDone.', {"a": "\n```json\n{}\n```\n"},
                 id="object-in-a-fence-in-a-string"),
    pytest.param('[{"a": "\n~~~\n"}, {"b": "\n~~~\n"}]', [{"a": "\n~~~\n"}, {"b": "\n~~~\n"}], id="tildes"),
    pytest.param('{"a": "x\n```\n"}\n\n```json\n{"a": "x\n```\n"}\n```', {"a": "x\n```\n"},
                 id="the-same-value-twice"),
])
def test_fence_lines_inside_strings_are_content(text: str, expected: Any) -> None:
    report = parse_report(text, Any)
    assert report.ok, report.error
    assert same_json(report.value, expected)
    assert "control_char_in_string" in [fix.kind for fix in report.fixes]


def test_an_example_cut_off_before_the_answer_is_never_read_as_the_answer() -> None:
    """A value cut inside a string whose brackets never balance encloses what follows: no value of its own."""
    assert isinstance(parse_report('{"a": "\n```json\n{"b": 1}', Any).error, TruncatedJSONError)
    assert isinstance(parse_report('```json\n{"a": "\n```\n[1, 2]', Any).error, TruncatedJSONError)


def test_a_fence_line_outside_every_string_is_still_a_fence() -> None:
    # Two answers in two fences, the first cut off by its closing fence: it is broken, the second is read.
    text = 'First:\n```json\n{"a": [1,\n```\nThen:\n```json\n{"a": [2]}\n```'
    assert parse(text, Any) == {"a": [2]}


# --------------------------------------------------------------------------------------------------------
# 2. Data is never dropped, never swallowed
# --------------------------------------------------------------------------------------------------------


class Pair(BaseModel):
    key: str
    key2: str | None = None


#: An object that closed early, members after it, one reading: the stray closers are extra characters.
MERGED = [
    ('{"key": "value"}, "key2": "value2"}', {"key": "value", "key2": "value2"}),
    ('{"key": "value"}\n"key2": "value2"}', {"key": "value", "key2": "value2"}),
    ('{"key": "value"},\n  "key2": "value2"\n}', {"key": "value", "key2": "value2"}),
    ('{"key": "value"} , "key2" : "value2" }', {"key": "value", "key2": "value2"}),
    ('{"key": "value"}, key2: "value2"}', {"key": "value", "key2": "value2"}),
    ("{'key': 'value'}, 'key2': 'value2'}", {"key": "value", "key2": "value2"}),
    ('{"key": "value"}, "key2": {"x": 1}}', {"key": "value", "key2": {"x": 1}}),
    ('{"key": "value"}, "key2": ["x"]}', {"key": "value", "key2": ["x"]}),
    ('{"key": "value"}}, "key2": "value2"}', {"key": "value", "key2": "value2"}),
    ('{"key": "value"}\n}\n, "key2": "value2"}', {"key": "value", "key2": "value2"}),
    ('{"key": "v\nx"}, "key2": "value2"}', {"key": "v\nx", "key2": "value2"}),
    ('{"a": [{"b": 1}]}, "c": 2}, "d": [3]}', {"a": [{"b": 1}], "c": 2, "d": [3]}),
]
#: Closed early with more than one reading, or none: a syntax error at the first member after the close.
CLOSED_EARLY = [
    ('{"key": "value"}, "key2": "value2"', 18),  # no closer after the member: no reading reads it whole
    ('{"o": {"key": "value"}}, "key2": "value2"}', 25),  # key2 could belong to "o" or to the root
    ('{"o": {"k": 1}, "p": 2}, "key2": "value2"}', 25),  # the stray could be o's closer: p moves into "o"
    ('{"key": "value"}], "key2": "value2"}', 19),  # a "]" closes nothing that is open
    ('["a", "b"], "c"]', 12),  # an array: a stray "]" or a missing "[" (["a", "b"] as an element)
    ('[1, 2] , true]', 9),
    ('["a"]\n, "b"\n]', 8),
    ('["a"]], "b"]', 8),
]
CLOSED_EARLY_WRAPS = ["{}", "Here it is: {} Hope that helps.", "```json\n{}\n```", "Sure!\n\n```\n{}\n```\nDone.",
                      "<json>{}</json>"]


@pytest.mark.parametrize(("text", "expected"), MERGED)
@pytest.mark.parametrize("wrap", CLOSED_EARLY_WRAPS)
@pytest.mark.parametrize("contract", [Any, dict[str, Any]], ids=["Any", "dict"])
def test_members_after_a_stray_closer_are_merged_when_that_is_the_one_reading(text: str, expected: Any,
                                                                              wrap: str, contract: Any) -> None:
    full = wrap.replace("{}", text, 1)
    report = parse_report(full, contract)
    assert report.ok, f"{full!r}: {report.error!r}"
    assert same_json(report.value, expected)
    assert "stray_closer" in [fix.kind for fix in report.fixes]
    assert same_json(parse(full, contract), expected)


class Pair2(BaseModel):
    key: str
    key2: Any = None


@pytest.mark.parametrize(("text", "expected"), MERGED[:11])
@pytest.mark.parametrize("wrap", CLOSED_EARLY_WRAPS)
def test_a_typed_contract_gets_the_merged_members_never_a_default(text: str, expected: Any, wrap: str) -> None:
    """``key2`` is never silently left at its default: the shorter object is not a reading."""
    got = parse(wrap.replace("{}", text, 1), Pair2)
    assert same_json(got.key2, expected["key2"])


@pytest.mark.parametrize(("text", "expected"), MERGED)
@pytest.mark.parametrize("contract", [list[str], list[Any], Pair], ids=["list-str", "list", "model"])
def test_under_any_contract_the_answer_is_the_merged_object_or_an_error(text: str, expected: Any,
                                                                         contract: Any) -> None:
    report = parse_report(text, contract)
    if report.ok:
        got = report.value.model_dump() if isinstance(report.value, BaseModel) else report.value
        assert same_json(got, expected) or same_json(got, [expected]), got


@pytest.mark.parametrize(("text", "position"), CLOSED_EARLY)
@pytest.mark.parametrize("wrap", CLOSED_EARLY_WRAPS)
@pytest.mark.parametrize("contract", [Any, Pair, dict[str, Any], list[str], list[Any]],
                         ids=["Any", "model", "dict", "list-str", "list"])
def test_a_value_that_closes_early_and_goes_on_is_never_the_shorter_value(text: str, position: int, wrap: str,
                                                                          contract: Any) -> None:
    full = wrap.replace("{}", text, 1)
    report = parse_report(full, contract)
    assert isinstance(report.error, JSONSyntaxError), f"{full!r} gave {report.value!r} {report.fixes}"
    assert report.error.position == wrap.index("{}") + position
    with pytest.raises(JSONSyntaxError):
        parse(full, contract)


@pytest.mark.parametrize("wrap", ["{}", "```json\n{}\n```", "Sure:\n~~~\n{}\n~~~\nDone."])
def test_an_array_followed_by_elements_to_the_end_is_never_the_shorter_array(wrap: str) -> None:
    text = wrap.replace("{}", '["a", "b"], "c"', 1)
    report = parse_report(text, list[str])
    assert isinstance(report.error, JSONSyntaxError), report.value
    assert report.error.position == wrap.index("{}") + 12
    with pytest.raises(JSONSyntaxError):
        parse(text, list[str])


def test_prose_after_a_closed_array_is_still_prose() -> None:
    assert parse('["a"], and more', list[str]) == ["a"]
    assert parse('["a", "b"], "c" is also fine.', list[str]) == ["a", "b"]


@settings(max_examples=200)
@given(first=st.dictionaries(st.text(min_size=1, max_size=5), values, min_size=1, max_size=3),
       rest=st.dictionaries(st.text(min_size=1, max_size=5), values, min_size=1, max_size=3),
       closers=st.sampled_from(["}", "}}", "}\n", "} }", "]"]), sep=st.sampled_from([", ", ",\n", "\n", " , "]),
       indent=st.sampled_from([None, 2]), wrap=st.sampled_from(CLOSED_EARLY_WRAPS),
       contract=st.sampled_from([Any, dict[str, Any]]))
@example(first={"a": {"b": 1}}, rest={"c": 2}, closers="}", sep=", ", indent=None, wrap="{}", contract=Any)
def test_no_member_after_an_early_close_is_ever_dropped(first: dict[str, Any], rest: dict[str, Any], closers: str,
                                                        sep: str, indent: int | None, wrap: str, contract: Any) -> None:
    """``{first}`` closed, then the members of ``rest`` and a final ``}``: never a value without them. When
    the stray closers are braces and no member of ``first`` is an object (the one reading), the members are
    merged; else it is a syntax error."""
    members = json.dumps(rest, indent=indent)[1:-1]
    text = wrap.replace("{}", json.dumps(first, indent=indent) + closers + sep + members + "}", 1)
    report = parse_report(text, contract)
    one_reading = "]" not in closers and not any(isinstance(v, dict) for v in first.values())
    if one_reading and not set(first) & set(rest):
        assert report.ok, f"{text!r}: {report.error!r}"
        assert same_json(report.value, {**first, **rest})
    elif not one_reading:
        assert isinstance(report.error, JSONSyntaxError), f"{text!r} gave {report.value!r}"
    if report.ok:
        assert all(key in report.value for key in rest), f"{text!r} dropped members: {report.value!r}"


@pytest.mark.parametrize("text", [
    '{"bad_one": ["Lorem Ipsum","consectetur" comment],"good_one": ["elit"]}',
    '{"a": "x "y" z, "b": "w"}',
    '{"a": ["x" y], "b": ["z"]}',
    '[["a" b], ["c"]]',
    '{"a": "say "hi" now", "b": {"c" d}, "e": "f"}',
    '["x" y, "z", "w"]',  # the element "z" read into the first string
    '["x" y, 3, "z"]',
    '{"a": "x" y, b: "z", "c": 1}',  # an unquoted key
    '{"a": "x" y, \'b\': "z", "c": 1}',  # a single-quoted key
])
def test_an_inner_quote_repair_never_swallows_a_key_or_a_closed_container(text: str) -> None:
    report = parse_report(text, Any)
    assert not report.ok, f"{text!r} read as {report.value!r}"
    assert isinstance(report.error, JSONSyntaxError)


def test_an_inner_quote_repair_still_reads_quotes_inside_one_string() -> None:
    assert parse('{"note": "say "hi" to her", "b": ["x"]}', Any) == {"note": 'say "hi" to her', "b": ["x"]}
    assert parse('["Lorem "Ipsum" dolor", "elit"]', list[str]) == ['Lorem "Ipsum" dolor', "elit"]


@settings(max_examples=150)
@given(members=st.dictionaries(st.from_regex(r"[a-z_]{1,6}", fullmatch=True),
                               st.lists(st.from_regex(r"[A-Za-z ]{0,8}", fullmatch=True), max_size=3),
                               min_size=2, max_size=4),
       word=st.from_regex(r"[a-z]{1,8}", fullmatch=True), data=st.data())
def test_no_key_is_swallowed_into_a_string(members: dict[str, list[str]], word: str, data: st.DataObject) -> None:
    """An unquoted word after a string (``"consectetur" comment``) in one member: whatever the reading, every
    key is still a key of the value, never text inside a string."""
    key = data.draw(st.sampled_from([k for k, v in members.items() if v]) if any(members.values()) else st.nothing())
    text = json.dumps(members)
    item = json.dumps(members[key][-1])
    slot = text.index(json.dumps(key) + ": [")
    at = text.index(item, slot) + len(item)
    text = text[:at] + " " + word + text[at:]
    try:
        got = parse(text, Any)
    except ParseError:
        return
    assert set(got) == set(members), f"{text!r} read as {got!r}"
    for value in got.values():
        for string in value:
            assert not any(json.dumps(k) + ":" in string for k in members), f"{text!r} swallowed a key: {got!r}"


@settings(max_examples=150)
@given(items=st.lists(st.from_regex(r"[A-Za-z ,]{0,8}", fullmatch=True) | st.integers(), min_size=2, max_size=5),
       word=st.from_regex(r"[a-z]{1,8}", fullmatch=True), data=st.data())
def test_no_element_is_swallowed_into_a_string(items: list[Any], word: str, data: st.DataObject) -> None:
    """An unquoted word after a string element (``["x" y, "z"]``): whatever the reading, every element after
    it is still an element of its own, never text inside the string before it."""
    strings = [i for i, item in enumerate(items) if isinstance(item, str)]
    index = data.draw(st.sampled_from(strings) if strings else st.nothing())
    parts = [json.dumps(item) for item in items]
    parts[index] += " " + word
    text = "[" + ", ".join(parts) + "]"
    try:
        got = parse(text, list[Any])
    except ParseError:
        return
    assert len(got) == len(items), f"{text!r} read as {got!r}"
    assert all(same_json(a, b) for a, b in zip(got[index + 1 :], items[index + 1 :], strict=True)), got
