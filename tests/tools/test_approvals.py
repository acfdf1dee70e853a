"""Human approval of a tool call: a parked call's token is bound to the tool, the arguments and the identity
that asked; it is redeemed once, expires, cannot be approved twice or after rejection, and never comes from the
model's arguments."""

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from support.tool_env import APPROVAL, OPEN, ToolEnv

import guardrail


def park(env: ToolEnv, name: str, arguments: Any) -> str:
    with pytest.raises(guardrail.ApprovalRequired) as parked:
        env.call(name, arguments)
    assert parked.value.token and parked.value.token not in str(parked.value)
    return parked.value.token


def test_approval_token_abuse_is_denied(env: ToolEnv) -> None:
    env.add(lambda to, amount: env.ran("wire", (to, amount)), APPROVAL, name="wire")
    env.add(lambda to, amount: env.ran("wire2", (to, amount)), APPROVAL, name="wire2")
    args = {"to": "acct-1", "amount": 10}
    store = env.store
    with guardrail.identity(tenant="t", user="u"):
        token = park(env, "wire", args)
        assert not guardrail.approve("x" * 10_000, approver="lead", store=store)
        assert not guardrail.approve("", approver="lead", store=store)
        for bad in (token, "", "x" * 129, token + "x", token[:-1]):
            with pytest.raises(guardrail.Denied):  # pending (not approved), unknown, too long
                env.call("wire", args, approval_token=bad)
        assert guardrail.approve(token, approver="lead", store=store)
        assert not guardrail.approve(token, approver="lead-2", store=store)  # approving twice
        assert not guardrail.reject(token, approver="lead-2", store=store)  # no rejecting after approval
        for name, arguments in (("wire2", args), ("wire", {**args, "amount": 10.5}),
                                ("wire", {**args, "to": "acct-2"})):
            with pytest.raises(guardrail.Denied):  # other tool, changed arguments
                env.call(name, arguments, approval_token=token)
    with guardrail.identity(tenant="t", user="other"), pytest.raises(guardrail.Denied):
        env.call("wire", args, approval_token=token)
    with pytest.raises(guardrail.Denied):  # anonymous
        env.call("wire", args, approval_token=token)
    with guardrail.identity(tenant="t", user="u"):
        env.call("wire", args, approval_token=token)
        with pytest.raises(guardrail.Denied):
            env.call("wire", args, approval_token=token)  # replay
        assert not guardrail.approve(token, approver="lead", store=store)  # approving a used token
        rejected = park(env, "wire", args)
        assert guardrail.reject(rejected, approver="lead", store=store)
        assert not guardrail.approve(rejected, approver="lead", store=store)
        with pytest.raises(guardrail.Denied):
            env.call("wire", args, approval_token=rejected)
    assert env.calls == [("wire", ("acct-1", 10))]


def test_approval_expiry_and_model_supplied_tokens(env: ToolEnv) -> None:
    env.add(lambda to: env.ran("wire", to), 'approval = "required"\napproval_ttl = 0.2\n' + OPEN, name="wire")
    with guardrail.identity(user="u"):
        late = park(env, "wire", {"to": "a"})
        used_late = park(env, "wire", {"to": "b"})
        assert guardrail.approve(used_late, approver="lead", store=env.store)
        time.sleep(0.3)
        assert not guardrail.approve(late, approver="lead", store=env.store)
        with pytest.raises(guardrail.Denied):
            env.call("wire", {"to": "b"}, approval_token=used_late)
        with pytest.raises(guardrail.SchemaViolationError):  # a token inside the model's arguments is no token
            env.call("wire", {"to": "b", "approval_token": used_late})
    assert env.calls == []


def test_approval_bound_to_one_identity_cannot_be_used_by_a_colliding_identity(env: ToolEnv) -> None:
    env.add(lambda to: env.ran("wire", to), 'approval = "required"\n' + OPEN, name="wire")
    for owner, other in ((("a/b", "c"), ("a", "b/c")), ((None, "u"), ("-", "u"))):
        with guardrail.identity(tenant=owner[0], user=owner[1]), pytest.raises(guardrail.ApprovalRequired) as parked:
            env.call("wire", {"to": "acct-1"})
        assert guardrail.approve(parked.value.token, approver="lead", store=env.store)
        with guardrail.identity(tenant=other[0], user=other[1]), pytest.raises(guardrail.Denied):
            env.call("wire", {"to": "acct-1"}, approval_token=parked.value.token)
    assert env.calls == []


def test_fifty_threads_redeeming_one_approved_token_run_it_once(env: ToolEnv) -> None:
    env.add(lambda to: env.ran("wire", to), APPROVAL, name="wire")
    with guardrail.identity(user="u"):
        token = park(env, "wire", {"to": "a"})
    assert guardrail.approve(token, approver="lead", store=env.store)

    def one(_: int) -> str:
        with guardrail.identity(user="u"):
            try:
                env.call("wire", {"to": "a"}, approval_token=token)
                return "ran"
            except guardrail.Denied:
                return "denied"

    with ThreadPoolExecutor(max_workers=50) as pool:
        outcomes = list(pool.map(one, range(50)))
    assert outcomes.count("ran") == 1 and len(env.calls) == 1


def test_retry_of_an_approved_executed_call_with_the_same_key_replays(env: ToolEnv) -> None:
    env.add(lambda to: env.ran("wire", to) or "wired", 'approval = "required"\nidempotency = "required"\n' + OPEN,
            name="wire")
    with guardrail.identity(user="u"):
        token = park(env, "wire", {"to": "a"})
        assert guardrail.approve(token, approver="lead", store=env.store)
        assert env.call("wire", {"to": "a"}, idempotency_key="K", approval_token=token) == "wired"
        assert env.call("wire", {"to": "a"}, idempotency_key="K", approval_token=token) == "wired"  # response lost
    assert len(env.calls) == 1
