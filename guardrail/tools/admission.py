"""The gate's first steps: which tool, under which policy, and whether this caller could be admitted at all.

They run before the arguments are read, so a caller no allow rule could ever admit learns nothing about a tool,
not even its argument schema: the answer is the same generic denial as for a tool that does not exist.
"""

from __future__ import annotations

from guardrail.errors import PolicyError
from guardrail.tools.state import Deny, Fail, GateState, Verdict

__all__ = ["admit_caller", "find_tool", "load_policy"]


def find_tool(state: GateState) -> Verdict | None:
    """The tool registered under exactly the proposed name (no case folding, no Unicode normalisation), else
    denied (rule ``unknown-tool``)."""
    state.tool = state.registry.get(state.name)
    if state.tool is None:
        return Deny("unknown-tool", "no tool registered under this exact name")
    return None


def load_policy(state: GateState) -> Verdict | None:
    """The tool's policy, loaded and checked against its parameters on first use. A policy that does not load
    (or disagrees with the tool) stops every call with its :class:`PolicyError`, audited ``denied``
    (rule ``policy-error``). No policy file at all is left to ``admit_caller``, which denies."""
    try:
        state.policy = state.found().policy()
    except PolicyError as error:
        return Fail("denied", error, rule="policy-error", reason=str(error))
    return None


def admit_caller(state: GateState) -> Verdict | None:
    """Default deny, before anything else is read: no policy (rule ``no-policy``), or no allow rule that could
    admit this caller's identity whatever the arguments (rule ``default-deny``)."""
    policy = state.policy
    if policy is None:
        return Deny("no-policy", "no allow rule can admit this caller")
    if not any(rule.may_match(state.identity) for rule in policy.allow):
        return Deny("default-deny", "no allow rule can admit this caller")
    return None
