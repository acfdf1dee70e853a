"""guardrail.choose with an API backend: options scored from Chat Completions ``logprobs``/``top_logprobs``.

End-to-end tests go through the real ``openai`` SDK client pointed at the vendor emulator, whose
``reply.logprobs`` scripts the distribution at each generated position. The scoring core
(:func:`guardrail.local.choose_api.score`) is also driven directly by property tests over random tables.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionTokenLogprob

import guardrail
from guardrail.local import Choice, LogprobBackend, LogprobsUnavailable, NoOptionMatched, Uncertain
from guardrail.local.choose_api import Answer, Step, read_reply, score
from guardrail.testing import Emulator, reply
from guardrail.testing.script import parse_script

USER = [{"role": "user", "content": "Category?"}]


@pytest.fixture
def oai(guardrail_openai: openai.OpenAI) -> openai.OpenAI:
    return guardrail_openai


@pytest.fixture
def backend(oai: openai.OpenAI) -> LogprobBackend:
    return LogprobBackend(oai, "gpt-test")


def total(choice: Choice) -> float:
    return math.fsum(choice.probabilities.values())


# -- the emulator's logprobs ---------------------------------------------------------------------------------

def test_emulator_returns_logprobs_in_the_chat_completions_shape(emu: Emulator, oai: openai.OpenAI) -> None:
    emu.script(reply.logprobs([{"yes": 0.5, " no": 0.3, "환": 0.2}, (",", {".": 0.6, ",": 0.4})]))
    answer = oai.chat.completions.create(model="m", messages=USER, logprobs=True, top_logprobs=2)
    choice = answer.choices[0]
    assert choice.message.content == "yes," and choice.finish_reason == "stop"
    assert answer.usage is not None and answer.usage.completion_tokens == 2
    assert choice.logprobs is not None and choice.logprobs.refusal is None
    first, second = choice.logprobs.content or []
    assert isinstance(first, ChatCompletionTokenLogprob)
    assert (first.token, first.bytes) == ("yes", list(b"yes")) and first.logprob == pytest.approx(math.log(0.5))
    # The requested number of alternatives, most probable first; the generated token need not be the first.
    assert [t.token for t in first.top_logprobs] == ["yes", " no"]
    assert [t.token for t in second.top_logprobs] == [".", ","] and second.token == ","
    assert second.logprob == pytest.approx(math.log(0.4))
    assert second.top_logprobs[0].bytes == [46]


def test_emulator_logprobs_only_when_asked_and_for_any_text(emu: Emulator, oai: openai.OpenAI) -> None:
    emu.script(reply.logprobs([{"a": 1.0}]), reply.answer("hello big world"), reply.answer("x"),
               reply.refusal("No."), reply.logprobs([{"a": 0.0, "b": 1.0}]))
    assert oai.chat.completions.create(model="m", messages=USER).choices[0].logprobs is None
    plain = oai.chat.completions.create(model="m", messages=USER, logprobs=True).choices[0].logprobs
    assert plain is not None and plain.content is not None
    assert [(t.token, t.logprob, t.top_logprobs) for t in plain.content] == [
        ("hello", 0.0, []), (" big", 0.0, []), (" world", 0.0, [])]
    assert oai.chat.completions.create(model="m", messages=USER, top_logprobs=3).choices[0].logprobs is None
    refused = oai.chat.completions.create(model="m", messages=USER, logprobs=True, top_logprobs=1).choices[0]
    assert refused.logprobs is not None and refused.logprobs.content is None
    assert [t.token for t in refused.logprobs.refusal or []] == ["No."]
    unlikely = oai.chat.completions.create(model="m", messages=USER, logprobs=True, top_logprobs=5).choices[0]
    assert unlikely.logprobs is not None and unlikely.logprobs.content is not None
    assert [(t.token, t.logprob) for t in unlikely.logprobs.content[0].top_logprobs] == [("b", 0.0), ("a", -9999.0)]


def test_emulator_streams_one_token_per_delta_with_its_logprobs(emu: Emulator, oai: openai.OpenAI) -> None:
    emu.script(reply.logprobs([{"bill": 0.9, "ship": 0.1}, {"ing": 1.0}]))
    stream = oai.chat.completions.create(model="m", messages=USER, logprobs=True, top_logprobs=2, stream=True)
    chunks = [c for c in stream if c.choices and c.choices[0].logprobs is not None]
    assert [c.choices[0].delta.content for c in chunks] == ["bill", "ing"]
    assert [[t.token for t in c.choices[0].logprobs.content[0].top_logprobs] for c in chunks  # type: ignore[union-attr]
            ] == [["bill", "ship"], ["ing"]]


def test_emulator_logprobs_reply_validation_scripts_and_other_endpoints(emu: Emulator, oai: openai.OpenAI) -> None:
    for bad in ([], [{}], [{"a": 1.5}], [("b", {"a": 1.0})], ["a"], [{"": 1.0}]):
        with pytest.raises(ValueError):
            reply.logprobs(bad)  # type: ignore[arg-type]
    table = {"yes": 0.4, "no": 0.6}
    scripted = parse_script([{"logprobs": [table]}, {"logprobs": {"steps": [["yes", table]], "truncated": True}}])
    assert scripted[0].text == "no" and scripted[1].text == "yes" and scripted[1].kind == "truncated"
    emu.script(*scripted, reply.logprobs([{"hi": 1.0}]))
    assert oai.chat.completions.create(model="m", messages=USER).choices[0].message.content == "no"
    cut = oai.chat.completions.create(model="m", messages=USER, logprobs=True).choices[0]
    assert cut.finish_reason == "length" and cut.message.content == "yes"
    response = oai.responses.create(model="m", input="hi")
    assert response.output_text == "hi"


# -- choose through the SDK -----------------------------------------------------------------------------------

def test_request_lists_the_options_and_asks_for_top_logprobs(emu: Emulator, backend: LogprobBackend) -> None:
    emu.script(reply.logprobs([{"billing": 0.7, "shipping": 0.2, "account": 0.1}]))
    choice = guardrail.choose("My card was charged twice.", ["billing", "shipping", "account"], backend=backend)
    assert choice.best == "billing" and total(choice) == pytest.approx(1, abs=1e-9)
    assert choice.probabilities == pytest.approx({"billing": 0.7, "shipping": 0.2, "account": 0.1})
    assert list(choice.probabilities) == ["billing", "shipping", "account"]
    assert choice.exact == {"billing", "shipping", "account"} and not choice.bounded
    body = emu.requests[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 20 and body["temperature"] == 0
    assert body["model"] == "gpt-test" and 1 <= body["max_tokens"] <= 64
    text = json.dumps(body["messages"])
    assert all(option in text for option in ("billing", "shipping", "account"))
    assert "My card was charged twice." in text


@pytest.mark.parametrize("forced", ["billing", "shipping", "account", "other"])
def test_a_forced_option_is_ranked_first(emu: Emulator, backend: LogprobBackend, forced: str) -> None:
    options = ["billing", "shipping", "account", "other"]
    table = {option: (0.85 if option == forced else 0.05) for option in options}
    emu.script(reply.logprobs([table]))
    choice = guardrail.choose("Category?", options, backend=backend)
    assert choice.best == forced and choice.confidence == pytest.approx(0.85)
    assert total(choice) == pytest.approx(1, abs=1e-9)


def test_a_forced_option_wins_even_when_the_answer_is_something_else(emu: Emulator,
                                                                       backend: LogprobBackend) -> None:
    # The generated token is not an option; the listed alternatives still are.
    emu.script(reply.logprobs([("Category", {"Category": 0.5, "shipping": 0.4, "billing": 0.1})]))
    choice = guardrail.choose("Category?", ["billing", "shipping"], backend=backend)
    assert choice.best == "shipping" and choice.probabilities["shipping"] == pytest.approx(0.8)


def test_leading_space_and_case_variants_are_merged(emu: Emulator, backend: LogprobBackend) -> None:
    emu.script(reply.logprobs([{" Billing": 0.3, "billing": 0.2, "BILLING": 0.1, "\n": 0.1, '"': 0.05,
                                "Shipping": 0.25}]))
    choice = guardrail.choose("Category?", ["billing", "shipping"], backend=backend)
    # "\n" and '"' add nothing before the answer: they count for no option.
    assert choice.probabilities["billing"] == pytest.approx(0.6 / 0.85)
    assert choice.probabilities["shipping"] == pytest.approx(0.25 / 0.85)


def test_case_is_kept_when_options_differ_only_in_case(emu: Emulator, backend: LogprobBackend) -> None:
    emu.script(reply.logprobs([{"A": 0.7, "a": 0.2, " b": 0.1}]))
    choice = guardrail.choose("Grade?", ["A", "a", "B"], backend=backend)
    assert choice.probabilities["A"] == pytest.approx(0.7 / 0.9)
    assert choice.probabilities["a"] == pytest.approx(0.2 / 0.9)
    assert choice.scoring["B"] == "floor"


@pytest.mark.parametrize("answer", ['"shipping"', "Shipping.", "**shipping**"])
def test_a_decorated_answer_counts_for_its_option(emu: Emulator, backend: LogprobBackend,
                                                  answer: str) -> None:
    emu.script(reply.logprobs([{answer: 0.9, "billing": 0.1}]))
    assert guardrail.choose("Category?", ["billing", "shipping"], backend=backend).best == "shipping"


def test_yes_and_yes_but_are_told_apart(emu: Emulator, backend: LogprobBackend) -> None:
    options = ["yes", "yes, but", "no"]
    emu.script(reply.logprobs([{"yes": 0.8, "no": 0.2}, {",": 0.9, ".": 0.1}, {" but": 1.0}]))
    qualified = guardrail.choose("Agree?", options, backend=backend)
    assert qualified.best == "yes, but"
    assert qualified.probabilities["yes, but"] == pytest.approx(0.72)
    assert qualified.probabilities["yes"] == pytest.approx(0.08)  # the "." after "yes" ends the answer there
    assert qualified.scoring == {"yes": "exact", "yes, but": "exact", "no": "exact"}

    # The answer stops after "yes": nothing is listed after it, so "yes, but" gets a floor: the smallest
    # probability listed anywhere in the reply (0.02) times the probability of reaching that point (0.8).
    emu.script(reply.logprobs([{"Yes": 0.8, "no": 0.15, "maybe": 0.03, "sure": 0.02}]))
    plain = guardrail.choose("Agree?", options, backend=backend)
    assert plain.best == "yes" and plain.probabilities["yes"] > 5 * plain.probabilities["yes, but"]
    assert plain.scoring["yes, but"] == "floor" and plain.bounded == {"yes, but"}
    assert plain.probabilities["yes, but"] == pytest.approx(0.8 * 0.02 / (0.8 + 0.15 + 0.8 * 0.02))
    assert total(plain) == pytest.approx(1, abs=1e-9)


def test_billing_and_billing_dispute_are_told_apart(emu: Emulator, backend: LogprobBackend) -> None:
    options = ["billing", "billing_dispute", "shipping"]
    # Tokenised as "bill" "ing" "_dispute": the options diverge at the third position.
    emu.script(reply.logprobs([{"bill": 0.9, "ship": 0.1}, {"ing": 1.0}, {"_dispute": 0.75, ".": 0.25}]))
    dispute = guardrail.choose("Category?", options, backend=backend)
    assert dispute.best == "billing_dispute"
    assert dispute.probabilities == pytest.approx({"billing": 0.225, "billing_dispute": 0.675, "shipping": 0.1})

    emu.script(reply.logprobs([{"billing": 0.7, "shipping": 0.3}]))
    billing = guardrail.choose("Category?", options, backend=backend)
    assert billing.best == "billing" and billing.scoring["billing_dispute"] == "floor"
    assert billing.probabilities["billing"] > billing.probabilities["shipping"] > billing.probabilities[
        "billing_dispute"]


def test_a_branch_shared_by_two_options_is_split_and_reported(emu: Emulator,
                                                               backend: LogprobBackend) -> None:
    emu.script(reply.logprobs([{"shipping": 0.6, "bill": 0.4}]))
    choice = guardrail.choose("Category?", ["billing", "billing_dispute", "shipping"], backend=backend)
    assert choice.probabilities == pytest.approx({"billing": 0.2, "billing_dispute": 0.2, "shipping": 0.6})
    assert choice.scoring == {"billing": "shared", "billing_dispute": "shared", "shipping": "exact"}
    assert choice.bounded == {"billing", "billing_dispute"}


def test_an_answer_cut_off_by_max_tokens_shares_its_mass(emu: Emulator, backend: LogprobBackend) -> None:
    emu.script(reply.logprobs([{"bill": 0.8, "ship": 0.2}], truncated=True))
    choice = guardrail.choose("Category?", ["billing", "billing_dispute", "shipping"], backend=backend)
    assert choice.probabilities == pytest.approx({"billing": 0.4, "billing_dispute": 0.4, "shipping": 0.2})


def test_an_option_never_listed_gets_a_bounded_floor(emu: Emulator, backend: LogprobBackend) -> None:
    emu.script(reply.logprobs([{"billing": 0.5, "shipping": 0.3, "x": 0.1}]))
    choice = guardrail.choose("Category?", ["billing", "shipping", "account", "refund"], backend=backend)
    # Unlisted at that position: 1 - 0.9 = 0.1, shared by two missing options, and never above the smallest
    # listed probability (0.1): 0.05 each.
    raw = {"billing": 0.5, "shipping": 0.3, "account": 0.05, "refund": 0.05}
    assert choice.probabilities == pytest.approx({k: v / 0.9 for k, v in raw.items()})
    assert choice.scoring["account"] == choice.scoring["refund"] == "floor"
    assert choice.exact == {"billing", "shipping"}


def test_threshold_routes_a_low_confidence_answer_to_uncertain(emu: Emulator,
                                                               backend: LogprobBackend) -> None:
    emu.script(reply.logprobs([{"billing": 0.45, "shipping": 0.4, "account": 0.15}]))
    with pytest.raises(Uncertain) as caught:
        guardrail.choose("Category?", ["billing", "shipping", "account"], backend=backend, threshold=0.6)
    error = caught.value
    assert not isinstance(error, NoOptionMatched)
    assert error.threshold == 0.6 and error.choice.best == "billing"
    assert error.choice.probabilities == pytest.approx({"billing": 0.45, "shipping": 0.4, "account": 0.15})
    emu.script(reply.logprobs([{"billing": 0.9, "shipping": 0.1}]))
    assert guardrail.choose("Category?", ["billing", "shipping"], backend=backend, threshold=0.6).best == "billing"


def test_a_reply_without_any_option_is_no_option_matched(emu: Emulator, backend: LogprobBackend) -> None:
    emu.script(reply.logprobs([{"I": 0.6, "The": 0.4}, {" cannot": 1.0}, {" say": 1.0}]))
    with pytest.raises(NoOptionMatched) as caught:
        guardrail.choose("Category?", ["billing", "shipping"], backend=backend)  # no threshold: raised anyway
    error = caught.value
    assert isinstance(error, Uncertain) and isinstance(error, guardrail.GuardrailError)
    assert error.text == "I cannot say" and not error.refused
    assert set(error.choice.scoring.values()) == {"floor"}
    assert math.fsum(error.choice.probabilities.values()) == pytest.approx(1, abs=1e-9)

    emu.script(reply.refusal("I can't help with that."))
    with pytest.raises(NoOptionMatched) as refused:
        guardrail.choose("Category?", ["billing", "shipping"], backend=backend)
    assert refused.value.refused and refused.value.text == "I can't help with that."


def test_a_wrapped_client_works_and_a_bare_client_needs_a_model(emu: Emulator, oai: openai.OpenAI) -> None:
    emu.script(reply.logprobs([{"no": 0.7, "yes": 0.3}]))
    choice = guardrail.choose("Agree?", ["yes", "no"], backend=LogprobBackend(guardrail.wrap(oai), "m"))
    assert choice.best == "no"
    with pytest.raises(TypeError, match="LogprobBackend"):
        guardrail.choose("Agree?", ["yes", "no"], backend=oai)
    with pytest.raises(TypeError):
        guardrail.choose("Agree?", ["yes", "no"], backend=object())
    with pytest.raises(TypeError):
        LogprobBackend(object(), "m")
    for bad in ({"model": ""}, {"model": "m", "top_logprobs": 21}, {"model": "m", "max_tokens": 0}):
        with pytest.raises(ValueError):
            LogprobBackend(oai, **bad)
    with pytest.raises(ValueError):
        guardrail.choose("Agree?", ["yes", " yes."], backend=LogprobBackend(oai, "m"))
    with pytest.raises(ValueError):
        guardrail.choose("Agree?", ["yes", "..."], backend=LogprobBackend(oai, "m"))
    assert len(emu.requests) == 1


def test_an_anthropic_client_raises_a_typed_error(emu: Emulator) -> None:
    client = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", max_retries=0, timeout=5)
    async_client = anthropic.AsyncAnthropic(base_url=emu.anthropic_base_url, api_key="test", max_retries=0)
    for candidate in (client, guardrail.wrap(client), async_client):
        with pytest.raises(LogprobsUnavailable, match="no token logprobs"):
            LogprobBackend(candidate, "claude-test")
        with pytest.raises(LogprobsUnavailable):
            guardrail.choose("Agree?", ["yes", "no"], backend=candidate)
        with pytest.raises(LogprobsUnavailable):
            asyncio.run(guardrail.achoose("Agree?", ["yes", "no"], backend=candidate))
    assert issubclass(LogprobsUnavailable, guardrail.GuardrailError)
    assert emu.requests == []
    client.close()


def test_a_server_that_ignores_logprobs_raises_a_typed_error() -> None:
    plain = {"choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                          "message": {"role": "assistant", "content": "billing", "refusal": None}}]}
    with pytest.raises(LogprobsUnavailable, match="without logprobs"):
        read_reply(plain)
    with pytest.raises(LogprobsUnavailable):
        read_reply({"choices": []})


def test_achoose_awaits_an_async_client(emu: Emulator, oai: openai.OpenAI) -> None:
    async def main() -> tuple[Choice, Choice, Choice]:
        client = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0, timeout=5)
        backend = LogprobBackend(client, "m")
        emu.script(reply.logprobs([{"ship": 0.9, "bill": 0.1}, {"ping": 1.0}]))
        first = await guardrail.achoose("Category?", ["billing", "shipping"], backend=backend)
        emu.script(reply.logprobs([{"bill": 0.6, "ship": 0.4}]))
        wrapped = await guardrail.achoose("Category?", ["billing", "shipping"],
                                          backend=LogprobBackend(guardrail.wrap(client), "m"))
        emu.script(reply.logprobs([{"yes": 0.3, "no": 0.7}]))
        threaded = await guardrail.achoose("Agree?", ["yes", "no"], backend=LogprobBackend(oai, "m"))
        emu.script(reply.logprobs([{"yes": 0.5, "no": 0.5}]))
        with pytest.raises(Uncertain):
            await guardrail.achoose("Agree?", ["yes", "no"], backend=backend, threshold=0.9)
        with pytest.raises(TypeError, match="achoose"):
            guardrail.choose("Agree?", ["yes", "no"], backend=backend)
        await client.close()
        return first, wrapped, threaded

    first, wrapped, threaded = asyncio.run(main())
    assert first.best == "shipping" and first.probabilities["shipping"] == pytest.approx(0.9)
    assert wrapped.best == "billing" and threaded.best == "no"
    assert len(emu.requests) == 4


# -- the scoring core, directly ------------------------------------------------------------------------------

def step(token: str | bytes, p: float, *alternatives: tuple[str | bytes, float]) -> Step:
    def raw(t: str | bytes) -> bytes:
        return t if isinstance(t, bytes) else t.encode()

    def lp(x: float) -> float:
        return math.log(x) if x > 0 else -9999.0

    return Step(raw(token), lp(p), tuple((raw(t), lp(q)) for t, q in alternatives))


def test_core_matches_options_split_inside_a_utf8_character() -> None:
    hwan = "환".encode()  # three bytes, generated as two tokens
    steps = (step(hwan[:2], 0.9, (hwan[:2], 0.9), ("배".encode(), 0.1)),
             step(hwan[2:], 1.0, (hwan[2:], 1.0)),
             step("불", 0.8, ("불", 0.8), ("전", 0.2)))
    scored = score(["환불", "환전", "배송"], Answer(steps, True, "환불"))
    assert scored.probabilities == pytest.approx({"환불": 0.72, "환전": 0.18, "배송": 0.1})
    assert scored.matched and set(scored.basis.values()) == {"exact"}


def test_core_counts_very_unlikely_as_zero_and_no_steps_as_no_match() -> None:
    scored = score(["a", "b"], Answer((step("a", 1.0, ("a", 1.0), ("b", 0.0)),), True, "a"))
    assert scored.probabilities == {"a": 1.0, "b": 0.0} and scored.basis["b"] == "floor"
    empty = score(["a", "b"], Answer((), True, ""))
    assert not empty.matched and empty.probabilities == {"a": 0.5, "b": 0.5}


POOL = ["yes", "yes, but", "no", "billing", "billing_dispute", "shipping", "A", "a", "환불", "환불 요청", "N/A"]
PIECES = ["yes", " yes", "Yes", ",", " but", "bill", "Bill", "ing", "_dispute", "_", "ship", "ping", "no", " No",
          "\n", " ", '"', ".", "환", "불", " 요청", "A", "a", " a", "N", "/A", "x", " maybe", ""]
TOKENS = st.one_of(st.sampled_from(PIECES).map(str.encode), st.sampled_from([b"\xed\x99", b"\x98", b"\xff"]),
                   st.binary(max_size=3))
LOGPROBS = st.one_of(st.floats(min_value=-40, max_value=0), st.just(-9999.0), st.just(-math.inf),
                     st.just(math.nan), st.floats(min_value=0, max_value=1e-6))
STEPS = st.builds(Step, TOKENS, LOGPROBS, st.lists(st.tuples(TOKENS, LOGPROBS), max_size=20).map(tuple))


def check_distribution(options: list[str], probabilities: dict[str, float]) -> None:
    assert list(probabilities) == options
    assert all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in probabilities.values())
    assert abs(math.fsum(probabilities.values()) - 1.0) <= 1e-9


@settings(max_examples=400)
@given(options=st.lists(st.sampled_from(POOL), min_size=2, max_size=6, unique=True),
       steps=st.lists(STEPS, max_size=8), finished=st.booleans())
@pytest.mark.slow
def test_core_property_always_a_distribution_over_exactly_the_options(options: list[str], steps: list[Step],
                                                                      finished: bool) -> None:
    scored = score(options, Answer(tuple(steps), finished, ""))
    check_distribution(options, scored.probabilities)
    assert set(scored.basis) == set(options)
    assert set(scored.basis.values()) <= {"exact", "shared", "floor"}
    assert scored.matched == any(b != "floor" for b in scored.basis.values())


def as_response(steps: list[Step], finished: bool) -> dict[str, Any]:
    def entry(token: bytes, logprob: float) -> dict[str, Any]:
        return {"token": token.decode(errors="replace"), "bytes": list(token), "logprob": logprob}

    content = [{**entry(s.token, s.logprob), "top_logprobs": [entry(t, lp) for t, lp in s.alternatives]}
               for s in steps]
    return {"choices": [{"index": 0, "finish_reason": "stop" if finished else "length",
                         "logprobs": {"content": content, "refusal": None},
                         "message": {"role": "assistant", "content": None, "refusal": None}}]}


@settings(max_examples=300)
@given(options=st.lists(st.sampled_from(POOL), min_size=2, max_size=6, unique=True),
       steps=st.lists(STEPS, max_size=8), finished=st.booleans(),
       threshold=st.one_of(st.none(), st.floats(min_value=0, max_value=1)))
@pytest.mark.slow
def test_core_property_choose_raises_only_the_documented_errors(options: list[str], steps: list[Step],
                                                                finished: bool, threshold: float | None) -> None:
    from guardrail.local.choose import api_choice

    try:
        choice = api_choice(options, as_response(steps, finished), threshold)
    except NoOptionMatched as error:
        check_distribution(options, error.choice.probabilities)
        assert set(error.choice.scoring.values()) == {"floor"}
        return
    except Uncertain as error:
        assert threshold is not None and error.choice.confidence < threshold
        check_distribution(options, error.choice.probabilities)
        return
    check_distribution(options, choice.probabilities)
    assert choice.best == max(options, key=lambda o: choice.probabilities[o])
    assert threshold is None or choice.confidence >= threshold


@pytest.fixture(scope="module")
def shared_backend() -> Iterator[tuple[Emulator, LogprobBackend]]:
    with Emulator() as server:
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0, timeout=5)
        yield server, LogprobBackend(client, "m")
        client.close()


TABLE = st.dictionaries(st.sampled_from([p for p in PIECES if p]), st.floats(min_value=0, max_value=1),
                        min_size=1, max_size=20)


@settings(max_examples=60)
@given(options=st.lists(st.sampled_from(POOL), min_size=2, max_size=5, unique=True),
       tables=st.lists(TABLE, min_size=1, max_size=5), truncated=st.booleans())
def test_property_through_the_sdk_and_the_emulator(shared_backend: tuple[Emulator, LogprobBackend],
                                                   options: list[str], tables: list[dict[str, float]],
                                                   truncated: bool) -> None:
    server, backend = shared_backend
    server.script(reply.logprobs(tables, truncated=truncated))
    try:
        choice = guardrail.choose("Pick one.", options, backend=backend)
    except NoOptionMatched as error:
        choice = error.choice
    check_distribution(options, choice.probabilities)
    assert server.pending == 0


# ----------------------------------------------------------------------------- prefixes, Korean, numbers and spaces


def test_api_choose_with_prefixes_korean_numbers_and_spaces() -> None:
    import openai

    from guardrail.testing import Emulator, reply

    with Emulator() as emu:
        client = openai.OpenAI(base_url=emu.openai_base_url, api_key="t", max_retries=0, timeout=10)
        backend = LogprobBackend(client, "gpt-test")

        def choose(steps: list[Any], options: list[str], **kw: Any) -> Choice:
            emu.script(reply.logprobs(steps))
            return guardrail.choose("Q?", options, backend=backend, **kw)

        said = choose([{"yes": 0.9, "no": 0.1}, {" please": 0.95, ".": 0.05}], ["yes", "yes please", "no"])
        assert said.best == "yes please" and said.probabilities["yes please"] == pytest.approx(0.855)
        korean = choose([{"배송": 0.8, "결제": 0.2}, {" 지연": 0.7, "\n": 0.3}], ["배송", "배송 지연", "결제"])
        assert korean.probabilities == pytest.approx({"배송": 0.24, "배송 지연": 0.56, "결제": 0.2})
        numbers = choose([{"3": 0.9, "4": 0.1}, {".": 0.8, "\n": 0.2}, {"5": 1.0}], ["3", "3.5", "4"])
        assert numbers.probabilities == pytest.approx({"3": 0.18, "3.5": 0.72, "4": 0.1})
        spaced = choose([{"yes": 0.6, "no": 0.4}], [" yes", " no"])
        assert spaced.best == " yes" and spaced.confidence == pytest.approx(0.6)
        assert choose([{"yes": 1.0}], ["yes", "no"], threshold=1).probabilities == {"yes": 1.0, "no": 0.0}
        assert choose([{"Yes": 0.5, "No": 0.5}], ["Yes", "No"], threshold=0.5).best == "Yes"  # not below
        with pytest.raises(Uncertain):
            choose([{"Yes": 0.5, "No": 0.5}], ["Yes", "No"], threshold=0.5000001)
        client.close()
