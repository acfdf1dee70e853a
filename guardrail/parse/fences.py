"""Finding where JSON may sit in chatty model text: fenced blocks, tag-wrapped bodies and the prose between.

The text is cut into non-overlapping segments: the body of each fenced block (```json, ```JSON, bare ```,
~~~) and the prose around them. A fence only counts at the start of a line (CommonMark's rule), so a
code fence inside a JSON string, where newlines are escaped, never splits the JSON. Where the model wrote
them raw, a fence line inside a string does start a line: the candidate search then reads the value across
the cut (``candidates.read_across``) and cuts the text after the value again (:func:`iter_segments`), so
what lies inside a string stays content. An unclosed fence runs to the end of the text, which is how a
cut-off answer stays detectable as truncated.

Fence markers are found with literal searches and each line is looked at once, so the cost is linear in
the text, including an unclosed fence followed by megabytes of spaces.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple

from guardrail.errors import InputLimitError
from guardrail.parse.lexicon import INVISIBLE

_BACKTICKS: Final = re.compile(r"```+")
_TILDES: Final = re.compile(r"~~~+")
_RUNS: Final = re.compile(r"```+|~~~+")
_OPEN_TAG: Final = re.compile(r"<([A-Za-z][\w.\-]{0,40})>")


class Segment(NamedTuple):
    """A stretch of the original text, ``text[start:end]``, searched for JSON on its own.

    ``source`` is ``"fence"`` for a fenced block body and ``"text"`` for prose; ``info`` is the fence's
    info string (``json``) and ``closed`` says whether the fence was closed; ``marker`` is the fence's
    opening run (```` ``` ````, ``~~~~``), which a closer must match.
    """

    start: int
    end: int
    source: str
    info: str = ""
    closed: bool = True
    marker: str = ""


def split_segments(text: str, max_blocks: int = 1 << 30) -> list[Segment]:
    """Cut ``text`` into fenced-block bodies and the prose around them, in order.

    Raises :class:`InputLimitError` once more than ``max_blocks`` fenced blocks are seen, so a flood of
    fences costs no more than the first few.
    """
    if "```" not in text and "~~~" not in text:  # the common case costs two C-speed substring searches
        return [Segment(0, len(text), "text")]
    segments: list[Segment] = []
    left = max_blocks
    for segment in iter_segments(text):
        segments.append(segment)
        if segment.closed and segment.source == "fence":
            left -= 1
            if left < 0:
                raise InputLimitError.too_many_candidates(max_blocks, text)
    return segments


def iter_segments(text: str, start: int = 0, inside: Segment | None = None) -> Iterator[Segment]:
    """The segments of ``text[start:]``, lazily: each is found only when asked for, reading the text once.

    ``inside`` is the fenced block ``start`` lies in (its body goes on from ``start`` to its closer), or
    ``None`` when ``start`` is in prose. This is how the search resumes after a value whose strings held
    fence lines (``candidates.read_across``): those lines were content, so the text after the value is cut
    again from there.
    """
    n = len(text)
    prose_start = start
    # The open fence: its marker, the start of its body, its info word ("" and -1 when in prose).
    marker, body_start, info = (inside.marker, start, inside.info) if inside is not None else ("", -1, "")
    for line in _fence_lines(text, start):
        rest = text[line.rest : line.end]
        if not marker:
            if line.char == "`" and "`" in rest:
                continue  # per CommonMark not a fence opener (inline code like ```x```)
            if line.start > prose_start:
                yield Segment(prose_start, line.start, "text")
            marker, body_start, info = line.char * line.length, _body_start(text, line), _info(text, line)
            continue
        if line.char == marker[0] and line.length >= len(marker) and not rest.strip():
            yield Segment(body_start, line.start, "fence", info, marker=marker)
            prose_start = line.end
            marker = ""
    if marker:
        yield Segment(body_start, n, "fence", info, closed=False, marker=marker)
    elif prose_start < n:
        yield Segment(prose_start, n, "text")


class _FenceLine(NamedTuple):
    start: int  # start of the line
    char: str  # "`" or "~"
    length: int  # length of the marker run
    rest: int  # position just after the marker run
    end: int  # end of the line (its newline or the end of the text)


def _fence_lines(text: str, start: int = 0) -> Iterator[_FenceLine]:
    """Lines that start (after at most three spaces) with a run of 3+ backticks or tildes, in order,
    from ``start`` on (a run on the line ``start`` is in counts only if nothing but spaces comes before it).

    Marker runs are found with literal searches, which the regex engine runs at C speed; the line start
    is found by looking back only as far as the previous run, so the whole pass stays linear.
    """
    if start:  # resuming: one pattern finds the runs of both kinds lazily (a search for an absent kind would
        runs: Iterable[tuple[int, int]] = map(re.Match.span, _RUNS.finditer(text, start))  # read all the rest)
    elif "~~~" not in text:
        runs = map(re.Match.span, _BACKTICKS.finditer(text))
    elif "```" not in text:
        runs = map(re.Match.span, _TILDES.finditer(text))
    else:  # both kinds: merge the two streams in order
        runs = heapq.merge(*(map(re.Match.span, pattern.finditer(text)) for pattern in (_BACKTICKS, _TILDES)))
    # Resuming mid-line: the line counts from its true start (what precedes ``start`` on it is looked at once).
    line_start, scanned, taken_until = text.rfind("\n", 0, start) + 1 if start else 0, start, -1
    for begin, finish in runs:
        newline = text.rfind("\n", scanned, begin)
        if newline >= 0:
            line_start = newline + 1
        scanned = finish
        indent = text[line_start:begin] if begin - line_start <= 3 else "x"
        if indent.strip(" \t") or taken_until > begin:
            continue  # not at a line start, or a second run on a line already taken
        eol = text.find("\n", finish)
        taken_until = len(text) if eol < 0 else eol
        yield _FenceLine(line_start, text[begin], finish - begin, finish, taken_until)


def _body_start(text: str, opener: _FenceLine) -> int:
    """The body starts on the line after the opener, or after the info word for ```json {...}."""
    rest = text[opener.rest : opener.end]
    stripped = rest.lstrip(" \t")
    word_end = 0
    while word_end < len(stripped) and (stripped[word_end].isalnum() or stripped[word_end] in "_+-."):
        word_end += 1
    if stripped[word_end:].strip():  # content on the opener line itself
        return opener.rest + (len(rest) - len(stripped)) + word_end
    return min(opener.end + 1, len(text))


def _info(text: str, opener: _FenceLine) -> str:
    words = text[opener.rest : opener.end].split()
    return words[0] if words else ""


def unwrap_scalar(body: str) -> tuple[str, str | None]:
    """Strip surrounding whitespace, invisible characters and one ``<tag>...</tag>`` pair.

    Returns the inner text and the tag name if one was removed. Used to read a whole segment as one
    JSON value, which is the only way a scalar root (``42``, ``"yes"``) is found.
    """
    inner = body.strip().strip(INVISIBLE).strip()
    m = _OPEN_TAG.match(inner)
    if m is not None and inner.endswith(f"</{m.group(1)}>"):
        return inner[m.end() : len(inner) - len(m.group(1)) - 3].strip(), m.group(1)
    return inner, None


def opens_with_tag_block(inner: str) -> bool:
    """Whether ``inner`` opens with a ``<tag>...</tag>`` block that closes before the end, with more after it
    (``<think>...</think>hello``): the block may be the model's reasoning and the rest its answer, or all of
    it the answer. Two readings of a whole reply read as one string."""
    m = _OPEN_TAG.match(inner)
    if m is None:
        return False
    close = inner.find(f"</{m.group(1)}>", m.end())
    return close >= 0 and inner[close + len(m.group(1)) + 3 :].strip() != ""
