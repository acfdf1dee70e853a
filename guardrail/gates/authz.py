"""The authorization gate: a policy, the caller's identity and a call's arguments in; a sealed decision out.

Order (deny wins, default deny):

1. any ``[[deny]]`` rule that matches → deny (that rule);
2. any ``[args.*]`` constraint the arguments break → deny (``args.<name>``);
3. the first ``[[allow]]`` rule that matches → allow (that rule);
4. nothing matched → deny (``default-deny``).

Identity comes only from :func:`guardrail.identity` (the trusted runtime). A :class:`Decision` can only be
made here; the tool executor refuses to run anything without a positive decision made for exactly the call
it is about to run (complete mediation). ``Decision.reason`` is for the audit record: what the model is told
is always the generic :data:`GENERIC_DENIAL`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from guardrail.identity import Identity
from guardrail.policy.model import Policy

GENERIC_DENIAL = "This action is not permitted."
_SEAL = object()


def arguments_hash(tool: str, arguments: dict[str, Any]) -> str:
    """SHA-256 over the tool name and the canonical JSON of its arguments (sorted keys, no spaces)."""
    canonical = json.dumps({"tool": tool, "arguments": arguments}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Decision:
    """The gate's verdict on one call. Only :func:`authorize` makes sealed decisions the executor accepts."""

    allowed: bool
    tool: str
    rule: str
    reason: str
    policy_version: str
    identity: Identity | None
    arguments_hash: str
    _seal: object = field(default=None, repr=False, compare=False)

    def permits(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether this is a positive decision made by the gate for exactly this tool and these arguments."""
        return (self._seal is _SEAL and self.allowed and self.tool == tool
                and self.arguments_hash == arguments_hash(tool, arguments))


def authorize(policy: Policy | None, tool: str, arguments: dict[str, Any], who: Identity | None) -> Decision:
    """Decide one call (see the module docstring). No policy at all is a denial."""
    digest = arguments_hash(tool, arguments)

    def decide(allowed: bool, rule: str, reason: str) -> Decision:
        version = policy.version if policy is not None else ""
        return Decision(allowed, tool, rule, reason, version, who, digest, _SEAL)

    if policy is None:
        return decide(False, "no-policy", f"no policy for tool {tool!r}")
    if policy.tool != tool:
        return decide(False, "policy-mismatch", f"the policy is for {policy.tool!r}, not {tool!r}")
    for rule in policy.deny:
        if rule.matches(who, arguments, deny=True):
            return decide(False, f"deny.{rule.id}", "a deny rule matched")
    for name, constraint in policy.args.items():
        if name not in arguments:
            if constraint.required:
                return decide(False, f"args.{name}", "required argument missing")
            continue
        reason = constraint.check(arguments[name])
        if reason is not None:
            return decide(False, f"args.{name}", reason)
    for rule in policy.allow:
        if rule.matches(who, arguments):
            return decide(True, f"allow.{rule.id}", "an allow rule matched")
    return decide(False, "default-deny", "no allow rule matched")
