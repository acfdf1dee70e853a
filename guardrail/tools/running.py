"""The gate's steps that answer a permitted call: a stored outcome, or the tool itself, at most once per key.

``replay`` settles the call's idempotency key (given, or derived from the checked arguments when the policy
says ``idempotency = "required"``) and answers with the stored outcome of an earlier run of exactly this call.
``run_tool`` counts the policy's limits and runs the tool under the key (:class:`~guardrail.store.Idempotency`:
at most once, even across crashes and processes; see ``docs/idempotency.md``), only through :func:`run_sealed`:
with a sealed positive decision for exactly the values it receives. After an approved run, the policy's
``[[after_approval]]`` list adds follow.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from guardrail.errors import Denied, IdempotencyConflict, NothingHappened
from guardrail.store.base import Store
from guardrail.store.idempotency import NOT_EXECUTED, Idempotency, IdempotencyUnknown
from guardrail.tools.approvals import add_approved
from guardrail.tools.arguments import canonical, keywords
from guardrail.tools.authz import GENERIC_DENIAL, Decision
from guardrail.tools.identity import Identity, key_of
from guardrail.tools.limits import over_limits
from guardrail.tools.policy.model import Policy
from guardrail.tools.state import Deny, Done, Fail, GateState, Verdict

if TYPE_CHECKING:
    from guardrail.tools.registry import Tool

__all__ = ["IDEMPOTENCY_PREFIX", "idempotency_for", "replay", "result_text", "run_sealed", "run_tool", "scoped_key"]

IDEMPOTENCY_PREFIX = "idempotency:"
_CONFLICT = "the key was already used with other arguments"


def replay(state: GateState) -> Verdict | None:
    """The idempotency key of the call, and the stored outcome of an earlier run of exactly this call (approved,
    if approval was required): replayed without running anything. The key used with other arguments is a
    conflict; a replayed failure, an unstorable result or a store that is down fails the call."""
    found = state.found()
    policy, model, _ = state.judged()
    decision = state.decided()
    if state.key is None and policy.idempotency == "required":
        state.key = "derived:" + decision.arguments_hash
    if state.key is None:
        return None
    state.scoped_key = scoped_key(found.name, state.identity, state.key)
    state.idempotency = idempotency_for(found, state.store, policy, state.lease, state.wait, model)
    try:
        stored = state.idempotency.replay(state.scoped_key, decision.arguments_hash, label=state.key)
    except IdempotencyConflict as error:
        return Fail("conflict", error, rule="idempotency", reason=_CONFLICT)
    except Exception as error:  # a replayed failure or unstorable result, or the store is down
        return Fail("failed", error)
    return None if stored is None else Done(json.loads(stored), replayed=True)


def run_tool(state: GateState) -> Verdict | None:
    """Run the tool once: the policy's limits are counted first (a limit reached denies, rule ``limits.rate``,
    ``limits.quota`` or ``limits.spend``), then the sealed call, under the key when there is one (a concurrent
    run of the same call answers instead: replayed). Whatever the tool raises fails the call, raised as it is.
    After an approved call ran, ``[[after_approval]]`` adds its values to their lists (recorded, never raised)."""
    found = state.found()
    policy, model, arguments = state.judged()
    decision = state.decided()

    def execute() -> Any:
        # Limits count executions: a replayed result costs nothing.
        limited = over_limits(policy, state.store, found.name, arguments, state.identity, found.fn)
        if limited is not None:
            raise _LimitReached(limited)
        return run_sealed(found, model, arguments, decision)

    try:
        if state.idempotency is None:
            result, replayed = execute(), False
        else:
            text, replayed = state.idempotency.run(state.scoped_key, decision.arguments_hash, execute, result_text,
                                                   label=state.key)
            result = json.loads(text)
    except _LimitReached as limit:
        return Deny(limit.rule, "limit reached")
    except IdempotencyConflict as error:
        return Fail("conflict", error, rule="idempotency", reason=_CONFLICT)
    except Exception as error:
        return Fail("failed", error)
    if decision.approval and not replayed:
        state.added = add_approved(policy, state.store, arguments, state.identity)
    return Done(result, replayed)


class _LimitReached(NothingHappened):
    """A rate limit, quota or spend budget stopped the execution (``rule`` names it). The tool did not run, so
    the idempotency key is released (a later call with it may run once the limit allows)."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


def run_sealed(found: Tool, model: BaseModel | dict[str, Any], args: dict[str, Any], decision: Decision) -> Any:
    """Call the tool function with the validated values; only with a sealed positive decision made for exactly
    these arguments (``args`` is the canonical form of ``model`` that the policy judged)."""
    if not decision.permits(found.name, args) or canonical(model) != args:
        raise Denied(GENERIC_DENIAL, tool=found.name, request_id="", rule="unsealed",
                     reason="no positive decision for exactly these arguments")
    return found.fn(**keywords(model))


def scoped_key(tool: str, who: Identity | None, key: str) -> str:
    """Keys are scoped to the tool and the caller, and hashed (any length, no collisions across tenants)."""
    return tool[:64] + ":" + hashlib.sha256(json.dumps([tool, key_of(who), key]).encode()).hexdigest()


def result_text(result: Any) -> str:
    """A tool result as the JSON text that is stored and replayed (what the model gets back)."""
    return json.dumps(to_jsonable_python(result, fallback=str), ensure_ascii=False, allow_nan=False)


def idempotency_for(found: Tool, store: Store, policy: Policy, lease: float, wait: float,
                    model: BaseModel | dict[str, Any] | None) -> Idempotency:
    """The at-most-once runner for one call of ``found`` (its reconcile hook sees the call's arguments)."""
    hook = found.reconcile

    def reconcile(unknown: IdempotencyUnknown) -> str | object | None:
        assert hook is not None and model is not None
        verdict = hook(unknown, keywords(model))
        return verdict if verdict is None or verdict is NOT_EXECUTED else result_text(verdict)

    return Idempotency(store, ttl=policy.idempotency_ttl, prefix=IDEMPOTENCY_PREFIX, lease=lease, wait=wait,
                       rerun_safe=found.rerun_safe, reconcile=None if hook is None else reconcile)  # type: ignore[arg-type]
