"""The tool gate is one visible list of steps run by one loop, and a call's audit record is written in one place.

The default list is the one the docs describe (docs/tools-and-policies.md, "How a tool call is judged", and the
table in guardrail/tools/gate.py); a changed list (a step inserted, one missing, one that breaks) runs through the
same loop: exactly one audit record per call, and the tool never runs without every step before it agreeing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.tool_env import OPEN, ToolEnv, audits

import guardrail
from guardrail.errors import UsageError
from guardrail.tools import gate
from guardrail.tools.deciding import authorize, seal_checked
from guardrail.tools.policy.kinds import UrlArg
from guardrail.tools.running import run_tool
from guardrail.tools.state import Deny, GateState, Verdict

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_NAMES = [step.__name__ for step in gate.DEFAULT_STEPS]


def documented_steps() -> list[str]:
    """The step names in the table of docs/tools-and-policies.md's "How a tool call is judged", in order."""
    text = (ROOT / "docs" / "tools-and-policies.md").read_text(encoding="utf-8")
    section = text.split("## How a tool call is judged", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)


def docstring_steps() -> list[str]:
    """The step names in the first column of guardrail/tools/gate.py's docstring table, in order."""
    doc = gate.__doc__ or ""
    return [line.split()[0] for line in doc.splitlines()
            if re.match(r"^[a-z_]+\s{2,}\S", line) and not line.startswith(" ")]


def test_the_default_steps_are_the_documented_ones_in_order() -> None:
    assert DEFAULT_NAMES == ["find_tool", "load_policy", "admit_caller", "validate_arguments", "note_left_out",
                             "check_rules", "read_current", "authorize", "seal_checked", "replay", "await_approval",
                             "run_tool"]
    assert documented_steps() == DEFAULT_NAMES
    assert docstring_steps() == DEFAULT_NAMES


def test_audit_records_are_written_in_one_place() -> None:
    """Only the gate's loop calls ``audit.record``: no step writes a record of its own."""
    writers = []
    for path in sorted((ROOT / "guardrail").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "record" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "audit":
                writers.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    assert len(writers) == 1 and writers[0].startswith("guardrail/tools/gate.py:"), writers


def _env() -> ToolEnv:
    env = ToolEnv()
    env.add(lambda n: env.ran("act", n) or {"n": n}, 'version = "v3"\n' + OPEN + "[args.n]\nmax = 100\n",
            name="act")
    return env


def _with(step: Any, after: Any) -> list[Any]:
    steps = list(gate.DEFAULT_STEPS)
    steps.insert(steps.index(after) + 1, step)
    return steps


def test_an_inserted_step_runs_in_the_same_loop_and_each_call_is_audited_once() -> None:
    env = _env()
    seen: list[tuple[Any, str]] = []

    def no_sevens(state: GateState) -> Verdict | None:
        """A deployment's own check, after the policy allowed the call: it sees the decision and checked values."""
        assert state.decision is not None and state.decision.allowed
        seen.append((state.arguments, state.decision.rule))
        return Deny("no-sevens", "sevens are not served", argument="n") if state.arguments == {"n": 7} else None

    steps = _with(no_sevens, after=authorize)
    with guardrail.identity(user="u"), capture_logs() as logs:
        done = gate.run(GateState("act", {"n": 1}, registry=env.registry, store=env.store, request_id="r-1"), steps)
        with pytest.raises(guardrail.Denied) as denied:
            gate.run(GateState("act", '{"n": 7}', registry=env.registry, store=env.store, request_id="r-7"), steps)
        with pytest.raises(guardrail.Denied):  # the policy's own denial comes first: the new step is not asked
            gate.run(GateState("act", {"n": 700}, registry=env.registry, store=env.store, request_id="r-700"),
                     steps)
    assert (done.value, done.replayed) == ({"n": 1}, False)
    assert str(denied.value) == "This action is not permitted."
    assert (denied.value.rule, denied.value.argument) == ("no-sevens", "n")
    assert denied.value.reason == "sevens are not served"
    assert seen == [({"n": 1}, "allow.anyone"), ({"n": 7}, "allow.anyone")]
    assert env.calls == [("act", 1)]
    records = audits(logs)
    assert [(r["request_id"], r["decision"], r["rule"]) for r in records] == [
        ("r-1", "executed", "allow.anyone"), ("r-7", "denied", "no-sevens"), ("r-700", "denied", "args.n")]
    assert all(r["policy_version"] == "v3" and r["identity"]["user"] == "u" for r in records)
    assert records[1]["arguments"] == {"n": 7} and records[1]["reason"] == "sevens are not served"


def test_the_default_list_and_run_tool_call_write_the_same_record() -> None:
    env = _env()
    with guardrail.identity(user="u"), capture_logs() as logs:
        gate.run(GateState("act", {"n": 2}, registry=env.registry, store=env.store, request_id="same"))
        guardrail.run_tool_call("act", {"n": 2}, registry=env.registry, store=env.store, request_id="same")
    first, second = audits(logs)
    assert first == second and first["decision"] == "executed"


def test_a_step_that_breaks_fails_the_call_once_and_nothing_runs() -> None:
    env = _env()

    def broken(state: GateState) -> Verdict | None:
        raise RuntimeError("the step's own bug")

    with guardrail.identity(user="u"), capture_logs() as logs, pytest.raises(RuntimeError, match="own bug"):
        gate.run(GateState("act", {"n": 1}, registry=env.registry, store=env.store), _with(broken, after=authorize))
    (record,) = audits(logs)
    assert (record["decision"], record["rule"]) == ("failed", "allow.anyone")
    assert record["error"] == "RuntimeError: the step's own bug"
    assert env.calls == []


def test_a_list_that_ends_without_a_verdict_denies() -> None:
    env = _env()
    steps = [step for step in gate.DEFAULT_STEPS if step is not run_tool]
    with guardrail.identity(user="u"), capture_logs() as logs, pytest.raises(guardrail.Denied) as denied:
        gate.run(GateState("act", {"n": 1}, registry=env.registry, store=env.store), steps)
    assert denied.value.rule == "no-verdict"
    assert [(r["decision"], r["rule"]) for r in audits(logs)] == [("denied", "no-verdict")]
    assert env.calls == []


def test_a_list_without_the_decision_never_runs_the_tool() -> None:
    env = _env()
    steps = [step for step in gate.DEFAULT_STEPS if step is not authorize]
    with guardrail.identity(user="u"), capture_logs() as logs, pytest.raises(UsageError, match="'authorize'"):
        gate.run(GateState("act", {"n": 1}, registry=env.registry, store=env.store), steps)
    assert [r["decision"] for r in audits(logs)] == ["failed"]
    assert env.calls == []


def test_a_list_without_the_seal_never_runs_a_tool_with_a_value_other_than_the_checked_one(
        env: ToolEnv) -> None:
    """Without ``seal_checked`` the model still holds the proposed spelling, not the checked URL: the sealed run
    refuses it (the decision covers the checked value only), so the tool never gets an unchecked value."""

    def fetch(url: UrlArg) -> str:
        return env.ran("fetch", url) or url

    env.add(fetch, OPEN + '[args.url]\nurl = { hosts = ["api.example.com"] }\n')
    steps = [step for step in gate.DEFAULT_STEPS if step is not seal_checked]
    with guardrail.identity(user="u"), capture_logs() as logs:
        done = gate.run(GateState("fetch", {"url": "https://api.example.com/v1"}, registry=env.registry,
                                  store=env.store), steps)
        with pytest.raises(guardrail.Denied) as denied:
            gate.run(GateState("fetch", {"url": "HTTPS://API.Example.COM:443/v1"}, registry=env.registry,
                               store=env.store), steps)
    assert done.value == "https://api.example.com/v1" and denied.value.rule == "unsealed"
    assert [r["decision"] for r in audits(logs)] == ["executed", "failed"]
    assert env.calls == [("fetch", "https://api.example.com/v1")]


def test_every_record_of_a_call_names_the_key_it_runs_under(env: ToolEnv) -> None:
    """Under ``idempotency = "required"`` without a given key, the key derived from the checked arguments is the
    call's key from ``replay`` on: the pending record and the executed one name the same key."""
    env.add(lambda to: env.ran("wire", to) or "sent", 'idempotency = "required"\napproval = "required"\n' + OPEN,
            name="wire")
    with guardrail.identity(user="u"), capture_logs() as logs:
        with pytest.raises(guardrail.ApprovalRequired) as parked:
            env.call("wire", {"to": "a"})
        guardrail.approve(parked.value.token, approver="p", store=env.store)
        env.call("wire", {"to": "a"}, approval_token=parked.value.token)
    pending, executed = audits(logs)
    assert (pending["decision"], executed["decision"]) == ("pending_approval", "executed")
    assert pending["idempotency_key"] == executed["idempotency_key"]
    assert str(executed["idempotency_key"]).startswith("derived:")
