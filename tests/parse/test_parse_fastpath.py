"""The fast paths of ``guardrail.parse`` against the stages (pytest + hypothesis).

``parse`` tries two shortcuts before the stages: the clean fast path (the text validated as it is) and
the wrapped fast path (the one object or array inside fences, tags or prose, validated as it is when
nothing around it could be another candidate). Both must decide exactly what the stages decide. The
reference here is ``parse_report(text, T, stages=DEFAULT_STAGES)``, which never takes a fast path: for
every input, ``parse`` must return the same value (types compared) or raise the same error kind.

Also checked: that the shortcuts are really taken for ordinary wrapped answers (so these comparisons
exercise them), the contract facts they rely on (``finite_validator``, ``container_root``,
``max_nesting``), and hand-picked inputs where a careless shortcut would differ: a value inside one JSON
string, a lone scalar in another fenced block, two different answers, a cut-off second answer, NaN.
"""

from __future__ import annotations

import decimal
import enum
import json
import math
from typing import Any, Literal, Optional, Union
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, RootModel, field_validator, model_validator
from support.equality import same
from support.random_contracts import contract_and_value

from guardrail import ParseError, parse, parse_report
from guardrail.contract import compile_contract
from guardrail.parse import DEFAULT_STAGES, Limits
from guardrail.parse import pipeline as P

SETTINGS = settings(deadline=None, max_examples=150,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


# --------------------------------------------------------------------------------------------------------
# Contracts
# --------------------------------------------------------------------------------------------------------


class Kind(enum.StrEnum):
    billing = "billing"
    shipping = "shipping"


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    category: Kind
    summary: str
    tags: list[str] = []


class Line(BaseModel):
    sku: str
    quantity: int
    unit_price: float


class Invoice(BaseModel):
    invoice_id: str
    items: list[Line]
    total: float
    notes: str | None = None


class Segment(BaseModel):
    text: str
    start: float
    duration: float | None = None


CONTRACTS: list[Any] = [Ticket, Invoice, list[Segment], dict[str, Any], Any, Optional[Invoice],  # noqa: UP045
                        Union[Ticket, list[int]], list[int], float]  # noqa: UP007
CONTRACT_IDS = ["Ticket", "Invoice", "list_Segment", "dict_Any", "Any", "Optional_Invoice", "Ticket_or_ints",
                "list_int", "float"]


# --------------------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------------------


def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except ParseError as error:
        return error.kind, None


def assert_same_as_stages(text: str, contract: Any, limits: Limits | None = None) -> tuple[str, Any]:
    """``parse`` (fast paths first) decides exactly what the stages alone decide."""
    reference = parse_report(text, contract, limits=limits, stages=DEFAULT_STAGES)
    kind, value = outcome(lambda: parse(text, contract, limits=limits))
    if reference.ok:
        assert kind == "ok", (text, kind, reference.value)
        assert same(value, reference.value), (text, value, reference.value)
    else:
        assert reference.error is not None
        assert kind == reference.error.kind, (text, kind, reference.error.kind, reference.error.feedback)
    # parse_report (clean fast path only) agrees as well.
    report = parse_report(text, contract, limits=limits)
    assert report.ok == reference.ok
    if report.ok:
        assert same(report.value, reference.value)
    return kind, value


def fast_taken(text: str, contract: Any, limits: Limits | None = None) -> bool:
    """Whether ``parse`` returns without running the stages (a fast path decided)."""
    with mock.patch.object(P, "ParseState", side_effect=_StagesRan):
        try:
            parse(text, contract, limits=limits)
        except _StagesRan:
            return False
    return True


class _StagesRan(Exception):
    pass


# --------------------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------------------

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
#: Numbers the contract decides on (pydantic alone would read some of them as floats).
odd_numbers = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e999", "1" + "0" * 400,
                               "1" + "0" * 400 + ".0", "1e100", "2e308", "-0.0", "5e-324"])
text_values = st.text(max_size=12) | st.sampled_from(["NaN", "```", "~~~", "</json>", "{", "]", "\"", "한국어",
                                                      "\\", "\n```\n", "{\"a\": 1}"])

line = st.fixed_dictionaries({"sku": text_values, "quantity": st.integers(-5, 10**20),
                              "unit_price": finite_floats | st.integers(-5, 5)})
invoice = st.fixed_dictionaries(
    {"invoice_id": text_values, "items": st.lists(line, max_size=4), "total": finite_floats},
    optional={"notes": st.none() | text_values})
ticket = st.fixed_dictionaries(
    {"urgency": st.integers(0, 6), "category": st.sampled_from(["billing", "shipping", "Billing", "other"]),
     "summary": text_values}, optional={"tags": st.lists(text_values, max_size=3)})
segments = st.lists(st.fixed_dictionaries({"text": text_values, "start": finite_floats},
                                          optional={"duration": st.none() | finite_floats}), max_size=4)
anything = st.recursive(st.none() | st.booleans() | st.integers() | finite_floats | text_values,
                        lambda kids: st.lists(kids, max_size=3) | st.dictionaries(text_values, kids, max_size=3),
                        max_leaves=10)

VALUES = {"Ticket": ticket, "Invoice": invoice, "list_Segment": segments, "dict_Any": anything, "Any": anything,
          "Optional_Invoice": st.none() | invoice, "Ticket_or_ints": ticket | st.lists(st.integers()),
          "list_int": st.lists(st.integers()) | anything, "float": finite_floats | anything}


@st.composite
def dumped(draw: st.DrawFn, value: Any) -> str:
    """``value`` as JSON text: compact or indented, ASCII or not, sometimes with an odd number or an extra
    or drifted key slipped in (text the fast paths must leave to the stages)."""
    opts = draw(st.sampled_from([{}, {"indent": 2}, {"ensure_ascii": False}, {"separators": (",", ":")}]))
    text = json.dumps(value, **opts)
    twist = draw(st.integers(0, 9))
    if twist == 0 and isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        text = text.replace(json.dumps(key), json.dumps(key.upper() if draw(st.booleans()) else key + "X"), 1)
    elif twist == 1:
        number = draw(odd_numbers)
        for candidate in ("0.0", "1.5", "0", "1", "2"):
            if candidate in text:
                text = text.replace(candidate, number, 1)
                break
    elif twist == 2 and isinstance(value, dict):
        text = text.replace("{", '{"zz_extra": 1, ', 1) if value else '{"zz_extra": 1}'
    return text


PROSE = ["Sure! Here's the JSON:", "Here is the result:", "네, 요청하신 결과입니다.", "Hope this helps!",
         "추가 질문이 있으면 말씀해 주세요.", "Note: the \"total\" is an estimate.", "see [1] and {note}", "42", "null",
         "true", '"just a string"', "-7", "NaN", "Infinity", "\ufeff", "\u200b", "use ```x``` inline", "}", "]",
         "1. First item", "Done :)", "", " ", "\n"]
OPENERS = ["```json\n", "```JSON\n", "```\n", "~~~\n", "~~~json\n", "```json ", "<json>", "<json>\n", "", ""]
CLOSERS = {"```json\n": "\n```", "```JSON\n": "\n```", "```\n": "\n```", "~~~\n": "\n~~~", "~~~json\n": "\n~~~",
           "```json ": "\n```", "<json>": "</json>", "<json>\n": "\n</json>", "": ""}


@st.composite
def wrapped(draw: st.DrawFn, body: str) -> str:
    """``body`` wrapped the way models wrap answers: fences, tags, prose before and after, invisible
    characters, and sometimes another fenced block, a lone scalar or a cut-off second answer around it."""
    opener = draw(st.sampled_from(OPENERS))
    closer = CLOSERS[opener] if draw(st.integers(0, 9)) else ""  # sometimes an unclosed fence
    before = draw(st.lists(st.sampled_from(PROSE), max_size=2))
    after = draw(st.lists(st.sampled_from(PROSE), max_size=2))
    sep = draw(st.sampled_from(["\n", "\n\n", " "]))
    text = sep.join([*before, opener + body + closer, *after])
    extra = draw(st.integers(0, 9))
    if extra == 0:  # another fenced block: a scalar, the same answer, or something else
        other = draw(st.sampled_from(["42", "null", '"x"', body, "[]", "{}", "true"]))
        text = f"```\n{other}\n```\n{text}" if draw(st.booleans()) else f"{text}\n```json\n{other}\n```"
    elif extra == 1:  # a cut-off second answer
        text = text + "\nAlso: " + body[: max(1, len(body) // 2)]
    return text


# --------------------------------------------------------------------------------------------------------
# 1. parse (fast paths) == the stages, on generated answers
# --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("contract", CONTRACTS, ids=CONTRACT_IDS)
@SETTINGS
@given(data=st.data())
@pytest.mark.slow
def test_wrapped_answers_parse_as_the_stages_decide(contract: Any, data: st.DataObject) -> None:
    name = CONTRACT_IDS[CONTRACTS.index(contract)]
    body = data.draw(VALUES[name].flatmap(dumped))
    text = data.draw(wrapped(body))
    assert_same_as_stages(text, contract)


@pytest.mark.parametrize("contract", CONTRACTS, ids=CONTRACT_IDS)
@SETTINGS
@given(data=st.data())
@pytest.mark.slow
def test_clean_answers_parse_as_the_stages_decide(contract: Any, data: st.DataObject) -> None:
    name = CONTRACT_IDS[CONTRACTS.index(contract)]
    body = data.draw(VALUES[name].flatmap(dumped))
    text = data.draw(st.sampled_from(["{}", " {}", "{}\n", "\n\t{}  "])).replace("{}", body)
    assert_same_as_stages(text, contract)


@SETTINGS
@given(case=contract_and_value(), data=st.data())
@pytest.mark.slow
def test_random_contracts_parse_as_the_stages_decide(case: tuple[Any, Any, Any], data: st.DataObject) -> None:
    """Random contracts (models, TypedDicts, unions, optionals, literals, Any) with values that mostly fit."""
    output_type, _spec, value = case
    body = data.draw(dumped(value))
    text = data.draw(wrapped(body)) if data.draw(st.booleans()) else body
    assert_same_as_stages(text, output_type)


@pytest.mark.parametrize("contract", [Invoice, list[Segment], Optional[Invoice], dict[str, float]],  # noqa: UP045
                         ids=["Invoice", "list_Segment", "Optional_Invoice", "dict_float"])
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "1" + "0" * 400, "1" + "0" * 400 + ".0",
                                    "2e308", "1e308", "1e100", "-0.0"])
@pytest.mark.parametrize("wrap", ["{}", "```json\n{}\n```", "Here: {} thanks"])
def test_nonfinite_numbers_are_left_to_the_stages(contract: Any, number: str, wrap: str) -> None:
    """NaN, infinity and numbers beyond float range never pass a fast path as floats: the contract decides
    (null where it allows null, otherwise a schema violation), exactly as the stages do."""
    bodies = {
        Invoice: '{"invoice_id": "a", "items": [{"sku": "x", "quantity": 1, "unit_price": N}], "total": 1.0}',
        list[Segment]: '[{"text": "a", "start": 0, "duration": N}]',
        Optional[Invoice]: '{"invoice_id": "a", "items": [], "total": N, "notes": null}',  # noqa: UP045
        dict[str, float]: '{"a": 1.5, "b": N}',
    }
    text = wrap.replace("{}", bodies[contract].replace("N", number))
    assert_same_as_stages(text, contract)
    if number in ("NaN", "Infinity", "-Infinity", "1e400", "2e308") or number.startswith("1000"):
        assert not fast_taken(text, contract)


# --------------------------------------------------------------------------------------------------------
# 2. The shortcuts are taken for ordinary answers (so the comparisons above exercise them)
# --------------------------------------------------------------------------------------------------------

TICKET = '{"urgency": 4, "category": "billing", "summary": "Charged twice", "tags": ["refund"]}'
INVOICE = json.dumps({"invoice_id": "INV-1", "items": [{"sku": "A", "quantity": 2, "unit_price": 9.99}],
                      "total": 19.98, "notes": None}, indent=2)
SEGMENTS = '[{"text": "안녕하세요", "start": 0.0, "duration": 1.5}, {"text": "hi", "start": 1.5}]'

ORDINARY = [
    pytest.param(Ticket, f"Sure! Here's the JSON:\n```json\n{TICKET}\n```\nHope this helps!", id="prose-fence-prose"),
    pytest.param(Ticket, f"네, 요청하신 결과입니다.\n\n```JSON\n{TICKET}\n```\n\n추가 질문이 있으면 말씀해 주세요.",
                 id="korean-prose-fence"),
    pytest.param(Ticket, f"<json>{TICKET}</json>", id="tag"),
    pytest.param(Ticket, f"\ufeff{TICKET}", id="bom"),
    pytest.param(Ticket, f"Here it is: {TICKET} Thanks!", id="prose-same-line"),
    pytest.param(Invoice, f"Here is the extracted invoice:\n\n```json\n{INVOICE}\n```\n\nLet me know.", id="invoice"),
    pytest.param(Invoice, f"```json\n{INVOICE}", id="unclosed-fence"),
    pytest.param(list[Segment], f"Segments:\n~~~\n{SEGMENTS}\n~~~", id="tilde-fence"),
    pytest.param(list[Segment], f"```json {SEGMENTS}\n```", id="value-on-fence-line"),
    pytest.param(Ticket, f"```\n42\n```\n```json\n{TICKET}\n```", id="scalar-block-before"),
    pytest.param(Ticket, f"{TICKET}\n]", id="stray-closer-after"),
    pytest.param(Ticket, f"1. {TICKET}", id="numbered"),
]


@pytest.mark.parametrize(("contract", "text"), ORDINARY)
def test_ordinary_wrapped_answers_take_the_fast_path(contract: Any, text: str) -> None:
    assert fast_taken(text, contract)
    assert_same_as_stages(text, contract)


def test_wrapped_fast_path_is_not_in_the_report() -> None:
    """``parse_report`` lists the wrappers it stripped, so it runs the stages for wrapped text."""
    report = parse_report(f"```json\n{TICKET}\n```", Ticket)
    assert report.fast_path is False
    assert "strip_fence" in [fix.kind for fix in report.fixes]
    assert report.candidates


# --------------------------------------------------------------------------------------------------------
# 3. Inputs a careless shortcut would get wrong
# --------------------------------------------------------------------------------------------------------

TICKET2 = TICKET.replace("4", "5")

TRICKY = [
    # The whole segment is one JSON string; the brackets inside it are not a value.
    pytest.param(list[int], '<json>"values [1, 2, 3]"</json>', "schema_violation", id="value-inside-a-string"),
    pytest.param(list[int], '"values [1, 2, 3]"', "schema_violation", id="bare-string-holding-array"),
    pytest.param(Union[str, list[int]], '<json>"see [1, 2]"</json>', "ok", id="string-or-list"),  # noqa: UP007
    # A lone scalar in another block is a second valid answer where the root may be a scalar.
    pytest.param(Optional[Ticket], f"```\nnull\n```\n```json\n{TICKET}\n```", "ambiguous",  # noqa: UP045
                 id="null-block-and-answer"),
    pytest.param(Any, f"```json\n{TICKET}\n```\n```\n42\n```", "ambiguous", id="any-two-blocks"),
    # Two different answers; a repeat; a cut-off second answer.
    pytest.param(Ticket, f"```json\n{TICKET}\n```\nor\n```json\n{TICKET2}\n```", "ambiguous", id="two-answers"),
    pytest.param(Ticket, f"```json\n{TICKET}\n```\nagain:\n```json\n{TICKET}\n```", "ok", id="exact-repeat"),
    pytest.param(Ticket, f"```json\n{TICKET}\n```\nCorrection: {TICKET2[:30]}", "truncated", id="cut-off-second"),
    pytest.param(Ticket, f"Here: {TICKET[:-1]}", "truncated", id="cut-off-last-brace"),
    pytest.param(Ticket, f"```json\n{TICKET[:-1]}\n```", "truncated", id="cut-off-in-fence"),
    # Brackets in the prose after the value.
    pytest.param(Ticket, f"{TICKET} (see [1])", "ok", id="citation-after"),
    pytest.param(Ticket, f"Use this: {TICKET}. Or {{", "ok", id="lone-brace-after"),
    # Quotes in the prose before the value (the shortcut steps aside; the stages decide).
    pytest.param(Ticket, f'The "answer": {TICKET}', "ok", id="quoted-prose-before"),
    # A drifted key or an unknown one: never silently dropped by a shortcut.
    pytest.param(Ticket, f"```json\n{TICKET.replace('urgency', 'Urgency')}\n```", "ok", id="case-drift"),
    pytest.param(Ticket, "<json>" + TICKET.replace("{", '{"extra": 1, ', 1) + "</json>", "ok", id="unknown-key"),
]


@pytest.mark.parametrize(("contract", "text", "kind"), TRICKY)
def test_tricky_wrapped_inputs(contract: Any, text: str, kind: str) -> None:
    got, _ = assert_same_as_stages(text, contract)
    assert got == kind


def test_case_drift_in_a_fence_is_renamed_not_dropped() -> None:
    value = parse(f"```json\n{TICKET.replace('urgency', 'Urgency')}\n```", Ticket)
    assert value.urgency == 4


def test_fence_flood_still_meets_the_candidate_limit() -> None:
    blocks = "".join(f"```\nnote {i}\n```\n" for i in range(6))
    text = f"{blocks}```json\n{TICKET}\n```"
    limits = Limits(max_candidates=2)
    kind, _ = assert_same_as_stages(text, Ticket, limits)
    assert kind == "schema_violation"  # InputLimitError is a ParseError of that kind
    assert fast_taken(text, Ticket)  # with the default limits the shortcut applies
    assert not fast_taken(text, Ticket, limits)


@pytest.mark.parametrize("max_depth", [1, 2, 3])
def test_depth_limit_applies_to_wrapped_values(max_depth: int) -> None:
    text = f"Here:\n```json\n{INVOICE}\n```"  # nesting 3: object > items list > line object
    assert_same_as_stages(text, Invoice, Limits(max_depth=max_depth))
    assert fast_taken(text, Invoice, Limits(max_depth=max_depth)) == (max_depth >= 3)


def test_deep_any_value_is_counted() -> None:
    deep = "[" * 30 + "]" * 30
    for text in (deep, f"```json\n{deep}\n```"):
        assert_same_as_stages(text, Any, Limits(max_depth=20))
        assert not fast_taken(text, Any, Limits(max_depth=20))


def test_max_bytes_applies_to_the_whole_text() -> None:
    text = "x" * 400 + f"\n```json\n{TICKET}\n```"
    limits = Limits(max_bytes=300)
    assert_same_as_stages(text, Ticket, limits)
    assert not fast_taken(text, Ticket, limits)


# --------------------------------------------------------------------------------------------------------
# 4. The contract facts the shortcuts rely on
# --------------------------------------------------------------------------------------------------------


class Node(BaseModel):
    value: float
    children: list[Node] = []


class Before(BaseModel):
    x: float

    @field_validator("x", mode="before")
    @classmethod
    def keep(cls, v: Any) -> Any:
        return v


class BeforeModel(BaseModel):
    x: list[int]

    @model_validator(mode="before")
    @classmethod
    def keep(cls, v: Any) -> Any:
        return v


class FloatEnum(enum.Enum):
    half = 0.5
    inf = float("inf")


class Reserved(BaseModel):
    """Field names that are also core-schema keys must not hide their schemas from the walk."""

    metadata: float
    default: float = 1.0
    type: float = 0.0


@pytest.mark.parametrize(("contract", "finite"), [
    (Invoice, True), (list[Segment], True), (Node, True), (Reserved, True), (dict[str, float], True),
    (Optional[float], True), (tuple[float, int], True), (Ticket, False),  # noqa: UP045
    (Any, False), (dict[str, Any], False), (Before, False), (decimal.Decimal, False), (FloatEnum, False),
    (dict[float, int], False),
], ids=repr)
def test_finite_validator_is_built_only_where_it_is_safe(contract: Any, finite: bool) -> None:
    compiled = compile_contract(contract)
    assert (compiled.finite_validator is not None) == finite
    assert compiled.screen_nonfinite == (compiled.holds_floats and not finite)


@pytest.mark.parametrize(("contract", "text"), [
    (Invoice, '{"invoice_id": "a", "items": [{"sku": "x", "quantity": 1, "unit_price": NaN}], "total": 1}'),
    (Node, '{"value": 1, "children": [{"value": 2, "children": [{"value": Infinity}]}]}'),
    (Reserved, '{"metadata": 1e400}'),
    (Reserved, '{"metadata": 1, "default": -Infinity}'),
    (Reserved, '{"metadata": 1, "type": ' + "9" * 400 + "}"),
    (tuple[float, int], "[NaN, 1]"),
])
def test_finite_validator_refuses_nonfinite_floats_at_any_depth(contract: Any, text: str) -> None:
    compiled = compile_contract(contract)
    with pytest.raises(ValueError):
        compiled.validate_exact(text)
    compiled.adapter.validate_json(text)  # the contract's own validator would have taken it as a float


@SETTINGS
@given(value=invoice)
def test_finite_validator_gives_what_the_adapter_gives(value: dict[str, Any]) -> None:
    compiled = compile_contract(Invoice)
    text = json.dumps(value)
    try:
        expected = compiled.adapter.validator.validate_json(text, strict=True, extra="forbid")
    except ValueError:
        with pytest.raises(ValueError):
            compiled.validate_exact(text)
        return
    assert same(compiled.validate_exact(text), expected)


@pytest.mark.parametrize(("contract", "container"), [
    (Ticket, True), (Invoice, True), (list[int], True), (dict[str, Any], True), (Node, True),
    (Union[Ticket, list[int]], True), (tuple[int, str], True),  # noqa: UP007
    (Any, False), (Optional[Ticket], False), (int, False), (Union[Ticket, str], False),  # noqa: UP007, UP045
    (RootModel[int], False), (RootModel[list[int]], False), (BeforeModel, False), (Literal["a"], False),
], ids=repr)
def test_container_root(contract: Any, container: bool) -> None:
    assert compile_contract(contract).container_root is container


@pytest.mark.parametrize(("contract", "shapes"), [
    (Ticket, "{"), (dict[str, int], "{"), (Node, "{"), (list[int], "["), (tuple[int, str], "["), (set[int], "["),
    (list[Segment], "["), (Union[Ticket, list[int]], "{["), (Union[Ticket, dict[str, int]], "{"),  # noqa: UP007
    (Any, ""), (Optional[Ticket], ""), (RootModel[list[int]], ""),  # noqa: UP045
], ids=repr)
def test_root_shapes(contract: Any, shapes: str) -> None:
    assert compile_contract(contract).root_shapes == shapes


@pytest.mark.parametrize(("contract", "text", "kind"), [
    (Ticket, f"See [1]: {TICKET}", "ok"),  # the citation is a candidate too; the stages decide
    (Ticket, f"[{TICKET}]", "schema_violation"),
    (list[int], 'Note {x}: [1, 2]', "ok"),
    (list[int], '{"a": [1, 2]}', "schema_violation"),
    (Union[Ticket, list[int]], f"[1] or {TICKET}", "ambiguous"),  # noqa: UP007
])
def test_an_opener_of_the_other_kind_before_the_value(contract: Any, text: str, kind: str) -> None:
    assert not fast_taken(text, contract)
    got, _ = assert_same_as_stages(text, contract)
    assert got == kind


@pytest.mark.parametrize(("contract", "nesting"), [
    (int, 0), (Literal["a", 1], 0), (list[int], 1), (Ticket, 2), (Invoice, 3), (list[Segment], 2),
    (dict[str, list[int]], 2), (Optional[Invoice], 3), (Union[Ticket, list[list[int]]], 2),  # noqa: UP007, UP045
    (RootModel[list[float]], 1), (tuple[int, list[int]], 2),
    (Any, None), (dict[str, Any], None), (Node, None), (BeforeModel, None), (FloatEnum, None),
], ids=repr)
def test_max_nesting(contract: Any, nesting: int | None) -> None:
    assert compile_contract(contract).max_nesting == nesting


@example(depth=3)
@SETTINGS
@given(depth=st.integers(1, 6))
def test_nesting_bound_holds_for_nested_lists(depth: int) -> None:
    contract: Any = int
    for _ in range(depth):
        contract = list[contract]
    assert compile_contract(contract).max_nesting == depth
    text = "[" * depth + "1" + "]" * depth
    for max_depth in range(1, depth + 2):
        assert_same_as_stages(f"Here: {text}", contract, Limits(max_depth=max_depth))


# --------------------------------------------------------------------------------------------------------
# 5. Numbers beyond float range, and the decoder without the per-float hook
# --------------------------------------------------------------------------------------------------------

numbers = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{frac}{exp}",
    st.sampled_from(["", "-"]),
    st.integers(1, 420).flatmap(lambda n: st.sampled_from(["1" + "0" * (n - 1), "9" * n, str(10 ** (n - 1) + 7)])),
    st.sampled_from(["", ".0", ".5", ".999", "." + "9" * 30]),
    st.sampled_from(["", "e0", "e9", "E+9", "e10", "e99", "E99", "e-5", "e100", "e308", "e400", "e+0400", "e-400"]),
)


@SETTINGS
@given(number=numbers)
@example(number="1" + "0" * 300 + "e10")
@example(number="9" * 308 + ".9e1")
@example(number="1" + "0" * 209 + "e99")
def test_overflow_screen_flags_every_number_beyond_float_range(number: str) -> None:
    from guardrail.parse.lexicon import may_hold_nonfinite, may_overflow

    if math.isinf(float(number)):
        assert may_overflow(number) and may_overflow(f"[{number}]")
        assert may_hold_nonfinite(number)


@SETTINGS
@given(value=anything, number=numbers)
def test_plain_decoder_equals_strict_decoder_where_nothing_overflows(value: Any, number: str) -> None:
    from guardrail.parse.lexicon import may_overflow
    from guardrail.parse.tokens import PLAIN_DECODER, STRICT_DECODER

    text = json.dumps([value])[:-1] + f", {number}, NaN, -Infinity]"
    if not may_overflow(text):
        assert same(PLAIN_DECODER.decode(text), STRICT_DECODER.decode(text))


@pytest.mark.parametrize("contract", [Any, list[float], list[Optional[float]], dict[str, Any]],  # noqa: UP045
                         ids=["Any", "list_float", "list_optional_float", "dict_Any"])
@pytest.mark.parametrize("number", ["1" + "0" * 300 + "e10", "9" * 308 + ".9e1", "1" + "0" * 250 + "e60", "1e400"])
@pytest.mark.parametrize("wrap", ["[{}]", "Here: [{}]", "```json\n[{}]\n```", "[{}, 'x',]", '{{"a": {}}}'])
def test_numbers_beyond_float_range_never_become_infinity(contract: Any, number: str, wrap: str) -> None:
    """However a number beyond float range is written, it is judged like ``1e400``: null where the contract
    allows null, else a schema violation; never a float infinity (a regression: ``1`` + 300 zeros +
    ``e10`` passed the old screen, which looked for 309 digits or a three-digit exponent)."""
    text = wrap.format(number)
    kind, value = assert_same_as_stages(text, contract)
    reference = outcome(lambda: parse(wrap.format("1e400"), contract))
    assert (kind, value) == reference or (kind == reference[0] and same(value, reference[1]))

    def finite(node: Any) -> bool:
        if isinstance(node, float):
            return math.isfinite(node)
        if isinstance(node, dict):
            return all(finite(v) for v in node.values())
        if isinstance(node, list):
            return all(finite(v) for v in node)
        return True

    assert finite(value)


class _Absent(BaseModel):
    """Fields of every kind the null-as-absent stage tells apart: optional and not admitting null (the stage
    drops a null there), optional and nullable (a null stays), required (a null is judged by validation)."""

    count: int = 5
    label: str | None = None
    name: str
    tags: list[str] = []


_ABSENT_MEMBER = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3),
                           st.lists(st.text(max_size=2), max_size=2))


@given(st.dictionaries(st.sampled_from(["count", "label", "name", "tags"]), _ABSENT_MEMBER))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_the_clean_path_under_null_as_absent_stages_gives_what_the_stages_give(members: dict[str, Any]) -> None:
    """The attempt loop parses OpenAI-strict answers with ``ABSENT_AS_NULL_STAGES``; the clean fast path runs
    there too, so for every object it must give exactly what the stages give (value or error kind)."""
    from guardrail.parse.absent import ABSENT_AS_NULL_STAGES

    text = json.dumps(members)
    fast = parse_report(text, _Absent, stages=ABSENT_AS_NULL_STAGES)
    staged = parse_report(text, _Absent, stages=list(ABSENT_AS_NULL_STAGES))  # a copy: no fast path
    assert not staged.fast_path
    assert same(fast.value, staged.value)
    assert type(fast.error) is type(staged.error)
    if fast.fast_path:  # the fast path took it: nothing to drop, so the stages recorded no fix either
        assert not staged.fixes


def test_the_clean_path_runs_under_null_as_absent_stages() -> None:
    from guardrail.parse.absent import ABSENT_AS_NULL_STAGES

    assert parse_report('{"name": "a", "label": null}', _Absent, stages=ABSENT_AS_NULL_STAGES).fast_path
    dropped = parse_report('{"name": "a", "count": null}', _Absent, stages=ABSENT_AS_NULL_STAGES)
    assert not dropped.fast_path and dropped.value == _Absent(name="a")
    assert [fix.kind for fix in dropped.fixes] == ["null_as_absent"]


@pytest.mark.parametrize("text", [
    '```json\n[]\n```\n"just a string"',
    '```json\n["a"]\n```\n```\n"b"\n```',
    '"x"\n```json\n["a"]\n```',
])
def test_the_wrapped_fast_path_never_picks_one_of_two_readings(text: str) -> None:
    """A fenced value beside another segment that is a lone scalar: the stages may read the scalar for a list
    contract too (ambiguous); ``parse`` must decide as ``parse_report`` does, never return the fenced value."""
    report = parse_report(text, list[str])
    try:
        value = parse(text, list[str])
    except ParseError as error:
        assert report.error is not None and type(error) is type(report.error)
    else:
        assert report.error is None and value == report.value
