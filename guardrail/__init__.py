"""guardrail: turn "the model said something" into a valid, permitted, typed value - or a precise error.

The public API lives here; modules under ``guardrail.`` are implementation detail unless re-exported.
"""

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
    Declined,
    Denied,
    GaveUp,
    GuardrailError,
    InputLimitError,
    NoJSONError,
    OutputTruncated,
    ParseError,
    Refused,
    SchemaViolationError,
    SemanticRejected,
    SemanticViolation,
    ToolCallError,
    TruncatedError,
    VendorError,
    VendorUnavailable,
)
from guardrail.gates.authz import Decision
from guardrail.gates.semantic import Rule, rule
from guardrail.identity import Identity, current_identity, identity
from guardrail.local.choose import Choice, NoOptionMatched, Uncertain, achoose, choose
from guardrail.local.choose_api import LogprobBackend, LogprobsUnavailable
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
    parse,
    parse_report,
)
from guardrail.policy.loader import PolicyError, load_policies, load_policy
from guardrail.policy.model import Policy
from guardrail.retry import RetryPolicy
from guardrail.schema.lower import CompileEntry, CompileReport
from guardrail.streaming import AsyncStructuredStream, StructuredStream
from guardrail.tools import Tool, ToolRegistry, approve, execute_tool_call, execute_tool_calls, reject, tool

__version__ = "0.1.0"

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
    "Contract",
    "Decision",
    "Declined",
    "Denied",
    "Fix",
    "GaveUp",
    "GuardrailError",
    "Identity",
    "InputLimitError",
    "Limits",
    "LogprobBackend",
    "LogprobsUnavailable",
    "Mode",
    "NoJSONError",
    "NoOptionMatched",
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
    "Refused",
    "Result",
    "RetryPolicy",
    "Rule",
    "SchemaViolationError",
    "SemanticRejected",
    "SemanticViolation",
    "Settings",
    "Stage",
    "StructuredFunction",
    "StructuredMethod",
    "StructuredStream",
    "Tool",
    "ToolCallError",
    "ToolRegistry",
    "TruncatedError",
    "Uncertain",
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
    "structured",
    "tool",
    "wrap",
]
