"""Tool calls under authorization:
the registry and executor, per-tool policies and their checkers, identity, approvals, audit.

A tool call is validated against the tool's arguments model, canonicalized once, checked by the policy gate
(:mod:`.authz`, policies in :mod:`.policy`) with the identity of the trusted runtime (:mod:`.identity`), the
store's allow-lists (:func:`lists`) and the run's content (:mod:`.provenance`: what was trusted, where a value
came from), parked for approval when a rule says so (:mod:`.approvals`), run at most once per idempotency key,
and recorded (:mod:`.audit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.tools.authz import Decision
    from guardrail.tools.execute import (
        Tool,
        ToolOutcome,
        ToolRegistry,
        ToolResult,
        approve,
        execute_tool_call,
        execute_tool_calls,
        lists,
        reject,
        run_tool_call,
        tool,
    )
    from guardrail.tools.identity import Identity, current_identity
    from guardrail.tools.policy.loader import PolicyError, load_policies, load_policy
    from guardrail.tools.policy.model import Policy
    from guardrail.tools.provenance import RunContext, current_run, run_context

_NAMES: dict[str, str] = {
    "approve": "guardrail.tools.execute",
    "current_identity": "guardrail.tools.identity",
    "current_run": "guardrail.tools.provenance",
    "Decision": "guardrail.tools.authz",
    "execute_tool_call": "guardrail.tools.execute",
    "execute_tool_calls": "guardrail.tools.execute",
    "Identity": "guardrail.tools.identity",
    "lists": "guardrail.tools.execute",
    "load_policies": "guardrail.tools.policy.loader",
    "load_policy": "guardrail.tools.policy.loader",
    "Policy": "guardrail.tools.policy.model",
    "PolicyError": "guardrail.tools.policy.loader",
    "reject": "guardrail.tools.execute",
    "run_context": "guardrail.tools.provenance",
    "RunContext": "guardrail.tools.provenance",
    "run_tool_call": "guardrail.tools.execute",
    "Tool": "guardrail.tools.execute",
    "tool": "guardrail.tools.execute",
    "ToolOutcome": "guardrail.tools.execute",
    "ToolRegistry": "guardrail.tools.execute",
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
