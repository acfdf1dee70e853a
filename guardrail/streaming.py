"""What ``create_partial`` and ``@structured(...).stream`` return: previews while streaming, then the value.

Iterating gives :class:`~guardrail.Partial` previews (``item.partial is True``, never validated) and, last,
the validated value itself; after the loop ``.result`` holds the :class:`~guardrail.Result`. A failure
raises the same typed errors as ``create`` at the point it happens; a stream cut off mid-way ends as
``truncated`` (after the token limit is raised once), never as its last preview.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from guardrail.outcome import Partial, Result


class StructuredStream:
    """A sync stream of previews then the value (see the module docstring)."""

    def __init__(self, items: Iterator[Partial | Result[Any]]) -> None:
        self._items = items
        self.result: Result[Any] | None = None

    def __iter__(self) -> Iterator[Any]:
        for item in self._items:
            if isinstance(item, Result):
                self.result = item
                yield item.value
            else:
                yield item

    @property
    def value(self) -> Any:
        """The validated value, once the stream has been read to the end."""
        if self.result is None:
            raise RuntimeError("the stream has not been read to the end yet")
        return self.result.value


class AsyncStructuredStream:
    """The async twin of :class:`StructuredStream` (``async for``)."""

    def __init__(self, items: AsyncIterator[Partial | Result[Any]]) -> None:
        self._items = items
        self.result: Result[Any] | None = None

    async def __aiter__(self) -> AsyncIterator[Any]:
        async for item in self._items:
            if isinstance(item, Result):
                self.result = item
                yield item.value
            else:
                yield item

    @property
    def value(self) -> Any:
        """The validated value, once the stream has been read to the end."""
        if self.result is None:
            raise RuntimeError("the stream has not been read to the end yet")
        return self.result.value
