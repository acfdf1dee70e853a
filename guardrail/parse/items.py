"""The finished members of a JSON list that arrives in pieces, as the text of each: ``{"items": [a, b, ...]}``.

``create_iterable`` (:mod:`guardrail.call.iterable`) asks the model for a list wrapped in an object (strict native
modes need an object root) and hands each member on as soon as it is finished. :class:`ItemSpans` reads the
answer's pieces once each, keeping only the structure (the open containers, whether it is inside a string or
an escape, the root object's current key), and gives the text of every member of the list under ``key`` when
the ``,`` or ``]`` after it arrives: a member the text stops inside (cut off, or still being written) is never
given, and neither is a number that may go on (``12`` before ``3``).

Each member is given as the text the model wrote, so the caller reads it with the parse layer as it reads any
answer (its repairs, its duplicate-key checks), never a value rebuilt from a lenient reading; a member that is
not one JSON value as written (a comment, a quote JSON does not know: its commas may split nothing) ends the
reading, unread, for the whole answer's reading to decide. Text before the root is passed over when it is
whitespace or ends with a code fence's opening line (prose before that holds no ``{``); a root after other
prose (maybe an example of the shape, before the answer), a root that is not an object, or brackets that do
not match, end the reading for good (the whole answer is still read by the parse layer at the end). Linear in
the text: a regular expression jumps to the next character that matters, and a member's pieces are joined once.
"""

from __future__ import annotations

import json
import re

__all__ = ["ItemSpans"]

#: Outside a string: the characters that change the structure. Inside: the end of the string or an escape.
_STRUCTURE = re.compile(r'[\[\]{}",:]')
_IN_STRING = re.compile(r'[\\"]')
_ROOT = re.compile(r"[\[{]")
#: What may come before the root for its list to be read as it streams: nothing but whitespace, or a fence
#: opening line (after prose with no opener in it). After other prose the object may be an example the model
#: gave before its answer (``The shape is {"items": [...]}. Here it is: ...``): the whole answer decides.
_OPENS = re.compile(r"\s*|.*(?:^|\n)[ \t]*(?:```+|~~~+)[^\n`]*\n\s*", re.DOTALL)
_CLOSER = {"]": "[", "}": "{"}


class ItemSpans:
    """Reads ``{"<key>": [member, ...], ...}`` piece by piece; :meth:`feed` returns the members it finished."""

    def __init__(self, key: str = "items") -> None:
        self.key = key
        self._stack: list[str] = []  # the open containers' openers
        self._before: list[str] = []  # the text before the root
        self._in_string = False
        self._escaped = False  # a backslash ended the last piece inside a string
        self._list = 0  # 0: the list has not opened; 1: reading its members; -1: it closed (or the reading ended)
        self._name: list[str] | None = None  # the root's string being read (a key, or a value)
        self._last = ""  # the root's last finished string
        self._current = ""  # the root's member being read (the key before the colon)
        self._member: list[str] = []  # the pieces of the list member being read

    @property
    def ended(self) -> bool:
        """Whether the list closed, or the text stopped having the expected shape: nothing more will come."""
        return self._list < 0

    def feed(self, piece: str) -> list[str]:
        """Read the next piece; the text of each list member it finished (stripped of surrounding whitespace)."""
        found: list[str] = []
        if self._list < 0 or not piece:
            return found
        i, n = 0, len(piece)
        stack = self._stack
        mark = 0  # where the current member's text starts in this piece
        while i < n:
            if self._in_string:
                if self._escaped:
                    self._escaped = False
                    i += 1
                    continue
                hit = _IN_STRING.search(piece, i)
                if hit is None:
                    self._keep_name(piece, i, n)
                    i = n
                    break
                at = hit.start()
                if piece[at] == "\\":
                    self._keep_name(piece, i, at + 1)
                    self._escaped = True
                    i = at + 1
                    continue
                self._keep_name(piece, i, at)
                self._in_string = False
                if self._name is not None:
                    self._last, self._name = "".join(self._name), None
                i = at + 1
                continue
            if not stack:
                hit = _ROOT.search(piece, i)
                if hit is None:
                    self._before.append(piece[i:])
                    return found
                self._before.append(piece[i:hit.start()])
                # not the object the list is wrapped in, or one that prose comes before (maybe an example)
                if hit.group() != "{" or not _OPENS.fullmatch("".join(self._before)):
                    self._list = -1
                    return found
                self._before = []
                stack.append("{")
                i = hit.end()
                continue
            hit = _STRUCTURE.search(piece, i)
            if hit is None:
                break
            at, ch = hit.start(), hit.group()
            i = at + 1
            depth = len(stack)
            if ch == '"':
                self._in_string = True
                if depth == 1:
                    self._name = []
            elif ch == ":":
                if depth == 1:
                    self._current = self._last
            elif ch == ",":
                if depth == 1:
                    self._current = ""
                elif depth == 2 and self._list == 1:
                    if not self._finish(piece, mark, at, found):
                        return found
                    mark = i
            elif ch in "[{":
                stack.append(ch)
                if depth == 1 and ch == "[" and self._list == 0 and self._current == self.key:
                    self._list, self._member, mark = 1, [], i
            else:
                if stack.pop() != _CLOSER[ch]:  # brackets that do not match: not JSON, stop reading
                    self._list = -1
                    return found
                if depth == 2 and self._list == 1:  # the list closed
                    self._finish(piece, mark, at, found)  # (a member that is not JSON ends the reading too)
                    self._list = -1
                    return found
                if not stack:  # the root closed without the list
                    self._list = -1
                    return found
        if self._list == 1 and len(stack) >= 2:
            self._member.append(piece[mark:])
        return found

    def _keep_name(self, piece: str, start: int, end: int) -> None:
        if self._name is not None and end > start:
            self._name.append(piece[start:end])

    def _finish(self, piece: str, mark: int, at: int, found: list[str]) -> bool:
        """A member ended at ``at``: its text (empty between ``[`` and ``]``, or after a trailing comma: none).

        Only a member that is one JSON value as written is given: the reading splits at the ``,`` and ``]`` that
        JSON's lexing leaves outside strings, so text that is not JSON (a comment, a single-, smart- or
        backtick-quoted string: what the parse layer repairs) may hold a comma that splits nothing. The first
        such member ends the reading for good (false), unread: the whole answer's reading gives it and the rest.
        """
        self._member.append(piece[mark:at])
        text = "".join(self._member).strip()
        self._member = []
        if not text:
            return True
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            self._list = -1
            return False
        found.append(text)
        return True
