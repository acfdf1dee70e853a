"""guardrail: turn "the model said something" into a valid, permitted, typed value - or a precise error.

The public API lives here; modules under ``guardrail.`` are implementation detail unless re-exported.
"""

from guardrail.contract import Contract, compile_contract
from guardrail.errors import (
    AmbiguousError,
    GuardrailError,
    InputLimitError,
    NoJSONError,
    ParseError,
    SchemaViolationError,
    TruncatedError,
)
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

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_STAGES",
    "AmbiguousError",
    "Candidate",
    "Contract",
    "Fix",
    "GuardrailError",
    "InputLimitError",
    "Limits",
    "NoJSONError",
    "ParseError",
    "ParseReport",
    "ParseState",
    "SchemaViolationError",
    "Stage",
    "TruncatedError",
    "Violation",
    "__version__",
    "compile_contract",
    "parse",
    "parse_report",
]
