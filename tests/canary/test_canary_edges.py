"""The canary's own edges, with plain functions as arms: attribute paths, bad settings, a failing store, async
fallback, promotion."""

from __future__ import annotations

import asyncio
import logging
from itertools import islice
from pathlib import Path

import openai
import pytest
from support.canary_arms import keys_for
from support.canary_worker import Broken, candidate, control

import guardrail
from guardrail.canary import Canary, Tally
from guardrail.errors import ConfigError, UsageError
from guardrail.store import MemoryStore, SQLiteStore

SHARE = 0.5


class Arm:
    """An object with a method, as a client is."""

    def __init__(self, label: str) -> None:
        self.label = label

    def answer(self, n: int) -> str:
        return f"{self.label} {n}"


def test_an_attribute_path_exists_only_where_both_arms_have_it() -> None:
    canary = Canary(Arm("old"), Arm("new"), share=0.0)
    assert canary.answer(3) == "old 3"
    assert hasattr(canary, "answer") and not hasattr(canary, "generate_batch")
    lopsided = Canary(Arm("old"), control, share=0.0)
    with pytest.raises(AttributeError, match="candidate has no attribute 'answer'"):
        lopsided.answer  # noqa: B018


@pytest.mark.parametrize("settings", [{"share": 2.0}, {"margin": 1.0}, {"confidence": 0.4}, {"name": "a b"},
                                      {"name": ""}, {"min_samples": 0}, {"ttl": 0}])
def test_settings_that_cannot_work_are_refused(settings: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        Canary(control, candidate, **settings)  # type: ignore[arg-type]


def test_a_routing_key_of_another_type_is_refused() -> None:
    with pytest.raises(UsageError):
        Canary(control, candidate).routed(1.5)(1)  # type: ignore[arg-type]


def test_a_store_that_fails_never_fails_the_call(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SQLiteStore(tmp_path / "canary.db")
    canary = Canary(control, candidate, share=1.0, store=store, name="broken-store")
    store.close()
    with caplog.at_level(logging.WARNING, logger="guardrail"):
        assert canary(4) == "control 4"  # the state is unknown: control
    assert any("guardrail.canary.store_error" in record.getMessage() for record in caplog.records)


def test_a_store_file_deleted_under_the_process_sends_calls_to_control(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "canary.db"
    canary = Canary(control, candidate, share=1.0, store=SQLiteStore(path), name="vanishing")
    assert canary(1) == "candidate 1"
    path.unlink()  # the file is gone under the running process: reads and writes raise StoreUnavailable
    with caplog.at_level(logging.WARNING, logger="guardrail"):
        assert canary(3) == "control 3"
    assert any("store_error" in record.getMessage() for record in caplog.records)


def test_async_fallback_answers_from_control() -> None:
    async def old(n: int) -> str:
        return f"old {n}"

    async def new(n: int) -> str:
        raise Broken(f"case {n}")

    canary = Canary(old, new, share=1.0, fallback_to_control=True)
    assert asyncio.run(canary(2)) == "old 2"
    status = canary.status()
    assert status.candidate == Tally(1, 1) and status.control == Tally(0, 0)
    assert status.candidate_failures == {"broken": 1}
    plain = Canary(old, new, share=1.0)
    with pytest.raises(Broken):
        asyncio.run(plain(2))


def test_a_candidate_shown_no_worse_is_promoted_when_asked() -> None:
    canary = Canary(control, lambda n: f"candidate {n}", share=SHARE, store=MemoryStore(), name="promo",
                    margin=0.2, min_samples=20, promote_after=20)
    for key in islice(keys_for("promo", SHARE, False), 20):
        canary.routed(key)(0)
    for key in islice(keys_for("promo", SHARE, True), 20):
        canary.routed(key)(0)
    assert canary.state == "promoted"
    assert canary.routed(next(keys_for("promo", SHARE, False)))(9) == "candidate 9"  # control keys too, now


def test_top_level_name_and_repr() -> None:
    canary = guardrail.Canary(control, candidate, name="x")
    assert "Canary(name='x'" in repr(canary) and canary.control is control and canary.candidate is candidate


def test_a_rollback_is_logged_as_a_warning_with_its_counts(caplog: pytest.LogCaptureFixture) -> None:
    canary = Canary(control, candidate, share=SHARE, name="logged", margin=0.05, min_samples=4)
    with caplog.at_level(logging.DEBUG, logger="guardrail"):
        for key in islice(keys_for("logged", SHARE, False), 4):
            canary.routed(key)(1)
        for n, key in enumerate(islice(keys_for("logged", SHARE, True), 4)):
            with pytest.raises(Broken):
                canary.routed(key)(2 * n)  # even: every call fails
    (decision,) = [r for r in caplog.records if r.getMessage().startswith("guardrail.canary.decision")]
    assert decision.levelno == logging.WARNING
    fields = decision.guardrail  # type: ignore[attr-defined]
    assert fields["decision"] == "rollback" and fields["by"] == "automatic"
    assert fields["control"] == {"calls": 4, "failures": 0} and fields["candidate"] == {"calls": 4, "failures": 4}
    calls = [r for r in caplog.records if r.getMessage().startswith("guardrail.canary.call")]
    assert len(calls) == 8 and all(r.levelno == logging.DEBUG for r in calls)


def test_a_shared_store_needs_a_name_and_both_arms_one_flavour() -> None:
    with pytest.raises(ConfigError, match="needs a name"):
        Canary(control, candidate, store=MemoryStore())

    async def later(n: int) -> str:
        return str(n)

    with pytest.raises(ConfigError, match="both be sync or both be async"):
        Canary(control, later)
    sync_client = guardrail.wrap(openai.OpenAI(api_key="test", base_url="http://127.0.0.1:9"))
    async_client = guardrail.wrap(openai.AsyncOpenAI(api_key="test", base_url="http://127.0.0.1:9"))
    with pytest.raises(ConfigError, match="both be sync or both be async"):
        Canary(sync_client, async_client)


def test_with_structlog_configured_a_decision_goes_through_its_pipeline() -> None:
    from structlog.testing import capture_logs

    canary = Canary(control, candidate, share=SHARE, name="structured", margin=0.05, min_samples=2)
    with capture_logs() as logs:
        for key in islice(keys_for("structured", SHARE, False), 2):
            canary.routed(key)(1)
        for key in islice(keys_for("structured", SHARE, True), 2):
            with pytest.raises(Broken):
                canary.routed(key)(0)
        canary.reset()
    decisions = [entry for entry in logs if entry["event"] == "guardrail.canary.decision"]
    assert len(decisions) == 1 and decisions[0]["log_level"] == "warning"
    assert decisions[0]["decision"] == "rollback" and decisions[0]["candidate"] == {"calls": 2, "failures": 2}
    assert [entry["outcome"] for entry in logs if entry["event"] == "guardrail.canary.call"] == [
        "valid", "valid", "broken", "broken"]
    assert any(entry["event"] == "guardrail.canary.reset" for entry in logs)
