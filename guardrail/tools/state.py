"""One tool call on its way through the gate: the state the steps share, and the verdicts a step returns.

A step (:data:`Step`) is a plain callable ``(GateState) -> Verdict | None``. It reads what the caller gave and
what earlier steps found, adds what it finds, and returns ``None`` to hand the call to the next step, or a
verdict that ends it:

=========  ==========================================================  ===========================================
Deny       refuse the call (``rule``, ``reason``, ``argument``)       audited ``denied``; raises ``Denied``
Fail       stop with an error (a parse error, a semantic violation,   audited as its ``outcome``; raises the error
           a policy or store error, a conflict, the tool's failure)
Park       wait for a person (the approval token)                     audited ``pending_approval``; raises
                                                                      ``ApprovalRequired``
Done       the call's result (``replayed``: a stored outcome)         audited ``executed`` / ``replayed``
=========  ==========================================================  ===========================================

Steps never write audit records or raise for a decision: the loop in :mod:`guardrail.tools.gate` does both, once
per call, from the state and the verdict. A step that breaks (raises) is a ``Fail`` too.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from guardrail.errors import UsageError
from guardrail.store.base import Store
from guardrail.store.idempotency import DEFAULT_LEASE, Idempotency
from guardrail.tools.authz import Decision
from guardrail.tools.identity import Identity, current_identity
from guardrail.tools.policy.arguments import Location
from guardrail.tools.policy.model import Policy
from guardrail.tools.registry import REGISTRY, Tool, ToolRegistry, default_store

__all__ = ["NOT_ASKED", "Deny", "Done", "Fail", "GateState", "Park", "Step", "Verdict"]

_T = TypeVar("_T")
#: ``GateState.current`` before the tool's ``current`` hook was asked (``None`` is an answer: no such object).
NOT_ASKED: Any = object()


@dataclass(frozen=True, slots=True)
class Deny:
    """Refuse the call: :class:`~guardrail.Denied` with the generic message, ``rule``, ``argument`` and ``reason``
    for the application. ``detail`` is the audit record's reason where it says more than ``reason`` (a broken
    rule's message); ``error`` is an exception the record names (a hook that raised)."""

    rule: str
    reason: str
    argument: str = ""
    detail: str = ""
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class Fail:
    """Stop with ``error``, raised as it is, audited as ``outcome`` (``invalid``, ``conflict``, ``failed``, or
    ``denied`` for a policy that does not load). ``rule`` and ``reason`` default to the decision's; a
    ``failed`` record names the error, the others say why in ``reason``."""

    outcome: str
    error: BaseException
    rule: str = ""
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Park:
    """The call waits for a person: :class:`~guardrail.ApprovalRequired` with this token; ``rule`` says what
    asked (``approval`` or ``approve.<id>``)."""

    token: str
    expires_at: float
    rule: str


@dataclass(frozen=True, slots=True)
class Done:
    """The call's result: the tool ran (``replayed`` false), or a stored outcome of an earlier run answered."""

    value: Any
    replayed: bool


Verdict = Deny | Fail | Park | Done
#: A gate step: returns ``None`` to go on, or the verdict that ends the call.
Step = Callable[["GateState"], Verdict | None]


@dataclass(eq=False, slots=True)
class GateState:
    """Everything known about one call, filled in by the steps in order.

    The first fields are what the caller gave (only ``name`` and ``proposed``, the arguments, come from the
    model; the registry and the store default to the process's, the identity to the current one); the rest start
    empty and are set by the step named beside them. ``arguments`` is always the canonical form of
    ``model``: what the policy judges, the hashes cover and, after ``seal_checked``, the tool receives.
    """

    name: object
    proposed: Mapping[str, Any] | str
    registry: ToolRegistry = field(default_factory=lambda: REGISTRY)
    store: Store = field(default_factory=default_store)
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    identity: Identity | None = field(default_factory=current_identity)
    key: str | None = None  # the idempotency key: given, or derived by ``replay`` when the policy requires one
    approval_token: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    lease: float = DEFAULT_LEASE
    wait: float = 30.0

    tool: Tool | None = None  # find_tool
    policy: Policy | None = None  # load_policy
    model: BaseModel | dict[str, Any] | None = None  # validate_arguments; note_left_out; seal_checked
    arguments: dict[str, Any] | None = None  # with the model
    left_out: frozenset[Location] = frozenset()  # note_left_out
    omitted: list[str] | None = None  # note_left_out: the locations as text (``cc``, ``items[1].sku``)
    current: Any = NOT_ASKED  # read_current
    decision: Decision | None = None  # authorize
    checked: dict[str, Any] | None = None  # authorize: a copy of the checked arguments, for the record
    idempotency: Idempotency | None = None  # replay, when the call has a key
    scoped_key: str = ""  # replay
    added: list[dict[str, Any]] = field(default_factory=list)  # run_tool: [[after_approval]] list adds

    @property
    def tool_name(self) -> str:
        """The tool's name; before (or without) a registered tool, the name as proposed, cut to 200 characters."""
        return self.tool.name if self.tool is not None else str(self.name)[:200]

    def found(self) -> Tool:
        """The registered tool (``find_tool`` ran)."""
        return _needed(self.tool, "find_tool")

    def judged(self) -> tuple[Policy, BaseModel | dict[str, Any], dict[str, Any]]:
        """The policy, the validated arguments and their canonical form (``load_policy`` and
        ``validate_arguments`` ran)."""
        if self.model is None or self.arguments is None:
            raise _missing("validate_arguments")
        return _needed(self.policy, "load_policy"), self.model, self.arguments

    def decided(self) -> Decision:
        """The policy's decision (``authorize`` ran)."""
        return _needed(self.decision, "authorize")


def _needed(value: _T | None, step: str) -> _T:
    """``value``, or an error when the step that sets it is not in the list before the one asking: a step list
    without it fails closed."""
    if value is None:
        raise _missing(step)
    return value


def _missing(step: str) -> UsageError:
    return UsageError(f"the gate step {step!r} must run before this one")
