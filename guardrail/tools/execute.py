"""Running model-proposed tool calls: :func:`run_tool_call` and the functions around it.

A model proposes a call; nothing runs until it has passed every step of the gate, in order
(:mod:`guardrail.tools.gate` lists them in ``DEFAULT_STEPS``; docs/tools-and-policies.md, "How a tool call is
judged")::

    find_tool → load_policy → admit_caller → validate_arguments → note_left_out → check_rules → read_current
      → authorize → seal_checked → replay → await_approval → run_tool

Each call writes exactly one audit record, whatever its outcome, and a call that stops raises a typed error: the
parse layer's ``ParseError`` (its ``.feedback`` can go back to the model), :class:`~guardrail.Denied` (a generic
message; ``.rule``, ``.argument`` and ``.reason`` for the application), :class:`~guardrail.ApprovalRequired`
(with the token and the rule that asked), ``IdempotencyConflict`` (audited as ``conflict``), ``PolicyError`` (the
policy and the tool disagree), ``StoreError`` (a list could not be read: nothing ran). The tool function is only
ever called with a sealed positive :class:`~guardrail.tools.authz.Decision` for exactly those arguments, and with
the *checked* values: the resolved path, the normalised URL, the SQL that was parsed. :func:`run_tool_call`
returns a :class:`ToolResult` that also says whether the tool ran or an idempotent replay answered.

Tools are declared and registered in :mod:`guardrail.tools.registry` (``@tool``, :class:`Tool`,
:class:`ToolRegistry`); those names are importable from here too.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from guardrail.errors import ConfigError
from guardrail.store.base import Store
from guardrail.store.idempotency import DEFAULT_LEASE
from guardrail.tools import approvals, gate
from guardrail.tools.identity import current_identity
from guardrail.tools.registry import REGISTRY, Tool, ToolRegistry, default_store, lists, tool
from guardrail.tools.running import idempotency_for, result_text, run_sealed, scoped_key
from guardrail.tools.state import GateState
from guardrail.vendors.registry import tool_calls_of

__all__ = ["REGISTRY", "Tool", "ToolOutcome", "ToolRegistry", "ToolResult", "approve", "default_store",
           "execute_tool_call", "execute_tool_calls", "lists", "reject", "resolve", "run_sealed", "run_tool_call",
           "tool"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What :func:`run_tool_call` returns: the tool's result and how it came about.

    ``replayed`` is true when an idempotent replay answered (the stored result of an earlier run with the same
    key and arguments) and the tool did not run; ``ran`` is its opposite. ``arguments`` are the checked
    arguments the tool received (canonical paths and URLs in place, the defaults of what the model left out);
    ``rule`` is the allow rule that admitted the call; ``omitted`` names the arguments the model left out
    (``cc``, ``items[1].sku``), which the policy judged by presence only (see docs/tools-and-policies.md).
    """

    value: Any
    replayed: bool
    request_id: str
    rule: str
    arguments: dict[str, Any]
    omitted: tuple[str, ...] = ()

    @property
    def ran(self) -> bool:
        """Whether the tool function ran for this call."""
        return not self.replayed


def execute_tool_call(name: str, arguments: Mapping[str, Any] | str, *, idempotency_key: str | None = None,
                      approval_token: str | None = None, request_id: str | None = None,
                      registry: ToolRegistry | None = None, store: Store | None = None,
                      context: Mapping[str, Any] | None = None, lease: float = DEFAULT_LEASE,
                      wait: float = 30.0) -> Any:
    """Run one model-proposed call through the gate and return the tool's result (:func:`run_tool_call`
    says more: whether the tool ran or a replay answered, and with which checked arguments)."""
    return run_tool_call(name, arguments, idempotency_key=idempotency_key, approval_token=approval_token,
                         request_id=request_id, registry=registry, store=store, context=context, lease=lease,
                         wait=wait).value


def run_tool_call(name: str, arguments: Mapping[str, Any] | str, *, idempotency_key: str | None = None,
                  approval_token: str | None = None, request_id: str | None = None,
                  registry: ToolRegistry | None = None, store: Store | None = None,
                  context: Mapping[str, Any] | None = None, lease: float = DEFAULT_LEASE,
                  wait: float = 30.0) -> ToolResult:
    """Run one model-proposed call through every step of the gate (see the module docstring): a
    :class:`ToolResult`.

    ``arguments`` is a dict or the raw JSON text the model produced. ``idempotency_key`` makes a
    side-effecting call run once (required by ``idempotency = "required"`` policies; derived from the call
    when not given). ``approval_token`` is the token from an earlier :class:`ApprovalRequired`, after
    ``guardrail.approve``; it comes from the application, never from the model. ``context`` holds runtime
    facts for the tool's semantic rules (ids that must exist...). ``lease`` (seconds a claim lives without a
    heartbeat) and ``wait`` (seconds to wait for a concurrent run of the same key) tune idempotent runs; results
    are kept for the policy's ``idempotency_ttl``. What a retry may see is in ``docs/idempotency.md``.
    """
    state = GateState(name, arguments, registry or REGISTRY, store or default_store(),
                      request_id=request_id or uuid.uuid4().hex, identity=current_identity(), key=idempotency_key,
                      approval_token=approval_token, context=context or {}, lease=lease, wait=wait)
    done = gate.run(state)
    _, _, checked = state.judged()  # after seal_checked: the checked arguments the tool received
    return ToolResult(done.value, done.replayed, state.request_id, state.decided().rule, checked,
                      tuple(state.omitted or ()))


def resolve(name: str, idempotency_key: str, *, result: Any = None, failed: bool = False,
            registry: ToolRegistry | None = None, store: Store | None = None) -> bool:
    """Settle a call whose outcome is unknown (:class:`~guardrail.errors.IdempotencyUnknown`) for the current
    identity: ``result=`` it took effect with this result (replayed from now on), or ``failed=True`` it took no
    effect (the next call with the key runs the tool). ``False`` if there was nothing unknown to settle."""
    found = (registry or REGISTRY).get(name)
    policy = found.policy() if found else None
    if found is None or policy is None:
        raise ConfigError(f"no tool with a policy is registered as {name!r}")
    idempotency = idempotency_for(found, store or default_store(), policy, DEFAULT_LEASE, 0.0, None)
    scoped = scoped_key(found.name, current_identity(), idempotency_key)
    return idempotency.resolve(scoped, result=None if failed else result_text(result), failed=failed,
                               label=idempotency_key)


def approve(token: str, *, approver: str, store: Store | None = None) -> bool:
    """Approve a parked call (the person's decision, made outside the model); False if not pending/expired."""
    return approvals.decide(store or default_store(), token, approver=approver)


def reject(token: str, *, approver: str, store: Store | None = None) -> bool:
    """Reject a parked call; the token can then never run anything."""
    return approvals.decide(store or default_store(), token, approver=approver, reject=True)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call from a vendor response, after :func:`execute_tool_calls`: its result or its error, and
    whether the tool ran (``replayed``: an idempotent replay answered instead)."""

    name: str
    call_id: str | None
    arguments: str
    result: Any = None
    error: BaseException | None = None
    replayed: bool = False

    @property
    def ran(self) -> bool:
        """Whether the tool function ran for this call (not on an error, not on a replay)."""
        return self.error is None and not self.replayed


def execute_tool_calls(response: Any, *, registry: ToolRegistry | None = None, store: Store | None = None,
                       request_id: str | None = None) -> list[ToolOutcome]:
    """Run every tool call in a vendor response through :func:`execute_tool_call` (each call on its own: one
    denial does not stop the others). Errors are returned, not raised, so the application can answer the model
    for each call (a denial's message is generic and fit to send back)."""
    outcomes = []
    for call in tool_calls_of(response):
        name, arguments, call_id = call.name, call.arguments, call.id
        try:
            done = run_tool_call(name, arguments, registry=registry, store=store, request_id=request_id)
        except Exception as error:  # one call's failure never stops the others; the caller sees each
            outcomes.append(ToolOutcome(name, call_id, arguments, error=error))
            continue
        outcomes.append(ToolOutcome(name, call_id, arguments, result=done.value, replayed=done.replayed))
    return outcomes
