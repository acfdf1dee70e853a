"""Guarded tools end to end: parse -> validate -> semantic -> authorization -> approval -> limits -> idempotent
execution -> audit. Real policy files from policies/, real stores, real threads and asyncio. Then tool names,
signatures and arguments, tool calls read from real SDK responses, and hostile argument JSON."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from structlog.testing import capture_logs
from support.tool_env import GENERIC, OPEN, ToolEnv
from support.waiting import finishes

import guardrail
from guardrail.errors import PolicyError, SemanticViolation
from guardrail.gates.semantic import relation
from guardrail.store.memory import MemoryStore
from guardrail.tools.execute import ToolRegistry, execute_tool_call, execute_tool_calls, tool
from guardrail.tools.policy.loader import load_policies, parse_policy

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"


class Bank:
    """A fake payments backend that counts the refunds it really made."""

    def __init__(self) -> None:
        self.refunds: list[tuple[str, float]] = []
        self.lock = threading.Lock()

    def refund(self, order_id: str, amount: float, currency: str = "USD", card_token: str = "") -> dict[str, Any]:
        time.sleep(0.01)
        with self.lock:
            self.refunds.append((order_id, amount))
            return {"refund_id": f"R-{len(self.refunds)}", "order_id": order_id, "amount": amount}


@pytest.fixture
def setup() -> Iterator[tuple[ToolRegistry, Bank, MemoryStore]]:
    registry = ToolRegistry()
    bank = Bank()
    store = MemoryStore()
    tool(name="refund_order", policy=POLICIES / "refund_order.toml", registry=registry)(bank.refund)

    @tool(policy=POLICIES / "fetch_url.toml", registry=registry)
    def fetch_url(url: str) -> str:
        return f"fetched {url}"

    @tool(policy=POLICIES / "run_query.toml", registry=registry)
    def run_query(sql: str) -> list[int]:
        return [1, 2, 3]

    yield registry, bank, store


def call(setup: Any, name: str, arguments: Any, **kwargs: Any) -> Any:
    registry, _, store = setup
    return execute_tool_call(name, arguments, registry=registry, store=store, **kwargs)


def approved_refund(setup: Any, arguments: Any, **kwargs: Any) -> Any:
    """Park, approve as a person would, then run with the token."""
    with pytest.raises(guardrail.ApprovalRequired) as parked:
        call(setup, "refund_order", arguments, **kwargs)
    assert guardrail.approve(parked.value.token, approver="lead-1", store=setup[2])
    return call(setup, "refund_order", arguments, approval_token=parked.value.token, **kwargs)


REFUND = {"order_id": "ORD-1", "amount": 25.0, "currency": "USD"}


def test_every_example_policy_file_is_valid() -> None:
    policies = load_policies(POLICIES)
    assert sorted(policies) == ["fetch_url", "read_file", "refund_order", "run_query"]
    # issue 13: the shipped refund policy no longer names card_token (the README's refund_order has no such
    # parameter); card_token stays redacted by its name (the ``_token`` suffix)
    assert policies["refund_order"].secret_args == frozenset()


def test_the_full_path_runs_an_approved_refund_once(setup: Any) -> None:
    with guardrail.identity(tenant="acme", user="u-1", roles=["support"]):
        result = approved_refund(setup, json.dumps(REFUND))
    assert result["refund_id"] == "R-1" and setup[1].refunds == [("ORD-1", 25.0)]


def test_model_supplied_identity_grants_nothing(setup: Any) -> None:
    attempts = [
        {"url": "https://api.example.com/x", "tenant_id": "acme", "user_id": "admin"},
        {"url": "https://api.example.com/x", "roles": ["admin"]},
    ]
    denied = 0
    for arguments in attempts:  # anonymous: denied; identity-looking arguments are not even read
        with pytest.raises(guardrail.Denied):
            call(setup, "fetch_url", arguments)
        denied += 1
    with guardrail.identity(tenant="acme", user="u-1"), pytest.raises(guardrail.SchemaViolationError):
        call(setup, "fetch_url", attempts[0])  # identified: unknown argument names are refused outright
    with pytest.raises(guardrail.Denied):  # anonymous: no identity from the runtime
        call(setup, "fetch_url", {"url": "https://api.example.com/x"})
    denied += 1
    with guardrail.identity(tenant="acme", user="u-1", roles=["viewer"]), pytest.raises(guardrail.Denied):
        call(setup, "run_query", {"sql": "SELECT 1 FROM orders"})  # not an analyst, whatever the model says
    denied += 1
    print(f"model-supplied identity attempts denied: {denied}/{len(attempts) + 2}")
    assert denied == len(attempts) + 2


def test_unknown_and_lookalike_tool_names_are_denied(setup: Any) -> None:
    names = ["refund", "Refund_Order", "REFUND_ORDER", "refund_order ", "refund\u200border", "rеfund_order",
             "refund_ordеr", "ｒｅｆｕｎｄ_order", "", "refund_order\x00"]
    with guardrail.identity(tenant="acme", user="u-1", roles=["support"]):
        for name in names:
            with pytest.raises(guardrail.Denied) as caught:
                call(setup, name, REFUND)
            assert str(caught.value) == "This action is not permitted."
    assert setup[1].refunds == []


def test_denials_are_generic_and_the_audit_record_has_the_rule(setup: Any) -> None:
    with guardrail.identity(tenant="acme", user="u-1", roles=["support"]), capture_logs() as logs, \
            pytest.raises(guardrail.Denied) as caught:
        call(setup, "refund_order", {**REFUND, "amount": 2500.0}, request_id="req-42")
    assert str(caught.value) == "This action is not permitted." and "large" not in str(caught.value)
    # issue 15: the application reads the same explanation in code
    assert caught.value.rule == "deny.large-refunds-need-a-lead" and caught.value.reason == "a deny rule matched"
    record = next(entry for entry in logs if entry["event"] == "guardrail.audit")
    assert record["request_id"] == "req-42" and record["decision"] == "denied"
    assert record["rule"] == "deny.large-refunds-need-a-lead" and record["policy_version"] == "2026-11-30.1"
    assert record["identity"] == {"tenant": "acme", "user": "u-1", "roles": ["support"]}


def test_argument_constraints(setup: Any) -> None:
    with guardrail.identity(tenant="acme", user="u-1", roles=["support-lead"]):
        for bad in ({**REFUND, "currency": "BTC"}, {**REFUND, "amount": 9000.0}, {**REFUND, "order_id": "1; DROP"},
                    {**REFUND, "amount": -1.0}):
            with pytest.raises(guardrail.Denied):
                call(setup, "refund_order", bad)
        with pytest.raises(guardrail.SchemaViolationError):
            call(setup, "refund_order", {"order_id": "ORD-1"})  # amount missing: invalid, not even authorized
    assert setup[1].refunds == []


def test_approval_tokens_cannot_be_replayed_changed_expired_or_forged(setup: Any) -> None:
    _, bank, store = setup
    cases = 0
    with guardrail.identity(tenant="acme", user="u-1", roles=["support"]):
        with pytest.raises(guardrail.ApprovalRequired) as parked:
            call(setup, "refund_order", REFUND)
        token = parked.value.token
        with pytest.raises(guardrail.Denied):  # not approved yet
            call(setup, "refund_order", REFUND, approval_token=token)
        cases += 1
        assert guardrail.approve(token, approver="lead", store=store)
        with pytest.raises(guardrail.Denied):  # changed arguments
            call(setup, "refund_order", {**REFUND, "amount": 999.0}, approval_token=token)
        cases += 1
        with pytest.raises(guardrail.Denied):  # a token the model made up
            call(setup, "refund_order", REFUND, approval_token="model-says-approved")
        cases += 1
        with pytest.raises(guardrail.SchemaViolationError):  # a token in the model's arguments is not a key
            call(setup, "refund_order", {**REFUND, "approval_token": token})
        cases += 1
    with guardrail.identity(tenant="acme", user="u-2", roles=["support"]), pytest.raises(guardrail.Denied):
        call(setup, "refund_order", REFUND, approval_token=token)  # another caller
    cases += 1
    with guardrail.identity(tenant="acme", user="u-1", roles=["support"]):
        assert call(setup, "refund_order", REFUND, approval_token=token)["refund_id"] == "R-1"
        # A retry of that exact call replays its stored result (idempotency = "required"); nothing runs again.
        assert call(setup, "refund_order", REFUND, approval_token=token)["refund_id"] == "R-1"
        with pytest.raises(guardrail.Denied):  # the used token cannot run a second refund under another key
            call(setup, "refund_order", REFUND, approval_token=token, idempotency_key="second-refund")
        cases += 1
    short = parse_policy((POLICIES / "refund_order.toml").read_text().replace("approval_ttl = 3600",
                                                                               "approval_ttl = 0.2"))
    reregister_refund(setup, short)
    with guardrail.identity(tenant="acme", user="u-1", roles=["support"]):
        with pytest.raises(guardrail.ApprovalRequired) as parked:
            call(setup, "refund_order", {**REFUND, "order_id": "ORD-2"})
        assert guardrail.approve(parked.value.token, approver="lead", store=store)
        time.sleep(0.3)
        with pytest.raises(guardrail.Denied):  # expired
            call(setup, "refund_order", {**REFUND, "order_id": "ORD-2"}, approval_token=parked.value.token)
        cases += 1
    print(f"approval token abuses denied: {cases}/7")
    assert cases == 7 and bank.refunds == [("ORD-1", 25.0)]


def free_policy(text: str) -> Any:
    """refund_order without approval (for the idempotency tests)."""
    return parse_policy(text.replace('approval = "required"', 'approval = "none"'))


def reregister_refund(setup: Any, policy: Any = None) -> None:
    """Register ``refund_order`` again under ``policy`` (by default the shipped one without approval)."""
    registry, bank, _store = setup
    registry.remove("refund_order")
    if policy is None:
        policy = free_policy((POLICIES / "refund_order.toml").read_text())
    tool(name="refund_order", policy=policy, registry=registry)(bank.refund)


def test_idempotency_same_key_replays_different_arguments_conflict(setup: Any) -> None:
    _, bank, _ = setup
    reregister_refund(setup)
    with guardrail.identity(tenant="acme", user="u-1", roles=["support"]):
        first = call(setup, "refund_order", REFUND, idempotency_key="k-1")
        again = call(setup, "refund_order", REFUND, idempotency_key="k-1")
        assert first == again and len(bank.refunds) == 1
        with pytest.raises(guardrail.GuardrailError, match=r"(?i)conflict|different"):
            call(setup, "refund_order", {**REFUND, "amount": 30.0}, idempotency_key="k-1")
        derived = call(setup, "refund_order", {**REFUND, "order_id": "ORD-7"})  # key derived from the call
        assert call(setup, "refund_order", {**REFUND, "order_id": "ORD-7"}) == derived
    assert len(bank.refunds) == 2


def test_fifty_concurrent_calls_with_one_key_execute_once_threads_and_asyncio(setup: Any) -> None:
    _, bank, _ = setup
    reregister_refund(setup)

    def one(_: int) -> Any:
        with guardrail.identity(tenant="acme", user="u-1", roles=["support"]):
            return call(setup, "refund_order", REFUND, idempotency_key="same")

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(one, range(50)))
    assert len(bank.refunds) == 1 and all(r == results[0] for r in results)

    async def main() -> list[Any]:
        async def task() -> Any:
            return await asyncio.to_thread(one_async)

        return await asyncio.gather(*(task() for _ in range(50)))

    def one_async() -> Any:
        with guardrail.identity(tenant="acme", user="u-1", roles=["support"]):
            return call(setup, "refund_order", {**REFUND, "order_id": "ORD-9"}, idempotency_key="same-async")

    results = asyncio.run(main())
    assert len(bank.refunds) == 2 and all(r == results[0] for r in results)


def test_a_call_that_fails_validation_stores_nothing(setup: Any) -> None:
    reregister_refund(setup)
    with guardrail.identity(tenant="acme", user="u-1", roles=["support"]):
        with pytest.raises(guardrail.SchemaViolationError):
            call(setup, "refund_order", {"order_id": "ORD-1", "amount": "lots"}, idempotency_key="k-v")
        assert call(setup, "refund_order", REFUND, idempotency_key="k-v")["refund_id"] == "R-1"


def test_rate_limits_and_spend_budgets_per_identity(setup: Any) -> None:
    _, bank, _ = setup
    text = (POLICIES / "refund_order.toml").read_text().replace('approval = "required"', 'approval = "none"')
    text = text.replace("rate = { calls = 20, per_seconds = 60 }", "rate = { calls = 3, per_seconds = 60 }")
    reregister_refund(setup, parse_policy(text))
    with guardrail.identity(tenant="acme", user="u-1", roles=["support-lead"]):
        for i in range(3):
            call(setup, "refund_order", {**REFUND, "order_id": f"ORD-{i}"})
        with pytest.raises(guardrail.Denied):
            call(setup, "refund_order", {**REFUND, "order_id": "ORD-3"})
    with guardrail.identity(tenant="acme", user="u-2", roles=["support-lead"]):  # another identity, own limits
        call(setup, "refund_order", {**REFUND, "order_id": "ORD-4", "amount": 4000.0})
        call(setup, "refund_order", {**REFUND, "order_id": "ORD-5", "amount": 4000.0})
        with pytest.raises(guardrail.Denied):  # spend: 8000 + 4000 > 10000
            call(setup, "refund_order", {**REFUND, "order_id": "ORD-6", "amount": 4000.0})
    assert len(bank.refunds) == 5


def test_canary_secrets_never_reach_logs_or_audit(setup: Any) -> None:
    canaries = ["sk-canaryCANARYcanary0123456789", "AKIACANARY0123456789", "eyJhbGciOiJI.eyJjYW5hcnkiOjF9.c2ln",
                "tok_card_canary_4242"]
    reregister_refund(setup)
    with guardrail.identity(tenant="acme", user="u-1", roles=["support"]), capture_logs() as logs:
        call(setup, "refund_order", {**REFUND, "card_token": canaries[3]})
        with pytest.raises(guardrail.Denied):
            call(setup, "refund_order", {**REFUND, "order_id": f"ORD-{canaries[0]}", "card_token": canaries[1]})
        with pytest.raises(guardrail.SchemaViolationError):
            call(setup, "refund_order", {**REFUND, "authorization": f"Bearer {canaries[2]}"})
    text = json.dumps(logs, default=str)
    assert "guardrail.audit" in text
    found = [c for c in canaries if c in text]
    print(f"canary secrets found in audit output: {len(found)}/{len(canaries)}")
    assert found == []


def test_policy_files_with_problems_are_reported_with_line_and_key(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('tool = "x"\napproval = "sometimes"\n\n[[allow]]\nid = "a"\nroels = ["x"]\n'
                                       '\n[args.amount]\nmax = "lots"\n')
    (tmp_path / "broken.toml").write_text('tool = "y"\n[args\n')
    (tmp_path / "regex.toml").write_text('tool = "z"\n[args.a]\npattern = "(a)\\\\1"\n')
    with pytest.raises(PolicyError) as caught:
        load_policies(tmp_path)
    problems = {(Path(p.file).name, p.line, p.key) for p in caught.value.problems}
    assert ("bad.toml", 2, "approval") in problems
    assert ("bad.toml", 6, "allow.0.roels") in {(f, line, k.replace(".0.", ".0.")) for f, line, k in problems}
    assert any(f == "bad.toml" and line == 9 and k.startswith("args.amount.max") for f, line, k in problems)
    assert any(f == "broken.toml" and line == 2 for f, line, _ in problems)
    assert any(f == "regex.toml" for f, _, _ in problems)


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_tool_calls_in_vendor_responses_go_through_the_same_gates(setup: Any, api: str) -> None:
    import anthropic
    import openai

    from guardrail.testing import Emulator, reply
    from guardrail.tools.execute import execute_tool_calls

    registry, _, store = setup
    with Emulator() as emu:
        emu.script(reply.tool_call({"url": "https://api.example.com/v1/orders"}, name="fetch_url"),
                   reply.tool_call({"url": "http://169.254.169.254/latest/meta-data"}, name="fetch_url"))
        responses = []
        for _ in range(2):
            if api == "messages":
                client: Any = guardrail.wrap(anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="t"))
                responses.append(client.messages.create(model="claude-haiku-4-5", max_tokens=100,
                                                        messages=[{"role": "user", "content": "x"}],
                                                        tools=registry.definitions("messages", ["fetch_url"])))
            elif api == "chat":
                client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t"))
                responses.append(client.chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                    tools=registry.definitions("chat", ["fetch_url"])))
            else:
                client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t"))
                responses.append(client.responses.create(model="gpt-4o", input="x",
                                                         tools=registry.definitions("responses", ["fetch_url"])))
    with guardrail.identity(tenant="acme", user="u-1"):
        (good,) = execute_tool_calls(responses[0], registry=registry, store=store)
        (bad,) = execute_tool_calls(responses[1], registry=registry, store=store)
    assert good.result == "fetched https://api.example.com/v1/orders" and good.error is None
    assert isinstance(bad.error, guardrail.Denied) and bad.result is None


def test_read_file_policy_follows_symlinks_and_denies_escapes(tmp_path: Path) -> None:
    base = tmp_path / "exports"
    base.mkdir()
    (base / "q3.csv").write_text("ok")
    (tmp_path / "secret.txt").write_text("secret")
    (base / "link.csv").symlink_to(tmp_path / "secret.txt")
    registry = ToolRegistry()
    text = (POLICIES / "read_file.toml").read_text().replace('base = "../exports"', f'base = "{base}"')

    @tool(policy=parse_policy(text), registry=registry)
    def read_file(path: str) -> str:
        return (base / path).read_text()

    store = MemoryStore()
    with guardrail.identity(tenant="acme", user="u", roles=["staff"]):
        assert execute_tool_call("read_file", {"path": "q3.csv"}, registry=registry, store=store) == "ok"
        for bad in ("link.csv", "../secret.txt", "%2e%2e/secret.txt", str(tmp_path / "secret.txt")):
            with pytest.raises(guardrail.Denied):
                execute_tool_call("read_file", {"path": bad}, registry=registry, store=store)
    with guardrail.identity(tenant="other", user="u", roles=["staff"]), pytest.raises(guardrail.Denied):
        execute_tool_call("read_file", {"path": "q3.csv"}, registry=registry, store=store)


@pytest.mark.slow
def test_policy_check_command(tmp_path: Path) -> None:
    import subprocess
    import sys

    ok = subprocess.run([sys.executable, "-m", "guardrail.cli", "policy", "check", str(POLICIES)],
                        capture_output=True, text=True, timeout=60, check=False)
    assert ok.returncode == 0 and "4 valid policies" in ok.stdout
    (tmp_path / "bad.toml").write_text('tool = "x"\n[args.q]\nsql = { allow = ["selects"] }\n')
    bad = subprocess.run([sys.executable, "-m", "guardrail.cli", "policy", "check", str(tmp_path), "--json"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert bad.returncode == 1
    problems = json.loads(bad.stdout)["problems"]
    assert problems and problems[0]["key"].startswith("args.q") and problems[0]["line"] in (2, 3)


def test_semantic_rules_on_tool_arguments_run_before_authorization() -> None:

    registry = ToolRegistry()
    policy = parse_policy('tool = "book"\n[[allow]]\nid = "all"\n')
    ran: list[str] = []

    @tool(policy=policy, registry=registry, rules=[relation("start", "<", "end")])
    def book(start: str, end: str) -> str:
        ran.append(start)
        return "booked"

    with guardrail.identity(user="u"):
        with pytest.raises(SemanticViolation) as caught:
            execute_tool_call("book", '{"start": "2026-12-05", "end": "2026-12-01"}', registry=registry)
        assert "$.start" in caught.value.feedback and ran == []
        assert execute_tool_call("book", {"start": "2026-12-01", "end": "2026-12-05"}, registry=registry) == "booked"


# ----------------------------------------------------------------------------- tool names, signatures and arguments


def test_unknown_tool_never_reaches_any_function_and_denial_is_generic(env: ToolEnv) -> None:
    env.add(lambda q: env.ran("search", q), OPEN, name="search")
    with guardrail.identity(user="u"):
        for name in ("Search", "search\u200b", "ѕearch", "search ", None, 42, ["search"]):
            with pytest.raises(guardrail.Denied) as caught:
                env.call(name, {"q": "x"})  # type: ignore[arg-type]
            assert str(caught.value) == GENERIC and caught.value.args == (GENERIC,)
    assert env.calls == []


def test_secretstr_argument_reaches_the_tool_unmasked(env: ToolEnv) -> None:
    got: list[str] = []

    def login(user: str, password: SecretStr) -> str:
        got.append(password.get_secret_value())
        return "ok"

    env.add(login, OPEN)
    with guardrail.identity(user="u"):
        env.call("login", {"user": "bob", "password": "hunter2-canary"})
    assert got == ["hunter2-canary"]


def test_a_default_the_annotation_does_not_admit_still_runs(env: ToolEnv) -> None:
    def search(q: str, limit: int = None) -> str:  # type: ignore[assignment]  # noqa: RUF013
        return f"{q}:{limit}"

    env.add(search, OPEN)
    with guardrail.identity(user="u"):
        assert env.call("search", {"q": "x"}) == "x:None"


def test_tools_defined_under_future_annotations_work(env: ToolEnv, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
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


# ----------------------------------------------------------------------------------- tool calls in vendor responses


def test_execute_tool_calls_on_real_sdk_responses_from_the_emulator(env: ToolEnv) -> None:
    import anthropic
    import openai

    from guardrail.testing import Emulator, reply

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


def test_one_denied_call_does_not_stop_the_others(env: ToolEnv) -> None:
    env.add(lambda x: env.ran("t", x) or x, OPEN + "[args.x]\nmax = 10\n", name="t")
    response = chat_completion_with(("t", '{"x": 99}'), ("nope", "{}"), ("t", "not json"), ("t", '{"x": 1}'))
    with guardrail.identity(user="u"):
        outcomes = execute_tool_calls(response, registry=env.registry, store=env.store)
    assert [type(o.error).__name__ if o.error else o.result for o in outcomes] == [
        "Denied", "Denied", "NoJSONError", 1]
    assert [o.call_id for o in outcomes] == ["call_0", "call_1", "call_2", "call_3"]


def test_a_tool_that_raises_does_not_stop_the_other_calls(env: ToolEnv) -> None:
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


# -------------------------------------------------------------------------------------------- hostile argument JSON


def test_hostile_argument_text_gives_typed_errors(env: ToolEnv) -> None:
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


def test_deeply_nested_dict_arguments_give_a_typed_error(env: ToolEnv) -> None:
    env.add(lambda x: "ok", OPEN, name="t")
    deep: list[Any] = []
    cursor = deep
    for _ in range(5000):
        cursor.append([])
        cursor = cursor[0]
    with guardrail.identity(user="u"), pytest.raises(guardrail.ParseError):
        env.call("t", {"x": deep})
