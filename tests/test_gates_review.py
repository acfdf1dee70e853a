"""Review of the authorization/tool layer (issue 5): complete mediation, identity, deny-wins, policies that fail
to load, approvals, idempotency, limits, audit completeness and redaction, vendor responses, hostile arguments and
the semantic gate. Real code paths only (real policies parsed from TOML, real stores incl. a real redis-server, real
SDK response objects); nothing of guardrail's own is mocked.

Tests marked ``xfail(strict=True, reason="BUG: ...")`` assert the correct behaviour of something that is broken
today; they document the bug and turn into failures (XPASS) the moment it is fixed, so the marker can be removed.
"""

import asyncio
import contextlib
import json
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from helpers import finishes
from pydantic import SecretStr
from redis_server import redis_url  # noqa: F401  (session fixture that starts a real redis-server)
from structlog.testing import capture_logs

import guardrail
from guardrail.errors import GuardrailError, RuleError, SemanticViolation
from guardrail.gates.semantic import evaluate, exit_status, in_range, member_of, relation, rule, select
from guardrail.store import IdempotencyConflict, IdempotencyFailed, MemoryStore, RedisStore, SQLiteStore
from guardrail.store.base import Store
from guardrail.tools.execute import ToolRegistry, execute_tool_call, execute_tool_calls, tool
from guardrail.tools.identity import current_identity
from guardrail.tools.policy.loader import PolicyError, check_policies, parse_policy

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ROOT / "policies"
GENERIC = "This action is not permitted."
OPEN = '[[allow]]\nid = "anyone-identified"\n'


# -- helpers ------------------------------------------------------------------------------------------------


class Env:
    """A private registry and store; ``add`` registers a function under a policy written as TOML text."""

    def __init__(self, store: Store | None = None) -> None:
        self.registry = ToolRegistry()
        self.store: Store = store or MemoryStore()
        self.calls: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def add(self, fn: Callable[..., Any], policy: str, *, name: str | None = None, **kwargs: Any) -> None:
        tool_name = name or fn.__name__
        text = policy if policy.lstrip().startswith("tool") else f'tool = "{tool_name}"\n{policy}'
        tool(name=tool_name, policy=parse_policy(text), registry=self.registry, **kwargs)(fn)

    def ran(self, name: str, value: Any) -> Any:
        """Record that a tool really ran; returns None (so ``lambda: env.ran(...) or result`` works)."""
        with self.lock:
            self.calls.append((name, value))

    def call(self, name: str, arguments: Any, **kwargs: Any) -> Any:
        return execute_tool_call(name, arguments, registry=self.registry, store=self.store, **kwargs)


@pytest.fixture
def env() -> Env:
    return Env()


def audits(logs: list[Any]) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry.get("event") == "guardrail.audit"]


def colliding_strings() -> tuple[str, str]:
    """Two strings whose iteration order in a set depends on insertion order in *this* process (same hash
    bucket of a small set): the canonical form of a ``set`` argument must not depend on that."""
    first = "tag-0"
    for i in range(1, 5000):
        other = f"tag-{i}"
        if list({first, other}) != list({other, first}):
            return first, other
    raise AssertionError("no colliding pair found")  # pragma: no cover


@pytest.fixture(params=["memory", "sqlite", "redis"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "memory":
        store: Store = MemoryStore()
    elif request.param == "sqlite":
        store = SQLiteStore(tmp_path / "review.sqlite3")
    else:
        store = RedisStore(request.getfixturevalue("redis_url"), prefix=f"review:{uuid.uuid4().hex[:10]}:")
    yield store
    store.close()


# -- complete mediation: what is authorized is exactly what runs ---------------------------------------------


def test_unknown_tool_never_reaches_any_function_and_denial_is_generic(env: Env) -> None:
    env.add(lambda q: env.ran("search", q), OPEN, name="search")
    with guardrail.identity(user="u"):
        for name in ("Search", "search\u200b", "ѕearch", "search ", None, 42, ["search"]):
            with pytest.raises(guardrail.Denied) as caught:
                env.call(name, {"q": "x"})  # type: ignore[arg-type]
            assert str(caught.value) == GENERIC and caught.value.args == (GENERIC,)
    assert env.calls == []


def test_tool_receives_exactly_the_authorized_values_after_coercion(env: Env) -> None:
    seen: list[Any] = []

    def pay(amount: float, count: int, note: str = "none") -> str:
        seen.append((amount, type(amount), count, type(count), note))
        return "ok"

    env.add(pay, OPEN + '[args.amount]\nmax = 100\n[args.count]\nmax = 3\n')
    with guardrail.identity(user="u"), capture_logs() as logs:
        assert env.call("pay", '{"amount": "1e1", "count": 3.0}') == "ok"
        for bad in ('{"amount": "1e3", "count": 1}', '{"amount": 1, "count": "4"}',
                    '{"amount": 100.0000001, "count": 1}'):
            with pytest.raises(guardrail.Denied):
                env.call("pay", bad)
    assert seen == [(10.0, float, 3, int, "none")]
    executed = [r for r in audits(logs) if r["decision"] == "executed"]
    assert executed[0]["arguments"] == {"amount": 10.0, "count": 3, "note": "none"}  # the default was authorized


def test_a_positive_decision_for_other_arguments_cannot_run_a_call(env: Env) -> None:
    from guardrail.tools.authz import authorize
    from guardrail.tools.execute import run_sealed

    env.add(lambda x: env.ran("t", x), OPEN, name="t")
    found = env.registry.get("t")
    assert found is not None
    with guardrail.identity(user="u") as who:
        decision = authorize(found.policy(), "t", {"x": 1}, who)
    assert decision.allowed
    one, two = found.arguments.model_validate({"x": 1}), found.arguments.model_validate({"x": 2})
    with pytest.raises(guardrail.Denied):
        run_sealed(found, two, {"x": 2}, decision)
    with pytest.raises(guardrail.Denied):  # the canonical form given does not match the model that would run
        run_sealed(found, two, {"x": 1}, decision)
    with pytest.raises(guardrail.Denied):
        run_sealed(found, one, {"x": 1}, type(decision)(True, "t", "forged", "", "1", None, decision.arguments_hash))
    assert env.calls == []


def test_secretstr_argument_reaches_the_tool_unmasked(env: Env) -> None:
    got: list[str] = []

    def login(user: str, password: SecretStr) -> str:
        got.append(password.get_secret_value())
        return "ok"

    env.add(login, OPEN)
    with guardrail.identity(user="u"):
        env.call("login", {"user": "bob", "password": "hunter2-canary"})
    assert got == ["hunter2-canary"]


def test_a_default_the_annotation_does_not_admit_still_runs(env: Env) -> None:
    def search(q: str, limit: int = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        return f"{q}:{limit}"

    env.add(search, OPEN)
    with guardrail.identity(user="u"):
        assert env.call("search", {"q": "x"}) == "x:None"


def test_set_arguments_have_one_canonical_hash(env: Env) -> None:
    a, b = colliding_strings()

    def tag(tags: set[str]) -> int:
        env.ran("tag", tags)
        return len(env.calls)

    env.add(tag, 'idempotency = "required"\n' + OPEN)
    with guardrail.identity(user="u"):
        first = env.call("tag", {"tags": [a, b]})
        again = env.call("tag", {"tags": [b, a]})  # the same set: a retry must replay, not run again
    assert len(env.calls) == 1 and first == again


def test_audit_records_the_authorized_arguments_even_if_the_tool_mutates_them(env: Env) -> None:
    def enqueue(items: Any) -> str:
        items.append("injected-by-tool")
        return "ok"

    env.add(enqueue, OPEN)
    with guardrail.identity(user="u"), capture_logs() as logs:
        env.call("enqueue", {"items": [1]})
    (record,) = audits(logs)
    assert record["arguments"] == {"items": [1]}


def test_tools_defined_under_future_annotations_work(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "review_future_tools.py").write_text(
        "from __future__ import annotations\n"
        "from decimal import Decimal\n"
        "def refund(order_id: str, amount: Decimal) -> str:\n"
        "    return f'{order_id}:{amount}'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import review_future_tools  # type: ignore[import-not-found]

    env.add(review_future_tools.refund, OPEN)
    with guardrail.identity(user="u"):
        assert env.call("refund", {"order_id": "ORD-1", "amount": "12.50"}) == "ORD-1:12.50"


# -- identity ---------------------------------------------------------------------------------------------


def test_model_supplied_identity_fields_grant_nothing(env: Env) -> None:
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


def test_identity_does_not_leak_across_threads_or_asyncio_tasks(env: Env) -> None:
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


def test_approval_bound_to_one_identity_cannot_be_used_by_a_colliding_identity(env: Env) -> None:
    env.add(lambda to: env.ran("wire", to), 'approval = "required"\n' + OPEN, name="wire")
    for owner, other in ((("a/b", "c"), ("a", "b/c")), ((None, "u"), ("-", "u"))):
        with guardrail.identity(tenant=owner[0], user=owner[1]), pytest.raises(guardrail.ApprovalRequired) as parked:
            env.call("wire", {"to": "acct-1"})
        assert guardrail.approve(parked.value.token, approver="lead", store=env.store)
        with guardrail.identity(tenant=other[0], user=other[1]), pytest.raises(guardrail.Denied):
            env.call("wire", {"to": "acct-1"}, approval_token=parked.value.token)
    assert env.calls == []


# -- policies: deny wins, default deny, anonymous callers, broken files -------------------------------------


def test_deny_wins_over_every_allow_and_order_of_rules_does_not_matter(env: Env) -> None:
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


def test_policy_without_allow_rules_mismatched_tool_or_missing_file_denies(env: Env, tmp_path: Path) -> None:
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


def test_two_policy_files_for_one_tool_are_a_problem(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('tool = "refund"\n' + OPEN)
    (tmp_path / "b.toml").write_text('tool = "refund"\n[[allow]]\nid = "y"\n')
    found, problems = check_policies(tmp_path)
    assert list(found) == ["refund"] and len(problems) == 1 and problems[0].key == "tool"


def test_when_condition_on_a_missing_or_null_argument_does_not_match(env: Env) -> None:
    env.add(lambda region=None: env.ran("r", region), '[[allow]]\nid = "eu-only"\nwhen.region = { one_of = ["eu"] }\n',
            name="r")
    with guardrail.identity(user="u"):
        with pytest.raises(guardrail.Denied):
            env.call("r", {})
        with pytest.raises(guardrail.Denied):
            env.call("r", {"region": None})
        env.call("r", {"region": "eu"})
    assert env.calls == [("r", "eu")]


def test_anonymous_callers_match_only_anonymous_allow_rules(env: Env) -> None:
    env.add(lambda: env.ran("x", 1), OPEN, name="x")
    env.add(lambda: env.ran("y", 1), '[[allow]]\nid = "public"\nanonymous = true\n', name="y")
    with pytest.raises(guardrail.Denied):
        env.call("x", {})
    env.call("y", {})
    assert env.calls == [("y", 1)]


def test_deny_rules_apply_to_anonymous_callers(env: Env) -> None:
    env.add(lambda amount: env.ran("donate", amount),
            '[[allow]]\nid = "public"\nanonymous = true\n[[deny]]\nid = "big"\nwhen.amount = { min = 1000 }\n',
            name="donate")
    with pytest.raises(guardrail.Denied):
        env.call("donate", {"amount": 5000})
    assert env.calls == []


@pytest.mark.parametrize("policy", [
    OPEN + "[args.ammount]\nmax = 100\n",
    OPEN + '[[deny]]\nid = "big"\nwhen.ammount = { min = 100 }\n',
    OPEN + '[limits]\nspend = { arg = "ammount", max = 100, per_seconds = 60 }\n',
], ids=["args", "deny-when", "spend-arg"])
def test_policy_naming_an_argument_the_tool_does_not_have_denies(env: Env, policy: str) -> None:
    # issue 13: a load error naming the argument, at registration (the tool is never registered)
    with pytest.raises(PolicyError, match="pay has no parameter ammount"):
        env.add(lambda amount: env.ran("pay", amount), policy, name="pay")
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied):
        env.call("pay", {"amount": 5000})
    assert env.calls == []


@pytest.mark.parametrize("case", ["decimal-min", "float-one_of"])
def test_deny_when_fails_closed_on_values_of_another_type(env: Env, case: str) -> None:
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


@pytest.mark.parametrize("extra", ["idempotency_ttl = inf", "approval_ttl = inf", "[args.x]\nmax = nan",
                                   "[args.x]\nmin = nan",
                                   '[limits]\nspend = { arg = "x", max = inf, per_seconds = 60 }',
                                   "[limits]\nrate = { calls = 1, per_seconds = inf }"])
def test_policy_with_non_finite_numbers_is_refused_at_load(extra: str) -> None:
    with pytest.raises(PolicyError):
        parse_policy(f'tool = "t"\n{extra}\n')


def test_nan_bound_does_not_allow_everything(env: Env) -> None:
    with pytest.raises(PolicyError, match="finite"):  # refused when the policy is loaded
        env.add(lambda amount: env.ran("pay", amount), OPEN + "[args.amount]\nmin = 0\nmax = nan\n", name="pay")
    assert env.calls == []


def test_policy_file_that_cannot_be_parsed_denies_instead_of_crashing(env: Env, tmp_path: Path) -> None:
    (tmp_path / "deep.toml").write_text('tool = "deep"\n' + OPEN + "x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(PolicyError, match=r"deep\.toml"):  # issue 13: a load error, not a crash or a silent drop
        tool(name="deep", policy=tmp_path / "deep.toml", registry=env.registry)(lambda: env.ran("deep", 1))
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied):
        env.call("deep", {})
    _, problems = check_policies(tmp_path)
    assert problems


# -- approvals ----------------------------------------------------------------------------------------------


APPROVAL = 'approval = "required"\n' + OPEN


def park(env: Env, name: str, arguments: Any) -> str:
    with pytest.raises(guardrail.ApprovalRequired) as parked:
        env.call(name, arguments)
    assert parked.value.token and parked.value.token not in str(parked.value)
    return parked.value.token


def test_approval_token_abuse_is_denied(env: Env) -> None:
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


def test_approval_expiry_and_model_supplied_tokens(env: Env) -> None:
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


def test_fifty_threads_redeeming_one_approved_token_run_it_once(env: Env) -> None:
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


def test_retry_of_an_approved_executed_call_with_the_same_key_replays(env: Env) -> None:
    env.add(lambda to: env.ran("wire", to) or "wired", 'approval = "required"\nidempotency = "required"\n' + OPEN,
            name="wire")
    with guardrail.identity(user="u"):
        token = park(env, "wire", {"to": "a"})
        assert guardrail.approve(token, approver="lead", store=env.store)
        assert env.call("wire", {"to": "a"}, idempotency_key="K", approval_token=token) == "wired"
        assert env.call("wire", {"to": "a"}, idempotency_key="K", approval_token=token) == "wired"  # response lost
    assert len(env.calls) == 1


# -- idempotency --------------------------------------------------------------------------------------------


def test_idempotency_basics(env: Env) -> None:
    counter = iter(range(1, 100))

    def charge(amount: int) -> dict[str, int]:
        if amount == 13:
            raise RuntimeError("card declined")
        env.ran("charge", amount)
        return {"n": next(counter)}

    env.add(charge, 'idempotency = "required"\n' + OPEN)
    env.add(lambda amount: env.ran("other", amount) or "other", 'idempotency = "required"\n' + OPEN, name="other")
    with guardrail.identity(user="u"):
        assert env.call("charge", {"amount": 1}, idempotency_key="K") == {"n": 1}
        assert env.call("charge", {"amount": 1}, idempotency_key="K") == {"n": 1}
        assert env.call("charge", '{"amount": 1.0}', idempotency_key="K") == {"n": 1}  # same canonical arguments
        with pytest.raises(IdempotencyConflict):
            env.call("charge", {"amount": 2}, idempotency_key="K")
        assert env.call("other", {"amount": 2}, idempotency_key="K") == "other"  # keys are per tool
        with pytest.raises(RuntimeError):  # a failing tool's error is recorded (issue 16) ...
            env.call("charge", {"amount": 13}, idempotency_key="F")
        with pytest.raises(IdempotencyFailed):  # ... and replayed: it never runs twice
            env.call("charge", {"amount": 13}, idempotency_key="F")
        with pytest.raises(guardrail.SchemaViolationError):  # invalid arguments store nothing
            env.call("charge", {"amount": "lots"}, idempotency_key="V")
        assert env.call("charge", {"amount": 3}, idempotency_key="V") == {"n": 2}
        assert env.call("charge", {"amount": 4}) == env.call("charge", {"amount": 4}) == {"n": 3}  # derived key
    with guardrail.identity(user="someone-else"):  # derived keys are per identity
        assert env.call("charge", {"amount": 4}) == {"n": 4}
    assert [c for c in env.calls if c[0] == "charge"] == [("charge", 1), ("charge", 3), ("charge", 4), ("charge", 4)]


def test_replay_after_the_policy_changed_is_denied(env: Env) -> None:
    env.add(lambda x: env.ran("t", x) or "ran", 'idempotency = "required"\n' + OPEN, name="t")
    with guardrail.identity(user="u"):
        assert env.call("t", {"x": 1}, idempotency_key="K") == "ran"
    env.registry.remove("t")
    env.add(lambda x: env.ran("t", x) or "ran",
            'idempotency = "required"\n[[allow]]\nid = "admins"\nroles = ["admin"]\n', name="t")
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied):
        env.call("t", {"x": 1}, idempotency_key="K")


def test_idempotency_keys_expire_after_the_policy_ttl(env: Env) -> None:
    env.add(lambda x: env.ran("t", x), 'idempotency = "required"\nidempotency_ttl = 0.2\n' + OPEN, name="t")
    with guardrail.identity(user="u"):
        env.call("t", {"x": 1}, idempotency_key="K")
        env.call("t", {"x": 1}, idempotency_key="K")
        time.sleep(0.3)
        env.call("t", {"x": 1}, idempotency_key="K")
    assert len(env.calls) == 2


@pytest.mark.parametrize("kind", ["memory", "redis"])
def test_explicit_idempotency_keys_are_scoped_per_identity(kind: str, request: pytest.FixtureRequest) -> None:
    store: Store = MemoryStore() if kind == "memory" else RedisStore(
        request.getfixturevalue("redis_url"), prefix=f"review:{uuid.uuid4().hex[:10]}:")
    env = Env(store)

    def statement(month: str) -> dict[str, Any]:
        who = current_identity()
        assert who is not None
        return {"owner": who.user, "month": month, "iban": f"IBAN-OF-{who.user}"}

    env.add(statement, OPEN)
    try:
        with guardrail.identity(tenant="t1", user="alice"):
            assert env.call("statement", {"month": "2026-11"}, idempotency_key="order-1")["owner"] == "alice"
        with guardrail.identity(tenant="t2", user="bob"):
            assert env.call("statement", {"month": "2026-11"}, idempotency_key="order-1")["owner"] == "bob"
            with pytest.raises(IdempotencyConflict):  # the same caller reusing its key with other arguments
                env.call("statement", {"month": "2026-10"}, idempotency_key="order-1")
    finally:
        store.close()


def test_a_result_that_cannot_be_stored_does_not_run_the_side_effect_twice(env: Env) -> None:
    class Receipt:
        pass

    def ship(order: str) -> Receipt:
        env.ran("ship", order)
        return Receipt()

    env.add(ship, 'idempotency = "required"\n' + OPEN)
    with guardrail.identity(user="u"):
        for _ in range(2):
            with contextlib.suppress(Exception):
                env.call("ship", {"order": "o-1"}, idempotency_key="K")
    assert len(env.calls) == 1


def test_long_idempotency_keys_and_user_ids_give_a_typed_outcome(env: Env) -> None:
    env.add(lambda x: env.ran("t", x) or "ran", OPEN + "[limits]\nrate = { calls = 5, per_seconds = 60 }\n", name="t")
    with guardrail.identity(user="u" * 600):
        assert env.call("t", {"x": 1}) == "ran"
    with guardrail.identity(user="u"), contextlib.suppress(GuardrailError):  # refusing it is fine, ValueError not
        env.call("t", {"x": 2}, idempotency_key="k" * 600)


# -- limits -------------------------------------------------------------------------------------------------


def test_rate_and_spend_limits_are_exact_under_fifty_threads(any_store: Store) -> None:
    env = Env(any_store)
    env.add(lambda n: env.ran("ping", n), OPEN + "[limits]\nrate = { calls = 10, per_seconds = 60 }\n", name="ping")
    env.add(lambda amount: env.ran("pay", amount),
            OPEN + '[limits]\nspend = { arg = "amount", max = 100, per_seconds = 60 }\n', name="pay")

    def one(i: int) -> tuple[str, str]:
        outcome = []
        with guardrail.identity(tenant="t", user="u"):
            for name, args in (("ping", {"n": i}), ("pay", {"amount": 7.5})):
                try:
                    env.call(name, args)
                    outcome.append("ran")
                except guardrail.Denied:
                    outcome.append("denied")
        return outcome[0], outcome[1]

    with ThreadPoolExecutor(max_workers=50) as pool:
        outcomes = list(pool.map(one, range(50)))
    assert [o[0] for o in outcomes].count("ran") == 10
    assert [o[1] for o in outcomes].count("ran") == 13  # 13 * 7.5 = 97.5 <= 100 < 105
    assert sum(1 for c in env.calls if c[0] == "ping") == 10


def test_spend_refuses_hostile_amounts_and_replays_are_free(env: Env) -> None:
    from typing import Any as AnyType

    def pay(amount: AnyType) -> str:
        env.ran("pay", amount)
        return "paid"

    env.add(pay, OPEN + '[limits]\nspend = { arg = "amount", max = 100, per_seconds = 60 }\n')
    env.add(lambda n: env.ran("ping", n) or "pong", OPEN + "[limits]\nrate = { calls = 1, per_seconds = 60 }\n",
            name="ping")
    with guardrail.identity(user="u"):
        for bad in (-1, True, "50", None, [50], {"v": 50}):
            with pytest.raises(guardrail.Denied):
                env.call("pay", {"amount": bad})
        for bad_text in ('{"amount": NaN}', '{"amount": Infinity}', '{"amount": -Infinity}', '{"amount": 1e999}'):
            with pytest.raises((guardrail.Denied, guardrail.ParseError)):  # Any: NaN is dumped as null
                env.call("pay", bad_text)
        assert env.call("pay", {"amount": 60}, idempotency_key="K") == "paid"
        for _ in range(5):  # replays cost neither spend nor rate
            assert env.call("pay", {"amount": 60}, idempotency_key="K") == "paid"
            assert env.call("ping", {"n": 1}, idempotency_key="P") == "pong"
        with pytest.raises(guardrail.Denied):  # 60 + 41 > 100
            env.call("pay", {"amount": 41})
        with pytest.raises(guardrail.Denied):  # rate: one call per minute
            env.call("ping", {"n": 2})
    assert env.calls == [("pay", 60), ("ping", 1)]


def test_a_call_denied_by_one_limit_consumes_no_other_limit(env: Env) -> None:
    env.add(lambda amount: env.ran("pay", amount), OPEN + "[limits]\nrate = { calls = 2, per_seconds = 60 }\n"
            'spend = { arg = "amount", max = 100, per_seconds = 60 }\n', name="pay")
    with guardrail.identity(user="u"):
        env.call("pay", {"amount": 90})
        with pytest.raises(guardrail.Denied):
            env.call("pay", {"amount": 50})  # over the spend budget
        env.call("pay", {"amount": 5})  # the second real execution: within rate (2) and spend (95)
    assert [c[1] for c in env.calls] == [90, 5]


def test_spend_budget_is_exact_for_decimal_amounts(env: Env) -> None:
    env.add(lambda amount: env.ran("pay", amount),
            OPEN + '[limits]\nspend = { arg = "amount", max = 0.3, per_seconds = 60 }\n', name="pay")
    with guardrail.identity(user="u"):
        for _ in range(3):
            env.call("pay", {"amount": 0.1})
    assert len(env.calls) == 3


def test_huge_integer_spend_is_denied(env: Env) -> None:
    def pay(amount: int) -> None:
        env.ran("pay", amount)

    env.add(pay, OPEN + '[limits]\nspend = { arg = "amount", max = 100, per_seconds = 60 }\n')
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied):
        env.call("pay", '{"amount": 1' + "0" * 400 + "}")
    assert env.calls == []


# -- audit --------------------------------------------------------------------------------------------------


def audit_env() -> Env:
    env = Env()

    def act(n: int) -> dict[str, int]:
        if n == 13:
            raise RuntimeError("boom")
        return {"n": n}

    env.add(act, 'version = "v7"\n' + OPEN + "[args.n]\nmax = 100\n",
            rules=[rule(lambda v, c: None if v["n"] != 42 else "not 42", name="no-42")])
    env.add(lambda n: n, 'version = "v7"\n' + APPROVAL, name="gated")
    return env


OUTCOMES: list[tuple[str, str, Any, str]] = [
    ("unknown", "nope", {"n": 1}, "denied"),
    ("invalid", "act", {"n": "x"}, "invalid"),
    ("semantic", "act", {"n": 42}, "invalid"),
    ("denied", "act", {"n": 1000}, "denied"),
    ("pending", "gated", {"n": 1}, "pending_approval"),
    ("executed", "act", {"n": 1}, "executed"),
    ("replayed", "act", {"n": 1}, "replayed"),
    ("failed", "act", {"n": 13}, "failed"),
]


def key_for(label: str, with_key: bool) -> str | None:
    if label in ("executed", "replayed"):
        return "K"
    return f"K-{label}" if with_key else None


def run_outcomes(with_key: bool) -> list[tuple[str, list[dict[str, Any]]]]:
    env = audit_env()
    found = []
    with guardrail.identity(tenant="acme", user="u-1", roles=["r"]):
        for label, name, arguments, _ in OUTCOMES:
            with capture_logs() as logs, contextlib.suppress(Exception):
                env.call(name, arguments, request_id=f"req-{label}", idempotency_key=key_for(label, with_key))
            found.append((label, audits(logs)))
    return found


def test_every_outcome_writes_exactly_one_audit_record() -> None:
    expected = {label: decision for label, _, _, decision in OUTCOMES}
    for label, records in run_outcomes(with_key=False):
        assert len(records) == 1, label
        (record,) = records
        assert record["request_id"] == f"req-{label}" and record["decision"] == expected[label], label
        assert record["rule"] and record["identity"] == {"tenant": "acme", "user": "u-1", "roles": ["r"]}, label
        assert record["tool"] in ("nope", "act", "gated")
        if label in ("denied", "pending", "executed", "replayed", "failed"):
            assert record["policy_version"] == "v7", label
        if label == "executed":
            assert record["result"] == {"n": 1} and record["idempotency_key"] == "K"


def test_every_record_of_a_tool_with_a_policy_has_its_version_and_the_given_key() -> None:
    for label, records in run_outcomes(with_key=True):
        if label == "unknown":
            continue
        (record,) = records
        assert record["policy_version"] == "v7", label
        assert record["idempotency_key"] == key_for(label, True), label


def test_canaries_in_arguments_results_and_errors_are_redacted() -> None:
    canaries = {"sk": "sk-canaryCANARYcanary0123456789", "aws": "AKIACANARY0123456789",
                "jwt": "eyJhbGciOiJI.eyJjYW5hcnkiOjF9.c2ln", "pw": "pw-canary-7781", "card": "tok_card_canary_4242",
                "bearer": "Bearer abcdefCANARY123456"}
    env = Env()

    def sync(payload: dict[str, Any], card: str = "") -> dict[str, Any]:
        if payload.get("fail"):
            raise RuntimeError(f"upstream said {canaries['sk']} / {canaries['bearer']}")
        return {"echo": payload, "password": canaries["pw"], "deep": [[{"api_key": canaries["pw"]}]]}

    env.add(sync, OPEN + "[args.card]\nsecret = true\n")
    payload = {"note": f"key {canaries['sk']} and {canaries['aws']}", "nested": [{"jwt": canaries["jwt"]}],
               "password": canaries["pw"], "X-Api-Key": canaries["pw"],
               "headers": {"Authorization": canaries["bearer"]}}
    with guardrail.identity(user="u"), capture_logs() as logs:
        env.call("sync", {"payload": payload, "card": canaries["card"]})
        with pytest.raises(RuntimeError):
            env.call("sync", {"payload": {**payload, "fail": True}, "card": canaries["card"]})
        with pytest.raises(guardrail.SchemaViolationError):
            env.call("sync", {"payload": payload, "card": canaries["card"], "extra": 1})
    text = json.dumps(audits(logs), default=str)
    assert len(audits(logs)) == 3
    assert [name for name, value in canaries.items() if value in text] == []


def test_camel_case_and_secret_key_names_are_redacted(env: Env) -> None:
    secrets = {"accessToken": "canary-a1", "clientSecret": "canary-b2", "refreshToken": "canary-c3",
               "privateKey": "canary-d4", "secret_key": "canary-e5"}
    env.add(lambda: {"oauth": secrets}, OPEN, name="login")
    with guardrail.identity(user="u"), capture_logs() as logs:
        env.call("login", {})
    text = json.dumps(audits(logs))
    assert [key for key, value in secrets.items() if value in text] == []


def test_secret_argument_values_never_reach_the_audit_record(env: Env) -> None:
    card = "tok_card_canary_4242"

    def charge(card: str) -> str:
        if card.endswith("fail"):
            raise ValueError(f"card {card} declined")
        return f"charged {card}"

    env.add(charge, OPEN + "[args.card]\nsecret = true\n",
            rules=[rule(lambda v, c: f"card {v['card']} is blocked" if v["card"].startswith("bad") else None)])
    with guardrail.identity(user="u"), capture_logs() as logs:
        env.call("charge", {"card": card})
        with pytest.raises(ValueError):
            env.call("charge", {"card": card + "fail"})
        with pytest.raises(SemanticViolation):
            env.call("charge", {"card": "bad" + card})
    leaks = [(r["decision"], k) for r in audits(logs) for k, v in r.items() if card in json.dumps(v, default=str)]
    assert leaks == []


def test_denials_toward_the_model_are_generic(env: Env) -> None:
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


def test_an_unauthorized_caller_cannot_tell_a_registered_tool_from_an_unknown_one(env: Env) -> None:
    env.add(lambda user_id: user_id, '[[allow]]\nid = "admins"\nroles = ["admin"]\n', name="admin_delete_user")
    outcomes = []
    with guardrail.identity(user="u", roles=["viewer"]):
        for name in ("admin_delete_user", "admin_no_such_tool"):
            try:
                env.call(name, {"bogus": 1})
            except GuardrailError as error:
                outcomes.append((type(error).__name__, str(error)))
    assert outcomes[0] == outcomes[1]


# -- vendor responses ---------------------------------------------------------------------------------------


def test_execute_tool_calls_on_real_sdk_responses_from_the_emulator() -> None:
    import anthropic
    import openai

    from guardrail.testing import Emulator, reply

    env = Env()
    env.add(lambda city: f"sunny in {city}", OPEN, name="weather")
    defs: dict[str, Any] = {api: env.registry.definitions(api) for api in ("chat", "responses", "messages")}
    scripted = [
        reply.tool_call({"city": "Oslo"}, name="weather"),
        reply.tool_call('{"city": "Oslo"', name="weather"),  # truncated: refused, never repaired into a call
        reply.tool_call({"city": "Oslo"}, name="Weather"),  # case: unknown tool
        reply.tool_call({"city": "Oslo", "tenant_id": "acme"}, name="weather"),  # extra argument
    ]
    responses: list[tuple[str, Any]] = []
    with Emulator() as emu:
        chat = openai.OpenAI(base_url=emu.openai_base_url, api_key="t", max_retries=0)
        claude = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="t", max_retries=0)
        for api in ("chat", "responses", "messages"):
            emu.script(*scripted)
            for _ in scripted:
                if api == "chat":
                    response: Any = chat.chat.completions.create(
                        model="gpt-4o", messages=[{"role": "user", "content": "x"}], tools=defs["chat"])
                elif api == "responses":
                    response = chat.responses.create(model="gpt-4o", input="x", tools=defs["responses"])
                else:
                    response = claude.messages.create(model="claude-haiku-4-5", max_tokens=100, tools=defs["messages"],
                                                      messages=[{"role": "user", "content": "x"}])
                responses.append((api, response))
    with guardrail.identity(user="u"):
        for index, (api, response) in enumerate(responses):
            (outcome,) = execute_tool_calls(response, registry=env.registry, store=env.store)
            kind = index % len(scripted)
            if kind == 0:
                assert outcome.result == "sunny in Oslo" and outcome.error is None and outcome.call_id, api
            elif kind == 1:
                assert isinstance(outcome.error, guardrail.ParseError), (api, outcome)
            elif kind == 2:
                assert isinstance(outcome.error, guardrail.Denied), api
            else:
                assert isinstance(outcome.error, guardrail.SchemaViolationError), api


def chat_completion_with(*calls: tuple[str, str]) -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate({
        "id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                           for i, (n, a) in enumerate(calls)]}}]})


def test_one_denied_call_does_not_stop_the_others(env: Env) -> None:
    env.add(lambda x: env.ran("t", x) or x, OPEN + "[args.x]\nmax = 10\n", name="t")
    response = chat_completion_with(("t", '{"x": 99}'), ("nope", "{}"), ("t", "not json"), ("t", '{"x": 1}'))
    with guardrail.identity(user="u"):
        outcomes = execute_tool_calls(response, registry=env.registry, store=env.store)
    assert [type(o.error).__name__ if o.error else o.result for o in outcomes] == [
        "Denied", "Denied", "NoJSONError", 1]
    assert [o.call_id for o in outcomes] == ["call_0", "call_1", "call_2", "call_3"]


def test_a_tool_that_raises_does_not_stop_the_other_calls(env: Env) -> None:
    def t(x: int) -> int:
        if x == 0:
            raise ZeroDivisionError("tool bug")
        env.ran("t", x)
        return x

    env.add(t, OPEN)
    response = chat_completion_with(("t", '{"x": 0}'), ("t", '{"x": 1}'))
    with guardrail.identity(user="u"):
        outcomes = execute_tool_calls(response, registry=env.registry, store=env.store)
    assert isinstance(outcomes[0].error, ZeroDivisionError) and outcomes[1].result == 1


# -- hostile argument JSON ----------------------------------------------------------------------------------


def test_hostile_argument_text_gives_typed_errors(env: Env) -> None:
    env.add(lambda x: "ok", OPEN, name="t")
    env.add(lambda s: len(s), OPEN, name="s")
    cases = ['{"x": ' + "[" * 100_000 + "]" * 100_000 + "}", '{"x": ' + '{"a":' * 50_000 + "1" + "}" * 50_000 + "}",
             '{"x": "' + "a" * 5_000_000 + '"}', '{"x": 1' + "0" * 100_000 + "}",
             '{"x": {' + ",".join(f'"k{i}":1' for i in range(300_000)) + "}}", "", "[1,2]", "\x00" * 1000, "{" * 10]
    with guardrail.identity(user="u"):
        for number, text in enumerate(cases):
            with pytest.raises(guardrail.ParseError):
                finishes(lambda text=text: env.call("t", text), f"hostile argument text #{number}")
        assert env.call("s", '{"s": "' + "a" * 1_000_000 + '"}') == 1_000_000


def test_deeply_nested_dict_arguments_give_a_typed_error(env: Env) -> None:
    env.add(lambda x: "ok", OPEN, name="t")
    deep: list[Any] = []
    cursor = deep
    for _ in range(5000):
        cursor.append([])
        cursor = cursor[0]
    with guardrail.identity(user="u"), pytest.raises(guardrail.ParseError):
        env.call("t", {"x": deep})


# -- semantic gate ------------------------------------------------------------------------------------------


def test_semantic_paths_through_lists_and_missing_fields() -> None:
    value = {"items": [{"sku": "a"}, {}, {"sku": None}], "meta": {"ids": [1, 2]}}
    assert select(value, "items[*].sku") == [("$.items[0].sku", "a"), ("$.items[2].sku", None)]
    assert select(value, "items[5].sku") == [] and select(value, "nope.deeper[*]") == []
    assert select(value, "$.meta.ids[1]") == [("$.meta.ids[1]", 2)]
    assert evaluate([relation("start", "<", "end")], {"start": 1}, {}).ok  # a missing side is not checked
    assert not evaluate([relation("start", "<", "end")], {"start": 2, "end": "x"}, {}).ok  # incomparable fails
    assert not evaluate([in_range("items[*].n", 0, 1)], {"items": [{"n": 0.5}, {"n": True}]}, {}).ok


def test_exit_status_on_non_string_statuses() -> None:
    for status, declined in (("answered", None), ("refused", "refused"), (None, "None"), (True, "True"), (0, "0"),
                             (["answered"], "['answered']")):
        assert evaluate([exit_status()], {"status": status}, {}).declined == declined
    assert evaluate([exit_status()], {"other": 1}, {}).declined is None  # no status field at all: an answer


def test_member_of_with_missing_context_key_is_a_clear_error() -> None:
    with pytest.raises(RuleError, match="context"):
        evaluate([member_of("ids[*]", "retrieved")], {"ids": ["a"]}, {})
    assert not evaluate([member_of("ids[*]", "retrieved")], {"ids": ["a", "z"]}, {"retrieved": ["a"]}).ok


def test_member_of_rule_on_a_tool_gives_a_typed_audited_outcome(env: Env) -> None:
    env.add(lambda asset_id: asset_id, OPEN, name="reboot", rules=[member_of("asset_id", "assets")])
    with guardrail.identity(user="u"), capture_logs() as logs, pytest.raises(GuardrailError):
        env.call("reboot", {"asset_id": "srv-1"})
    assert len(audits(logs)) == 1


def test_member_of_with_unhashable_model_values_is_a_violation() -> None:
    verdict = evaluate([member_of("evidence[*]", "retrieved")], {"evidence": [{"id": "a"}, ["a"]]},
                       {"retrieved": ["a"]})
    assert len(verdict.violations) == 2


def test_in_range_rejects_nan() -> None:
    assert not evaluate([in_range("score", 0, 1)], {"score": math.nan}, {}).ok


def test_malformed_rule_paths_are_refused_when_the_rule_is_built() -> None:
    with pytest.raises(ValueError):
        in_range("scores[-1]", 0, 1)
