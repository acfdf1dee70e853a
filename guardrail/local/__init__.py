"""Local constrained decoding: a transformers model whose logits are masked by a grammar compiled from the
contract, so an output that breaks the contract's JSON Schema cannot be sampled (see :mod:`.model`); or by a
regular expression or context-free grammar (:class:`Regex`, :class:`Grammar`, see :mod:`.constraints`)."""

from guardrail.errors import (
    BatchFailed,
    CalibrationError,
    DeadEnd,
    GrammarError,
    LogprobsUnavailable,
    NoOptionMatched,
    Uncertain,
)
from guardrail.local.calibration import Calibration
from guardrail.local.choose import Choice, achoose, choose
from guardrail.local.choose_api import LogprobBackend
from guardrail.local.constraints import Grammar, Regex
from guardrail.local.load import load_local_model
from guardrail.local.model import LocalModel, Trace

__all__ = [
    "BatchFailed",
    "Calibration",
    "CalibrationError",
    "Choice",
    "DeadEnd",
    "Grammar",
    "GrammarError",
    "LocalModel",
    "LogprobBackend",
    "LogprobsUnavailable",
    "NoOptionMatched",
    "Regex",
    "Trace",
    "Uncertain",
    "achoose",
    "choose",
    "load_local_model",
]
