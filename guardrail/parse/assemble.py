"""Storing what the scanner reads into the open containers, and the repairs that need what was stored.

Split from the scanner's state machine (:mod:`guardrail.parse.scanner`): :class:`Assembler` attaches values
(a key given twice with the same value collapses to one, fix ``duplicate_key``; with different values the path
is kept as a conflict), stores whole members and elements the fast patterns matched, reads bare words in value
position (Python literals, ``NaN``/``Infinity``), and makes the look-back repairs: a missing comma between
elements on separate lines, a doubled closer, unescaped inner quotes in a string value.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Final

from guardrail.parse.lexer import Lexer
from guardrail.parse.lexicon import JSON_LITERALS, NONFINITE_WORDS, PYTHON_LITERALS
from guardrail.parse.report import Fix
from guardrail.parse.tokens import (
    ELEMENT_SCALAR,
    MEMBER_SCALAR,
    NO_SCALAR,
    BareWord,
    NonFinite,
    fast_scalar,
    same_json,
)

if TYPE_CHECKING:
    from guardrail.parse.scanner import ScanBudget

__all__ = ["Assembler"]

#: The quote that ends a string value whose inner quotes were not escaped: the first one followed (on the
#: same line) by a separator or closer.
_STRUCTURAL_QUOTE: Final = re.compile(r'"(?=[ \t]*[,}\]])')
#: Structure that never lies inside a string an inner-quote repair reads: a key (a quote, then its colon; or a
#: comma, then an unquoted word and a colon), a closer followed by a separator (``],"good_one"``), or a
#: comma then a whole string at the end (``"x" y, "z"``: the element ``"z"``). A reading that swallows any
#: of them swallows data.
_SWALLOWED: Final = re.compile(r'["\'][ \t]*:|[\]}][ \t]*[,:\]}]|,[ \t]*[A-Za-z_$][\w$\-]*[ \t]*:|,[ \t]*"[^"]*\Z')
#: What may follow a member's value for that member to end there: a comma, the closing brace, or the next
#: member's key (a quoted one, or an unquoted one on a new line) with its colon.
_MEMBER_ENDS: Final = re.compile(
    r"[ \t\r\n]*(?:[,}]|\"[^\"\\\n]*\"[ \t]*:|'[^'\\\n]*'[ \t]*:)|[ \t]*\r?\n[ \t\r\n]*[A-Za-z_$][\w$\-]*[ \t]*:").match
#: What may follow an unquoted array element for it to end there: a comma, the closer, or a line break.
_ELEMENT_ENDS: Final = re.compile(r"[ \t]*(?:[,\]\r\n])").match
#: Unquoted words that mean no value or no finite number (``undefined``, ``nil``, ``none``, ``nan``, Python's ``inf``):
#: never read as strings.
_NO_VALUE: Final = frozenset({"undefined", "nil", "none", "nan", "infinity", "-infinity", "inf", "null"})
#: A number written with digit separators (``1_234``, ``1_234.5_6``): one reading, the number.
_SEPARATED: Final = re.compile(r"-?[0-9]+(?:_[0-9]+)*(?:\.[0-9]+(?:_[0-9]+)*)?")
#: Tokens that start like a number but read as one word (no number reading): a letter or ``_`` other than an
#: exponent's ``e``, a ``:`` (a time), or a version's second dot.
_WORDLIKE: Final = re.compile(r"[^\W\deE]|[:$]|[0-9]+(?:\.[0-9]+){2,}$")
#: A number in another base (``0x10``, ``0b101``, ``0o17``: JSON5, Python, JavaScript): a number by one reading (then
#: 16, which a string field takes as ``"16"``), the token by another. No reading is taken.
_OTHER_BASE: Final = re.compile(r"-?0[xXbBoO][0-9A-Fa-f_]+")


def _bare_word(word: str, pos: int, message: str) -> BareWord | None:
    """The readings of an unquoted member value (see :class:`BareWord`), or ``None`` when it has none (``1e``,
    ``05``, ``10-20``: a number cut off, a leading zero, an expression)."""
    if word[0] not in "-.0123456789":
        return BareWord(word, pos, message, text=word.lower() not in _NO_VALUE)
    if "_" in word and _SEPARATED.fullmatch(word):
        number = _separated_number(word.replace("_", ""))
        return None if number is None else BareWord(word, pos, message, text=False, number=number)
    if _WORDLIKE.search(word) and _OTHER_BASE.fullmatch(word) is None:
        return BareWord(word, pos, message)
    return None


def _separated_number(digits: str) -> int | float | None:
    """The number a token with its digit separators taken out reads as, or ``None`` where it reads as none
    for sure: a leading zero (``0_1``: as ``05``, an octal reading), more digits than ``int()`` takes, or a
    float beyond float range (never infinity)."""
    whole = digits.lstrip("-").partition(".")[0]
    if len(whole) > 1 and whole[0] == "0":
        return None
    if "." in digits:
        real = float(digits)
        return real if math.isfinite(real) else None
    try:
        return int(digits)
    except ValueError:  # more digits than sys.get_int_max_str_digits() allows
        return None


class Assembler(Lexer):
    """The open containers of one scan, what was stored last, and the repairs that rewrite it."""

    __slots__ = ("bare_elements", "bare_words", "conflicts", "last_key", "last_str", "root", "tokens")

    def __init__(self, text: str, budget: ScanBudget) -> None:
        super().__init__(text, budget)
        self.tokens = 0
        self.root: Any = None
        self.conflicts: list[str] = []
        #: Unquoted words read as member values (``{"name": Kim}``): the contract decides them later.
        self.bare_words: list[BareWord] = []
        #: Whether unquoted words may stand as array elements too (``scanner.scan``'s ``bare_elements``).
        self.bare_elements = False
        #: Where the last scalar read began, if it was a double-quoted string value (else -1), and the
        #: key it was stored under: what an inner-quote repair rewrites.
        self.last_str = -1
        self.last_key: str | None = None

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
        """A bare word in value position: a Python literal, ``true``/``false``/``null`` in any case, NaN/Infinity,
        a cut-off literal, an unquoted member value the contract decides (:class:`BareWord`), or an error."""
        if end >= self.n and self.stack:
            raise self.truncated(self.n, "a literal is complete")
        if word in JSON_LITERALS:  # a root literal ending the text
            return JSON_LITERALS[word]
        if word in PYTHON_LITERALS:
            self.fix("python_literal", word, PYTHON_LITERALS[word])
            return PYTHON_LITERALS[word]
        if word in NONFINITE_WORDS:
            return NonFinite(word)
        lowered = word.lower()
        if lowered in JSON_LITERALS:  # TRUE, Null: a literal by its only reading
            self.fix("literal_case", word, JSON_LITERALS[lowered])
            return JSON_LITERALS[lowered]
        stop = self.syntax(start, "a value (string, number, object, array, true, false or null)")
        frame = self.stack[-1] if self.stack else None
        if frame is not None and ((frame[0].__class__ is dict and frame[1] is not None
                                   and _MEMBER_ENDS(self.text, end) is not None)
                                  or (self.bare_elements and frame[0].__class__ is list
                                      and _ELEMENT_ENDS(self.text, end) is not None)):
            # One token, then the member (or element) ends: perhaps a string without its quotes, or a number
            # with digit separators; the contract decides.
            bare = _bare_word(word, start, stop.message)
            if bare is not None:
                self.bare_words.append(bare)
                return bare
        raise stop

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
        quote before a separator always ends a string here, so exactly one reading exists. A reading that
        would put a key (``"k":``) or a closer followed by more structure (``],"k"``) inside the string is
        not one: it swallows members. Returns the position after the new closing quote, or -1 (refused).
        """
        text, open_at, budget = self.text, self.last_str, self.budget
        if budget.quote_chars <= 0:
            return -1  # the search has read its share of the text for these repairs: refused, never slow
        # The string holds no line break (the one it began with had none): look no further than the line, and
        # no further than the search may still read (each failed attempt would otherwise read to the end).
        stop = min(self.n, pos + budget.quote_chars)
        line_end = text.find("\n", pos, stop)
        m = _STRUCTURAL_QUOTE.search(text, pos, stop if line_end < 0 else line_end)
        budget.quote_chars -= (stop if line_end < 0 else line_end) - open_at if m is None else m.end() - open_at
        if m is None or "\\" in text[open_at:m.start()]:
            return -1
        value = text[open_at + 1 : m.start()]
        if value.count('"') % 2:
            return -1  # an odd number of inner quotes: the string could end at another one
        if _SWALLOWED.search(value) is not None:
            return -1  # a key or a closed container inside the string: not a reading, structure swallowed
        if any(quoted and (quoted[0].isspace() or quoted[-1].isspace()) for quoted in value.split('"')[1::2]):
            # An inner pair that does not hug what it quotes (``a" 2 "b`` quotes `` 2 ``), where ``"say "hi" to
            # her"`` quotes a word: ``["a" 2 "b"]`` is three elements by another reading (commas missing).
            return -1
        container, _key, prefix = self.stack[-1]
        if container.__class__ is list:
            container[-1] = value
            where = (*prefix, len(container) - 1)
        else:
            container[self.last_key] = value
            where = (*prefix, self.last_key)
        self.fixes.append(Fix("inner_quotes", where, text[open_at : m.end()][:80], value[:80]))
        self.last_str = -1
        return m.end()
