"""Conditions that say what they mean: ``not_one_of`` and ``not_pattern`` (as constraints and as deny/allow
conditions), "only when given" (a value condition is not met by a left-out argument), and ``changed`` (the tool
gives the current values of the object a call changes, and the policy compares with them).

Every case runs through ``execute_tool_call``/``run_tool_call`` with a policy file from ``tests/tools/policies/``;
the tools record what really ran. Hypothesis checks the negated conditions against a reference predicate over
random arguments."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.tool_env import ToolEnv

import guardrail
from guardrail.errors import PolicyError
from guardrail.tools.execute import run_tool_call, tool
from guardrail.tools.policy.loader import load_policy, parse_policy

POLICIES = Path(__file__).parent / "policies"


def denied(env: ToolEnv, name: str, arguments: dict[str, Any]) -> guardrail.Denied:
    before = len(env.calls)
    with pytest.raises(guardrail.Denied) as caught:
        env.call(name, arguments)
    assert len(env.calls) == before, "a denied call reached the tool"
    assert str(caught.value) == "This action is not permitted."
    return caught.value


@pytest.fixture
def statuses(env: ToolEnv) -> ToolEnv:
    def set_status(ticket: str, status: str, note: str | None = None) -> str:
        env.ran("set_status", (ticket, status, note))
        return "ok"

    tool(policy=POLICIES / "set_status.toml", registry=env.registry)(set_status)
    return env


# ------------------------------------------------------------------------------------------ not_one_of, not_pattern


def test_not_one_of_and_not_pattern_refuse_what_they_name(statuses: ToolEnv) -> None:
    with guardrail.identity(user="u", roles=["agent"]):
        statuses.call("set_status", {"ticket": "OPS-12", "status": "closed"})
        refused = denied(statuses, "set_status", {"ticket": "OPS-12", "status": "deleted"})
        assert (refused.rule, refused.argument, refused.reason) == ("args.status", "status",
                                                                    "one of the refused values")
        refused = denied(statuses, "set_status", {"ticket": "SEC-9", "status": "closed"})
        assert (refused.rule, refused.reason) == ("args.ticket", "matches the refused pattern")
        assert denied(statuses, "set_status", {"ticket": "ops-1", "status": "x"}).reason == \
            "does not match the pattern"  # pattern and not_pattern both hold
    assert statuses.calls == [("set_status", ("OPS-12", "closed", None))]


def test_a_value_condition_is_only_met_when_the_argument_is_given(statuses: ToolEnv) -> None:
    with guardrail.identity(user="u", roles=["agent"]):
        statuses.call("set_status", {"ticket": "OPS-1", "status": "open"})  # no note: the deny rule does not fire
        statuses.call("set_status", {"ticket": "OPS-1", "status": "open", "note": None})  # null: left out too
        assert denied(statuses, "set_status", {"ticket": "OPS-1", "status": "open", "note": "for Admin"}).rule == \
            "deny.no-admin-notes"
        statuses.call("set_status", {"ticket": "OPS-1", "status": "open", "note": "customer asked"})
    assert len(statuses.calls) == 3


def test_bcc_only_to_the_users_own_domain(env: ToolEnv) -> None:
    def send_email(recipients: list[str], subject: str, body: str = "", bcc: list[str] | None = None) -> str:
        env.ran("send_email", (recipients, bcc))
        return "sent"

    tool(policy=POLICIES / "send_email.toml", registry=env.registry)(send_email)
    inside = {"recipients": ["ann@acme.com"], "subject": "Q3"}
    with guardrail.identity(user="u"):
        env.call("send_email", inside)  # no bcc at all: only when given
        env.call("send_email", {**inside, "bcc": ["boss@acme.com", "me@acme.com"]})
        for bcc in (["eve@evil.test"], ["boss@acme.com", "eve@acme.com.evil.test"], ["x@ACME.com"]):
            assert denied(env, "send_email", {**inside, "bcc": bcc}).rule == "deny.bcc-outside"
    assert [bcc for _, (_, bcc) in env.calls] == [None, ["boss@acme.com", "me@acme.com"]]


def test_not_one_of_as_an_allow_condition_holds_for_every_element(env: ToolEnv) -> None:

    def tag(labels: list[str]) -> str:
        env.ran("tag", labels)
        return "tagged"

    env.add(tag, '[[allow]]\nid = "safe-labels"\nwhen.labels = { not_one_of = ["urgent", "legal"] }\n')
    with guardrail.identity(user="u"):
        env.call("tag", {"labels": ["bug", "ui"]})
        with pytest.raises(guardrail.Denied) as caught:
            env.call("tag", {"labels": ["bug", "legal"]})
    assert caught.value.rule == "default-deny"
    assert env.calls == [("tag", ["bug", "ui"])]


# ---------------------------------------------------------------------------------------------------- changed


ORDERS: dict[str, dict[str, Any]] = {}


@pytest.fixture
def orders(env: ToolEnv) -> ToolEnv:
    ORDERS.clear()
    ORDERS["so-1"] = {"account": "acc-main", "recipient": "DE89370400440532013000", "amount": 1200}

    def update_standing_order(id: str, account: str | None = None, recipient: str | None = None,
                              amount: float | None = None) -> str:
        env.ran("update", (id, recipient, amount))
        ORDERS[id].update({k: v for k, v in (("recipient", recipient), ("amount", amount)) if v is not None})
        return "updated"

    tool(policy=POLICIES / "update_standing_order.toml", registry=env.registry,
         current=lambda arguments: ORDERS.get(arguments["id"]))(update_standing_order)
    guardrail.tools.lists(env.store).add("payees:acme", "DE89370400440532013000", "FR1420041010050500013M02606")
    return env


def test_never_change_a_payee_to_one_not_in_the_list(orders: ToolEnv) -> None:
    with guardrail.identity(tenant="acme", user="u"):
        orders.call("update_standing_order", {"id": "so-1", "amount": 1300})  # recipient not given
        orders.call("update_standing_order", {"id": "so-1", "recipient": "DE89370400440532013000"})  # unchanged
        orders.call("update_standing_order", {"id": "so-1", "recipient": "FR1420041010050500013M02606"})  # listed
        refused = denied(orders, "update_standing_order", {"id": "so-1", "recipient": "GB29NWBK60161331926819"})
        assert refused.rule == "deny.new-recipient-off-list"
        # an order that does not exist: every recipient given counts as a change
        assert denied(orders, "update_standing_order", {"id": "so-404", "recipient": "GB29NWBK60161331926819"}
                      ).rule == "deny.new-recipient-off-list"
    with guardrail.identity(tenant="other", user="u"):  # another tenant's list is empty: the change is refused
        assert denied(orders, "update_standing_order", {"id": "so-1", "recipient": "DE89370400440532013000"}
                      ).rule == "deny.new-recipient-off-list"
    assert [call[1][1] for call in orders.calls] == [None, "DE89370400440532013000", "FR1420041010050500013M02606"]


def test_changed_false_is_a_constraint_the_value_may_not_change(orders: ToolEnv) -> None:
    with guardrail.identity(tenant="acme", user="u"):
        orders.call("update_standing_order", {"id": "so-1", "account": "acc-main", "amount": 5})
        refused = denied(orders, "update_standing_order", {"id": "so-1", "account": "acc-other"})
        assert (refused.rule, refused.argument, refused.reason) == ("args.account", "account", "changed")


def test_a_current_hook_that_fails_denies_the_call(env: ToolEnv) -> None:
    def boom(arguments: dict[str, Any]) -> dict[str, Any]:
        raise KeyError(arguments["id"])

    def update_standing_order(id: str, account: str | None = None, recipient: str | None = None) -> str:
        env.ran("update", id)
        return "updated"

    tool(policy=POLICIES / "update_standing_order.toml", registry=env.registry, current=boom)(update_standing_order)
    with guardrail.identity(tenant="acme", user="u"):
        refused = denied(env, "update_standing_order", {"id": "so-1", "recipient": "x"})
    assert refused.rule == "current" and "KeyError" in refused.reason


def test_changed_needs_a_current_hook_or_the_policy_does_not_load(env: ToolEnv) -> None:
    def update_standing_order(id: str, account: str | None = None, recipient: str | None = None) -> str:
        return "updated"

    with pytest.raises(PolicyError) as caught:
        tool(policy=POLICIES / "update_standing_order.toml", registry=env.registry)(update_standing_order)
    lines = {problem.line for problem in caught.value.problems}
    assert len(caught.value.problems) == 2 and lines == {10, 13}
    assert all("@tool(current=...)" in problem.message for problem in caught.value.problems)


# ------------------------------------------------------------------------------------------------- load errors


@pytest.mark.parametrize(("body", "words"), [
    ("[args.x]\nnot_pattern = '(a)\\1'\n", "RE2"),
    ("[args.x]\nnot_one_of = [[1]]\n", "not_one_of"),
    ("[args.x]\nfind = [\"url\"]\n", "find = [...]"),
    ("[args.x]\nfind = [\"phone\"]\nsource = \"user\"\n", "find"),
    ("[args.x]\nsource = []\n", "source"),
    ("[args.x]\nlist = \"payees:{team}\"\n", "placeholder {team}"),
    ("[args.x]\nabsent = true\nnot_one_of = [\"a\"]\n", "absent"),
    ("[[after_approval]]\nadd = \"x\"\nlist = \"l\"\n", "after_approval"),
    ("[[approve]]\nid = \"a\"\nwhen.x = { not_lsit = \"l\" }\n", "unknown key"),
])
def test_new_keys_that_cannot_work_are_load_errors(body: str, words: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(f'tool = "t"\n[[allow]]\nid = "a"\n{body}', "p.toml")
    assert words in str(caught.value), str(caught.value)
    assert all(problem.line is not None or problem.key == "" for problem in caught.value.problems)


# ----------------------------------------------------------------------------------------------------- properties

_refused_statuses = ("deleted", "purged")
_invisible = {0x34F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0, *range(0x180B, 0x1810), *range(0xFE00, 0xFE10),
              *range(0xE0100, 0xE01F0)}


def _spelled(text: str) -> str:
    """A string as a list or value that refuses compares it: NFKC, case-folded, no invisible characters or white
    space (``DELETED``, `` deleted`` and ``ｄｅｌｅｔｅｄ`` are all "deleted")."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(char for char in folded if unicodedata.category(char) != "Cf" and ord(char) not in _invisible
                   and not char.isspace())
_refused_ticket = re.compile(r"SEC-.*", re.S)
_ticket = re.compile(r"[A-Z]+-[0-9]{1,6}")


@settings(max_examples=150)
@given(ticket=st.one_of(st.from_regex(_ticket, fullmatch=True), st.from_regex(r"SEC-[0-9]{1,6}", fullmatch=True),
                        st.text(max_size=12)),
       status=st.one_of(st.sampled_from(["open", "closed", "deleted", "purged", "Deleted", " deleted"]),
                        st.text(max_size=8)),
       note=st.one_of(st.none(), st.text(max_size=20), st.just("ADMIN only")))
def test_negated_constraints_decide_as_their_reference(ticket: str, status: str, note: str | None) -> None:
    env = ToolEnv()

    def set_status(ticket: str, status: str, note: str | None = None) -> str:
        env.ran("set_status", (ticket, status, note))
        return "ok"

    tool(policy=load_policy(POLICIES / "set_status.toml"), registry=env.registry)(set_status)
    expected = (_spelled(status) not in _refused_statuses and _ticket.fullmatch(ticket) is not None
                and _refused_ticket.fullmatch(ticket) is None
                and (note is None or re.fullmatch(r"(?is).*admin.*", note) is None))
    with guardrail.identity(user="u", roles=["agent"]):
        try:
            run_tool_call("set_status", {"ticket": ticket, "status": status, "note": note}, registry=env.registry,
                          store=env.store)
        except guardrail.Denied:
            assert not expected and env.calls == []
        else:
            assert expected and env.calls == [("set_status", (ticket, status, note))]


@settings(max_examples=150)
@given(bcc=st.one_of(st.none(), st.lists(st.one_of(st.from_regex(r"[a-z]{1,5}@acme\.com", fullmatch=True),
                                                   st.from_regex(r"[a-z]{1,5}@[a-z]{1,5}\.(com|test)",
                                                                 fullmatch=True), st.text(max_size=10)),
                                         max_size=3)))
def test_bcc_deny_rule_fires_exactly_when_one_address_is_outside(bcc: list[str] | None) -> None:
    env = ToolEnv()

    def send_email(recipients: list[str], subject: str, body: str = "", bcc: list[str] | None = None) -> str:
        env.ran("send_email", bcc)
        return "sent"

    tool(policy=load_policy(POLICIES / "send_email.toml"), registry=env.registry)(send_email)
    outside = bcc is not None and any(re.fullmatch(r"[^@\s]+@acme\.com", address) is None for address in bcc)
    with guardrail.identity(user="u"):
        try:
            env.call("send_email", {"recipients": ["ann@acme.com"], "subject": "s", "bcc": bcc})
        except guardrail.Denied as refused:
            assert outside and refused.rule == "deny.bcc-outside"
        else:
            assert not outside and env.calls == [("send_email", bcc)]


# ------------------------------------------------------------------------------------------- guardrail policy check


def test_policy_check_knows_every_new_keyword(capsys: pytest.CaptureFixture[str]) -> None:
    from guardrail.cli import main

    assert main(["policy", "check", str(POLICIES)]) == 0  # the test policies use every new key
    out = capsys.readouterr().out
    assert out.endswith("; 0 problems\n") and f"{len(list(POLICIES.glob('*.toml')))} valid policies" in out
    keys = {key for file in POLICIES.glob("*.toml") for key in re.findall(r"(\w+) = ", file.read_text())}
    assert {"not_one_of", "not_pattern", "list", "not_list", "source", "not_source", "untrusted_only", "find",
            "changed", "add"} <= keys


@pytest.mark.parametrize(("body", "line", "words"), [
    ('[[approve]]\nid = "a"\nwhen.to = { not_lsit = "payees:{tenant}" }\n', 6, "unknown key"),
    ('[[aprove]]\nid = "a"\n', 4, "unknown key"),
    ('[args.to]\nsorce = "user"\n', 5, "unknown key"),
    ('[args.to]\nlist = "payees:{tennant}"\n', 5, "unknown placeholder {tennant}"),
    ('[[after_approval]]\nadd = "to"\nlist = "l"\nwhen = "approved"\n', 7, "unknown key"),
    ('[args.to]\nfind = ["url"]\n', 4, "add one of them"),
])
def test_policy_check_reports_a_misspelt_or_useless_keyword_on_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, line: int, words: str) -> None:
    from guardrail.cli import main

    file = tmp_path / "pay.toml"
    file.write_text(f'tool = "pay"\n[[allow]]\nid = "owner"\n{body}')
    assert main(["policy", "check", str(file)]) == 1
    captured = capsys.readouterr()
    problem = next(row for row in captured.out.splitlines() + captured.err.splitlines() if str(file) in row)
    assert problem.startswith(f"{file}:{line}: ") and words in problem, captured
    assert "Traceback" not in captured.out + captured.err


def test_the_agent_scenario_runs_and_its_policies_check(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/agent_gate.py (the measured scenario) keeps running: its policies pass the checker and every
    task and attack replays through the gate without an error (the figures are the bench's to print)."""
    import os
    import subprocess
    import sys

    from guardrail.cli import main

    root = Path(__file__).resolve().parents[2]
    assert main(["policy", "check", str(root / "bench" / "agent_env" / "policies")]) == 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(root / "bench" / "agent_gate.py")], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Legitimate tasks: 30" in done.stdout and "Attacks: 16" in done.stdout and "stopped " in done.stdout
