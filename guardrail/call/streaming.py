"""What ``create_partial`` and ``@structured(...).stream`` return: previews while streaming, then the value.

Iterating gives :class:`~guardrail.outcome.Partial` previews (``item.partial is True``, never validated) and, last,
the validated value itself; after the loop ``.result`` holds the :class:`~guardrail.Result`. A failure
raises the same typed errors as ``create`` at the point it happens; a stream cut off mid-way ends as
``truncated`` (after the token limit is raised once), never as its last preview.

A preview leaves out what is not yet known (a key being written, a number or literal that may go on, half an
escape), so each is on the way to the answer. The answer is read once, piece by piece, and previews come when
what they show changed, at a bounded rate (the drivers' ``Previewer``): a stream costs time linear in its
length. Previews share their finished members with one another: treat them as read-only.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from types import TracebackType
from typing import Any, Generic, TypeVar

from guardrail.errors import NotReady
from guardrail.outcome import Partial, Result

T = TypeVar("T")


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

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for item in self._items:
            yield self._shown(item)
