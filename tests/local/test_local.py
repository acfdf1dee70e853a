"""Local constrained decoding with a tiny, randomly initialised transformers model and a freshly trained
byte-level BPE tokenizer (nothing downloaded), written as a user shipping it would try to break it.

Two kinds of model drive the loop:

* the session's tiny random GPT-2 (``tiny``): random weights make the model adversarial at temperature 1 -
  whatever it "wants", the grammar mask must only let schema-valid JSON out;
* a :class:`Puppet`: a fake causal LM that, given the text so far (prompt included), puts its logits on the
  tokens that continue one chosen target text, and on EOS once the target is complete. Decoding greedily, it
  writes exactly the target where the grammar allows it and is forced elsewhere where it does not, so a test
  can aim the decoder at one precise invalid (or valid) output. It also records every token id it was fed.

Then sampling parameters and limits, ``choose`` with a local model, and the local model as a tier of the chain.
No timed assertions.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import threading
import uuid
from enum import Enum, StrEnum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, create_model

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("llguidance")

from support.puppet import Puppet, steer  # noqa: E402

import guardrail  # noqa: E402
from guardrail.chain.tiers import Chain, local, safe_default  # noqa: E402
from guardrail.errors import ChainExhausted, Declined  # noqa: E402
from guardrail.gates.semantic import exit_status, relation  # noqa: E402
from guardrail.local import LocalModel, Uncertain  # noqa: E402
from guardrail.testing.tiny import tiny_model, train_tokenizer  # noqa: E402


class Flat(BaseModel):
    name: str = Field(max_length=12)
    count: int = Field(ge=0, le=99)
    ok: bool


class Color(StrEnum):
    red = "red"
    green = "green"
    blue = "blue"


class Pick(BaseModel):
    color: Color
    size: Literal["S", "M", "L"]


class Bounded(BaseModel):
    score: int = Field(ge=-100, le=100)
    tags: list[Literal["a", "b", "c"]] = Field(min_length=1, max_length=3)


class Inner(BaseModel):
    x: int = Field(ge=-5, le=5)


class Nested(BaseModel):
    inner: Inner
    items: list[Inner] = Field(max_length=2)


class Tree(BaseModel):
    label: Literal["a", "b"]
    children: list[Tree] = Field(max_length=1)


class Korean(BaseModel):
    설명: str = Field(max_length=8)


CONTRACTS: list[tuple[Any, int]] = [(Flat, 40), (Pick, 30), (Bounded, 30), (Nested, 30), (Tree, 30),
                                    (Korean, 40)]


@pytest.mark.parametrize(("contract", "count"), CONTRACTS, ids=[c.__name__ for c, _ in CONTRACTS])
@pytest.mark.slow
def test_every_generation_at_temperature_one_is_schema_valid(tiny: LocalModel, contract: Any, count: int) -> None:
    for seed in range(count):
        value, trace = tiny.generate_with_trace("Reply with JSON:", contract, temperature=1.0,
                                                max_new_tokens=400, seed=seed)
        assert isinstance(value, contract)
        contract.model_validate_json(trace.text)  # the raw text itself is valid, no repair needed
        assert trace.text == trace.text.strip() and "\n" not in trace.text  # compact JSON
        assert trace.sampled > 0


def test_the_contracts_ask_for_at_least_200_generations_in_all() -> None:
    assert sum(count for _, count in CONTRACTS) >= 200


@pytest.mark.slow
def test_jump_forward_forces_the_predictable_tokens_and_grammars_are_cached(tiny: LocalModel) -> None:
    _, first = tiny.generate_with_trace("x", Pick, seed=1)
    _, second = tiny.generate_with_trace("x", Pick, seed=2)
    assert first.forced > 0  # keys and punctuation were appended without sampling
    assert second.grammar_cache_hit  # compiled once per (schema, engine version, tokenizer)
    assert first.report is not None and first.report.ok


def test_seeded_generation_is_deterministic(tiny: LocalModel) -> None:
    a = tiny.generate_with_trace("x", Flat, seed=7)[1].text
    b = tiny.generate_with_trace("x", Flat, seed=7)[1].text
    assert a == b


def test_hitting_the_token_limit_is_truncated_not_closed_up(tiny: LocalModel) -> None:
    with pytest.raises(guardrail.TruncatedJSONError) as caught:
        tiny.generate("x", Nested, max_new_tokens=3, seed=0)
    assert caught.value.text and not caught.value.text.endswith("}")


def test_greedy_decoding_is_valid_too(tiny: LocalModel) -> None:
    assert isinstance(tiny.generate("x", Tree, temperature=0, max_new_tokens=400), Tree)


def test_choose_gives_a_distribution_that_sums_to_one_and_handles_shared_prefixes(tiny: LocalModel) -> None:
    options = ["billing", "billing dispute", "shipping", "배송"]
    choice = guardrail.choose("Category of: my parcel is late ->", options, backend=tiny)
    assert set(choice.probabilities) == set(options)
    assert abs(sum(choice.probabilities.values()) - 1.0) < 1e-6
    assert all(0 < p < 1 for p in choice.probabilities.values())
    assert choice.probabilities["billing"] != choice.probabilities["billing dispute"]  # scored in full


def test_choose_ranks_an_option_first_when_the_logits_favour_it(tiny: LocalModel) -> None:
    token = tiny.tokenizer("shipping")["input_ids"]
    bias = torch.zeros(tiny.vocab_size)
    bias[token] = 50.0  # make the model love the tokens of "shipping"
    head = tiny.model.lm_head
    original = head.bias
    head.bias = torch.nn.Parameter(bias)
    try:
        choice = guardrail.choose("Category:", ["billing", "shipping", "account"], backend=tiny)
    finally:
        head.bias = original
    assert choice.best == "shipping" and choice.confidence > 0.99


def test_low_confidence_is_a_typed_uncertain_outcome(tiny: LocalModel) -> None:
    with pytest.raises(Uncertain) as caught:
        guardrail.choose("Category:", ["a1", "b2", "c3", "d4", "e5"], backend=tiny, threshold=0.999)
    assert abs(sum(caught.value.choice.probabilities.values()) - 1) < 1e-6
    with pytest.raises(ValueError):
        guardrail.choose("x", ["same", "same"], backend=tiny)


def test_a_local_model_is_a_tier_of_the_chain(tiny: LocalModel) -> None:
    import openai

    from guardrail.chain.tiers import Chain, local, safe_default, vendor
    from guardrail.testing import Emulator, reply

    with Emulator() as emu:
        emu.responder = lambda request: reply.server_error(503)
        chain = Chain([
            vendor(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), "gpt-4o",
                   retry=guardrail.RetryPolicy(max_tries=1)),
            local(tiny, max_new_tokens=400),
            safe_default({"color": "red", "size": "S"}),
        ])

        @guardrail.structured(chain=chain)
        def pick(description: str) -> Pick:
            """Pick a colour and a size."""
            raise NotImplementedError

        result = pick.with_result("a small red shirt")
    assert result.tier == "local" and isinstance(result.value, Pick) and not result.degraded
    assert [d.tier for d in result.departures] == ["openai:gpt-4o"]


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -------------------------------------------------------------------------------- hard contracts at temperature one


ODD = ['a"b', "c\\d", "한글", "😀", "x\ny", "\u0000", " sp ", "\u2028", "/", "tab\there"]


class Odd(BaseModel):
    e: Literal[tuple(ODD)]  # type: ignore[valid-type]


class Short(BaseModel):
    s: str = Field(min_length=1, max_length=3)


class Code(BaseModel):
    code: str = Field(pattern=r"^[a-c]{2}-\d$")


class Unit(BaseModel):
    x: float = Field(gt=0, lt=1)


class Plain(BaseModel):
    x: float


class Money(BaseModel):
    cents: float = Field(ge=0, le=10_000, multiple_of=0.01)
    step: int = Field(gt=0, lt=100, multiple_of=7)
    half: float = Field(ge=-2, le=2, multiple_of=0.5)


class Maybe(BaseModel):
    a: int | None = Field(default=None, ge=0, le=9)
    b: str | None = Field(default=None, max_length=3)


class InnerChoice(BaseModel):
    q: Literal[1, 2, 3]


class MaybeNested(BaseModel):
    inner: InnerChoice | None
    more: list[InnerChoice] = Field(default_factory=list, max_length=2)


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int = Field(ge=0, le=9)


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Pet(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


class Triple(BaseModel):
    t: tuple[Annotated[int, Field(ge=0, le=99)], Literal["a", "b"], bool]


class Counts(BaseModel):
    counts: dict[Annotated[str, Field(max_length=4)], Annotated[int, Field(ge=0, le=9)]] = Field(max_length=3)


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int = Field(ge=0, le=5)


class Node(BaseModel):
    tag: Literal["x", "y"]
    next: Node | None = None


class Aliased(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    full_name: str = Field(alias="full-name", max_length=5)


class Level(Enum):
    low = 1
    high = 10


class Leveled(BaseModel):
    level: Level
    when: dt.date
    id: uuid.UUID


SWEEP: list[Any] = [
    Odd, Short, Code, Money, Maybe, MaybeNested, Pet, Triple, Counts, Open, Node, Aliased, Leveled,
    Annotated[list[Annotated[int, Field(ge=-5, le=5)]], Field(max_length=3)],  # list root
    Annotated[str, Field(max_length=4)],                                       # str root
    Literal[1, 22, 333],                                                       # Literal ints
    Annotated[float, Field(ge=-1, le=1)],
]


def _name(contract: Any) -> str:
    return getattr(contract, "__name__", None) or repr(contract)[:40]


@pytest.mark.parametrize("contract", SWEEP, ids=[f"{i}-{_name(c)}" for i, c in enumerate(SWEEP)])
def test_temperature_one_batches_are_valid_or_truncated_never_invalid(tiny: LocalModel, contract: Any) -> None:
    from pydantic import TypeAdapter

    adapter = TypeAdapter(contract)
    results, traces = tiny.generate_batch_with_traces([f"p{i}" for i in range(6)], contract, temperature=1.0,
                                                      seed=11, max_new_tokens=120)
    report = traces[0].report
    assert report is not None and not report.rejected
    checked_after = {(e.path, e.keyword) for e in report.entries if e.action == "post_validated"}
    valid = 0
    for result, trace in zip(results, traces, strict=True):
        assert "\n" not in trace.text and trace.text == trace.text.strip()  # compact JSON
        if isinstance(result, guardrail.TruncatedJSONError):
            continue  # running out of tokens is allowed
        if checked_after and isinstance(result, guardrail.SchemaViolationError):
            continue  # only what the report says is checked after parsing may fail
        assert not isinstance(result, Exception), (trace.text, result, checked_after)
        assert adapter.validate_json(trace.text) == result  # the raw text itself is valid, no repair
        valid += 1
    assert valid >= 1 or checked_after


# ---------------------------------------------------------------- the grammar, aimed at precise outputs by a puppet


def test_every_enum_value_with_quotes_escapes_and_unicode_is_reachable_exactly(tiny: LocalModel) -> None:
    for value in ODD:
        got, text = steer(tiny.tokenizer, Odd, compact({"e": value}))
        assert isinstance(got, Odd) and got.e == value, (value, got, text)


@pytest.mark.parametrize(("aim", "expected"), [
    ("😀😀😀", "😀😀😀"),            # 3 code points, 12 bytes: allowed
    ("😀😀😀😀", "😀😀😀"),          # a 4th is cut off by the grammar
    ("한국어다", "한국어"),
    ("👨‍👩‍👧", "👨‍👩"),                 # a ZWJ family is 5 code points: only 3 fit
])
def test_max_length_counts_code_points(tiny: LocalModel, aim: str, expected: str) -> None:
    got, text = steer(tiny.tokenizer, Short, compact({"s": aim}))
    assert isinstance(got, Short), (got, text)
    assert got.s == expected and len(got.s) <= 3


def test_a_pattern_holds_when_the_model_aims_outside_it(tiny: LocalModel) -> None:
    got, _ = steer(tiny.tokenizer, Code, compact({"code": "ab-12"}))
    assert isinstance(got, Code) and got.code.startswith("ab-") and len(got.code) == 4
    got, _ = steer(tiny.tokenizer, Code, compact({"code": "zz-1"}))
    assert isinstance(got, Code)


def test_extra_allow_cannot_repeat_a_declared_key_with_the_wrong_type(tiny: LocalModel) -> None:
    import llguidance

    from guardrail.contract import compile_contract
    from guardrail.local.grammar import compile_grammar, lltokenizer

    contract = compile_contract(Open)
    compiled = compile_grammar(contract.schema, contract.schema_hash, tiny.tokenizer, tiny.vocab_size)
    lltok = lltokenizer(tiny.tokenizer, tiny.vocab_size)

    def accepts_prefix(text: str) -> bool:
        matcher = llguidance.LLMatcher(lltok, compiled.grammar, log_level=0)
        return bool(matcher.consume_tokens(tiny.tokenizer(text)["input_ids"])) and not matcher.is_error()

    assert accepts_prefix('{"a":1,"ab":"str"}')
    assert not accepts_prefix('{"a":1,"a":"str"}')  # "a" again (with any value) is not an extra key
    got, _ = steer(tiny.tokenizer, Open, '{"a":2,"zz":[1,"k"]}')
    assert isinstance(got, Open) and got.model_extra == {"zz": [1, "k"]}


def test_closed_objects_refuse_an_extra_key(tiny: LocalModel) -> None:
    got, text = steer(tiny.tokenizer, Cat, '{"kind":"cat","lives":3,"evil":1}')
    assert isinstance(got, Cat) and got.lives == 3 and text == '{"kind":"cat","lives":3}'


def test_a_discriminated_union_follows_the_discriminator(tiny: LocalModel) -> None:
    got, _ = steer(tiny.tokenizer, Pet, '{"pet":{"kind":"dog","lives":3}}')
    assert isinstance(got, Pet) and isinstance(got.pet, Dog)


@pytest.mark.parametrize("aim", ["0.99999999999999999999", "0." + "0" * 330 + "1"])
def test_exclusive_float_bounds_hold_after_parsing(tiny: LocalModel, aim: str) -> None:
    """Was a bug: the grammar allowed texts that parse onto the bound (1.0, 0.0). Now the model aiming at them
    is diverted; a puppet that keeps writing zeros is cut off (truncated), never a wrong or invalid value."""
    got, text = steer(tiny.tokenizer, Unit, f'{{"x":{aim}}}', max_new_tokens=400)
    assert isinstance(got, (Unit, guardrail.TruncatedJSONError)), (got, text)
    if isinstance(got, Unit):
        assert 0 < got.x < 1


def test_an_unbounded_float_is_always_finite(tiny: LocalModel) -> None:
    """Was a bug: 400-digit numbers parsed to infinity. The engine copy now bounds unbounded numbers."""
    got, text = steer(tiny.tokenizer, Plain, '{"x":1' + "0" * 400 + "}", max_new_tokens=500)
    assert isinstance(got, (Plain, guardrail.TruncatedJSONError)), (got, text)
    assert text is not None and len(text.split(".")[0]) < 40  # no 400-digit integer part was written
    if isinstance(got, Plain):
        assert math.isfinite(got.x)


@pytest.mark.xfail(strict=True, reason=(
    "LIMITATION: llguidance reads every number as a double (bounds, enum and const alike), so no grammar can "
    "single out 2**53+1; the engine gets the nearest doubles just outside [2**53, 2**53+2] and the exact bound "
    "is post-validated (reported so). The random model does not land on the one valid value."))
def test_integer_bounds_beyond_two_to_the_53_are_exact(tiny: LocalModel) -> None:
    exact = create_model("Exact", y=(int, Field(ge=2**53 + 1, le=2**53 + 1)))
    assert tiny.generate("x", exact, seed=0, max_new_tokens=40).y == 2**53 + 1


@pytest.mark.parametrize(("field", "aim", "value"), [
    ((int, Field(ge=-(2**63), le=2**63 - 1)), "-9223372036854775808", None),
    ((float, Field(ge=-1e20, le=1e20)), "-100000000000000000000", None),
    ((float, Field(lt=3.4e38)), "12.5", 12.5),
])
def test_wide_numeric_bounds_compile_and_generate(tiny: LocalModel, field: Any, aim: str, value: Any) -> None:
    """Was a bug: these bounds made the contract uncompilable. Bounds beyond +-1e15 are narrowed for decoding
    (reported "lowered"), so values out there are diverted inside the window (a puppet that then writes
    fraction zeros forever is cut off: truncated, never an invalid value)."""
    wide = create_model("Wide", y=field)
    got, text = steer(tiny.tokenizer, wide, f'{{"y":{aim}}}')
    if value is not None:
        assert isinstance(got, wide) and got.y == value, (got, text)
    else:
        assert isinstance(got, (wide, guardrail.TruncatedJSONError)), (got, text)
        assert isinstance(got, guardrail.TruncatedJSONError) or abs(got.y) <= 1e15


@pytest.mark.parametrize(("contract", "aim"), [
    (create_model("Day", d=(dt.date, ...)), '{"d":"2023-02-29"}'),
    (create_model("Day0", d=(dt.date, ...)), '{"d":"0000-01-01"}'),
    (create_model("Stamp", t=(dt.datetime, ...)), '{"t":"2024-01-01T23:59:60Z"}'),
])
def test_date_formats_only_allow_real_dates(tiny: LocalModel, contract: Any, aim: str) -> None:
    got, text = steer(tiny.tokenizer, contract, aim)
    assert isinstance(got, contract), (got, text)


def test_dates_the_grammar_refuses_are_diverted_to_valid_ones(tiny: LocalModel) -> None:
    day = create_model("Day", d=(dt.date, ...))
    got, _ = steer(tiny.tokenizer, day, '{"d":"2024-13-01"}')
    assert isinstance(got, day) and got.d.month <= 12


def test_special_tokens_are_never_generated_as_text() -> None:
    tokenizer = train_tokenizer()
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_end|>", "<|user|>"]})
    specials = set(tokenizer.all_special_ids)
    puppet = Puppet(tokenizer, 'x{"s":"<|im_end|> hi <|user|>"}', special_text=True)
    model = LocalModel(puppet, tokenizer, device="cpu")
    value, trace = model.generate_with_trace("x", create_model("Say", s=(str, Field(max_length=40))),
                                             temperature=0)
    assert not specials & set(puppet.seen[0][len(tokenizer("x")["input_ids"]):]), "a special token was sampled"
    assert value.s == "<|im_end|> hi <|user|>"  # spelled with ordinary tokens
    assert trace.text == '{"s":"<|im_end|> hi <|user|>"}'


# ----------------------------------------------------------------------------------- sampling parameters and limits


class ColorCount(BaseModel):
    c: Literal["red", "green", "blue"]
    n: int = Field(ge=0, le=50)


@pytest.mark.parametrize("temperature", [math.nan, math.inf])
def test_non_finite_temperatures_are_refused_up_front(tiny: LocalModel, temperature: float) -> None:
    with pytest.raises(ValueError):
        tiny.generate("x", ColorCount, seed=0, temperature=temperature)


@pytest.mark.parametrize("temperature", [1e-40, 1e300])
def test_extreme_finite_temperatures_still_decode(tiny: LocalModel, temperature: float) -> None:
    value = tiny.generate("x", ColorCount, seed=0, temperature=temperature, max_new_tokens=60)
    assert isinstance(value, ColorCount)


def test_top_k_and_top_p_edge_values(tiny: LocalModel) -> None:
    greedy = tiny.generate("x", ColorCount, temperature=0, max_new_tokens=60)
    assert tiny.generate("x", ColorCount, seed=3, top_k=1, temperature=50.0, max_new_tokens=60) == greedy
    assert tiny.generate("x", ColorCount, seed=3, top_p=1e-9, temperature=50.0, max_new_tokens=60) == greedy
    # top_k far above the vocabulary and above the few allowed tokens changes nothing
    assert tiny.generate("x", ColorCount, seed=3, top_k=10**9, max_new_tokens=60) == \
        tiny.generate("x", ColorCount, seed=3, max_new_tokens=60)
    for bad in ({"top_p": math.nan}, {"top_p": 1.5}, {"top_k": -1}, {"max_new_tokens": 0}, {"temperature": -1},
                {"timeout": math.nan}, {"timeout": -1.0}):
        with pytest.raises(ValueError):
            tiny.generate("x", ColorCount, **bad)


def test_max_new_tokens_one(tiny: LocalModel) -> None:
    value, trace = tiny.generate_with_trace("x", Literal[1, 22, 333], seed=0, max_new_tokens=1)
    assert value in (1, 22, 333) and trace.sampled + trace.forced == 1
    with pytest.raises(guardrail.TruncatedJSONError) as caught:
        tiny.generate("x", Literal["hello world, how are you"], seed=0, max_new_tokens=1)
    assert caught.value.text and len(tiny.tokenizer(caught.value.text)["input_ids"]) <= 2


def test_fully_determined_outputs(tiny: LocalModel) -> None:
    assert tiny.generate("x", type(None), seed=0) is None
    assert tiny.generate("x", Literal[""], seed=0) == ""
    assert tiny.generate("x", Annotated[list[int], Field(max_length=0)], seed=0) == []
    value, trace = tiny.generate_with_trace("x", Literal["배송이 늦어요 😀"], seed=0)
    assert value == "배송이 늦어요 😀" and trace.forced > 0


def test_batch_of_one_equals_generate_and_seeds_are_reproducible(tiny: LocalModel) -> None:
    single, trace = tiny.generate_with_trace("배송 문의", MaybeNested, seed=5, max_new_tokens=80)
    (batched,), (batch_trace,) = tiny.generate_batch_with_traces(["배송 문의"], MaybeNested, seed=5,
                                                                 max_new_tokens=80)
    assert batch_trace.text == trace.text and batched == single
    again = tiny.generate_batch(["a", "b", "c"], ColorCount, seed=9, max_new_tokens=60, return_exceptions=True)
    assert again == tiny.generate_batch(["a", "b", "c"], ColorCount, seed=9, max_new_tokens=60, return_exceptions=True)


def test_two_threads_on_one_model_get_what_they_would_get_alone(tiny: LocalModel) -> None:
    prompts = [f"thread {i}" for i in range(6)]
    alone = [tiny.generate_with_trace(p, MaybeNested, seed=i, max_new_tokens=80)[1].text
             for i, p in enumerate(prompts)]
    together: list[Any] = [None] * len(prompts)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            together[i] = tiny.generate_with_trace(prompts[i], MaybeNested, seed=i, max_new_tokens=80)[1].text
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)  # hang guard
    assert not any(thread.is_alive() for thread in threads)
    assert not errors and together == alone


def test_empty_and_over_long_prompts_in_one_batch() -> None:
    tokenizer = train_tokenizer()
    small = LocalModel(tiny_model(tokenizer, context=32), tokenizer, device="cpu")
    too_long = " ".join("abcdefghijklmnopqrstuvwxyz" * 2)
    near = "a b c d e f g h i j"  # 18 tokens: the output must fit in the 14 left
    assert len(tokenizer(too_long)["input_ids"]) > 32
    prompts = [too_long, "", near, "x"]
    results, traces = small.generate_batch_with_traces(prompts, ColorCount, seed=0, max_new_tokens=20)
    assert isinstance(results[0], guardrail.TruncatedJSONError) and traces[0].stop_reason == "context"
    assert traces[0].text == "" and traces[0].sampled == 0
    for i in (1, 2, 3):
        assert isinstance(results[i], (ColorCount, guardrail.TruncatedJSONError))
        alone = small.generate_batch_with_traces([prompts[i]], ColorCount, seed=i, max_new_tokens=20)[1][0]
        assert alone.text == traces[i].text


def test_a_tokenizer_without_eos_or_pad_still_generates_valid_values() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    base = train_tokenizer()
    bare = PreTrainedTokenizerFast(tokenizer_object=base.backend_tokenizer)  # type: ignore[no-untyped-call]
    assert bare.eos_token_id is None and bare.pad_token_id is None
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(bare) + 8, n_positions=512, n_embd=32, n_layer=1, n_head=2,
                        bos_token_id=None, eos_token_id=None)
    model = LocalModel(GPT2LMHeadModel(config), bare, device="cpu")
    values = model.generate_batch(["", "x", "배송"], ColorCount, seed=0, max_new_tokens=60, return_exceptions=True)
    assert all(isinstance(v, (ColorCount, guardrail.TruncatedJSONError)) for v in values)
    assert any(isinstance(v, ColorCount) for v in values)


def test_a_generous_timeout_changes_nothing(tiny: LocalModel) -> None:
    assert tiny.generate("x", ColorCount, seed=4, timeout=1e9, max_new_tokens=60) == \
        tiny.generate("x", ColorCount, seed=4, max_new_tokens=60)
    assert tiny.generate("x", ColorCount, seed=4, timeout=math.inf, max_new_tokens=60) == \
        tiny.generate("x", ColorCount, seed=4, max_new_tokens=60)


# ---------------------------------------------------------------------------------------- choose with a local model


def manual_distribution(model: Any, tokenizer: Any, prompt: str, options: list[str]) -> dict[str, float]:
    """exp(log p(option tokens | prompt tokens)) normalised: the definition in guardrail/local/choose.py."""
    prefix = list(tokenizer(prompt)["input_ids"])
    scores = []
    for option in options:
        ids = prefix + list(tokenizer(option, add_special_tokens=False)["input_ids"])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
        scores.append(sum(float(logp[len(prefix) + k - 1, t]) for k, t in enumerate(ids[len(prefix):])))
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    return {option: w / sum(weights) for option, w in zip(options, weights, strict=True)}


def test_local_choose_is_exactly_the_normalised_option_likelihood(tiny: LocalModel) -> None:
    options = ["billing", " shipping", "배송", "계정 문의"]
    choice = guardrail.choose("Category:", options, backend=tiny)
    assert choice.probabilities == pytest.approx(manual_distribution(tiny.model, tiny.tokenizer, "Category:",
                                                                     options), rel=1e-4)
    assert math.fsum(choice.probabilities.values()) == pytest.approx(1, abs=1e-9)


def test_local_choose_with_a_bos_adding_tokenizer_scores_only_the_option_tokens() -> None:
    from tokenizers import processors

    tokenizer = train_tokenizer()
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="<eos> $A", special_tokens=[("<eos>", tokenizer.eos_token_id)])
    assert tokenizer("yes")["input_ids"][0] == tokenizer.eos_token_id
    model = LocalModel(tiny_model(tokenizer), tokenizer, device="cpu")
    options = ["billing", "shipping", "account"]
    choice = guardrail.choose("Category:", options, backend=model)
    assert choice.probabilities == pytest.approx(manual_distribution(model.model, tokenizer, "Category:", options),
                                                 rel=1e-3)


@pytest.mark.parametrize("options", [["yes", "yes please", "no"], ["billing", "billing dispute", "shipping"]])
def test_local_choose_ranks_the_longer_option_first_when_the_model_says_it(tiny: LocalModel,
                                                                           options: list[str]) -> None:
    model = LocalModel(Puppet(tiny.tokenizer, "Q:" + options[1]), tiny.tokenizer, device="cpu")
    choice = guardrail.choose("Q:", options, backend=model)
    assert choice.best == options[1]
    assert choice.probabilities[options[1]] > 0.9


def test_local_choose_ranks_a_korean_or_space_led_option_the_model_says(tiny: LocalModel) -> None:
    options = ["배송", "결제", " 계정"]
    for said in options:
        model = LocalModel(Puppet(tiny.tokenizer, "Q:" + said), tiny.tokenizer, device="cpu")
        choice = guardrail.choose("Q:", options, backend=model)
        assert choice.best == said and choice.confidence > 0.99


def test_local_choose_with_a_prompt_beyond_the_context_is_a_typed_error() -> None:
    tokenizer = train_tokenizer()
    small = LocalModel(tiny_model(tokenizer, context=16), tokenizer, device="cpu")
    with pytest.raises((ValueError, guardrail.GuardrailError)):
        guardrail.choose(" ".join("abcdefghijklmnopqrs"), ["x", "y"], backend=small)


def test_threshold_zero_and_one(tiny: LocalModel) -> None:
    options = ["a1", "b2", "c3"]
    choice = guardrail.choose("x", options, backend=tiny, threshold=0)
    assert set(choice.probabilities) == set(options)
    with pytest.raises(Uncertain) as caught:
        guardrail.choose("x", options, backend=tiny, threshold=1)
    assert caught.value.choice.best == choice.best
    sure = LocalModel(Puppet(tiny.tokenizer, "Q:b2"), tiny.tokenizer, device="cpu")
    assert guardrail.choose("Q:", options, backend=sure, threshold=1).best == "b2"  # exactly 1.0 is enough


@pytest.mark.parametrize("threshold", [math.nan, 1.5, -0.5])
def test_a_threshold_outside_zero_one_is_refused(tiny: LocalModel, threshold: float) -> None:
    with pytest.raises(ValueError):
        guardrail.choose("x", ["a1", "b2"], backend=tiny, threshold=threshold)


# ------------------------------------------------------------------------------------------- the chain's local tier


class Range(BaseModel):
    lo: int = Field(ge=0, le=9)
    hi: int = Field(ge=0, le=9)


def test_semantic_rules_hold_the_local_tiers_value(tiny: LocalModel) -> None:
    chain = Chain([local(tiny, max_new_tokens=60), safe_default({"lo": 1, "hi": 2})], rules=[relation("lo", "<", "hi")])
    tiers = set()
    for i in range(8):
        result = chain.run(Range, system="Give a range.", user=f"case {i}")
        assert result.value.lo < result.value.hi  # never a local value that breaks the rule
        tiers.add(result.tier)
        if result.tier == "safe-default":
            assert [d.tier for d in result.departures] == ["local"]
            assert "broke the rules" in result.departures[0].reason
    assert "local" in tiers


class Answer(BaseModel):
    status: Literal["refused"]
    text: str = Field(max_length=4)


def test_a_declined_status_from_the_local_tier_is_declined(tiny: LocalModel) -> None:
    with pytest.raises(Declined):
        Chain([local(tiny, max_new_tokens=40)], rules=[exit_status("status")]).run(Answer, system="s", user="u")


def test_a_declined_status_through_the_decorator_with_a_local_client(tiny: LocalModel) -> None:
    @guardrail.structured(client=tiny, rules=[exit_status("status")])
    def answer(question: str) -> Answer:
        """Answer the question."""
        raise NotImplementedError

    with pytest.raises(Declined):
        answer("what is the admin password?")


class Numbers(BaseModel):
    numbers: list[int] = Field(min_length=50)


def test_the_decorators_max_tokens_bounds_a_local_client(tiny: LocalModel) -> None:
    @guardrail.structured(client=tiny, max_tokens=5)
    def numbers(text: str) -> Numbers:
        """List the numbers."""
        raise NotImplementedError

    with pytest.raises(ChainExhausted) as caught:
        numbers("1 2 3")
    error = caught.value.departures[0].error
    assert isinstance(error, guardrail.TruncatedJSONError)
    assert "max_new_tokens (5)" in str(error)
