"""The small vocabulary every parse module agrees on: what counts as invisible, a number, a literal.

Kept in one place so the fast paths (regexes, the C decoder's patches) and the lenient scanner cannot
drift apart on what they accept.
"""

from __future__ import annotations

import re
from typing import Final

#: Characters models emit between tokens that carry no meaning: BOM, zero-width spaces and joiners,
#: word joiner, no-break space, Mongolian vowel separator.
INVISIBLE: Final = "\ufeff\u200b\u200c\u200d\u2060\u00a0\u180e"
#: A JSON number, exactly (RFC 8259), as a regex fragment.
NUMBER: Final = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+\-]?[0-9]+)?"
NUMBER_RE: Final = re.compile(NUMBER)
INTEGER_RE: Final = re.compile(r"-?(?:0|[1-9][0-9]*)")
#: A bare word: a key without quotes, or a literal.
WORD: Final = r"(?:[^\W\d]|\$)[\w$\-]*"
JSON_LITERALS: Final = {"true": True, "false": False, "null": None}
PYTHON_LITERALS: Final = {"True": True, "False": False, "None": None}
ALL_LITERALS: Final = {**JSON_LITERALS, **PYTHON_LITERALS}
NONFINITE_WORDS: Final = frozenset({"NaN", "Infinity"})

# Screening for text that strict JSON parsing would turn into NaN or infinity: the words, an exponent of
# three or more digits (``1e400``), or a run of 309+ digits (``1111...1.0``). The exponent patterns start
# with a literal, which the regex engine searches at C speed; the digit-run regex runs only when the text
# holds that many digits at all (ten C-speed counts).
_EXPONENT_LOWER: Final = re.compile(r"e\+?[0-9]{3}")
_EXPONENT_UPPER: Final = re.compile(r"E\+?[0-9]{3}")
_LONG_DIGITS: Final = re.compile(r"(?<![0-9])[0-9]{309}")
_DIGITS: Final = "0123456789"


def may_hold_nonfinite(text: str) -> bool:
    """Could strict JSON parsing of ``text`` produce NaN or infinity (``NaN``, ``Infinity``, ``1e400``)?

    Pydantic reads those as floats; guardrail judges them against the contract instead, so for a contract
    that holds floats, text for which this is true never takes a shortcut around the stages. (A contract
    without floats needs no screen: pydantic rejects a non-finite value there anyway.)
    """
    if "NaN" in text or "Infinity" in text:
        return True
    if _EXPONENT_LOWER.search(text) is not None or _EXPONENT_UPPER.search(text) is not None:
        return True
    return (len(text) >= 309 and sum(text.count(d) for d in _DIGITS) >= 309
            and _LONG_DIGITS.search(text) is not None)


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
