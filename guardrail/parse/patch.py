"""Repairing slips at C speed: decode, and where the decoder stops, undo the slips it shows.

Most dirty answers are JSON with slips a regular pattern can find: trailing commas, comments, Python
``True``/``None``, raw control characters inside strings, invisible characters, single- or smart-quoted strings,
unquoted keys, a comma missing between members. For those, the C decoder plus C-speed patching is far cheaper
than the lenient scanner, which reads token by token in Python.

One slip is patched where the error position itself shows it (a ``,`` just before the closer the decoder
stumbled on, a comment where a token was expected, ``True`` where a value was expected, a raw control character
inside a string). When a second comes close after the first (slips one a member), one bulk pass
(:func:`bulk_decode`) undoes every such slip in the value's text at once, and the slips no single patch undoes
(another quote, an unquoted key, a missing comma) with them: the text is split at its quoted strings (each one
copied, raw control characters escaped, single or smart quotes read as the scanner reads them and written as JSON
strings), the slips between them are found by patterns that each start with a character of their own, and a
comma is added where the scanner adds one (before a key, between containers; where the decoder then still stops,
before a key or an element, up to ``_MISSING_COMMAS`` more decodes). Its result is used only if it decodes as one
JSON value: the quotes are where they were, so the strings the pass saw are the value's strings, and everything it
removed or replaced lay between tokens; a comment that holds a quote, or is never closed, makes it give up. Each
repair is exactly what the lenient scanner does there (one fix a slip, the same kinds and paths), so the value is
the same either way. Otherwise patches go on one at a time, up to ``MAX_PATCHES``; anything else returns ``None``
and the scanner takes over: it loses nothing.

Cost: the bulk pass is a few C-speed passes over the value and a Python step per slip (and per string only
where strings need a repair), then one decode; each single patch decodes again from the start of the value, so
at most ``MAX_PATCHES + 1`` C passes over it. The copying is charged to ``budget.patch_chars``. The JSON path of
each fix is worked out only if someone reads it (a scan up to the fix's position).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass
from functools import partial
from itertools import accumulate, compress
from json import JSONDecodeError
from typing import Any, Final

from guardrail.parse.lexicon import INVISIBLE, PYTHON_LITERALS, WORD
from guardrail.parse.report import Fix
from guardrail.parse.scanner import ScanBudget, scan
from guardrail.parse.tokens import unescape

MAX_PATCHES: Final = 8
_IDENT_TAIL: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$-")
_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
#: ``str.translate`` table: every control character to its JSON escape.
_CONTROL_ESCAPES: Final = {code: _ESCAPES.get(chr(code), f"\\u{code:04x}") for code in range(32)}
_CONTROL: Final = re.compile(r"[\x00-\x1f]")
_STRING_REST: Final = re.compile(r'(?:[^"\\]|\\.)*+', re.S)
#: Splits text into what lies between double-quoted strings and the strings (odd items of the split).
_STRINGS: Final = re.compile(r'("[^"\\]*+(?:\\.[^"\\]*+)*+")', re.S)
_QUOTED: Final = re.compile(r'("[^"\\]*+(?:\\.[^"\\]*+)*+"|\'[^\'\\]*+(?:\\.[^\'\\]*+)*+\'|\u201c[^\u201d]*+\u201d'
                             r"|\u2018[^\u2019]*+\u2019)", re.S)
_COMMENT: Final = r"//[^\n]*+\n|/\*(?:[^*]|\*(?!/))*+\*/"
_COMMENTS: Final = re.compile(r"//[^\n]*+\n?|/\*(?:[^*]|\*(?!/))*+(?:\*/)?").search  # unclosed: to the end
#: A comma with only space or comments before a closer; a Python literal; a run of invisible characters.

_LITERALS: Final = re.compile(r"(?<![\w$])(?:True|False|None)(?![\w$\-])").finditer
_INVISIBLES: Final = re.compile(rf"[{INVISIBLE}]++").finditer
_INVISIBLE_SEARCH: Final = re.compile(rf"[{INVISIBLE}]").search
_INVISIBLE_SET: Final = frozenset(INVISIBLE)
#: An unquoted key: a word (as the scanner reads one) with a colon after it.
_GAP: Final = rf"(?:[ \t\r\n{INVISIBLE}]++|{_COMMENT})*+"  # what may lie between two tokens
_TRAILING: Final = re.compile(rf",(?={_GAP}[}}\]])").finditer
_BARE_KEYS: Final = re.compile(rf"[{{,]{_GAP}({WORD}){_GAP}:").finditer
#: A cheap first look for one: an opener or a comma, then (after space or a comment) a letter.
_MAY_HAVE_BARE_KEY: Final = re.compile(r"[{,][ \t\r\n]*+[^\W\d/]|[{,][ \t\r\n]*+/").search
_OTHER_QUOTE: Final = re.compile("[^\"]").match
#: A closer, then space or comments (at least one), then an opener: containers one after another.
_CONTAINER_AFTER_CONTAINER: Final = re.compile(rf"[}}\]](?=[ \t\r\n{INVISIBLE}/]){_GAP}(?=[{{\[])").finditer
_SCALAR_START: Final = frozenset('"-0123456789tfnNI')
_COLON: Final = re.compile(rf"{_GAP}:").match
_WORD_KEY: Final = re.compile(rf"({WORD})[ \t\r\n]*+:").match
_KEY_AHEAD: Final = re.compile(r'"(?:[^"\\]|\\.)*+"[ \t\r\n]*+:').match
#: How many commas missing the bulk pass adds (each costs one more decode; beyond, the scanner is cheaper).
_MISSING_COMMAS: Final = 4
#: Where a trailing comma may follow: the end of a value (a string, a number, a literal, a container).
_VALUE_END: Final = frozenset('"0123456789]}elNy')


@dataclass(slots=True)
class Patched:
    """A value decoded after patching: ``end`` is in the original text, ``json_text`` is strict JSON for it."""

    value: Any
    end: int
    json_text: str
    fixes: list[Fix]


def decode_with_patches(body: str, start: int, max_depth: int, budget: ScanBudget) -> Patched | None:
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
    bulk_tried = False
    while True:
        budget.patch_chars -= len(text)
        if budget.patch_chars < 0:
            return None
        if not bulk_tried and patch is not None and len(fixes) == 1 \
                and len(text) - patch[1] > 2 * max(patch[1] - previous, 1):
            # Slips this close together, with this much text left: likely one a member. All at once. (Where the
            # first slip is one no single patch undoes, the scanner reads as fast as the bulk pass would.)
            bulk_tried = True
            bulk = bulk_decode(body, start, max_depth, budget)
            if bulk is not None:
                return bulk
        if patch is None or len(fixes) == MAX_PATCHES:
            return None
        kind, cut_from, cut_to, replacement = patch
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


def bulk_decode(body: str, start: int, max_depth: int, budget: ScanBudget) -> Patched | None:
    """The value at ``body[start]`` decoded after one bulk pass over the text from there (see the module
    docstring): ``None`` when the result is no JSON value, or a comment holds a quote or is never closed
    (then the strings the pass saw may not be the value's)."""
    if body[start] not in "{[":
        return None
    budget.patch_chars -= 2 * (len(body) - start)
    if budget.patch_chars < 0:
        return None
    # The value ends at its closer: what follows the last one in the text is never part of it.
    rest = body[start : body.rfind("}" if body[start] == "{" else "]") + 1]
    other_quotes = "'" in rest or "\u201c" in rest or "\u2018" in rest
    # Text between strings at even indexes, the strings at odd ones.
    parts = (_QUOTED if other_quotes else _STRINGS).split(rest)
    offsets = [0, *accumulate(map(len, parts))]  # where each part starts in ``rest``
    found: list[tuple[str, int, str, str]] = []  # (kind, position in ``rest``, before, after)
    edits: list[tuple[int, int, str]] = []  # (from, to, replacement) in ``rest``
    keys: list[tuple[int, int]] = []  # the unquoted keys: no literal inside them
    strings = parts[1::2]
    if any(map(_CONTROL.search, strings)):  # C-speed looks first: usually no string needs a thing
        for index in range(1, len(parts), 2):
            _string(parts, index, offsets, edits, found)
    elif other_quotes:
        for index in compress(range(1, len(parts), 2), map(_OTHER_QUOTE, strings)):
            if not _string(parts, index, offsets, edits, found):
                return None
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
    if _MAY_HAVE_BARE_KEY(rest) is not None:
        for m in _BARE_KEYS(rest):  # a word, then a colon, where a key goes
            at = m.start(1)
            if (bisect_right(offsets, at) - 1) % 2 or (comments and _inside(at, comments)):
                continue  # inside a string or a comment: content
            word = m.group(1)
            edits.append((at, m.end(1), json.dumps(word)))
            keys.append(m.span(1))
            found.append(("unquoted_key", m.end(), word, f'"{word}"'))
    if any(map(str.isspace, parts[2:-1:2])):  # space alone between two strings: a comma missing before a key?
        for index in range(2, len(parts) - 2, 2):
            if parts[index].isspace() and _COLON(parts[index + 2]) is not None:
                at = offsets[index]  # right after the string value
                edits.append((at, at, ","))
                found.append(("missing_comma", at, "", ","))
    for m in _CONTAINER_AFTER_CONTAINER(rest):  # {...}\n{...}: a comma missing between elements
        at = m.start() + 1
        if (bisect_right(offsets, at) - 1) % 2 == 0 and not (comments and _inside(at, comments)):
            edits.append((at, at, ","))
            found.append(("missing_comma", at, "", ","))
    if "," in rest:
        for m in _TRAILING(rest):
            at = m.start()
            if (bisect_right(offsets, at) - 1) % 2 or (comments and _inside(at, comments)):
                continue
            if _before(rest, at, comments) in _VALUE_END:  # not after an opener, a colon or another comma
                edits.append((at, at + 1, ""))
                found.append(("trailing_comma", at, ",", ""))
    if "True" in rest or "False" in rest or "None" in rest:
        for m in _LITERALS(rest):
            at = m.start()
            if (bisect_right(offsets, at) - 1) % 2 == 0 and not (comments and _inside(at, comments)) \
                    and not (keys and _inside(at, keys)):
                literal = json.dumps(PYTHON_LITERALS[m.group()])
                edits.append((at, m.end(), literal))
                found.append(("python_literal", at, m.group(), literal))
    if not rest.isascii() and _INVISIBLE_SEARCH(rest) is not None:
        for m in _INVISIBLES(rest):
            at = m.start()
            if (bisect_right(offsets, at) - 1) % 2 == 0 and not (comments and _inside(at, comments)):
                edits.append((at, m.end(), " "))
                found.append(("invisible_char", at, m.group(), ""))
    edits.sort()
    for _ in range(_MISSING_COMMAS + 1):
        text, starts, shifts = _apply(rest, edits)
        try:
            value, end = budget.decoder.raw_decode(text, 0)
        except JSONDecodeError as error:
            # A comma missing where the scanner puts one (one reading): before a key, or in an array before a
            # container, after one, or before an element on a line of its own.
            if not error.msg.startswith("Expecting ',' delimiter"):
                return None
            # An unquoted key after a value, quoted too (only with a break before it: ``3nullc`` is one token).
            word = _WORD_KEY(text, error.pos) if text[error.pos - 1] in " \t\r\n\"}]" else None
            if word is None and not _comma_missing(text, error.pos):
                return None
            budget.patch_chars -= len(text)
            if budget.patch_chars < 0:
                return None
            index = bisect_left(starts, error.pos) - 1
            at = error.pos - (shifts[index] if index >= 0 else 0)
            insort(edits, (at, at, ","))
            found.append(("missing_comma", at, "", ","))
            if word is not None:
                insort(edits, (at, at + len(word.group(1)), json.dumps(word.group(1))))
                found.append(("unquoted_key", at + word.end() - error.pos, word.group(1), json.dumps(word.group(1))))
            continue
        except (ValueError, RecursionError):
            return None
        # The end in the original text: undo the growth of the edits that start before it (one that starts
        # right at it, a comma or a comment removed after the value, is not the value's).
        index = bisect_left(starts, end) - 1
        original_end = end - (shifts[index] if index >= 0 else 0)
        found.sort(key=_position)
        fixes = [Fix(kind, partial(_path_at, body, start, start + at, max_depth), before, after)
                 for kind, at, before, after in found if at < original_end]
        return Patched(value, start + original_end, text[:end], fixes)
    return None


def _string(parts: list[str], index: int, offsets: list[int], edits: list[tuple[int, int, str]],
            found: list[tuple[str, int, str, str]]) -> bool:
    """Undo the slips of the string ``parts[index]``: raw control characters in a double-quoted one; single or
    smart quotes, read as the scanner reads them (escapes decoded in single quotes, none in smart ones).
    False for a string that is no string here (``''`` opening ``\'\'\'``)."""
    part = parts[index]
    at = offsets[index]
    quote = part[0]
    if quote == '"':
        bad = _CONTROL.search(part)
        if bad is not None:
            fixed = _escape_controls(part)
            edits.append((at, offsets[index + 1], fixed))
            found.append(("control_char_in_string", at + bad.start(), part[bad.start():][:80],
                          fixed[bad.start():][:80]))
        return True
    if len(part) == 2 and parts[index + 1][:1] == quote:
        return False  # triple quotes: the scanner reads those another way
    if quote != "'" and "\\" in part:
        return False  # a backslash in smart quotes: the scanner refuses it (an escape, or a character?)
    value = unescape(part[1:-1]) if quote == "'" else part[1:-1]
    fixed = json.dumps(value, ensure_ascii=False)
    edits.append((at, offsets[index + 1], fixed))
    colon = _COLON(parts[index + 1]) if index + 1 < len(parts) else None
    # A key's fix is at its member (after the colon), a value's where it starts: as the scanner has them.
    where = offsets[index + 1] + colon.end() if colon is not None else at
    found.append(("single_quotes" if quote == "'" else "smart_quotes", where, part[:80], value[:80]))
    return True


def _comma_missing(text: str, pos: int) -> bool:
    """Whether the comma the decoder expected at ``pos`` is one the scanner adds (see its ``missing_comma``):
    before a key (an object's member), before an opener, before a string after a closer, or before a scalar on
    a new line (an array's element). Where the container is of the other kind, the next decode fails."""
    if pos >= len(text):
        return False
    if _KEY_AHEAD(text, pos) is not None or text[pos] in "{[":
        return True
    before = pos - 1
    while before > 0 and text[before] in " \t\r":
        before -= 1
    return (text[before] in "}]" and text[pos] == '"') or (text[before] == "\n" and text[pos] in _SCALAR_START)


def _apply(rest: str, edits: list[tuple[int, int, str]]) -> tuple[str, list[int], list[int]]:
    """``rest`` with the (sorted) edits made, where each edit starts in the new text, and how much longer the
    new text is than the original after it."""
    pieces: list[str] = []
    starts: list[int] = []
    shifts: list[int] = []
    last = grown = 0
    for a, b, replacement in edits:
        pieces.append(rest[last:a])
        pieces.append(replacement)
        last = b
        starts.append(a + grown)
        grown += len(replacement) - (b - a)
        shifts.append(grown)
    pieces.append(rest[last:])
    return "".join(pieces), starts, shifts


def _position(item: tuple[str, int, str, str]) -> int:
    return item[1]


def _escape_controls(string: str) -> str:
    """``string`` with every raw control character written as its JSON escape (newlines, tabs and returns
    first, by C-speed replaces; the rarer ones by a table)."""
    string = string.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return string if _CONTROL.search(string) is None else string.translate(_CONTROL_ESCAPES)


def _before(rest: str, at: int, comments: list[tuple[int, int]]) -> str:
    """The character of the token before ``at``: space, invisible characters and comments skipped."""
    ends = {b: a for a, b in comments} if comments else {}
    before = at - 1
    while before >= 0:
        if before + 1 in ends:  # the end of a comment: skip it whole
            before = ends[before + 1] - 1
            continue
        c = rest[before]
        if c not in " \t\r\n" and c not in _INVISIBLE_SET:
            return c
        before -= 1
    return ""


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
