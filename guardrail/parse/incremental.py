"""Previews of JSON that arrives in pieces, in time linear in the text: the state is carried across pieces.

:func:`guardrail.parse.partial.preview` reads a whole text; calling it after every piece of a stream re-reads
everything that came before, which makes a long streamed answer cost the square of its length.
:class:`GrowingJSON` reads each piece once: it keeps where it is (inside a string, which containers are
open, the members finished so far, built into Python values as they finish) and hands out a preview built
from that state.

What a preview shows is what ``preview(text)`` shows for the same text, at the points where a preview is
worth showing: :attr:`GrowingJSON.settled` is false while the text ends inside a number or a literal (``12``
may become ``123``) or inside an escape (half of ``\\u00e9``, the first half of a surrogate pair), and a preview
is only taken where it is true, so every preview is on the way to the answer. A string's raw control
characters are kept as written (the parse layer keeps them too), and a trailing comma before a closing bracket
is passed over. The first other thing that is not JSON stops the previews for good (the final answer is the
parse layer's, which repairs what it can); so does nesting deeper than
:data:`~guardrail.parse.partial.MAX_PREVIEW_DEPTH`.

A preview copies only the open containers (a member that finished is never changed again, so previews share
it with each other: treat them as read-only) and the string being written. :meth:`GrowingJSON.cost` says how
much that copy costs, so a caller can bound the rate of previews by the text received
(:class:`guardrail.call.streaming.Previewer` does).
"""

from __future__ import annotations

import re
from typing import Any

from guardrail.parse.partial import MAX_PREVIEW_DEPTH

__all__ = ["GrowingJSON"]

# What the reader expects next.
_SEEK, _VALUE, _KEY, _COLON, _AFTER, _STRING, _DONE, _FAILED = range(8)

_WHITESPACE = re.compile(r"[ \t\n\r]+")
_STRING_RUN = re.compile(r'[^"\\]+')
_SCALAR = re.compile(r"[-+.0-9A-Za-z]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_ESCAPE = re.compile(r'\\(?:(["\\/bfnrt])|u([0-9a-fA-F]{4}))')
_LOW_SURROGATE = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "NaN": float("nan"),
                             "Infinity": float("inf"), "-Infinity": float("-inf")}
#: A number or literal longer than this is not one the JSON reader takes (``int`` refuses 4300+ digits).
_MAX_SCALAR = 4400
#: The cost of copying one member of an open container, in the units of :meth:`GrowingJSON.cost` (a character
#: of text copied is 1).
ITEM_COST = 32

_NOTHING: Any = object()


class _Frame:
    """An open container: the members finished so far, and (objects) the key of the member being written."""

    __slots__ = ("items", "key")

    def __init__(self, items: dict[str, Any] | list[Any]) -> None:
        self.items = items
        self.key = ""


class GrowingJSON:
    """A JSON value read piece by piece (see the module docstring). Feed it the pieces in order."""

    def __init__(self) -> None:
        self._state = _SEEK
        self._stack: list[_Frame] = []
        self._root: Any = _NOTHING
        self._tail = ""  # the start of a number, literal or escape that the next piece finishes
        self._string: list[str] = []  # the string being read, decoded
        self._is_key = False  # whether that string is a key
        #: Goes up whenever what a preview would show changes.
        self.version = 0

    @property
    def settled(self) -> bool:
        """Whether a preview taken now is on the way to the answer: the text read so far ends between tokens
        or inside a string (not inside an escape), and nothing in it stopped the previews."""
        return not self._tail and self._state != _FAILED

    @property
    def failed(self) -> bool:
        """Whether the text stopped being JSON (or nested too deep): no preview from here on."""
        return self._state == _FAILED

    @property
    def done(self) -> bool:
        """Whether the value is complete (later text is not read)."""
        return self._state == _DONE

    def feed(self, piece: str) -> None:
        """Read the next piece of the text."""
        if self._state == _STRING and not self._tail:  # most pieces lie inside a string: read them at once
            run = _STRING_RUN.match(piece)
            if run is not None and run.end() == len(piece):
                self._string.append(piece)
                if not self._is_key:
                    self.version += 1
                return
        if self._state in (_DONE, _FAILED) or not piece:
            return
        if self._tail:
            piece, self._tail = self._tail + piece, ""
        try:
            self._read(piece)
        except _NotJSON:
            self._state = _FAILED
            self._stack, self._string, self._tail = [], [], ""

    def value(self) -> Any:
        """The preview: the value as it would be if the text stopped here, or ``None`` when there is none."""
        if self._state == _DONE:
            return self._root
        if self._state == _FAILED or not self._stack:
            return None
        child = _NOTHING
        if self._state == _STRING and not self._is_key:
            child = self._open_string()
        for frame in reversed(self._stack):
            items = frame.items.copy()
            if child is not _NOTHING:
                if isinstance(items, dict):
                    items[frame.key] = child
                else:
                    items.append(child)
            child = items
        return child

    def cost(self) -> int:
        """What :meth:`value` costs now: a unit per character of the string being written, :data:`ITEM_COST`
        per member of an open container copied."""
        if self._state == _DONE:
            return 0
        string = sum(map(len, self._string)) if self._state == _STRING and not self._is_key else 0
        return string + ITEM_COST * sum(len(frame.items) + 1 for frame in self._stack)

    # -- reading ----------------------------------------------------------------------------------------------
    def _open_string(self) -> str:
        parts = self._string
        if len(parts) != 1:
            joined = "".join(parts)
            parts[:] = [joined]
            return joined
        return parts[0]

    def _read(self, text: str) -> None:
        """Read ``text`` from where the last piece left off (one state machine, in one loop for speed)."""
        i, n = 0, len(text)
        stack = self._stack
        while i < n:
            state = self._state
            if state == _STRING:
                i = self._read_string(text, i, n)
                continue
            ch = text[i]
            if ch in " \t\n\r":
                found = _WHITESPACE.match(text, i)
                assert found is not None
                i = found.end()
                continue
            if state == _SEEK:
                starts = [at for at in (text.find("{", i), text.find("[", i)) if at >= 0]
                if not starts:
                    return
                i = min(starts)
                self._open(text[i])
                i += 1
            elif state == _VALUE:
                if ch == '"':
                    self._state, self._is_key, self._string = _STRING, False, []
                    self.version += 1
                    i += 1
                elif ch == "{" or ch == "[":
                    self._open(ch)
                    i += 1
                elif ch == "]" and isinstance(stack[-1].items, list):  # [] or a trailing comma: [1, 2,]
                    self._close(ch)
                    i += 1
                else:
                    found = _SCALAR.match(text, i)
                    if found is None:
                        raise _NotJSON
                    end = found.end()
                    if end == n:  # the piece ends inside it: read it whole with the next piece
                        if end - i > _MAX_SCALAR:
                            raise _NotJSON
                        self._tail = text[i:]
                        return
                    self._finished(_scalar(text[i:end]))
                    i = end
            elif state == _KEY:
                if ch == '"':
                    self._state, self._is_key, self._string = _STRING, True, []
                    i += 1
                elif ch == "}":  # {} or a trailing comma: {"a": 1,}
                    self._close(ch)
                    i += 1
                else:
                    raise _NotJSON
            elif state == _COLON:
                if ch != ":":
                    raise _NotJSON
                self._state = _VALUE
                i += 1
            elif state == _AFTER:
                is_object = isinstance(stack[-1].items, dict)
                if ch == ",":
                    self._state = _KEY if is_object else _VALUE
                elif ch == ("}" if is_object else "]"):
                    self._close(ch)
                else:
                    raise _NotJSON
                i += 1
            else:  # done: the text after the value is not read
                return

    def _read_string(self, text: str, i: int, n: int) -> int:
        """Read string content from ``i``; where reading goes on."""
        run = _STRING_RUN.match(text, i)
        if run is not None:
            self._string.append(run.group())
            if not self._is_key:
                self.version += 1
            i = run.end()
            if i == n:
                return i
        if text[i] == '"':
            string = "".join(self._string)
            self._string = []
            if self._is_key:
                self._stack[-1].key = string
                self._state = _COLON
            else:
                self._finished(string, shown=True)
            return i + 1
        escape = _ESCAPE.match(text, i)
        if escape is None:
            if n - i < 6 and _could_be_escape(text[i:]):
                self._tail = text[i:]
                return n
            raise _NotJSON
        simple, code = escape.groups()
        end = escape.end()
        if simple is not None:
            char = _SIMPLE[simple]
        else:
            point = int(code, 16)
            if 0xD800 <= point <= 0xDBFF:  # a surrogate pair's first half: the second half makes one character
                if n - end < 6 and _could_be_escape(text[end:]):
                    self._tail = text[i:]
                    return n
                low = _LOW_SURROGATE.match(text, end)
                if low is not None:
                    point = 0x10000 + ((point - 0xD800) << 10) + (int(low.group()[2:], 16) - 0xDC00)
                    end = low.end()
            char = chr(point)
        self._string.append(char)
        if not self._is_key:
            self.version += 1
        return end

    def _open(self, opener: str) -> None:
        if len(self._stack) >= MAX_PREVIEW_DEPTH:
            raise _NotJSON
        self._stack.append(_Frame({} if opener == "{" else []))
        self._state = _KEY if opener == "{" else _VALUE
        self.version += 1

    def _close(self, closer: str) -> None:
        frame = self._stack.pop()
        if not self._stack:
            self._root, self._state = frame.items, _DONE
        else:
            self._finished(frame.items, shown=True)

    def _finished(self, value: Any, *, shown: bool = False) -> None:
        """A value is complete: it becomes a member of the innermost open container. ``shown``: previews
        showed it already (a container or a string, shown while open), so they do not change."""
        frame = self._stack[-1]
        if isinstance(frame.items, dict):
            frame.items[frame.key] = value
        else:
            frame.items.append(value)
        self._state = _AFTER
        if not shown:
            self.version += 1


class _NotJSON(Exception):
    """The text stopped being JSON: previews stop (internal; never leaves this module)."""


def _scalar(token: str) -> Any:
    """A whole number or literal token as the JSON reader reads it."""
    if token in _LITERALS:
        return _LITERALS[token]
    number = _NUMBER.fullmatch(token)
    if number is None:
        raise _NotJSON
    if number.group(1) is None and number.group(2) is None:
        try:
            return int(token)
        except ValueError:  # more digits than int() reads
            raise _NotJSON from None
    return float(token)


def _could_be_escape(text: str) -> bool:
    """Whether ``text`` (shorter than an escape) is the start of one: ``\\``, ``\\u``, ``\\u0``, ..."""
    return text == "" or (text[0] == "\\" and (len(text) == 1 or (text[1] == "u" and all(
        ch in "0123456789abcdefABCDEF" for ch in text[2:]))))
