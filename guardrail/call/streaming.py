"""What ``create_partial`` and ``@structured(...).stream`` return: previews while streaming, then the value.

Iterating gives :class:`~guardrail.outcome.Partial` previews (``item.partial is True``, never validated) and, last,
the validated value itself; after the loop ``.result`` holds the :class:`~guardrail.Result`. A failure
raises the same typed errors as ``create`` at the point it happens; a stream cut off mid-way ends as
``truncated`` (after the token limit is raised once), never as its last preview.

A preview leaves out what is not yet known (a key being written, a number or literal that may go on, half an
escape), so each is on the way to the answer. The answer is read once, piece by piece, and previews come when
what they show changed, at a bounded rate (:class:`Previewer`): a stream costs time linear in its length.
Previews share their finished members with one another: treat them as read-only.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from types import TracebackType
from typing import Any, Generic, TypeVar

from guardrail.errors import NotReady
from guardrail.outcome import Partial, Result
from guardrail.parse.incremental import GrowingJSON
from guardrail.vendors.base import Accumulator, Pieces

__all__ = ["PREVIEW_OVERHEAD", "PREVIEW_PER_CHAR", "PREVIEW_PER_PIECE", "PREVIEW_START", "AsyncStructuredStream",
           "Previewer", "StructuredStream"]

T = TypeVar("T")

#: What previews may spend, in the units of their cost (a character of text copied is 1, about 0.1 ns), for each
#: piece of a streamed answer and for each character of it: previews cost at most a constant per piece and per
#: character received, as reading the stream does, so a stream costs time linear in its length. About a third
#: of what the leanest SDK (anthropic) spends reading a piece of ~12 characters.
PREVIEW_PER_PIECE = 64 * 1024
PREVIEW_PER_CHAR = 1024
#: What a preview costs besides the copies: building it and handing it through the generators to the consumer
#: (about 6 us sync, 15 us async): a preview every other piece of a short answer.
PREVIEW_OVERHEAD = 128 * 1024
#: What the first previews may spend before the answer has earned anything: the first eight come at once.
PREVIEW_START = 1024 * 1024


class Previewer:
    """Turns a streamed answer into :class:`Partial` previews, reading each piece of it once.

    A :class:`~guardrail.parse.incremental.GrowingJSON` carries the reading across pieces. A preview is made
    when what it shows changed, where the text ends on the way to the answer (not inside a number, a literal
    or an escape), and at a bounded rate: each piece received earns :data:`PREVIEW_PER_PIECE` units and each
    character :data:`PREVIEW_PER_CHAR`, and a preview spends what it costs (:data:`PREVIEW_OVERHEAD`, and the
    text so far, the open containers and the string being written that it copies). So previews cost at most a
    constant per piece and character of the answer, however long it grows: a preview at every piece of a short
    answer, one every few pieces of a very long one.
    """

    def __init__(self, attempt: int = 1, wrapped: str | None = None) -> None:
        self.attempt = attempt  # the attempt the previews belong to
        self.wrapped = wrapped  # the key a non-object root was wrapped under (previews show the contract's shape)
        self.pieces: Pieces | None = None
        self.json = GrowingJSON()
        self.read = self.size = 0  # pieces and characters read
        self.shown = 0  # the version of the last preview
        self.allowance = PREVIEW_START

    def __call__(self, accumulator: Accumulator) -> Partial | None:
        pieces = accumulator.answer()
        if pieces is not self.pieces:  # the answer moved (the output tool's call began): read it from the start
            self.pieces, self.json, self.read, self.size, self.shown = pieces, GrowingJSON(), 0, 0, 0
        parts, growing = pieces.parts, self.json
        if self.read == len(parts):
            return None
        for part in parts[self.read:] if self.read + 1 < len(parts) else (parts[-1],):
            growing.feed(part)
        self.allowance += PREVIEW_PER_PIECE * (len(parts) - self.read) + PREVIEW_PER_CHAR * (pieces.size - self.size)
        self.read, self.size = len(parts), pieces.size
        if growing.version == self.shown or not growing.settled or PREVIEW_OVERHEAD + self.size > self.allowance:
            return None
        cost = PREVIEW_OVERHEAD + self.size + growing.cost()
        if cost > self.allowance:
            return None
        self.allowance -= cost
        self.shown = growing.version
        data = growing.value()
        if self.wrapped is not None:  # show the contract's shape, not the vendor wrapper
            data = data.get(self.wrapped) if isinstance(data, dict) else None
        if data is None:
            return None
        return Partial(data, pieces.text(), self.attempt)



class _Stream(Generic[T]):
    """What the sync and async streams share: the result once read to the end, and the items shown."""

    result: Result[T] | None = None

    def _shown(self, item: Partial | Result[Any]) -> Any:
        """A preview as it is; the result as its value (kept as :attr:`result`)."""
        if isinstance(item, Result):
            self.result = item
            return item.value
        return item

    @property
    def value(self) -> T:
        """The validated value, once the stream has been read to the end."""
        if self.result is None:
            raise NotReady("the stream has not been read to the end yet")
        return self.result.value


class StructuredStream(_Stream[T]):
    """A sync stream of previews then the value (see the module docstring); ``T`` is the value's type."""

    def __init__(self, items: Generator[Partial | Result[Any], None, None]) -> None:
        self._items = items

    def close(self) -> None:
        """Stop early: end the HTTP stream and the call's span (also done on leaving a ``with`` block)."""
        self._items.close()

    def __enter__(self) -> StructuredStream[T]:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __iter__(self) -> Iterator[Any]:
        for item in self._items:
            yield self._shown(item)


class AsyncStructuredStream(_Stream[T]):
    """The async twin of :class:`StructuredStream` (``async for``)."""

    def __init__(self, items: AsyncGenerator[Partial | Result[Any], None]) -> None:
        self._items = items

    async def aclose(self) -> None:
        """Stop early: end the HTTP stream and the call's span (also done on leaving an ``async with`` block)."""
        await self._items.aclose()

    async def __aenter__(self) -> AsyncStructuredStream[T]:
        return self

    def __await__(self) -> Generator[Any, None, AsyncStructuredStream[T]]:
        """Awaiting the stream gives the stream itself: an SDK whose stream method is a coroutine
        (google-genai's ``await client.aio.models.generate_content_stream(...)``) is used the same way."""
        return self._itself().__await__()

    async def _itself(self) -> AsyncStructuredStream[T]:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for item in self._items:
            yield self._shown(item)
