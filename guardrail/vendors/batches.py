"""Batch APIs: what every vendor's batch endpoint shares, as guardrail's own types.

A batch API takes many requests of one endpoint (:class:`~guardrail.vendors.base.Endpoint`) at once, at a
discount, and answers them hours later. One :class:`BatchApi` per vendor knows its wire: how one request is
written as a line of the job's input (:meth:`BatchApi.line`), how a file of such lines becomes a vendor batch
(:meth:`BatchApi.submit`), how far a batch has come (:meth:`BatchApi.state`), and how its results are read, one
line at a time (:meth:`BatchApi.results`). Everything above it (:mod:`guardrail.batch`) speaks only these types.

A result is the vendor's response object for the item, read by the endpoint exactly as a live answer is, or an
:class:`ItemError`: the item's own failure, shaped like an SDK error (``status_code``, ``body``) so that
:func:`~guardrail.vendors.failures.classify` sorts it as it sorts a live call's (retryable, schema rejected,
fatal). Adding a vendor's batch API adds a subclass and a row of
:data:`guardrail.vendors.batch_apis.BATCH_APIS`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from guardrail.errors import Signal, UsageError

__all__ = ["BatchApi", "BatchState", "ItemReason", "dumps", "request_body"]

#: Why an item has no answer: the vendor answered it with an error, or never ran it.
ItemReason = Literal["errored", "expired", "canceled", "missing"]


@dataclass(frozen=True, slots=True)
class BatchState:
    """How far one vendor batch has come.

    ``status`` is the vendor's own word (``validating``, ``in_progress``, ``finalizing``, ``completed``,
    ``ended``...); ``ended`` says no item will change any more (its results can be read); ``failed`` that it
    ended without results at all (OpenAI ``failed``: the input was refused), with the vendor's ``message``.
    ``done`` counts the items processed so far (succeeded or not), ``errored`` those that failed.
    """

    id: str
    status: str
    ended: bool
    total: int
    done: int
    errored: int
    failed: bool = False
    message: str = ""


class ItemError(Signal):
    """One item's failure in a batch, shaped like an SDK error so :func:`~guardrail.vendors.failures.classify`
    sorts it: ``status_code`` (absent when the vendor gave none) and ``body`` (the vendor's error JSON).
    ``reason`` says whether the vendor answered it with an error (``errored``) or never ran it."""

    response = None

    def __init__(self, message: str, *, reason: ItemReason, status: int | None, body: dict[str, Any]) -> None:
        super().__init__(message)
        self.reason = reason
        self.body = body
        if status is not None:
            self.status_code = status

    def to_json(self) -> dict[str, Any]:
        return {"message": str(self), "reason": self.reason, "status": getattr(self, "status_code", None),
                "body": self.body}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ItemError:
        return cls(str(data.get("message", "")), reason=data.get("reason", "errored"), status=data.get("status"),
                   body=dict(data.get("body") or {}))


class BatchApi(ABC):
    """One vendor's batch API for one endpoint (its ``api``, an :attr:`~guardrail.vendors.base.Endpoint.api`).

    Attributes:
        sdk: the SDK module whose clients speak it (a row of :data:`~guardrail.vendors.registry.SDKS`).
        api: the endpoint whose requests it batches.
        max_items, max_bytes: the most requests, and bytes of input, one vendor batch takes (a job's round
            is split into as many vendor batches as it needs).
    """

    sdk: str = ""
    api: str = ""
    max_items: int = 50_000
    max_bytes: int = 190 * 1024 * 1024

    @abstractmethod
    def serves(self, client: Any) -> bool:
        """Whether ``client`` (the SDK's own, unwrapped) reaches this batch API: the vendor's first-party
        clients do; a cloud platform's class of the same SDK (Azure OpenAI, Claude on Bedrock or Vertex AI)
        has a batch service of its own, not this one."""

    @abstractmethod
    def line(self, custom_id: str, kwargs: Mapping[str, Any]) -> bytes:
        """One request (the SDK keywords of one ``create`` call) as a line of the batch input, newline included."""

    def storable(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The caller's keywords of one request as the JSON data the job's store keeps (:meth:`restored` reads
        them back as the SDK takes them). The keywords of SDKs whose requests are JSON already are kept as they
        are; an SDK whose keywords are its own objects (google-genai's ``GenerateContentConfig``) dumps them."""
        return dict(kwargs)

    def restored(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Stored keywords (:meth:`storable`) as the SDK call takes them."""
        return dict(kwargs)

    @abstractmethod
    def submit(self, client: Any, lines: Path, *, metadata: Mapping[str, str]) -> str:
        """Start a vendor batch of the lines in the file ``lines``; the vendor's id for it."""

    @abstractmethod
    def state(self, client: Any, batch_id: str) -> BatchState:
        """Where the batch stands now."""

    @abstractmethod
    def results(self, client: Any, batch_id: str) -> Iterator[tuple[str, Any]]:
        """Each item's ``(custom_id, answer)`` of an ended batch, read as a stream: the vendor's response object
        (read with :meth:`Endpoint.read <guardrail.vendors.base.Endpoint.read>`), or an :class:`ItemError`."""

    @abstractmethod
    def cancel(self, client: Any, batch_id: str) -> None:
        """Ask the vendor to stop the batch (items not yet run end as canceled)."""

    # the same with the SDK's async client (each the twin of the method above)
    @abstractmethod
    async def asubmit(self, client: Any, lines: Path, *, metadata: Mapping[str, str]) -> str: ...

    @abstractmethod
    async def astate(self, client: Any, batch_id: str) -> BatchState: ...

    @abstractmethod
    def aresults(self, client: Any, batch_id: str) -> AsyncIterator[tuple[str, Any]]: ...

    @abstractmethod
    async def acancel(self, client: Any, batch_id: str) -> None: ...


#: SDK keywords that shape the HTTP request rather than its body: a batch line has nowhere to carry them.
_NOT_IN_A_LINE = ("extra_headers", "extra_query")


def request_body(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body the SDK would send for these keywords: ``extra_body`` merged in, ``timeout`` dropped (a
    batch has no per-request timeout); headers, query parameters and streaming cannot travel in a batch."""
    for name in _NOT_IN_A_LINE:
        if kwargs.get(name):
            raise UsageError(f"{name}= cannot be sent in a batch request (a batch line is a body only)")
    if kwargs.get("stream"):
        raise UsageError("stream=True cannot be sent in a batch request (batch answers are never streamed)")
    body = {key: value for key, value in kwargs.items()
            if key not in ("extra_body", "timeout", "stream", *_NOT_IN_A_LINE)}
    extra = kwargs.get("extra_body")
    if isinstance(extra, Mapping):
        body.update(extra)
    return body


def dumps(value: Any) -> bytes:
    """Compact JSON of one line (no newline), in ASCII: a re-ask replays the model's text, which may hold lone
    surrogates (JSON escapes allow them) that UTF-8 cannot carry."""
    return json.dumps(value, separators=(",", ":")).encode()
