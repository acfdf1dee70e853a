"""The degradation chain: a fault matrix over vendor tiers (emulator-driven), breakers, deadline, safe default."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel, Field

import guardrail
from guardrail.call import reset_config
from guardrail.chain.tiers import Chain, ChainExhausted, CircuitBreaker, safe_default, vendor
from guardrail.cli.triage import Ticket as DemoTicket
from guardrail.errors import DeadlineExceeded, VendorUnavailable
from guardrail.gates.semantic import relation
from guardrail.testing import Emulator, reply


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


GOOD = '{"urgency": 3, "summary": "late parcel"}'
FAST = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.05, deadline=10)
SYSTEM, USER = "Triage the inquiry.", 'inquiry = "late parcel"'

FAULTS = {
    "ok": lambda: [reply.answer(GOOD)],
    "5xx storm": lambda: [reply.server_error(500), reply.server_error(503)],
    "429 beyond the deadline": lambda: [reply.rate_limited(retry_after=600)],
    "truncation loop": lambda: [reply.truncated('{"urgency": 3, "sum'), reply.truncated('{"urgency": 3, "summ')],
    "never valid": lambda: [reply.answer('{"urgency": 9}'), reply.answer('{"urgency": "high"}')],
    "schema rejected everywhere": lambda: [reply.schema_rejected()] * 4,
}


@pytest.fixture
def emulators() -> Iterator[tuple[Emulator, Emulator]]:
    with Emulator() as primary, Emulator() as backup:
        yield primary, backup


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

    root = Path(__file__).resolve().parents[1]
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

    root = Path(__file__).resolve().parents[1]
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
