"""Gemini's batch mode (the Gemini API, google-genai's ``client.batches``): requests sent inline, answers inline.

``client.batches.create(model=..., src=[InlinedRequest, ...])`` posts ``{"batch": {"displayName",
"inputConfig": {"requests": {"requests": [{"request": GenerateContentRequest, "metadata": {"key": custom_id}}]}}}}``
to ``/v1beta/models/{model}:batchGenerateContent``; the SDK converts each ``InlinedRequest`` (``model``,
``contents``, ``config``: the keywords of one ``generate_content`` call) exactly as it converts a live call's, so a
batch line is those keywords as JSON (:meth:`GeminiBatch.line`) and the request body is the SDK's. Inline
requests are documented up to 20 MB a batch (ai.google.dev/gemini-api/docs/batch-mode): a round is split into
batches of at most :attr:`GeminiBatch.max_bytes` (and :attr:`GeminiBatch.max_items`), as the Anthropic path
chunks. A batch has one model (in its path): the model of its first request.

``client.batches.get(name="batches/...")`` reads the job: ``state`` is the SDK's ``JobState`` (it maps the REST
``BATCH_STATE_*`` to ``JOB_STATE_PENDING``, ``RUNNING``, ``SUCCEEDED``, ``FAILED``, ``CANCELLED``, ``EXPIRED``),
and an ended job's ``dest.inlined_responses`` hold each item's ``GenerateContentResponse`` (``response``, read by
the Gemini endpoint as a live answer) or its ``error`` (a ``google.rpc.Status``: a gRPC ``code``, its ``message``),
with the ``metadata`` the request carried (the ``key``: the item's custom_id). The SDK does not map the REST
``batchStats`` for the Gemini API: a job's size travels in its display name (``items=N``), and how many items are
done is known once it has ended (read from its responses). Google does not document what a cancelled or expired
job answers for the items it never ran: an item answered with gRPC ``CANCELLED`` in a cancelled job (or
``DEADLINE_EXCEEDED`` in an expired one) was not run; a job that ended with fewer answers than requests fails as a
whole (:class:`~guardrail.errors.BatchJobError`), since the items it left out cannot be named.

An item's error is sorted as the same error of a live call would be: its gRPC code stands for the HTTP status and
status name Google documents (cloud.google.com/apis/design/errors), and the :class:`ItemError` carries the error JSON
a live call's ``APIError`` would. Batch mode is the Gemini API's: a ``vertexai=True`` client's batch jobs are
Vertex AI batch prediction (Cloud Storage or BigQuery input), not this API, and are refused.
"""

from __future__ import annotations

import base64
import enum
import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from typing import Any

from guardrail.errors import UsageError
from guardrail.vendors.batches import BatchApi, BatchState, ItemError, ItemReason, dumps

__all__ = ["GeminiBatch", "batch_requests"]

#: gRPC status codes -> (HTTP status, status name), Google's documented mapping.
_GRPC: dict[int, tuple[int, str]] = {
    1: (499, "CANCELLED"), 2: (500, "UNKNOWN"), 3: (400, "INVALID_ARGUMENT"), 4: (504, "DEADLINE_EXCEEDED"),
    5: (404, "NOT_FOUND"), 6: (409, "ALREADY_EXISTS"), 7: (403, "PERMISSION_DENIED"), 8: (429, "RESOURCE_EXHAUSTED"),
    9: (400, "FAILED_PRECONDITION"), 10: (409, "ABORTED"), 11: (400, "OUT_OF_RANGE"), 12: (501, "UNIMPLEMENTED"),
    13: (500, "INTERNAL"), 14: (503, "UNAVAILABLE"), 15: (500, "DATA_LOSS"), 16: (401, "UNAUTHENTICATED"),
}
#: The job's size in its display name (see :func:`_config`).
_ITEMS = re.compile(r"\bitems=(\d+)\b")
_ENDED = frozenset({"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED"})
#: An item not run because its batch was cancelled (gRPC CANCELLED) or expired (DEADLINE_EXCEEDED).
_NEVER_RAN: dict[tuple[str, int], ItemReason] = {("JOB_STATE_CANCELLED", 1): "canceled",
                                                 ("JOB_STATE_EXPIRED", 4): "expired"}
#: How :func:`_to_json` writes ``bytes``.
_BYTES = "$guardrail.bytes"
#: The keywords the SDK reads as its own models (a job's store keeps them as those models' JSON).
_SDK_FIELDS = ("contents", "config")
#: Keywords of a live call that a batch request cannot carry (it is a body only, never streamed).
_NOT_IN_A_LINE = ("http_options",)


class GeminiBatch(BatchApi):
    """``client.batches`` (and ``client.aio.batches``) for ``generate_content`` requests."""

    sdk = "google.genai"
    api = "gemini"
    #: a vendor batch is held whole while it is sent and read (inline): about 10 KB a request in the SDK's
    #: objects (bench/bench_batch.py --vendor gemini), so 5,000 keep that near 50 MB
    max_items = 5_000
    max_bytes = 18 * 1024 * 1024  # under the documented 20 MB of inline requests, with room for the envelope

    def serves(self, client: Any) -> bool:
        from google import genai
        from google.genai.client import AsyncClient

        return isinstance(client, (genai.Client, AsyncClient)) and \
            not getattr(getattr(client, "_api_client", None), "vertexai", False)

    def line(self, custom_id: str, kwargs: Mapping[str, Any]) -> bytes:
        """``{"key": custom_id, "request": InlinedRequest as JSON}``: the SDK's own model of the keywords,
        dumped as data (:func:`_to_json`), so :meth:`submit` rebuilds the very same request."""
        from google.genai import types

        if kwargs.get("stream"):
            raise UsageError("stream=True cannot be sent in a batch request (batch answers are never streamed)")
        config = kwargs.get("config")
        config = dict(config) if isinstance(config, Mapping) else \
            (config.model_dump(exclude_none=True) if config is not None else {})
        for name in _NOT_IN_A_LINE:
            if config.pop(name, None) is not None:
                raise UsageError(f"config.{name} cannot be sent in a batch request (a batch item is a body only)")
        unknown = sorted(set(kwargs) - {"model", "contents", "config", "timeout"})
        if unknown:
            raise UsageError(f"{', '.join(unknown)}: not a generate_content keyword a batch request can carry")
        try:
            request = types.InlinedRequest(
                model=kwargs.get("model"), contents=kwargs.get("contents"),
                config=types.GenerateContentConfig.model_validate(config) if config else None)
        except ValueError as error:  # pydantic's validation error
            raise UsageError(f"batch request {custom_id!r} is not one the SDK can send: {error}") from None
        return dumps({"key": custom_id, "request": _to_json(request.model_dump(exclude_none=True))}) + b"\n"

    def storable(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """``contents`` and ``config`` (SDK objects or their dicts) dumped by the SDK's own models as data
        (:func:`_to_json`), so :meth:`restored` rebuilds the very same objects."""
        from google.genai import types

        stored = {key: value for key, value in kwargs.items() if key not in _SDK_FIELDS}
        given = {key: kwargs[key] for key in _SDK_FIELDS if kwargs.get(key) is not None}
        try:
            dumped = types.InlinedRequest.model_validate(given).model_dump(exclude_none=True)
        except ValueError as error:  # pydantic's validation error
            raise UsageError(f"contents/config of a batch request the SDK cannot read: "
                             f"{str(error).splitlines()[0]}") from None
        stored.update(_to_json({key: dumped[key] for key in given if key in dumped}))
        return stored

    def restored(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        from google.genai import types

        out = dict(kwargs)
        given = {key: kwargs[key] for key in _SDK_FIELDS if kwargs.get(key) is not None}
        if given:
            request = types.InlinedRequest.model_validate(_from_json(given))
            out.update({key: getattr(request, key) for key in given})
        return out

    def submit(self, client: Any, lines: Path, *, metadata: Mapping[str, str]) -> str:
        model, requests = batch_requests(lines)
        return str(client.batches.create(model=model, src=requests, config=_config(metadata, len(requests))).name)

    async def asubmit(self, client: Any, lines: Path, *, metadata: Mapping[str, str]) -> str:
        model, requests = batch_requests(lines)
        made = await client.batches.create(model=model, src=requests, config=_config(metadata, len(requests)))
        return str(made.name)

    def state(self, client: Any, batch_id: str) -> BatchState:
        return _state(client.batches.get(name=batch_id))

    async def astate(self, client: Any, batch_id: str) -> BatchState:
        return _state(await client.batches.get(name=batch_id))

    def results(self, client: Any, batch_id: str) -> Iterator[tuple[str, Any]]:
        yield from _items(client.batches.get(name=batch_id))

    async def aresults(self, client: Any, batch_id: str) -> AsyncIterator[tuple[str, Any]]:
        for item in _items(await client.batches.get(name=batch_id)):
            yield item

    def cancel(self, client: Any, batch_id: str) -> None:
        client.batches.cancel(name=batch_id)

    async def acancel(self, client: Any, batch_id: str) -> None:
        await client.batches.cancel(name=batch_id)


def batch_requests(lines: Path) -> tuple[str, list[Any]]:
    """The batch's model and its requests, each with its custom_id as metadata ``key``; a :class:`UsageError`
    for requests of several models (a Gemini batch is one model's: its path names it)."""
    from google.genai import types

    model, requests = "", []
    with lines.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            entry = json.loads(raw)
            request = types.InlinedRequest.model_validate(_from_json(entry["request"]))
            request.metadata = {"key": str(entry["key"])}
            model = model or str(request.model or "")
            if str(request.model or "").removeprefix("models/") != model.removeprefix("models/"):
                raise UsageError(f"a Gemini batch job is one model's: request {entry['key']!r} asks "
                                 f"{request.model!r}, the job {model!r} (submit one job per model)")
            requests.append(request)
    return model, requests


def _to_json(value: Any) -> Any:
    """A Python-mode dump of the SDK's models as JSON data: ``bytes`` as ``{"$guardrail.bytes": base64}``, enums
    as their values. Not the SDK's JSON mode: its JSON reader refuses a lone surrogate in a text (a model's answer
    replayed in a re-ask may hold one), which Python's ``json`` keeps, as it keeps every other string."""
    if isinstance(value, bytes):
        return {_BYTES: base64.b64encode(value).decode("ascii")}
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(key): _to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(item) for item in value]
    raise UsageError(f"a {type(value).__name__} cannot be sent in a Gemini batch request (not JSON data)")


def _from_json(value: Any) -> Any:
    """:func:`_to_json`'s data with its bytes back."""
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get(_BYTES), str):
            return base64.b64decode(value[_BYTES])
        return {key: _from_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_from_json(item) for item in value]
    return value


def _config(metadata: Mapping[str, str], count: int) -> dict[str, Any]:
    """The job's display name: guardrail's metadata and the number of requests (``items=N``), which the SDK does
    not report otherwise (:func:`_state` reads it back)."""
    name = " ".join(f"{key}={value}" for key, value in metadata.items())
    return {"display_name": f"guardrail {name} items={count}".replace("  ", " ")}


def _count(job: Any) -> int | None:
    found = _ITEMS.search(str(getattr(job, "display_name", None) or ""))
    return int(found[1]) if found else None


def _word(state: Any) -> str:
    return str(getattr(state, "value", state) or "JOB_STATE_UNSPECIFIED")


def _responses(job: Any) -> list[Any]:
    dest = getattr(job, "dest", None)
    return list(getattr(dest, "inlined_responses", None) or ())


def _state(job: Any) -> BatchState:
    """The job's state; its ``total`` from the count it was made with, ``done`` and ``errored`` once it has
    ended. An ended job whose answers are fewer than its requests has ``failed``: the items it left out cannot be
    named (an answer names its item), and a job is never read as whole without them."""
    word = _word(job.state)
    ended = word in _ENDED
    responses = _responses(job) if ended else []
    errored = sum(1 for response in responses if response.error is not None)
    total = _count(job)
    error = getattr(job, "error", None)
    message = str(getattr(error, "message", "") or "") if error is not None else ""
    failed = word == "JOB_STATE_FAILED"
    if ended and total is not None and len(responses) < total:
        failed = True
        message = message or (f"it ended ({word}) with answers for {len(responses)} of its {total} requests; the "
                              "others are not reported")
    return BatchState(str(job.name), word, ended, len(responses) if total is None else total, len(responses),
                      errored, failed=failed, message=message)


def _items(job: Any) -> Iterator[tuple[str, Any]]:
    word = _word(job.state)
    for inlined in _responses(job):
        custom_id = str((inlined.metadata or {}).get("key"))
        if inlined.error is None and inlined.response is not None:
            yield custom_id, inlined.response
            continue
        yield custom_id, _error(inlined.error, word)


def _error(error: Any, word: str) -> ItemError:
    """An inlined response's ``error`` (or none at all: an answer without a response) as an :class:`ItemError`
    shaped like the SDK's ``APIError`` of a live call (``{"error": {"code", "message", "status"}}``)."""
    code = getattr(error, "code", None)
    code = code if isinstance(code, int) else 2
    message = str(getattr(error, "message", None) or "the batch item has neither a response nor an error")
    reason = _NEVER_RAN.get((word, code))
    if reason is not None:
        message = f"the item was not run: the batch {'expired' if reason == 'expired' else 'was canceled'}"
        return ItemError(message, reason=reason, status=None,
                         body={"error": {"code": code, "message": message, "status": f"batch_{reason}"}})
    status, name = _GRPC.get(code, (500, "UNKNOWN"))
    body: dict[str, Any] = {"error": {"code": status, "message": message, "status": name}}
    details = getattr(error, "details", None)
    if details:
        body["error"]["details"] = list(details)
    return ItemError(message, reason="errored", status=status, body=body)
