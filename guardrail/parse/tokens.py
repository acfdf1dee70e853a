"""The lexical layer of the lenient JSON reader: token patterns, scalars, and the C decoder it leans on.

Every pattern here is one pass with no nested quantifiers over overlapping classes, so none can backtrack
more than linearly. The fast patterns take a whole token (or a whole ``"key": scalar,`` member) in one
C-speed match; what they leave goes to the scanner's slow path.
"""

from __future__ import annotations

import json.decoder
import math
import re
from collections.abc import Callable
from typing import Any, Final

from guardrail.errors import Signal
from guardrail.parse.lexicon import ALL_LITERALS, INVISIBLE, JSON_LITERALS, NUMBER, WORD

#: The C string scanner behind ``json.loads`` (not in typeshed): decodes escapes at C speed and, with
#: ``strict=False``, accepts raw control characters, which the scanner then records as a fix.
scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.__dict__["scanstring"]


class NonFinite:
    """A ``NaN``/``Infinity`` literal: not JSON; becomes null only where the contract allows null."""

    __slots__ = ("literal",)

    def __init__(self, literal: str) -> None:
        self.literal = literal

    def __repr__(self) -> str:
        return f"NonFinite({self.literal!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NonFinite) and other.literal == self.literal

    def __hash__(self) -> int:
        return hash(("NonFinite", self.literal))


class BareWord:
    """An unquoted token as an object member's value (``{"name": Kim}``, ``{"id": 57eeeeb1-...}``,
    ``{"n": 1_234}``): not JSON, so not yet a value.

    Its readings: the string ``word`` (``text``: false for words that mean no value, ``undefined``, ``nil``,
    ``NaN``..., and for numbers written with digit separators), and the number ``number`` (``1_234`` ->
    1234; else ``None``). The contract decides (``coerce._bare_word``): a reading is taken only where the slot
    admits its type and nothing else, else the value is broken where the word stands (``pos``, ``message``:
    the syntax error it was).
    """

    __slots__ = ("message", "number", "pos", "text", "word")

    def __init__(self, word: str, pos: int, message: str, *, text: bool = True,
                 number: int | float | None = None) -> None:
        self.word = word
        self.pos = pos
        self.message = message
        self.text = text
        self.number = number

    def __repr__(self) -> str:
        return f"BareWord({self.word!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BareWord) and other.word == self.word

    def __hash__(self) -> int:
        return hash(("BareWord", self.word))


def finite_or_marker(token: str) -> float | NonFinite:
    """A JSON number too large for a float (``1e400``) is not silently infinity: it is judged like Infinity."""
    value = float(token)
    if math.isinf(value):
        return NonFinite(("-" if token.startswith("-") else "") + "Infinity")
    return value


class DuplicateKey(Signal, ValueError):
    """Raised inside the C decoder for an object that gives a key twice: the lenient scanner then reads it,
    collapsing an exact repeat (with a fix) and marking a conflicting one ambiguous."""


def unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for the C decoders: a dict, or :class:`DuplicateKey` when a key repeats
    (``json`` alone would let the last one win silently)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise DuplicateKey("duplicate key")
    return obj


def same_json(a: Any, b: Any) -> bool:
    """Whether two decoded JSON values are the same value: ``true`` is not ``1``, ``"1"`` is not ``1``;
    ``1`` and ``1.0`` are the same number (JSON has one number type); containers compare member-wise."""
    if a.__class__ is bool or b.__class__ is bool:
        return a.__class__ is b.__class__ and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return bool(a == b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return a.__class__ is b.__class__ and bool(a == b)


#: The C decoder, with NaN/Infinity (and numbers too large for a float) turned into markers, and a
#: repeated key refused (:class:`DuplicateKey`) so the scanner decides it.
STRICT_DECODER: Final = json.JSONDecoder(parse_constant=NonFinite, parse_float=finite_or_marker,
                                         object_pairs_hook=unique_object)
#: The same without the per-float Python hook, which costs more than the decoding itself on a number-heavy
#: answer: for text that cannot hold a number beyond float range (``lexicon.may_overflow`` is false), where
#: it gives exactly what ``STRICT_DECODER`` gives.
PLAIN_DECODER: Final = json.JSONDecoder(parse_constant=NonFinite, object_pairs_hook=unique_object)

WS: Final = re.compile(r"[ \t\r\n]*")
INVISIBLE_SET: Final = frozenset(INVISIBLE)
NUMBER_TOKEN: Final = re.compile(r"-?[0-9][0-9.eE+\-]*")
WORD_RE: Final = re.compile(WORD)
DOUBLE_QUOTED: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
GOOD_ESCAPES: Final = re.compile(r'[^\\]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^\\]*)*', re.S)
SINGLE_QUOTED: Final = re.compile(r"'([^'\\]*(?:\\.[^'\\]*)*)'", re.S)
CONTROL: Final = re.compile(r"[\x00-\x1f]")
SMART_CLOSE: Final = {"\u201c": "\u201d", "\u2018": "\u2019"}
COLON_AHEAD: Final = re.compile(r"[ \t\r\n]*:").match

# Token shapes for the fast paths. Groups are numbered so ``lastindex`` names the token.
_WS_RUN = r"[ \t\r\n]*"
# A double-quoted string with no escapes and no control characters; never ``""`` opening ``"""``.
_DQ = r'"([^"\\\x00-\x1f]*)"(?!")'
_SQ = r"'([^'\\\x00-\x1f]*)'(?!')"  # the same, single-quoted
#: A number is a token of its own only when no letter, digit, ``_``, ``.``, sign or ``$`` runs on from it: ``1_234``,
#: ``1notanumber``, ``57eeeeb1-...`` are one token each, read by the slow path (``Lexer.malformed_number``).
_NUM = rf"({NUMBER})(?![\w.+\-$])"
_WORD = rf"({WORD})"
# A literal at the very end of the text may be cut off ("tru" + "e"?); there it is read as a word, which
# the scanner reports as possibly cut off, on every path alike.
_LITERAL = r"(true|false|null|True|False|None)(?![\w$\-]|\Z)"

#: The tokenizer's fast path: whitespace plus the common tokens in one match; the last group is anything
#: else, for the slow path.
FAST_TOKEN: Final = re.compile(
    rf"{_WS_RUN}(?:{_DQ}|(\{{)|(\[)|(\}})|(\])|(,)|(:)|{_NUM}|(true|false|null)(?![\w$\-]|\Z)|{_SQ}|{_WORD}|(.))",
    re.S,
).match
(T_STR, T_OPEN_OBJ, T_OPEN_ARR, T_CLOSE_OBJ, T_CLOSE_ARR, T_COMMA, T_COLON, T_NUM, T_LIT,
 T_SQ, T_WORD, T_OTHER) = range(1, 13)
#: Parentheses, made only by the slow path: a Python tuple or a parenthesised literal in value position.
T_OPEN_PAREN, T_CLOSE_PAREN = 13, 14

# Whole members and elements in one match - "key": scalar, and scalar, (comma optional), with the quoting
# slips of JavaScript- and Python-style answers - so most of a dirty answer costs one Python step per
# member instead of four.
_SCALAR = rf"(?:{_DQ}|{_SQ}|{_NUM}|{_LITERAL})"
FAST_MEMBER: Final = re.compile(rf"{_WS_RUN}(?:{_DQ}|{_SQ}|{_WORD}){_WS_RUN}:{_WS_RUN}{_SCALAR}{_WS_RUN}(,?)").match
FAST_ELEMENT: Final = re.compile(rf"{_WS_RUN}{_SCALAR}{_WS_RUN}(,?)").match
#: Where the scalar's groups start in a member match and in an element match.
MEMBER_SCALAR: Final = 4
ELEMENT_SCALAR: Final = 1

NO_SCALAR: Final = object()


def fast_scalar(m: re.Match[str], first: int) -> tuple[Any, str]:
    """The scalar in groups ``first``..``first+3`` of a fast member/element match, and its fix kind.

    Returns ``NO_SCALAR`` for a number too long for ``int()``, which the token path then reports.
    """
    string = m.group(first)
    if string is not None:
        return string, ""
    string = m.group(first + 1)
    if string is not None:
        return string, "single_quotes"
    number = m.group(first + 2)
    if number is not None:
        if "." in number or "e" in number or "E" in number:
            return finite_or_marker(number), ""
        try:
            return int(number), ""
        except ValueError:  # more digits than int() allows here
            return NO_SCALAR, ""
    word = m.group(first + 3)
    return ALL_LITERALS[word], "" if word in JSON_LITERALS else "python_literal"


_LENIENT_ESCAPE: Final = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.S)
_SIMPLE_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\",
                          '"': '"', "'": "'"}


def unescape(raw: str) -> str:
    """Decode backslash escapes leniently: known escapes decode, unknown ones stay literal."""
    if "\\" not in raw:
        return raw

    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        if len(esc) == 5:
            return chr(int(esc[1:], 16))
        return _SIMPLE_ESCAPES.get(esc, "\\" + esc)

    return _LENIENT_ESCAPE.sub(one, raw)
