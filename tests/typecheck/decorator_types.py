"""Checked by mypy in CI (not run): decorated functions keep their parameters and return types."""

from __future__ import annotations

from typing import assert_type

from pydantic import BaseModel

import guardrail


class Ticket(BaseModel):
    urgency: int


@guardrail.structured
def triage(inquiry: str, tier: str = "gold") -> Ticket:
    """Triage."""
    raise NotImplementedError


@guardrail.structured(model="gpt-4o", max_attempts=2)
async def triage_async(inquiry: str) -> list[Ticket]:
    """Triage many."""
    raise NotImplementedError


def check() -> None:
    assert_type(triage("x"), Ticket)
    assert_type(triage("x", tier="silver"), Ticket)
    triage(1)  # type: ignore[arg-type]
    assert_type(guardrail.parse("{}", Ticket), Ticket)


async def check_async() -> None:
    assert_type(await triage_async("x"), list[Ticket])
