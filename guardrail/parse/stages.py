"""The parse stages and the default list that runs them, in order.

Each stage is a plain callable ``(ParseState) -> ParseState``. ``DEFAULT_STAGES`` is an ordinary tuple:
copy it, drop or add a stage, and pass the result as ``stages=`` to :func:`guardrail.parse_report`.

==================== ====================================================================================
check_limits         refuse text over ``Limits.max_bytes`` before any other work
strip_wrappers       cut the text into fenced-block bodies and the prose around them
find_candidates      read every JSON value in each segment, repairing syntax slips, spotting truncation
accept_exact         accept candidates that already satisfy the contract exactly (no unknown keys)
normalize_fields     rename drifted keys (alias table, case drift) to the contract's names
coerce_values        lossless type coercion toward the contract; NaN/Infinity only to an allowed null
validate_candidates  strict pydantic validation of every candidate
choose_candidate     pick the candidate that fits; decide the value or the one typed error
==================== ====================================================================================
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any, Final

from pydantic import ValidationError

from guardrail.contract import VALIDATION_CONTEXT
from guardrail.errors import (
    AmbiguousError,
    InputLimitError,
    JSONSyntaxError,
    NoJSONError,
    ParseError,
    SchemaViolationError,
    TruncatedJSONError,
)
from guardrail.parse import feedback
from guardrail.parse.aliases import FieldConflict, normalize
from guardrail.parse.candidates import canonical, find_in_segment, read_across
from guardrail.parse.coerce import CoerceContext, coerce
from guardrail.parse.fences import Segment, iter_segments, opens_with_tag_block, split_segments, unwrap_scalar
from guardrail.parse.lexicon import VALUE_START, may_hold_nonfinite, may_hold_surrogate, may_overflow
from guardrail.parse.report import Candidate, Fix, Violation
from guardrail.parse.scalars import read_bare
from guardrail.parse.scanner import ScanBudget, scan
from guardrail.parse.state import ParseState, Stage
from guardrail.parse.tokens import PLAIN_DECODER, STRICT_DECODER, BareWord, NonFinite, same_json

_READ: Final = ("invalid",)


def check_limits(state: ParseState) -> ParseState:
    """Refuse oversized text up front (UTF-8 bytes; counted only when the length could exceed it)."""
    limit = state.limits.max_bytes
    text = state.text
    if len(text) > limit or (len(text) * 4 > limit and len(text.encode("utf-8", "surrogatepass")) > limit):
        raise InputLimitError(
            f"The reply is larger than the {limit}-byte limit; reply with a shorter JSON value.",
            limit="max_bytes", value=limit, text=text)
    return state


def strip_wrappers(state: ParseState) -> ParseState:
    """Split the text into fenced-block bodies and prose segments."""
    state.segments = split_segments(state.text, state.limits.max_candidates)
    return state


def find_candidates(state: ParseState) -> ParseState:
    """Read every JSON value in every segment (syntax repair and truncation detection happen here).

    A value cut off where its segment ends, before the end of the text, may have been cut by a fence line
    inside one of its strings (raw newlines): it is read across the cut (``candidates.read_across``) and the
    text after it is cut into segments again, so nothing inside its strings is read as a value of its own.
    """
    limit = state.limits.max_candidates
    decoder = STRICT_DECODER if may_overflow(state.text) else PLAIN_DECODER
    escaped = escaped_reply(state, state.limits.max_depth)
    if escaped is not None:  # JSON with every quote escaped: no other reading of it is a value
        state.candidates.append(escaped)
        return state
    budget = ScanBudget(attempts=limit, patch_chars=8 * len(state.text) + 65536, decoder=decoder,
                    balance_chars=8 * len(state.text) + 65536, quote_chars=8 * len(state.text) + 65536)
    text, max_depth = state.text, state.limits.max_depth
    pending: Iterator[Segment] = iter(state.segments)
    segments: list[Segment] = []
    while (segment := next(pending, None)) is not None:
        found = find_in_segment(text, segment, max_depth, budget, limit)
        if found and found[-1].status == "truncated" and segment.end < len(text):
            # Cut off where the segment ends, before the end of the text: perhaps at a fence line inside
            # one of its strings (raw newlines), which is content. Then the text after it is cut again.
            whole = read_across(text, found[-1], max_depth, budget)
            if whole is not None:
                found[-1] = whole
                segment = segment._replace(end=whole.end)
                pending = iter(()) if whole.status == "truncated" else \
                    iter_segments(text, whole.end, segment if segment.source == "fence" else None)
        segments.append(segment)
        state.candidates.extend(found)
    state.segments = segments
    if not state.candidates:
        bare = bare_reply(state) or leading_scalar(state, decoder) or plain_text(state)
        if bare is not None:
            state.candidates.append(bare)
    return state


#: Text that opens like escaped JSON: openers, then ``\"`` (``{\"key\": 1}``, ``[\"a\"]``, ``\"text\"``).
_ESCAPED_START: Final = re.compile(r'[ \t\r\n]*+(?:[\[{](?:[ \t\r\n]|\\[nrt])*+)*+\\"').match
#: A quote no backslash escapes (preceded by an even run of backslashes, none included).
_BARE_QUOTE: Final = re.compile(r'(?<!\\)(?:\\\\)*"').search
_STRING_BODY: Final = json.JSONDecoder(strict=False)


def escaped_reply(state: ParseState, max_depth: int) -> Candidate | None:
    """A whole reply that is JSON with every quote escaped (``{\"key\": \"value\"}``): the body of a JSON
    string, copied without its outer quotes. One reading: decoded once, it is the value (fix ``escaped_json``).
    Only when no quote in it is unescaped and the decoded text is one whole value."""
    text = state.text
    if '\\"' not in text or _ESCAPED_START(text) is None:
        return None
    inner = text.strip()
    if _BARE_QUOTE(inner) is not None:
        return None
    try:
        decoded = _STRING_BODY.decode('"' + inner + '"')
    except ValueError:
        return None
    first = len(decoded) - len(decoded.lstrip())
    result = scan(decoded, first, max_depth=max_depth)
    if result.status != "complete" or decoded[result.end :].strip() or result.bare_words:
        return None
    if "\\\\" in inner and _quotes_only_reading(inner, result.value, max_depth):
        return None  # an escaped backslash: escaped once (``\\t`` a tab) or only the quotes escaped (``\`` and ``t``)
    start = text.find(inner)
    fixes = [Fix("escaped_json", "$", inner[:80], decoded[first:][:80]), *result.fixes]
    return Candidate(start, start + len(inner), "text", "invalid", data=result.value, fixes=fixes,
                     tokens=max(result.tokens, 1))


def _quotes_only_reading(inner: str, value: Any, max_depth: int) -> bool:
    """Whether ``inner`` also reads as JSON whose quotes alone were escaped (its backslashes kept as JSON escapes),
    and that reading is another value: then the reply has two readings."""
    quotes_only = inner.replace('\\"', '"')
    result = scan(quotes_only, 0, max_depth=max_depth)
    return result.status == "complete" and not result.bare_words and not quotes_only[result.end :].strip() \
        and not same_json(result.value, value)


def plain_text(state: ParseState) -> Candidate | None:
    """A whole reply of plain text under a contract that is a plain string (``str``): the text is the value
    (fix ``plain_text``), stripped of surrounding space and of one fence or tag around all of it. Only when the
    reply holds no JSON value and no attempt at one, and does not open with a quote, a bracket or a backslash
    (a quoted, JSON or escaped reading)."""
    contract = state.contract
    view = contract.view
    branches = view.branches(contract.schema)
    if not branches or any(view.types(node) != _STRING or "enum" in node or "const" in node for node in branches):
        return None
    text = state.text
    filled = [seg for seg in state.segments if text[seg.start : seg.end].strip()]
    if len(filled) != 1:
        return None
    body = text[filled[0].start : filled[0].end]
    inner, tag = unwrap_scalar(body)
    if not inner or inner[0] in _QUOTED_START or opens_with_tag_block(inner):
        return None
    if '"' in inner and any(_is_json_string(line.strip()) for line in inner.splitlines()):
        return None  # a JSON string on a line of its own (``Sure!\n\n"hello"``): the answer, or part of the text?
    start = filled[0].start + max(body.find(inner), 0)
    return Candidate(start, start + len(inner), filled[0].source, "invalid", data=inner, tokens=1, tag=tag or "",
                     fixes=[Fix("plain_text", "$", inner[:80], inner[:80])])


def _is_json_string(line: str) -> bool:
    """Whether ``line`` is one whole JSON string."""
    if line[:1] != '"' or line[-1:] != '"':
        return False
    try:
        return STRICT_DECODER.decode(line).__class__ is str
    except (ValueError, RecursionError):
        return False


_STRING: Final = frozenset({"string"})
_QUOTED_START: Final = frozenset("\"'`\u201c\u2018\\{[(")


def leading_scalar(state: ParseState, decoder: json.JSONDecoder) -> Candidate | None:
    """A reply that opens with one complete JSON scalar alone on its line, then prose (``"x"\n\nHope this
    helps``, ``42\n\nLet me know``): that scalar, when the contract's root may be a scalar, the reply has no
    fence, what follows is prose (a letter, no bracket or brace) and no line of it is itself a JSON value
    (which would make two readings). Only reached when the reply holds no other JSON value; the dropped
    prose is recorded (``strip_prose``) when chosen.
    """
    if state.contract.container_root:
        return None
    text = state.text
    filled = [seg for seg in state.segments if text[seg.start : seg.end].strip()]
    if len(filled) != 1 or filled[0].source != "text":
        return None
    segment = filled[0]
    body = text[segment.start : segment.end]
    start = len(body) - len(body.lstrip())
    if body[start] not in VALUE_START or body[start] in "{[":
        return None
    try:
        value, end = decoder.raw_decode(body, start)
    except (ValueError, RecursionError):
        return None
    line_end = body.find("\n", end)
    if line_end < 0 or body[end:line_end].strip() or isinstance(value, NonFinite):
        return None  # more on the scalar's own line (``42 apples``): not a value alone
    if value.__class__ is not str and any("string" in state.contract.view.types(node)
                                          for node in state.contract.view.branches(state.contract.schema)):
        return None  # under a string contract the whole text is a second reading (``42`` + prose)
    rest = body[line_end:]
    if not any(c.isalpha() for c in rest) or any(c in rest for c in "{}[]"):
        return None  # not prose (a stray ``}``: broken JSON, not a remark)
    for line in rest.splitlines():
        word = line.strip()
        if word and word[0] in VALUE_START and _is_json(word, decoder):
            return None  # another whole value: two readings
    return Candidate(segment.start + start, segment.start + end, "text", "invalid", data=value, tokens=1,
                     json_text=body[start:end])


def _is_json(line: str, decoder: json.JSONDecoder) -> bool:
    try:
        decoder.decode(line)
    except (ValueError, RecursionError):
        return False
    return True


def bare_reply(state: ParseState) -> Candidate | None:
    """The whole reply as one bare scalar (``Billing``, ``TRUE``, `` `x` ``), read by the contract
    (``scalars.py``); only when the reply holds one non-blank segment and no JSON value at all."""
    text = state.text
    filled = [seg for seg in state.segments if text[seg.start : seg.end].strip()]
    if len(filled) != 1:
        return None
    body = text[filled[0].start : filled[0].end]
    inner, _tag = unwrap_scalar(body)
    if opens_with_tag_block(inner):
        return None  # ``<think>...</think>hello``: the block and the answer, or one token?
    start = filled[0].start + max(body.find(inner), 0)
    contract = state.contract
    bare = read_bare(inner, start, contract.schema, contract.view, state.aliases)
    if bare is not None:
        bare.source = filled[0].source
    return bare


def accept_exact(state: ParseState) -> ParseState:
    """Accept candidates that already satisfy the contract exactly, with no unknown key anywhere.

    Such a candidate needs no renaming and no coercion, so the next two stages skip it; this is what
    keeps dirty-but-correct answers (fences, prose, syntax slips only) cheap. The check validates the
    text itself when it is strict JSON, else the decoded value directly when the contract allows
    (JSON-native types only), else the value encoded back to JSON.
    """
    contract = state.contract
    exact = contract.exact_validator
    screen = contract.screen_nonfinite
    context = VALIDATION_CONTEXT.get()  # the call's context= for pydantic validators (ValidationInfo.context)
    for cand in state.candidates:
        if cand.status != "invalid" or cand.bare_words:  # unquoted words: the contract reads them, later
            continue
        source = cand.json_text or state.text[cand.start : cand.end]
        # NaN/Infinity markers must meet the JSON encoder (which refuses them), never pydantic directly;
        # so must lone surrogates, which a Python string holds but JSON text validation refuses. A contract
        # with a finite validator refuses NaN, infinity and numbers beyond float range itself; others
        # screen the text for them first.
        if contract.float_keys or (screen and may_hold_nonfinite(source)):
            continue  # NaN, Infinity or a number beyond float range: the contract decides, in the stages
        try:
            if cand.json_text:
                cand.value = exact.validate_json(source, strict=True, extra="forbid", context=context)
            elif contract.python_equivalent and not may_hold_surrogate(source):
                cand.value = exact.validate_python(cand.data, strict=True, extra="forbid", context=context)
            else:
                payload = json.dumps(cand.data, ensure_ascii=True, allow_nan=False, default=_not_json)
                cand.value = exact.validate_json(payload, strict=True, extra="forbid", context=context)
        except (ValueError, TypeError):  # ValidationError is a ValueError; NaN markers are TypeErrors
            continue
        cand.status = "valid"
    return state


def _not_json(value: object) -> object:
    raise TypeError(f"not JSON: {value!r}")


def normalize_fields(state: ParseState) -> ParseState:
    """Map drifted field names onto the contract's; a conflicting duplicate makes the candidate ambiguous."""
    contract = state.contract
    return _each_read(state, lambda cand: normalize(cand.data, contract.schema, contract.view, state.aliases,
                                                    cand.fixes, []))


def coerce_values(state: ParseState) -> ParseState:
    """Coerce values toward the contract where it is lossless; record what could not be."""
    contract = state.contract

    def one(cand: Candidate) -> Any:
        source = cand.json_text or state.text[cand.start : cand.end]
        big = contract.holds_floats and may_hold_nonfinite(source)
        ctx = CoerceContext(contract.view, state.limits.max_depth, state.aliases, cand.fixes, cand.violations,
                            big_numbers=big, float_keys=contract.float_keys, source=source)
        data = coerce(cand.data, contract.schema, ctx, [])
        if ctx.unresolved or (cand.bare_words and _holds_bare_word(data)):
            _broken_at_word(cand, min(ctx.unresolved or cand.bare_words, key=lambda bare: bare.pos))
        return data

    return _each_read(state, one)


def _holds_bare_word(value: Any) -> bool:
    """Whether an unquoted word is still in ``value`` (one coercion did not reach, under a replaced parent)."""
    pending = [value]
    while pending:
        node = pending.pop()
        if node.__class__ is BareWord:
            return True
        if isinstance(node, dict):
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return False


def _broken_at_word(cand: Candidate, bare: BareWord) -> None:
    """The candidate is the syntax error it was before the word was weighed (no second reading is safe)."""
    cand.status = "syntax_error"
    cand.position = bare.pos
    cand.message = f"{bare.message} at character {bare.pos}"


def _each_read(state: ParseState, step: Callable[[Candidate], Any]) -> ParseState:
    """Apply ``step`` to the data of every candidate still to be judged; a field conflict makes it ambiguous."""
    for cand in state.candidates:
        if cand.status not in _READ:
            continue
        try:
            cand.data = step(cand)
        except FieldConflict as conflict:
            cand.status = "ambiguous"
            cand.path = conflict.path
            cand.message = conflict.message
    return state


def validate_candidates(state: ParseState) -> ParseState:
    """Validate each read candidate strictly with pydantic (JSON types only; lax conversions were ours)."""
    for cand in state.candidates:
        if cand.status not in _READ:
            continue
        payload = json.dumps(cand.data, ensure_ascii=True, allow_nan=True)
        try:
            cand.value = state.contract.validate_json(payload)
        except ValidationError as error:
            cand.violations[:] = _merge(cand.violations, feedback.violations_from(error))
            cand.status = "invalid"
            continue
        if cand.violations:  # NaN replaced by null where null is valid only by accident of the contract
            cand.status = "invalid"
            continue
        cand.status = "valid"
    return state


def _merge(own: list[Violation], from_pydantic: list[Violation]) -> list[Violation]:
    """Our violations (more precise, e.g. about NaN) replace pydantic's at the same path."""
    seen = {v.path for v in own}
    return own + [v for v in from_pydantic if v.path not in seen]


def choose_candidate(state: ParseState) -> ParseState:
    """Pick by fit, not by position, and settle the report's value or error.

    A candidate that validates beats one that does not, whatever its position. Two *different* valid
    candidates are ambiguous; an exact repeat is not. A candidate cut off at the very end of the text means
    the answer itself was cut off, so it wins over an earlier complete value (a format example, say) if it
    read at least one key or value. Without a valid candidate the error comes from the best one: a field
    conflict (a key given twice with different values), else a value that broke (``syntax_error``, when it
    comes after every invalid candidate and truncation), else the fewest violations (the later on a tie),
    else a truncation, else ``no_json``. Nothing inside a broken value was ever a candidate.
    """
    report = state.report
    text = state.text
    cands = state.candidates
    cut_off = [c for c in cands if c.status == "truncated" and c.end >= len(text.rstrip())]
    valid = [c for c in cands if c.status == "valid"]
    if cut_off and (cut_off[-1].tokens > 0 or not valid):
        cand = cut_off[-1]
        report.fixes = list(cand.fixes)
        report.error = TruncatedJSONError(feedback.truncated_feedback(cand.path, cand.end - cand.start),
                                      text=text, report=report)
        return state
    if valid:
        distinct = {canonical(c.data): c for c in valid} if len(valid) > 1 else {}
        if len(distinct) > 1:
            report.error = AmbiguousError(feedback.ambiguous_feedback(len(distinct)), text=text, report=report)
            return state
        cand = valid[0]
        report.value = cand.value
        report.fixes = _wrapper_fixes(text, cand) + cand.fixes
        return state
    report.error = _failure(state, cands)
    return state


def _failure(state: ParseState, cands: list[Candidate]) -> ParseError:
    text, report = state.text, state.report
    truncated = [c for c in cands if c.status == "truncated"]
    ambiguous = [c for c in cands if c.status == "ambiguous"]
    invalid = [c for c in cands if c.status == "invalid"]
    if ambiguous:
        cand = ambiguous[-1]
        report.fixes = list(cand.fixes)
        return AmbiguousError(feedback.field_conflict_feedback(cand.path, cand.message), text=text, report=report)
    broken = [c for c in cands if c.status == "syntax_error" and c.position >= 0]
    if broken and (not invalid or broken[-1].start > invalid[-1].start) and not (
            truncated and truncated[-1].start > broken[-1].start):
        # The last attempt at an answer broke where no repair is safe: say where, use nothing from it.
        cand = broken[-1]
        return JSONSyntaxError(feedback.syntax_feedback(cand.message), text=text, report=report,
                               position=cand.position)
    if invalid:
        # The best fit has the fewest violations; on a tie the later one (answers follow examples).
        cand = min(reversed(invalid), key=lambda c: len(c.violations))
        report.fixes = _wrapper_fixes(text, cand) + cand.fixes
        return SchemaViolationError(feedback.schema_feedback(cand.violations), text=text, report=report)
    if truncated:
        cand = truncated[-1]
        return TruncatedJSONError(feedback.truncated_feedback(cand.path, cand.end - cand.start),
                              text=text, report=report)
    stray = [c for c in cands if c.status == "syntax_error"]
    detail = stray[-1].message if stray else ""
    return NoJSONError(feedback.no_json_feedback(detail), text=text, report=report)


def _wrapper_fixes(text: str, cand: Candidate) -> list[Fix]:
    """Fixes for what surrounded the chosen value: fence, tag, stray closer, prose."""
    fixes: list[Fix] = []
    before, after = text[: cand.start].rstrip(), text[cand.end :].lstrip()
    if cand.source == "fence":
        fixes.append(Fix("strip_fence", "$", "```", ""))
        before, after = _drop_fence_line(before, last=True), _drop_fence_line(after, last=False)
    tag = cand.tag or _enclosing_tag(before, after)
    if tag:
        fixes.append(Fix("strip_tag", "$", f"<{tag}>", ""))
        before, after = before[: -len(tag) - 2].rstrip(), after[len(tag) + 3 :].lstrip()
    if after[:1] in ("}", "]"):
        fixes.append(Fix("stray_closer", "$", after[0], ""))
        after = after[1:].lstrip()
    outside = " … ".join(part for part in (before.strip(), after.strip()) if part)
    if outside:
        fixes.append(Fix("strip_prose", "$", _clip(outside), ""))
    return fixes


def _drop_fence_line(text: str, *, last: bool) -> str:
    if last:
        cut = text.rfind("\n")
        line = text[cut + 1 :]
        return text[: max(cut, 0)] if line.lstrip().startswith(("```", "~~~")) else text
    cut = text.find("\n")
    line = text if cut < 0 else text[:cut]
    return ("" if cut < 0 else text[cut + 1 :]) if line.lstrip().startswith(("```", "~~~")) else text


def _enclosing_tag(before: str, after: str) -> str:
    if before.endswith(">") and after.startswith("</"):
        close = after.find(">")
        name = after[2:close] if close > 2 else ""
        if name and before.endswith(f"<{name}>"):
            return name
    return ""


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


DEFAULT_STAGES: Final[tuple[Stage, ...]] = (
    check_limits,
    strip_wrappers,
    find_candidates,
    accept_exact,
    normalize_fields,
    coerce_values,
    validate_candidates,
    choose_candidate,
)


def run_stages(state: ParseState, stages: tuple[Stage, ...] | list[Stage]) -> ParseState:
    """Run ``stages`` in order. A limit error stops the run and becomes the report's error."""
    try:
        for stage in stages:
            state = stage(state)
    except InputLimitError as error:
        error.text = state.text  # the whole raw text, not the segment the limit was met in
        error.report = state.report
        state.report.error = error
    return state


__all__ = [
    "DEFAULT_STAGES",
    "accept_exact",
    "check_limits",
    "choose_candidate",
    "coerce_values",
    "find_candidates",
    "normalize_fields",
    "run_stages",
    "strip_wrappers",
    "validate_candidates",
]
