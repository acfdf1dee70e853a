"""Finding where JSON may sit in chatty model text: fenced blocks, tag-wrapped bodies and the prose between.

The text is cut into non-overlapping segments: the body of each fenced block (```json, ```JSON, bare ```,
~~~) and the prose around them. A fence only counts at the start of a line (CommonMark's rule), so a
code fence inside a JSON string, where newlines are escaped, never splits the JSON. An unclosed fence
runs to the end of the text, which is how a cut-off answer stays detectable as truncated.

Each pattern here is a single greedy pass per line, so the cost is linear in the text, including an
unclosed fence followed by megabytes of spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_FENCE_LINE: Final = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})([^\n]*)$", re.M)
_OPEN_TAG: Final = re.compile(r"<([A-Za-z][\w.\-]{0,40})>")
INVISIBLE: Final = "\ufeff\u200b\u200c\u200d\u2060\u00a0\u180e"


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of the original text, ``text[start:end]``, searched for JSON on its own.

    ``source`` is ``"fence"`` for a fenced block body and ``"text"`` for prose; ``info`` is the fence's
    info string (``json``) and ``closed`` says whether the fence was closed.
    """

    start: int
    end: int
    source: str
    info: str = ""
    closed: bool = True


def split_segments(text: str) -> list[Segment]:
    """Cut ``text`` into fenced-block bodies and the prose around them, in order."""
    if "```" not in text and "~~~" not in text:  # the common case costs two C-speed substring searches
        return [Segment(0, len(text), "text")]
    segments: list[Segment] = []
    prose_start = 0
    open_marker: re.Match[str] | None = None
    for m in _FENCE_LINE.finditer(text):
        marker, rest = m.group(1), m.group(2)
        if open_marker is None:
            if marker[0] == "`" and "`" in rest:
                continue  # per CommonMark not a fence opener (inline code like ```x```)
            if m.start() > prose_start:
                segments.append(Segment(prose_start, m.start(), "text"))
            open_marker = m
            continue
        opener = open_marker.group(1)
        if marker[0] == opener[0] and len(marker) >= len(opener) and not rest.strip():
            body_start = _body_start(text, open_marker)
            segments.append(Segment(body_start, m.start(), "fence", _info(open_marker)))
            prose_start = m.end()
            open_marker = None
    if open_marker is not None:
        body_start = _body_start(text, open_marker)
        segments.append(Segment(body_start, len(text), "fence", _info(open_marker), closed=False))
    elif prose_start < len(text):
        segments.append(Segment(prose_start, len(text), "text"))
    return segments


def _body_start(text: str, opener: re.Match[str]) -> int:
    """The body starts on the line after the opener, or after the info word for ```json {...}."""
    rest = opener.group(2)
    stripped = rest.lstrip(" \t")
    word_end = 0
    while word_end < len(stripped) and (stripped[word_end].isalnum() or stripped[word_end] in "_+-."):
        word_end += 1
    after_word = stripped[word_end:].strip()
    if after_word:  # content on the opener line itself
        return opener.start(2) + (len(rest) - len(stripped)) + word_end
    return min(opener.end() + 1, len(text))


def _info(opener: re.Match[str]) -> str:
    words = opener.group(2).split()
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
