"""Anthropic's Message Batches: requests sent inline (``{"custom_id", "params"}``), results as a JSONL stream.

``client.messages.batches.create(requests=[...])`` takes the requests in the body (up to 100,000 or 256 MB; a
job's round is split into chunks of :attr:`AnthropicBatch.max_items` so no request body is built whole for a
huge job). Statuses: ``in_progress``, ``canceling``, ``ended``. One result line: ``{"custom_id", "result":
{"type": "succeeded", "message"} | {"type": "errored", "error": {"type": "error", "error": {"type",
"message"}}} | {"type": "canceled"} | {"type": "expired"}}``; the SDK reads them as a stream
(``client.messages.batches.results(id)``, its JSONL decoder).

An errored item carries the error's type but no HTTP status; the status each type stands for is Anthropic's
documented table (https://docs.claude.com/en/api/errors), so an item's error is sorted as the same error of a
live call would be.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

from guardrail.vendors.batches import BatchApi, BatchState, ItemError, ItemReason, dumps, request_body

__all__ = ["AnthropicBatch"]

#: Anthropic's error types and the HTTP status each is sent with.
_STATUS = {"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402,
           "permission_error": 403, "not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429,
           "api_error": 500, "timeout_error": 504, "overloaded_error": 529}


class AnthropicBatch(BatchApi):
    """``client.messages.batches`` for Messages requests."""

    sdk = "anthropic"
    api = "messages"
    max_items = 10_000
    max_bytes = 64 * 1024 * 1024

    def serves(self, client: Any) -> bool:
        import anthropic

        return isinstance(client, (anthropic.Anthropic, anthropic.AsyncAnthropic))

    def line(self, custom_id: str, kwargs: Mapping[str, Any]) -> bytes:
        return dumps({"custom_id": custom_id, "params": request_body(kwargs)}) + b"\n"

    def submit(self, client: Any, lines: Path, *, metadata: Mapping[str, str]) -> str:
        return str(client.messages.batches.create(requests=_requests(lines)).id)

    async def asubmit(self, client: Any, lines: Path, *, metadata: Mapping[str, str]) -> str:
        return str((await client.messages.batches.create(requests=_requests(lines))).id)

    def state(self, client: Any, batch_id: str) -> BatchState:
        return _state(client.messages.batches.retrieve(batch_id))

    async def astate(self, client: Any, batch_id: str) -> BatchState:
        return _state(await client.messages.batches.retrieve(batch_id))

    def results(self, client: Any, batch_id: str) -> Iterator[tuple[str, Any]]:
        for line in client.messages.batches.results(batch_id):
            yield _item(line)

    async def aresults(self, client: Any, batch_id: str) -> AsyncIterator[tuple[str, Any]]:
        async for line in await client.messages.batches.results(batch_id):
            yield _item(line)

    def cancel(self, client: Any, batch_id: str) -> None:
        client.messages.batches.cancel(batch_id)

    async def acancel(self, client: Any, batch_id: str) -> None:
        await client.messages.batches.cancel(batch_id)


def _requests(lines: Path) -> list[Any]:
    """The requests of one chunk (the chunk is what a request body holds: at most ``max_items``)."""
    with lines.open("rb") as handle:
        return [json.loads(raw) for raw in handle if raw.strip()]


def _state(batch: Any) -> BatchState:
    counts = batch.request_counts
    errored = counts.errored + counts.canceled + counts.expired
    done = counts.succeeded + errored
    return BatchState(batch.id, batch.processing_status, batch.processing_status == "ended",
                      done + counts.processing, done, errored)


def _item(line: Any) -> tuple[str, Any]:
    result = line.result
    kind = getattr(result, "type", None)
    if kind == "succeeded":
        return line.custom_id, result.message
    if kind == "errored":
        body = result.error.to_dict() if hasattr(result.error, "to_dict") else dict(result.error)
        inner = body.get("error") or {}
        etype = str(inner.get("type") or "api_error")
        return line.custom_id, ItemError(str(inner.get("message") or etype), reason="errored",
                                         status=_STATUS.get(etype), body=body)
    reason: ItemReason = "expired" if kind == "expired" else "canceled"
    message = f"the item was not run: the batch {'expired' if reason == 'expired' else 'was canceled'}"
    return line.custom_id, ItemError(message, reason=reason, status=None,
                                     body={"type": "error", "error": {"type": f"batch_{reason}", "message": message}})
