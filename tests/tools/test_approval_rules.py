"""Approval that depends on the arguments: ``[[approve]]`` rules make an allowed call wait for a person ("a known
payee runs, an unknown payee waits"; "mail inside the company runs, outside waits"), on the existing approvals
machinery (a token bound to the tool, the checked arguments and the caller, redeemed once).

Real policy files from ``tests/tools/policies/`` through ``execute_tool_call``; lists in a real store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.tool_env import ToolEnv, audits

import guardrail
from guardrail.tools.execute import tool

POLICIES = Path(__file__).parent / "policies"
KNOWN = "DE89370400440532013000"
UNKNOWN = "GB29NWBK60161331926819"


@pytest.fixture
def bank(env: ToolEnv) -> ToolEnv:
    def send_money(recipient: str, amount: float, subject: str = "") -> str:
        env.ran("send_money", (recipient, amount))
        return f"sent {amount} to {recipient}"

    tool(policy=POLICIES / "send_money.toml", registry=env.registry)(send_money)
    guardrail.tools.lists(env.store).add("payees:acme", KNOWN)
    return env


def parked(env: ToolEnv, name: str, arguments: dict[str, Any], **kwargs: Any) -> guardrail.ApprovalRequired:
    before = len(env.calls)
    with pytest.raises(guardrail.ApprovalRequired) as caught:
        env.call(name, arguments, **kwargs)
    assert len(env.calls) == before, "a parked call reached the tool"
    return caught.value


def test_a_known_payee_runs_an_unknown_payee_waits_for_a_person(bank: ToolEnv) -> None:
    with guardrail.identity(tenant="acme", user="u"), capture_logs() as logs:
        assert bank.call("send_money", {"recipient": KNOWN, "amount": 10}) == f"sent 10.0 to {KNOWN}"
        waiting = parked(bank, "send_money", {"recipient": UNKNOWN, "amount": 10})
        assert waiting.rule == "approve.unknown-payee" and waiting.token not in str(waiting)
        with pytest.raises(guardrail.Denied):  # not approved yet
            bank.call("send_money", {"recipient": UNKNOWN, "amount": 10}, approval_token=waiting.token)
        assert guardrail.approve(waiting.token, approver="lead", store=bank.store)
        with pytest.raises(guardrail.Denied):  # the token is for exactly that call
            bank.call("send_money", {"recipient": UNKNOWN, "amount": 11}, approval_token=waiting.token)
        bank.call("send_money", {"recipient": UNKNOWN, "amount": 10}, approval_token=waiting.token)
    with guardrail.identity(tenant="acme", user="someone-else"):  # nor for another caller
        again = parked(bank, "send_money", {"recipient": "FR1420041010050500013M02606", "amount": 3})
        assert guardrail.approve(again.token, approver="lead", store=bank.store)
    with guardrail.identity(tenant="acme", user="u"), pytest.raises(guardrail.Denied) as caught:
        bank.call("send_money", {"recipient": "FR1420041010050500013M02606", "amount": 3}, approval_token=again.token)
    assert caught.value.rule == "approval"
    assert bank.calls == [("send_money", (KNOWN, 10.0)), ("send_money", (UNKNOWN, 10.0))]
    records = audits(logs)
    assert [(r["decision"], r["rule"]) for r in records][:2] == [("executed", "allow.account-owner"),
                                                                 ("pending_approval", "approve.unknown-payee")]


def test_any_matching_approve_rule_asks_and_deny_wins_over_approval(bank: ToolEnv) -> None:
    guardrail.tools.lists(bank.store).add("blocked:acme", UNKNOWN)
    with guardrail.identity(tenant="acme", user="u"):
        assert parked(bank, "send_money", {"recipient": KNOWN, "amount": 5000}).rule == "approve.large"
        with pytest.raises(guardrail.Denied) as caught:  # blocked and unknown: the deny rule decides
            bank.call("send_money", {"recipient": UNKNOWN, "amount": 10})
        assert caught.value.rule == "deny.blocked"
        with pytest.raises(guardrail.Denied) as caught:  # an argument constraint still refuses outright
            bank.call("send_money", {"recipient": KNOWN, "amount": 0})
        assert caught.value.rule == "args.amount"
    assert bank.calls == []


def test_a_condition_that_cannot_judge_fails_closed(bank: ToolEnv) -> None:
    # no tenant: "blocked:{tenant}" and "payees:{tenant}" cannot be named, so nothing about the payee is known:
    # the deny rule counts as met (and so would the approve rule)
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied) as caught:
        bank.call("send_money", {"recipient": KNOWN, "amount": 10})
    assert caught.value.rule == "deny.blocked"

    def invite_member(email: str) -> str:
        bank.ran("invite", email)
        return "invited"

    tool(policy=POLICIES / "invite_member.toml", registry=bank.registry)(invite_member)
    with guardrail.identity(user="u", roles=["admin"]):
        assert parked(bank, "invite_member", {"email": "a@acme.com"}).rule == "approve.new-member"
    assert bank.calls == []


def test_mail_inside_the_company_runs_outside_waits(env: ToolEnv) -> None:
    def send_email(recipients: list[str], subject: str, body: str = "", bcc: list[str] | None = None) -> str:
        env.ran("send_email", recipients)
        return "sent"

    tool(policy=POLICIES / "send_email.toml", registry=env.registry)(send_email)
    with guardrail.identity(user="u"), guardrail.tools.run_context(user="mail the team"):
        env.call("send_email", {"recipients": ["ann@acme.com", "bob@acme.com"], "subject": "Q3"})
        waiting = parked(env, "send_email", {"recipients": ["ann@acme.com", "c@client.test"], "subject": "Q3"})
        assert waiting.rule == "approve.outside-recipient"
        with pytest.raises(guardrail.Denied) as caught:  # a bcc outside is refused, approval or not
            env.call("send_email", {"recipients": ["c@client.test"], "subject": "Q3", "bcc": ["x@evil.test"]})
        assert caught.value.rule == "deny.bcc-outside"
        guardrail.approve(waiting.token, approver="lead", store=env.store)
        env.call("send_email", {"recipients": ["ann@acme.com", "c@client.test"], "subject": "Q3"},
                 approval_token=waiting.token)
    assert env.calls == [("send_email", ["ann@acme.com", "bob@acme.com"]),
                         ("send_email", ["ann@acme.com", "c@client.test"])]


def test_an_approved_and_run_call_is_replayed_not_asked_again(bank: ToolEnv) -> None:
    args = {"recipient": UNKNOWN, "amount": 10}
    with guardrail.identity(tenant="acme", user="u"):
        waiting = parked(bank, "send_money", args, idempotency_key="pay-1")
        guardrail.approve(waiting.token, approver="lead", store=bank.store)
        first = bank.call("send_money", args, idempotency_key="pay-1", approval_token=waiting.token)
        assert bank.call("send_money", args, idempotency_key="pay-1") == first  # replayed: no second payment
    assert bank.calls == [("send_money", (UNKNOWN, 10.0))]


def test_the_file_level_approval_still_parks_every_call(env: ToolEnv) -> None:
    env.add(lambda to: env.ran("wire", to), 'approval = "required"\n[[allow]]\nid = "a"\n[[approve]]\nid = "x"\n',
            name="wire")
    with guardrail.identity(user="u"):
        assert parked(env, "wire", {"to": "a"}).rule == "approval"
