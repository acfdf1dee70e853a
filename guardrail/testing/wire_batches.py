"""The vendors' batch APIs on the wire: OpenAI files and batches, Anthropic message batches, Gemini batch mode.

Routes (with or without ``/v1``): ``POST /files`` (multipart upload), ``GET /files/{id}``,
``GET /files/{id}/content``, ``POST /batches``, ``GET /batches/{id}``, ``POST /batches/{id}/cancel``;
``POST /messages/batches`` (requests inline), ``GET /messages/batches/{id}``,
``POST /messages/batches/{id}/cancel``, ``GET /messages/batches/{id}/results`` (JSONL);
``POST /v1beta/models/{model}:batchGenerateContent`` (requests inline), ``GET /v1beta/batches/{id}``,
``POST /v1beta/batches/{id}:cancel`` (Gemini: the job is an operation whose ``metadata`` is the batch, its answers
inline in ``metadata.output.inlinedResponses.inlinedResponses``).

Status moves one step each time a batch is read (no clock in tests): OpenAI ``validating`` -> ``in_progress`` ->
``finalizing`` -> ``completed``, Anthropic ``in_progress`` -> ``ended``, Gemini ``BATCH_STATE_PENDING`` ->
``BATCH_STATE_RUNNING`` -> ``BATCH_STATE_SUCCEEDED`` (or ``_CANCELLED``, ``_EXPIRED``). The items are answered when
the batch ends its processing, each by the same scripting as a live request (the script queue in input order, else
the responder; schema checks too): each is recorded in ``emu.requests`` with the ``x-batch-id`` and ``x-custom-id``
headers. An error behaviour gives the item that error (OpenAI: the error file with its status; Anthropic:
``errored``; Gemini: an inlined response with a ``google.rpc.Status`` ``error``, its gRPC code); a transport fault
(drop, timeout, a spoiled body) an item error 500. Google does not document what a cancelled or expired Gemini batch
returns for the items it did not run: the emulator answers each with an ``error`` of gRPC code ``CANCELLED`` (1) or
``DEADLINE_EXCEEDED`` (4), the item's key in its metadata (an assumption, said here). :class:`BatchBook` holds the
state and the test's controls: :meth:`~BatchBook.hold` keeps batches in progress, :meth:`~BatchBook.expire` lets a
batch expire (after its first ``after`` items). Files live on disk, so a large job costs no memory here.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from typing import Any

from guardrail.testing.behaviours import Reply
from guardrail.testing.recording import Api, RecordedRequest
from guardrail.testing.rendering import new_id, now
from guardrail.testing.wire_gemini import gemini_error

__all__ = ["Answer", "BatchBook", "Render"]

#: Turns a behaviour for a request into (HTTP status, JSON body): the server's own rendering of live answers.
Render = Callable[[Reply, RecordedRequest], tuple[int, dict[str, Any]]]
_URL_API: dict[str, Api] = {"/v1/chat/completions": "chat", "/v1/responses": "responses"}
_OPENAI_NEVER_RAN = {"expired": ("batch_expired", "This request could not be executed before the completion "
                                 "window expired."),
                     "canceled": ("batch_cancelled", "This request was not executed because the batch was "
                                  "cancelled.")}


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    """An HTTP answer of a batch route: JSON, or a file's bytes sent from disk."""

    status: int
    body: dict[str, Any] | None = None
    path: Path | None = None
    content_type: str = "application/json"


@dataclasses.dataclass(slots=True)
class _File:
    id: str
    path: Path
    filename: str
    purpose: str
    created: int

    def json(self) -> dict[str, Any]:
        return {"id": self.id, "object": "file", "bytes": self.path.stat().st_size, "created_at": self.created,
                "filename": self.filename, "purpose": self.purpose, "status": "processed", "expires_at": None,
                "status_details": None}


@dataclasses.dataclass(slots=True)
class _Batch:
    vendor: str  # "openai" | "anthropic" | "gemini"
    id: str
    input: Path
    endpoint: str
    created: int
    status: str
    metadata: dict[str, Any] | None = None
    input_file_id: str = ""
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    results: Path | None = None
    expire_after: int | None = None
    omit: bool = False
    cancel: bool = False
    stamps: dict[str, int] = dataclasses.field(default_factory=dict)


class BatchBook:
    """The emulator's files and batches (see the module docstring); thread-safe."""

    def __init__(self, record: Callable[[RecordedRequest], None], next_behaviour: Callable[[RecordedRequest], Reply],
                 check: Callable[[RecordedRequest], Reply | None]) -> None:
        self._record, self._next, self._check = record, next_behaviour, check
        self._dir = tempfile.TemporaryDirectory(prefix="guardrail-emulator-batches-")
        self._lock = threading.RLock()
        self._files: dict[str, _File] = {}
        self._batches: dict[str, _Batch] = {}
        self._held = False
        self.render: Render | None = None

    # -- the test's controls ---------------------------------------------------------------------------------------
    def hold(self, on: bool = True) -> None:
        """Keep every batch in progress (reading it does not move it on) until called with ``False``."""
        with self._lock:
            self._held = on

    def expire(self, batch_id: str | None = None, *, after: int = 0, omit: bool = False) -> None:
        """Let a batch (the latest when ``None``) expire when it next moves on: its first ``after`` items are
        answered, the others expire unanswered. ``omit`` (Gemini): leave those out of the results altogether, as
        a vendor that does not report the items it never ran would."""
        with self._lock:
            batch = self._batches[batch_id] if batch_id else list(self._batches.values())[-1]
            batch.expire_after, batch.omit = after, omit

    def ids(self) -> list[str]:
        """Every batch id, oldest first."""
        with self._lock:
            return list(self._batches)

    def reset(self) -> None:
        with self._lock:
            self._files.clear()
            self._batches.clear()
            self._held = False

    # -- the routes ------------------------------------------------------------------------------------------------
    def handle(self, method: str, route: str, headers: dict[str, str], raw: bytes) -> Answer | None:
        """The answer of a batch route, or ``None`` when ``route`` is not one."""
        parts = route.strip("/").split("/")
        with self._lock:
            gemini = GEMINI_ROUTE.match(route)
            if gemini is not None and (gemini["id"] is None or gemini["cancel"] or self._is_gemini(gemini["id"])):
                return self._gemini_route(method, gemini, raw)
            if parts[0] == "files":
                return self._files_route(method, parts[1:], headers, raw)
            if parts[0] == "batches":
                return self._openai_route(method, parts[1:], raw)
            if parts[:2] == ["messages", "batches"]:
                return self._anthropic_route(method, parts[2:], headers, raw)
        return None

    def _files_route(self, method: str, rest: list[str], headers: dict[str, str], raw: bytes) -> Answer | None:
        if method == "POST" and not rest:
            return self._upload(headers.get("content-type", ""), raw)
        entry = self._files.get(rest[0]) if rest else None
        if method != "GET" or entry is None:
            return _not_found(f"No such File object: {rest[0] if rest else ''}")
        if rest[1:] == ["content"]:
            return Answer(200, path=entry.path, content_type="application/octet-stream")
        return Answer(200, entry.json())

    def _upload(self, content_type: str, raw: bytes) -> Answer:
        message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = (part.get_filename(), payload)
        if "file" not in fields or fields.get("purpose", (None, b""))[1] != b"batch":
            return _bad_request("A file upload needs a 'file' part and purpose 'batch'.")
        file_id = new_id("file-")
        path = Path(self._dir.name) / file_id
        path.write_bytes(fields["file"][1])
        self._files[file_id] = _File(file_id, path, fields["file"][0] or "input.jsonl", "batch", now())
        return Answer(200, self._files[file_id].json())

    def _openai_route(self, method: str, rest: list[str], raw: bytes) -> Answer:
        if method == "POST" and not rest:
            body = _json(raw)
            source = self._files.get(str(body.get("input_file_id")))
            if source is None:
                return _bad_request(f"No such input file: {body.get('input_file_id')}")
            if body.get("endpoint") not in _URL_API:
                return _bad_request(f"Unsupported endpoint for this emulator: {body.get('endpoint')}")
            total = sum(1 for line in source.path.open("rb") if line.strip())
            batch = _Batch("openai", new_id("batch_"), source.path, str(body["endpoint"]), now(), "validating",
                           metadata=body.get("metadata"), input_file_id=source.id,
                           counts={"total": total, "completed": 0, "failed": 0})
            self._batches[batch.id] = batch
            return Answer(200, self._openai_json(batch))
        found = self._batches.get(rest[0]) if rest else None
        if found is None or found.vendor != "openai":
            return _not_found(f"No such batch: {rest[0] if rest else ''}")
        batch = found
        if method == "POST" and rest[1:] == ["cancel"]:
            if batch.status in ("validating", "in_progress", "finalizing"):
                batch.cancel, batch.status = True, "cancelling"
                batch.stamps["cancelling_at"] = now()
            return Answer(200, self._openai_json(batch))
        if method == "GET" and len(rest) == 1:
            self._step_openai(batch)
            return Answer(200, self._openai_json(batch))
        return _not_found("no such route")

    def _step_openai(self, batch: _Batch) -> None:
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return
        if batch.cancel:
            self._process(batch, 0, "canceled")
            batch.status = "cancelled"
            batch.stamps["cancelled_at"] = now()
        elif batch.expire_after is not None:
            self._process(batch, batch.expire_after, "expired")
            batch.status = "expired"
            batch.stamps["expired_at"] = now()
        elif batch.status == "validating":
            batch.status = "in_progress"
            batch.stamps["in_progress_at"] = now()
        elif self._held:  # held: in progress until released
            return
        elif batch.status == "in_progress":
            batch.status = "finalizing"
            batch.stamps["finalizing_at"] = now()
        else:
            self._process(batch, None, "expired")
            batch.status = "completed"
            batch.stamps["completed_at"] = now()

    def _openai_json(self, batch: _Batch) -> dict[str, Any]:
        return {"id": batch.id, "object": "batch", "endpoint": batch.endpoint, "errors": None,
                "input_file_id": batch.input_file_id, "completion_window": "24h", "status": batch.status,
                "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
                "created_at": batch.created, "expires_at": batch.created + 86400,
                "in_progress_at": None, "finalizing_at": None, "completed_at": None, "failed_at": None,
                "expired_at": None, "cancelling_at": None, "cancelled_at": None, **batch.stamps,
                "request_counts": dict(batch.counts), "metadata": batch.metadata}

    def _anthropic_route(self, method: str, rest: list[str], headers: dict[str, str], raw: bytes) -> Answer:
        base = f"http://{headers.get('host', 'localhost')}"
        if method == "POST" and not rest:
            requests = _json(raw).get("requests")
            if not isinstance(requests, list) or not requests:
                return _bad_request("requests: a batch needs at least one request")
            batch_id = new_id("msgbatch_")
            path = Path(self._dir.name) / batch_id
            with path.open("wb") as out:
                for entry in requests:
                    out.write(json.dumps(entry).encode() + b"\n")
            batch = _Batch("anthropic", batch_id, path, "/v1/messages", now(), "in_progress",
                           counts={"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0,
                                   "expired": 0})
            self._batches[batch_id] = batch
            return Answer(200, self._anthropic_json(batch, base))
        found = self._batches.get(rest[0]) if rest else None
        if found is None or found.vendor != "anthropic":
            return _not_found(f"No such message batch: {rest[0] if rest else ''}", anthropic=True)
        batch = found
        if method == "POST" and rest[1:] == ["cancel"]:
            if batch.status == "in_progress":
                batch.cancel, batch.status = True, "canceling"
                batch.stamps["cancel_initiated_at"] = now()
            return Answer(200, self._anthropic_json(batch, base))
        if method == "GET" and rest[1:] == ["results"]:
            if batch.results is None:
                return _bad_request("The batch has not ended yet.", anthropic=True)
            return Answer(200, path=batch.results, content_type="application/binary")
        if method == "GET" and len(rest) == 1:
            self._step_anthropic(batch)
            return Answer(200, self._anthropic_json(batch, base))
        return _not_found("no such route", anthropic=True)

    def _step_anthropic(self, batch: _Batch) -> None:
        if batch.status == "ended":
            return
        if batch.cancel:
            self._process(batch, 0, "canceled")
        elif batch.expire_after is not None:
            self._process(batch, batch.expire_after, "expired")
        elif self._held:
            return
        else:
            self._process(batch, None, "expired")
        batch.status = "ended"
        batch.stamps["ended_at"] = now()

    def _anthropic_json(self, batch: _Batch, base: str) -> dict[str, Any]:
        def stamp(seconds: int | None) -> str | None:
            return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat()

        created = datetime.fromtimestamp(batch.created, UTC)
        return {"id": batch.id, "type": "message_batch", "processing_status": batch.status,
                "request_counts": dict(batch.counts), "created_at": created.isoformat(),
                "expires_at": (created + timedelta(hours=24)).isoformat(),
                "ended_at": stamp(batch.stamps.get("ended_at")), "archived_at": None,
                "cancel_initiated_at": stamp(batch.stamps.get("cancel_initiated_at")),
                "results_url": f"{base}/v1/messages/batches/{batch.id}/results" if batch.results else None}

    def _is_gemini(self, batch_id: str) -> bool:
        """Whether ``batch_id`` is a Gemini batch (``GET /v1/batches/{id}`` is OpenAI's route too)."""
        found = self._batches.get(batch_id)
        return found is not None and found.vendor == "gemini"

    def _gemini_route(self, method: str, found: re.Match[str], raw: bytes) -> Answer:
        if found["model"] is not None:
            if method != "POST":
                return Answer(404, gemini_error(404, "no such route"))
            batch_body = _json(raw).get("batch")
            batch_body = batch_body if isinstance(batch_body, dict) else {}
            source = batch_body.get("inputConfig")
            inline = source.get("requests") if isinstance(source, dict) else None
            requests = inline.get("requests") if isinstance(inline, dict) else None
            if not isinstance(requests, list) or not requests:
                return Answer(400, gemini_error(400, "batch.input_config: a batch needs at least one inlined request "
                                                     "(this emulator does not take file input)"))
            batch_id = new_id("gb")
            path = Path(self._dir.name) / batch_id
            with path.open("wb") as out:
                for entry in requests:
                    out.write(json.dumps(entry).encode() + b"\n")
            batch = _Batch("gemini", batch_id, path, f"models/{found['model']}", now(), "BATCH_STATE_PENDING",
                           metadata={"displayName": batch_body.get("displayName")},
                           counts={"total": len(requests), "succeeded": 0, "failed": 0})
            self._batches[batch_id] = batch
            return Answer(200, self._gemini_json(batch))
        known = self._batches.get(found["id"])
        if known is None or known.vendor != "gemini":
            return Answer(404, gemini_error(404, f"Batch batches/{found['id']} not found."))
        if found["cancel"]:
            if method != "POST":
                return Answer(404, gemini_error(404, "no such route"))
            if known.status in ("BATCH_STATE_PENDING", "BATCH_STATE_RUNNING"):
                known.cancel = True
            return Answer(200, {})
        if method != "GET":
            return Answer(404, gemini_error(404, "no such route"))
        self._step_gemini(known)
        return Answer(200, self._gemini_json(known))

    def _step_gemini(self, batch: _Batch) -> None:
        if batch.status in _GEMINI_ENDED:
            return
        if batch.cancel:
            self._process(batch, 0, "canceled")
            batch.status = "BATCH_STATE_CANCELLED"
        elif batch.expire_after is not None:
            self._process(batch, batch.expire_after, "expired")
            batch.status = "BATCH_STATE_EXPIRED"
        elif batch.status == "BATCH_STATE_PENDING":
            batch.status = "BATCH_STATE_RUNNING"
            return
        elif self._held:
            return
        else:
            self._process(batch, None, "expired")
            batch.status = "BATCH_STATE_SUCCEEDED"
        batch.stamps["ended_at"] = now()

    def _gemini_json(self, batch: _Batch) -> dict[str, Any]:
        """The job as the API answers it: an operation named ``batches/{id}`` whose ``metadata`` is the batch."""
        def stamp(seconds: int) -> str:
            return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")

        counts = batch.counts
        pending = counts["total"] - counts["succeeded"] - counts["failed"]
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "model": batch.endpoint, "displayName": (batch.metadata or {}).get("displayName") or batch.id,
            "createTime": stamp(batch.created), "updateTime": stamp(now()), "state": batch.status,
            "batchStats": {"requestCount": str(counts["total"]), "successfulRequestCount": str(counts["succeeded"]),
                           "failedRequestCount": str(counts["failed"]), "pendingRequestCount": str(pending)}}
        answer: dict[str, Any] = {"name": f"batches/{batch.id}", "metadata": meta}
        if batch.results is not None:
            with batch.results.open("rb") as lines:
                inlined = [json.loads(line) for line in lines if line.strip()]
            meta["output"] = {"inlinedResponses": {"inlinedResponses": inlined}}
            meta["endTime"] = stamp(batch.stamps.get("ended_at", now()))
        if batch.status in _GEMINI_ENDED:
            answer["done"] = True
            answer["response"] = {**meta, "@type": meta["@type"]}
        return answer

    # -- answering the items ---------------------------------------------------------------------------------------
    def _process(self, batch: _Batch, limit: int | None, unrun: str) -> None:
        """Answer the batch's items (the first ``limit`` when given; the rest end ``unrun``), writing its results."""
        folder = Path(self._dir.name)
        if batch.vendor == "openai":
            output, errors = folder / f"{batch.id}.output", folder / f"{batch.id}.errors"
            with output.open("wb") as good, errors.open("wb") as bad:
                for custom_id, status, body in self._answers(batch, limit):
                    if status is None:
                        code, message = _OPENAI_NEVER_RAN[unrun]
                        line: dict[str, Any] = {"id": new_id("batch_req_"), "custom_id": custom_id,
                                                "response": None, "error": {"code": code, "message": message}}
                    else:
                        line = {"id": new_id("batch_req_"), "custom_id": custom_id, "error": None,
                                "response": {"status_code": status, "request_id": new_id("req_"), "body": body}}
                    (good if status == 200 else bad).write(json.dumps(line).encode() + b"\n")
                    batch.counts["completed" if status == 200 else "failed"] += 1
            for path, kind in ((output, "output_file_id"), (errors, "error_file_id")):
                if path.stat().st_size:
                    file_id = new_id("file-")
                    self._files[file_id] = _File(file_id, path, path.name, "batch_output", now())
                    setattr(batch, kind, file_id)
            return
        if batch.vendor == "gemini":
            results = folder / f"{batch.id}.results"
            with results.open("wb") as out:
                for custom_id, status, body in self._answers(batch, limit):
                    if status is None and batch.omit:
                        continue
                    line = {"metadata": {"key": custom_id}}
                    if status == 200:
                        line["response"] = body
                        batch.counts["succeeded"] += 1
                    else:
                        line["error"] = _grpc_status(status, body, unrun)
                        batch.counts["failed"] += 1
                    out.write(json.dumps(line).encode() + b"\n")
            batch.results = results
            return
        results = folder / f"{batch.id}.results"
        with results.open("wb") as out:
            for custom_id, status, body in self._answers(batch, limit):
                batch.counts["processing"] -= 1
                if status is None:
                    result: dict[str, Any] = {"type": unrun}
                    batch.counts[unrun] += 1
                elif status == 200:
                    result = {"type": "succeeded", "message": body}
                    batch.counts["succeeded"] += 1
                else:
                    result = {"type": "errored", "error": body}
                    batch.counts["errored"] += 1
                out.write(json.dumps({"custom_id": custom_id, "result": result}).encode() + b"\n")
        batch.results = results

    def _answers(self, batch: _Batch, limit: int | None) -> Iterator[tuple[str, int | None, dict[str, Any]]]:
        """Each item's (custom_id, status, body), read from the input file one line at a time; status ``None``
        for an item not run."""
        assert self.render is not None, "the server sets the book's renderer"
        with batch.input.open("rb") as lines:
            for index, raw in enumerate(line for line in lines if line.strip()):
                entry = json.loads(raw)
                if batch.vendor == "gemini":
                    custom_id = str((entry.get("metadata") or {}).get("key"))
                else:
                    custom_id = str(entry.get("custom_id"))
                if limit is not None and index >= limit:
                    yield custom_id, None, {}
                    continue
                if batch.vendor == "openai":
                    api: Api = _URL_API.get(str(entry.get("url")), "chat")
                    path, body = str(entry.get("url")), entry.get("body")
                else:
                    api, path, body = "messages", "/v1/messages", entry.get("params")
                model = None
                if batch.vendor == "gemini":  # the model is in the path, as in a live generateContent
                    body = dict(entry.get("request") or {})
                    model = str(body.pop("model", None) or batch.endpoint).removeprefix("models/")
                    api, path = "gemini", f"/v1beta/models/{model}:generateContent"
                headers = {"x-batch-id": batch.id, "x-custom-id": custom_id}
                request = RecordedRequest(api=api, path=path, headers=headers,
                                          body=body if isinstance(body, dict) else {}, path_model=model)
                self._record(request)
                behaviour = self._check(request) or self._next(request)
                status, answer = self.render(behaviour, request)
                yield custom_id, status, answer


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _not_found(message: str, *, anthropic: bool = False) -> Answer:
    if anthropic:
        return Answer(404, {"type": "error", "error": {"type": "not_found_error", "message": message}})
    return Answer(404, {"error": {"message": message, "type": "invalid_request_error", "param": None,
                                  "code": None}})


def _bad_request(message: str, *, anthropic: bool = False) -> Answer:
    if anthropic:
        return Answer(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}})
    return Answer(400, {"error": {"message": message, "type": "invalid_request_error", "param": None,
                                  "code": None}})


def _grpc_status(status: int | None, body: dict[str, Any], unrun: str) -> dict[str, Any]:
    """A Gemini item's error as the ``google.rpc.Status`` an inlined response carries: the gRPC code of the HTTP
    error's status name; an item not run: ``CANCELLED`` or ``DEADLINE_EXCEEDED`` (see the module docstring)."""
    if status is None:
        canceled = unrun == "canceled"
        return {"code": 1 if canceled else 4,
                "message": "The batch was cancelled before this request ran." if canceled else
                "The batch expired before this request ran."}
    found = body.get("error")
    error: dict[str, Any] = found if isinstance(found, dict) else {}
    out: dict[str, Any] = {"code": _GRPC_CODES.get(str(error.get("status")), 2),
                           "message": str(error.get("message") or f"status {status}")}
    if error.get("details"):
        out["details"] = error["details"]
    return out


#: Google's status names -> gRPC codes (an inlined response's error carries the code, not the HTTP status).
_GRPC_CODES = {"CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4, "NOT_FOUND": 5,
               "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9,
               "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12, "INTERNAL": 13, "UNAVAILABLE": 14,
               "DATA_LOSS": 15, "UNAUTHENTICATED": 16}
_GEMINI_ENDED = frozenset({"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED",
                           "BATCH_STATE_EXPIRED"})
#: Batch routes, for the server to tell them from the live ones.
ROUTE = re.compile(r"^/(files|batches|messages/batches)(/|$)")
#: Gemini batch mode's routes (the API version in the path; a ``/v1/`` the server took off already).
GEMINI_ROUTE = re.compile(r"^(?:/v1[a-z0-9]*)?/(?:models/(?P<model>[^/:]+):batchGenerateContent|"
                          r"batches/(?P<id>[^/:]+)(?P<cancel>:cancel)?)$")
