"""``ItemSpans`` fed adversarial text piece by piece: every member it gives is one JSON value, exactly as the model
wrote it, and the members given are always the first members of the list the whole text holds, whatever the
whitespace, the keys around the list (an ``items`` key inside a string or a nested object), the escapes and
numbers cut between pieces, or the non-JSON slips (comments, single quotes) that the parse layer repairs."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from guardrail.call.iterable import list_contract
from guardrail.parse.items import ItemSpans
from guardrail.parse.pipeline import parse_report

#: Strings made of what matters to the reading: structure, quotes, escapes, the key's name, surrogate pairs.
tricky_text = st.lists(st.sampled_from([*'ab,]}{[":\\ \n\u00e9', "items", "\U0001f600"]), max_size=8).map("".join)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False, allow_infinity=False)
    | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
    max_leaves=10)


def pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({min(cut, len(text)) for cut in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


def given_members(text: str, cuts: list[int]) -> tuple[list[str], ItemSpans]:
    spans = ItemSpans()
    return [member for piece in pieces(text, cuts) for member in spans.feed(piece)], spans


@given(st.lists(values, max_size=5), st.lists(st.integers(0, 400), max_size=40), st.integers(0, 4),
       st.sampled_from([(", ", ": "), (",", ":"), (" ,\n ", " :\t")]), st.booleans(), st.data())
@settings(max_examples=300, deadline=None)
def test_members_are_the_list_whatever_the_layout(items: list[Any], cuts: list[int], indent: int,
                                                 separators: tuple[str, str], ascii_only: bool, data: Any) -> None:
    before = data.draw(st.dictionaries(st.sampled_from(["a", "item", "items ", "x"]), values, max_size=2))
    before["nested"] = {"items": [1, 2], "note": "\"items\": [9, 9]"}  # an items key that is not the list
    whole = {**before, "items": items, "after": "], \"items\": [7]"}
    text = json.dumps(whole, indent=indent or None, separators=separators, ensure_ascii=ascii_only)
    fence = data.draw(st.sampled_from(["", "\n ", "```json\n", "Here it is:\n~~~\n"]))
    found, spans = given_members(fence + text, cuts)
    assert [json.loads(member) for member in found] == items and spans.ended
    cut = data.draw(st.integers(0, len(text)))  # cut anywhere: a prefix of the members, a number never cut
    partial, _ = given_members(fence + text[:cut], cuts)
    assert [json.loads(member) for member in partial] == items[:len(partial)]
    assert all(member in text and member == member.strip() for member in partial)  # as written


slips = st.sampled_from(["/* , ] */", "// , ]\n", "'a, b'", "\u201ca, ]\u201d", "`x, y`", "True", "# ,\n"])


@given(st.lists(st.integers(-1000, 1000) | st.text(st.sampled_from("ab ,]"), max_size=4), min_size=1, max_size=6),
       st.integers(0, 5), slips, st.lists(st.integers(0, 200), max_size=30))
@settings(max_examples=300, deadline=None)
def test_a_slip_the_parse_layer_repairs_ends_the_reading_before_it(items: list[Any], at: int, slip: str,
                                                                    cuts: list[int]) -> None:
    """A non-JSON slip among the members: what was given before it is the list's first members, and no member
    holds any of it (its commas and brackets split nothing)."""
    members = [json.dumps(item) for item in items]
    at = min(at, len(members))
    text = '{"items": [' + ", ".join([*members[:at], slip, *members[at:]]) + "]}"
    found, _ = given_members(text, cuts)
    assert found == members[:len(found)] and len(found) <= at


@given(st.lists(st.integers(0, 10**6), max_size=6), st.lists(st.integers(0, 60), max_size=20))
@settings(max_examples=200, deadline=None)
def test_a_number_is_given_only_once_the_comma_or_bracket_after_it_came(numbers: list[int], cuts: list[int]) -> None:
    text = json.dumps({"items": numbers})
    for end in range(len(text) + 1):
        found, _ = given_members(text[:end], cuts)
        closed = text[:end].count(",") + (1 if end == len(text) or text[:end].endswith("]") else 0)
        assert [int(member) for member in found] == numbers[:len(found)] and len(found) <= closed


def test_the_members_read_as_the_whole_answer_reads_them() -> None:
    """A member is given as written; the parse layer reads it to the value the whole answer holds there."""
    text = '{"items": ["a,\\"]}", {"k": "items"}, -0.5e3, null]}'
    found, _ = given_members(text, [3, 7, 11, 13, 20])
    whole = parse_report(text, list_contract(Any))
    assert whole.error is None
    assert [parse_report(member, Any).value for member in found] == whole.value.items
