"""Who may run what: the caller's identity (never the model's arguments), deny rules over every allow, default
deny, anonymous callers, conditions on arguments, and denials that tell the model (and an outsider) nothing.

Real policies parsed from TOML through ``execute_tool_call``; nothing of guardrail's own is mocked."""

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.tool_env import GENERIC, OPEN, ToolEnv, audits

import guardrail
from guardrail.errors import GuardrailError, PolicyError
from guardrail.tools.execute import tool
from guardrail.tools.identity import current_identity

# --------------------------------------------------------------------------------------------------------- identity


def test_model_supplied_identity_fields_grant_nothing(env: ToolEnv) -> None:
    def transfer(tenant: str, user: str, roles: list[str], amount: int) -> str:
        env.ran("transfer", tenant)
        return "done"

    env.add(transfer, '[[allow]]\nid = "acme-admins"\ntenants = ["acme"]\nusers = ["root"]\nroles = ["admin"]\n')
    args = {"tenant": "acme", "user": "root", "roles": ["admin"], "amount": 1}
    with pytest.raises(guardrail.Denied):
        env.call("transfer", args)  # anonymous
    for who in ({"tenant": "evil", "user": "root", "roles": ["admin"]},
                {"tenant": "acme", "user": "x", "roles": ["admin"]},
                {"tenant": "acme", "user": "root", "roles": ["viewer"]}):
        with guardrail.identity(**who), pytest.raises(guardrail.Denied):  # type: ignore[arg-type]
            env.call("transfer", args)
    with guardrail.identity(tenant="acme", user="root", roles=["admin"]):
        assert env.call("transfer", args) == "done"
    assert len(env.calls) == 1


def test_roles_as_one_string_are_refused() -> None:
    with pytest.raises(TypeError), guardrail.identity(user="u", roles="admin"):
        pass  # pragma: no cover


def test_identity_does_not_leak_across_threads_or_asyncio_tasks(env: ToolEnv) -> None:
    def whoami() -> str:
        who = current_identity()
        assert who is not None
        time.sleep(0.001)
        return f"{who.tenant}/{who.user}"

    env.add(whoami, OPEN)

    def in_thread(i: int) -> str:
        with guardrail.identity(tenant=f"t{i}", user=f"u{i}"):
            return str(env.call("whoami", {}))

    with ThreadPoolExecutor(max_workers=16) as pool:
        assert list(pool.map(in_thread, range(40))) == [f"t{i}/u{i}" for i in range(40)]
        # a pool thread does not inherit the submitting thread's identity: it is anonymous, so denied
        with guardrail.identity(tenant="main", user="main"), pytest.raises(guardrail.Denied):
            pool.submit(env.call, "whoami", {}).result()

    async def task(i: int) -> str:
        with guardrail.identity(tenant=f"a{i}", user=f"b{i}"):
            await asyncio.sleep(0)
            return str(await asyncio.to_thread(env.call, "whoami", {}))

    async def main() -> list[str]:
        return await asyncio.gather(*(task(i) for i in range(40)))

    assert asyncio.run(main()) == [f"a{i}/b{i}" for i in range(40)]
    assert current_identity() is None


# ----------------------------------------------------------------------- deny wins, default deny, anonymous callers


def test_deny_wins_over_every_allow_and_order_of_rules_does_not_matter(env: ToolEnv) -> None:
    policy = ('[[allow]]\nid = "support"\nroles = ["support"]\n[[allow]]\nid = "everyone"\n'
              '[[deny]]\nid = "big"\nwhen.amount = { min = 1000 }\n[[deny]]\nid = "blocked"\nusers = ["mallory"]\n')
    env.add(lambda amount: env.ran("refund", amount), policy, name="refund")
    with guardrail.identity(user="u", roles=["support", "admin"]), capture_logs() as logs:
        with pytest.raises(guardrail.Denied):
            env.call("refund", {"amount": 1000})
        assert env.call("refund", {"amount": 999.99}) is None
    assert [r["rule"] for r in audits(logs)] == ["deny.big", "allow.support"]
    with guardrail.identity(user="mallory", roles=["support"]), pytest.raises(guardrail.Denied):
        env.call("refund", {"amount": 1})


def test_policy_without_allow_rules_mismatched_tool_or_missing_file_denies(env: ToolEnv, tmp_path: Path) -> None:
    env.add(lambda: env.ran("a", 1), "", name="a")  # no [[allow]]: default deny
    env.add(lambda: env.ran("b", 1), 'tool = "not_b"\n' + OPEN, name="b")
    tool(name="c", policy=tmp_path / "missing.toml", registry=env.registry)(lambda: env.ran("c", 1))
    (tmp_path / "d.toml").write_bytes(b'tool = "d"\n\xff\xfe[[allow]]\nid = "x"\n')
    # issue 13: a policy file that cannot be read is a load error at registration, not a silent "no-policy"
    with pytest.raises(PolicyError, match=r"d\.toml.*not UTF-8"):
        tool(name="d", policy=tmp_path / "d.toml", registry=env.registry)(lambda: env.ran("d", 1))
    with guardrail.identity(user="u", roles=["admin"]), capture_logs() as logs:
        for name in "abc":
            with pytest.raises(guardrail.Denied):
                env.call(name, {})
    assert env.calls == []
    assert [r["rule"] for r in audits(logs)] == ["default-deny", "policy-mismatch", "no-policy"]


def test_when_condition_on_a_missing_or_null_argument_does_not_match(env: ToolEnv) -> None:
    env.add(lambda region=None: env.ran("r", region), '[[allow]]\nid = "eu-only"\nwhen.region = { one_of = ["eu"] }\n',
            name="r")
    with guardrail.identity(user="u"):
        with pytest.raises(guardrail.Denied):
            env.call("r", {})
        with pytest.raises(guardrail.Denied):
            env.call("r", {"region": None})
        env.call("r", {"region": "eu"})
    assert env.calls == [("r", "eu")]


def test_anonymous_callers_match_only_anonymous_allow_rules(env: ToolEnv) -> None:
    env.add(lambda: env.ran("x", 1), OPEN, name="x")
    env.add(lambda: env.ran("y", 1), '[[allow]]\nid = "public"\nanonymous = true\n', name="y")
    with pytest.raises(guardrail.Denied):
        env.call("x", {})
    env.call("y", {})
    assert env.calls == [("y", 1)]


def test_deny_rules_apply_to_anonymous_callers(env: ToolEnv) -> None:
    env.add(lambda amount: env.ran("donate", amount),
            '[[allow]]\nid = "public"\nanonymous = true\n[[deny]]\nid = "big"\nwhen.amount = { min = 1000 }\n',
            name="donate")
    with pytest.raises(guardrail.Denied):
        env.call("donate", {"amount": 5000})
    assert env.calls == []


@pytest.mark.parametrize("case", ["decimal-min", "float-one_of"])
def test_deny_when_fails_closed_on_values_of_another_type(env: ToolEnv, case: str) -> None:
    if case == "decimal-min":
        def pay(amount: Decimal) -> None:
            env.ran("pay", amount)
        env.add(pay, OPEN + '[[deny]]\nid = "big"\nwhen.amount = { min = 1000 }\n')
        arguments: dict[str, Any] = {"amount": "5000"}
    else:
        def pay(amount: float) -> None:  # type: ignore[misc]  # (redefinition in the other branch)
            env.ran("pay", amount)
        env.add(pay, OPEN + '[[deny]]\nid = "five"\nwhen.amount = { one_of = [5] }\n')
        arguments = {"amount": 5}
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied):
        env.call("pay", arguments)
    assert env.calls == []


# ---------------------------------------------------------------------------------------------- denials say nothing


def test_denials_toward_the_model_are_generic(env: ToolEnv) -> None:
    env.add(lambda url: url, '[[allow]]\nid = "internal-rule-name"\nroles = ["x"]\n'
                             '[args.url]\nurl = { hosts = ["internal-api.corp"] }\n', name="fetch")
    with guardrail.identity(user="u", roles=["x"]):
        errors = []
        for args in ({"url": "http://169.254.169.254/"}, {"url": "http://internal-api.corp/"}):
            try:
                env.call("fetch", args)
            except guardrail.Denied as denied:
                errors.append(denied)
    with pytest.raises(guardrail.Denied) as anonymous:
        env.call("fetch", {"url": "https://internal-api.corp/"})
    errors.append(anonymous.value)
    assert len(errors) == 3
    for each in errors:
        shown = f"{each} {each!r} {each.args}"
        assert str(each) == GENERIC and "internal" not in shown and "169.254" not in shown


def test_an_unauthorized_caller_cannot_tell_a_registered_tool_from_an_unknown_one(env: ToolEnv) -> None:
    env.add(lambda user_id: user_id, '[[allow]]\nid = "admins"\nroles = ["admin"]\n', name="admin_delete_user")
    outcomes = []
    with guardrail.identity(user="u", roles=["viewer"]):
        for name in ("admin_delete_user", "admin_no_such_tool"):
            try:
                env.call(name, {"bogus": 1})
            except GuardrailError as error:
                outcomes.append((type(error).__name__, str(error)))
    assert outcomes[0] == outcomes[1]
