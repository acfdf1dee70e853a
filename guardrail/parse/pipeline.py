"""``parse`` and ``parse_report``: raw model text in, a validated value or a precise typed error out.

Clean JSON takes a fast path: one strict pydantic validation of the text as-is, with unknown keys
forbidden for that check only, so a drifted field name can never be silently dropped there; anything the
fast path does not accept goes through the stages, which decide. The fast path is skipped when custom
stages are given, when the text may exceed ``max_bytes`` or hold more brackets than ``max_depth`` (the
stages measure both exactly), and, for contracts that hold floats, when it may hold ``NaN``, ``Infinity``
or a number beyond float range (pydantic would accept those as floats; the contract decides here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, overload

from pydantic import ValidationError

from guardrail.contract import Contract, compile_contract
from guardrail.parse.lexicon import VALUE_START, screen
from guardrail.parse.report import ParseReport
from guardrail.parse.stages import DEFAULT_STAGES, run_stages
from guardrail.parse.state import Limits, ParseState, Stage

T = TypeVar("T")

_NO_ALIASES: Mapping[str, str] = {}
#: The fast path is only worth trying when the text starts like a JSON value; a failed pydantic
#: validation costs more than this check.
_LOOKS_LIKE_JSON = re.compile(r'[ \t\r\n]*[\[{"\-0-9tfnNI]').match
DEFAULT_LIMITS = Limits()


@overload
def parse_report(text: str, output_type: type[T], *, aliases: Mapping[str, str] | None = None,
                 limits: Limits | None = None, stages: Sequence[Stage] | None = None) -> ParseReport[T]: ...
@overload
def parse_report(text: str, output_type: Any, *, aliases: Mapping[str, str] | None = None,
                 limits: Limits | None = None, stages: Sequence[Stage] | None = None) -> ParseReport[Any]: ...
def parse_report(text: str, output_type: Any, *, aliases: Mapping[str, str] | None = None,
                 limits: Limits | None = None, stages: Sequence[Stage] | None = None) -> ParseReport[Any]:
    """Parse model text into ``output_type`` and report everything that happened; never raises for bad text.

    Args:
        text: the model's raw output.
        output_type: a pydantic model class or any type ``pydantic.TypeAdapter`` accepts.
        aliases: drifted field name -> contract field name, applied at any depth.
        limits: size and depth caps (defaults: :class:`Limits`).
        stages: the stage list to run (default: ``DEFAULT_STAGES``).

    Returns:
        A :class:`ParseReport` holding the value or the :class:`ParseError`, the fixes and the candidates.
    """
    report: ParseReport[Any] = _report(text, output_type, aliases, limits, stages, unwrap=False)
    return report


def _report(text: str, output_type: Any, aliases: Mapping[str, str] | None, limits: Limits | None,
            stages: Sequence[Stage] | None, *, unwrap: bool) -> Any:
    """The one implementation behind both entry points: fast path, else the stages.

    With ``unwrap`` it returns the value (or raises) and builds no report for a fast-path success.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    contract = compile_contract(output_type)
    limits = limits or DEFAULT_LIMITS
    if stages is None:
        value = _fast_path(text, contract, limits)
        if value is not _MISS:
            return value if unwrap else ParseReport(text=text, value=value, fast_path=True)
    state = ParseState(text, contract, aliases or _NO_ALIASES, limits)
    report = run_stages(state, tuple(stages) if stages is not None else DEFAULT_STAGES).report
    return report.unwrap() if unwrap else report


_MISS: Any = object()


def _fast_path(text: str, contract: Contract[Any], limits: Limits) -> Any:
    """The value, if ``text`` is already exactly valid JSON for the contract with no unknown keys; else _MISS."""
    first = text[:1]
    if first not in VALUE_START and not (first.isspace() and _LOOKS_LIKE_JSON(text)):
        return _MISS  # a failed validation costs more than this check
    if len(text) * 4 > limits.max_bytes or contract.float_keys:
        return _MISS  # float-keyed mappings: pydantic reads a "nan" key as NaN; the stages check keys
    if contract.holds_floats or len(text) > 2 * limits.max_depth:
        nonfinite, brackets = screen(text, floats=contract.holds_floats)
        if nonfinite or brackets > limits.max_depth:
            return _MISS  # the contract decides on NaN/infinity, and the stages measure depth exactly
    try:
        return contract.validate_json(text, forbid_extra=True)
    except (ValidationError, ValueError):
        return _MISS


@overload
def parse(text: str, output_type: type[T], *, aliases: Mapping[str, str] | None = None,
          limits: Limits | None = None) -> T: ...
@overload
def parse(text: str, output_type: Any, *, aliases: Mapping[str, str] | None = None,
          limits: Limits | None = None) -> Any: ...
def parse(text: str, output_type: Any, *, aliases: Mapping[str, str] | None = None,
          limits: Limits | None = None) -> Any:
    """Parse model text into a validated ``output_type`` value, or raise a :class:`ParseError`.

    The error's ``.kind`` is ``"no_json"``, ``"truncated"``, ``"ambiguous"`` or ``"schema_violation"``; its
    ``.feedback`` is ready to send back to the model; its ``.report`` holds the candidates and fixes.
    """
    return _report(text, output_type, aliases, limits, None, unwrap=True)
