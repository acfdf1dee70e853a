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

This module is the state machine; reading tokens (and the lexical repairs) is
:mod:`guardrail.parse.lexer`'s, storing values (and the look-back repairs) :mod:`guardrail.parse.assemble`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from json import JSONDecoder
from typing import Any, Final

from guardrail.errors import InputLimitError
from guardrail.parse.assemble import Assembler
from guardrail.parse.lexer import ScanStatus, Stop, Token
from guardrail.parse.report import Fix
from guardrail.parse.tokens import (
    COLON_AHEAD,
    FAST_ELEMENT,
    FAST_MEMBER,
    INVISIBLE_SET,
    STRICT_DECODER,
    T_CLOSE_ARR,
    T_CLOSE_OBJ,
    T_CLOSE_PAREN,
    T_COLON,
    T_COMMA,
    T_LIT,
    T_NUM,
    T_OPEN_ARR,
    T_OPEN_OBJ,
    T_OPEN_PAREN,
    T_STR,
    T_WORD,
    WS,
    BareWord,
)

#: Failed C-decoder attempts allowed per search (each costs O(position) for the error's line number).
STRICT_ATTEMPTS: Final = 4


@dataclass(slots=True)
class ScanBudget:
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
    #: Characters the inner-quote repair may read looking for where a string ends (``Assembler.inner_quotes``).
    quote_chars: int = 1 << 30
    #: The C decoder the search uses: ``STRICT_DECODER``, or ``PLAIN_DECODER`` (same values, faster) when
    #: the text cannot hold a number beyond float range.
    decoder: JSONDecoder = STRICT_DECODER


_OPENERS: Final = frozenset({T_OPEN_OBJ, T_OPEN_ARR})
_CLOSERS: Final = frozenset({T_CLOSE_OBJ, T_CLOSE_ARR})
_KEYLIKE: Final = frozenset({T_STR, T_WORD, T_NUM, T_LIT})
_SCALARS: Final = frozenset({T_STR, T_NUM, T_LIT, T_WORD})


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
    #: For a complete value: the unquoted words it holds as member values (positions in the scanned text).
    bare_words: list[BareWord] = field(default_factory=list)


# Parser states.
_VALUE: Final = 0  # a value is expected (root, after ':' or inside an array)
_KEY: Final = 1  # a key or '}' is expected
_COLON: Final = 2  # ':' is expected
_AFTER: Final = 3  # ',' or a closer is expected


def scan(text: str, pos: int, *, max_depth: int, depth: int = 0, budget: ScanBudget | None = None,
         bare_elements: bool = False) -> ScanResult:
    """Read one JSON value from ``text`` starting at ``pos``.

    Raises :class:`InputLimitError` when nesting exceeds ``max_depth`` (a limit, not a candidate problem);
    ``depth`` is how deep the value already sits (JSON decoded from inside a string of a deeper value);
    ``budget`` is shared by the scans of one search (a fresh one if not given).
    ``bare_elements`` lets unquoted words stand as array elements too (a whole reply ``[a, b]``; in prose a
    bracketed remark reads the same, so the opener search never asks for it).
    Otherwise always returns a :class:`ScanResult`; ``end`` is just past the value, or the position of the
    problem for ``truncated``/``syntax_error``.
    """
    scanner = Scanner(text, max_depth, depth, budget or ScanBudget())
    scanner.bare_elements = bare_elements
    try:
        value, end = scanner.run(pos)
    except Stop as stop:
        return ScanResult(stop.status, None, stop.pos, scanner.fixes, stop.message, scanner.path(),
                          scanner.tokens)
    return ScanResult("complete", value, end, scanner.fixes, "", "$", scanner.tokens,
                      scanner.conflicts[0] if scanner.conflicts else "", scanner.bare_words)

class Scanner(Assembler):
    """One scan: an explicit stack of open containers fed by a tokenizer with a C-speed fast path.

    The tokenizer is :class:`~guardrail.parse.lexer.Lexer`'s, storing values and the look-back repairs are
    :class:`~guardrail.parse.assemble.Assembler`'s; this class is the state machine that drives them.
    """

    __slots__ = ("base", "max_depth", "parens")

    def __init__(self, text: str, max_depth: int, base: int, budget: ScanBudget) -> None:
        super().__init__(text, budget)
        self.base = base
        self.max_depth = max_depth
        #: The depths (stack lengths) of the open containers that opened with ``(``: Python tuples.
        self.parens: list[int] = []

    def other_kind(self, previous: Any, kind: int, value: Any, end: int) -> bool:
        """Whether a scalar right after the scalar ``previous`` in an array, on the same line, is the next
        element with its comma missing: it is of another kind (a string, a number, a literal: ``["a" 2]``) and
        a separator or the closer follows it. Two strings (``["a" "b"]``: Python joins them) or two numbers
        (``[1 2]``: digit groups) have a second reading; a scalar followed by more (``["size "2" in"]``) may be
        inside a string whose quotes were not escaped."""
        mine = _KIND_OF_TOKEN.get(kind, "")
        return bool(mine) and mine != _kind_of(previous) and _kind_of(previous) != "" \
            and _ELEMENT_ENDS(self.text, end) is not None

    def close_paren(self, unwrap: bool) -> bool:
        """Close the innermost ``(``: a Python tuple is a JSON array (``(1, 2)``, ``(1,)``, ``()``); one value
        in parentheses without a comma is that value (``(1)``). True when it was the root."""
        self.parens.pop()
        closed = self.stack.pop()[0]
        value = closed[0] if unwrap else closed
        self.fix("python_tuple", "(...)", "[...]" if not unwrap else value if not isinstance(value, (dict, list))
                 else "...")
        if not self.stack:
            self.root = value
            return True
        self.attach(value)
        return False

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
        carried: Token | None = None
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
                if kind == T_CLOSE_PAREN or (self.parens and self.parens[-1] == len(stack) and kind in _CLOSERS):
                    if kind != T_CLOSE_PAREN or not self.parens or self.parens[-1] != len(stack):
                        raise self.syntax(start, "')' (this closer does not match its '(')" if kind != T_CLOSE_PAREN
                                          else "a closer that matches its opener, found ')'")
                    pos = end
                    if self.close_paren(unwrap=len(frame[0]) == 1):
                        return self.root, end
                    last_was_container = True
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
                        kind in _SCALARS and self.newline_before(start)) or (  # one element a line
                        not last_was_container and self.other_kind(frame[0][-1], kind, value, end))
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
                elif kind in _KEYLIKE and not (kind == T_WORD and text[start] in _NUMBER_START):
                    key = text[start:end]
                    self.fix("unquoted_key", key, f'"{key}"', key=key)
                elif kind == T_COMMA and not stack[-1][0] and not after_comma:
                    self.fix("leading_comma", ",", "")  # {, "a": 1}: nothing before it, one reading
                    pos, after_comma = end, True
                    continue
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
            if kind == T_OPEN_PAREN:
                if len(stack) + self.base >= self.max_depth:
                    raise InputLimitError(
                        f"The JSON is nested more than {self.max_depth} levels deep; reply with a flatter value.",
                        limit="max_depth", value=self.max_depth, text=text)
                stack.append([[], None, self.location()])
                self.parens.append(len(stack))
                pos, after_comma = end, False
                continue
            if kind == T_CLOSE_PAREN and self.parens and self.parens[-1] == len(stack) \
                    and (after_comma or not stack[-1][0]):
                pos = end  # (1,) or (): a tuple
                if self.close_paren(unwrap=False):
                    return self.root, end
                state, last_was_container = _AFTER, True
                continue
            if kind == T_CLOSE_ARR and stack and stack[-1][0].__class__ is list \
                    and not (self.parens and self.parens[-1] == len(stack)):
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
                try:
                    value = self.word_value(value, start, end)
                except Stop:
                    if text[start] in _NUMBER_START:
                        self.tokens += 1  # a number began here: a value, not an opener in prose
                    raise
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


_NUMBER_START: Final = frozenset("-.0123456789")
_ELEMENT_ENDS: Final = re.compile(r"[ \t]*[,\])]").match
#: The kind of JSON scalar a value or a token is: string, number or literal (else "").
_KIND_OF_TOKEN: Final = {T_STR: "s", T_NUM: "n", T_LIT: "l"}


def _kind_of(value: Any) -> str:
    cls = value.__class__
    return "s" if cls is str else "l" if cls is bool or value is None else "n" if cls in (int, float) else ""


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
