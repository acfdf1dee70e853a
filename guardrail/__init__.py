"""guardrail: turn "the model said something" into a valid, permitted, typed value - or a precise error.

The public API lives here; modules under ``guardrail.`` are implementation detail unless re-exported.
"""

from guardrail._engine import Settings
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
from guardrail.gates.semantic import Rule, rule
from guardrail.identity import Identity, current_identity, identity
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
from guardrail.retry import RetryPolicy
from guardrail.schema.lower import CompileEntry, CompileReport
from guardrail.streaming import AsyncStructuredStream, StructuredStream

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
    "CompileEntry",
    "CompileReport",
    "Config",
    "Contract",
    "Declined",
    "Denied",
    "Fix",
    "GaveUp",
    "GuardrailError",
    "Identity",
    "InputLimitError",
    "Limits",
    "Mode",
    "NoJSONError",
    "Outcome",
    "OutputTruncated",
    "ParseError",
    "ParseReport",
    "ParseState",
    "Partial",
    "Plan",
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
    "ToolCallError",
    "TruncatedError",
    "Usage",
    "VendorError",
    "VendorUnavailable",
    "Violation",
    "Wrapped",
    "__version__",
    "compile_contract",
    "configure",
    "current_identity",
    "get_config",
    "identity",
    "parse",
    "parse_report",
    "reset_config",
    "rule",
    "structured",
    "wrap",
]
