"""OpenAI's Batch API: a JSONL file of requests uploaded with ``purpose="batch"``, a batch over it, and the
output and error files it leaves, each read line by line.

One input line: ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}`` (or
``/v1/responses``). One output line: ``{"id", "custom_id", "response": {"status_code", "request_id", "body"},
"error"}``; a request the API refused has its ``status_code`` and error ``body`` there, one never run (the
batch expired or was cancelled) ``response: null`` and ``error: {"code": "batch_expired" | "batch_cancelled"}``.
Statuses: ``validating``, ``in_progress``, ``finalizing``, ``completed``, and the ends ``failed``, ``expired``,
``cancelling``/``cancelled``. Limits: 50,000 requests and 200 MB per input file.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

from guardrail.vendors.batches import BatchApi, BatchState, ItemError, ItemReason, dumps, request_body

__all__ = ["OpenAIBatch"]

#: The batch endpoint URL of each API.
_URLS = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}
_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
_NEVER_RAN: dict[str, ItemReason] = {"batch_expired": "expired", "batch_cancelled": "canceled"}


class OpenAIBatch(BatchApi):
    """``client.files`` + ``client.batches`` for Chat Completions (or Responses) requests."""

    sdk = "openai"
    max_items = 50_000
    max_bytes = 190 * 1024 * 1024

    def __init__(self, api: str = "chat") -> None:
        self.api = api
        self.url = _URLS[api]

    def serves(self, client: Any) -> bool:
        import openai

        return isinstance(client, (openai.OpenAI, openai.AsyncOpenAI)) and \
            not isinstance(client, (openai.AzureOpenAI, openai.AsyncAzureOpenAI))

    def line(self, custom_id: str, kwargs: Mapping[str, Any]) -> bytes:
        return dumps({"custom_id": custom_id, "method": "POST", "url": self.url, "body": request_body(kwargs)}) + b"\n"

    def submit(self, client: Any, lines: Path, *, metadata: Mapping[str, str]) -> str:
        with lines.open("rb") as handle:  # an open file: the SDK streams it instead of reading it whole
            uploaded = client.files.create(file=(lines.name, handle, "application/jsonl"), purpose="batch")
        return str(client.batches.create(**self._create(uploaded.id, metadata)).id)

    async def asubmit(self, client: Any, lines: Path, *, metadata: Mapping[str, str]) -> str:
        with lines.open("rb") as handle:
            uploaded = await client.files.create(file=(lines.name, handle, "application/jsonl"), purpose="batch")
        return str((await client.batches.create(**self._create(uploaded.id, metadata))).id)

    def _create(self, file_id: str, metadata: Mapping[str, str]) -> dict[str, Any]:
        return {"input_file_id": file_id, "endpoint": self.url, "completion_window": "24h",
                "metadata": dict(metadata) or None}

    def state(self, client: Any, batch_id: str) -> BatchState:
        return _state(client.batches.retrieve(batch_id))

    async def astate(self, client: Any, batch_id: str) -> BatchState:
        return _state(await client.batches.retrieve(batch_id))

    def results(self, client: Any, batch_id: str) -> Iterator[tuple[str, Any]]:
        batch = client.batches.retrieve(batch_id)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                with client.files.with_streaming_response.content(file_id) as response:
                    for raw in response.iter_lines():
                        if raw.strip():
                            yield self._item(json.loads(raw))

    async def aresults(self, client: Any, batch_id: str) -> AsyncIterator[tuple[str, Any]]:
        batch = await client.batches.retrieve(batch_id)
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                async with client.files.with_streaming_response.content(file_id) as response:
                    async for raw in response.iter_lines():
                        if raw.strip():
                            yield self._item(json.loads(raw))

    def _item(self, line: Mapping[str, Any]) -> tuple[str, Any]:
        custom_id = str(line.get("custom_id"))
        response = line.get("response") or {}
        status, body = response.get("status_code"), response.get("body")
        if status == 200 and isinstance(body, dict):
            return custom_id, _response_type(self.api).construct(**body)
        error = line.get("error") or {}
        code = error.get("code") if isinstance(error, dict) else None
        if isinstance(status, int) and isinstance(body, dict):
            message = str((body.get("error") or {}).get("message") or f"status {status}")
            return custom_id, ItemError(message, reason="errored", status=status, body=body)
        reason = _NEVER_RAN.get(str(code), "errored")
        message = str(error.get("message") if isinstance(error, dict) else "") or f"the item was not run ({code})"
        return custom_id, ItemError(message, reason=reason, status=None,
                                    body={"error": {"type": code or reason, "code": code, "message": message}})

    def cancel(self, client: Any, batch_id: str) -> None:
        client.batches.cancel(batch_id)

    async def acancel(self, client: Any, batch_id: str) -> None:
        await client.batches.cancel(batch_id)


def _state(batch: Any) -> BatchState:
    counts = batch.request_counts
    total, done, errored = (counts.total, counts.completed + counts.failed, counts.failed) if counts else (0, 0, 0)
    errors = [error.message for error in (batch.errors.data or ())] if batch.errors else []
    return BatchState(batch.id, batch.status, batch.status in _ENDED, total, done, errored,
                      failed=batch.status == "failed", message="; ".join(str(e) for e in errors if e))


def _response_type(api: str) -> Any:
    if api == "responses":
        from openai.types.responses import Response

        return Response
    from openai.types.chat import ChatCompletion

    return ChatCompletion
