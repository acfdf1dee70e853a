"""guardrail: turn "the model said something" into a valid, permitted, typed value - or a precise error.

This namespace holds what a user types daily: the three entry points (``wrap``, ``structured``, ``parse``),
the degradation ``Chain``, the ``Canary`` rollout, tools and their policies, semantic rules, the result record
and the errors most code catches. Everything else is imported from its subpackage, each of which pins its own
``__all__``:

- ``guardrail.call``: the SDK wrapper, the decorator, settings, retry, modes, streaming;
- ``guardrail.parse`` / ``guardrail.schema`` / ``guardrail.contract``: parsing, schema lowering, contracts;
- ``guardrail.gates``: semantic rules; ``guardrail.tools``: tools, policies, identity, approvals, audit;
- ``guardrail.chain``: tiers, breakers, the rule engine; ``guardrail.local``: constrained local decoding;
- ``guardrail.store``, ``guardrail.observe``, ``guardrail.vendors``, ``guardrail.testing``;
- ``guardrail.errors``: the whole error tree; ``guardrail.outcome``: usage, budgets, attempts, results.

Names are loaded on first use (PEP 562, :mod:`guardrail._lazy`): ``import guardrail`` costs almost nothing.
Type checkers see every name through the ``TYPE_CHECKING`` imports below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace
from guardrail._version import __version__

# Two public functions share their name with a subpackage/module; they are bound eagerly, since importing
# ``guardrail.parse`` or ``guardrail.tools.identity`` later would otherwise leave the module in their place.
from guardrail.parse import parse
from guardrail.tools.identity import identity

if TYPE_CHECKING:
    from guardrail.call.cache import Cache
    from guardrail.call.client import wrap
    from guardrail.call.config import Config, configure
    from guardrail.call.decorator import structured
    from guardrail.call.options import RetryPolicy, Settings
    from guardrail.canary.rollout import Canary
    from guardrail.chain.tiers import Chain
    from guardrail.errors import (
        ApprovalRequired,
        BudgetExceeded,
        Declined,
        Denied,
        GaveUp,
        GuardrailError,
        ParseError,
        Refused,
        SchemaViolationError,
        SemanticRejected,
        TruncatedJSONError,
        VendorError,
        VendorUnavailable,
    )
    from guardrail.gates.semantic import Rule, rule
    from guardrail.local.choose import achoose, choose
    from guardrail.outcome import Budget, Result, Usage
    from guardrail.parse import Violation, parse_report
    from guardrail.schema.jsonschema_contract import JsonSchema
    from guardrail.tools.execute import (
        Tool,
        ToolRegistry,
        approve,
        execute_tool_call,
        execute_tool_calls,
        reject,
        run_tool_call,
        tool,
    )
    from guardrail.tools.identity import Identity
    from guardrail.tools.policy.loader import load_policies, load_policy

_NAMES: dict[str, str] = {
    "Cache": "guardrail.call.cache",
    "achoose": "guardrail.local.choose",
    "ApprovalRequired": "guardrail.errors",
    "approve": "guardrail.tools.execute",
    "Budget": "guardrail.outcome",
    "BudgetExceeded": "guardrail.errors",
    "Canary": "guardrail.canary.rollout",
    "Chain": "guardrail.chain.tiers",
    "choose": "guardrail.local.choose",
    "Config": "guardrail.call.config",
    "configure": "guardrail.call.config",
    "Declined": "guardrail.errors",
    "Denied": "guardrail.errors",
    "execute_tool_call": "guardrail.tools.execute",
    "execute_tool_calls": "guardrail.tools.execute",
    "GaveUp": "guardrail.errors",
    "GuardrailError": "guardrail.errors",
    "Identity": "guardrail.tools.identity",
    "JsonSchema": "guardrail.schema.jsonschema_contract",
    "load_policies": "guardrail.tools.policy.loader",
    "load_policy": "guardrail.tools.policy.loader",
    "parse_report": "guardrail.parse",
    "ParseError": "guardrail.errors",
    "Refused": "guardrail.errors",
    "reject": "guardrail.tools.execute",
    "Result": "guardrail.outcome",
    "RetryPolicy": "guardrail.call.options",
    "rule": "guardrail.gates.semantic",
    "Rule": "guardrail.gates.semantic",
    "run_tool_call": "guardrail.tools.execute",
    "SchemaViolationError": "guardrail.errors",
    "SemanticRejected": "guardrail.errors",
    "Settings": "guardrail.call.options",
    "structured": "guardrail.call.decorator",
    "tool": "guardrail.tools.execute",
    "Tool": "guardrail.tools.execute",
    "ToolRegistry": "guardrail.tools.execute",
    "TruncatedJSONError": "guardrail.errors",
    "TruncatedError": "guardrail.errors",  # the name before 0.3; not in __all__
    "Usage": "guardrail.outcome",
    "VendorError": "guardrail.errors",
    "VendorUnavailable": "guardrail.errors",
    "Violation": "guardrail.parse",
    "wrap": "guardrail.call.client",
}

__all__ = [
    "ApprovalRequired",
    "Budget",
    "BudgetExceeded",
    "Cache",
    "Canary",
    "Chain",
    "Config",
    "Declined",
    "Denied",
    "GaveUp",
    "GuardrailError",
    "Identity",
    "JsonSchema",
    "ParseError",
    "Refused",
    "Result",
    "RetryPolicy",
    "Rule",
    "SchemaViolationError",
    "SemanticRejected",
    "Settings",
    "Tool",
    "ToolRegistry",
    "TruncatedJSONError",
    "Usage",
    "VendorError",
    "VendorUnavailable",
    "Violation",
    "__version__",
    "achoose",
    "approve",
    "choose",
    "configure",
    "execute_tool_call",
    "execute_tool_calls",
    "identity",
    "load_policies",
    "load_policy",
    "parse",
    "parse_report",
    "reject",
    "rule",
    "run_tool_call",
    "structured",
    "tool",
    "wrap",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
