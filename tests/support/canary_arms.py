"""What the canary tests share: two contract versions of one triage function, an emulator responder whose failures
are fixed by the call's ordinal within its arm, and routing keys known to land on each arm.

A prompt says ``case N``; the responder answers the candidate's model (:data:`CANDIDATE_MODEL`) and the control's
(:data:`CONTROL_MODEL`) by the rule given for each: ``fails(n)`` true means an answer the v2 contract refuses
(no ``category``), which the v1 contract also refuses when the answer has no ``summary`` either. So the count of
failures on each arm is known before a call is made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Literal

from pydantic import BaseModel, Field

from guardrail.canary.routing import position
from guardrail.testing import reply
from guardrail.testing.behaviours import Reply
from guardrail.testing.recording import RecordedRequest

CONTROL_MODEL = "triage-v1"
CANDIDATE_MODEL = "triage-v2"
_CASE = re.compile(r"case (\d+)")


class TicketV1(BaseModel):
    """The contract in production: an urgency and a summary."""

    urgency: int = Field(ge=1, le=5)
    summary: str


class TicketV2(BaseModel):
    """The candidate contract: a category besides."""

    urgency: int = Field(ge=1, le=5)
    summary: str
    category: Literal["shipping", "billing", "other"]


def responder(control_fails: Callable[[int], bool],
              candidate_fails: Callable[[int], bool]) -> Callable[[RecordedRequest], Reply]:
    """Answers each arm's ``case N``: a failing answer (no summary, no category) when that arm's rule says so."""

    def answer(request: RecordedRequest) -> Reply:
        found = _CASE.search(json.dumps(request.body))
        number = int(found.group(1)) if found else -1
        fails = (candidate_fails if request.model == CANDIDATE_MODEL else control_fails)(number)
        if fails:
            return reply.answer(json.dumps({"urgency": 3}))
        return reply.answer(json.dumps({"urgency": 3, "summary": f"case {number}", "category": "shipping"}))

    return answer


def keys_for(name: str, share: float, candidate: bool) -> Iterator[int]:
    """Integer routing keys that the canary ``name`` at ``share`` sends to the candidate (or to control)."""
    key = 0
    while True:
        if (position(name, key) < share) == candidate:
            yield key
        key += 1


def requests_to(requests: list[RecordedRequest], model: str) -> int:
    """How many of the emulator's requests named ``model``."""
    return sum(1 for request in requests if request.model == model)
