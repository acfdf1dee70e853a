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
    "Partial",
    "Plan",
    "Price",
    "Refused",
    "Result",
    "RetryPolicy",
    "SchemaViolationError",
    "Settings",
    "Stage",
    "StructuredFunction",
    "StructuredMethod",
    "StructuredStream",
    "TruncatedError",
    "Usage",
    "VendorError",
    "VendorUnavailable",
    "Violation",
    "Wrapped",
    "__version__",
    "compile_contract",
    "configure",
    "get_config",
    "parse",
    "parse_report",
    "reset_config",
    "structured",
    "wrap",
]
