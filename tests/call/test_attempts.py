"""The attempt loop on every endpoint: how many attempts, the output limit after a truncation, budgets that stop
before they are passed and cap the request, the deadline over a stalled vendor, and the temperature of repairs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.calls import (
    APIS,
    PRINTER_BAD,
    PRINTER_GOOD,
    PRINTER_TICKET,
    Ticket,
    api_method,
    printer_args,
    printer_call,
    wrapped_client,
)

import guardrail
from guardrail.errors import DeadlineExceeded, OutputTruncated
from guardrail.outcome import Price
from guardrail.testing import Emulator, reply

# ------------------------------------------------------------------------------------------ attempts and truncation


@pytest.mark.parametrize("api", APIS)
def test_max_attempts_one(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_BAD), reply.answer(PRINTER_GOOD))
    with pytest.raises(guardrail.GaveUp) as caught:
        printer_call(emu, api, max_attempts=1)
    assert type(caught.value) is guardrail.GaveUp and len(emu.requests) == 1
    assert caught.value.raw_outputs == [PRINTER_BAD]
    emu.reset()
    emu.script(reply.truncated('{"title"'), reply.answer(PRINTER_GOOD))
    with pytest.raises(OutputTruncated):
        printer_call(emu, api, max_attempts=1)
    assert len(emu.requests) == 1


def test_max_attempts_zero_is_refused() -> None:
    with pytest.raises(ValueError):
        guardrail.Settings(max_attempts=0)


@pytest.mark.parametrize("api", APIS)
def test_truncation_without_a_caller_limit_raises_a_limit_within_the_ceiling(emu: Emulator, api: str) -> None:
    emu.script(reply.truncated('{"title": "Printer', usage=(10, 3000)), reply.answer(PRINTER_GOOD))
    kwargs = printer_args(api)
    kwargs.pop("max_tokens", None)
    if api == "messages":
        kwargs["max_tokens"] = 3000
    result = api_method(wrapped_client(emu, api, settings=guardrail.Settings(max_tokens_ceiling=4000)), api
                    ).create_with_result(response_model=Ticket, **kwargs)
    assert result.value == PRINTER_TICKET
    assert emu.requests[1].max_tokens == 4000


@pytest.mark.parametrize("api", APIS)
def test_each_attempt_records_the_output_limit_it_was_sent_with(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_BAD), reply.truncated('{"title"'), reply.answer(PRINTER_GOOD))
    kw: dict[str, Any] = {"max_output_tokens": 50} if api == "responses" else {"max_tokens": 50}
    result = printer_call(emu, api, **kw)
    assert [r.max_tokens for r in emu.requests] == [50, 50, 100]
    assert [a.max_tokens for a in result.attempts] == [50, 50, 100]


# ---------------------------------------------------------------------------------------------------------- budgets


@pytest.mark.parametrize("api", APIS)
def test_a_cost_budget_stops_before_the_attempt_that_could_pass_it(emu: Emulator, api: str) -> None:
    price = Price(input_per_mtok=1.0, output_per_mtok=4.0)
    emu.script(reply.answer(PRINTER_BAD, usage=(2000, 500)), reply.answer(PRINTER_GOOD, usage=(150, 40)))
    budget = guardrail.Budget(max_cost=0.005, price=price)  # the first answer costs 0.002 + 0.002
    with pytest.raises(guardrail.BudgetExceeded) as caught:
        printer_call(emu, api, budget=budget)
    assert len(emu.requests) == 1
    outcome = caught.value.outcome
    assert outcome.usage.cost(price) == pytest.approx(0.004)
    assert len(outcome.attempts) == 1 and outcome.attempts[0].error_kind == "schema_violation"


@pytest.mark.parametrize("api", APIS)
def test_a_budget_too_small_for_the_first_request_sends_nothing(emu: Emulator, api: str) -> None:
    with pytest.raises(guardrail.BudgetExceeded) as caught:
        printer_call(emu, api, budget=guardrail.Budget(max_tokens=10))
    assert emu.requests == [] and caught.value.outcome.attempts == ()


@pytest.mark.parametrize("api", APIS)
def test_a_token_and_cost_budget_caps_the_requests_output_limit(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_GOOD, usage=(50, 20)))
    price = Price(input_per_mtok=1.0, output_per_mtok=2.0)
    budget = guardrail.Budget(max_tokens=100_000, max_cost=0.002, price=price)  # cost allows 1000 tokens
    printer_call(emu, api, budget=budget)
    sent = emu.requests[0].max_tokens
    assert sent is not None and sent < 1000


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_generous_budget_never_raises_the_output_limit_above_the_ceiling(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_GOOD))
    price = Price(input_per_mtok=2.5, output_per_mtok=10.0)
    printer_call(emu, api, budget=guardrail.Budget(max_cost=5.0, price=price))  # 500k tokens' worth
    sent = emu.requests[0].max_tokens
    assert sent is None or sent <= guardrail.Settings().max_tokens_ceiling, sent


def test_a_budget_keeps_the_callers_chat_max_tokens_key(emu: Emulator) -> None:
    emu.script(reply.answer(PRINTER_GOOD, usage=(50, 20)))
    printer_call(emu, "chat", max_tokens=4000, budget=guardrail.Budget(max_tokens=1000))
    body = emu.requests[0].body
    assert "max_completion_tokens" not in body and body["max_tokens"] < 1000


# --------------------------------------------------------------------------------------------------------- deadline


@pytest.mark.parametrize("api", ["chat", "messages"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_the_deadline_cuts_a_stalled_vendor_short(emu: Emulator, api: str, is_async: bool) -> None:
    # each stall ends in a good answer after 3 s, well within the SDK's 5 s timeout: only the deadline can cut it
    emu.script(*(reply.timeout(3, then=reply.answer(PRINTER_GOOD)) for _ in range(4)))
    policy = guardrail.RetryPolicy(max_tries=4, initial_wait=0.01, max_wait=0.05, deadline=0.25)

    async def run_async() -> Any:
        target = api_method(wrapped_client(emu, api, is_async=True, retry=policy), api)
        return await target.create(response_model=Ticket, **printer_args(api))

    with pytest.raises(DeadlineExceeded) as caught:
        if is_async:
            asyncio.run(run_async())
        else:
            api_method(wrapped_client(emu, api, retry=policy), api).create(response_model=Ticket, **printer_args(api))
    assert caught.value.code == "deadline"
    # one HTTP try, cut in flight (its good answer would have come at 3 s) and never retried past the deadline;
    # the emulator may not even have read it when a loaded machine spends the 0.25 s before it is sent
    assert caught.value.outcome.vendor_calls == 1 and len(emu.requests) <= 1


# ------------------------------------------------------------------------------------------------------ temperature


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_repairs_lower_the_temperature_from_one_when_the_caller_set_none(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_BAD), reply.answer(PRINTER_BAD), reply.answer(PRINTER_GOOD))
    result = printer_call(emu, api)
    assert [r.temperature for r in emu.requests] == [None, 0.5, 0.25]
    assert [a.temperature for a in result.attempts] == [None, 0.5, 0.25]


def test_truncation_keeps_the_temperature_and_conversation(emu: Emulator) -> None:
    emu.script(reply.truncated('{"t'), reply.answer(PRINTER_GOOD))
    printer_call(emu, "chat", temperature=0.7, max_tokens=30)
    first, second = emu.requests
    assert first.temperature == second.temperature == 0.7
    assert first.body["messages"] == second.body["messages"]


def test_anthropic_requests_never_carry_a_temperature(emu: Emulator) -> None:
    emu.script(reply.answer(PRINTER_BAD), reply.answer(PRINTER_GOOD))
    printer_call(emu, "messages")
    assert all("temperature" not in r.body for r in emu.requests)
