"""Approvals for side-effecting tools: a parked call runs only once a person approves that exact call.

A token is bound to the tool, the SHA-256 of the canonical arguments, the caller's identity and an expiry.
States move ``pending → approved → used`` (or ``pending → rejected``) by compare-and-set in the store, so a
token runs at most one call, only the call it was issued for, only for the same caller, and only before it
expires. The token is a random 256-bit value handed to the application (never to the model); a value the
model writes into its arguments is just an argument.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass

from guardrail.store.base import Store
from guardrail.tools.identity import Identity, key_of

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
