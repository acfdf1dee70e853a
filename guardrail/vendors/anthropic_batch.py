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
from collections.abc import Iterator, Mapping
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

    def line(self, custom_id: str, kwargs: Mapping[str, Any]) -> bytes:
        return dumps({"custom_id": custom_id, "params": request_body(kwargs)}) + b"\n"

    def submit(self, client: Any, lines: Path, *, metadata: Mapping[str, str]) -> str:
        with lines.open("rb") as handle:
            requests = [json.loads(raw) for raw in handle if raw.strip()]
        return str(client.messages.batches.create(requests=requests).id)

    def state(self, client: Any, batch_id: str) -> BatchState:
        batch = client.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        errored = counts.errored + counts.canceled + counts.expired
        done = counts.succeeded + errored
        return BatchState(batch.id, batch.processing_status, batch.processing_status == "ended",
                          done + counts.processing, done, errored)

    def results(self, client: Any, batch_id: str) -> Iterator[tuple[str, Any]]:
        for line in client.messages.batches.results(batch_id):
            result = line.result
            kind = getattr(result, "type", None)
            if kind == "succeeded":
                yield line.custom_id, result.message
            elif kind == "errored":
                body = result.error.to_dict() if hasattr(result.error, "to_dict") else dict(result.error)
                inner = body.get("error") or {}
                etype = str(inner.get("type") or "api_error")
                yield line.custom_id, ItemError(str(inner.get("message") or etype), reason="errored",
                                                status=_STATUS.get(etype), body=body)
            else:
                reason: ItemReason = "expired" if kind == "expired" else "canceled"
                message = f"the item was not run: the batch {'expired' if reason == 'expired' else 'was canceled'}"
                yield line.custom_id, ItemError(message, reason=reason, status=None,
                                                body={"type": "error", "error": {"type": f"batch_{reason}",
                                                                                 "message": message}})

    def cancel(self, client: Any, batch_id: str) -> None:
        client.messages.batches.cancel(batch_id)
