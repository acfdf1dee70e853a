"""Batch jobs the way the batch tests make them: a contract importable from another process, requests whose
text says how the emulated model answers them, and that model (a responder for the emulator)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from guardrail.testing import Emulator, RecordedRequest, reply
from guardrail.testing.behaviours import Reply

#: Each kind of item, by the word its prompt carries: what the emulated model does with it.
#: good        a valid answer at once
#: repairable  a valid answer with syntax slips the parse layer repairs (no re-ask)
#: bad         an answer missing a field first, a valid one after the feedback turn (one re-ask)
#: hopeless    an answer missing a field every time (ends as GaveUp)
#: failed      the vendor answers the item with an error 400 (ends as VendorError)
#: flaky       the vendor answers the item with an error 500 first, a valid answer the next time
KINDS = ("good", "repairable", "bad", "hopeless", "failed", "flaky")
#: Every answer's usage, so sums are exact.
USAGE = (100, 10)
GOOD = '{"title": "printer on fire", "priority": 2}'


class Ticket(BaseModel):
    title: str
    priority: int = Field(ge=1, le=5)


def requests(count: int, kinds: tuple[str, ...] = KINDS, *, model: str = "gpt-4o-mini",
             max_tokens: int | None = None) -> list[dict[str, Any]]:
    """``count`` requests cycling through ``kinds``; custom_id ``<kind>-<n>``."""
    out = []
    for n in range(count):
        kind = kinds[n % len(kinds)]
        request: dict[str, Any] = {"custom_id": f"{kind}-{n}", "model": model,
                                   "messages": [{"role": "user", "content": f"ticket {n}: {kind}"}]}
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        out.append(request)
    return out


def gemini_requests(count: int, kinds: tuple[str, ...] = KINDS, *, model: str = "gemini-2.5-flash",
                    config: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The same items as :func:`requests` as ``generate_content`` keywords (``contents``, ``config``)."""
    out = []
    for request in requests(count, kinds, model=model):
        item: dict[str, Any] = {"custom_id": request["custom_id"], "model": model,
                                "contents": request["messages"][0]["content"]}
        if config is not None:
            item["config"] = dict(config)
        out.append(item)
    return out


def kind_of(request: RecordedRequest) -> str:
    text = request.conversation_text
    return next((kind for kind in KINDS if f": {kind}" in text), "good")


def reasked(request: RecordedRequest) -> bool:
    """Whether the request carries the feedback turn of a re-ask."""
    return "Your previous answer could not be used" in request.conversation_text


class Model:
    """The emulated model of the batch tests (see :data:`KINDS`); remembers which flaky items it failed once."""

    def __init__(self) -> None:
        self.failed_once: set[str] = set()

    def __call__(self, request: RecordedRequest) -> Reply:
        kind = kind_of(request)
        if kind == "repairable":
            return reply.answer('```json\n{"title": "printer on fire", "priority": 2,}\n```', usage=USAGE)
        if kind == "hopeless" or (kind == "bad" and not reasked(request)):
            return reply.answer('{"title": "printer on fire"}', usage=USAGE)
        if kind == "failed":
            return reply.error(400, message="This request is not valid.")
        if kind == "flaky" and request.conversation_text not in self.failed_once:
            self.failed_once.add(request.conversation_text)
            return reply.server_error(500)
        return reply.answer(GOOD, usage=USAGE)


def collect(job: Any) -> dict[str, Any]:
    """Every ``(custom_id, outcome)`` of a sync job's results, checking that none is yielded twice."""
    seen: dict[str, Any] = {}
    for custom_id, outcome in job.results(poll_interval=0):
        assert custom_id not in seen, f"{custom_id} yielded twice"
        seen[custom_id] = outcome
    return seen


def rounds_of(emu: Emulator) -> list[list[str]]:
    """The custom_ids each vendor batch answered, batch by batch (oldest first)."""
    rounds: dict[str, list[str]] = {}
    for r in emu.requests:
        if "x-batch-id" in r.headers:
            rounds.setdefault(r.headers["x-batch-id"], []).append(r.headers["x-custom-id"])
    return list(rounds.values())
