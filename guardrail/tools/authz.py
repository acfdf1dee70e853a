"""The authorization gate: a policy, the caller's identity and a call's arguments in; a sealed decision out.

Order (deny wins, default deny):

1. any ``[[deny]]`` rule that matches the arguments as proposed → deny (that rule);
2. any ``[args.*]`` constraint the arguments break → deny (``args.<path>``); otherwise each constrained value
   is replaced by its canonical form (the resolved path, the normalised URL): the *checked arguments*;
3. any ``[[deny]]`` rule that matches the checked arguments → deny (so a deny pattern cannot be dodged by
   a spelling that canonicalises to what it names);
4. the first ``[[allow]]`` rule that matches → allowed (that rule); nothing matched → deny (``default-deny``).
   Its negated conditions (``not_one_of``, ``not_pattern``, ``not_list``) must hold for the checked arguments
   too, as every ``[args.*]`` negated key must: the tool never receives a value they refuse;
5. an allowed call waits for a person when the policy says ``approval = "required"`` (``Decision.approval``
   is ``"approval"``) or an ``[[approve]]`` rule matches the proposed or the checked arguments
   (``"approve.<id>"``); approve rules match as deny rules do (a condition that cannot judge counts as met).

Steps 1-5 judge what the model sent: an argument it left out (its default in the arguments, its location in
``omitted``) meets and breaks only the presence keys ``required`` and ``absent``, unless a rule says
``check_default`` (see :mod:`guardrail.tools.policy.arguments`). Lists, provenance and current values come from
``facts`` (:mod:`guardrail.tools.policy.facts`), which also records what was read: the decision carries it
(``lists``, ``provenance``) for the audit record.

Identity comes only from :func:`guardrail.identity` (the trusted runtime). A :class:`Decision` can only be
made here; it carries the checked arguments, and the tool executor runs the tool with exactly those values
and only with a positive decision made for exactly that call (complete mediation). ``Decision.rule``,
``.argument`` and ``.reason`` explain a denial to the application and the audit record; what the model is
told is always the generic :data:`GENERIC_DENIAL`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from guardrail.errors import Rejected
from guardrail.tools.identity import Identity
from guardrail.tools.policy.arguments import Location, canonicalize
from guardrail.tools.policy.facts import Facts
from guardrail.tools.policy.model import Policy

GENERIC_DENIAL = "This action is not permitted."
_SEAL = object()


def arguments_hash(tool: str, arguments: dict[str, Any]) -> str:
    """SHA-256 over the tool name and the canonical JSON of its arguments (sorted keys, no spaces)."""
    canonical = json.dumps({"tool": tool, "arguments": arguments}, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Decision:
    """The gate's verdict on one call. Only :func:`authorize` makes sealed decisions the executor accepts.

    ``arguments`` are the checked arguments (canonical values in place) and ``arguments_hash`` covers them;
    ``argument`` is where a constraint failed (``path``, ``urls[1]``, ``target.url``), ``""`` otherwise.
    ``approval`` names what makes an allowed call wait for a person (``"approval"``: the policy's
    ``approval = "required"``; ``"approve.<id>"``: that rule), ``""`` when it runs at once. ``lists`` are the
    lists read (name and version) and ``provenance`` the provenance checks made (hashes, sources, verdicts).
    """

    allowed: bool
    tool: str
    rule: str
    reason: str
    policy_version: str
    identity: Identity | None
    arguments_hash: str
    arguments: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    argument: str = ""
    approval: str = ""
    lists: tuple[dict[str, Any], ...] = field(default=(), repr=False, compare=False)
    provenance: tuple[dict[str, Any], ...] = field(default=(), repr=False, compare=False)
    _seal: object = field(default=None, repr=False, compare=False)

    def permits(self, tool: str, arguments: dict[str, Any]) -> bool:
        """Whether this is a positive decision made by the gate for exactly this tool and these (checked)
        arguments."""
        return (self._seal is _SEAL and self.allowed and self.tool == tool
                and self.arguments_hash == arguments_hash(tool, arguments))


def authorize(policy: Policy | None, tool: str, arguments: dict[str, Any], who: Identity | None,
              omitted: Collection[Location] = frozenset(), facts: Facts | None = None) -> Decision:
    """Decide one call (see the module docstring). No policy at all is a denial. ``omitted`` are the locations
    of the values the model left out (the defaults in ``arguments``): they are judged by presence only
    (``required``, ``absent``), or as values where a rule says ``check_default``. ``facts`` hold the store's
    lists, the run's content and the current values (none: conditions on them cannot be judged)."""
    checked = arguments
    facts = facts if facts is not None else Facts(who)

    def decide(allowed: bool, rule: str, reason: str, argument: str = "", approval: str = "") -> Decision:
        version = policy.version if policy is not None else ""
        return Decision(allowed, tool, rule, reason, version, who, arguments_hash(tool, checked), checked,
                        argument, approval, tuple(facts.lists_read), tuple(facts.provenance_checks), _SEAL)

    if policy is None:
        return decide(False, "no-policy", f"no policy for tool {tool!r}")
    if policy.tool != tool:
        return decide(False, "policy-mismatch", f"the policy is for {policy.tool!r}, not {tool!r}")
    for rule in policy.deny:
        if rule.matches(who, arguments, deny=True, omitted=omitted, facts=facts):
            return decide(False, f"deny.{rule.id}", "a deny rule matched")
    for path, constraint in policy.args.items():
        try:
            checked = canonicalize(checked, path, constraint, omitted, facts)
        except Rejected as rejected:
            checked = arguments
            return decide(False, f"args.{path}", rejected.reason, rejected.argument or path)
    if checked != arguments:
        for rule in policy.deny:
            if rule.matches(who, checked, deny=True, omitted=omitted, facts=facts):
                return decide(False, f"deny.{rule.id}", "a deny rule matched the checked arguments")
    allowed = next((rule for rule in policy.allow if rule.matches(who, arguments, omitted=omitted, facts=facts)
                    and (checked == arguments or rule.matches(who, checked, omitted=omitted, facts=facts,
                                                              negations=True))), None)
    if allowed is None:
        return decide(False, "default-deny", "no allow rule matched")
    approval = "approval" if policy.approval == "required" else ""
    for rule in policy.approve:
        if approval:
            break
        if any(rule.matches(who, candidate, deny=True, omitted=omitted, facts=facts)
               for candidate in ((arguments,) if checked == arguments else (arguments, checked))):
            approval = f"approve.{rule.id}"
    reason = "an allow rule matched" + (f"; {approval} asks for a person's approval" if approval else "")
    return decide(True, f"allow.{allowed.id}", reason, approval=approval)
