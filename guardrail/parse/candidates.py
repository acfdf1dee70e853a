"""Finding every JSON value in a segment of the text.

A whole segment that is one strict JSON scalar is one candidate (the only way a scalar root is found).
Otherwise each ``{`` or ``[`` that could start a value (the regex engine passes over the others) starts an
attempt: the C ``json`` decoder first (the common case, clean JSON inside prose), with a few slips patched
at its error positions (``patch.py``), then the lenient scanner. A failed attempt resumes the search
*after the point where it failed*, and a successful one after its value, so every character is read a
bounded number of times; the C decoder's failures, whose cost depends on the position, are counted for
the whole search, and so are attempts (``Limits.max_candidates``): the search is linear in the text.

Only whole values are candidates. When an attempt breaks (a syntax error the scanner cannot repair), the
broken value spans from its opener to where its brackets balance again (strings skipped), or to the end
of the segment when they never do; the search resumes after that span, so nothing inside a broken value
(an inner array, an object written inside one of its strings) can become a candidate. The same holds when
a value closes early and members follow it (``{"a": 1}, "b": 2}``, ``{"a": 1}}, "b": 2}``, ``["a"], "b"]``):
never shortened, the members are merged when that is the one reading (:func:`merge_early_close`), else the
value is broken.

A value the fence split cut inside one of its strings (code with raw newlines holding a fence line) is read
across the cut by :func:`read_across`; what lies inside a string is content, never a candidate.

Choosing among the candidates is the ``choose_candidate`` stage's job (``stages.py``).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from json import JSONDecoder
from typing import Any, Final

from guardrail.errors import InputLimitError
from guardrail.parse.fences import Segment, unwrap_scalar
from guardrail.parse.lexer import STRING_CUT
from guardrail.parse.lexicon import INVISIBLE, VALUE_START
from guardrail.parse.patch import Patched, decode_with_patches
from guardrail.parse.report import Candidate, Fix
from guardrail.parse.scanner import ScanBudget, ScanResult, scan
from guardrail.parse.tokens import STRICT_DECODER

# What may follow an opener for the scanner to have a chance, checked inside the regex engine before any
# scan: prose like "see {note here}", "{{", "[Note]" or code "{ x = 1; }" is passed over at C speed. The
# check only rules out starts the scanner rejects before reading anything that could hold an opener: a
# bare word or number key not followed by ':' (a comment, or the end), a bare word in an array that is not
# a literal, or a character no value, key, comment or end marker starts with. A quoted key is always
# scanned: the scanner must decide where its string ends, since that is where the search resumes.
_WS_ = r"[ \t\r\n]*+"
_KEY_END = rf"{_WS_}(?:[:{INVISIBLE}]|//|/\*|$)"
_WORD = r"(?:[^\W\d]|\$)[\w$\-]*+"
_END_MARK = r"</|```|~~~"
#: An escaped quote, perhaps after escaped line breaks (``{\"key\": 1}`` in prose): a value with its quotes
#: escaped, broken where it starts; what lies inside it is never a candidate of its own.
_ESCAPED_QUOTE = r"(?:\\[nrt][ \t\r\n]*+)*+\\\""
_OBJECT_START = (
    rf"\{{{_WS_}(?:[}}\"'\u201c\u2018/\-,{INVISIBLE}]|{_END_MARK}|{_ESCAPED_QUOTE}|$"
    rf"|{_WORD}{_KEY_END}|[0-9.][0-9.eE+\-]*+{_KEY_END})"
)
_ARRAY_START = (
    rf"\[{_WS_}(?:[\]\[{{\"'\u201c\u2018/\-.0-9{INVISIBLE}]|{_END_MARK}|{_ESCAPED_QUOTE}|$"
    rf"|(?:true|false|null|True|False|None|NaN|Infinity)(?![\w$\-])|{_WORD}$)"
)


_ESCAPED_AT: Final = re.compile(_ESCAPED_QUOTE).match
#: The next opener that may start a JSON value, found by the regex engine: implausible openers are
#: passed over in C, never one Python step each.
NEXT_START: Final = re.compile(f"{_OBJECT_START}|{_ARRAY_START}", re.S)


def find_in_segment(text: str, segment: Segment, max_depth: int, budget: ScanBudget, limit: int) -> list[Candidate]:
    """All candidates in ``text[segment.start:segment.end]``, with offsets into ``text``.

    Every attempt spends one of ``budget.attempts`` (``Limits.max_candidates`` for the whole text, given
    as ``limit`` for the error); one more raises :class:`InputLimitError`, so a text of a million tiny
    values, or of a million openers that fail, costs milliseconds.
    """
    body = text[segment.start : segment.end]
    base = segment.start
    whole = whole_candidate(body, segment, max_depth, budget.decoder)
    if whole is not None:
        return [whole]
    found: list[Candidate] = []
    pos = 0
    while True:
        m = NEXT_START.search(body, pos)
        if m is None:
            return found
        budget.attempts -= 1
        if budget.attempts < 0:
            raise InputLimitError.too_many_candidates(limit, text)
        cand, pos = read_value(body, m.start(), base, segment.source, max_depth, budget)
        if cand is not None:
            found.append(cand)
        if pos < 0:
            return found  # cut off, or never closes: everything after it is inside it


def read_value(body: str, start: int, base: int, source: str, max_depth: int,
               budget: ScanBudget) -> tuple[Candidate | None, int]:
    """The attempt at a value at ``body[start]`` (offsets in the candidate are ``base`` + offsets in ``body``),
    and where the search resumes in ``body``: -1 when nothing after it can be read (the value is cut off, or
    broken and never closes). ``None`` for an opener in prose that read nothing."""
    strict = _strict_at(body, start, max_depth, budget)
    if strict is not None:
        cand = Candidate(base + start, base + strict.end, source, "invalid", data=strict.value,
                         fixes=strict.fixes, tokens=1, json_text=strict.json_text)
        end = strict.end
    else:
        result = scan(body, start, max_depth=max_depth, budget=budget)
        if result.status == "truncated":
            return Candidate(base + start, base + len(body), source, "truncated", fixes=result.fixes,
                             message=result.message, path=result.path, tokens=result.tokens), -1
        if result.status == "syntax_error":
            if not read_a_value(body, start, result.end, result.tokens):
                # Broke before reading anything of a value: an opener in prose. Look on after it.
                stray = broken_candidate(base, start, result.end, source, result.message, base + result.end,
                                         result.tokens, position=-1) if result.tokens else None
                return stray, max(result.end, start + 1)
            span_end = broken_span_end(body, start, balanced_end(body, start, budget), budget)
            return broken_candidate(base, start, span_end if span_end >= 0 else len(body), source,
                                    result.message, base + result.end, result.tokens), span_end
        cand = _complete(result, base, start, source)
        end = result.end
    more = continued_at(body, end, cand.data.__class__ is list) if isinstance(cand.data, (dict, list)) else None
    work, strays = body, 0
    while more is not None:
        # Members (or elements) follow the closed value: it closed early. Merged when that is the one
        # reading (``merge_early_close``), else broken; never shortened.
        merged = merge_early_close(work, start, cand.data, end, more, max_depth, budget)
        if merged is None:
            at, what, reopened = more
            span_end = broken_span_end(body, start, balanced_end(body, reopened, budget, opened=body[start]),
                                       budget)
            return broken_candidate(base, start, span_end if span_end >= 0 else len(body), source,
                                    f"expected the end of the reply, found {what} {body[at:][:12]!r} "
                                    "after the value closed", base + at, cand.tokens or 1), span_end
        work, result, closers = merged
        strays += closers
        result.fixes.extend(Fix("stray_closer", (), "}", "") for _ in range(strays))
        cand, end = _complete(result, base, start, source), result.end
        more = continued_at(body, end, False)
    return cand, end


def _complete(result: ScanResult, base: int, start: int, source: str) -> Candidate:
    """The candidate for a scan that read a complete value (offsets made absolute with ``base``)."""
    cand = Candidate(base + start, base + result.end, source, "invalid", data=result.value,
                     fixes=result.fixes, tokens=result.tokens, bare_words=result.bare_words)
    for bare in result.bare_words:
        bare.pos += base
    if result.conflict:
        cand.status, cand.path = "ambiguous", result.conflict
        cand.message = "this key is given twice with different values; give it once"
    return cand


#: Whitespace and closing braces: a run of stray closers an object may be merged across.
_BRACES: Final = re.compile(r"[ \t\r\n}]*")


def merge_early_close(body: str, start: int, value: Any, end: int, more: tuple[int, str, int], max_depth: int,
                      budget: ScanBudget) -> tuple[str, ScanResult, int] | None:
    """The one reading of an object that closed early, members after it (``{"a": 1}, "b": 2}``): the
    stray closers are extra characters, and the members after them belong to the object.

    The object at ``body[start]`` read as ``value`` and closed at ``end``; ``more`` is what
    :func:`continued_at` found after it. The reading is the only one when every character between the
    object's closer and the next member is a ``}`` or whitespace, and no member of the object is itself an
    object: a stray ``}`` could then only be one of those run-together closers (deleting any of them gives
    the same text). An object member's closer could be the stray one instead, which moves members into it
    (``{"a": {"b": 1}}, "c": 2}``): two readings, refused. An array has a second reading too (a missing
    ``[``: ``["a"], "b"]`` may be ``[["a"], "b"]``), so only objects merge. The merged text must read as one
    complete value; else ``None`` (a syntax error at the member, as before).

    Returns the text with the stray closers blanked (same length, so every position stays), the scan of the
    object in it, and how many closers were blanked (each a ``stray_closer`` fix). The copy and the re-read are charged
    to ``budget.patch_chars``: many merges in one text stay linear.
    """
    at, what, reopened = more
    if body[start] != "{" or what != "a member" or value.__class__ is not dict \
            or any(child.__class__ is dict for child in value.values()):
        return None
    if _BRACES.match(body, end - 1).end() < reopened:  # type: ignore[union-attr]
        return None  # a "]" among the stray closers: it closed something the text left open
    budget.patch_chars -= 2 * (len(body) - start)
    if budget.patch_chars < 0:
        return None
    stray = body[end - 1 : reopened]
    patched = body[: end - 1] + stray.replace("}", " ") + body[reopened:]
    result = scan(patched, start, max_depth=max_depth, budget=budget)
    if result.status != "complete" or result.end <= at:
        return None
    return patched, result, stray.count("}")


def read_across(text: str, cut: Candidate, max_depth: int, budget: ScanBudget) -> Candidate | None:
    """The value ``cut`` began, read past the end of its segment, when the segment cut it inside a string.

    A model writes the newlines of code inside a JSON string raw, so a fence line of that code starts a line
    of the text and the fence split cut the value there: its segment ends inside a string and the value reads
    as cut off. What lies inside a string is content: read from the same opener to where its brackets
    balance again (strings skipped), and when that is one complete value, not continued after it, whose every
    fence line lies inside one of its strings, that value is the candidate (nothing the fence split found
    inside it is). A value cut inside a string whose brackets never balance is cut off by the end of the
    text, not by the fence: returned ``truncated`` to the end (what follows is inside it, and is no value of
    its own). A value whose brackets balance after the cut but that does not read as one whole across it (an
    object in a string with its quotes unescaped, members after it closed, a fence line between its members)
    is broken from its opener to where it ends, so nothing inside it is a candidate and no member before the
    fence is dropped; so is one cut inside a single-quoted string whose end cannot be told. Else ``None``: the
    cut stands (the value's brackets never balance, or balance before the cut: a value broken off there).

    The characters read are charged to ``budget.balance_chars``; once it is spent the cut stands, so many cut
    values cost linear time. Only the value's own text is read and copied: a failed C decode costs its
    position in the text it reads.
    """
    start = cut.start
    end = balanced_end(text, start, budget)
    # The scanner's own word (it knows single and smart quotes and comments), or a double-quoted string still
    # open at the cut.
    in_string = cut.message.endswith(STRING_CUT) or _inside_string(text, start, cut.end, budget)
    if end < 0 and in_string:
        # A value cut inside one of its strings, whose brackets never balance: the text ends inside it, and
        # nothing after the cut (what a fenced block inside the string holds) is a value of its own.
        return replace(cut, end=len(text))
    if end <= cut.end:
        # Never balances, or balances inside the segment: the cut was not in a string, or (a brace inside a
        # single-quoted string) where the value ends cannot be told: then all of the rest is inside it.
        return _broken_across(text, cut, len(text), cut.end) if in_string else None
    cand, resume = read_value(text[start:end], 0, start, cut.source, max_depth, budget)
    budget.balance_chars -= end - start
    more = continued_at(text, end, text[start] == "[")
    if cand is not None and resume == end - start and cand.status in ("invalid", "ambiguous") and more is None \
            and fences_inside_strings(text, start, end, budget):
        return cand
    # The fence line lies inside this value (inside one of its strings, where it is content, or between its
    # brackets), yet the value does not read as one whole answer across it: it is broken, and nothing inside it
    # (an object written in a string with its quotes unescaped, a fenced block between its members) is a
    # candidate of its own. Never the shorter reading that drops the members before the fence.
    if cand is not None and cand.status == "syntax_error" and cand.position >= 0:
        span_end = broken_span_end(text, start, end, budget)
        return replace(cand, end=span_end if span_end >= 0 else len(text))
    span_end = broken_span_end(text, start, end, budget) if more is not None else end
    return _broken_across(text, cut, span_end if span_end >= 0 else len(text),
                          more[0] if more is not None else cut.end)


def _broken_across(text: str, cut: Candidate, end: int, at: int) -> Candidate:
    """The value ``cut`` began, broken somewhere after a fence line inside it: from its opener to ``end``, a
    syntax error at ``at``."""
    return broken_candidate(0, cut.start, end, cut.source, f"expected the value to read as one whole across the "
                            f"fence line inside it, found {text[at:][:12]!r}", at, cut.tokens or 1)


#: A string the scanner reads (double- or single-quoted, raw newlines included), or a fence run.
_STRING_OR_FENCE: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\'\\]*(?:\\.[^\'\\]*)*\'|```|~~~')


def _inside_string(text: str, start: int, pos: int, budget: ScanBudget) -> bool:
    """Whether ``pos`` lies inside a double-quoted string of the value that opens at ``start``."""
    budget.balance_chars -= pos - start
    return any(m.group() == '"' for m in _STRUCTURE.finditer(text, start, pos))  # a string still open at ``pos``


def fences_inside_strings(text: str, start: int, end: int, budget: ScanBudget) -> bool:
    """Whether every fence line in ``text[start:end]`` (a run of backticks or tildes starting a line) lies
    inside a quoted string of the value there; the strings are found from the value's opener on."""
    budget.balance_chars -= end - start
    for m in _STRING_OR_FENCE.finditer(text, start, end):
        if m.group()[0] in "`~":
            line = text.rfind("\n", start, m.start()) + 1
            if line and m.start() - line <= 3 and not text[line : m.start()].strip(" \t"):
                return False  # a fence line outside every string: the fence is structure
    return True


#: What may lie between the tokens that continue a closed value, as the scanner skips it: space, invisible
#: characters and comments (``{"a": 1} /* x */, "b": 2}``). A comment is looked at up to 2048 characters: this is
#: matched once for every value found, and an unclosed one would otherwise be read to the end each time.
_AFTER_GAP = rf"(?:[ \t\r\n{INVISIBLE}]++|//[^\n]{{0,2048}}+(?=\n)|/\*(?:[^*]|\*(?!/)){{0,2048}}+\*/)*+"
#: A string in any of the quotes the scanner reads (on one line; smart quotes, which no backslash escapes, up to
#: 2048 characters, as the comments above).
_QUOTED_TOKEN = (r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|\u201c[^\u201d\n]{0,2048}+\u201d'
                 r'|\u2018[^\u2019\n]{0,2048}+\u2019')
#: A member right after a closed value (``, "b":`` or ``"b":``, or ``, b:``, ``, 1:``, ``, “b”:``): the value closed
#: too early. The key is any token the scanner reads as one.
MEMBER_AFTER: Final = re.compile(
    rf'{_AFTER_GAP}(?:,{_AFTER_GAP}|(?=["\'\u201c\u2018]))'
    rf'((?:{_QUOTED_TOKEN}|(?:[^\W\d]|\$)[\w$\-]*+|-?[0-9][0-9.eE+\-]*+){_AFTER_GAP}:)'
).match
#: A member whose colon is missing right after a closed object (``}, "k" "v"``, ``}, "k"}``): still a member, so
#: the object closed too early (refused, never the shorter object).
KEY_NO_COLON: Final = re.compile(
    rf'{_AFTER_GAP},{_AFTER_GAP}((?:{_QUOTED_TOKEN})(?:[ \t]+(?=["{{\[])|{_AFTER_GAP}(?=}})))').match
#: An element right after a closed array (``, "c"]``, ``, 3,``, ``, 'c'``, ``, True]``): a scalar after a comma,
#: then a separator, a closer or the end. The array closed too early.
ELEMENT_AFTER: Final = re.compile(
    rf'{_AFTER_GAP},{_AFTER_GAP}((?:{_QUOTED_TOKEN}|-?[0-9][0-9.eE+\-]*+|true|false|null|True|False|None)'
    rf'{_AFTER_GAP}(?:[,\]]|\Z))'
).match
#: Whitespace and closers right after a closed value: a doubled closer (``{"a": 1}}, "b": 2}``) hides the members
#: that follow it no more than a single one does.
_STRAY_CLOSERS: Final = re.compile(r"(?:[ \t\r\n]*[}\]])*").match


def continued_at(body: str, end: int, array: bool, keys: bool = True) -> tuple[int, str, int] | None:
    """What continues the container that closed at ``end``, perhaps after stray closers: where a member (with
    ``keys``) or, after an array, an element starts, which it is, and where the stray closers end (the
    container is open again there). The container closed early and what follows is part of it. ``None`` when
    nothing continues it (prose, the end, another value)."""
    after = _STRAY_CLOSERS(body, end).end()  # type: ignore[union-attr]
    more = (MEMBER_AFTER(body, after) or KEY_NO_COLON(body, after)) if keys else None
    if more is not None:
        return more.start(1), "a member", after
    more = ELEMENT_AFTER(body, after) if array else None
    return None if more is None else (more.start(1), "an element", after)


#: What the bracket balance looks at: brackets and double-quoted strings (an unclosed one matches alone).
_STRUCTURE: Final = re.compile(r'[{}\[\]]|"[^"\\]*(?:\\.[^"\\]*)*"|"')
_WS_RUN: Final = re.compile(r"[ \t\r\n]*")


def balanced_end(body: str, start: int, budget: ScanBudget, opened: str = "") -> int:
    """Where the brackets opened at ``start`` balance again (just past the closer), or -1 if they never do.

    A closer counts only when it matches the innermost open bracket: a mismatched one (``[0}``) closes
    nothing, so whatever follows it stays inside. Double-quoted strings are skipped. ``opened`` holds the
    openers already open before ``start``. The characters read are charged to ``budget.balance_chars``; once
    it is spent the answer is -1, which makes the caller treat the rest of the segment as broken (a
    refusal, never a fragment).
    """
    if budget.balance_chars < 0:
        return -1
    stack = list(opened)
    for m in _STRUCTURE.finditer(body, start):
        c = m.group()
        if c in "{[":
            stack.append(c)
        elif c in "}]":
            if stack and stack[-1] == ("{" if c == "}" else "["):
                stack.pop()
                if not stack:
                    budget.balance_chars -= m.end() - start
                    return m.end()
        elif c == '"':
            break  # an unclosed string runs to the end
    budget.balance_chars -= len(body) - start
    return -1


def broken_span_end(body: str, start: int, end: int, budget: ScanBudget) -> int:
    """The end of the broken value that began at ``start`` and whose brackets balanced at ``end``: while
    what follows continues it (for an object, a member ``, "key":`` or a ``:`` right after the closer,
    ``{"a"}: [1]}``; for an array, an element ``, "c"]``; perhaps after stray closers), the value goes on,
    with its root open again, to the next balance point. -1 when it never ends. An array has no members, so
    no key continues one: a colon or a ``key:`` after a bracket in prose (``[1/2]: ...``,
    ``[1/2], Answer: ...``) leaves what follows outside it."""
    array = body[start] == "["
    while end >= 0:
        if not array and body[end : end + 1] == ":":
            reopened = end
        else:
            more = continued_at(body, end, array, keys=not array)
            if more is None:
                return end
            reopened = more[2]
        end = balanced_end(body, reopened, budget, opened=body[start])
    return end


def read_a_value(body: str, start: int, broke_at: int, tokens: int) -> bool:
    """Whether the attempt at ``start`` that broke at ``broke_at`` had begun a JSON value: it read a key
    with its colon or a scalar (``tokens``), a quoted key, or a nested container. An opener followed by a
    bare word and no colon (``{see here``), or by something no value starts with, is prose."""
    if tokens:
        return True
    first = _WS_RUN.match(body, start + 1).end()  # type: ignore[union-attr]
    return (broke_at > first and body[first] in "\"'\u201c\u2018{[") or _ESCAPED_AT(body, first) is not None


def broken_candidate(base: int, start: int, end: int, source: str, message: str, at: int, tokens: int,
            position: int | None = None) -> Candidate:
    """A value that broke at ``at``; ``position`` -1 marks an opener that read nothing (prose, not a value)."""
    return Candidate(base + start, base + end, source, "syntax_error", message=f"{message} at character {at}",
                     tokens=tokens, position=at if position is None else position)


def whole_candidate(body: str, segment: Segment, max_depth: int,
                    decoder: JSONDecoder = STRICT_DECODER) -> Candidate | None:
    """The segment as one JSON scalar (after one optional ``<tag>`` wrapper), if it is one: strict JSON, or a
    string with raw control characters (``"a<newline>b"``), or a Python tuple or parenthesised literal
    (``("a", "b")``, ``(1)``) that is the whole segment, read by the lenient scanner with its fixes."""
    inner, tag = unwrap_scalar(body)
    if not inner or inner[0] not in VALUE_START or inner[0] in "{[":
        if (inner[:1] == "(" and inner[-1:] == ")") or (inner[:1] == "[" and _bare_array(inner)):
            return _whole_scan(body, inner, tag, segment, max_depth)
        return None  # containers are found by the opener search, at C speed when they are clean
    try:
        value = decoder.decode(inner)
    except (ValueError, RecursionError):
        return _whole_scan(body, inner, tag, segment, max_depth) if inner[0] == '"' else None
    if _depth_exceeds(value, inner, 0, len(inner), max_depth):
        return None  # let the scanner report the limit
    offset = body.find(inner)
    start = segment.start + max(offset, 0)
    return Candidate(start, start + len(inner), "tag" if tag else segment.source, "invalid", data=value,
                     tokens=1, tag=tag or "", json_text=inner)


def _whole_scan(body: str, inner: str, tag: str | None, segment: Segment, max_depth: int) -> Candidate | None:
    """``inner`` read by the lenient scanner, when that reads all of it as one value (else ``None``)."""
    result = scan(inner, 0, max_depth=max_depth, bare_elements=inner[0] == "[")
    if result.status != "complete" or result.end != len(inner) or (result.bare_words and inner[0] != "[") \
            or any(fix.kind == "invalid_escape" for fix in result.fixes):
        return None  # an invalid escape in a lone string: kept, dropped or decoded as Python does?
    start = segment.start + max(body.find(inner), 0)
    for bare in result.bare_words:
        bare.pos += start
    return Candidate(start, start + len(inner), "tag" if tag else segment.source, "invalid", data=result.value,
                     fixes=result.fixes, tokens=max(result.tokens, 1), tag=tag or "", bare_words=result.bare_words)


#: The inside of a flat array of unquoted words (``[a, b]``, one a line): no quotes, no nesting.
_FLAT: Final = re.compile(r"[^\[\]{}\"'`]*")
_LETTER: Final = re.compile(r"[A-Za-z_$]")


def _bare_array(inner: str) -> bool:
    """Whether ``inner`` is one flat array holding an unquoted word (``[a, b]``): read as a whole reply only."""
    return inner[-1:] == "]" and _FLAT.fullmatch(inner, 1, len(inner) - 1) is not None \
        and _LETTER.search(inner) is not None


def _strict_at(body: str, start: int, max_depth: int, budget: ScanBudget) -> Patched | None:
    """The value at ``start`` read by the C decoder, after patching a few slips if needed.

    Each failure spends one of the search's C-decoder failures (it costs O(position)); once they are
    spent, the scanner reads everything.
    """
    if budget.strict_failures <= 0:
        return None
    patched = decode_with_patches(body, start, max_depth, budget)
    if patched is None:
        budget.strict_failures -= 1
        return None
    if _depth_exceeds(patched.value, patched.json_text, 0, len(patched.json_text), max_depth):
        budget.strict_failures = 0
        return None  # the scanner takes over and raises the depth limit
    return patched


def _depth_exceeds(value: Any, text: str, start: int, end: int, max_depth: int) -> bool:
    """Depth check for values the C decoder produced (its own limit is higher than ours).

    Counting brackets in the source slice is a C-speed upper bound on the depth, so the walk only runs
    for texts with many containers.
    """
    if text.count("{", start, end) + text.count("[", start, end) <= max_depth:
        return False
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth >= max_depth:
                return True
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def canonical(value: Any) -> str:
    """A comparison key for JSON values: equal keys mean an exact repeat."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
