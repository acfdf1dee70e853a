"""guardrail: turn "the model said something" into a valid, permitted, typed value - or a precise error.

The public API lives here; modules under ``guardrail.`` are implementation detail unless re-exported.
"""

from guardrail._engine import Settings
from guardrail.client import StructuredMethod, wrap
from guardrail.contract import Contract, compile_contract
from guardrail.errors import (
    AmbiguousError,
    BudgetExceeded,
    CallError,
    GaveUp,
    GuardrailError,
    InputLimitError,
    NoJSONError,
    OutputTruncated,
    ParseError,
    Refused,
    SchemaViolationError,
    TruncatedError,
    VendorError,
    VendorUnavailable,
)
from guardrail.modes import Capabilities, Mode, Plan
from guardrail.outcome import Attempt, Budget, Outcome, Price, Result, Usage
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

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_STAGES",
    "AmbiguousError",
    "Attempt",
    "Budget",
    "BudgetExceeded",
    "CallError",
    "Candidate",
    "Capabilities",
    "CompileEntry",
    "CompileReport",
    "Contract",
    "Fix",
    "GaveUp",
    "GuardrailError",
    "InputLimitError",
    "Limits",
    "Mode",
    "NoJSONError",
    "Outcome",
    "OutputTruncated",
    "ParseError",
    "ParseReport",
    "ParseState",
    "Plan",
    "Price",
    "Refused",
    "Result",
    "RetryPolicy",
    "SchemaViolationError",
    "Settings",
    "Stage",
    "StructuredMethod",
    "TruncatedError",
    "Usage",
    "VendorError",
    "VendorUnavailable",
    "Violation",
    "__version__",
    "compile_contract",
    "parse",
    "parse_report",
    "wrap",
]
