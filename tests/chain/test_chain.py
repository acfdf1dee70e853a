"""The degradation chain: a fault matrix over vendor tiers, then each rule of the chain on its own: which faults
leave a tier and which answers end the chain (refusals, declines, denials), breaker accounting, the chain's
deadline and budget, ChainExhausted, the rule-engine and safe-default tiers, the decorator's and the wrapper's
call shapes, threads, hostile input to the rule tier.

Real code paths only: the vendor emulator with the real openai/anthropic SDKs."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel, Field
from support.calls import RecordingRetry
from support.waiting import finishes

import guardrail
from guardrail.call import reset_config
from guardrail.chain.fallback import RuleEngine, load_rule_set
from guardrail.chain.tiers import Chain, CircuitBreaker, rule_engine, safe_default, vendor
from guardrail.cli.triage import Ticket as DemoTicket
from guardrail.errors import ChainExhausted, DeadlineExceeded, Declined, OutputTruncated, VendorUnavailable
from guardrail.gates.semantic import exit_status, relation
from guardrail.testing import Emulator, reply


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


GOOD = '{"urgency": 3, "summary": "late parcel"}'
FAST = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.05, deadline=10)
SYSTEM, USER = "Triage the inquiry.", 'inquiry = "late parcel"'
ROOT = Path(__file__).resolve().parents[2]

FAULTS = {
    "ok": lambda: [reply.answer(GOOD)],
    "5xx storm": lambda: [reply.server_error(500), reply.server_error(503)],
    "429 beyond the deadline": lambda: [reply.rate_limited(retry_after=600)],
    "truncation loop": lambda: [reply.truncated('{"urgency": 3, "sum'), reply.truncated('{"urgency": 3, "summ')],
    "never valid": lambda: [reply.answer('{"urgency": 9}'), reply.answer('{"urgency": "high"}')],
    "schema rejected everywhere": lambda: [reply.schema_rejected()] * 4,
}


def tiers(primary: Emulator, backup: Emulator, breakers: dict[str, CircuitBreaker] | None = None
          ) -> list[guardrail.chain.tiers.Tier]:
    breakers = breakers or {}
    return [
        vendor(openai.OpenAI(base_url=primary.openai_base_url, api_key="t", timeout=5), "gpt-4o", name="primary",
               max_attempts=2, retry=FAST, max_tokens=50, breaker=breakers.get("primary")),
        vendor(anthropic.Anthropic(base_url=backup.anthropic_base_url, api_key="t", timeout=5), "claude-haiku-4-5",
               name="backup", max_attempts=2, retry=FAST, max_tokens=50, breaker=breakers.get("backup")),
    ]


def default() -> guardrail.chain.tiers.Tier:
    return safe_default({"urgency": 1, "summary": ""})


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


def triage_engine() -> RuleEngine:
    return RuleEngine(load_rule_set(ROOT / "fallbacks" / "ticket_triage.toml"))


@pytest.mark.parametrize(("first", "second"), list(itertools.product(FAULTS, FAULTS)))
@pytest.mark.slow
def test_fault_matrix(emulators: tuple[Emulator, Emulator], first: str, second: str) -> None:
    primary, backup = emulators
    primary.script(*FAULTS[first]())
    backup.script(*FAULTS[second]())
    chain = Chain([*tiers(primary, backup), default()], deadline=20)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    # every fault ends its tier on its own (the 600 s Retry-After is refused at once): the chain's 20 s
    # deadline never had to cut or skip a tier
    assert not any(isinstance(d.error, DeadlineExceeded) or d.reason == "deadline"
                   for d in result.departures)
    expected = "primary" if first == "ok" else "backup" if second == "ok" else "safe-default"
    assert result.tier == expected
    assert isinstance(result.value, Ticket)
    assert [d.tier for d in result.departures] == {"primary": [], "backup": ["primary"],
                                                    "safe-default": ["primary", "backup"]}[expected]
    assert result.degraded == (expected == "safe-default")
    if result.degraded:
        assert result.notice and "temporarily unavailable" in result.notice
    # each tier stays within its attempts and transport tries (never more than 2 attempts x 2 tries)
    assert len(primary.requests) <= 4 and len(backup.requests) <= 4


def test_a_refusal_is_an_answer_and_never_routed_around(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    primary.script(reply.refusal("I can't help with that."))
    backup.script(reply.answer(GOOD))
    with pytest.raises(guardrail.Refused):
        Chain([*tiers(primary, backup), default()]).run(Ticket, system=SYSTEM, user=USER)
    assert backup.requests == []


def test_every_failure_is_carried_when_no_safe_default_exists(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    primary.script(*FAULTS["5xx storm"]())
    backup.script(*FAULTS["never valid"]())
    with pytest.raises(ChainExhausted) as caught:
        Chain(tiers(primary, backup)).run(Ticket, system=SYSTEM, user=USER)
    departures = caught.value.departures
    assert [d.tier for d in departures] == ["primary", "backup"]
    assert isinstance(departures[0].error, VendorUnavailable)
    assert isinstance(departures[1].error, guardrail.GaveUp)
    assert departures[1].error.raw_outputs == ['{"urgency": 9}', '{"urgency": "high"}']


def test_the_breaker_opens_then_lets_one_probe_through(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    breaker = CircuitBreaker(failures=2, reset_after=0.3)
    chain = Chain([*tiers(primary, backup, {"primary": breaker}), default()])
    backup.responder = lambda request: reply.answer(GOOD)
    primary.responder = lambda request: reply.server_error(500)
    for _ in range(2):
        assert chain.run(Ticket, system=SYSTEM, user=USER).tier == "backup"
    assert breaker.state == "open"
    calls = len(primary.requests)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "backup" and result.departures[0].reason == "circuit open"
    assert len(primary.requests) == calls  # open: no call at all
    time.sleep(0.35)
    assert breaker.state == "half_open"
    primary.responder = lambda request: reply.answer(GOOD)
    assert chain.run(Ticket, system=SYSTEM, user=USER).tier == "primary"  # the probe succeeds: closed again
    assert breaker.state == "closed"


def test_the_half_open_breaker_admits_exactly_one_probe_across_threads() -> None:
    breaker = CircuitBreaker(failures=1, reset_after=0.05)
    breaker.record(False)
    time.sleep(0.06)
    admitted: list[bool] = []
    barrier = threading.Barrier(20)

    def probe() -> None:
        barrier.wait()
        admitted.append(breaker.allow())

    threads = [threading.Thread(target=probe) for _ in range(20)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert admitted.count(True) == 1


@pytest.mark.slow
def test_the_deadline_covers_the_whole_chain(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    # both vendors answer after a 4.5 s stall, within their 5 s SDK timeout: only the chain's deadline can
    # stop the primary answering, and a deadline per tier (not per chain) would give the backup its own second
    primary.script(reply.timeout(4.5, then=reply.answer(GOOD)))
    backup.script(reply.timeout(4.5, then=reply.answer(GOOD)))
    chain = Chain([*tiers(primary, backup), default()], deadline=1.0)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default"
    first, second = result.departures
    assert first.tier == "primary" and isinstance(first.error, DeadlineExceeded)
    assert len(primary.requests) == 1  # cut in flight, no retry after the deadline
    assert (second.tier, second.reason) == ("backup", "deadline") and backup.requests == []


def test_every_tier_is_held_to_the_same_rules(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    rules = [relation("urgency", ">=", "minimum")]

    class Bounded(BaseModel):
        urgency: int
        minimum: int = 2

    primary.script(reply.answer('{"urgency": 1}'), reply.answer('{"urgency": 1}'))
    backup.script(reply.answer('{"urgency": 1}'), reply.answer('{"urgency": 4}'))
    chain = Chain([*tiers(primary, backup), safe_default({"urgency": 0})], rules=rules)
    result = chain.run(Bounded, system=SYSTEM, user=USER)
    assert result.tier == "backup" and result.value.urgency == 4
    primary.script(reply.answer('{"urgency": 1}'), reply.answer('{"urgency": 1}'))
    backup.script(reply.answer('{"urgency": 1}'), reply.answer('{"urgency": 1}'))
    with pytest.raises(ChainExhausted) as caught:  # the safe default breaks the rules too: not returned
        chain.run(Bounded, system=SYSTEM, user=USER)
    assert [d.tier for d in caught.value.departures] == ["primary", "backup", "safe-default"]


def test_the_decorator_runs_a_chain(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    chain = Chain([*tiers(primary, backup), default()])

    @guardrail.structured(chain=chain)
    def triage(inquiry: str) -> Ticket:
        """Triage the inquiry."""
        raise NotImplementedError

    primary.script(*FAULTS["5xx storm"]())
    backup.script(reply.answer(GOOD))
    assert triage("late parcel") == Ticket(urgency=3, summary="late parcel")
    primary.script(*FAULTS["5xx storm"]())
    backup.script(*FAULTS["5xx storm"]())
    result = triage.with_result("late parcel")
    assert result.tier == "safe-default" and result.degraded
    assert backup.requests[0].body["system"].startswith("You compute the return value of the function `triage`")


def test_a_safe_default_that_breaks_the_contract_is_refused() -> None:
    with pytest.raises(ChainExhausted):
        Chain([safe_default({"urgency": 99, "summary": ""})]).run(Ticket, system="", user="")




def test_the_budget_covers_the_whole_chain(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    primary.script(reply.answer('{"urgency": 9}', usage=(300, 50)), reply.answer('{"urgency": 9}', usage=(300, 50)))
    backup.script(reply.answer(GOOD, usage=(100, 20)))
    chain = Chain([*tiers(primary, backup), default()], budget=guardrail.Budget(max_tokens=800))
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    # the primary spent 700 of 800 tokens; the backup had 100 left, too few for its request: the safe default
    assert result.tier == "safe-default"
    assert isinstance(result.departures[1].error, guardrail.BudgetExceeded)
    assert backup.requests == []


@pytest.mark.slow
def test_a_shared_breaker_in_sqlite_opens_for_every_process_and_admits_one_probe(tmp_path: Any) -> None:
    import subprocess
    import sys
    import textwrap

    from guardrail.chain.tiers import SharedCircuitBreaker
    from guardrail.store import SQLiteStore

    path = str(tmp_path / "breaker.db")
    breaker = SharedCircuitBreaker(SQLiteStore(path), "openai:gpt-4o", failures=2, reset_after=1.0)
    breaker.record(False)
    assert breaker.state == "closed"
    breaker.record(False)
    assert breaker.state == "open" and not breaker.allow()
    time.sleep(1.05)
    script = textwrap.dedent(f"""
        import sys, time
        from guardrail.chain.tiers import SharedCircuitBreaker
        from guardrail.store import SQLiteStore
        breaker = SharedCircuitBreaker(SQLiteStore({path!r}), "openai:gpt-4o", failures=2, reset_after=1.0)
        time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
        print(sum(breaker.allow() for _ in range(5)))
    """)
    start = str(time.time() + 1.5)
    procs = [subprocess.Popen([sys.executable, "-c", script, start], stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    admitted = sum(int(p.communicate(timeout=60)[0].strip()) for p in procs)
    assert admitted == 1  # one probe across three processes
    breaker.record(True)
    assert breaker.state == "closed" and breaker.allow()


def test_the_rule_engine_tier_answers_korean_and_english_when_vendors_are_down(
        emulators: tuple[Emulator, Emulator]) -> None:
    from pathlib import Path

    from guardrail.chain.fallback import RuleEngine, load_rule_set
    from guardrail.chain.tiers import rule_engine

    root = Path(__file__).resolve().parents[2]
    engine = RuleEngine(load_rule_set(root / "fallbacks" / "ticket_triage.toml"))
    primary, backup = emulators
    primary.responder = lambda request: reply.server_error(503)
    backup.responder = lambda request: reply.overloaded()
    chain = Chain([*tiers(primary, backup), rule_engine(engine), safe_default(
        {"urgency": 1, "category": "other", "summary": ""})])

    @guardrail.structured(chain=chain)
    def triage(inquiry: str) -> DemoTicket:
        """Triage the inquiry."""
        raise NotImplementedError

    korean = triage.with_result("배송이 2주째 안 와요. 환불해 주세요!")
    assert korean.tier == "rules" and korean.degraded and "rules" in (korean.notice or "")
    assert korean.value.category.value in {"shipping", "billing"} and korean.value.urgency >= 3
    assert korean.detail and all(hasattr(f, "rule_id") for f in korean.detail)
    english = triage("The app crashes with an error every time. URGENT!")
    assert english.category.value == "technical" and english.urgency == 5


def test_video_segments_from_the_rule_engine_when_no_model_is_available() -> None:
    from pathlib import Path

    from guardrail.chain.fallback import RuleEngine, load_rule_set
    from guardrail.chain.tiers import rule_engine

    class Segment(BaseModel):
        scriptText: str
        startSeconds: float
        durationSeconds: float
        keywords: list[str]

    root = Path(__file__).resolve().parents[2]
    engine = RuleEngine(load_rule_set(root / "fallbacks" / "video_segments.toml"))
    transcript = "Welcome to the show. Today we cook kimchi. First, salt the cabbage! Then wait two hours."
    result = Chain([rule_engine(engine)]).run(list[Segment], system="", user="",
                                        inputs={"transcript": transcript, "duration_seconds": 60.0,
                                                "segment_seconds": 20.0})
    segments = result.value
    assert "".join(s.scriptText for s in segments) == transcript
    assert abs(sum(s.durationSeconds for s in segments) - 60.0) < 1e-6 and result.tier == "rules"


def test_rules_check_command() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "rules", "check", "fallbacks",
                           "--contract", "ticket_triage=guardrail.cli.triage:Ticket"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0 and "2 valid rule sets" in done.stdout


def test_the_chain_has_the_wrappers_call_shape_and_can_be_configured_once(
        emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    chain = Chain([*tiers(primary, backup), default()])
    primary.script(reply.server_error(500), reply.server_error(500))
    backup.script(reply.answer(GOOD))
    ticket = chain.create(response_model=Ticket, messages=[{"role": "system", "content": "Triage."},
                                                           {"role": "user", "content": "late parcel"}])
    assert ticket == Ticket(urgency=3, summary="late parcel")
    assert backup.requests[0].body["system"] == "Triage." and backup.requests[0].last_user_text == "late parcel"
    reset_config()
    try:
        guardrail.configure(chain=chain)

        @guardrail.structured
        def triage(inquiry: str) -> Ticket:
            """Triage."""
            raise NotImplementedError

        primary.script(reply.answer(GOOD))
        assert triage("x").urgency == 3
    finally:
        reset_config()


def test_a_vendor_tier_sends_a_token_limit_only_where_asked_or_required(
        emulators: tuple[Emulator, Emulator]) -> None:
    """Without max_tokens=, an OpenAI tier leaves the limit to the vendor and an Anthropic tier sends the
    Messages API's required default; with it, each sends it in its own field."""
    primary, backup = emulators
    sent: list[dict[str, Any]] = []
    for chosen in (None, 77):
        primary.script(reply.server_error(500), reply.server_error(500))
        backup.script(reply.answer(GOOD))
        chain = Chain([
            vendor(openai.OpenAI(base_url=primary.openai_base_url, api_key="t", timeout=5), "gpt-4o", name="primary",
                   max_attempts=1, retry=FAST, max_tokens=chosen),
            vendor(anthropic.Anthropic(base_url=backup.anthropic_base_url, api_key="t", timeout=5),
                   "claude-haiku-4-5", name="backup", max_attempts=1, retry=FAST, max_tokens=chosen)])
        assert chain.run(Ticket, system=SYSTEM, user=USER).tier == "backup"
        sent += [primary.requests[-1].body, backup.requests[-1].body]
    unset_openai, unset_anthropic, set_openai, set_anthropic = sent
    assert not {"max_tokens", "max_completion_tokens"} & set(unset_openai)
    assert unset_anthropic["max_tokens"] == 1024
    assert set_openai["max_completion_tokens"] == 77 and set_anthropic["max_tokens"] == 77
    assert unset_openai["messages"] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    assert unset_anthropic["system"] == SYSTEM
# ---------------------------------------------------------------------------------- answers are never routed around


def test_refusal_in_the_backup_tier_ends_the_chain(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    primary.script(reply.server_error(500), reply.server_error(500))
    backup.script(reply.refusal("no"))
    with pytest.raises(guardrail.Refused):
        Chain([primary_tier(primary), backup_tier(backup), default()]).run(Ticket, system=SYSTEM, user=USER)


def test_declined_is_an_answer_and_the_backup_is_never_called(emulators: tuple[Emulator, Emulator]) -> None:
    class Answer(BaseModel):
        status: str
        text: str

    primary, backup = emulators
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


# -------------------------------------------------------------------------------------------------- faults are left


@pytest.mark.parametrize(("script", "error"), [
    (lambda: [reply.server_error(500), reply.server_error(503)], VendorUnavailable),
    (lambda: [reply.answer('{"urgency": 9}'), reply.answer('{"urgency": 0}')], guardrail.GaveUp),
    (lambda: [reply.truncated('{"urgency": 3, "su'), reply.truncated('{"urgency": 3, "sum')],
     OutputTruncated),
    (lambda: [reply.schema_rejected()] * 4, guardrail.VendorError),
], ids=["5xx", "never-valid", "truncation", "schema-rejected"])
def test_each_fault_leaves_the_tier_with_a_typed_departure(emulators: tuple[Emulator, Emulator], script: Any,
                                                            error: type) -> None:
    primary, backup = emulators
    primary.script(*script())
    backup.script(reply.answer(GOOD))
    result = Chain([primary_tier(primary), backup_tier(backup), default()]).run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "backup" and result.value == Ticket(urgency=3, summary="late parcel")
    assert isinstance(result.departures[0].error, error)
    assert result.departures[0].tier == "primary"


def test_budget_exceeded_leaves_the_tier(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    backup.script(reply.answer(GOOD))
    chain = Chain([primary_tier(primary, budget=guardrail.Budget(max_tokens=5)), backup_tier(backup)])
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "backup" and isinstance(result.departures[0].error, guardrail.BudgetExceeded)
    assert primary.requests == []


# ----------------------------------------------------------------------------------------------- breaker accounting


def test_a_refusal_counts_as_a_breaker_success(emulators: tuple[Emulator, Emulator]) -> None:
    primary, _ = emulators
    breaker = CircuitBreaker(failures=1, reset_after=60)
    primary.script(reply.refusal("no"))
    with pytest.raises(guardrail.Refused):
        Chain([primary_tier(primary, breaker=breaker), default()]).run(Ticket, system=SYSTEM, user=USER)
    assert breaker.state == "closed"


def test_a_validation_failure_counts_as_a_breaker_failure(emulators: tuple[Emulator, Emulator]) -> None:
    # current behaviour (the issue only says "K consecutive failures"): a tier left on validation opens it
    primary, _ = emulators
    breaker = CircuitBreaker(failures=1, reset_after=60)
    primary.script(reply.answer('{"urgency": 9}'), reply.answer('{"urgency": 9}'))
    result = Chain([primary_tier(primary, breaker=breaker), default()]).run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default" and breaker.state == "open"


def test_a_budget_stop_before_any_call_is_not_a_vendor_failure(emulators: tuple[Emulator, Emulator]) -> None:
    primary, _ = emulators
    breaker = CircuitBreaker(failures=1, reset_after=60)
    chain = Chain([primary_tier(primary, breaker=breaker, budget=guardrail.Budget(max_tokens=5)), default()])
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default" and primary.requests == []
    assert breaker.state == "closed"


def test_deadline_exhausted_skips_the_vendor_without_spending_the_half_open_probe(
        emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
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


def test_half_open_breaker_admits_one_probe_under_asyncio_gather(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
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


# --------------------------------------------------------------------------------------------------------- deadline


@pytest.mark.slow
def test_stalled_tier_longer_than_the_deadline_with_a_lax_sdk_timeout(emulators: tuple[Emulator, Emulator]) -> None:
    primary, _ = emulators
    # a good answer after an 8 s stall, well within the 60 s SDK timeout: only the chain's deadline can cut it
    primary.script(reply.timeout(8, then=reply.answer(GOOD)))
    chain = Chain([primary_tier(primary, timeout=60), default()], deadline=1.0)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default"
    assert isinstance(result.departures[0].error, DeadlineExceeded)
    assert len(primary.requests) == 1  # cut in flight, not retried after the deadline


@pytest.mark.slow
def test_the_deadline_covers_all_attempts_of_a_tier(emulators: tuple[Emulator, Emulator]) -> None:
    primary, _ = emulators
    primary.script(reply.answer('{"urgency": 9}').after(0.7), reply.answer(GOOD).after(0.7))
    chain = Chain([primary_tier(primary), default()], deadline=1.0)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    # each attempt alone fits in the deadline (0.7 s), both together do not: a deadline per attempt would
    # have let the repair return the good answer
    assert result.tier == "safe-default"
    assert isinstance(result.departures[0].error, DeadlineExceeded)
    assert 1 <= len(primary.requests) <= 2


def test_429_with_retry_after_beyond_what_is_left_leaves_at_once(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    patient = RecordingRetry(max_tries=3, initial_wait=0.01, max_wait=30, deadline=30)
    primary.script(reply.rate_limited(retry_after=4), reply.answer(GOOD))
    backup.script(reply.answer(GOOD))
    chain = Chain([primary_tier(primary, retry=patient), backup_tier(backup), default()], deadline=2.0)
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "backup" and isinstance(result.departures[0].error, VendorUnavailable)
    assert result.departures[0].error.status == 429
    # the tier's own policy would wait the 4 s; the chain's 2 s left made it leave without starting the wait
    assert patient.waits == [] and len(primary.requests) == 1 and len(backup.requests) == 1


# ----------------------------------------------------------------------------------------------------------- budget


def test_tokens_spent_by_failing_tiers_leave_later_tiers_less(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
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


def test_a_tiers_own_budget_still_applies_under_a_chain_budget(emulators: tuple[Emulator, Emulator]) -> None:
    primary, _ = emulators
    primary.script(reply.answer(GOOD, usage=(100, 20)))
    chain = Chain([primary_tier(primary, budget=guardrail.Budget(max_tokens=5)), default()],
                  budget=guardrail.Budget(max_tokens=100_000))
    result = chain.run(Ticket, system=SYSTEM, user=USER)
    assert result.tier == "safe-default" and primary.requests == []


# --------------------------------------------------------------------------------------------------- ChainExhausted


def test_chain_exhausted_carries_every_failure_with_raw_outputs(emulators: tuple[Emulator, Emulator],
                                                               tmp_path: Path) -> None:
    primary, backup = emulators
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


# ------------------------------------------------------------------------------------------ safe default, rule tier


def test_safe_default_never_runs_a_tool_and_is_marked_degraded(emulators: tuple[Emulator, Emulator]) -> None:
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

    primary, _ = emulators
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


# ---------------------------------------------------------------------------------------- decorator and call shapes


def test_decorator_with_chain_async_function_and_methods(emulators: tuple[Emulator, Emulator]) -> None:
    primary, _ = emulators
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


def test_chain_create_with_content_parts(emulators: tuple[Emulator, Emulator]) -> None:
    primary, _ = emulators
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


def test_chain_create_feeds_the_rule_engine_the_message_text(emulators: tuple[Emulator, Emulator]) -> None:
    primary, _ = emulators
    primary.responder = lambda request: reply.server_error(503)
    chain = Chain([primary_tier(primary), rule_engine(triage_engine())])
    result = chain.create_with_result(response_model=DemoTicket, messages=[
        {"role": "user", "content": "I was charged twice, please refund me"}])
    assert result.tier == "rules" and result.value.category.value == "billing"


# ---------------------------------------------------------------------------------------------------------- threads


def test_chain_from_many_threads_opens_the_breaker_once_and_every_result_is_valid(
        emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
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


# ----------------------------------------------------------------------------------------------- hostile rule input


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
