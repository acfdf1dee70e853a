"""A canary end to end: two @structured contract versions, two wrapped clients, two chains, through the real SDKs
against the emulator, with failures scripted per arm so every count is known before the first call."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any

import openai
import pytest
from support.canary_arms import (
    CANDIDATE_MODEL,
    CONTROL_MODEL,
    TicketV1,
    TicketV2,
    keys_for,
    requests_to,
    responder,
)
from support.otel import Points

import guardrail
from guardrail.canary import Canary, Tally
from guardrail.chain import Chain, safe_default, vendor
from guardrail.store import SQLiteStore
from guardrail.testing import Emulator

FAST = guardrail.RetryPolicy(max_tries=1, deadline=20)
NAME = "triage"
SHARE = 0.5


def client(emu: Emulator, *, is_async: bool = False) -> Any:
    cls: Any = openai.AsyncOpenAI if is_async else openai.OpenAI
    return guardrail.wrap(cls(base_url=emu.openai_base_url, api_key="test", timeout=10, max_retries=0), retry=FAST)


def triage_pair(emu: Emulator, *, is_async: bool = False) -> tuple[Any, Any]:
    """Prompt v1 with contract v1 (control) and prompt v2 with contract v2 (candidate), one attempt each."""
    raw = client(emu, is_async=is_async)
    if is_async:
        @guardrail.structured(client=raw, async_client=raw, model=CONTROL_MODEL, max_attempts=1, version="v1")
        async def triage_v1(inquiry: str) -> TicketV1:
            """Triage a customer inquiry: urgency 1-5 and a one-line summary."""

        @guardrail.structured(client=raw, async_client=raw, model=CANDIDATE_MODEL, max_attempts=1, version="v2")
        async def triage_v2(inquiry: str) -> TicketV2:
            """Triage a customer inquiry: urgency 1-5, a one-line summary and a category."""

        return triage_v1, triage_v2

    @guardrail.structured(client=raw, model=CONTROL_MODEL, max_attempts=1, version="v1")
    def sync_v1(inquiry: str) -> TicketV1:
        """Triage a customer inquiry: urgency 1-5 and a one-line summary."""

    @guardrail.structured(client=raw, model=CANDIDATE_MODEL, max_attempts=1, version="v2")
    def sync_v2(inquiry: str) -> TicketV2:
        """Triage a customer inquiry: urgency 1-5, a one-line summary and a category."""

    return sync_v1, sync_v2


def run_pairs(canary: Canary[Any], pairs: int, *, start: int = 0) -> tuple[list[Any], list[BaseException]]:
    """``pairs`` rounds of one control-keyed call then one candidate-keyed call; the n-th call of an arm says
    ``case n`` (from ``start``). Values and errors in the order made."""
    control_keys, candidate_keys = keys_for(NAME, SHARE, False), keys_for(NAME, SHARE, True)
    values: list[Any] = []
    errors: list[BaseException] = []
    for n, control_key, candidate_key in zip(range(start, start + pairs), control_keys, candidate_keys, strict=False):
        for key in (control_key, candidate_key):
            try:
                values.append(canary.routed(key)(f"case {n}"))
            except guardrail.GuardrailError as error:
                errors.append(error)
    return values, errors


def every_tenth(n: int) -> bool:
    return n % 10 == 0


def every_other(n: int) -> bool:
    return n % 2 == 0


def test_a_candidate_that_fails_more_is_rolled_back_at_the_first_count_that_shows_it(
        emu: Emulator, tmp_path: Path, spans: Any, collect: Callable[[], Points]) -> None:
    # control fails cases 0, 10, 20...; the candidate fails every even case. After 20 pairs: 2/20 against 10/20,
    # lower bound of the difference about 0.15 > margin 0.05 at 95 %; after 19 pairs control has < 20 calls.
    emu.responder = responder(every_tenth, every_other)
    control, candidate = triage_pair(emu)
    canary = Canary(control, candidate, share=SHARE, store=SQLiteStore(tmp_path / "canary.db"), name=NAME,
                    margin=0.05, confidence=0.95, min_samples=20)

    values, errors = run_pairs(canary, 19)
    assert canary.state == "live"
    assert canary.status().control == Tally(19, 2) and canary.status().candidate == Tally(19, 10)
    values, errors = run_pairs(canary, 1, start=19)  # case 19: both arms answer well; the counts now decide
    assert [type(v) for v in values] == [TicketV1, TicketV2] and errors == []
    status = canary.status()
    assert status.state == "rolled_back"
    assert (status.control, status.candidate) == (Tally(20, 2), Tally(20, 10))
    assert status.control_failures == {"gave_up": 2} and status.candidate_failures == {"gave_up": 10}
    assert status.decision is not None and status.decision["by"] == "automatic"
    assert status.decision["candidate"] == {"calls": 20, "failures": 10}
    assert status.decision["lower"] > 0.05
    assert requests_to(emu.requests, CANDIDATE_MODEL) == 20

    # rolled back: candidate-keyed calls reach control now (prompt v1, contract v1), and nothing is counted
    values, errors = run_pairs(canary, 10, start=21)
    assert requests_to(emu.requests, CANDIDATE_MODEL) == 20
    assert requests_to(emu.requests, CONTROL_MODEL) == 40
    assert all(isinstance(value, TicketV1) for value in values) and len(values) == 20 - len(errors)
    assert len(errors) == 2  # control's own cases 30 (both keys say "case 30")
    assert canary.status().candidate == Tally(20, 10) and canary.status().control == Tally(20, 2)

    points = collect()
    assert points.count("guardrail.canary.calls", guardrail__canary__arm="candidate",
                        guardrail__canary__outcome="gave_up") == 10
    assert points.count("guardrail.canary.calls", guardrail__canary__arm="candidate",
                        guardrail__canary__outcome="valid") == 10
    assert points.count("guardrail.canary.calls", guardrail__canary__arm="control") == 40
    assert points.count("guardrail.canary.decisions", guardrail__canary__name=NAME,
                        guardrail__canary__decision="rollback") == 1

    finished = spans.get_finished_spans()
    routed = [s for s in finished if s.name == f"guardrail.canary {NAME}"]
    assert len(routed) == 60
    assert sum(1 for s in routed if s.attributes["guardrail.canary.state"] == "rolled_back") == 20
    (decision,) = [s for s in finished if s.name == f"guardrail.canary.decision {NAME}"]
    assert decision.attributes["guardrail.canary.candidate.failures"] == 10
    trigger = next(s for s in routed if s.context.span_id == decision.parent.span_id)
    assert trigger.attributes["guardrail.canary.arm"] == "candidate"
    vendor_spans = [s for s in finished if s.name == f"chat {CANDIDATE_MODEL}"]
    assert len(vendor_spans) == 20
    assert all(s.parent is not None and s.parent.span_id in {r.context.span_id for r in routed}
               for s in vendor_spans)


def test_a_candidate_that_fails_no_more_stays_live(emu: Emulator, tmp_path: Path) -> None:
    emu.responder = responder(every_tenth, every_tenth)
    canary = Canary(*triage_pair(emu), share=SHARE, store=SQLiteStore(tmp_path / "canary.db"), name=NAME,
                    margin=0.02, confidence=0.95, min_samples=20)
    values, errors = run_pairs(canary, 60)
    status = canary.status()
    assert status.state == "live" and status.decision is None
    assert (status.control, status.candidate) == (Tally(60, 6), Tally(60, 6))
    assert status.verdict.action == "continue"
    assert (requests_to(emu.requests, CONTROL_MODEL), requests_to(emu.requests, CANDIDATE_MODEL)) == (60, 60)
    assert len(errors) == 12 and sum(isinstance(v, TicketV2) for v in values) == 54


def test_the_arms_errors_reach_the_caller_unchanged(emu: Emulator) -> None:
    emu.responder = responder(lambda n: False, lambda n: True)
    control, candidate = triage_pair(emu)
    canary = Canary(control, candidate, share=SHARE, name=NAME)
    candidate_key = next(keys_for(NAME, SHARE, True))
    with pytest.raises(guardrail.GaveUp) as raised:
        canary.routed(candidate_key)("case 1")
    with pytest.raises(guardrail.GaveUp) as direct:
        candidate("case 1")
    assert type(raised.value) is type(direct.value) and raised.value.kind == direct.value.kind == "gave_up"


def test_fallback_to_control_answers_from_control_and_counts_only_the_candidate(emu: Emulator) -> None:
    emu.responder = responder(lambda n: False, lambda n: True)
    canary = Canary(*triage_pair(emu), share=SHARE, name=NAME, fallback_to_control=True)
    value = canary.routed(next(keys_for(NAME, SHARE, True)))("case 4")
    assert isinstance(value, TicketV1) and value.summary == "case 4"
    assert [r.model for r in emu.requests] == [CANDIDATE_MODEL, CONTROL_MODEL]
    status = canary.status()
    assert status.candidate == Tally(1, 1) and status.control == Tally(0, 0)


def test_async_functions_are_awaited_and_rolled_back(emu: Emulator) -> None:
    emu.responder = responder(lambda n: False, lambda n: True)
    canary = Canary(*triage_pair(emu, is_async=True), share=SHARE, name=NAME, margin=0.1, min_samples=5)

    async def go() -> tuple[int, int]:
        valid = failed = 0
        for key in islice(keys_for(NAME, SHARE, False), 5):
            assert isinstance(await canary.routed(key)("case 1"), TicketV1)
            valid += 1
        for key in islice(keys_for(NAME, SHARE, True), 8):
            try:
                await canary.routed(key)("case 1")
                valid += 1
            except guardrail.GaveUp:
                failed += 1
        return valid, failed

    # 5 control calls all valid; the candidate fails each call until 5 of them are in: 0/5 vs 5/5 rolls back,
    # and the 3 calls after reach control
    assert asyncio.run(go()) == (8, 5)
    assert canary.state == "rolled_back"
    assert (requests_to(emu.requests, CONTROL_MODEL), requests_to(emu.requests, CANDIDATE_MODEL)) == (8, 5)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_two_wrapped_clients(emulators: tuple[Emulator, Emulator], is_async: bool) -> None:
    old, new = emulators
    old.responder = responder(lambda n: False, lambda n: False)
    new.responder = responder(lambda n: False, lambda n: True)  # every answer of the new client's breaks the contract
    canary = Canary(client(old, is_async=is_async), client(new, is_async=is_async), share=SHARE, name=NAME,
                    margin=0.1, min_samples=5)
    messages = [{"role": "user", "content": "case {}"}]

    def call(key: int, n: int) -> Any:
        return canary.routed(key).chat.completions.create(
            model=CANDIDATE_MODEL, response_model=TicketV2, max_attempts=1,
            messages=[{**messages[0], "content": f"case {n}"}])

    async def run_async(keys: list[int]) -> list[Any]:
        out: list[Any] = []
        for n, key in enumerate(keys):
            try:
                out.append(await call(key, n))
            except guardrail.GaveUp as error:
                out.append(error)
        return out

    def run_sync(keys: list[int]) -> list[Any]:
        out: list[Any] = []
        for n, key in enumerate(keys):
            try:
                out.append(call(key, n))
            except guardrail.GaveUp as error:
                out.append(error)
        return out

    keys = [*islice(keys_for(NAME, SHARE, False), 5), *islice(keys_for(NAME, SHARE, True), 7)]
    out = asyncio.run(run_async(keys)) if is_async else run_sync(keys)
    # control: 5 valid; the candidate fails 5 of 5, which rolls back (0/5 vs 5/5): its last 2 keys reach control
    assert sum(isinstance(value, TicketV2) for value in out) == 7
    assert len(new.requests) == 5 and len(old.requests) == 7
    assert canary.state == "rolled_back" and canary.status().candidate == Tally(5, 5)


def test_two_chains_behind_a_decorated_function_count_a_degraded_answer_as_a_failure(emu: Emulator) -> None:
    emu.responder = responder(lambda n: False, lambda n: True)
    fallback = safe_default({"urgency": 1, "summary": "unknown"})
    control = Chain([vendor(client(emu), CONTROL_MODEL, max_attempts=1), fallback])
    candidate = Chain([vendor(client(emu), CANDIDATE_MODEL, max_attempts=1), fallback])
    canary = Canary(control, candidate, share=SHARE, name=NAME, margin=0.1, min_samples=3,
                    key=lambda output_type, **call: call["inputs"]["customer"])

    @guardrail.structured(chain=canary)
    def triage(inquiry: str, customer: int) -> TicketV1:
        """Triage a customer inquiry: urgency 1-5 and a one-line summary."""

    for customer in islice(keys_for(NAME, SHARE, False), 3):
        assert triage("case 1", customer).summary == "case 1"
    degraded = [triage("case 1", customer) for customer in islice(keys_for(NAME, SHARE, True), 4)]
    assert [t.summary for t in degraded] == ["unknown"] * 3 + ["case 1"]  # the 4th reaches control
    status = canary.status()
    assert status.state == "rolled_back" and status.candidate_failures == {"degraded": 3}


def test_two_chains_behind_an_async_decorated_function(emu: Emulator) -> None:
    emu.responder = responder(lambda n: False, lambda n: True)
    fallback = safe_default({"urgency": 1, "summary": "unknown"})
    control = Chain([vendor(client(emu, is_async=True), CONTROL_MODEL, max_attempts=1), fallback])
    candidate = Chain([vendor(client(emu, is_async=True), CANDIDATE_MODEL, max_attempts=1), fallback])
    canary = Canary(control, candidate, share=SHARE, name=NAME, margin=0.1, min_samples=3,
                    key=lambda output_type, **call: call["inputs"]["customer"])

    @guardrail.structured(chain=canary)
    async def triage(inquiry: str, customer: int) -> TicketV1:
        """Triage a customer inquiry: urgency 1-5 and a one-line summary."""

    async def go() -> list[TicketV1]:
        for customer in islice(keys_for(NAME, SHARE, False), 3):
            assert (await triage("case 1", customer)).summary == "case 1"
        return [await triage("case 1", customer) for customer in islice(keys_for(NAME, SHARE, True), 4)]

    degraded = asyncio.run(go())
    assert [t.summary for t in degraded] == ["unknown"] * 3 + ["case 1"]  # the 4th reaches control
    status = canary.status()
    assert status.state == "rolled_back" and status.candidate_failures == {"degraded": 3}


def test_a_canary_tier_in_a_chain(emulators: tuple[Emulator, Emulator]) -> None:
    old, new = emulators
    old.responder = responder(lambda n: False, lambda n: False)
    new.responder = responder(lambda n: False, lambda n: True)
    canary = Canary(vendor(client(old), CONTROL_MODEL, max_attempts=1),
                    vendor(client(new), CANDIDATE_MODEL, max_attempts=1), share=1.0, name=NAME)
    chain = Chain([canary.tier(), safe_default({"urgency": 1, "summary": "unknown"})])
    result = chain.run(TicketV1, system="Triage.", user="case 2")
    assert result.tier == "safe-default"
    assert result.degraded and result.departures[0].tier == f"canary:{NAME}"
    assert isinstance(result.departures[0].error, guardrail.GaveUp)
    assert canary.status().candidate == Tally(1, 1) and len(old.requests) == 0
