"""Idempotent tool calls in one process: a key replays the recorded result (or error) and never runs the tool
twice; other arguments under the same key conflict; keys are per tool and per identity, expire with the policy's
TTL, and a replay is re-authorized. Crashes, stalls and store failures are test_idempotency_faults.py's.

No ``from __future__ import annotations``: tools defined inside a test annotate with local names."""

import contextlib
import time
import uuid
from typing import Any

import pytest
from support.tool_env import OPEN, ToolEnv

import guardrail
from guardrail.errors import GuardrailError
from guardrail.store import IdempotencyConflict, IdempotencyFailed, MemoryStore, RedisStore
from guardrail.store.base import Store
from guardrail.tools.identity import current_identity


def test_idempotency_basics(env: ToolEnv) -> None:
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


def test_replay_after_the_policy_changed_is_denied(env: ToolEnv) -> None:
    env.add(lambda x: env.ran("t", x) or "ran", 'idempotency = "required"\n' + OPEN, name="t")
    with guardrail.identity(user="u"):
        assert env.call("t", {"x": 1}, idempotency_key="K") == "ran"
    env.registry.remove("t")
    env.add(lambda x: env.ran("t", x) or "ran",
            'idempotency = "required"\n[[allow]]\nid = "admins"\nroles = ["admin"]\n', name="t")
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied):
        env.call("t", {"x": 1}, idempotency_key="K")


def test_idempotency_keys_expire_after_the_policy_ttl(env: ToolEnv) -> None:
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
    env = ToolEnv(store)

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


def test_a_result_that_cannot_be_stored_does_not_run_the_side_effect_twice(env: ToolEnv) -> None:
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


def test_long_idempotency_keys_and_user_ids_give_a_typed_outcome(env: ToolEnv) -> None:
    env.add(lambda x: env.ran("t", x) or "ran", OPEN + "[limits]\nrate = { calls = 5, per_seconds = 60 }\n", name="t")
    with guardrail.identity(user="u" * 600):
        assert env.call("t", {"x": 1}) == "ran"
    with guardrail.identity(user="u"), contextlib.suppress(GuardrailError):  # refusing it is fine, ValueError not
        env.call("t", {"x": 2}, idempotency_key="k" * 600)
