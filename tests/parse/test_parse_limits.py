"""Adversarial inputs and the input limits of guardrail's parse layer.

Every adversarial text must come back as a :class:`guardrail.ParseError` - never a ``RecursionError``,
``MemoryError`` or a hang. Each call runs under ``helpers.finishes``, purely a hang guard with a generous
bound (``HANG_GUARD_S``, 60 s) that turns a hang into a failure; how fast the parser is belongs in ``bench/``.

Limits: nesting deeper than ``Limits.max_depth`` is an :class:`InputLimitError` with ``.limit ==
"max_depth"``; text longer than ``Limits.max_bytes`` *UTF-8 bytes* is one with ``.limit == "max_bytes"``;
``Limits`` refuses a ``max_depth`` outside 1..200 and a non-positive ``max_bytes`` with ``ValueError``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel
from support.waiting import finishes

from guardrail import ParseError, SchemaViolationError, TruncatedJSONError, parse, parse_report
from guardrail.errors import InputLimitError
from guardrail.parse import Limits

MB = 1_000_000


class Answer(BaseModel):
    a: int
    tags: list[str] = []


CONTRACTS: list[Any] = [Any, Answer, list[int]]
CONTRACT_IDS = ["Any", "Answer", "list_int"]


def guarded_parse_error(text: str, contract: Any, limits: Limits | None = None) -> ParseError:
    """Parse ``text``; it must raise a ParseError (nothing else) and finish within the hang guard."""
    try:
        value = finishes(lambda: parse(text, contract, limits=limits), "parse")
    except ParseError as error:
        assert error.text == text  # the whole raw reply, whichever segment the error came from
        return error
    raise AssertionError(f"expected a ParseError, got the value {value!r:.200}")


# --------------------------------------------------------------------------------------------------------
# Adversarial texts
# --------------------------------------------------------------------------------------------------------

ADVERSARIAL: dict[str, Callable[[], str]] = {
    # An unclosed fence followed by a sea of spaces (the fence regex must stay linear).
    "unclosed_fence_then_100k_spaces": lambda: "```json\n" + " " * 100_000,
    "unclosed_fence_info_then_100k_spaces": lambda: "```json" + " " * 100_000,
    "unclosed_fence_cut_json_then_100k_spaces": lambda: 'Here:\n```json\n{"a": 1,' + " " * 100_000,
    "100k_spaces_then_unclosed_fence": lambda: " " * 100_000 + "\n```json\n[1,",
    # 1 MB of '[' (depth limit, no recursion).
    "1MB_of_open_brackets": lambda: "[" * MB,
    "1MB_of_open_brackets_in_fence": lambda: "```json\n" + "[" * MB,
    "1MB_of_open_brackets_after_prose": lambda: "The answer is " + "[" * MB,
    # 100k-deep nesting of objects.
    "100k_deep_objects": lambda: '{"a":' * 100_000,
    "100k_deep_objects_closed": lambda: '{"a":' * 100_000 + "1" + "}" * 100_000,
    "100k_deep_arrays_closed": lambda: "[" * 100_000 + "]" * 100_000,
    "100k_deep_mixed": lambda: '[{"a":' * 50_000,
    # An unclosed string followed by thousands of commas.
    "unclosed_string_then_commas_in_object": lambda: '{"a": "' + "," * 100_000,
    "unclosed_string_then_commas_in_array": lambda: '["' + "," * 100_000,
    "unclosed_string_then_commas_and_quotes": lambda: '{"a": "x' + ',"' * 50_000,
    "unclosed_single_quote_then_commas": lambda: "{'a': '" + "," * 100_000,
    "unclosed_smart_quote_then_commas": lambda: "{\u201ca\u201d: \u201c" + "," * 100_000,
    "bare_unclosed_string_then_commas": lambda: '"' + "," * 100_000,
    # Many unmatched '{' in prose.
    "100k_unmatched_braces_in_prose": lambda: "Pick { or { " * 50_000,
    "100k_bare_open_braces": lambda: "{" * 100_000,
    "50k_open_braces_with_words": lambda: "{ word " * 50_000,
    "25k_braces_with_keys": lambda: '{"k":1 ' * 25_000,
    "prose_with_open_brackets": lambda: "see [ note " * 50_000,
    "many_fenced_unclosed_objects": lambda: "```json\n{\n```\n" * 10_000,
    # 1 MB of '"' and similar floods.
    "1MB_of_double_quotes": lambda: '"' * MB,
    "1MB_of_double_quotes_in_array": lambda: "[" + '"' * MB,
    "1MB_of_single_quotes_in_object": lambda: "{" + "'" * MB,
    "1MB_of_backslashes_in_string": lambda: '["' + "\\" * MB,
    "1MB_of_backslash_quote_in_string": lambda: '["' + '\\"' * (MB // 2),
    "1MB_of_comment_openers": lambda: "[" + "/*" * (MB // 2),
    "1MB_of_line_comments": lambda: "[1," + "//\n" * (MB // 3),
    "1MB_of_backticks": lambda: "`" * MB,
    "many_fence_lines": lambda: "```\n" * 50_000,
    "many_tags": lambda: "<json>" * 100_000,
    "1MB_of_digits": lambda: "[" + "1" * MB,
    "1MB_number_like": lambda: "[" + "1e" * (MB // 2),
    "1MB_of_minus": lambda: "[" + "-" * MB,
    "1MB_of_invisible_chars": lambda: "[" + "\u200b" * MB,
    "1MB_of_colons_in_object": lambda: '{"a"' + ":" * MB,
    "1MB_of_commas_in_array": lambda: "[1" + "," * MB,
    "many_unquoted_keys": lambda: "{" + "a:1 " * 50_000,
    "200k_stray_closers_in_array": lambda: "[1" + "}" * 200_000,
    "200k_stray_closers_in_object": lambda: '{"a":1' + "]" * 200_000,
    "many_missing_commas": lambda: "[" + "[] " * 100_000,
    # Floods of small values and of openers, at 1 MB (each must cost milliseconds, not a scan per opener).
    "1MB_of_open_braces": lambda: "{" * MB,
    "1MB_of_brace_key_fragments": lambda: '{"a"' * (MB // 4),
    "1MB_of_empty_objects": lambda: "{}" * (MB // 2),
    "1MB_of_small_objects_in_prose": lambda: '{"a":1}x' * (MB // 8),
    "1MB_of_unclosed_members": lambda: '{"a":1 ' * (MB // 7),
    "1MB_of_fence_lines": lambda: "```\n" * (MB // 4),
    "1MB_of_fenced_unclosed_objects": lambda: "```json\n{\n```\n" * (MB // 14),
    "1MB_of_escaped_key_starts": lambda: '{"\\' * (MB // 3),
    "1MB_of_cut_literals": lambda: "[tr " * (MB // 4),
}

#: The headline cases: these also run under the model and list[int] contracts, and through parse_report.
HEADLINE_CASES = [
    "unclosed_fence_then_100k_spaces",
    "1MB_of_open_brackets",
    "100k_deep_objects",
    "unclosed_string_then_commas_in_object",
    "100k_unmatched_braces_in_prose",
    "1MB_of_double_quotes",
]


@pytest.mark.parametrize("name", list(ADVERSARIAL))
@pytest.mark.slow
def test_adversarial_text_is_a_parse_error_quickly(name: str) -> None:
    text = ADVERSARIAL[name]()
    error = guarded_parse_error(text, Any)
    assert error.kind in ("no_json", "syntax_error", "truncated", "ambiguous", "schema_violation")


@pytest.mark.parametrize("contract", CONTRACTS[1:], ids=CONTRACT_IDS[1:])
@pytest.mark.parametrize("name", HEADLINE_CASES)
def test_adversarial_text_is_a_parse_error_quickly_with_contract(name: str, contract: Any) -> None:
    error = guarded_parse_error(ADVERSARIAL[name](), contract)
    assert error.kind in ("no_json", "syntax_error", "truncated", "ambiguous", "schema_violation")


@pytest.mark.parametrize(("name", "kind", "limit"), [
    ("unclosed_fence_cut_json_then_100k_spaces", "truncated", None),
    ("1MB_of_open_brackets", "schema_violation", "max_depth"),
    ("1MB_of_open_brackets_in_fence", "schema_violation", "max_depth"),
    ("1MB_of_open_brackets_after_prose", "schema_violation", "max_depth"),
    ("100k_deep_objects", "schema_violation", "max_depth"),
    ("100k_deep_objects_closed", "schema_violation", "max_depth"),
    ("100k_deep_arrays_closed", "schema_violation", "max_depth"),
    ("100k_deep_mixed", "schema_violation", "max_depth"),
    ("unclosed_string_then_commas_in_object", "truncated", None),
    ("unclosed_string_then_commas_in_array", "truncated", None),
    ("unclosed_single_quote_then_commas", "truncated", None),
    ("unclosed_smart_quote_then_commas", "truncated", None),
    ("1MB_of_backslashes_in_string", "truncated", None),
    ("1MB_of_backslash_quote_in_string", "truncated", None),
    ("200k_stray_closers_in_array", "syntax_error", None),  # a mismatched closer is a syntax error (issue 14)
    ("200k_stray_closers_in_object", "syntax_error", None),
])
def test_adversarial_text_error_kind(name: str, kind: str, limit: str | None) -> None:
    """Where the right answer is clear: deep nesting is the depth limit; text cut inside a value is truncated."""
    error = guarded_parse_error(ADVERSARIAL[name](), Any)
    assert error.kind == kind, f"{name}: {error!r}"
    if limit is None:
        assert not isinstance(error, InputLimitError)
    else:
        assert isinstance(error, InputLimitError)
        assert error.limit == limit
        assert error.value == 200


@pytest.mark.parametrize("name", HEADLINE_CASES)
def test_parse_report_does_not_raise_on_adversarial_text(name: str) -> None:
    text = ADVERSARIAL[name]()
    report = finishes(lambda: parse_report(text, Any), f"parse_report on {name}")
    assert not report.ok
    assert isinstance(report.error, ParseError)
    assert report.error.report is report


def test_valid_json_after_a_long_adversarial_preamble_is_still_found() -> None:
    """Adversarial prose before the answer costs time, not the answer."""
    text = "Pick { or [ " * 20_000 + '\n```json\n{"a": 7, "tags": ["x"]}\n```'
    value = finishes(lambda: parse(text, Answer), "parse after an adversarial preamble")
    assert value == Answer(a=7, tags=["x"])


# --------------------------------------------------------------------------------------------------------
# max_depth
# --------------------------------------------------------------------------------------------------------


def nested_arrays(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def nested_objects(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


@pytest.mark.parametrize("make", [nested_arrays, nested_objects], ids=["arrays", "objects"])
def test_default_depth_limit_boundary(make: Callable[[int], str]) -> None:
    assert parse(make(200), Any) == json.loads(make(200))
    with pytest.raises(InputLimitError) as info:
        parse(make(201), Any)
    assert info.value.limit == "max_depth"
    assert info.value.value == 200
    assert info.value.kind == "schema_violation"
    assert isinstance(info.value, SchemaViolationError)


@pytest.mark.parametrize("wrap", ["{}", "```json\n{}\n```", "Here you go: {} - done.", "<json>{}</json>",
                                  "```json\n{}", "Here: {}"])
@pytest.mark.parametrize("make", [nested_arrays, nested_objects], ids=["arrays", "objects"])
def test_small_custom_depth_limit(make: Callable[[int], str], wrap: str) -> None:
    """``Limits(max_depth=5)`` on 10-deep clean JSON: the limit, wherever the JSON sits (clean or cut off)."""
    text = wrap.replace("{}", make(10))
    with pytest.raises(InputLimitError) as info:
        parse(text, Any, limits=Limits(max_depth=5))
    assert info.value.limit == "max_depth"
    assert info.value.value == 5
    assert parse(wrap.replace("{}", make(5)), Any, limits=Limits(max_depth=5)) == json.loads(make(5))


@pytest.mark.parametrize("max_depth", [1, 2, 5, 50, 199, 200])
def test_custom_depth_limit_is_exact(max_depth: int) -> None:
    limits = Limits(max_depth=max_depth)
    assert parse(nested_arrays(max_depth), Any, limits=limits) == json.loads(nested_arrays(max_depth))
    with pytest.raises(InputLimitError) as info:
        parse(nested_arrays(max_depth + 1), Any, limits=limits)
    assert (info.value.limit, info.value.value) == ("max_depth", max_depth)


@pytest.mark.parametrize("text", [
    "[[[[[[[[[[1,]]]]]]]]]]",  # trailing comma: the lenient scanner's path
    "{a: {b: {c: {d: {e: {f: 1}}}}}}",  # unquoted keys
    "[[[[[[[[[[1]]]]]]]]]",  # one closer short: also cut off, but deeper than allowed first
    "[[[[[[1]]]]]] and again [[[[[[1]]]]]]",
])
def test_depth_limit_applies_to_repaired_json(text: str) -> None:
    with pytest.raises(InputLimitError) as info:
        parse(text, Any, limits=Limits(max_depth=5))
    assert info.value.limit == "max_depth"


def test_depth_limit_with_model_contract() -> None:
    text = json.dumps({"a": 1, "tags": ["x"], "extra": [[[[[[1]]]]]]})
    with pytest.raises(InputLimitError) as info:
        parse(text, Answer, limits=Limits(max_depth=5))
    assert info.value.limit == "max_depth"


def test_brackets_inside_strings_do_not_count_towards_depth() -> None:
    text = json.dumps({"a": 1, "tags": ["[" * 500, "{" * 500]})
    assert parse(text, Answer, limits=Limits(max_depth=2)) == Answer(a=1, tags=["[" * 500, "{" * 500])
    assert parse(text, Any) == json.loads(text)


def test_depth_limit_error_is_in_the_report() -> None:
    report = parse_report(nested_arrays(10), Any, limits=Limits(max_depth=5))
    assert not report.ok
    assert isinstance(report.error, InputLimitError)
    assert report.error.limit == "max_depth"


@pytest.mark.parametrize("text", [
    "[" * 200 + "1," + "]" * 200,  # 200 deep with a trailing comma: the lenient scanner
    "[" * 200 + "NaN" + "]" * 200,  # NaN skips the fast path
    "Here you go: " + "[" * 200 + "1" + "]" * 200 + " - done.",
    "```json\n" + "[" * 200 + "1" + "]" * 200 + "\n```",
    "{a:" * 200 + "True" + "}" * 200,
])
def test_exactly_max_depth_is_accepted_on_every_path(text: str) -> None:
    """The limit is inclusive wherever the value is read (fast path, lenient scanner, fence, prose)."""
    value = parse(text, Any)
    assert depth_of(value) == 200
    with pytest.raises(InputLimitError) as info:
        parse(text, Any, limits=Limits(max_depth=199))
    assert (info.value.limit, info.value.value) == ("max_depth", 199)


def depth_of(value: Any) -> int:
    levels = 0
    while isinstance(value, (list, dict)):
        levels += 1
        value = next(iter(value.values() if isinstance(value, dict) else value), None)
    return levels


class Bag(BaseModel):
    items: list[Any]


def test_depth_limit_met_inside_embedded_json_reports_the_configured_limit() -> None:
    text = '{"items": "' + "[" * 7 + "1" + "]" * 7 + '"}'  # 1 + 7 levels once decoded
    with pytest.raises(ParseError) as info:
        parse(text, Bag, limits=Limits(max_depth=5))
    error = info.value
    if isinstance(error, InputLimitError):
        assert error.limit == "max_depth"
        assert error.value == 5, f"InputLimitError.value is {error.value}, the configured limit is 5"
        assert "5 levels" in error.feedback, error.feedback


def test_embedded_json_within_the_depth_limit_is_decoded() -> None:
    text = '{"items": "' + "[" * 4 + "1" + "]" * 4 + '"}'  # 1 + 4 = 5 levels once decoded
    assert parse(text, Bag, limits=Limits(max_depth=5)) == Bag(items=[[[[1]]]])


@pytest.mark.parametrize("text", [
    "```json\n" + "[" * 10 + "1" + "]" * 10 + "\n```",
    "Here it is:\n```json\n" + "[" * 10 + "1" + "]" * 10 + "\n```\nbye",
    "[" * 10 + "1" + "]" * 10 + "\n```\nbye",
    "<json>" + "[" * 10 + "1" + "]" * 10 + "</json>",
    "Intro text.\n~~~\n" + "[" * 10,
])
def test_depth_limit_error_carries_the_whole_reply(text: str) -> None:
    """``ParseError.text`` is the raw model text that was parsed (nothing is lost), not the segment where
    the limit was met."""
    with pytest.raises(InputLimitError) as info:
        parse(text, Any, limits=Limits(max_depth=5))
    assert info.value.text == text
    assert info.value.report is not None


# --------------------------------------------------------------------------------------------------------
# max_bytes
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("char", "width"), [("a", 1), ("é", 2), ("가", 3), ("\U0001f600", 4)])
@pytest.mark.parametrize("n", [1, 10, 1000])
def test_byte_limit_counts_utf8_bytes(char: str, width: int, n: int) -> None:
    """A string of N characters of UTF-8 width W is N*W bytes: Korean text of N chars is 3N bytes."""
    text = json.dumps(char * n, ensure_ascii=False)  # two quotes + n chars
    size = 2 + n * width
    assert len(text.encode("utf-8")) == size
    assert parse(text, Any, limits=Limits(max_bytes=size)) == char * n
    with pytest.raises(InputLimitError) as info:
        parse(text, Any, limits=Limits(max_bytes=size - 1))
    assert info.value.limit == "max_bytes"
    assert info.value.value == size - 1
    assert info.value.kind == "schema_violation"


def test_korean_prose_counts_three_bytes_per_character() -> None:
    n = 1000
    text = "가" * n + ' {"a": 1}'
    size = 3 * n + len(' {"a": 1}')
    assert parse(text, Answer, limits=Limits(max_bytes=size)) == Answer(a=1)
    with pytest.raises(InputLimitError) as info:
        parse(text, Answer, limits=Limits(max_bytes=size - 1))
    assert info.value.limit == "max_bytes"
    # Counting characters instead of bytes would let a text three times the limit through.
    with pytest.raises(InputLimitError):
        parse(text, Answer, limits=Limits(max_bytes=n + 100))


def test_default_byte_limit_is_2_mib() -> None:
    assert Limits().max_bytes == 2 * 1024 * 1024
    assert Limits().max_depth == 200
    over = "[" + " " * (2 * 1024 * 1024) + "1]"
    with pytest.raises(InputLimitError) as info:
        finishes(lambda: parse(over, Any), "parse of a text over the byte limit")
    assert info.value.limit == "max_bytes"
    assert info.value.value == 2 * 1024 * 1024
    korean_over = '"' + "가" * (700 * 1024) + '"'  # 700 Ki characters, 2.05 MiB + 2 bytes
    with pytest.raises(InputLimitError) as info:
        parse(korean_over, Any)
    assert info.value.limit == "max_bytes"


def test_byte_limit_is_checked_before_depth() -> None:
    """A text over both limits is refused for its size, before any nesting is read."""
    with pytest.raises(InputLimitError) as info:
        parse("[" * 1000, Any, limits=Limits(max_bytes=100))
    assert info.value.limit == "max_bytes"


def test_byte_limit_error_is_in_the_report() -> None:
    report = parse_report("x" * 200, Any, limits=Limits(max_bytes=100))
    assert not report.ok
    assert isinstance(report.error, InputLimitError)
    assert report.error.limit == "max_bytes"
    assert report.error.text == "x" * 200


# --------------------------------------------------------------------------------------------------------
# Limits validation
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_depth", [0, -1, 201, 10_000])
def test_limits_rejects_out_of_range_depth(max_depth: int) -> None:
    with pytest.raises(ValueError, match="max_depth"):
        Limits(max_depth=max_depth)


@pytest.mark.parametrize("max_bytes", [0, -1])
def test_limits_rejects_non_positive_bytes(max_bytes: int) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        Limits(max_bytes=max_bytes)


@pytest.mark.parametrize(("max_bytes", "max_depth"), [(1, 1), (1, 200), (10**9, 200)])
def test_limits_accepts_edges(max_bytes: int, max_depth: int) -> None:
    limits = Limits(max_bytes=max_bytes, max_depth=max_depth)
    assert (limits.max_bytes, limits.max_depth) == (max_bytes, max_depth)


def test_input_limit_error_is_a_schema_violation_parse_error() -> None:
    assert issubclass(InputLimitError, SchemaViolationError)
    assert issubclass(InputLimitError, ParseError)
    assert not issubclass(InputLimitError, TruncatedJSONError)


# --------------------------------------------------------------------------------------------------------
# max_candidates: a flood of JSON values (or fenced blocks) is refused before each one is validated
# --------------------------------------------------------------------------------------------------------


def test_more_values_than_max_candidates_is_a_limit_error() -> None:
    text = " ".join(f'{{"a": {i}}}' for i in range(1001))
    error = guarded_parse_error(text, Answer)
    assert isinstance(error, InputLimitError)
    assert error.limit == "max_candidates" and error.value == 1000
    assert "1000" in error.feedback


def test_failed_attempts_count_towards_max_candidates() -> None:
    # Openers that start like JSON but fail are read too; a flood of them is refused the same way.
    # ("[1. " no longer fails: "1." is read as a number; each "[1x]" fails and closes, so the search goes on.)
    error = guarded_parse_error("[1x] " * 5000, Answer, Limits(max_candidates=50))
    assert isinstance(error, InputLimitError) and error.limit == "max_candidates"


def test_many_citations_and_an_answer_fit_the_default() -> None:
    text = " ".join(f"see [{i}]" for i in range(1, 400)) + ' Answer: {"a": 5}'
    assert parse(text, Answer) == Answer(a=5)


def test_values_up_to_max_candidates_are_weighed_normally() -> None:
    # 100 exact repeats of one answer: not ambiguous, not over the limit.
    assert parse(" ".join(['{"a": 7}'] * 100), Answer) == Answer(a=7)


def test_custom_max_candidates() -> None:
    text = '{"a": 1} {"a": 1} {"a": 1}'
    assert parse(text, Answer, limits=Limits(max_candidates=3)) == Answer(a=1)
    error = guarded_parse_error(text, Answer, Limits(max_candidates=2))
    assert isinstance(error, InputLimitError) and error.limit == "max_candidates"


def test_more_fenced_blocks_than_max_candidates_is_a_limit_error() -> None:
    text = "```json\n{\"a\": 1}\n```\n" * 3
    error = guarded_parse_error(text, Answer, Limits(max_candidates=2))
    assert isinstance(error, InputLimitError) and error.limit == "max_candidates"


@pytest.mark.parametrize("bad", [0, -1])
def test_limits_rejects_non_positive_max_candidates(bad: int) -> None:
    with pytest.raises(ValueError):
        Limits(max_candidates=bad)


@pytest.mark.parametrize(("text", "expected"), [
    ('see {note here} and then {"a": 1}', Answer(a=1)),
    ("code: { x = 1; } [i] {{ }} answer: {a: 2}", Answer(a=2)),
    ('{{"a": 3}}', Answer(a=3)),
])
def test_brace_heavy_prose_is_skipped_without_losing_the_answer(text: str, expected: Answer) -> None:
    assert parse(text, Answer) == expected


@pytest.mark.parametrize("text", ["The answer is {answ", 'Result: {"a', "List: [tr"])
def test_a_cut_off_start_after_prose_is_still_truncated(text: str) -> None:
    assert isinstance(guarded_parse_error(text, Answer), TruncatedJSONError)
