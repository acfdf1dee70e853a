"""guardrail: turn "the model said something" into a valid, permitted, typed value - or a precise error.

The public API lives here; modules under ``guardrail.`` are implementation detail unless re-exported.

Names are loaded on first use (PEP 562 ``__getattr__``): ``import guardrail`` costs almost nothing, and
``guardrail.wrap`` loads the vendor layer, ``guardrail.tool`` the policy checkers, and so on. Type checkers
see every name through the ``TYPE_CHECKING`` imports below.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from guardrail._version import __version__

# Two public functions share their name with a subpackage/module; they are bound eagerly, since importing
# ``guardrail.parse`` or ``guardrail.identity`` later would otherwise leave the module in their place.
from guardrail.identity import identity
from guardrail.parse import parse

if TYPE_CHECKING:
    from guardrail._engine import Settings
    from guardrail.chain import Chain, ChainExhausted, ChainResult, CircuitBreaker
    from guardrail.client import StructuredMethod, Wrapped, wrap
    from guardrail.config import Config, configure, get_config, reset_config
    from guardrail.contract import Contract, compile_contract
    from guardrail.decorator import StructuredFunction, structured
    from guardrail.errors import (
        AmbiguousError,
        ApprovalRequired,
        BudgetExceeded,
        CallError,
        ConnectionDenied,
        ContractError,
        DeadlineExceeded,
        Declined,
        Denied,
        GaveUp,
        GuardrailError,
        IdempotencyConflict,
        IdempotencyError,
        IdempotencyFailed,
        IdempotencyInFlight,
        IdempotencyUnknown,
        InputLimitError,
        JSONSyntaxError,
        MissingExtra,
        NoJSONError,
        NothingHappened,
        OutputTruncated,
        ParseError,
        Refused,
        ResultNotStorable,
        RuleError,
        SchemaViolationError,
        SemanticRejected,
        SemanticViolation,
        StoreError,
        StoreUnavailable,
        SyncAsyncMismatch,
        ToolCallError,
        TruncatedError,
        UnsupportedCall,
        VendorError,
        VendorUnavailable,
    )
    from guardrail.gates.authz import Decision
    from guardrail.gates.semantic import Rule, rule
    from guardrail.identity import Identity, current_identity
    from guardrail.local.choose import Choice, NoOptionMatched, Uncertain, achoose, choose
    from guardrail.local.choose_api import LogprobBackend, LogprobsUnavailable
    from guardrail.methods import RawStructured
    from guardrail.modes import Capabilities, Mode, Plan
    from guardrail.outcome import Attempt, Budget, Outcome, Partial, Price, Result, Usage
    from guardrail.parse import (
        DEFAULT_STAGES,
        Candidate,
        Fix,
        Limits,
        ParseReport,
        ParseState,
        Stage,
        Violation,
        parse_report,
    )
    from guardrail.policy.loader import PolicyError, load_policies, load_policy
    from guardrail.policy.model import Policy
    from guardrail.retry import RetryPolicy
    from guardrail.schema.jsonschema_contract import JsonSchema
    from guardrail.schema.lower import CompileEntry, CompileReport
    from guardrail.streaming import AsyncStructuredStream, StructuredStream
    from guardrail.tools import (
        Tool,
        ToolRegistry,
        ToolResult,
        approve,
        execute_tool_call,
        execute_tool_calls,
        reject,
        run_tool_call,
        tool,
    )

#: Public name -> the module that defines it.
_LAZY: dict[str, str] = {
    "RawStructured": "guardrail.methods",
    "UnsupportedCall": "guardrail.errors",
    "JsonSchema": "guardrail.schema.jsonschema_contract",
    "ContractError": "guardrail.errors",
    "ConnectionDenied": "guardrail.errors",
    "run_tool_call": "guardrail.tools",
    "ToolResult": "guardrail.tools",
    "JSONSyntaxError": "guardrail.errors",
    "DeadlineExceeded": "guardrail.errors",
    "SyncAsyncMismatch": "guardrail.errors",
    "Settings": "guardrail._engine",
    "Chain": "guardrail.chain",
    "ChainExhausted": "guardrail.chain",
    "ChainResult": "guardrail.chain",
    "CircuitBreaker": "guardrail.chain",
    "StructuredMethod": "guardrail.client",
    "Wrapped": "guardrail.client",
    "wrap": "guardrail.client",
    "Config": "guardrail.config",
    "configure": "guardrail.config",
    "get_config": "guardrail.config",
    "reset_config": "guardrail.config",
    "Contract": "guardrail.contract",
    "compile_contract": "guardrail.contract",
    "StructuredFunction": "guardrail.decorator",
    "structured": "guardrail.decorator",
    "AmbiguousError": "guardrail.errors",
    "ApprovalRequired": "guardrail.errors",
    "BudgetExceeded": "guardrail.errors",
    "CallError": "guardrail.errors",
    "Declined": "guardrail.errors",
    "Denied": "guardrail.errors",
    "GaveUp": "guardrail.errors",
    "GuardrailError": "guardrail.errors",
    "IdempotencyConflict": "guardrail.errors",
    "IdempotencyError": "guardrail.errors",
    "IdempotencyFailed": "guardrail.errors",
    "IdempotencyInFlight": "guardrail.errors",
    "IdempotencyUnknown": "guardrail.errors",
    "MissingExtra": "guardrail.errors",
    "NothingHappened": "guardrail.errors",
    "ResultNotStorable": "guardrail.errors",
    "RuleError": "guardrail.errors",
    "StoreError": "guardrail.errors",
    "StoreUnavailable": "guardrail.errors",
    "InputLimitError": "guardrail.errors",
    "NoJSONError": "guardrail.errors",
    "OutputTruncated": "guardrail.errors",
    "ParseError": "guardrail.errors",
    "Refused": "guardrail.errors",
    "SchemaViolationError": "guardrail.errors",
    "SemanticRejected": "guardrail.errors",
    "SemanticViolation": "guardrail.errors",
    "ToolCallError": "guardrail.errors",
    "TruncatedError": "guardrail.errors",
    "VendorError": "guardrail.errors",
    "VendorUnavailable": "guardrail.errors",
    "Decision": "guardrail.gates.authz",
    "Rule": "guardrail.gates.semantic",
    "rule": "guardrail.gates.semantic",
    "Identity": "guardrail.identity",
    "current_identity": "guardrail.identity",
    "Choice": "guardrail.local.choose",
    "NoOptionMatched": "guardrail.local.choose",
    "Uncertain": "guardrail.local.choose",
    "achoose": "guardrail.local.choose",
    "choose": "guardrail.local.choose",
    "LogprobBackend": "guardrail.local.choose_api",
    "LogprobsUnavailable": "guardrail.local.choose_api",
    "Capabilities": "guardrail.modes",
    "Mode": "guardrail.modes",
    "Plan": "guardrail.modes",
    "Attempt": "guardrail.outcome",
    "Budget": "guardrail.outcome",
    "Outcome": "guardrail.outcome",
    "Partial": "guardrail.outcome",
    "Price": "guardrail.outcome",
    "Result": "guardrail.outcome",
    "Usage": "guardrail.outcome",
    "Candidate": "guardrail.parse",
    "DEFAULT_STAGES": "guardrail.parse",
    "Fix": "guardrail.parse",
    "Limits": "guardrail.parse",
    "ParseReport": "guardrail.parse",
    "ParseState": "guardrail.parse",
    "Stage": "guardrail.parse",
    "Violation": "guardrail.parse",
    "parse_report": "guardrail.parse",
    "PolicyError": "guardrail.policy.loader",
    "load_policies": "guardrail.policy.loader",
    "load_policy": "guardrail.policy.loader",
    "Policy": "guardrail.policy.model",
    "RetryPolicy": "guardrail.retry",
    "CompileEntry": "guardrail.schema.lower",
    "CompileReport": "guardrail.schema.lower",
    "AsyncStructuredStream": "guardrail.streaming",
    "StructuredStream": "guardrail.streaming",
    "Tool": "guardrail.tools",
    "ToolRegistry": "guardrail.tools",
    "approve": "guardrail.tools",
    "execute_tool_call": "guardrail.tools",
    "execute_tool_calls": "guardrail.tools",
    "reject": "guardrail.tools",
    "tool": "guardrail.tools",
}

__all__ = [
    "DEFAULT_STAGES",
    "AmbiguousError",
    "ApprovalRequired",
    "AsyncStructuredStream",
    "Attempt",
    "Budget",
    "BudgetExceeded",
    "CallError",
    "Candidate",
    "Capabilities",
    "Chain",
    "ChainExhausted",
    "ChainResult",
    "Choice",
    "CircuitBreaker",
    "CompileEntry",
    "CompileReport",
    "Config",
    "ConnectionDenied",
    "Contract",
    "ContractError",
    "DeadlineExceeded",
    "Decision",
    "Declined",
    "Denied",
    "Fix",
    "GaveUp",
    "GuardrailError",
    "IdempotencyConflict",
    "IdempotencyError",
    "IdempotencyFailed",
    "IdempotencyInFlight",
    "IdempotencyUnknown",
    "Identity",
    "InputLimitError",
    "JSONSyntaxError",
    "JsonSchema",
    "Limits",
    "LogprobBackend",
    "LogprobsUnavailable",
    "MissingExtra",
    "Mode",
    "NoJSONError",
    "NoOptionMatched",
    "NothingHappened",
    "Outcome",
    "OutputTruncated",
    "ParseError",
    "ParseReport",
    "ParseState",
    "Partial",
    "Plan",
    "Policy",
    "PolicyError",
    "Price",
    "RawStructured",
    "Refused",
    "Result",
    "ResultNotStorable",
    "RetryPolicy",
    "Rule",
    "RuleError",
    "SchemaViolationError",
    "SemanticRejected",
    "SemanticViolation",
    "Settings",
    "Stage",
    "StoreError",
    "StoreUnavailable",
    "StructuredFunction",
    "StructuredMethod",
    "StructuredStream",
    "SyncAsyncMismatch",
    "Tool",
    "ToolCallError",
    "ToolRegistry",
    "ToolResult",
    "TruncatedError",
    "Uncertain",
    "UnsupportedCall",
    "Usage",
    "VendorError",
    "VendorUnavailable",
    "Violation",
    "Wrapped",
    "__version__",
    "achoose",
    "approve",
    "choose",
    "compile_contract",
    "configure",
    "current_identity",
    "execute_tool_call",
    "execute_tool_calls",
    "get_config",
    "identity",
    "load_policies",
    "load_policy",
    "parse",
    "parse_report",
    "reject",
    "reset_config",
    "rule",
    "run_tool_call",
    "structured",
    "tool",
    "wrap",
]


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use and keep it in the package namespace."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'guardrail' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
