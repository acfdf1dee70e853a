"""Tool calls under authorization:
the registry (:mod:`.registry`), the gate and its steps (:mod:`.gate`), per-tool policies and their checkers,
identity, approvals, audit.

A tool call (:mod:`.execute`) goes through the steps listed in :mod:`.gate`: it is validated against the tool's
arguments model and canonicalized once (:mod:`.arguments`), checked by the policy gate (:mod:`.deciding` with
:mod:`.authz`, policies in :mod:`.policy`) with the identity of the trusted runtime (:mod:`.identity`), the
store's allow-lists (:func:`lists`) and the run's content (:mod:`.provenance`: what was trusted, where a value
came from), parked for approval when a rule says so (:mod:`.approvals`), run at most once per idempotency key
(:mod:`.running`), and recorded once (:mod:`.audit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.errors import PolicyError
    from guardrail.tools.authz import Decision
    from guardrail.tools.execute import (
        ToolOutcome,
        ToolResult,
        approve,
        execute_tool_call,
        execute_tool_calls,
        reject,
        run_tool_call,
    )
    from guardrail.tools.identity import Identity, current_identity
    from guardrail.tools.policy.loader import load_policies, load_policy
    from guardrail.tools.policy.model import Policy
    from guardrail.tools.provenance import RunContext, current_run, run_context
    from guardrail.tools.registry import Tool, ToolRegistry, lists, tool

_NAMES: dict[str, str] = {
    "approve": "guardrail.tools.execute",
    "current_identity": "guardrail.tools.identity",
    "current_run": "guardrail.tools.provenance",
    "Decision": "guardrail.tools.authz",
    "execute_tool_call": "guardrail.tools.execute",
    "execute_tool_calls": "guardrail.tools.execute",
    "Identity": "guardrail.tools.identity",
    "lists": "guardrail.tools.registry",
    "load_policies": "guardrail.tools.policy.loader",
    "load_policy": "guardrail.tools.policy.loader",
    "Policy": "guardrail.tools.policy.model",
    "PolicyError": "guardrail.errors",
    "reject": "guardrail.tools.execute",
    "run_context": "guardrail.tools.provenance",
    "RunContext": "guardrail.tools.provenance",
    "run_tool_call": "guardrail.tools.execute",
    "Tool": "guardrail.tools.registry",
    "tool": "guardrail.tools.registry",
    "ToolOutcome": "guardrail.tools.execute",
    "ToolRegistry": "guardrail.tools.registry",
    "ToolResult": "guardrail.tools.execute",
}

__all__ = [
    "Decision",
    "Identity",
    "Policy",
    "PolicyError",
    "RunContext",
    "Tool",
    "ToolOutcome",
    "ToolRegistry",
    "ToolResult",
    "approve",
    "current_identity",
    "current_run",
    "execute_tool_call",
    "execute_tool_calls",
    "lists",
    "load_policies",
    "load_policy",
    "reject",
    "run_context",
    "run_tool_call",
    "tool",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
