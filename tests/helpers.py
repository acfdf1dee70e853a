"""Helpers shared by the test modules (plain functions, imported as ``helpers``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from tenacity import RetryCallState

from guardrail.retry import RetryPolicy


def same(a: Any, b: Any) -> bool:
    """Type-aware deep equality: ``True`` is not ``1``, ``1.0`` is not ``1``, ``-0.0`` is not ``0.0``,
    NaN equals NaN, object key order counts, models compare by class, fields and fields set."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, BaseModel):
        return same(a.__dict__, b.__dict__) and a.model_fields_set == b.model_fields_set
    return bool(a == b)


@dataclass(frozen=True)
class RecordingRetry(RetryPolicy):
    """A :class:`~guardrail.RetryPolicy` that records every wait tenacity *asked for* before a retry.

    The waits are still computed by the real policy (``Retry-After``, its cap, full jitter, the deadline stop)
    and still slept: tenacity's ``before_sleep`` hook only writes ``upcoming_sleep`` into :attr:`waits`. Tests
    assert those numbers ("the server's Retry-After was honoured", "capped at max_wait", "no wait at all")
    instead of measuring elapsed time. ``dataclasses.replace`` (a chain's deadline) keeps the same list.
    """

    waits: list[float] = field(default_factory=list, compare=False)

    def tenacity_kwargs(self, deadline_at: float | None) -> dict[str, Any]:
        def record(state: RetryCallState) -> None:
            self.waits.append(state.upcoming_sleep)

        return {**super().tenacity_kwargs(deadline_at), "before_sleep": record}
