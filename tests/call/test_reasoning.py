"""Reasoning first (``reason_first="two_stage"`` / ``"field"``, :mod:`guardrail.call.reasoning`) on every endpoint,
sync and async, through the wrapped methods, the decorator and the chain, against the emulator.

Two-stage: the first request is free text (no schema, the reasoning's token cap), the second carries the
reasoning as the model's own turn and the contract; a repair re-asks the answer only. The reasoning is on
``Result.reasoning`` and never read as the answer. Field mode: the contract is sent with a leading ``reasoning``
field and the value comes back without it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from support.calls import endpoint_client, endpoint_method

import guardrail
from guardrail.call.reasoning import ANSWER_PROMPT, REASON_PROMPT, Reasoning, reasoned_contract
from guardrail.chain.tiers import Chain, vendor
from guardrail.contract import compile_contract
from guardrail.errors import (
    BudgetExceeded,
    ConfigError,
    DeadlineExceeded,
    GaveUp,
    ReasoningFailed,
    Refused,
    UsageError,
    VendorUnavailable,
)
from guardrail.schema.order import late_reasoning
from guardrail.testing import Emulator, reply

APIS = ["chat", "responses", "messages", "gemini"]
MODES = [pytest.param(False, id="sync"), pytest.param(True, id="async")]
FAST = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.05, deadline=10)
THOUGHT = 'The printer is on fire, so it is urgent: {"label": "wrong", "score": 1} would be a bad answer.'


class Diagnosis(BaseModel):
    label: str
    score: int = Field(ge=1, le=5)


GOOD = {"label": "fire", "score": 5}


def _await(made: Any, is_async: bool) -> Any:
    if not is_async:
        return made

    async def go() -> Any:
        return await made

    return asyncio.run(go())


def _create(emu: Emulator, api: str, is_async: bool, response_model: Any = Diagnosis, **extra: Any) -> Any:
    """``create_with_result`` (Gemini: ``generate_content_with_result``) on a wrapped client of ``api``."""
    if api == "gemini":
        raw = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=emu.gemini_base_url, timeout=5000))
        client: Any = guardrail.wrap(raw, retry=FAST)
        models = client.aio.models if is_async else client.models
        made = models.generate_content_with_result(model="gemini-2.5-flash", contents="triage",
                                                   response_model=response_model, **extra)
    else:
        client = guardrail.wrap(endpoint_client(emu, api, is_async), retry=FAST)
        method, kwargs = endpoint_method(client, api)
        made = method.create_with_result(response_model=response_model, **kwargs, **extra)
    return _await(made, is_async)


# -- two stages ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_two_stages_reason_in_free_text_then_answer_in_the_contract(api: str, is_async: bool) -> None:
    with Emulator() as emu:
        emu.script(reply.text(THOUGHT), reply.answer(json.dumps(GOOD)))
        result = _create(emu, api, is_async, reason_first="two_stage")
        first, second = emu.requests
        served = emu.tokens_served
    assert result.value == Diagnosis(**GOOD) and result.reasoning == THOUGHT
    assert first.schema is None and not first.tools and first.max_tokens == Reasoning().max_tokens
    assert REASON_PROMPT in first.last_user_text
    assert second.schema is not None and set(second.schema["properties"]) == {"label", "score"}
    assert THOUGHT in second.conversation_text and ANSWER_PROMPT in second.last_user_text
    assert result.attempts[0].mode == "reasoning" and len(result.attempts) == 2
    assert (result.usage.input_tokens, result.usage.output_tokens) == served  # both stages, every token
    assert result.usage == result.attempts[0].usage + result.attempts[1].usage
    assert result.vendor_calls == 2


@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_a_repair_re_asks_the_answer_only(api: str, is_async: bool) -> None:
    with Emulator() as emu:
        emu.script(reply.text(THOUGHT), reply.answer('{"label": "fire", "score": 9}'), reply.answer(json.dumps(GOOD)))
        result = _create(emu, api, is_async, reason_first="two_stage")
        requests = emu.requests
        served = emu.tokens_served
    assert len(requests) == 3  # not 4: the reasoning is not asked again
    assert result.value == Diagnosis(**GOOD) and result.reasoning == THOUGHT
    assert THOUGHT in requests[2].conversation_text and "score" in requests[2].last_user_text
    assert [attempt.number for attempt in result.attempts] == [1, 2, 3]
    assert (result.usage.input_tokens, result.usage.output_tokens) == served


def test_the_reasoning_options_are_sent_as_given() -> None:
    spec = Reasoning(max_tokens=77, prompt="Think aloud.", follow_up="Answer now.")
    with Emulator() as emu:
        emu.script(reply.text(THOUGHT), reply.answer(json.dumps(GOOD)))
        result = _create(emu, "chat", False, reason_first=spec)
        first, second = emu.requests
    assert result.reasoning == THOUGHT
    assert first.max_tokens == 77 and first.last_user_text == "Think aloud."
    assert second.last_user_text == "Answer now." and second.max_tokens is None  # the caller's own limit: none


@pytest.mark.parametrize("api", APIS)
def test_an_empty_reasoning_is_a_typed_error_and_the_answer_is_not_asked(api: str) -> None:
    with Emulator() as emu:
        emu.script(reply.text("   "), reply.answer(json.dumps(GOOD)))
        with pytest.raises(ReasoningFailed) as caught:
            _create(emu, api, False, reason_first="two_stage")
        assert len(emu.requests) == 1
    assert [attempt.mode for attempt in caught.value.outcome.attempts] == ["reasoning"]


def test_a_transport_failure_in_the_reasoning_stage_is_the_usual_typed_error() -> None:
    with Emulator() as emu:
        emu.script(reply.server_error(503), reply.server_error(503))
        with pytest.raises(VendorUnavailable) as caught:
            _create(emu, "chat", False, reason_first="two_stage")
        assert len(emu.requests) == 2  # FAST.max_tries
    assert caught.value.outcome.attempts[0].mode == "reasoning"


def test_the_calls_deadline_covers_the_reasoning_stage() -> None:
    with Emulator() as emu:
        emu.script(reply.text(THOUGHT).after(5), reply.answer(json.dumps(GOOD)))
        client = guardrail.wrap(endpoint_client(emu, "chat", False),
                                retry=guardrail.RetryPolicy(max_tries=1, deadline=0.3))
        method, kwargs = endpoint_method(client, "chat")
        with pytest.raises(DeadlineExceeded) as caught:
            method.create(response_model=Diagnosis, reason_first="two_stage", **kwargs)
        assert len(emu.requests) == 1  # the answer was never asked
    assert caught.value.outcome.attempts[0].mode == "reasoning"


def test_a_refusal_in_the_reasoning_stage_ends_the_call() -> None:
    with Emulator() as emu:
        emu.script(reply.refusal("I can't help with that."))
        with pytest.raises(Refused):
            _create(emu, "chat", False, reason_first="two_stage")
        assert len(emu.requests) == 1


def test_an_answer_stage_that_gives_up_keeps_both_stages_on_the_error() -> None:
    with Emulator() as emu:
        emu.script(reply.text(THOUGHT), *(reply.answer("no json here") for _ in range(3)))
        with pytest.raises(GaveUp) as caught:
            _create(emu, "chat", False, reason_first="two_stage")
    outcome = caught.value.outcome
    assert outcome.attempts[0].mode == "reasoning" and len(outcome.attempts) == 4
    assert outcome.usage == sum((attempt.usage for attempt in outcome.attempts), guardrail.Usage())


def test_the_budget_covers_both_stages() -> None:
    with Emulator() as emu:
        emu.script(reply.text(THOUGHT, usage=(40, 900)), reply.answer(json.dumps(GOOD)))
        with pytest.raises(BudgetExceeded) as caught:  # the reasoning used what the answer would need
            _create(emu, "chat", False, reason_first="two_stage", budget=guardrail.Budget(max_tokens=1000))
        first = emu.requests[0]
        assert len(emu.requests) == 1
    assert first.max_tokens is not None and first.max_tokens < 1000  # lowered to what the budget leaves
    assert caught.value.outcome.usage.total_tokens == 940


def test_a_dollar_budget_covers_both_stages_and_the_cost_counts_both() -> None:
    with Emulator() as emu:  # gpt-4o: $2.50 / $10 per million tokens
        emu.script(reply.text(THOUGHT, usage=(40, 100)), reply.answer(json.dumps(GOOD), usage=(200, 10)))
        result = _create(emu, "chat", False, reason_first="two_stage")
        emu.script(reply.text(THOUGHT, usage=(40, 900)), reply.answer(json.dumps(GOOD)))
        with pytest.raises(BudgetExceeded):  # $0.0091 of $0.01 spent reasoning: too little left to answer
            _create(emu, "chat", False, reason_first="two_stage", budget=guardrail.Budget(max_usd=0.01))
        assert len(emu.requests) == 3
    assert result.cost_usd == pytest.approx((40 * 2.5 + 100 * 10 + 200 * 2.5 + 10 * 10) / 1e6)


def test_the_reasoning_stage_stops_before_a_budget_it_cannot_keep() -> None:
    with Emulator() as emu:
        with pytest.raises(BudgetExceeded):
            _create(emu, "chat", False, reason_first="two_stage", budget=guardrail.Budget(max_tokens=5))
        assert emu.requests == []


# -- field mode ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_field_mode_sends_a_leading_reasoning_field_and_returns_the_contract_without_it(api: str,
                                                                                      is_async: bool) -> None:
    with Emulator() as emu:
        emu.script(reply.answer(json.dumps({"reasoning": THOUGHT, **GOOD})))
        result = _create(emu, api, is_async, reason_first="field")
        (request,) = emu.requests
    assert next(iter(request.schema["properties"])) == "reasoning"
    assert set(request.schema["properties"]) == {"reasoning", "label", "score"}
    assert type(result.value) is Diagnosis and result.value == Diagnosis(**GOOD)
    assert "reasoning" not in result.value.model_dump() and result.reasoning == THOUGHT


def test_field_mode_needs_a_model_contract_and_a_free_field_name() -> None:
    class Noted(BaseModel):
        reasoning: str

    with Emulator() as emu:
        with pytest.raises(UsageError, match="two_stage"):
            _create(emu, "chat", False, response_model=list[Diagnosis], reason_first="field")
        with pytest.raises(UsageError, match="already has a field"):
            _create(emu, "chat", False, response_model=Noted, reason_first="field")
        assert emu.requests == []


# -- what is refused -------------------------------------------------------------------------------------------------
def test_unknown_reasoning_and_the_streams_are_refused_before_any_request() -> None:
    with Emulator() as emu:
        client = guardrail.wrap(endpoint_client(emu, "chat", False))
        method, kwargs = endpoint_method(client, "chat")
        with pytest.raises(UsageError, match="two_stage"):
            method.create(response_model=Diagnosis, reason_first="deep", **kwargs)
        with pytest.raises(UsageError, match="reason_first="):
            method.create_partial(response_model=Diagnosis, reason_first="two_stage", **kwargs)
        with pytest.raises(UsageError, match="reason_first="):
            method.with_raw_response.create(response_model=Diagnosis, reason_first="two_stage", **kwargs)
        with pytest.raises(UsageError, match="create_iterable"):  # an item stream: never silently without it
            method.create_iterable(response_model=Diagnosis, reason_first="field", **kwargs)
        with pytest.raises(UsageError, match="response_model"):
            method.create(reason_first="two_stage", **kwargs)
        assert emu.requests == []
    with pytest.raises(ConfigError):
        Reasoning(max_tokens=0)


# -- the decorator and the chain -------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
def test_the_decorator_reasons_first(is_async: bool) -> None:
    with Emulator() as emu:
        emu.script(reply.text(THOUGHT), reply.answer(json.dumps(GOOD)))
        client = (openai.AsyncOpenAI if is_async else openai.OpenAI)(base_url=emu.openai_base_url, api_key="t")

        if is_async:
            @guardrail.structured(async_client=client, model="gpt-4o", reason_first="two_stage")
            async def diagnose(report: str) -> Diagnosis:
                """Diagnose the report."""
                raise NotImplementedError

            result = asyncio.run(diagnose.with_result("the printer burns"))
        else:
            @guardrail.structured(client=client, model="gpt-4o", reason_first="two_stage")
            def diagnose(report: str) -> Diagnosis:  # type: ignore[misc]
                """Diagnose the report."""
                raise NotImplementedError

            result = diagnose.with_result("the printer burns")
        first, second = emu.requests
    assert result.value == Diagnosis(**GOOD) and result.reasoning == THOUGHT
    assert "the printer burns" in first.conversation_text and first.schema is None
    assert THOUGHT in second.conversation_text and second.schema is not None


@pytest.mark.parametrize("is_async", MODES)
def test_the_chain_reasons_first_and_keeps_the_reasoning(is_async: bool) -> None:
    with Emulator() as emu:
        emu.script(reply.text(THOUGHT), reply.answer('{"label": "fire", "score": 0}'), reply.answer(json.dumps(GOOD)))
        kind: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        chain = Chain([vendor(kind(base_url=emu.anthropic_base_url, api_key="t", timeout=5), "claude-haiku-4-5",
                              max_tokens=300)], reason_first="two_stage")
        if is_async:
            done = asyncio.run(chain.arun(Diagnosis, system="You diagnose.", user="the printer burns"))
        else:
            done = chain.run(Diagnosis, system="You diagnose.", user="the printer burns")
        assert len(emu.requests) == 3
    assert done.value == Diagnosis(**GOOD) and done.reasoning == THOUGHT and done.detail.reasoning == THOUGHT


def test_a_call_of_the_chain_may_choose_field_mode() -> None:
    with Emulator() as emu:
        emu.script(reply.answer(json.dumps({"reasoning": THOUGHT, **GOOD})))
        chain = Chain([vendor(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), "gpt-4o")])
        done = chain.run(Diagnosis, system="You diagnose.", user="the printer burns", reason_first="field")
    assert type(done.value) is Diagnosis and done.reasoning == THOUGHT


# -- the answer never comes from the reasoning -----------------------------------------------------------------------
JSONISH = st.one_of(
    st.text(),
    st.from_regex(r'\{"label": "[a-z]{1,5}", "score": [1-5]\}', fullmatch=True),
    st.builds(lambda inner: f"```json\n{inner}\n```", st.text(alphabet='{}[]":,0123456789 labelscore\n')),
    st.builds(lambda a, b: f"{a} {json.dumps(GOOD)} {b}", st.text(max_size=20), st.text(max_size=20)),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(thought=JSONISH.filter(lambda text: text.strip() != ""))
def test_the_answer_is_never_taken_from_the_reasoning(thought: str) -> None:
    with Emulator() as emu:
        # the answer stage never answers JSON: whatever the reasoning holds, no value may come back
        emu.script(reply.text(thought), reply.answer("I will not answer in JSON."))
        with pytest.raises(GaveUp):
            _create(emu, "chat", False, reason_first="two_stage", max_attempts=1)
        emu.script(reply.text(thought), reply.answer('{"label": "the-answer", "score": 2}'))
        result = _create(emu, "chat", False, reason_first="two_stage")
    assert result.value == Diagnosis(label="the-answer", score=2) and result.reasoning == thought.strip()


def test_the_field_mode_contract_passes_the_schema_order_check() -> None:
    class Late(BaseModel):
        label: str
        reasoning: str

    extended = reasoned_contract(Diagnosis)
    assert late_reasoning(compile_contract(extended).schema) == []  # what `guardrail schema` checks
    (late,) = late_reasoning(compile_contract(Late).schema)
    assert "reason_first='field'" in str(late)  # the warning points to this option
