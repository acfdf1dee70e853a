"""Property tests for guardrail's parse layer (hypothesis), written against the documented contract.

1. Nothing but a :class:`guardrail.ParseError` ever leaves ``parse`` - for random text (surrogates and
   control characters included), for JSON-ish text assembled from JSON tokens and model-output debris
   (fences, tags, comments, Python literals, smart quotes, invisible characters), and for random
   mutations of valid JSON - under the contracts ``Any``, a pydantic model and ``list[int]``.
   ``parse_report`` never raises for such text and agrees with ``parse``.
2. Round trip: any JSON value dumped by ``json.dumps`` (compact, ``indent=2``, ``ensure_ascii=False``)
   and wrapped in a fence and/or English/Korean prose parses back, with contract ``Any``, to exactly
   that value (types compared, so ``True`` is not ``1`` and ``1.0`` is not ``1``).
3. Truncation: every strict prefix of a dumped object/array (cut before its final closing bracket) is a
   ``ParseError`` of kind ``"truncated"`` - never a value - bare, after prose, or in an unclosed fence,
   with contract ``Any`` and with a model contract.
4. Limits as properties: nesting deeper than ``Limits.max_depth`` is an ``InputLimitError("max_depth")``
   exactly when the value is deeper than the limit; text longer than ``max_bytes`` UTF-8 bytes is an
   ``InputLimitError("max_bytes")`` exactly when it is longer.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from support.equality import same as same_json

from guardrail import ParseError, SchemaViolationError, TruncatedJSONError, parse, parse_report
from guardrail.errors import AmbiguousError, InputLimitError, JSONSyntaxError, NoJSONError
from guardrail.parse import Limits

KIND_OF = {  # the most specific class first (JSONSyntaxError is a NoJSONError)
    JSONSyntaxError: "syntax_error",
    NoJSONError: "no_json",
    TruncatedJSONError: "truncated",
    AmbiguousError: "ambiguous",
    SchemaViolationError: "schema_violation",
}


# --------------------------------------------------------------------------------------------------------
# Contracts
# --------------------------------------------------------------------------------------------------------


class Item(BaseModel):
    sku: str
    qty: int
    price: float | None = None


class Order(BaseModel):
    id: int
    customer: str
    paid: bool
    status: Literal["new", "shipped", "done"] = "new"
    tags: list[str] = []
    items: list[Item] = []
    note: str | None = None


CONTRACTS: list[Any] = [Any, Order, list[int]]
CONTRACT_IDS = ["Any", "Order", "list_int"]


# --------------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------------




def depth(value: Any) -> int:
    """Nesting depth of objects/arrays: a scalar is 0, ``[]`` is 1, ``[[1]]`` is 2."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def conforms(value: Any, contract: Any) -> bool:
    """Is ``value`` of the contract's type (what a successful ``parse`` must return)?"""
    if contract is Any:
        return _is_json(value)
    if contract is Order:
        return isinstance(value, Order)
    if contract == list[int]:
        return isinstance(value, list) and all(type(v) is int for v in value)
    raise AssertionError(f"unknown contract {contract!r}")  # pragma: no cover


def _is_json(value: Any) -> bool:
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_json(v) for v in value)
    if isinstance(value, dict):
        return all(type(k) is str and _is_json(v) for k, v in value.items())
    return False


def parse_only_raises_parse_error(text: str, contract: Any) -> None:
    """The core safety property, plus consistency of the error and of ``parse_report`` with ``parse``."""
    report = parse_report(text, contract)  # must not raise for any text
    try:
        value = parse(text, contract)
    except ParseError as error:
        # Anything that is not a ParseError propagates out of this function and fails the test.
        assert error.kind in KIND_OF.values()
        expected_kind = next(kind for cls, kind in KIND_OF.items() if isinstance(error, cls))
        assert error.kind == expected_kind
        assert isinstance(error.feedback, str) and error.feedback
        assert error.text == text
        if isinstance(error, InputLimitError):
            assert error.limit in ("max_bytes", "max_depth")
        assert not report.ok
        assert type(report.error) is type(error)
        return
    assert conforms(value, contract), f"parse returned {value!r} for contract {contract!r}"
    assert report.ok, f"parse returned a value but parse_report failed: {report.error!r}"


# --------------------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------------------

finite_floats = st.floats(allow_nan=False, allow_infinity=False)

#: Strings made of what could confuse a reader of chatty model output if it looked inside strings: fence
#: markers, tags, comment openers, brackets, quotes, escapes, NaN, invisible and line-separator characters.
debris_text = st.lists(
    st.sampled_from(["```", "~~~", "```json", "</", "</json>", "<json>", "\n", "\\", '"', "'", "NaN",
                     "Infinity", "{", "}", "[", "]", ",", ":", "//", "/*", "*/", "\u201c", "\u201d", "\ufeff",
                     "\u200b", "\u00a0", "\u2028", "True", "None", "한", "é", " ", "\t", "\r", "\x00", "\x7f",
                     "\x85"])
    | st.text(max_size=2),
    max_size=8,
).map("".join)

scalars = st.none() | st.booleans() | st.integers() | finite_floats | st.text() | debris_text


def json_values(max_leaves: int = 20, keys: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Any]:
    key_strategy = keys if keys is not None else st.text(max_size=8) | debris_text
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=5) | st.dictionaries(key_strategy, children, max_size=5),
        max_leaves=max_leaves,
    )


def containers(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    inner = json_values(max_leaves=max_leaves)
    return st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8) | debris_text, inner, max_size=5)


def dump_variants() -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from([
        {},
        {"indent": 2},
        {"ensure_ascii": False},
        {"indent": 2, "ensure_ascii": False},
        {"separators": (",", ":")},
    ])


#: Any code point, lone surrogates and control characters included.
any_char = st.characters(exclude_categories=())

#: Bits of JSON and of what models wrap around it.
JSON_TOKENS = [
    "{", "}", "[", "]", ",", ":", '"', "'", " ", "\n", "\t", "\r",
    '"a"', '"key"', "'k'", '""', "0", "-1", "1.5", "1e5", "-", ".", "e", "E+", "01", "1.", "-0",
    "true", "false", "null", "True", "False", "None", "NaN", "Infinity", "-Infinity", "nul", "tru",
    "\\", '\\"', "\\n", "\\u", "\\u00e9", "\\ud800", "\\udc00", "\\x", "/", "//", "/*", "*/", "# ",
    "```", "```json\n", "\n```\n", "~~~\n", "\n~~~", "<json>", "</json>", "<", ">", "</",
    "\u201c", "\u201d", "\u2018", "\u2019", "\ufeff", "\u200b", "\u00a0", "\u2028", "\x00", "\x1f",
    "Here is the JSON:", "다음은 결과입니다:", "abc", "한국어", "é", "\U0001f600", "\ud83d",
    "a:", "key:", '"a":', '{"a":', '{"a":1}', "[1,2]", "[]", "{}", ',"b":', "]]", "}}", "[[", "{{",
]

json_ish_text = st.lists(
    st.sampled_from(JSON_TOKENS) | st.text(any_char, max_size=3),
    max_size=60,
).map("".join)


@st.composite
def mutated_json(draw: st.DrawFn) -> str:
    """A valid JSON dump (optionally fenced or in prose) with a few random edits applied."""
    value = draw(json_values(max_leaves=15))
    text = json.dumps(value, **draw(dump_variants()))
    text = draw(st.sampled_from(["{}", "```json\n{}\n```", "Here it is: {} hope that helps", "<json>{}</json>"]))\
        .replace("{}", text, 1)
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 8)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "truncate", "swap"]))
        token = draw(st.sampled_from(JSON_TOKENS) | st.text(any_char, min_size=1, max_size=2))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + token + text[i:]
        elif op == "replace":
            text = text[:i] + token + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif op == "truncate":
            text = text[:i]
        elif op == "swap" and j - i >= 2:
            text = text[:i] + text[j - 1] + text[i + 1 : j - 1] + text[i] + text[j:]
    return text


@st.composite
def order_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """JSON for an :class:`Order` (valid against it), keys in random order."""
    item = st.fixed_dictionaries(
        {"sku": st.text(max_size=6), "qty": st.integers(-5, 10**6)},
        optional={"price": st.none() | finite_floats},
    )
    data = draw(st.fixed_dictionaries(
        {"id": st.integers(), "customer": st.text(max_size=10), "paid": st.booleans()},
        optional={
            "status": st.sampled_from(["new", "shipped", "done"]),
            "tags": st.lists(st.text(max_size=5), max_size=3),
            "items": st.lists(item, max_size=3),
            "note": st.none() | st.text(max_size=10),
        },
    ))
    keys = draw(st.permutations(list(data)))
    return {k: data[k] for k in keys}


# Prose: fixed sentences (so a prose segment is never itself a JSON value) plus random words. No JSON
# brackets or braces, and no backticks/tildes (a line of three of them would be a fence).
ENGLISH = [
    "Here is the JSON you asked for:",
    "Sure! The result is below.",
    "Let me know if you need anything else.",
    "Note: the values are estimates, see above.",
    "I hope this helps.",
]
KOREAN = [
    "다음은 요청하신 JSON입니다:",
    "결과는 아래와 같습니다.",
    "추가 질문이 있으면 알려주세요!",
    "참고: 값은 추정치입니다.",
    "도움이 되었기를 바랍니다.",
]
_FORBIDDEN_IN_PROSE = set("{}[]`~")
prose_words = st.text(
    st.characters(categories=("L", "N", "Zs"), exclude_characters="".join(_FORBIDDEN_IN_PROSE))
    | st.sampled_from(list(".,!?:;'\"-()/ 가나다라마바사아자차카타파하")),
    max_size=30,
)


@st.composite
def prose(draw: st.DrawFn) -> str:
    sentence = draw(st.sampled_from(ENGLISH + KOREAN))
    extra = draw(prose_words)
    text = draw(st.sampled_from(["{s}", "{s} {x}", "{x} {s}"])).format(s=sentence, x=extra)
    assert not _FORBIDDEN_IN_PROSE & set(text)
    return text


FENCES = [("```json\n", "\n```"), ("```\n", "\n```"), ("~~~\n", "\n~~~"), ("```JSON\n", "\n```")]


# --------------------------------------------------------------------------------------------------------
# 1. Only ParseError leaves parse
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("contract", CONTRACTS, ids=CONTRACT_IDS)
@settings(max_examples=150)
@given(text=st.text(any_char, max_size=200))
@example(text="")
@example(text="\ud800")
@example(text='"\udc80"')
@example(text="[\"\\ud800\"]")
@example(text="{\"id\": 1e400}")
@example(text="[1" + "0" * 5000 + "]")
@example(text="[\"" + "\\" * 33 + "\"]")
def test_random_text_raises_only_parse_error(contract: Any, text: str) -> None:
    parse_only_raises_parse_error(text, contract)


@pytest.mark.parametrize("contract", CONTRACTS, ids=CONTRACT_IDS)
@settings(max_examples=200)
@given(text=json_ish_text)
@example(text="[NaN, Infinity, -Infinity]")
@example(text='{"id": NaN, "customer": "x", "paid": true}')
@example(text="```json\n[1, 2,\n```")
@example(text="<json>{'a': True,}</json>")
@example(text='{"a": "\\ud800"}')
@example(text="[1e999999999]")
@example(text='{"id": "1e400", "customer": "", "paid": "true"}')
@example(text='["1e400", "-0", "1.0e3", "9' + "9" * 400 + '.0"]')
@example(text='[[' + "1," * 50 + "]")
def test_json_ish_text_raises_only_parse_error(contract: Any, text: str) -> None:
    parse_only_raises_parse_error(text, contract)


@pytest.mark.parametrize("contract", CONTRACTS, ids=CONTRACT_IDS)
@settings(max_examples=150)
@given(text=mutated_json())
@pytest.mark.slow
def test_mutated_json_raises_only_parse_error(contract: Any, text: str) -> None:
    parse_only_raises_parse_error(text, contract)


@settings(max_examples=100)
@given(data=order_dicts(), text=st.data())
def test_mutated_order_json_raises_only_parse_error(data: dict[str, Any], text: st.DataObject) -> None:
    """Mutations of JSON that is *almost* an Order exercise the coercion and alias paths of the model."""
    dumped = json.dumps(data, **text.draw(dump_variants()))
    for _ in range(text.draw(st.integers(1, 3))):
        i = text.draw(st.integers(0, len(dumped)))
        j = text.draw(st.integers(i, min(len(dumped), i + 6)))
        token = text.draw(st.sampled_from(
            [*JSON_TOKENS, '"5"', '"4.0"', '"true"', '"a,b"', '"[1]"', '{"sku":"x","qty":1}']))
        dumped = dumped[:i] + token + dumped[j:]
    parse_only_raises_parse_error(dumped, Order)
    parse_only_raises_parse_error(dumped, Any)


@pytest.mark.parametrize("contract", CONTRACTS, ids=CONTRACT_IDS)
@pytest.mark.parametrize("text", ["[-¹]", '{"id": -²}', "Here: [1, -٣]", "[[-¹"])
def test_minus_before_non_ascii_digit_is_a_parse_error(text: str, contract: Any) -> None:
    with pytest.raises(ParseError):
        parse(text, contract)


class Priced(BaseModel):
    price: float


@pytest.mark.parametrize(("text", "contract"), [
    ('{"price": 1e400}', Priced),
    ('Here it is: {"price": -1e400}', Priced),
    ("[1e400]", list[float]),
    ('{"a": [1e999999999]}', Any),
    ("1e400", Any),
])
def test_overflowing_number_literal_is_not_infinity(text: str, contract: Any) -> None:
    """The parse layer's rule: a non-finite number never becomes a float value (null where allowed, else a
    violation). ``parse('{"price": Infinity}', Priced)`` is a schema violation; an overflowing literal is the
    same value and must not be accepted either (it once came back as ``inf``)."""
    with pytest.raises(ParseError):
        parse('{"price": Infinity}', Priced)
    try:
        value = parse(text, contract)
    except ParseError as error:
        assert error.kind == "schema_violation"
        return
    dumped = json.dumps(value.model_dump() if isinstance(value, BaseModel) else value)
    assert "Infinity" not in dumped, f"{text!r} parsed to a non-finite value: {value!r}"


# --------------------------------------------------------------------------------------------------------
# 2. Round trip
# --------------------------------------------------------------------------------------------------------


def assert_round_trip(text: str, value: Any) -> None:
    try:
        got = parse(text, Any)
    except ParseError as error:
        raise AssertionError(f"parse raised {error!r} for {text!r}") from error
    assert same_json(got, value), f"parse gave {got!r}, expected {value!r}, text {text!r}"


@settings(max_examples=150)
@given(value=json_values(), opts=dump_variants())
@example(value=[1, True, 1.0, 0, False, 0.0, -0.0], opts={})
@example(value={"a": "NaN", "Infinity": [-0.0]}, opts={})
@example(value={"k": "```json\n{}\n```", "t": "</json>"}, opts={"indent": 2})
@example(value=["\u2028\u2029\x85", "한국어 {", "]"], opts={"ensure_ascii": False})
@example(value=[5e-324, 1.7976931348623157e308, 2**70, -(2**64)], opts={})
def test_round_trip_bare(value: Any, opts: dict[str, Any]) -> None:
    assert_round_trip(json.dumps(value, **opts), value)


@settings(max_examples=150)
@given(value=json_values(), opts=dump_variants(), fence=st.sampled_from(FENCES))
@example(value="```", opts={}, fence=FENCES[0])
@example(value=42, opts={}, fence=FENCES[1])
@example(value="", opts={}, fence=FENCES[2])
@example(value=None, opts={}, fence=FENCES[0])
@pytest.mark.slow
def test_round_trip_fenced(value: Any, opts: dict[str, Any], fence: tuple[str, str]) -> None:
    opener, closer = fence
    assert_round_trip(opener + json.dumps(value, **opts) + closer, value)


@settings(max_examples=150)
@given(
    value=json_values(),
    opts=dump_variants(),
    fence=st.sampled_from(FENCES),
    before=st.none() | prose(),
    after=st.none() | prose(),
)
@pytest.mark.slow
def test_round_trip_fenced_with_prose_around(value: Any, opts: dict[str, Any], fence: tuple[str, str],
                                             before: str | None, after: str | None) -> None:
    """A fenced value (scalar roots included) with English/Korean prose outside the fence."""
    opener, closer = fence
    text = opener + json.dumps(value, **opts) + closer
    if before is not None:
        text = before + "\n" + text
    if after is not None:
        text = text + "\n" + after
    assert_round_trip(text, value)


@settings(max_examples=200)
@given(
    value=containers(max_leaves=20),
    opts=dump_variants(),
    before=prose(),
    after=st.none() | prose(),
    sep_before=st.sampled_from([" ", "\n", "\n\n", ""]),
    sep_after=st.sampled_from([" ", "\n", "\n\n", ""]),
)
@example(value={"a": 1}, opts={}, before="Here is the JSON you asked for:", after="I hope this helps.",
         sep_before=" ", sep_after=" ")
@example(value=[], opts={}, before="다음은 요청하신 JSON입니다:", after=None, sep_before="", sep_after="")
@pytest.mark.slow
def test_round_trip_container_in_prose(value: Any, opts: dict[str, Any], before: str, after: str | None,
                                       sep_before: str, sep_after: str) -> None:
    text = before + sep_before + json.dumps(value, **opts)
    if after is not None:
        text += sep_after + after
    assert_round_trip(text, value)


@settings(max_examples=100)
@given(value=containers(max_leaves=20), opts=dump_variants(), before=prose(), after=prose())
@pytest.mark.slow
def test_round_trip_container_in_prose_only_after(value: Any, opts: dict[str, Any], before: str,
                                                  after: str) -> None:
    """Prose after only; prose on both sides of a fence; prose around a ``<json>`` tag (object/array roots)."""
    dumped = json.dumps(value, **opts)
    assert_round_trip(dumped + "\n" + after, value)
    assert_round_trip(before + "\n```json\n" + dumped + "\n```\n" + after, value)
    assert_round_trip(before + " <json>" + dumped + "</json> " + after, value)


@settings(max_examples=100)
@given(data=order_dicts(), opts=dump_variants(), before=st.none() | prose(), after=st.none() | prose())
def test_round_trip_model(data: dict[str, Any], opts: dict[str, Any], before: str | None,
                          after: str | None) -> None:
    """A JSON dump of a valid Order, in prose, parses to the Order pydantic builds from that JSON."""
    dumped = json.dumps(data, **opts)
    expected = Order.model_validate_json(dumped, strict=True)
    text = dumped
    if before is not None:
        text = before + " " + text
    if after is not None:
        text = text + "\n" + after
    got = parse(text, Order)
    assert got == expected


# --------------------------------------------------------------------------------------------------------
# 3. Truncation
# --------------------------------------------------------------------------------------------------------


def assert_all_prefixes_truncated(dumped: str, contract: Any, wrap: str = "{}") -> None:
    """Every strict prefix of ``dumped`` (its last character is the root's closing bracket) is truncated."""
    dumped = dumped.rstrip()
    assert dumped[-1] in "}]"
    for cut in range(1, len(dumped)):
        text = wrap.replace("{}", dumped[:cut], 1)
        try:
            value = parse(text, contract)
        except ParseError as error:
            assert error.kind == "truncated", f"cut at {cut}: {text!r} gave {error!r}, expected truncated"
            continue
        raise AssertionError(f"cut at {cut}: {text!r} parsed to {value!r} instead of a truncated error")


TRUNCATION_WRAPS = ["{}", "Here is the JSON you asked for: {}", "```json\n{}", "다음은 결과입니다:\n~~~\n{}",
                    "<json>{}"]


@settings(max_examples=60)
@given(value=containers(max_leaves=10), opts=dump_variants())
@example(value=[[], {}, [[]]], opts={})
@example(value={"a": [1.5e-07, -0.0, "x\\y\"z"], "b": {"c": None}}, opts={"indent": 2})
@example(value=["NaN", "Infinity", "-Infinity", True, False, None], opts={})
@example(value={"k": "```json\n{}\n```", "t": "</json>"}, opts={})
@example(value=["\u00e9\ud55c\U0001f600"], opts={})
@pytest.mark.slow
def test_every_prefix_of_container_is_truncated(value: Any, opts: dict[str, Any]) -> None:
    assert_all_prefixes_truncated(json.dumps(value, **opts), Any)


@settings(max_examples=25)
@given(value=containers(max_leaves=6), opts=dump_variants(), wrap=st.sampled_from(TRUNCATION_WRAPS[1:]))
def test_every_prefix_of_wrapped_container_is_truncated(value: Any, opts: dict[str, Any], wrap: str) -> None:
    """Cut off after prose, inside an unclosed fence, or after an opening tag: still truncated."""
    assert_all_prefixes_truncated(json.dumps(value, **opts), Any, wrap)


@settings(max_examples=40)
@given(data=order_dicts(), opts=dump_variants(), wrap=st.sampled_from(TRUNCATION_WRAPS))
def test_every_prefix_of_model_json_is_truncated(data: dict[str, Any], opts: dict[str, Any], wrap: str) -> None:
    assert_all_prefixes_truncated(json.dumps(data, **opts), Order, wrap)


@settings(max_examples=40)
@given(value=st.lists(st.integers(), min_size=0, max_size=8), opts=dump_variants())
def test_every_prefix_of_int_list_is_truncated(value: list[int], opts: dict[str, Any]) -> None:
    assert_all_prefixes_truncated(json.dumps(value, **opts), list[int])


# --------------------------------------------------------------------------------------------------------
# 4. Limits as properties
# --------------------------------------------------------------------------------------------------------


@settings(max_examples=150)
@given(value=json_values(max_leaves=25), max_depth=st.integers(1, 12), opts=dump_variants(),
       wrap=st.sampled_from(["{}", "```json\n{}\n```", "Result: {} ok"]))
@example(value=[[[[[[[[[[1]]]]]]]]]], max_depth=5, opts={}, wrap="{}")
@example(value=[[[[[1]]]]], max_depth=5, opts={}, wrap="{}")
@example(value={"a": {"a": {"a": {}}}}, max_depth=3, opts={}, wrap="{}")
@example(value={"a": {"a": {"a": {}}}}, max_depth=2, opts={}, wrap="{}")
@pytest.mark.slow
def test_depth_limit_is_exact(value: Any, max_depth: int, opts: dict[str, Any], wrap: str) -> None:
    d = depth(value)
    if wrap != "{}":
        assume(d > 0)  # scalars are only found bare or fenced; keep the prose wrap for containers
    text = wrap.replace("{}", json.dumps(value, **opts), 1)
    limits = Limits(max_depth=max_depth)
    if d <= max_depth:
        assert_round_trip_with(text, value, limits)
    else:
        with pytest.raises(InputLimitError) as info:
            parse(text, Any, limits=limits)
        assert info.value.limit == "max_depth"
        assert info.value.value == max_depth
        assert info.value.kind == "schema_violation"


def assert_round_trip_with(text: str, value: Any, limits: Limits) -> None:
    got = parse(text, Any, limits=limits)
    assert same_json(got, value), f"parse gave {got!r}, expected {value!r}, text {text!r}"


@settings(max_examples=150, suppress_health_check=[HealthCheck.filter_too_much])
@given(value=st.text(max_size=50), slack=st.integers(-5, 5), ensure_ascii=st.booleans())
@example(value="가" * 10, slack=-1, ensure_ascii=False)
@example(value="가" * 10, slack=0, ensure_ascii=False)
@example(value="\U0001f600" * 3, slack=-1, ensure_ascii=False)
def test_byte_limit_is_exact_in_utf8(value: str, slack: int, ensure_ascii: bool) -> None:
    text = json.dumps({"k": value}, ensure_ascii=ensure_ascii)
    size = len(text.encode("utf-8"))
    max_bytes = size + slack
    assume(max_bytes >= 1)
    limits = Limits(max_bytes=max_bytes)
    if size <= max_bytes:
        assert parse(text, Any, limits=limits) == {"k": value}
    else:
        with pytest.raises(InputLimitError) as info:
            parse(text, Any, limits=limits)
        assert info.value.limit == "max_bytes"
        assert info.value.value == max_bytes


# --------------------------------------------------------------------------------------------------------
# 5. Issue 14, class 4: a scalar alone on the first line before prose; an unquoted word as a member value
# --------------------------------------------------------------------------------------------------------

_SCALARS = (st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=12).filter(lambda s: not set(s) & set("{}[]`~")))  # brackets or fences in a
# string are read as values or fences of their own (other rules); here only the scalar-then-prose rule is judged
_PROSE = st.text(alphabet="abcXYZ 0123456789.,!?'\"-\n", min_size=1, max_size=40).filter(
    lambda p: any(c.isalpha() for c in p))  # prose: a word somewhere (a lone "}" or "-" is debris, not a remark)


def _is_json_line(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return bool(line.strip())


@given(value=_SCALARS, prose=_PROSE)
@example(value="x", prose="Hope this helps")
@example(value=42, prose="43")
def test_a_leading_scalar_before_prose_is_the_answer_exactly_when_no_other_line_is_json(value: Any, prose: str) -> None:
    text = json.dumps(value) + "\n\n" + prose
    report = parse_report(text, Any)
    if any(_is_json_line(line.strip()) for line in prose.splitlines()):
        assert report.error is not None, report.value  # two readings: never one of them silently
        return
    assert report.error is None, report.error
    assert same_json(report.value, value)
    assert [fix.kind for fix in report.fixes] == ["strip_prose"]


class _Named(BaseModel):
    name: str


class _MaybeNamed(BaseModel):
    name: str | None


_WORDS = st.from_regex(r"[A-Za-z][A-Za-z0-9_\-]{0,12}", fullmatch=True).filter(
    lambda w: w not in ("true", "false", "null", "True", "False", "None", "NaN", "Infinity"))


@given(word=_WORDS, after=st.sampled_from(["", " ", "\n"]))
def test_an_unquoted_word_is_a_string_exactly_where_only_a_string_fits(word: str, after: str) -> None:
    text = '{"name": ' + word + after + '}'
    report = parse_report(text, _Named)
    assert report.value == _Named(name=word)
    assert [(fix.kind, fix.path) for fix in report.fixes] == [("bare_string", "$.name")]
    for contract in (_MaybeNamed, Any):  # null, or any value, is another reading: still broken there
        other = parse_report(text, contract)
        assert isinstance(other.error, JSONSyntaxError) and other.error.position == len('{"name": '), other.value
