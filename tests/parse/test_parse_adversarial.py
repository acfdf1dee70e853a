"""An independent adversarial review of the parse layer (its third round).

Each section is one class of input where the review found a confident wrong value, a builtin exception or a
reading chosen where two exist; the first tests in each are the cases found, the properties around them widen
each to a family. The rule every test checks: either the one value the text means comes back, or a typed
``ParseError`` does; never another value.

- A fence line inside a string of a value that then breaks, closes early or never reads whole: nothing inside
  that value is the answer (an object written inside one of its strings is not a candidate of its own).
- A whole reply that opens a quote it never closes (``"unterminated``) is no bare word.
- Numbers with digit separators: a leading zero has a second reading (``0_1``), an integer longer than
  ``int()`` takes must be a typed error, and a number beyond float range is never infinity.
- An inner-quote repair only where the inner quotes hug what they quote: ``["a" 2 "b"]`` is three elements
  by another reading, never the string ``a" 2 "b``.
- Escaped JSON holding an escaped backslash: escaped once (``\\\\t`` a tab) or only its quotes escaped (a backslash
  and a ``t``): two readings.
- Plain text under ``str`` that holds a JSON string on a line of its own, or opens with a ``<tag>`` block and goes
  on after it: the whole text, or the part the model meant as the answer.
- Smart quotes around a backslash: an escape (``\\n`` a newline) or a character (a Windows path).
- Unquoted tokens with a number reading in another language: ``0x10`` (16 in JSON5) under a string field,
  ``inf`` (Python's infinity).
- The bulk pass against the token-by-token scanner on dirty JSON whose strings hold the slips' characters.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from guardrail import parse, parse_report
from guardrail.errors import GuardrailError, ParseError
from guardrail.parse.patch import bulk_decode
from guardrail.parse.scanner import ScanBudget, scan
from guardrail.parse.tokens import STRICT_DECODER, same_json

PROPERTY = settings(max_examples=150, deadline=None)


def refused(text: str, contract: Any) -> bool:
    """Whether the text is refused with a typed error (a builtin exception fails the test)."""
    report = parse_report(text, contract)
    return report.error is not None and isinstance(report.error, ParseError)


# --------------------------------------------------------------------------------------------------------
# 1. A fence line inside a string, then the value breaks: nothing inside it is the answer
# --------------------------------------------------------------------------------------------------------


class Inner(BaseModel):
    b: int


@pytest.mark.parametrize("text", [
    # The inner quotes are not escaped: the outer value is broken, {"b": 1} lies inside its string.
    '{"a": "\n```json\n{"b": 1}\n```\n"}',
    "{'a': '\n```json\n{'b': 1}\n```\n'}",
    # A fence line in a string, then a bare fence line between elements: the array is broken.
    '[1, "\n```\n", {"b": 1}\n```\n]',
    # The value closes with a member after it: the member's object is no answer of its own.
    '{"a": "\n```\n"}, "c": {"b": 1}\n```\n',
    '{"a": "\n~~~\n"}, "c": {"b": 1}\n~~~\n',
    # A fenced block between an object's members: the member before it is never dropped.
    '{"a": 1,\n```json\n{"b": 1}\n```\n}',
])
@pytest.mark.parametrize("contract", [Any, Inner])
def test_an_object_inside_a_string_the_fence_split_cut_is_never_the_answer(text: str, contract: Any) -> None:
    report = parse_report(text, contract)
    assert not report.ok, report.value


code_lines = st.lists(st.sampled_from(["```", "```json", "~~~", "{", "}", "x = 1", "print(1)", "", "  ```"]),
                      min_size=1, max_size=4)


@PROPERTY
@given(before=code_lines, after=code_lines, inner=st.sampled_from(['{"b": 1}', '[1, 2]', '{"b": "x"}']),
       closing=st.sampled_from(['"}', '", "n": 1}', '"]}']))
def test_unescaped_json_in_a_code_string_is_never_chosen(before: list[str], after: list[str], inner: str,
                                                         closing: str) -> None:
    """Code written raw into a string with a JSON value whose quotes are not escaped: the outer value is
    broken; whatever comes back must not be the inner value (nor anything but an error)."""
    text = '{"code": "' + "\n".join(["", *before, inner, *after, ""]) + closing
    report = parse_report(text, Any)
    assert not report.ok or not same_json(report.value, json.loads(inner)), (text, report.value)


@pytest.mark.parametrize("text", [
    '{"a": 1} /* x */, "b": 2}', '{"a": 1}\n// more\n, "b": 2}', '{"a": 1}, \u201cb\u201d: 2}',
    '{"a": 1},\n\u200b"b": 2}', '{"a": 1}, 1: 2}', '{"a": 1}, "b"\n: 2}', '{"a": 1},\n"b"\u00a0: 2}',
    '{"a": 1}, \u00e9: 2}', '{"a": 1}, "b"}',
    '[1, 2] /* x */, 3]', '[1, 2]\n// x\n, 3]', '["a"], \'b\']', '["a"], \u201cb\u201d]', '["a"], True]',
    '["a"],\u200b "b"]',
])
def test_a_member_or_element_after_an_early_close_is_never_dropped(text: str) -> None:
    """After the value closes, a member (or, after an array, an element) in any spelling the scanner reads (a
    comment or an invisible character before it, smart quotes, a number or a non-ASCII word as its key, a line
    break before its colon): merged where that is the one reading, else a syntax error; never the shorter
    value."""
    report = parse_report(text, Any)
    assert not report.ok or len(report.value) == 2, report.value


# --------------------------------------------------------------------------------------------------------
# 2. A whole reply that opens a quote and never closes it is no bare word
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['"unterminated', '"abc\\"', '"a"b', "'open", "`open", "\u201copen"])
@pytest.mark.parametrize("contract", [str, str | None])
def test_an_unclosed_quote_is_not_part_of_a_bare_string(text: str, contract: Any) -> None:
    assert refused(text, contract)


def test_a_token_holding_a_double_quote_is_no_bare_word() -> None:
    """Under ``str`` alone it is plain text (``x"``), a reading of its own; where null fits too it is no word."""
    assert refused('x"', str | None)


@PROPERTY
@given(word=st.text(st.characters(codec="utf-8", exclude_characters="\n\r"), min_size=1, max_size=12),
       quote=st.sampled_from(['"', "'", "`", "\u201c", "\u2018"]))
@example(word="unterminated", quote='"')
def test_a_reply_opening_a_quote_never_returns_the_quote_as_content(word: str, quote: str) -> None:
    report = parse_report(quote + word, str | None)
    assert not report.ok or not (report.value or "").startswith(quote), report.value


def test_an_apostrophe_inside_a_bare_word_is_still_read() -> None:
    assert parse("it's", str | None) == "it's"


# --------------------------------------------------------------------------------------------------------
# 3. Digit separators
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['{"a": 0_1}', '{"a": 00_1}', '{"a": -0_5}'])
def test_a_separated_number_with_a_leading_zero_is_refused(text: str) -> None:
    """``05`` is refused (an octal reading); ``0_1`` is no number in Python or JavaScript either."""
    assert refused(text, dict[str, int])


@pytest.mark.parametrize("contract", [dict[str, int], dict[str, float], Any, dict[str, str]])
def test_a_separated_integer_longer_than_int_takes_is_a_typed_error(contract: Any) -> None:
    text = '{"a": 9' + "_9" * 5000 + "}"
    assert refused(text, contract)


@pytest.mark.parametrize("text", ['{"a": 9' + "_999" * 110 + "}", '{"a": 9' + "_999" * 110 + ".5}",
                                  '{"a": 9' + "9" * 400 + "_9}"])
def test_a_separated_number_beyond_float_range_is_never_infinity(text: str) -> None:
    report = parse_report(text, dict[str, float])
    assert not report.ok, report.value


@PROPERTY
@given(groups=st.lists(st.text("0123456789", min_size=1, max_size=4), min_size=2, max_size=6),
       fraction=st.none() | st.lists(st.text("0123456789", min_size=1, max_size=3), min_size=1, max_size=3),
       negative=st.booleans(), contract=st.sampled_from([dict[str, int], dict[str, float], Any]))
def test_digit_separators_give_the_number_or_an_error(groups: list[str], fraction: list[str] | None,
                                                      negative: bool, contract: Any) -> None:
    word = ("-" if negative else "") + "_".join(groups) + ("." + "_".join(fraction) if fraction else "")
    report = parse_report('{"a": ' + word + "}", contract)
    if not report.ok:
        return
    digits = word.replace("_", "")
    integer = digits.lstrip("-").split(".")[0]
    assert not (len(integer) > 1 and integer.startswith("0")), (word, report.value)
    value = report.value["a"]
    exact = float(digits) if "." in digits else int(digits)
    assert value == (float(exact) if contract == dict[str, float] else exact)
    assert math.isfinite(value)


# --------------------------------------------------------------------------------------------------------
# 4. Inner quotes only where they hug what they quote
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['["a" 2 "b"]', '["x" true "y"]', '{"note": "x" y "z", "k": 1}',
                                  '["a" null "b", "c"]'])
def test_quotes_that_do_not_hug_a_word_are_no_inner_quotes(text: str) -> None:
    assert refused(text, Any)
    assert refused(text, list[str] if text.startswith("[") else dict[str, Any])


@pytest.mark.parametrize(("text", "expected"), [
    ('{"note": "say "hi" to her"}', {"note": 'say "hi" to her'}),
    ('["size "2" in", "x"]', ['size "2" in', "x"]),
    ('{"a": "it\'s "quoted""}', {"a": 'it\'s "quoted"'}),
])
def test_inner_quotes_that_hug_their_words_are_still_read(text: str, expected: Any) -> None:
    assert same_json(parse(text, Any), expected)


# --------------------------------------------------------------------------------------------------------
# 5. Escaped JSON with an escaped backslash: two readings
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['{\\"path\\": \\"C:\\\\temp\\"}', '{\\"a\\": \\"line1\\\\nline2\\"}'])
def test_escaped_json_whose_backslashes_read_two_ways_is_refused(text: str) -> None:
    """Escaped once, ``\\\\t`` is a tab; with only its quotes escaped it is a backslash and a ``t``."""
    assert refused(text, Any)


@pytest.mark.parametrize(("text", "expected"), [
    ('{\\"key\\": \\"value\\"}', {"key": "value"}),
    ('{\\"a\\": \\"say \\\\\\"hi\\\\\\"\\"}', {"a": 'say "hi"'}),  # only the escaped-once reading decodes
    ('{\\"a\\": \\"x\\ny\\"}', {"a": "x\ny"}),  # the same either way
])
def test_escaped_json_with_one_reading_is_still_read(text: str, expected: Any) -> None:
    assert same_json(parse(text, Any), expected)


@PROPERTY
@given(value=st.recursive(st.text(st.sampled_from('ab\\"\n\t/'), max_size=6) | st.integers(-5, 5),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("kq"), inner),
                          max_leaves=6))
def test_escaped_json_gives_the_value_or_an_error(value: Any) -> None:
    """JSON escaped once as a string body (what ``json.dumps`` of the JSON text holds between its quotes)."""
    dumped = json.dumps(value)
    escaped = json.dumps(dumped)[1:-1]
    report = parse_report(escaped, Any)
    assert not report.ok or same_json(report.value, value), (escaped, report.value)


@pytest.mark.parametrize(("text", "contract"), [
    ('{\\"items\\": [1, 2]} thanks', list[int]),
    ('Here: {\\"items\\": [1, 2], \\"n\\": \\"x\\"', list[int]),
    ('{\\"k\\": {"a": 1}}', dict[str, int]),
    ('{\\n  \\"k\\": [1]} and more', list[int]),
    ('[\\"a\\", [1, 2]] ok', list[int]),
])
def test_nothing_inside_escaped_json_in_prose_is_the_answer(text: str, contract: Any) -> None:
    """Escaped JSON that is not the whole reply is no value; what lies inside it is not one either."""
    assert refused(text, contract)


# --------------------------------------------------------------------------------------------------------
# 6. Plain text under str that is not only plain text
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['Sure!\n\n"hello"', 'Here is the JSON:\n"hello"', '<think>hmm</think>\n"hello"',
                                  "<think>the user wants a greeting</think>hello",
                                  "<think>\nthe user wants a greeting\n</think>\nhello there"])
def test_plain_text_with_an_answer_inside_is_refused(text: str) -> None:
    assert refused(text, str)


@pytest.mark.parametrize("text", ["She said: no way", "hello", "It's fine", "Use [brackets] here",
                                  "<answer>hello there</answer>"])
def test_plain_text_is_still_read(text: str) -> None:
    assert parse(text, str) == text.removeprefix("<answer>").removesuffix("</answer>")


# --------------------------------------------------------------------------------------------------------
# 7. Smart quotes around a backslash; tokens with a number reading elsewhere
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ['{"a": \u201cline1\\nline2\u201d}', '{"path": \u201cC:\\new\u201d}',
                                  '[\u201ca\\"b\u201d, 1, 2]', '{"a": \u201cx\\ty\u201d, "b": True, "c": None}'])
def test_smart_quotes_around_a_backslash_are_refused(text: str) -> None:
    assert refused(text, Any)


@pytest.mark.parametrize("text", ['{"a": 0x10}', '{"a": 0b101}', '{"a": 0o17}', '{"a": -0x1F}', '{"a": inf}',
                                  '{"a": Inf}', '{"a": INF}'])
def test_tokens_that_are_numbers_in_another_language_are_no_bare_strings(text: str) -> None:
    assert refused(text, dict[str, str])


@pytest.mark.parametrize("text", ['{"code": -0}', "-0", '{"code": (-0)}'])
def test_negative_zero_is_not_coerced_to_the_string_0(text: str) -> None:
    """``coerce_string`` writes the digits as written: ``-0`` is neither ``"0"`` (not what was written) nor
    ``"-0"`` (not the number's string)."""
    contract = str if text == "-0" else dict[str, str]
    report = parse_report(text, contract)
    assert not report.ok, report.value


def test_zero_and_other_integers_are_still_coerced_to_strings() -> None:
    assert parse('{"a": 0, "b": -10, "c": 7}', dict[str, str]) == {"a": "0", "b": "-10", "c": "7"}


# --------------------------------------------------------------------------------------------------------
# 8. The bulk pass against the scanner, on dirty JSON whose strings hold the slips' characters
# --------------------------------------------------------------------------------------------------------

STRING_PIECES = ["a", " ", "'", '"', "\\", "/", "//", "/*", "*/", "#", ",", "}", "]", "{", "[", ":", "True", "None",
                 "null", "\n", "\t", "\u201c", "\u201d", "\u2018", "\u2019", "\u200b", "\u00a0", "```", "<think>",
                 "Here is the JSON:", "http://x.io/a", "it's", "\u00e9", "\U0001f600", "\\n", "1", ', "k": 1', '"}',
                 "'}", " // c", "/* c */", "\r"]
KEYS = ["a", "key", "k_2", "x-y", "$id", "True", "null", "with space", "it's", 'q"uote', "c:d", "//"]


def _string(rnd: random.Random) -> str:
    return "".join(rnd.choice(STRING_PIECES) for _ in range(rnd.randint(0, 4)))


def _value(rnd: random.Random, depth: int = 0) -> Any:
    kind = rnd.randint(0, 9 if depth < 3 else 5)
    if kind == 0:
        return rnd.choice([True, False, None])
    if kind == 1:
        return rnd.choice([0, -1, 7, 10**20])
    if kind == 2:
        return rnd.choice([1.5, -0.25, 1e-7])
    if kind <= 5:
        return _string(rnd)
    if kind <= 7:
        return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    return {rnd.choice(KEYS) if rnd.random() < 0.6 else _string(rnd): _value(rnd, depth + 1)
            for _ in range(rnd.randint(0, 4))}


class _Slipped:
    """Writes a value as JSON with slips the bulk pass undoes, each with one reading."""

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd

    def gap(self) -> str:
        rnd = self.rnd
        pieces = [rnd.choice(["", " ", "\n", "\n  "])]
        if rnd.random() < 0.15:
            pieces.append(rnd.choice(["// note, True\n", "/* a, b */", "// http://x.io\n"]))
        if rnd.random() < 0.1:
            pieces.append(rnd.choice(["\u200b", "\ufeff", "\u3000"]))
        return "".join(pieces)

    def string(self, s: str, key: bool = False) -> str:
        rnd = self.rnd
        if key and rnd.random() < 0.3 and s.isidentifier() and s not in ("True", "False", "None", "null"):
            return s
        if rnd.random() < 0.25 and "\\" not in s and all(c >= " " for c in s):
            return "'" + s.replace("'", "\\'") + "'"
        dumped = json.dumps(s, ensure_ascii=rnd.random() < 0.3)
        return dumped.replace("\\n", "\n") if rnd.random() < 0.4 and "\\\\" not in dumped else dumped

    def value(self, v: Any) -> str:
        rnd = self.rnd
        if v is True or v is False or v is None:
            return {True: "True", False: "False", None: "None"}[v] if rnd.random() < 0.4 else json.dumps(v)
        if isinstance(v, str):
            return self.string(v)
        if isinstance(v, list):
            return self.container("[", "]", [self.value(x) for x in v])
        if isinstance(v, dict):
            return self.container("{", "}", [self.string(k, True) + self.gap() + ":" + self.gap() + self.value(x)
                                             for k, x in v.items()])
        return json.dumps(v)

    def container(self, opener: str, closer: str, items: list[str]) -> str:
        rnd = self.rnd
        separators = [self.gap() + "," + self.gap() for _ in items[1:]]
        body = items[0] if items else ""
        for separator, item in zip(separators, items[1:], strict=True):
            body += separator + item
        trailing = self.gap() + "," if items and rnd.random() < 0.4 else ""
        return opener + self.gap() + body + trailing + self.gap() + closer


@settings(max_examples=400, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_bulk_pass_gives_the_value_the_text_was_written_from(seed: int) -> None:
    """Every value the bulk pass returns is the value the dirty text was written from, and the scanner's."""
    rnd = random.Random(seed)
    value = _value(rnd)
    value = value if isinstance(value, (dict, list)) else {"v": value}
    text = _Slipped(rnd).value(value)
    bulk = bulk_decode(text, 0, 50, ScanBudget(decoder=STRICT_DECODER))
    scanned = scan(text, 0, max_depth=50)
    if bulk is not None:
        assert same_json(bulk.value, value), (text, bulk.value)
        if scanned.status == "complete":
            assert same_json(scanned.value, bulk.value) and scanned.end == bulk.end, text
    report = parse_report(text, Any)
    assert not report.ok or same_json(report.value, value), (text, report.value)


def test_no_builtin_exception_escapes_on_the_cases_above() -> None:
    """Belt and braces: every text in this module through both entry points, under several contracts."""
    texts = ['{"a": 9' + "_9" * 5000 + "}", '"unterminated', '{"a": "\n```json\n{"b": 1}\n```\n"}',
             '{\\"a\\": \\"C:\\\\temp\\"}', '{"a": \u201cC:\\new\u201d}', '["a" 2 "b"]']
    for text in texts:
        for contract in (Any, str, dict[str, int], dict[str, float], list[str]):
            with contextlib.suppress(GuardrailError):
                parse(text, contract)
