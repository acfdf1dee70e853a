"""A lenient JSON scanner: reads one JSON value from a position, undoing formatting slips only.

It is an explicit-stack state machine (no recursion), so depth is bounded by ``max_depth`` and checked
before each container is opened; every step moves forward, so time is linear in the text it reads. It
repairs what cannot change meaning and records each repair as a :class:`Fix`:

- trailing commas, missing commas between object members (and between array elements next to a
  container or on separate lines), single-quoted, smart-quoted, backtick-quoted and triple-quoted strings,
  unquoted keys, ``//`` and ``/* */`` comments, Python literals ``True``/``False``/``None``, the number
  forms ``.5`` and ``1.``, raw control characters inside strings, invalid escapes (kept literally),
  unquoted inner quotes in a string value when exactly one reading exists (``"say "hi" now"``), a
  doubled closing bracket (``]]`` where one ``]`` closes the array), and invisible characters (BOM,
  zero-width) between tokens;
- a key given twice with the same JSON value collapses to one (fix ``duplicate_key``); with different
  values the value is ambiguous: the result carries ``conflict`` (the key's path) and is never used.

A closer that does not match its opener (``["a"}``) is a ``syntax_error`` at its position: it could be a
typo for the right closer or a stray character, and the two readings differ.

It never closes what the text left open: reaching the end of the text (or a closing fence or ``</tag>``)
inside a value reports ``truncated``. ``NaN``/``Infinity`` are returned as :class:`NonFinite` markers for
the coercion stage to judge against the contract. Anything else it cannot read is a ``syntax_error`` at a
position, which lets the caller resume the candidate search after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from json import JSONDecodeError, JSONDecoder
from typing import Any, Final, Literal

from guardrail.errors import InputLimitError
from guardrail.parse.lexicon import JSON_LITERALS, NONFINITE_WORDS, PYTHON_LITERALS
from guardrail.parse.report import Fix, json_path
from guardrail.parse.tokens import (
    COLON_AHEAD,
    CONTROL,
    DOUBLE_QUOTED,
    ELEMENT_SCALAR,
    FAST_ELEMENT,
    FAST_MEMBER,
    FAST_TOKEN,
    GOOD_ESCAPES,
    INVISIBLE_SET,
    MEMBER_SCALAR,
    NO_SCALAR,
    NUMBER_TOKEN,
    SINGLE_QUOTED,
    SMART_CLOSE,
    STRICT_DECODER,
    T_CLOSE_ARR,
    T_CLOSE_OBJ,
    T_COLON,
    T_COMMA,
    T_LIT,
    T_NUM,
    T_OPEN_ARR,
    T_OPEN_OBJ,
    T_OTHER,
    T_SQ,
    T_STR,
    T_WORD,
    WORD_RE,
    WS,
    NonFinite,
    fast_scalar,
    finite_or_marker,
    same_json,
    scanstring,
    unescape,
)

#: ``.5``, ``-.5``: a number missing its leading zero (``NUMBER_TOKEN`` needs a digit first).
_LEADING_DOT: Final = re.compile(r"-?\.[0-9][0-9eE+\-]*")
#: The loose number forms read as numbers (recorded as ``number_form``): ``.5``, ``-.5``, ``1.``, ``1.e3``.
_LOOSE_NUMBER: Final = re.compile(r"-?(?:\.[0-9]+|(?:0|[1-9][0-9]*)\.)(?:[eE][+\-]?[0-9]+)?")
#: The quote that ends a string value whose inner quotes were not escaped: the first one followed (on the
#: same line) by a separator or closer.
_STRUCTURAL_QUOTE: Final = re.compile(r'"(?=[ \t]*[,}\]])')

#: Failed C-decoder attempts allowed per search (each costs O(position) for the error's line number).
STRICT_ATTEMPTS: Final = 4

ScanStatus = Literal["complete", "truncated", "syntax_error"]


@dataclass(slots=True)
class Budget:
    """What one search (all scans of one text) may still spend on things whose cost is not local.

    A failed C decode raises an error that counts lines from the start of the text: O(position). Letting
    every scan fail a few times would make a text of many small attempts quadratic, so the failures are
    counted for the whole search. ``attempts`` bounds how many values (or attempts at one) the search
    reads at all (``Limits.max_candidates``); ``patch_chars`` how much text C-speed patching may copy.
    """

    attempts: int = 1 << 30
    strict_failures: int = STRICT_ATTEMPTS
    fast_strings: bool = True
    patch_chars: int = 1 << 20
    #: Characters the bracket balance of broken values may read (``candidates.balanced_end``).
    balance_chars: int = 1 << 30
    #: The C decoder the search uses: ``STRICT_DECODER``, or ``PLAIN_DECODER`` (same values, faster) when
    #: the text cannot hold a number beyond float range.
    decoder: JSONDecoder = STRICT_DECODER

_OPENERS: Final = frozenset({T_OPEN_OBJ, T_OPEN_ARR})
_CLOSERS: Final = frozenset({T_CLOSE_OBJ, T_CLOSE_ARR})
_KEYLIKE: Final = frozenset({T_STR, T_WORD, T_NUM, T_LIT})
_SCALARS: Final = frozenset({T_STR, T_NUM, T_LIT, T_WORD})
#: (kind, value, end, fix kind or "", start)
_Token = tuple[int, Any, int, str, int]


@dataclass(slots=True)
class ScanResult:
    """What one scan found: a complete value, a truncated one, or a syntax error at ``end``."""

    status: ScanStatus
    value: Any
    end: int
    fixes: list[Fix] = field(default_factory=list)
    message: str = ""
    path: str = "$"
    tokens: int = 0
    #: For a complete value: the path of a key given twice with different values ("" if none).
    conflict: str = ""


class _Stop(Exception):
    """Internal: ends a scan early with a status; never leaves this module."""

    def __init__(self, status: ScanStatus, pos: int, message: str) -> None:
        self.status: ScanStatus = status
        self.pos = pos
        self.message = message


# Parser states.
_VALUE: Final = 0  # a value is expected (root, after ':' or inside an array)
_KEY: Final = 1  # a key or '}' is expected
_COLON: Final = 2  # ':' is expected
_AFTER: Final = 3  # ',' or a closer is expected


def scan(text: str, pos: int, *, max_depth: int, depth: int = 0, budget: Budget | None = None) -> ScanResult:
    """Read one JSON value from ``text`` starting at ``pos``.

    Raises :class:`InputLimitError` when nesting exceeds ``max_depth`` (a limit, not a candidate problem);
    ``depth`` is how deep the value already sits (JSON decoded from inside a string of a deeper value);
    ``budget`` is shared by the scans of one search (a fresh one if not given).
    Otherwise always returns a :class:`ScanResult`; ``end`` is just past the value, or the position of the
    problem for ``truncated``/``syntax_error``.
    """
    scanner = Scanner(text, max_depth, depth, budget or Budget())
    try:
        value, end = scanner.run(pos)
    except _Stop as stop:
        return ScanResult(stop.status, None, stop.pos, scanner.fixes, stop.message, scanner.path(),
                          scanner.tokens)
    return ScanResult("complete", value, end, scanner.fixes, "", "$", scanner.tokens,
                      scanner.conflicts[0] if scanner.conflicts else "")


class Scanner:
    """One scan: an explicit stack of open containers fed by a tokenizer with a C-speed fast path."""

    __slots__ = ("base", "budget", "conflicts", "fixes", "last_key", "last_str", "max_depth", "n", "root", "stack",
                 "text", "tokens")

    def __init__(self, text: str, max_depth: int, base: int, budget: Budget) -> None:
        self.base = base
        self.text = text
        self.n = len(text)
        self.max_depth = max_depth
        self.fixes: list[Fix] = []
        # Each frame: [container, key-or-None, path to it]; a dict frame is an object, a list an array.
        self.stack: list[list[Any]] = []
        self.tokens = 0
        self.budget = budget
        self.root: Any = None
        self.conflicts: list[str] = []
        #: Where the last scalar read began, if it was a double-quoted string value (else -1), and the
        #: key it was stored under: what an inner-quote repair rewrites.
        self.last_str = -1
        self.last_key: str | None = None

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

    def truncated(self, pos: int, what: str) -> _Stop:
        return _Stop("truncated", pos, f"the text ends before {what}")

    def syntax(self, pos: int, expected: str) -> _Stop:
        found = self.text[pos : pos + 12]
        return _Stop("syntax_error", pos, f"expected {expected}, found {found!r}")

    # -- tokens ------------------------------------------------------------------------------------
    def token(self, pos: int) -> _Token:
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

    def slow_token(self, pos: int) -> _Token:
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
        return text[pos + 1 : end], end + 1, "smart_quotes"

    def other_quotes(self, pos: int, quote: str) -> tuple[str, int, str]:
        """A string in backticks, triple backticks or triple quotes: read raw up to the same marker.

        Not JSON quotes, so an unclosed one is a syntax error at its opener, never "truncated": where the
        string was meant to end cannot be told.
        """
        marker = quote * 3 if self.text.startswith(quote * 3, pos) else quote
        close = self.text.find(marker, pos + len(marker))
        if close < 0 or (marker == "`" and "\n" in self.text[pos:close]):
            raise _Stop("syntax_error", pos, f"a string opened with {marker} that is never closed")
        kind = "backtick_quotes" if quote == "`" else "triple_quotes"
        return self.text[pos + len(marker) : close], close + len(marker), kind

    def malformed_number(self, pos: int) -> _Token:
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
        if loose is not None and not "0" <= self.text[m.end() : m.end() + 1] <= "9":
            fixed = raw.replace("-.", "-0.") if raw.startswith("-.") else "0" + raw if raw.startswith(".") else raw
            fixed = fixed + "0" if fixed.endswith(".") else fixed
            return T_NUM, finite_or_marker(fixed), m.end(), "number_form", pos
        raise self.syntax(pos, "a JSON number")

    def try_strict(self, pos: int) -> tuple[Any, int] | None:
        """Read a nested container with the C decoder when it is clean (most of a mostly-clean answer).

        A failure costs O(position) inside ``json`` (its error computes a line number), so only
        ``STRICT_ATTEMPTS`` failures are allowed per search: the search stays linear.
        """
        try:
            value, end = self.budget.decoder.raw_decode(self.text, pos)
        except (ValueError, RecursionError):
            self.budget.strict_failures -= 1
            return None
        room = self.max_depth - self.base - len(self.stack)
        if self.text.count("{", pos, end) + self.text.count("[", pos, end) > room:
            self.budget.strict_failures = 0  # too deep: let the explicit stack meet the depth limit
            return None
            return None
        return value, end

    # -- the machine -------------------------------------------------------------------------------
    def run(self, pos: int) -> tuple[Any, int]:
        text, stack, token = self.text, self.stack, self.token
        state = _VALUE
        after_comma = False
        last_was_container = False
        carried: _Token | None = None
        while True:
            if carried is None:
                if state == _COLON:
                    # Only a colon (perhaps after a comment) makes the word or string before it a key;
                    # anything else means it was prose, whatever follows ("{name "Al..." is not cut off).
                    colon = COLON_AHEAD(text, pos)
                    if colon is not None:
                        self.tokens += 1  # a key counts once its colon shows it was one
                        pos, state = colon.end(), _VALUE
                        continue
                    after = WS.match(text, pos).end()  # type: ignore[union-attr]
                    if after < self.n and text[after] != "/" and text[after] not in INVISIBLE_SET:
                        raise self.syntax(after, "':'")
                # Whole clean-or-quoting-slipped members and elements first: one regex, no token step.
                if state == _KEY:
                    m = FAST_MEMBER(text, pos)
                elif state == _VALUE and stack and stack[-1][0].__class__ is list:
                    m = FAST_ELEMENT(text, pos)
                else:
                    m = None
                if m is not None and self.take(m, state == _KEY):
                    pos = m.end()
                    # The match ends with its optional comma group; nothing else in it can end with ",".
                    if text[pos - 1] == ",":
                        after_comma = True
                    else:
                        state = _AFTER
                    last_was_container = False
                    continue
                kind, value, end, fix_kind, start = token(pos)
            else:
                (kind, value, end, fix_kind, start), carried = carried, None

            if state == _AFTER:
                frame = stack[-1]
                is_obj = frame[0].__class__ is dict
                if kind == T_COMMA:
                    pos, after_comma = end, True
                    state = _KEY if is_obj else _VALUE
                    continue
                if kind in _CLOSERS:
                    if (kind == T_CLOSE_OBJ) != is_obj:
                        if not self.doubled(start):
                            raise self.syntax(start, "'}' (this closer does not match its '{')" if is_obj
                                              else "']' (this closer does not match its '[')")
                        self.fix("stray_closer", text[start], "")
                        pos = end
                        continue
                    pos = end
                    if self.close():
                        return self.root, end
                    last_was_container = True
                    continue
                if is_obj:
                    missing_comma = kind in _KEYLIKE and COLON_AHEAD(text, end) is not None
                else:
                    missing_comma = kind in _OPENERS or (last_was_container and kind == T_STR) or (
                        kind in _SCALARS and self.newline_before(start))  # one element a line
                if not missing_comma:
                    if not last_was_container and self.last_str >= 0 and kind != T_STR:
                        repaired = self.inner_quotes(pos)
                        if repaired >= 0:
                            pos = repaired
                            continue
                    raise self.syntax(start, "',' or '}'" if is_obj else "',' or ']'")
                self.fix("missing_comma", None, ",")
                state, after_comma = (_KEY if is_obj else _VALUE), False
                carried = (kind, value, end, fix_kind, start)
                continue

            if state == _KEY:
                if kind == T_CLOSE_OBJ:
                    if after_comma:
                        self.fix("trailing_comma", ",", "")
                    pos = end
                    if self.close():
                        return self.root, end
                    state, last_was_container = _AFTER, True
                    continue
                if kind == T_STR:
                    key = value
                    if fix_kind:
                        self.fix(fix_kind, text[start:end][:80], key[:80], key=key)
                elif kind in _KEYLIKE:
                    key = text[start:end]
                    self.fix("unquoted_key", key, f'"{key}"', key=key)
                else:
                    raise self.syntax(start, "a key or '}'")
                stack[-1][1] = key
                pos, state = end, _COLON
                continue

            if state == _COLON:
                if kind != T_COLON:
                    raise self.syntax(start, "':'")
                self.tokens += 1  # a key counts once its colon shows it was one ("{see note" is prose)
                pos, state = end, _VALUE
                continue

            # state == _VALUE
            if kind in _OPENERS:
                if stack and self.budget.strict_failures > 0:
                    nested = self.try_strict(start)
                    if nested is not None:
                        value, pos = nested
                        if not self.tokens and _holds_token(value):
                            self.tokens = 1  # only keys and scalars count, as when read token by token
                        self.attach(value)
                        state, last_was_container = _AFTER, True
                        continue
                if len(stack) + self.base >= self.max_depth:
                    raise InputLimitError(
                        f"The JSON is nested more than {self.max_depth} levels deep; reply with a flatter value.",
                        limit="max_depth", value=self.max_depth, text=text)
                stack.append([{} if kind == T_OPEN_OBJ else [], None, self.location()])
                pos, after_comma = end, False
                state = _KEY if kind == T_OPEN_OBJ else _VALUE
                continue
            if kind == T_CLOSE_ARR and stack and stack[-1][0].__class__ is list:
                if after_comma:
                    self.fix("trailing_comma", ",", "")
                elif stack[-1][0]:
                    raise self.syntax(start, "a value")
                pos = end
                if self.close():
                    return self.root, end
                state, last_was_container = _AFTER, True
                continue
            if kind == T_STR:
                if fix_kind:
                    self.fix(fix_kind, text[start:end][:80], value[:80])
            elif kind == T_WORD:
                value = self.word_value(value, start, end)
            elif kind == T_NUM:
                if fix_kind:
                    self.fix(fix_kind, text[start:end], value)
            elif kind != T_LIT:
                raise self.syntax(start, "a value (string, number, object, array, true, false or null)")
            self.tokens += 1
            if not stack:
                return value, end
            self.attach(value)
            self.last_str = start if kind == T_STR and not fix_kind and text[start] == '"' else -1
            pos, state, last_was_container = end, _AFTER, False

    def take(self, m: re.Match[str], is_member: bool) -> bool:
        """Store a whole member (``FAST_MEMBER``) or element (``FAST_ELEMENT``), recording its slips.

        False (and nothing stored) for a number too long for ``int()``, which the token path reports.
        The hottest step of a dirty answer: groups are read once (``groups()``), and a clean
        double-quoted string value (the common case) skips :func:`fast_scalar`.
        """
        first = MEMBER_SCALAR if is_member else ELEMENT_SCALAR  # double-quoted, single-quoted, number, literal
        groups = m.groups()
        string = groups[first - 1]
        if string is not None:
            value, value_fix = string, ""
        else:
            value, value_fix = fast_scalar(m, first)
            if value is NO_SCALAR:
                return False
        if is_member:
            double, single, bare = groups[0], groups[1], groups[2]
            key = double if double is not None else single if single is not None else bare
            if single is not None:
                self.fix("single_quotes", f"'{single}'"[:80], single[:80], key=key)
            elif bare is not None:
                self.fix("unquoted_key", bare, f'"{bare}"', key=key)
            self.stack[-1][1] = key
            self.tokens += 2
        else:
            self.tokens += 1
        if value_fix:
            raw = f"'{value}'" if value_fix == "single_quotes" else groups[first + 2]
            self.fix(value_fix, raw[:80], value[:80] if isinstance(value, str) else value)
        self.attach(value)
        self.last_str = m.start(first) - 1 if string is not None else -1
        return True

    def word_value(self, word: str, start: int, end: int) -> Any:
        """A bare word in value position: a Python literal, NaN/Infinity, a cut-off literal, or an error."""
        if end >= self.n and self.stack:
            raise self.truncated(self.n, "a literal is complete")
        if word in JSON_LITERALS:  # a root literal ending the text
            return JSON_LITERALS[word]
        if word in PYTHON_LITERALS:
            self.fix("python_literal", word, PYTHON_LITERALS[word])
            return PYTHON_LITERALS[word]
        if word in NONFINITE_WORDS:
            return NonFinite(word)
        raise self.syntax(start, "a value (string, number, object, array, true, false or null)")

    def close(self) -> bool:
        """Close the innermost container: attach it to its parent, or keep it as ``root`` (True) if last."""
        closed = self.stack.pop()[0]
        if not self.stack:
            self.root = closed
            return True
        self.attach(closed)
        return False

    def attach(self, value: Any) -> None:
        frame = self.stack[-1]
        container = frame[0]
        if container.__class__ is list:
            container.append(value)
            return
        key = frame[1]
        self.last_key = key
        if key in container:
            if same_json(container[key], value):
                self.fix("duplicate_key", container[key], value)
                frame[1] = None
                return  # an exact repeat: one value, the first spelling kept
            self.conflicts.append(self.path())
        container[key] = value
        frame[1] = None

    def newline_before(self, pos: int) -> bool:
        """Whether the whitespace just before ``pos`` holds a line break (elements one a line)."""
        before = pos - 1
        while before >= 0 and self.text[before] in " \t\r\n":
            if self.text[before] == "\n":
                return True
            before -= 1
        return False

    def doubled(self, pos: int) -> bool:
        """Whether the closer at ``pos`` repeats the closer just before it (``]]``, ``}}``): a doubled
        closer is a stray character; any other mismatched closer could be a typo for the right one."""
        before = pos - 1
        while before >= 0 and self.text[before] in " \t\r\n":
            before -= 1
        return before >= 0 and self.text[before] == self.text[pos]

    def inner_quotes(self, pos: int) -> int:
        """Re-read the string value that began at ``last_str`` when its inner quotes were not escaped.

        ``{"note": "say "hi" to her"}``: the string ended early and a bare word follows (a string would be
        another element: ``["a" "b"]`` has two readings and is refused). The string then runs to the first
        quote followed (on the same line) by a separator or closer, and its inner quotes must pair up; a
        quote before a separator always ends a string here, so exactly one reading exists. Returns the
        position after the new closing quote, or -1 (refused).
        """
        text, open_at = self.text, self.last_str
        m = _STRUCTURAL_QUOTE.search(text, pos)
        if m is None or "\n" in text[open_at:m.start()] or "\\" in text[open_at:m.start()]:
            return -1
        value = text[open_at + 1 : m.start()]
        if value.count('"') % 2:
            return -1  # an odd number of inner quotes: the string could end at another one
        container = self.stack[-1][0]
        if container.__class__ is list:
            container[-1] = value
        else:
            container[self.last_key] = value
        self.fix("inner_quotes", text[open_at : m.end()][:80], value[:80])
        self.last_str = -1
        return m.end()




def _holds_token(value: Any) -> bool:
    """Whether a decoded container holds a key or a scalar anywhere (``[[], {}]`` holds none)."""
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if node:
                return True
        elif isinstance(node, list):
            pending.extend(node)
        else:
            return True
    return False
