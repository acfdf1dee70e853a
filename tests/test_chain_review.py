"""Review of the degradation chain (issue 6): tiers left / not left, breaker accounting, deadline, budget,
ChainExhausted, rule-engine and safe-default tiers, decorator and wrapper call shapes, threads, hostile input.

Real code paths only: the vendor emulator with the real openai/anthropic SDKs. Known bugs are strict xfails."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from helpers import RecordingRetry, finishes
from pydantic import BaseModel, Field

import guardrail
from guardrail.chain.fallback import RuleEngine, load_rule_set
from guardrail.chain.tiers import Chain, ChainExhausted, CircuitBreaker, rule_engine, safe_default, vendor
from guardrail.cli.triage import Ticket as DemoTicket
from guardrail.errors import DeadlineExceeded, Declined, OutputTruncated, VendorUnavailable
from guardrail.gates.semantic import exit_status, relation
from guardrail.testing import Emulator, reply

ROOT = Path(__file__).resolve().parents[1]


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


GOOD = '{"urgency": 3, "summary": "late parcel"}'
FAST = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.05, deadline=10)
SYSTEM, USER = "Triage the inquiry.", 'inquiry = "late parcel"'


@pytest.fixture
def emus() -> Iterator[tuple[Emulator, Emulator]]:
    with Emulator() as primary, Emulator() as backup:
        yield primary, backup


def primary_tier(emu: Emulator, **kw: Any) -> guardrail.chain.tiers.Tier:
    opts: dict[str, Any] = {"name": "primary", "max_attempts": 2, "retry": FAST, "max_tokens": 50}
    opts.update(kw)
    timeout = opts.pop("timeout", 5)
    return vendor(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=timeout), "gpt-4o", **opts)


def backup_tier(emu: Emulator, **kw: Any) -> guardrail.chain.tiers.Tier:
    opts: dict[str, Any] = {"name": "backup", "max_attempts": 2, "retry": FAST, "max_tokens": 50}
    opts.update(kw)
    return vendor(anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="t", timeout=5), "claude-haiku-4-5",
                  **opts)


def default() -> guardrail.chain.tiers.Tier:
    return safe_default({"urgency": 1, "summary": ""})


def triage_engine() -> RuleEngine:
    return RuleEngine(load_rule_set(ROOT / "fallbacks" / "ticket_triage.toml"))


# ------------------------------------------------------------------------------------ answers are never routed around


def test_refusal_in_the_backup_tier_ends_the_chain(emus: tuple[Emulator, Emulator]) -> None:
    primary, backup = emus
    primary.script(reply.server_error(500), reply.server_error(500))
    backup.script(reply.refusal("no"))
    with pytest.raises(guardrail.Refused):
        Chain([primary_tier(primary), backup_tier(backup), default()]).run(Ticket, system=SYSTEM, user=USER)


def test_declined_is_an_answer_and_the_backup_is_never_called(emus: tuple[Emulator, Emulator]) -> None:
    class Answer(BaseModel):
        status: str
        text: str

    primary, backup = emus
    primary.script(reply.answer('{"status": "unknown", "text": ""}'))
    backup.script(reply.answer('{"status": "answered", "text": "x"}'))
    chain = Chain([primary_tier(primary), backup_tier(backup), safe_default({"status": "answered", "text": ""})],
                  rules=[exit_status("status")])
    with pytest.raises(Declined):
        chain.run(Answer, system=SYSTEM, user=USER)
    assert backup.requests == []


def test_denied_from_a_safe_default_factory_is_raised_not_swallowed() -> None:
    def factory() -> Any:
        raise guardrail.Denied("denied", tool="t", request_id="r")

    with pytest.raises(guardrail.Denied):
        Chain([safe_default(factory)]).run(Ticket, system="", user="")


def test_denied_inside_a_rule_function_is_an_answer(tmp_path: Path) -> None:
    from guardrail.chain.fallback import rule_function

    @rule_function("review_denies", replace=True)
    def denies(inputs: Any) -> Any:
        raise guardrail.Denied("denied", tool="lookup", request_id="r")

    path = tmp_path / "d.toml"
    path.write_text('name = "d"\nversion = "1"\nfunction = "review_denies"\n', encoding="utf-8")
    chain = Chain([rule_engine(RuleEngine(load_rule_set(path))), default()])
    with pytest.raises(guardrail.Denied):
        chain.run(Ticket, system="", user="")


# ---------------------------------------------------------------------------------------------- faults are left


@pytest.mark.parametrize(("script", "error"), [
    (lambda: [reply.server_error(500), reply.server_error(503)], VendorUnavailable),
    (lambda: [reply.answer('{"urgency": 9}'), reply.answer('{"urgency": 0}')], guardrail.GaveUp),
    (lambda: [reply.truncated('{"urgency": 3, "su'), reply.truncated('{"urgency": 3, "sum')],
     OutputTruncated),
    (lambda: [reply.schema_rejected()] * 4, guardrail.VendorError),
], ids=["5xx", "never-valid", "truncation", "schema-rejected"])
def test_each_fault_leaves_the_tier_with_a_typed_departure(emus: tuple[Emulator, Emulator], script: Any,
                                                            error: type) -> None:
    primary, backup = emus
    primary.script(*script())
    backup.script(reply.answer(GOOD))
    result = Chain([primary_tier(primary), backup_tier(backup), default()]).run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "backup" and result.value == Ticket(urgency=3, summary="late parcel")
    assert isinstance(result.departures[0].error, error)
    assert result.departures[0].tier == "primary"


def test_budget_exceeded_leaves_the_tier(emus: tuple[Emulator, Emulator]) -> None:
    primary, backup = emus
    backup.script(reply.answer(GOOD))
    chain = Chain([primary_tier(primary, budget=guardrail.Budget(max_tokens=5)), backup_tier(backup)])
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "backup" and isinstance(result.departures[0].error, guardrail.BudgetExceeded)
    assert primary.requests == []


# ------------------------------------------------------------------------------------------- breaker accounting


def test_a_refusal_counts_as_a_breaker_success(emus: tuple[Emulator, Emulator]) -> None:
    primary, _ = emus
    breaker = CircuitBreaker(failures=1, reset_after=60)
    primary.script(reply.refusal("no"))
    with pytest.raises(guardrail.Refused):
        Chain([primary_tier(primary, breaker=breaker), default()]).run(Ticket, system=SYSTEM, user=USER)
    assert breaker.state == "closed"


def test_a_validation_failure_counts_as_a_breaker_failure(emus: tuple[Emulator, Emulator]) -> None:
    # current behaviour (the issue only says "K consecutive failures"): a tier left on validation opens it
    primary, _ = emus
    breaker = CircuitBreaker(failures=1, reset_after=60)
    primary.script(reply.answer('{"urgency": 9}'), reply.answer('{"urgency": 9}'))
    result = Chain([primary_tier(primary, breaker=breaker), default()]).run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default" and breaker.state == "open"


def test_a_budget_stop_before_any_call_is_not_a_vendor_failure(emus: tuple[Emulator, Emulator]) -> None:
    primary, _ = emus
    breaker = CircuitBreaker(failures=1, reset_after=60)
    chain = Chain([primary_tier(primary, breaker=breaker, budget=guardrail.Budget(max_tokens=5)), default()])
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default" and primary.requests == []
    assert breaker.state == "closed"


def test_deadline_exhausted_skips_the_vendor_without_spending_the_half_open_probe(
        emus: tuple[Emulator, Emulator]) -> None:
    primary, backup = emus
    breaker = CircuitBreaker(failures=1, reset_after=0.05)
    breaker.record(False)
    time.sleep(0.06)
    backup.script(reply.answer(GOOD).after(0.3))
    chain = Chain([backup_tier(backup), primary_tier(primary, breaker=breaker), default()], deadline=0.2)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default"
    assert [d.reason for d in result.departures][1] == "deadline"
    assert primary.requests == []
    assert breaker.state == "half_open" and breaker.allow()  # the probe is still available


def test_half_open_breaker_admits_one_probe_under_asyncio_gather(emus: tuple[Emulator, Emulator]) -> None:
    primary, backup = emus
    breaker = CircuitBreaker(failures=1, reset_after=0.05)
    breaker.record(False)
    time.sleep(0.06)
    primary.responder = lambda request: reply.answer(GOOD).after(0.4)
    backup.responder = lambda request: reply.answer(GOOD)
    chain = Chain([primary_tier(primary, breaker=breaker), backup_tier(backup), default()])

    @guardrail.structured(chain=chain)
    async def triage(inquiry: str) -> Ticket:
        """Triage the inquiry."""
        raise NotImplementedError

    async def main() -> list[Any]:
        return await asyncio.gather(*(triage.with_result(f"parcel {i}") for i in range(6)))

    results = asyncio.run(main())
    assert len(primary.requests) == 1
    assert sorted(r.tier for r in results) == ["backup"] * 5 + ["primary"]
    assert all(r.value == Ticket(urgency=3, summary="late parcel") for r in results)
    assert breaker.state == "closed"


# -------------------------------------------------------------------------------------------------- deadline


@pytest.mark.slow
def test_stalled_tier_longer_than_the_deadline_with_a_lax_sdk_timeout(emus: tuple[Emulator, Emulator]) -> None:
    primary, _ = emus
    # a good answer after an 8 s stall, well within the 60 s SDK timeout: only the chain's deadline can cut it
    primary.script(reply.timeout(8, then=reply.answer(GOOD)))
    chain = Chain([primary_tier(primary, timeout=60), default()], deadline=1.0)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default"
    assert isinstance(result.departures[0].error, DeadlineExceeded)
    assert len(primary.requests) == 1  # cut in flight, not retried after the deadline


@pytest.mark.slow
def test_the_deadline_covers_all_attempts_of_a_tier(emus: tuple[Emulator, Emulator]) -> None:
    primary, _ = emus
    primary.script(reply.answer('{"urgency": 9}').after(0.7), reply.answer(GOOD).after(0.7))
    chain = Chain([primary_tier(primary), default()], deadline=1.0)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    # each attempt alone fits in the deadline (0.7 s), both together do not: a deadline per attempt would
    # have let the repair return the good answer
    assert result.tier == "safe-default"
    assert isinstance(result.departures[0].error, DeadlineExceeded)
    assert 1 <= len(primary.requests) <= 2


def test_429_with_retry_after_beyond_what_is_left_leaves_at_once(emus: tuple[Emulator, Emulator]) -> None:
    primary, backup = emus
    patient = RecordingRetry(max_tries=3, initial_wait=0.01, max_wait=30, deadline=30)
    primary.script(reply.rate_limited(retry_after=4), reply.answer(GOOD))
    backup.script(reply.answer(GOOD))
    chain = Chain([primary_tier(primary, retry=patient), backup_tier(backup), default()], deadline=2.0)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "backup" and isinstance(result.departures[0].error, VendorUnavailable)
    assert result.departures[0].error.status == 429
    # the tier's own policy would wait the 4 s; the chain's 2 s left made it leave without starting the wait
    assert patient.waits == [] and len(primary.requests) == 1 and len(backup.requests) == 1


# ---------------------------------------------------------------------------------------------------- budget


def test_tokens_spent_by_failing_tiers_leave_later_tiers_less(emus: tuple[Emulator, Emulator]) -> None:
    primary, backup = emus
    primary.script(reply.answer('{"urgency": 9}', usage=(400, 50)), reply.answer('{"urgency": 9}', usage=(400, 50)))
    backup.script(reply.answer(GOOD, usage=(100, 20)))
    chain = Chain([primary_tier(primary), backup_tier(backup), default()], budget=guardrail.Budget(max_tokens=950))
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default" and isinstance(result.departures[1].error, guardrail.BudgetExceeded)
    assert backup.requests == []
    # with room left the backup does answer
    primary.script(reply.answer('{"urgency": 9}', usage=(400, 50)), reply.answer('{"urgency": 9}', usage=(400, 50)))
    backup.script(reply.answer(GOOD, usage=(100, 20)))
    chain = Chain([primary_tier(primary), backup_tier(backup), default()], budget=guardrail.Budget(max_tokens=5000))
    assert chain.run(Ticket, system=SYSTEM, user=USER).tier == "backup"


def test_a_tiers_own_budget_still_applies_under_a_chain_budget(emus: tuple[Emulator, Emulator]) -> None:
    primary, _ = emus
    primary.script(reply.answer(GOOD, usage=(100, 20)))
    chain = Chain([primary_tier(primary, budget=guardrail.Budget(max_tokens=5)), default()],
                  budget=guardrail.Budget(max_tokens=100_000))
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default" and primary.requests == []


# ------------------------------------------------------------------------------------------------ ChainExhausted


def test_chain_exhausted_carries_every_failure_with_raw_outputs(emus: tuple[Emulator, Emulator],
                                                               tmp_path: Path) -> None:
    primary, backup = emus
    primary.script(reply.truncated('{"urgency": 3, "su'), reply.truncated('{"urgency": 3, "sum'))
    backup.script(reply.answer('{"urgency": 7}'), reply.answer('{"urgency": "x"}'))
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\nversion = "1"\ninput = "input"\n[defaults]\nurgency = 9\nsummary = "s"\n',
                    encoding="utf-8")
    chain = Chain([primary_tier(primary), backup_tier(backup), rule_engine(RuleEngine(load_rule_set(path))),
                   safe_default({"urgency": 0, "summary": ""})])
    with pytest.raises(ChainExhausted) as caught:
        chain.run(Ticket, system=SYSTEM, user=USER)
    d = caught.value.departures
    assert [x.tier for x in d] == ["primary", "backup", "rules", "safe-default"]
    assert isinstance(d[0].error, OutputTruncated) and len(d[0].error.raw_outputs) == 2
    assert d[1].error.raw_outputs == ['{"urgency": 7}', '{"urgency": "x"}']
    assert len(caught.value.exceptions) == 4
    assert all(x.reason for x in d)


# --------------------------------------------------------------------------------------- safe default, rule tier


def test_safe_default_never_runs_a_tool_and_is_marked_degraded(emus: tuple[Emulator, Emulator]) -> None:
    from guardrail.tools.execute import ToolRegistry, tool

    ran: list[Any] = []
    registry = ToolRegistry()

    @tool(name="refund", registry=registry)
    def refund(order_id: str) -> str:
        ran.append(order_id)
        return "ok"

    class Action(BaseModel):
        tool: str
        arguments: dict[str, str]

    primary, _ = emus
    primary.script(reply.server_error(500), reply.server_error(500))
    chain = Chain([primary_tier(primary), safe_default({"tool": "refund", "arguments": {"order_id": "1"}})])
    result = chain.run(Action, system=SYSTEM, user=USER)
    assert result.tier == "safe-default" and result.degraded and "unavailable" in (result.notice or "")
    assert isinstance(result.value, Action) and ran == []


def test_rule_tier_value_refused_by_contract_is_not_returned(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\nversion = "1"\ninput = "input"\n[defaults]\nurgency = 9\nsummary = "s"\n',
                    encoding="utf-8")
    result = Chain([rule_engine(RuleEngine(load_rule_set(path))), default()]).run(Ticket, system="", user="x",
                                                                           inputs={"input": "x"})
    assert result.tier == "safe-default" and result.departures[0].tier == "rules"


def test_rule_tier_value_breaking_semantic_rules_is_not_returned(tmp_path: Path) -> None:
    class Bounded(BaseModel):
        urgency: int
        minimum: int

    path = tmp_path / "r.toml"
    path.write_text('name = "r"\nversion = "1"\ninput = "input"\n[defaults]\nurgency = 1\nminimum = 3\n',
                    encoding="utf-8")
    chain = Chain([rule_engine(RuleEngine(load_rule_set(path))), safe_default({"urgency": 4, "minimum": 3})],
                  rules=[relation("urgency", ">=", "minimum")])
    result = chain.run(Bounded, system="", user="x", inputs={"input": "x"})
    assert result.tier == "safe-default" and result.value.urgency == 4
    assert "rules" in result.departures[0].reason or result.departures[0].tier == "rules"


# ----------------------------------------------------------------------------------- decorator and call shapes


def test_decorator_with_chain_async_function_and_methods(emus: tuple[Emulator, Emulator]) -> None:
    primary, _ = emus
    primary.responder = lambda request: reply.answer(GOOD)
    chain = Chain([primary_tier(primary), default()])

    class Desk:
        @guardrail.structured(chain=chain)
        def triage(self, inquiry: str) -> Ticket:
            """Triage the inquiry."""
            raise NotImplementedError

        @guardrail.structured(chain=chain)
        async def atriage(self, inquiry: str) -> Ticket:
            """Triage the inquiry."""
            raise NotImplementedError

    @guardrail.structured(chain=chain)
    async def afree(inquiry: str) -> Ticket:
        """Triage the inquiry."""
        raise NotImplementedError

    desk = Desk()
    assert desk.triage("late parcel") == Ticket(urgency=3, summary="late parcel")
    assert asyncio.run(desk.atriage("late parcel")).urgency == 3
    assert asyncio.run(afree("late parcel")).urgency == 3
    assert "late parcel" in primary.requests[0].last_user_text
    assert "self" not in primary.requests[0].last_user_text


def test_chain_create_with_content_parts(emus: tuple[Emulator, Emulator]) -> None:
    primary, _ = emus
    primary.script(reply.answer(GOOD))
    chain = Chain([primary_tier(primary), default()])
    value = chain.create(response_model=Ticket, messages=[
        {"role": "developer", "content": [{"type": "text", "text": "Triage."}]},
        {"role": "user", "content": [{"type": "text", "text": "late"},
                                     {"type": "image_url", "image_url": {"url": "http://x/y.png"}},
                                     {"type": "text", "text": "parcel"}]}])
    assert value == Ticket(urgency=3, summary="late parcel")
    body = primary.requests[0].body
    assert body["messages"][0]["content"] == "Triage."
    assert "late" in primary.requests[0].last_user_text and "parcel" in primary.requests[0].last_user_text


def test_chain_create_feeds_the_rule_engine_the_message_text(emus: tuple[Emulator, Emulator]) -> None:
    primary, _ = emus
    primary.responder = lambda request: reply.server_error(503)
    chain = Chain([primary_tier(primary), rule_engine(triage_engine())])
    result = chain.create_with_result(response_model=DemoTicket, messages=[
        {"role": "user", "content": "I was charged twice, please refund me"}])
    assert result.tier == "rules" and result.value.category.value == "billing"


# ---------------------------------------------------------------------------------------------------- threads


def test_chain_from_many_threads_opens_the_breaker_once_and_every_result_is_valid(
        emus: tuple[Emulator, Emulator]) -> None:
    primary, backup = emus
    breaker = CircuitBreaker(failures=3, reset_after=60)
    primary.responder = lambda request: reply.server_error(500)
    backup.responder = lambda request: reply.answer(GOOD)
    chain = Chain([primary_tier(primary, breaker=breaker), backup_tier(backup), default()])
    results: list[Any] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        try:
            results.append(chain.run(Ticket, system=SYSTEM, user=USER))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(8)]
    [t.start() for t in threads]
    [t.join(30) for t in threads]
    assert errors == [] and len(results) == 8
    assert all(r.tier == "backup" and r.value.urgency == 3 for r in results)
    assert breaker.state == "open"
    assert len(primary.requests) <= 8 * 2
    calls = len(primary.requests)
    threads = [threading.Thread(target=work) for _ in range(8)]
    barrier = threading.Barrier(8)
    [t.start() for t in threads]
    [t.join(30) for t in threads]
    assert len(primary.requests) == calls and len(results) == 16
    assert all(r.departures[0].reason == "circuit open" for r in results[8:])


# ------------------------------------------------------------------------------------------- hostile rule input


def test_rule_engine_on_100kb_korean_text_finishes_typed() -> None:
    text = ("배송이 2주째 안 와요. 환불해 주세요! " * 5000)[:100_000]
    chain = Chain([rule_engine(triage_engine())])
    result = finishes(lambda: chain.run(DemoTicket, system="", user="", inputs={"inquiry": text}),
                      "the rule engine on 100 KB of Korean text")
    assert isinstance(result.value, DemoTicket) and len(result.value.summary) <= 120
    assert result.value.urgency >= 3


@pytest.mark.parametrize("text", ["\ud800 urgent refund \udfff", "\udc00" * 1000, "긴급 \ud83d 환불"])
def test_rule_engine_with_lone_surrogates_stays_typed(text: str) -> None:
    result = Chain([rule_engine(triage_engine())]).run(DemoTicket, system="", user="", inputs={"inquiry": text})
    assert isinstance(result.value, DemoTicket)
    result.value.summary.encode("utf-8")


def test_video_segments_with_surrogates_and_100kb() -> None:
    class Segment(BaseModel):
        scriptText: str
        startSeconds: float
        durationSeconds: float
        keywords: list[str]

    engine = RuleEngine(load_rule_set(ROOT / "fallbacks" / "video_segments.toml"))
    transcript = ("오늘은 김치를 만듭니다. 배추를 절여요! \ud800 " * 3000)[:100_000]
    result = finishes(lambda: Chain([rule_engine(engine)]).run(list[Segment], system="", user="",
                                                         inputs={"transcript": transcript,
                                                                 "duration_seconds": 600.0,
                                                                 "segment_seconds": 30.0}),
                      "the rule engine on a 100 KB transcript")
    assert abs(sum(s.durationSeconds for s in result.value) - 600.0) < 1e-6
