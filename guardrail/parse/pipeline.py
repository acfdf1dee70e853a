"""``parse`` and ``parse_report``: raw model text in, a validated value or a precise typed error out.

Two fast paths come before the stages; each validates text strictly with pydantic, unknown keys forbidden
for that check only (so a drifted field name can never be silently dropped there), and takes only what
the stages would decide the same way: text in which some object may give a key twice (pydantic would let
the last one win) goes to the stages (``dupes.may_repeat_key``). Whatever they do not accept goes through
the stages, which decide.

- Clean: text that starts like a JSON value, validated as it is (``parse`` and ``parse_report``).
- Wrapped (``parse`` only: a report of wrapped text lists the wrappers stripped, which needs the stages):
  the slice from the first ``{``/``[`` to the last matching closer, when nothing around it could be
  another candidate. When that slice is exactly valid, the stages would read it too, and nothing else
  that matters: no opener comes before it (it starts at the first) or after it (checked); no fence line
  can start inside valid JSON (a newline there is followed by a token, never by ``` or ~~~), so it lies
  within one segment; that segment is not one JSON string holding it (no ``"`` before it); other
  segments (only with fences) hold no opener, so at most a lone scalar, which cannot satisfy a contract
  whose root is an object (``Contract.container_root``), nor one whose root may be an array when the prose
  holds nothing that reads as a JSON scalar (the stages may read a lone string as a one-item list);
  and the fences are too few to reach ``max_candidates``. A stray ``}`` or ``]`` in the prose starts
  nothing. A member right after the
  value (``, "b": 2}``), or an element right after an array (``, "c"]``), means it closed early: the stages
  report that, so the fast path stands aside.
  So the stages would choose the same value, with no other valid, truncated or ambiguous candidate.

A JSON Schema contract has its own exact check in one call (``Contract.text_check``: jiter refusing a
repeated key, the schema validator, a screen for infinity that also bounds nesting); ``parse`` runs it first,
inline, before anything else (the target there is the validator alone fed by ``json.loads``).

Both are skipped when custom stages are given (the clean path still runs under ``ABSENT_AS_NULL_STAGES``: that
stage only drops a null the field does not admit, and such a null fails the exact validation anyway), when the
text may exceed ``max_bytes`` or nest deeper than ``max_depth`` (the bracket count bounds the depth, for contracts
that could nest that deep: ``Contract.max_nesting``; the stages measure both exactly), when the contract has
mappings keyed by floats, and, for contracts that hold floats but have no finite validator
(``Contract.finite_validator``, which refuses them itself), when the text may hold ``NaN``, ``Infinity`` or a
number beyond float range (pydantic would accept those as floats; the contract decides here).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, overload

from guardrail.contract import CONTRACTS_BY_TYPE as _COMPILED
from guardrail.contract import NOT_EXACT, VALIDATION_CONTEXT, Contract, compile_contract
from guardrail.contract import SCHEMAS_BY_IDENTITY as _SCHEMAS
from guardrail.errors import UsageError
from guardrail.parse.absent import ABSENT_AS_NULL_STAGES
from guardrail.parse.candidates import continued_at
from guardrail.parse.dupes import may_repeat_key
from guardrail.parse.lexicon import VALUE_START, may_hold_nonfinite
from guardrail.parse.report import ParseReport
from guardrail.parse.stages import DEFAULT_STAGES, run_stages
from guardrail.parse.state import Limits, ParseState, Stage

T = TypeVar("T")

_NO_ALIASES: Mapping[str, str] = {}
#: The fast path is only worth trying when the text starts like a JSON value; a failed pydantic
#: validation costs more than this check.
_LOOKS_LIKE_JSON = re.compile(r'[ \t\r\n]*[\[{"\-0-9tfnNI]').match
#: Anything in the prose around a fenced value that could be read as a JSON scalar of its own: another
#: fence segment may be exactly that scalar, and the stages may read it for a contract whose root may be a
#: list (a lone string as a one-item list), which makes the answer ambiguous. An object root cannot be.
_SCALAR_IN_PROSE = re.compile(r'["\d]|\b(?:true|false|null|True|False|None|NaN|Infinity)\b').search
DEFAULT_LIMITS = Limits()
#: The default limits' depth bound, and the longest text surely within their ``max_bytes`` (4 UTF-8 bytes a
#: character at most), for the JSON Schema clean path in ``parse``.
_DEPTH = DEFAULT_LIMITS.max_depth
_CHARS = DEFAULT_LIMITS.max_bytes // 4
#: Text this short cannot nest deeper than ``_DEPTH``: that takes ``_DEPTH + 1`` openers and as many closers.
_SHALLOW = 2 * _DEPTH + 1


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
        raise UsageError(f"text must be str, not {type(text).__name__}")
    contract = compile_contract(output_type)
    limits = limits or DEFAULT_LIMITS
    if (stages is None or stages is ABSENT_AS_NULL_STAGES) and _fast_ok(text, contract, limits) \
            and _starts_like_json(text):
        value = _exact(text, contract, limits)
        if value is not _MISS:
            return ParseReport(text=text, value=value, fast_path=True)
    return _run(text, contract, aliases, limits, stages)


def _run(text: str, contract: Contract[Any], aliases: Mapping[str, str] | None, limits: Limits,
         stages: Sequence[Stage] | None) -> ParseReport[Any]:
    state = ParseState(text, contract, aliases or _NO_ALIASES, limits)
    return run_stages(state, tuple(stages) if stages is not None else DEFAULT_STAGES).report


_MISS: Any = NOT_EXACT


def _starts_like_json(text: str) -> bool:
    """Whether the clean fast path is worth trying: a failed pydantic validation costs more than this."""
    first = text[:1]
    return first in VALUE_START or (first.isspace() and _LOOKS_LIKE_JSON(text) is not None)


def _exact(payload: str, contract: Contract[Any], limits: Limits) -> Any:
    """The value, if ``payload`` is exactly valid JSON for the contract with no unknown keys; else _MISS.

    The caller has checked ``max_bytes`` and ``float_keys`` (see :func:`_fast_ok`).
    """
    max_depth = limits.max_depth
    if contract.nesting_bound > max_depth and len(payload) > 2 * max_depth + 1 \
            and payload.count("{") + payload.count("[") > max_depth:
        return _MISS
    check = contract.text_check
    if check is not None:  # a JSON Schema contract: one call does it all
        return check(payload)
    if contract.screen_nonfinite and may_hold_nonfinite(payload):
        return _MISS
    try:
        value = contract.exact_validator.validate_json(payload, strict=True, extra="forbid",
                                                       context=VALIDATION_CONTEXT.get())
    except ValueError:  # ValidationError is a ValueError
        return _MISS
    return _MISS if not contract.exact_unique_keys and may_repeat_key(payload, value, contract.output_type) else value


def _fast_ok(text: str, contract: Contract[Any], limits: Limits) -> bool:
    """Whether a fast path may run at all: text surely within ``max_bytes`` (4 UTF-8 bytes a character at
    most), and no float-keyed mapping (pydantic reads a "nan" key as NaN; the stages check keys)."""
    return len(text) * 4 <= limits.max_bytes and not contract.float_keys


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
        raise UsageError(f"text must be str, not {type(text).__name__}")
    # The hot path of the library, written out in one function: on a small answer each extra Python call
    # costs a few percent. The clean fast path, then the wrapped one (see the module docstring).
    tried = False
    if output_type.__class__ is dict:  # a JSON Schema: unhashable, cached by identity (no TypeError raised)
        entry = _SCHEMAS.get(id(output_type))  # compile_contract's cache, read inline
        if entry is not None and entry[0] is output_type:
            contract = entry[1]
            # Its clean fast path first: one closure does the whole exact check (Contract.text_check); only
            # the default limits' size and depth bounds come before it (as in _fast_ok and _exact).
            check = contract.text_check
            if check is not None and limits is None and (
                    len(text) <= _SHALLOW or (len(text) <= _CHARS and (
                        contract.nesting_bound <= _DEPTH or text.count("{") + text.count("[") <= _DEPTH))):
                value = check(text)
                if value is not _MISS:
                    return value
                tried = True
        else:
            contract = compile_contract(output_type)
    else:
        try:
            contract = _COMPILED[output_type]  # compile_contract's cache, read inline
        except (KeyError, TypeError):
            contract = compile_contract(output_type)
    if limits is None:
        limits = DEFAULT_LIMITS
    if len(text) * 4 <= limits.max_bytes and not contract.float_keys:  # _fast_ok, inline
        clean = bool(text) and (text[0] in VALUE_START or (text[0].isspace() and _LOOKS_LIKE_JSON(text) is not None))
        if clean and not tried:
            value = _exact(text, contract, limits)
            if value is not _MISS:
                return value
        shapes = contract.root_shapes
        if shapes == "{":  # a model, say: the value must be an object, and no "[" may come before it
            opener = text.find("{")
            end = text.rfind("}") + 1
            other = "["
        elif shapes == "[":
            opener = text.find("[")
            end = text.rfind("]") + 1
            other = "{"
        else:
            opener = text.find("{")
            bracket = text.find("[", 0, opener) if opener >= 0 else text.find("[")
            if bracket >= 0:
                end = text.rfind("]") + 1
                opener = bracket
            else:
                end = text.rfind("}") + 1
            other = '"'
        if end > opener >= 0:
            prefix, suffix = text[:opener], text[end:]
            if '"' not in prefix and other not in prefix and "{" not in suffix and "[" not in suffix \
                    and (not suffix or continued_at(suffix, 0, text[opener] == "[") is None) \
                    and (not clean or prefix.strip() or suffix.strip()) and (  # else: the text just tried
                        # Fence lines can only be in the prose around the value; each needs three
                        # characters, so short prose holds fewer fenced blocks than the limit.
                        len(prefix) + len(suffix) <= 3 * limits.max_candidates
                        or prefix.count("```") + prefix.count("~~~") + suffix.count("```") + suffix.count("~~~")
                        <= limits.max_candidates
                    ) and (not ("```" in prefix or "~~~" in prefix or "```" in suffix or "~~~" in suffix)
                           or (contract.container_root
                               and (shapes == "{" or _SCALAR_IN_PROSE(prefix + suffix) is None))):
                # _exact, inline
                payload = text[opener:end]
                max_depth = limits.max_depth
                if not ((contract.nesting_bound > max_depth and len(payload) > 2 * max_depth + 1
                         and payload.count("{") + payload.count("[") > max_depth)
                        or (contract.screen_nonfinite and may_hold_nonfinite(payload))):
                    try:
                        value = contract.exact_validator.validate_json(payload, strict=True, extra="forbid",
                                                                       context=VALIDATION_CONTEXT.get())
                    except ValueError:  # ValidationError is a ValueError
                        pass
                    else:
                        if contract.exact_unique_keys or not may_repeat_key(payload, value, contract.output_type):
                            return value
    return _run(text, contract, aliases, limits, None).unwrap()
