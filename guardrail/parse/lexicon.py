"""The small vocabulary every parse module agrees on: what counts as invisible, a number, a literal.

Kept in one place so the fast paths (regexes, the C decoder's patches) and the lenient scanner cannot
drift apart on what they accept.
"""

from __future__ import annotations

import re
from typing import Final

#: Characters models emit between tokens that carry no meaning: BOM, zero-width spaces and joiners,
#: word joiner, no-break space, Mongolian vowel separator, and the Unicode spaces (Zs: ogham space mark,
#: en quad to hair space, narrow no-break space, medium mathematical space, ideographic space).
INVISIBLE: Final = ("\ufeff\u200b\u200c\u200d\u2060\u00a0\u180e\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
                    "\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000")
#: A JSON number, exactly (RFC 8259), as a regex fragment.
NUMBER: Final = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+\-]?[0-9]+)?"
NUMBER_RE: Final = re.compile(NUMBER)
INTEGER_RE: Final = re.compile(r"-?(?:0|[1-9][0-9]*)")
#: First characters of a JSON value (NaN and Infinity included): a cheap "could this be one?" test.
VALUE_START: Final = frozenset('{["-0123456789tfnNI')
#: A bare word: a key without quotes, or a literal.
WORD: Final = r"(?:[^\W\d]|\$)[\w$\-]*"
JSON_LITERALS: Final = {"true": True, "false": False, "null": None}
PYTHON_LITERALS: Final = {"True": True, "False": False, "None": None}
ALL_LITERALS: Final = {**JSON_LITERALS, **PYTHON_LITERALS}
NONFINITE_WORDS: Final = frozenset({"NaN", "Infinity"})

# Screening for text that strict JSON parsing would turn into NaN or infinity: the words, an exponent of
# three or more digits (``1e400``, ``1E+400``), or a run of 210+ digits. A number overflows only when its
# integer digits plus its exponent pass 308; with an exponent of at most two digits (99) that takes 210
# integer digits (``1`` + 300 zeros + ``e10``, ``9`` * 308 + ``.9e1``). The text is encoded once with
# digits mapped to "0", "E" to "e" and "+" dropped, so each test is one C-speed search.
_FOLD: Final = bytes.maketrans(b"123456789E", b"000000000e")
_LONG_DIGITS: Final = b"0" * 210
_MARKS: Final = (b"NaN", b"Infinity", b"e000", _LONG_DIGITS)


def may_hold_nonfinite(text: str) -> bool:
    """Could strict JSON parsing of ``text`` produce NaN or infinity (``NaN``, ``Infinity``, ``1e400``)?

    Pydantic reads those as floats; guardrail judges them against the contract instead, so for a contract
    that holds floats, text for which this is true never takes a shortcut around the stages. (A contract
    without floats needs no screen: pydantic rejects a non-finite value there anyway.) False positives
    only cost speed.
    """
    folded = text.encode("utf-8", "surrogatepass").translate(_FOLD, b"+")
    return any(mark in folded for mark in _MARKS)


def may_overflow(text: str) -> bool:
    """Could a JSON number in ``text`` be beyond float range (``1e400``, 210+ digits)? False positives only
    cost speed. (``NaN``/``Infinity`` words are not numbers here: the decoders turn those into markers.)"""
    folded = text.encode("utf-8", "surrogatepass").translate(_FOLD, b"+")
    return b"e000" in folded or _LONG_DIGITS in folded


_ESCAPED_SURROGATE: Final = re.compile(r"\\u[dD][89a-fA-F]")


def may_hold_surrogate(text: str) -> bool:
    """Could decoding ``text`` produce a lone UTF-16 surrogate (``"\\ud800"``, or one raw in the text)?

    Python strings can hold them; pydantic's JSON parser refuses them. Text for which this is true is
    validated as JSON text, so every path gives the same answer.
    """
    if "\\u" in text and _ESCAPED_SURROGATE.search(text) is not None:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
