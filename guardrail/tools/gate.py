"""The tool gate: the steps a model-proposed call goes through, in order, and the loop that runs them.

Each step is a plain callable ``(GateState) -> Verdict | None`` (:mod:`guardrail.tools.state`): ``None`` hands the
call to the next step, a verdict ends it. ``DEFAULT_STEPS`` is an ordinary tuple; :func:`run` takes any list.

==================  =============================================================  ===================================
find_tool           the tool registered under exactly this name                    denied ``unknown-tool``
load_policy         its policy, loaded and checked against its parameters          ``PolicyError`` (``policy-error``)
admit_caller        a policy with an allow rule that could admit this caller       denied ``no-policy``,
                                                                                   ``default-deny``
validate_arguments  parse + validate the arguments; their canonical form           invalid ``arguments``
note_left_out       what the model left out (judged by presence only)
check_rules         the tool's semantic rules                                      invalid / denied ``semantic``
read_current        the current values a ``changed`` condition compares with       denied ``current``
authorize           the policy: deny rules, constraints (canonical values), deny   denied ``deny.*``, ``args.*``,
                    rules again, allow rules, approve rules; lists, provenance     ``default-deny``; failed ``lists``
seal_checked        the checked values, in the argument model the tool receives    denied ``canonical``
replay              the idempotency key; a stored outcome of this exact call       replayed; conflict; failed
await_approval      park for a person, or redeem the approved token                pending_approval; denied
                                                                                   ``approval``
run_tool            limits, then the tool, at most once per key;                   executed; denied ``limits.*``;
                    ``[[after_approval]]`` list adds                               conflict; failed
==================  =============================================================  ===================================

Whatever the verdict, the loop writes the call's one audit record from the state and the verdict
(:func:`audit_record`), then raises (``Denied`` with the generic message, ``ApprovalRequired``, or the error of a
``Fail``) or, for ``Done``, records the result in the current run (provenance) and returns. A step that raises is
a failure (audited ``failed``, raised as it is); a list that ends without a verdict denies (default deny).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from guardrail.errors import ApprovalRequired, Denied
from guardrail.tools import audit
from guardrail.tools.admission import admit_caller, find_tool, load_policy
from guardrail.tools.approvals import await_approval
from guardrail.tools.arguments import check_rules, note_left_out, validate_arguments
from guardrail.tools.authz import GENERIC_DENIAL
from guardrail.tools.deciding import authorize, read_current, seal_checked
from guardrail.tools.provenance import record_result
from guardrail.tools.running import replay, run_tool
from guardrail.tools.state import Deny, Done, Fail, GateState, Park, Step, Verdict

__all__ = ["DEFAULT_STEPS", "audit_record", "run"]

DEFAULT_STEPS: tuple[Step, ...] = (
    find_tool,
    load_policy,
    admit_caller,
    validate_arguments,
    note_left_out,
    check_rules,
    read_current,
    authorize,
    seal_checked,
    replay,
    await_approval,
    run_tool,
)


def run(state: GateState, steps: Sequence[Step] = DEFAULT_STEPS) -> Done:
    """Run ``steps`` over one call until a verdict; write its audit record; return the result or raise."""
    verdict = _judge(state, steps)
    audit.record(**audit_record(state, verdict))
    if isinstance(verdict, Done):
        if state.tool is not None:
            record_result(state.tool.name, verdict.value, trusted=state.tool.trusted_results)
        return verdict
    if isinstance(verdict, Park):
        raise ApprovalRequired("This action needs approval before it runs.", tool=state.tool_name,
                               request_id=state.request_id, token=verdict.token, expires_at=verdict.expires_at,
                               rule=verdict.rule)
    if isinstance(verdict, Deny):
        raise Denied(GENERIC_DENIAL, tool=state.tool_name, request_id=state.request_id, rule=verdict.rule,
                     argument=verdict.argument, reason=verdict.reason)
    raise verdict.error


def _judge(state: GateState, steps: Sequence[Step]) -> Verdict:
    """The first verdict a step returns; a step that raises fails the call; no verdict at all denies."""
    for step in steps:
        try:
            verdict = step(state)
        except Exception as error:  # a broken step, a store that is down: nothing more runs, the call is audited
            return Fail("failed", error)
        if verdict is not None:
            return verdict
    return Deny("no-verdict", "no step decided the call")


def audit_record(state: GateState, verdict: Verdict) -> dict[str, Any]:
    """The fields of the call's one audit record (:func:`guardrail.tools.audit.record`), from what the steps
    found and how the call ended. The rule and reason are the verdict's, else the policy decision's; the
    arguments are the checked ones once the policy decided (as it judged them), else the validated ones; the
    idempotency key and the policy's version and secret arguments appear once the tool is known."""
    decision, policy = state.decision, state.policy
    rule = reason = ""
    error: BaseException | None = None
    result: Any = None
    if isinstance(verdict, Deny):
        outcome, rule, reason, error = "denied", verdict.rule, verdict.detail or verdict.reason, verdict.error
    elif isinstance(verdict, Fail):
        outcome, rule, reason = verdict.outcome, verdict.rule, verdict.reason
        error = verdict.error if outcome == "failed" else None
    elif isinstance(verdict, Park):
        outcome, rule = "pending_approval", verdict.rule
    else:
        outcome, result = "replayed" if verdict.replayed else "executed", verdict.value
    return {
        "request_id": state.request_id, "tool": state.tool_name, "decision": outcome,
        "rule": rule or (decision.rule if decision else ""),
        "reason": reason or (decision.reason if decision else ""),
        "arguments": state.checked if state.checked is not None else state.arguments,
        "identity": state.identity,
        "policy_version": policy.version if policy else "",
        "secret_args": policy.secret_args if policy else frozenset(),
        "idempotency_key": state.key if state.tool is not None else None,
        "result": result, "error": error, "omitted": state.omitted,
        "lists": [*decision.lists, *state.added] if decision else None,
        "provenance": list(decision.provenance) if decision else None,
    }
