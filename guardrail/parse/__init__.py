"""The parse layer: pure, linear-time stages from raw model text to a validated value or a typed error."""

from guardrail.parse.pipeline import parse, parse_report
from guardrail.parse.report import Candidate, Fix, ParseReport, Violation
from guardrail.parse.stages import DEFAULT_STAGES
from guardrail.parse.state import Limits, ParseState, Stage

__all__ = [
    "DEFAULT_STAGES",
    "Candidate",
    "Fix",
    "Limits",
    "ParseReport",
    "ParseState",
    "Stage",
    "Violation",
    "parse",
    "parse_report",
]
