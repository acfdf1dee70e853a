"""Repairing a few slips at C speed: decode, and at the decoder's error position undo one known slip.

Most dirty answers are clean JSON with one to three slips: a trailing comma, a comment, a Python
``None``. For those, the C decoder plus a handful of local patches is far cheaper than the lenient scanner,
which reads token by token in Python. A patch is made only where the error position itself shows the slip
(a ``,`` just before the closer the decoder stumbled on, a comment where a token was expected, ``True``
where a value was expected, a raw control character inside a string) and each is exactly what the lenient
scanner would do there, so the value is the same either way. Anything else, or more than
``MAX_PATCHES`` slips, returns ``None`` and the scanner takes over: it loses nothing.

Cost: each retry decodes again from the start of the value, so at most ``MAX_PATCHES + 1`` C passes over
it. The JSON path of each fix is worked out only if someone reads it (a scan up to the fix's position).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from json import JSONDecodeError
from typing import Any, Final

from guardrail.parse.lexicon import INVISIBLE, PYTHON_LITERALS
from guardrail.parse.report import Fix
from guardrail.parse.scanner import Budget, scan

MAX_PATCHES: Final = 8
_IDENT_TAIL: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$-")
_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


@dataclass(slots=True)
class Patched:
    """A value decoded after patching: ``end`` is in the original text, ``json_text`` is strict JSON for it."""

    value: Any
    end: int
    json_text: str
    fixes: list[Fix]


def decode_with_patches(body: str, start: int, max_depth: int, budget: Budget) -> Patched | None:
    """Decode the JSON value at ``body[start]``, patching up to ``MAX_PATCHES`` slips; ``None`` if it cannot.

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
    shift = 0  # how much longer the patched text is than the original, before the current error
    fixes: list[Fix] = []
    while True:
        patch = _patch_at(text, failure_pos, failure_msg)
        budget.patch_chars -= len(text)
        if patch is None or len(fixes) == MAX_PATCHES or budget.patch_chars < 0:
            return None
        kind, cut_from, cut_to, replacement = patch
        fixes.append(Fix(kind, _LazyPath(body, start, start + cut_from - shift, max_depth), text[cut_from:cut_to],
                         replacement.strip()))
        text = text[:cut_from] + replacement + text[cut_to:]
        shift += len(replacement) - (cut_to - cut_from)
        try:
            value, end = decoder.raw_decode(text, 0)
        except JSONDecodeError as error:
            failure_pos, failure_msg = error.pos, error.msg
            continue
        except (ValueError, RecursionError):
            return None
        return Patched(value, start + end - shift, text[:end], fixes)


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
        end = pos
        while end < len(text) and text[end] != '"':
            end += 2 if text[end] == "\\" else 1
        end = min(end, len(text))
        raw = text[pos:end]
        return "control_char_in_string", pos, end, "".join(
            _ESCAPES.get(ch, f"\\u{ord(ch):04x}") if ch < " " else ch for ch in raw)
    return None


class _LazyPath:
    """The JSON path at a position of the original text, found by scanning up to it when first asked."""

    __slots__ = ("body", "max_depth", "pos", "start")

    def __init__(self, body: str, start: int, pos: int, max_depth: int) -> None:
        self.body, self.start, self.pos, self.max_depth = body, start, pos, max_depth

    def __call__(self) -> str:
        # Only the value's own text is scanned: reading a path costs the size of the value, not the reply.
        # The space keeps a literal just before the cut from counting as cut off.
        return scan(self.body[self.start : self.pos] + " ", 0, max_depth=self.max_depth).path
