"""The audit trail of tool calls: exactly one record per outcome (unknown, invalid, semantic, denied, pending,
executed, replayed, failed) with identity, rule, policy version and idempotency key; secrets (canaries in
arguments, results and errors, secret-named keys, secret arguments) never reach it."""

import contextlib
import json
from typing import Any

import pytest
from structlog.testing import capture_logs
from support.tool_env import APPROVAL, OPEN, ToolEnv, audits

import guardrail
from guardrail.errors import SemanticViolation
from guardrail.gates.semantic import rule


def audit_env() -> ToolEnv:
    env = ToolEnv()

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


# -------------------------------------------------------------------------------------------------------- redaction


def test_canaries_in_arguments_results_and_errors_are_redacted(env: ToolEnv) -> None:
    canaries = {"sk": "sk-canaryCANARYcanary0123456789", "aws": "AKIACANARY0123456789",
                "jwt": "eyJhbGciOiJI.eyJjYW5hcnkiOjF9.c2ln", "pw": "pw-canary-7781", "card": "tok_card_canary_4242",
                "bearer": "Bearer abcdefCANARY123456"}

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


def test_camel_case_and_secret_key_names_are_redacted(env: ToolEnv) -> None:
    secrets = {"accessToken": "canary-a1", "clientSecret": "canary-b2", "refreshToken": "canary-c3",
               "privateKey": "canary-d4", "secret_key": "canary-e5"}
    env.add(lambda: {"oauth": secrets}, OPEN, name="login")
    with guardrail.identity(user="u"), capture_logs() as logs:
        env.call("login", {})
    text = json.dumps(audits(logs))
    assert [key for key, value in secrets.items() if value in text] == []


def test_secret_argument_values_never_reach_the_audit_record(env: ToolEnv) -> None:
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
