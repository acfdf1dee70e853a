"""Registered Python rule functions, and the built-in ``segment_transcript``.

Some contract values are not a handful of fields a keyword can set: a list of video segments, say. For those a
rule-set file names a Python function instead of rules (``function = "segment_transcript"``), and the engine
calls it with the call's inputs. Functions are registered by name with :func:`rule_function` so that a rule-set
file can only reach code that was registered on purpose, and so that a misspelt name is refused when the file
is loaded rather than when every LLM tier has already failed.

A rule function takes the inputs mapping and returns plain data (a dict or a list) that the engine validates
against the contract; it must be deterministic and fast, and it reports bad inputs by raising ``ValueError`` or
``TypeError`` (the engine turns any exception into a ``RuleSetError``).

Register custom functions before loading the rule sets that name them (importing the module that defines them
is enough).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from guardrail.errors import ConfigError, UsageError

__all__ = [
    "RuleFunction",
    "get_rule_function",
    "registered_functions",
    "rule_function",
    "segment_transcript",
    "sentence_ends",
    "strip_surrogates",
]

#: A rule function: the call's inputs in, plain data for the contract out.
RuleFunction = Callable[[Mapping[str, Any]], Any]

F = TypeVar("F", bound=RuleFunction)

_REGISTRY: dict[str, RuleFunction] = {}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")


def rule_function(name: str, *, replace: bool = False) -> Callable[[F], F]:
    """Register the decorated function under ``name`` for ``function = "name"`` in rule-set files.

    Registering a second function under a taken name raises ``ValueError`` unless ``replace=True``: two modules
    silently fighting over one name would make the fallback depend on import order. Re-registering the very same
    function is harmless (module reloads).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"rule function name {name!r} must be an identifier-like string")

    def register(function: F) -> F:
        if not callable(function):
            raise UsageError(f"rule function {name!r} must be callable")
        existing = _REGISTRY.get(name)
        if existing is not None and existing is not function and not replace:
            raise ConfigError(f"rule function {name!r} is already registered ({existing!r})")
        _REGISTRY[name] = function
        return function

    return register


def get_rule_function(name: str) -> RuleFunction | None:
    """The function registered under ``name``, or ``None``."""
    return _REGISTRY.get(name)


def registered_functions() -> tuple[str, ...]:
    """The registered names, sorted (for error messages and the CLI)."""
    return tuple(sorted(_REGISTRY))


# --------------------------------------------------------------------------------------------------- text helpers

_SURROGATE = re.compile("[\ud800-\udfff]")

#: Sentence-final punctuation. Korean sentences end in "다." / "요." etc., so the period covers them.
_FINAL = frozenset(".!?。？！…")
#: Full-width marks end a sentence even without a following space (CJK text has none).
_FINAL_CJK = frozenset("。？！")


def strip_surrogates(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (one for one, so positions do not move).

    JSON can carry lone surrogates, pydantic refuses them in ``str`` fields, and a fallback must not fail on its
    input; the replacement keeps character positions, so segment boundaries stay valid.
    """
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def sentence_ends(text: str) -> list[int]:
    """Every position just after a sentence end, past the whitespace that follows it (sorted, linear time).

    A sentence ends at ``. ! ? …`` followed by whitespace or the end of the text (so ``3.5`` and ``e.g.x`` do
    not end one), at ``。 ？ ！`` anywhere, and at a newline. Cutting after the whitespace makes every later
    segment start with a word.
    """
    ends: list[int] = []
    length = len(text)
    i = 0
    while i < length:
        char = text[i]
        end = -1
        if char == "\n" or char in _FINAL_CJK:
            end = i + 1
        elif char in _FINAL:
            j = i + 1
            while j < length and text[j] in _FINAL:  # "?!", "..." end once, after the last mark
                j += 1
            if j == length or text[j].isspace():
                end = j
            i = j - 1
        if end >= 0:
            while end < length and text[end].isspace():
                end += 1
            if not ends or ends[-1] != end:
                ends.append(end)
            i = max(i, end - 1)
        i += 1
    return ends


def _word_starts(text: str) -> list[int]:
    """Positions where a word starts after whitespace: the cut of last resort that splits no word."""
    return [m.end() for m in re.finditer(r"\s+", text) if m.end() < len(text)]


# ------------------------------------------------------------------------------------------ segment_transcript

_WORD = re.compile(r"[^\W_]+")

#: Frequent words that say nothing about a segment's content (English and Korean), lower-case.
STOPWORDS = frozenset(
    [
        "the", "and", "for", "are", "but", "not", "you", "your", "yours", "with", "this", "that", "these", "those",
        "from", "they", "them", "their", "there", "then", "than", "what", "when", "where", "which", "who", "whom",
        "why", "how", "was", "were", "been", "being", "have", "has", "had", "having", "does", "did", "doing", "will",
        "would", "shall", "should", "can", "could", "may", "might", "must", "our", "ours", "out", "into", "onto",
        "over", "under", "about", "above", "below", "again", "also", "just", "very", "some", "such", "only", "own",
        "same", "too", "more", "most", "other", "any", "each", "few", "all", "both", "nor", "off", "once", "here",
        "its", "it's", "his", "her", "hers", "him", "she", "he", "we", "us", "i'm", "i've", "don't", "can't", "won't",
        "isn't", "aren't", "let's", "get", "got", "like", "well", "yes", "okay", "one", "two",
        "그리고", "그래서", "하지만", "그러나", "그런데", "그러면", "또한", "그리고는", "저는", "제가",
        "우리는", "우리가", "여러분", "이것은", "그것은", "있습니다", "합니다", "입니다", "했습니다",
        "있어요", "해요", "이렇게", "그렇게", "정말", "아주", "너무", "그냥", "이제", "지금", "오늘",
    ]
)


def _keywords(text: str, limit: int = 3) -> list[str]:
    """The ``limit`` most frequent words of 3+ characters, not stopwords; ties go to the first seen."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for index, match in enumerate(_WORD.finditer(text)):
        word = match.group().casefold()
        if len(word) < 3 or word in STOPWORDS or word.isdigit():
            continue
        counts[word] += 1
        first.setdefault(word, index)
    ranked = sorted(counts, key=lambda word: (-counts[word], first[word]))
    return ranked[:limit]


def _positive_number(inputs: Mapping[str, Any], key: str, default: float | None = None) -> float:
    value = inputs.get(key, default)
    if value is None:
        raise ConfigError(f"input {key!r} is required")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"input {key!r} must be a number, not {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ConfigError(f"input {key!r} must be a finite number > 0, not {value!r}")
    return number


def _nearest(candidates: list[int], target: int, low: int, high: int) -> int | None:
    """The candidate nearest ``target`` within ``(low, high)`` exclusive; ties go to the earlier one."""
    index = bisect.bisect_left(candidates, target)
    best: int | None = None
    for position in (index - 1, index):
        if 0 <= position < len(candidates):
            candidate = candidates[position]
            if low < candidate < high and (best is None or abs(candidate - target) < abs(best - target)):
                best = candidate
    return best


@rule_function("segment_transcript")
def segment_transcript(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Split a transcript into timed segments, without a model.

    Inputs: ``transcript`` (str), ``duration_seconds`` (> 0) and ``segment_seconds`` (> 0, default 30).

    The duration is split evenly into ``round(duration / segment_seconds)`` parts (at least one, at most one per
    character). Time and text are tied by character position (character ``c`` of ``L`` is spoken at
    ``duration * c / L``), so each even cut is a character position; it is moved to the nearest sentence end
    within half a segment (else to the nearest word start, else left where it is), which keeps sentences whole
    where the text allows. Cuts that collapse onto each other merge their segments.

    Returns ``[{"scriptText", "startSeconds", "durationSeconds", "keywords"}, ...]``: the texts concatenate to
    the transcript (lone surrogates become U+FFFD), starts are contiguous from 0, durations are positive and sum
    to the duration, keywords are each segment's three most frequent words of 3+ characters, stopwords aside.
    The same inputs always give the same segments.
    """
    transcript = inputs.get("transcript")
    if not isinstance(transcript, str):
        raise UsageError(f"input 'transcript' must be a str, not {type(transcript).__name__}")
    duration = _positive_number(inputs, "duration_seconds")
    step = _positive_number(inputs, "segment_seconds", 30.0)
    text = strip_surrogates(transcript)
    length = len(text)
    wanted = duration / step
    count = max(1, min(length, round(wanted) if wanted < 1e9 else 10**9))

    cuts = [0]
    if count > 1:
        ends = sentence_ends(text)
        words = _word_starts(text)
        per_segment = length / count
        for k in range(1, count):
            ideal = round(k * per_segment)
            low = max(cuts[-1], math.floor(ideal - per_segment / 2))
            high = min(length, math.ceil(ideal + per_segment / 2))
            cut = _nearest(ends, ideal, low, high)
            if cut is None:
                cut = _nearest(words, ideal, low, high)
            if cut is None:
                cut = ideal
            if cuts[-1] < cut < length:
                cuts.append(cut)

    starts = [duration * cut / length for cut in cuts] if length else [0.0]
    # Float rounding could make two starts equal; merge such segments so every duration is positive.
    kept = [0]
    for index in range(1, len(starts)):
        if starts[index] > starts[kept[-1]] and starts[index] < duration:
            kept.append(index)
    segments: list[dict[str, Any]] = []
    for position, index in enumerate(kept):
        begin = cuts[index]
        end = cuts[kept[position + 1]] if position + 1 < len(kept) else length
        start = starts[index]
        stop = starts[kept[position + 1]] if position + 1 < len(kept) else duration
        piece = text[begin:end]
        segments.append(
            {"scriptText": piece, "startSeconds": start, "durationSeconds": stop - start, "keywords": _keywords(piece)}
        )
    return segments
