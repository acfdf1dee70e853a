"""Policy regular expressions that run in linear time, whatever the model sends.

A policy may constrain an argument with a regex (an allow pattern such as ``[a-z0-9_-]{1,64}``, or a deny
pattern). The text matched is model-controlled, so a backtracking engine is a denial-of-service hole:
``(a+)+$`` on ``"a" * 30 + "!"`` already takes seconds in Python's :mod:`re`. :class:`LinearPattern`
compiles with RE2 (google-re2), whose matching time is linear in the text; there is no fallback to
:mod:`re`, ever.

What RE2 does differently from :mod:`re` (policy authors should know; the loader should say so):

- no backreferences (``\\1``), lookaround (``(?=``, ``(?!``, ``(?<=``, ``(?<!``), atomic groups or possessive
  quantifiers: such patterns are refused at compile time with :class:`ValueError`;
- a counted repetition is at most 1000 (``a{1001}`` is refused), and nested counts multiply
  (``(a{1000}){1000}`` is refused too);
- ``$`` without ``(?m)`` matches only at the very end of the text (Python's also matches before a final
  ``"\\n"``); ``\\Z`` does not exist (write ``\\z``);
- ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII-only (Python's are Unicode-aware); use ``\\p{L}``, ``\\p{N}``
  for Unicode classes;
- there are no flags arguments: use inline groups ``(?i)``, ``(?s)``, ``(?m)``.

Text containing lone surrogates (``"\\ud800"``: JSON can carry them) cannot be encoded as UTF-8 for RE2; such
code points are matched as U+FFFD REPLACEMENT CHARACTER, which ``.`` and negated classes match and no
ordinary literal does. Non-str text raises :class:`TypeError` rather than returning ``False``: for a deny
pattern ``False`` would mean "allowed", so the caller must check the type first.
"""

from __future__ import annotations

import functools

import re2  # type: ignore[import-untyped]

from guardrail.errors import ConfigError, UsageError

__all__ = ["LinearPattern", "compile_pattern", "matchable"]

#: RE2's memory budget for one compiled pattern (its default); patterns that need more are refused.
_MAX_MEM = 8 << 20


def _options() -> object:
    options = re2.Options()
    options.max_mem = _MAX_MEM
    options.log_errors = False  # RE2 would otherwise print every refused policy pattern on stderr
    return options


def _error_text(error: BaseException) -> str:
    raw = error.args[0] if error.args else ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if "invalid perl operator" in text:
        text += " (RE2 has no lookaround, atomic groups or possessive quantifiers)"
    elif "invalid escape sequence: \\" in text and text[-1:].isdigit():
        text += " (RE2 has no backreferences)"
    elif "invalid escape sequence: \\Z" in text:
        text += " (write \\z for end of text)"
    return text


def matchable(text: str) -> str:
    """``text``, with lone surrogates replaced by U+FFFD so that it can be encoded as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


class LinearPattern:
    """A compiled policy regex that matches in time linear in the text (RE2).

    ``pattern`` is the source as written in the policy. Construction raises :class:`ValueError` with RE2's
    reason (and a hint for the usual Python-only features) when RE2 cannot compile it: that is a policy
    configuration error, reported when the policy is loaded rather than when the model calls the tool.
    """

    __slots__ = ("_regexp", "pattern")

    pattern: str

    def __init__(self, pattern: str) -> None:
        if not isinstance(pattern, str):
            raise ConfigError(f"a policy regex must be a str, not {type(pattern).__name__}")
        try:
            self._regexp = re2.compile(pattern, _options())
        except re2.error as error:
            raise ConfigError(f"policy regex {pattern!r} cannot be compiled by RE2: {_error_text(error)}") from None
        except UnicodeEncodeError:
            raise ConfigError(f"policy regex {pattern!r} contains lone surrogates") from None
        self.pattern = pattern

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches (``TypeError`` for non-str text)."""
        if not isinstance(text, str):
            raise UsageError(f"LinearPattern matches str only, not {type(text).__name__}")
        return self._regexp.fullmatch(matchable(text)) is not None

    def search(self, text: str) -> bool:
        """Whether the pattern matches anywhere in ``text`` (``TypeError`` for non-str text)."""
        if not isinstance(text, str):
            raise UsageError(f"LinearPattern matches str only, not {type(text).__name__}")
        return self._regexp.search(matchable(text)) is not None

    def __repr__(self) -> str:
        return f"LinearPattern({self.pattern!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LinearPattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)


@functools.lru_cache(maxsize=512)
def _compile_cached(pattern: str) -> LinearPattern:
    return LinearPattern(pattern)


def compile_pattern(pattern: str) -> LinearPattern:
    """The :class:`LinearPattern` for ``pattern``, cached (512 patterns); ``ValueError`` as for the class."""
    if not isinstance(pattern, str):
        raise ConfigError(f"a policy regex must be a str, not {type(pattern).__name__}")
    return _compile_cached(pattern)
