"""The scanner's tokenizer: the next JSON token at a position, undoing lexical slips and recording each.

Split from the scanner's state machine (:mod:`guardrail.parse.scanner`) because reading one token is a job of
its own: a C-speed pattern (``FAST_TOKEN``) takes clean tokens, and the slow path handles what it leaves
(comments, invisible characters, escaped, single-, smart-, backtick- and triple-quoted strings, bare words,
the loose number forms ``.5`` and ``1.``, cut-off numbers, closing fences and tags). :class:`Lexer` also keeps
the bookkeeping every later layer shares: where the scan is (the open containers), the fixes, and the
:class:`Stop` that ends a scan with a status.
"""

from __future__ import annotations

import re
from json import JSONDecodeError
from typing import TYPE_CHECKING, Any, Final, Literal

from guardrail.errors import Signal
from guardrail.parse.lexicon import JSON_LITERALS
from guardrail.parse.report import Fix, json_path
from guardrail.parse.tokens import (
    CONTROL,
    DOUBLE_QUOTED,
    FAST_TOKEN,
    GOOD_ESCAPES,
    INVISIBLE_SET,
    NUMBER_TOKEN,
    SINGLE_QUOTED,
    SMART_CLOSE,
    T_CLOSE_PAREN,
    T_LIT,
    T_NUM,
    T_OPEN_PAREN,
    T_OTHER,
    T_SQ,
    T_STR,
    T_WORD,
    WORD_RE,
    WS,
    NonFinite,
    finite_or_marker,
    scanstring,
    unescape,
)

if TYPE_CHECKING:
    from guardrail.parse.scanner import ScanBudget

__all__ = ["STRING_CUT", "Lexer", "ScanStatus", "Token"]

#: ``.5``, ``-.5``: a number missing its leading zero (``NUMBER_TOKEN`` needs a digit first).
_LEADING_DOT: Final = re.compile(r"-?\.[0-9][0-9eE+\-]*")
#: The loose number forms read as numbers (recorded as ``number_form``): ``.5``, ``-.5``, ``1.``, ``1.e3``.
_LOOSE_NUMBER: Final = re.compile(r"-?(?:\.[0-9]+|(?:0|[1-9][0-9]*)\.)(?:[eE][+\-]?[0-9]+)?")
#: One unquoted token that starts like a number: digits, letters, ``_``, ``$``, ``.``, ``:``, signs (a UUID, a
#: timestamp, a version, ``1_234``).
_DIGIT_TOKEN: Final = re.compile(r"-?[.0-9][\w$.:+\-]*")
#: Dotted numbers that are no number: a version (``1.1.1``).
_VERSION: Final = re.compile(r"[0-9]+(?:\.[0-9]+){2,}")

ScanStatus = Literal["complete", "truncated", "syntax_error"]
#: How every ``truncated`` message for a text that ends inside a string (double, single or smart quotes) ends.
STRING_CUT: Final = "string is closed"
#: (kind, value, end, fix kind or "", start)
Token = tuple[int, Any, int, str, int]


class Stop(Signal):
    """Ends a scan early with a status; caught by :func:`guardrail.parse.scanner.scan`, never leaves it."""

    def __init__(self, status: ScanStatus, pos: int, message: str) -> None:
        self.status: ScanStatus = status
        self.pos = pos
        self.message = message


class Lexer:
    """Tokens of one text, and the bookkeeping of one scan (open containers, fixes, status)."""

    __slots__ = ("budget", "fixes", "n", "stack", "text")

    def __init__(self, text: str, budget: ScanBudget) -> None:
        self.text = text
        self.n = len(text)
        self.fixes: list[Fix] = []
        # Each frame: [container, key-or-None, path to it]; a dict frame is an object, a list an array.
        self.stack: list[list[Any]] = []
        self.budget = budget

    # -- bookkeeping -------------------------------------------------------------------------------
    def location(self, key: str | None = None) -> tuple[str | int, ...]:
        """Where the scan is: the path to the open container (kept in its frame) plus the current slot."""
        if not self.stack:
            return () if key is None else (key,)
        container, current, prefix = self.stack[-1]
        if container.__class__ is list:
            here: tuple[str | int, ...] = (*prefix, len(container))
        else:
            here = prefix if current is None else (*prefix, current)
        return here if key is None else (*here, key)

    def path(self) -> str:
        return json_path(self.location())

    def fix(self, kind: str, before: Any = None, after: Any = None, key: str | None = None) -> None:
        self.fixes.append(Fix(kind, self.location(key), before, after))

    def truncated(self, pos: int, what: str) -> Stop:
        return Stop("truncated", pos, f"the text ends before {what}")

    def syntax(self, pos: int, expected: str) -> Stop:
        found = self.text[pos : pos + 12]
        return Stop("syntax_error", pos, f"expected {expected}, found {found!r}")

    # -- tokens ------------------------------------------------------------------------------------
    def token(self, pos: int) -> Token:
        """The next token at or after ``pos``: (kind, value, end, fix kind or "", start)."""
        m = FAST_TOKEN(self.text, pos)
        if m is None:
            raise self.truncated(self.n, "the JSON value is complete")
        kind = m.lastindex
        if kind == T_STR:
            return T_STR, m.group(1), m.end(), "", m.start(1) - 1
        if kind == T_NUM:
            raw = m.group(T_NUM)
            if "." in raw or "e" in raw or "E" in raw:
                return T_NUM, finite_or_marker(raw), m.end(), "", m.start(T_NUM)
            try:
                return T_NUM, int(raw), m.end(), "", m.start(T_NUM)
            except ValueError:  # more digits than int() allows
                raise self.syntax(m.start(T_NUM), "a number with at most 4300 digits") from None
        if kind == T_LIT:
            return T_LIT, JSON_LITERALS[m.group(T_LIT)], m.end(), "", m.start(T_LIT)
        if kind == T_SQ:
            return T_STR, m.group(T_SQ), m.end(), "single_quotes", m.start(T_SQ) - 1
        if kind == T_WORD:
            return T_WORD, m.group(T_WORD), m.end(), "", m.start(T_WORD)
        if kind != T_OTHER:
            return kind, None, m.end(), "", m.end() - 1  # type: ignore[return-value]
        return self.slow_token(m.start(T_OTHER))

    def slow_token(self, pos: int) -> Token:
        """Everything the fast pattern leaves: comments, invisible characters, escaped or single-quoted
        strings, words, malformed numbers, closing fences and tags."""
        text, n = self.text, self.n
        skipped = self.skip(pos)
        if skipped != pos:
            return self.token(skipped)
        if text.startswith(("~~~", "</"), pos):
            raise self.truncated(pos, "the JSON value is complete")  # a closing fence or tag ends the text
        c = text[pos]
        if c in "\"'\u201c\u2018`":
            value, end, fix_kind = self.string(pos)
            return T_STR, value, end, fix_kind, pos
        if c in "()":
            return (T_OPEN_PAREN if c == "(" else T_CLOSE_PAREN), None, pos + 1, "", pos
        if c == "." or (c == "-" and text[pos + 1 : pos + 2] == "."):
            return self.malformed_number(pos)
        if c == "-" and not "0" <= text[pos + 1 : pos + 2] <= "9":
            if text.startswith("-Infinity", pos):
                return T_NUM, NonFinite("-Infinity"), pos + 9, "", pos
            if self.stack and n - pos < 9 and "-Infinity".startswith(text[pos:]):
                raise self.truncated(n, "a number is complete")
            raise self.syntax(pos, "a JSON number")
        if c == "-" or "0" <= c <= "9":
            return self.malformed_number(pos)
        m = WORD_RE.match(text, pos)
        if m is None:
            raise self.syntax(pos, "a JSON value, key or punctuation")
        return T_WORD, m.group(0), m.end(), "", pos

    def skip(self, pos: int) -> int:
        """Skip whitespace, invisible characters and comments (recording each); return the next position."""
        text, n = self.text, self.n
        while True:
            pos = WS.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                return pos
            c = text[pos]
            if c in INVISIBLE_SET:
                start = pos
                while pos < n and text[pos] in INVISIBLE_SET:
                    pos += 1
                self.fix("invisible_char", text[start:pos], "")
            elif c == "/" and text.startswith("//", pos):
                nl = text.find("\n", pos)
                end = n if nl < 0 else nl
                self.fix("comment", text[pos:end][:80], "")
                pos = end
            elif c == "/" and text.startswith("/*", pos):
                close = text.find("*/", pos + 2)
                end = n if close < 0 else close + 2
                self.fix("comment", text[pos:end][:80], "")
                pos = end
            else:
                return pos

    def string(self, pos: int) -> tuple[str, int, str]:
        """A string the fast pattern did not take: escapes, raw control characters, other quotes."""
        text = self.text
        quote = text[pos]
        if quote in "\"'`" and (quote == "`" or text.startswith(quote * 3, pos)):
            return self.other_quotes(pos, quote)
        if quote == '"':
            if self.budget.fast_strings:
                # One C call for a string with escapes. Its failure costs O(position) (the error
                # computes a line number), so after one failure this scan takes the careful path.
                try:
                    value, end = scanstring(text, pos + 1, True)
                    return value, end, ""
                except JSONDecodeError:
                    self.budget.fast_strings = False
            m = DOUBLE_QUOTED.match(text, pos)
            if m is None:
                raise self.truncated(self.n, "a string is closed")
            end = m.end()
            if GOOD_ESCAPES.fullmatch(text, pos + 1, end - 1) is None:
                return unescape(text[pos + 1 : end - 1]), end, "invalid_escape"
            try:
                value, end = scanstring(text, pos + 1, False)
            except JSONDecodeError:  # pragma: no cover - the two patterns above rule every failure out
                return unescape(text[pos + 1 : end - 1]), end, "invalid_escape"
            return value, end, "control_char_in_string" if CONTROL.search(text, pos, end) else ""
        if quote == "'":
            m = SINGLE_QUOTED.match(text, pos)
            if m is None:
                raise self.truncated(self.n, "a single-quoted string is closed")
            return unescape(m.group(1)), m.end(), "single_quotes"
        close = SMART_CLOSE[quote]
        end = text.find(close, pos + 1)
        if end < 0:
            raise self.truncated(self.n, "a quoted string is closed")
        if text.find("\\", pos + 1, end) >= 0:
            # Smart quotes are a typographic mangle of JSON quotes (then ``\n`` is a newline) or prose quotes
            # (then it is a backslash and an ``n``, as in a Windows path): two readings.
            raise Stop("syntax_error", pos, "a backslash inside smart quotes (an escape, or a character?)")
        return text[pos + 1 : end], end + 1, "smart_quotes"

    def other_quotes(self, pos: int, quote: str) -> tuple[str, int, str]:
        """A string in backticks, triple backticks or triple quotes: read raw up to the same marker.

        Not JSON quotes, so an unclosed one is a syntax error at its opener, never "truncated": where the
        string was meant to end cannot be told.
        """
        marker = quote * 3 if self.text.startswith(quote * 3, pos) else quote
        close = self.text.find(marker, pos + len(marker))
        if close < 0 or (marker == "`" and "\n" in self.text[pos:close]):
            raise Stop("syntax_error", pos, f"a string opened with {marker} that is never closed")
        kind = "backtick_quotes" if quote == "`" else "triple_quotes"
        return self.text[pos + len(marker) : close], close + len(marker), kind

    def malformed_number(self, pos: int) -> Token:
        """A number token the fast pattern refused: cut off at the end, ``.5``/``1.`` (read, recorded), or
        not a JSON number."""
        m = NUMBER_TOKEN.match(self.text, pos)
        if m is None:  # ".5" or "-.5"
            m = _LEADING_DOT.match(self.text, pos)
            if m is None:
                raise self.syntax(pos, "a JSON number")
        if m.end() >= self.n and self.stack:
            raise self.truncated(self.n, "a number is complete")
        raw = m.group(0)
        loose = _LOOSE_NUMBER.fullmatch(raw)
        token = _DIGIT_TOKEN.match(self.text, pos).group()  # type: ignore[union-attr]
        if loose is not None and len(token) == len(raw) and not "0" <= self.text[m.end() : m.end() + 1] <= "9":
            fixed = raw.replace("-.", "-0.") if raw.startswith("-.") else "0" + raw if raw.startswith(".") else raw
            fixed = fixed + "0" if fixed.endswith(".") else fixed
            return T_NUM, finite_or_marker(fixed), m.end(), "number_form", pos
        if len(token) > len(raw) or _VERSION.fullmatch(token):
            # One token that runs on past any number (``57eeeeb1-...``, ``1notanumber``, ``1_234``, ``1.1.1``):
            # a word, which the contract may read (``Assembler.word_value``).
            return T_WORD, token, pos + len(token), "", pos
        raise self.syntax(pos, "a JSON number")

