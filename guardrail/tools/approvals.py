"""Approvals for side-effecting tools: a parked call runs only once a person approves that exact call.

A token is bound to the tool, the SHA-256 of the canonical arguments, the caller's identity and an expiry.
States move ``pending → approved → used`` (or ``pending → rejected``) by compare-and-set in the store, so a
token runs at most one call, only the call it was issued for, only for the same caller, and only before it
expires. The token is a random 256-bit value handed to the application (never to the model); a value the
model writes into its arguments is just an argument.

The gate's step :func:`await_approval` parks a call the decision says must wait, or redeems the token the
application passed; :func:`add_approved` does a policy's ``[[after_approval]]`` list adds once an approved call ran.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from guardrail.errors import GuardrailError
from guardrail.store.base import Store
from guardrail.store.lists import lists_of
from guardrail.tools.identity import Identity, key_of
from guardrail.tools.policy.arguments import elements, leaves
from guardrail.tools.policy.facts import list_name
from guardrail.tools.policy.model import Policy
from guardrail.tools.state import Deny, GateState, Park, Verdict

_PREFIX = "approval:"


@dataclass(frozen=True, slots=True)
class Ticket:
    """What a token stands for."""

    tool: str
    arguments_hash: str
    identity: str
    expires_at: float
    state: str
    approver: str | None = None

    def dump(self) -> str:
        return json.dumps({"tool": self.tool, "arguments_hash": self.arguments_hash, "identity": self.identity,
                           "expires_at": self.expires_at, "state": self.state, "approver": self.approver},
                          sort_keys=True)


def park(store: Store, tool: str, arguments_hash: str, who: Identity | None, ttl: float) -> tuple[str, float]:
    """Park a call: a fresh token and its expiry (Unix time)."""
    token = secrets.token_urlsafe(32)
    expires_at = time.time() + ttl
    ticket = Ticket(tool, arguments_hash, key_of(who), expires_at, "pending")
    store.put_if_absent(_PREFIX + token, ticket.dump(), ttl)
    return token, expires_at


def _load(store: Store, token: str) -> tuple[str, Ticket] | None:
    if not isinstance(token, str) or not token or len(token) > 128:
        return None
    raw = store.get(_PREFIX + token)
    if raw is None:
        return None
    data = json.loads(raw)
    return raw, Ticket(**data)


def decide(store: Store, token: str, *, approver: str, reject: bool = False) -> bool:
    """Approve (or reject) a pending call; False when the token is unknown, expired or not pending."""
    found = _load(store, token)
    if found is None:
        return False
    raw, ticket = found
    left = ticket.expires_at - time.time()
    if ticket.state != "pending" or left <= 0:
        return False
    changed = Ticket(ticket.tool, ticket.arguments_hash, ticket.identity, ticket.expires_at,
                     "rejected" if reject else "approved", approver)
    return store.compare_and_set(_PREFIX + token, raw, changed.dump(), left)


def redeem(store: Store, token: str, tool: str, arguments_hash: str, who: Identity | None) -> str | None:
    """Use an approved token for this exact call, once: ``None`` when it may run, else why not (internal)."""
    found = _load(store, token)
    if found is None:
        return "unknown or expired approval token"
    raw, ticket = found
    left = ticket.expires_at - time.time()
    if left <= 0:
        return "approval expired"
    if ticket.tool != tool:
        return "approval is for another tool"
    if ticket.arguments_hash != arguments_hash:
        return "approval is for other arguments"
    if ticket.identity != (key_of(who)):
        return "approval is for another caller"
    if ticket.state != "approved":
        return f"approval is {ticket.state}"
    used = Ticket(ticket.tool, ticket.arguments_hash, ticket.identity, ticket.expires_at, "used", ticket.approver)
    if not store.compare_and_set(_PREFIX + token, raw, used.dump(), left):
        return "approval already used"
    return None


def await_approval(state: GateState) -> Verdict | None:
    """A call the decision says must wait for a person (the policy's ``approval = "required"`` or an
    ``[[approve]]`` rule): parked under a fresh token without an ``approval_token``; with one, the token must be
    approved for exactly this call (tool, checked arguments, caller) and unused, else denied (rule ``approval``)."""
    decision = state.decided()
    if not decision.approval:
        return None
    policy, _, _ = state.judged()
    if state.approval_token is None:
        token, expires_at = park(state.store, state.found().name, decision.arguments_hash, state.identity,
                                 policy.approval_ttl)
        return Park(token, expires_at, decision.approval)
    problem = redeem(state.store, state.approval_token, state.found().name, decision.arguments_hash, state.identity)
    return None if problem is None else Deny("approval", problem)


def add_approved(policy: Policy, store: Store, args: dict[str, Any], who: Identity | None) -> list[dict[str, Any]]:
    """``[[after_approval]]``: the values of each ``add`` argument join their list, once the approved call ran;
    what was added (list, version, count), or the error (the tool has run: a failed add is recorded, not
    raised, and leaves the list as it was: a later call with that value is judged as before)."""
    done: list[dict[str, Any]] = []
    for add in policy.after_approval:
        name = list_name(add.list_name, who)
        values = [item for value, left_out, _ in leaves(args, add.add) if not left_out
                  for item in elements(value) if isinstance(item, str) and item]
        if name is None or not values:
            why = "the list name needs an identity with that field" if name is None else "nothing to add"
            done.append({"list": add.list_name if name is None else name, "added": 0, "error": why})
            continue
        try:
            snapshot = lists_of(store).add(name, *values)
        except GuardrailError as error:
            done.append({"list": name, "added": 0, "error": f"{type(error).__name__}: {error}"})
            continue
        done.append({"list": name, "version": snapshot.version, "added": len(values)})
    return done
