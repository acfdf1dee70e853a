"""A preview of JSON that is still arriving: for showing a streamed answer while it streams, never for using it.

``preview(text)`` closes what is open (a string value being written, arrays, objects) so a UI can show the
fields that have arrived. An incomplete key, a half-written number or literal, or a dangling escape is
dropped rather than guessed. The result is *not* the answer: it is never validated against the contract,
and nothing downstream of guardrail (gates, tools, caches) sees it. The final answer always goes through
the parse layer, where a cut-off text is ``truncated``, never closed up.

A raw control character inside a string (a newline written as is) is kept, as the parse layer keeps it.

Linear time: one pass over the text plus at most two ``json.loads`` calls. Text nested deeper than
``MAX_PREVIEW_DEPTH`` gets no preview. A stream does not call this after every piece (that re-reads the text
each time): :class:`guardrail.parse.incremental.GrowingJSON` carries the reading across pieces and shows the
same previews.
"""

from __future__ import annotations

import json
from typing import Any

MAX_PREVIEW_DEPTH = 200

_NOTHING: Any = object()


def preview(text: str) -> Any:
    """The JSON value ``text`` would be if it stopped being written here, or ``None`` when there is none yet."""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    stack: list[list[Any]] = []  # [opener, index where its current member starts]
    in_string = escaped = False
    end = len(text)
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            if len(stack) >= MAX_PREVIEW_DEPTH:
                return None
            stack.append([ch, i + 1])
        elif ch in "}]":
            if not stack:
                return None
            stack.pop()
            if not stack:
                end = i + 1
                break
        elif ch == "," and stack:
            stack[-1][1] = i + 1
    body = text[start:end]
    if not stack:
        value = _loads(body)
        return None if value is _NOTHING else value
    closers = "".join("}" if opener == "{" else "]" for opener, _ in reversed(stack))
    tail = '"' if in_string and not escaped else ""
    value = _loads(body + tail + closers)
    if value is not _NOTHING:
        return value
    cut = text[start : stack[-1][1]].rstrip().rstrip(",")
    value = _loads(cut + closers)
    return None if value is _NOTHING else value


def _loads(text: str) -> Any:
    try:
        return json.loads(text, strict=False)
    except ValueError:
        return _NOTHING
