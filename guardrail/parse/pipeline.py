"""``parse`` and ``parse_report``: raw model text in, a validated value or a precise typed error out.

Clean JSON takes a fast path: one strict pydantic validation of the text as-is, with unknown keys
forbidden for that check only, so a drifted field name can never be silently dropped there; anything the
fast path does not accept goes through the stages, which decide. ``parse`` (which builds no report) also
takes a wrapped fast path: one object or array in fences, tags or prose, validated the same way when
nothing around it could be another candidate. The fast paths are skipped when custom stages are given,
when the text may exceed ``max_bytes`` or hold more brackets than ``max_depth`` (for contracts that could
nest that deep; the stages measure both exactly), and, for contracts that hold floats but have no finite
validator (``Contract.finite_validator``), when it may hold ``NaN``, ``Infinity`` or a number beyond float
range (pydantic would accept those as floats; the contract decides here)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, overload

from guardrail.contract import Contract, compile_contract
from guardrail.parse.lexicon import VALUE_START, may_hold_nonfinite
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
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    contract = compile_contract(output_type)
    limits = limits or DEFAULT_LIMITS
    if stages is None:
        value = _fast(text, contract, limits, False)
        if value is not _MISS:
            return ParseReport(text=text, value=value, fast_path=True)
    return _run(text, contract, aliases, limits, stages)


def _run(text: str, contract: Contract[Any], aliases: Mapping[str, str] | None, limits: Limits,
         stages: Sequence[Stage] | None) -> ParseReport[Any]:
    state = ParseState(text, contract, aliases or _NO_ALIASES, limits)
    return run_stages(state, tuple(stages) if stages is not None else DEFAULT_STAGES).report


_MISS: Any = object()


def _fast(text: str, contract: Contract[Any], limits: Limits, wrapped: bool) -> Any:
    """The value, if a fast path can prove what the stages would decide; else ``_MISS``.

    The clean fast path validates text that starts like a JSON value as it is. With ``wrapped`` (for
    ``parse``, which builds no report: a report of wrapped text lists the wrappers stripped) the wrapped
    fast path follows: the one object or array inside fences, tags or prose, validated as it is when
    nothing around it could be a candidate (see :func:`_wrapped_slice`).
    """
    if len(text) * 4 > limits.max_bytes or contract.float_keys:
        return _MISS  # float-keyed mappings: pydantic reads a "nan" key as NaN; the stages check keys
    first = text[:1]
    if first in VALUE_START or (first.isspace() and _LOOKS_LIKE_JSON(text)):
        value = _exact(text, contract, limits)
        if value is not _MISS or not wrapped:
            return value
        payload = _wrapped_slice(text, contract, limits, True)
    elif wrapped:
        payload = _wrapped_slice(text, contract, limits, False)
    else:
        return _MISS  # a failed validation costs more than this check
    return _MISS if payload is None else _exact(payload, contract, limits)


def _exact(payload: str, contract: Contract[Any], limits: Limits) -> Any:
    """The value, if ``payload`` is exactly valid JSON for the contract with no unknown keys; else _MISS."""
    max_depth = limits.max_depth
    nesting = contract.max_nesting
    if (nesting is None or nesting > max_depth) and len(payload) > max_depth \
            and payload.count("{") + payload.count("[") > max_depth:
        return _MISS  # the bracket count bounds the depth; the stages measure it exactly
    if contract.screen_nonfinite and may_hold_nonfinite(payload):
        return _MISS  # the contract decides on NaN/infinity (a finite validator refuses them itself)
    try:
        return contract.exact_validator.validate_json(payload, strict=True, extra="forbid")
    except ValueError:  # ValidationError is a ValueError
        return _MISS


def _wrapped_slice(text: str, contract: Contract[Any], limits: Limits, tried_whole: bool) -> str | None:
    """The text from the first ``{``/``[`` to its last matching closer, if the stages would find it as the
    only candidate that can satisfy the contract; else ``None``.

    When that slice is exactly valid, the stages would read it too, and nothing else that matters: no
    opener comes before it (it starts at the first) or after it (checked); no fence line can start inside
    valid JSON (a newline there is followed by a token, never by ``` or ~~~), so it lies within one
    segment; that segment is not one JSON string holding it (no ``"`` before it); and other segments
    (only with fences) hold no opener, so at most a lone scalar, which cannot satisfy a contract whose
    root is an object or array. A stray ``}`` or ``]`` in the prose starts nothing. So the stages would
    choose the same value, with no other valid, truncated or ambiguous candidate.
    """
    opener = text.find("{")
    bracket = text.find("[", 0, opener) if opener >= 0 else text.find("[")
    if bracket >= 0:
        opener = bracket
    if opener < 0:
        return None
    end = text.rfind("}" if text[opener] == "{" else "]") + 1
    prefix, suffix = text[:opener], text[end:]
    if end <= opener or '"' in prefix or "{" in suffix or "[" in suffix:
        return None
    if tried_whole and not (prefix.strip() or suffix.strip()):
        return None  # the same text as the exact check that just failed
    # Fence lines can only be in the prose around the value, where they cut it into segments. Each needs
    # three characters, so short prose cannot hold more fenced blocks than the limit allows.
    if ("```" in prefix or "~~~" in prefix or "```" in suffix or "~~~" in suffix) and not (
            contract.container_root and (len(prefix) + len(suffix) <= 3 * limits.max_candidates
                                         or prefix.count("```") + prefix.count("~~~") + suffix.count("```")
                                         + suffix.count("~~~") <= limits.max_candidates)):
        return None  # a prose segment could be a lone valid scalar, or the fences could exceed the limit
    return text[opener:end]


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
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    contract = compile_contract(output_type)
    limits = limits or DEFAULT_LIMITS
    value = _fast(text, contract, limits, True)
    if value is _MISS:
        return _run(text, contract, aliases, limits, None).unwrap()
    return value
