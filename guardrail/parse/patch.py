"""Repairing slips at C speed: decode, and where the decoder stops, undo the slips it shows.

Most dirty answers are clean JSON with slips a regular pattern can find: trailing commas, comments, Python
``True``/``None``, raw control characters inside strings, invisible characters. For those, the C decoder plus
C-speed patching is far cheaper than the lenient scanner, which reads token by token in Python.

When the first decode fails at a slip of those kinds, one bulk pass (:func:`_bulk`) undoes every such slip in
the value's text at once (its extent found by the bracket balance), reading its double-quoted strings as
strings: each is copied as it is, with raw control characters escaped. Its result is used only if it then
decodes as one JSON value: the quotes are where they were, so the strings the pass saw are the value's
strings, and everything it removed or replaced lay between tokens. Each repair is exactly what the lenient
scanner does there, so the value is the same either way. Otherwise patches are made one at a time where the
error position itself shows the slip (a ``,`` just before the closer the decoder stumbled on, a comment where a
token was expected, ``True`` where a value was expected, a raw control character inside a string), up to
``MAX_PATCHES``; anything else returns ``None`` and the scanner takes over: it loses nothing.

Cost: the bulk pass is one regex pass over the value (a Python step per string or slip), then one decode;
each single patch decodes again from the start of the value, so at most ``MAX_PATCHES + 1`` C passes over it.
The copying is charged to ``budget.patch_chars``. The JSON path of each fix is worked out only if someone
reads it (a scan up to the fix's position).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import partial
from itertools import accumulate
from json import JSONDecodeError
from typing import Any, Final

from guardrail.parse.lexicon import INVISIBLE, PYTHON_LITERALS
from guardrail.parse.report import Fix
from guardrail.parse.scanner import Budget, scan

MAX_PATCHES: Final = 8
_IDENT_TAIL: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$-")
_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
#: ``str.translate`` table: every control character to its JSON escape.
_CONTROL_ESCAPES: Final = {code: _ESCAPES.get(chr(code), f"\\u{code:04x}") for code in range(32)}
_CONTROL: Final = re.compile(r"[\x00-\x1f]")
_STRING_REST: Final = re.compile(r'(?:[^"\\]|\\.)*+', re.S)
#: Splits text into what lies between double-quoted strings and the strings (odd items of the split).
_STRINGS: Final = re.compile(r'("[^"\\]*+(?:\\.[^"\\]*+)*+")', re.S)
_COMMENT: Final = r"//[^\n]*+\n|/\*(?:[^*]|\*(?!/))*+\*/"
_COMMENTS: Final = re.compile(r"//[^\n]*+\n?|/\*(?:[^*]|\*(?!/))*+(?:\*/)?").search  # unclosed: to the end
#: A comma with only space or comments before a closer; a Python literal; a run of invisible characters.
_TRAILING: Final = re.compile(rf",(?=(?:[ \t\r\n]++|{_COMMENT})*+[}}\]])").finditer
_LITERALS: Final = re.compile(r"(?<![\w$])(?:True|False|None)(?![\w$\-])").finditer
_INVISIBLES: Final = re.compile(rf"[{INVISIBLE}]++").finditer
_INVISIBLE_SEARCH: Final = re.compile(rf"[{INVISIBLE}]").search
#: Where a trailing comma may follow: the end of a value (a string, a number, a literal, a container).
_VALUE_END: Final = frozenset('"0123456789]}elNy')


@dataclass(slots=True)
class Patched:
    """A value decoded after patching: ``end`` is in the original text, ``json_text`` is strict JSON for it."""

    value: Any
    end: int
    json_text: str
    fixes: list[Fix]


def decode_with_patches(body: str, start: int, max_depth: int, budget: Budget) -> Patched | None:
    """Decode the JSON value at ``body[start]``, undoing its slips (see the module docstring); ``None`` if it
    cannot.

    Patching copies the text from ``start`` on; ``budget.patch_chars`` bounds that copying for the whole
    search, so many patched values in a long reply stay linear.
    """
    decoder = budget.decoder
    try:
        value, end = decoder.raw_decode(body, start)
        return Patched(value, end, body[start:end], [])
    except JSONDecodeError as error:
        failure_pos, failure_msg = error.pos - start, error.msg  # relative to ``start`` from here on
    except (ValueError, RecursionError):  # a number with more digits than int() takes; very deep nesting
        return None
    text = body[start:]  # patched from here on; positions below are relative to ``start``
    patch = _patch_at(text, failure_pos, failure_msg)
    shift = 0  # how much longer the patched text is than the original, before the current error
    fixes: list[Fix] = []
    previous = 0  # where the slip before this one was
    while True:
        budget.patch_chars -= len(text)
        if patch is None or len(fixes) == MAX_PATCHES or budget.patch_chars < 0:
            return None
        kind, cut_from, cut_to, replacement = patch
        if len(fixes) == 1 and len(text) - cut_from > 2 * max(cut_from - previous, 1):
            # Slips this close together, with this much text left: likely one a member. All at once.
            bulk = _bulk_decode(body, start, max_depth, budget)
            if bulk is not None:
                return bulk
        previous = cut_from
        fixes.append(Fix(kind, _LazyPath(body, start, start + cut_from - shift, max_depth), text[cut_from:cut_to],
                         replacement.strip()))
        text = text[:cut_from] + replacement + text[cut_to:]
        shift += len(replacement) - (cut_to - cut_from)
        try:
            value, end = decoder.raw_decode(text, 0)
        except JSONDecodeError as error:
            patch = _patch_at(text, error.pos, error.msg)
            continue
        except (ValueError, RecursionError):
            return None
        return Patched(value, start + end - shift, text[:end], fixes)


def _bulk_decode(body: str, start: int, max_depth: int, budget: Budget) -> Patched | None:
    """The value at ``body[start]`` decoded after one bulk pass over the text from there (see the module
    docstring): ``None`` when the result is no JSON value, or a comment holds a quote or is never closed
    (then the strings the pass saw may not be the value's)."""
    budget.patch_chars -= 2 * (len(body) - start)
    if budget.patch_chars < 0:
        return None
    rest = body[start:]
    parts = _STRINGS.split(rest)  # text between strings at even indexes, the strings at odd ones
    offsets = [0, *accumulate(map(len, parts))]  # where each part starts in ``rest``
    found: list[tuple[str, int, str, str]] = []  # (kind, position in ``rest``, before, after)
    edits: list[tuple[int, int, str]] = []  # (from, to, replacement) in ``rest``
    if any(map(_CONTROL.search, parts[1::2])):  # C-speed look over every string first: usually none
        for index in range(1, len(parts), 2):
            part = parts[index]
            bad = _CONTROL.search(part)
            if bad is not None:
                fixed = _escape_controls(part)
                edits.append((offsets[index], offsets[index + 1], fixed))
                found.append(("control_char_in_string", offsets[index] + bad.start(), part[bad.start():][:80],
                              fixed[bad.start():][:80]))
    comments: list[tuple[int, int]] = []
    if "/" in rest:
        pos = 0
        while (m := _COMMENTS(rest, pos)) is not None:
            at, pos = m.start(), m.end()
            index = bisect_right(offsets, at) - 1
            if index % 2:  # inside a string: content; look on after it
                pos = offsets[index + 1]
                continue
            if pos > offsets[index + 1] or not m.group().endswith(("\n", "*/")):
                return None  # it holds a quote, or is never closed: the strings seen may not be the value's
            edits.append((at, pos, "\n" if m.group()[-1] == "\n" else " "))
            comments.append((at, pos))
            found.append(("comment", at, m.group()[:80], ""))
    if "," in rest:
        for m in _TRAILING(rest):
            at = m.start()
            if (bisect_right(offsets, at) - 1) % 2 or (comments and _inside(at, comments)):
                continue  # inside a string or a comment: content
            before = at - 1
            while rest[before] in " \t\r\n":
                before -= 1
            if rest[before] in _VALUE_END:  # not after an opener, a colon or another comma
                edits.append((at, at + 1, ""))
                found.append(("trailing_comma", at, ",", ""))
    if "True" in rest or "False" in rest or "None" in rest:
        for m in _LITERALS(rest):
            at = m.start()
            if (bisect_right(offsets, at) - 1) % 2 == 0 and not (comments and _inside(at, comments)):
                literal = json.dumps(PYTHON_LITERALS[m.group()])
                edits.append((at, m.end(), literal))
                found.append(("python_literal", at, m.group(), literal))
    if not rest.isascii() and _INVISIBLE_SEARCH(rest) is not None:
        for m in _INVISIBLES(rest):
            at = m.start()
            if (bisect_right(offsets, at) - 1) % 2 == 0 and not (comments and _inside(at, comments)):
                edits.append((at, m.end(), " "))
                found.append(("invisible_char", at, m.group(), ""))
    if not found:
        return None
    edits.sort()
    pieces: list[str] = []
    marks: list[int] = []  # where each edit ends in the new text ...
    shifts: list[int] = []  # ... and how much longer the new text is than the original from there on
    last = grown = 0
    for a, b, replacement in edits:
        pieces.append(rest[last:a])
        pieces.append(replacement)
        last = b
        grown += len(replacement) - (b - a)
        marks.append(b + grown)
        shifts.append(grown)
    pieces.append(rest[last:])
    text = "".join(pieces)
    try:
        value, end = budget.decoder.raw_decode(text, 0)
    except (ValueError, RecursionError):
        return None
    # The end in the original text: undo the growth of the edits that end at or before it.
    index = bisect_right(marks, end) - 1
    original_end = end - (shifts[index] if index >= 0 else 0)
    found.sort(key=_position)
    fixes = [Fix(kind, partial(_path_at, body, start, start + at, max_depth), before, after)
             for kind, at, before, after in found if at < original_end]
    return Patched(value, start + original_end, text[:end], fixes)


def _position(item: tuple[str, int, str, str]) -> int:
    return item[1]


def _escape_controls(string: str) -> str:
    """``string`` with every raw control character written as its JSON escape (newlines, tabs and returns
    first, by C-speed replaces; the rarer ones by a table)."""
    string = string.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return string if _CONTROL.search(string) is None else string.translate(_CONTROL_ESCAPES)


def _inside(at: int, spans: list[tuple[int, int]]) -> bool:
    """Whether ``at`` lies in one of the spans (the comments found)."""
    return any(a <= at < b for a, b in spans)


def _patch_at(text: str, pos: int, message: str) -> tuple[str, int, int, str] | None:
    """The one slip the error at ``pos`` shows, as (fix kind, cut from, cut to, replacement)."""
    if pos >= len(text):
        return None  # the text ends: truncation is the scanner's to report
    c = text[pos]
    if text.startswith("//", pos):
        newline = text.find("\n", pos)
        return None if newline < 0 else ("comment", pos, newline, " ")
    if text.startswith("/*", pos):
        close = text.find("*/", pos + 2)
        return None if close < 0 else ("comment", pos, close + 2, " ")
    if c == "," and message.startswith("Illegal trailing comma"):  # Python 3.13+ points at the comma
        return "trailing_comma", pos, pos + 1, ""
    if c in "}]":
        before = pos - 1
        while before >= 0 and text[before] in " \t\r\n":
            before -= 1
        if before >= 0 and text[before] == ",":
            return "trailing_comma", before, before + 1, ""
        return None
    if c in "TFN":
        for python, value in PYTHON_LITERALS.items():
            after = pos + len(python)
            if text.startswith(python, pos) and (after >= len(text) or text[after] not in _IDENT_TAIL):
                return "python_literal", pos, after, json.dumps(value)
        return None
    if c in INVISIBLE:
        end = pos
        while end < len(text) and text[end] in INVISIBLE:
            end += 1
        return "invisible_char", pos, end, " "
    if c < " " and message.startswith("Invalid control character"):
        # Escape every raw control character up to the string's closing quote: one fix per string, as
        # the scanner records it.
        end = min(_STRING_REST.match(text, pos).end(), len(text))  # type: ignore[union-attr]
        return "control_char_in_string", pos, end, _escape_controls(text[pos:end])
    return None


def _path_at(body: str, start: int, pos: int, max_depth: int) -> str:
    """The JSON path at ``pos`` of the value that starts at ``body[start]`` (see :class:`_LazyPath`)."""
    return scan(body[start:pos] + " ", 0, max_depth=max_depth).path


class _LazyPath:
    """The JSON path at a position of the original text, found by scanning up to it when first asked."""

    __slots__ = ("body", "max_depth", "pos", "start")

    def __init__(self, body: str, start: int, pos: int, max_depth: int) -> None:
        self.body, self.start, self.pos, self.max_depth = body, start, pos, max_depth

    def __call__(self) -> str:
        # Only the value's own text is scanned: reading a path costs the size of the value, not the reply.
        # The space keeps a literal just before the cut from counting as cut off.
        return scan(self.body[self.start : self.pos] + " ", 0, max_depth=self.max_depth).path
