"""Recording structured calls for replay: one JSON record per call, secrets redacted, off by default.

``guardrail.wrap(client, record="calls.jsonl")`` (or ``@structured(record=...)``, ``Chain(..., record=...)``)
hands every structured call, once it has ended, to a :class:`Recorder`. The attempt loop hands it over at its one
exit, where every attempt and the outcome are known (:func:`guardrail.call.engine.attempt_loop` yields a
:class:`~guardrail.call.engine.Record` effect), for sync and async calls alike; the driver performs the write (the
async driver in a worker thread, so the event loop never waits on a file). A recorder never fails the call: a
write that fails is logged (``guardrail.record_failed``) and the call goes on. Calls answered from the response
cache are not recorded (no model output came with them), nor are streamed previews (the streamed call itself is).

One record (format version :data:`RECORD_VERSION`), a JSON object:

===================  ================================================================================================
``guardrail_record`` the format version (``1``)
``at``               when the call ended (UTC, ISO 8601)
``request_hash``     SHA-256 of the canonical request: the endpoint and the caller's SDK keywords minus the transport
                     ones (the same encoding as the response cache's key, without the contract, rules or prompt
                     version), so one prompt has one hash across contract versions; the call's few-shot examples
                     count when it has some (they are part of the prompt); ``null`` when the request has no
                     canonical form
``provider``/``api``/``model``  where the call went
``prompt_version``   the call's ``prompt_version=`` (the decorator's ``version=``, the chain's ``prompt_version=``)
``contract``         the contract's name (``module.QualifiedName``; a JSON Schema document: its ``title``)
``schema_hash``      the contract's schema hash (:attr:`guardrail.contract.Contract.schema_hash`)
``schema_version``   the contract's version name, if it has one: a ``__version__`` attribute (a string or a
                     number), else a ``"version"`` key at the top of its JSON Schema (pydantic:
                     ``model_config = ConfigDict(json_schema_extra={"version": "2"})``; a JSON Schema document: its
                     own ``"version"``); else ``null``
``aliases``/``rules``/``context``  the call's aliases, the names of its semantic rules, and its context (redacted)
``attempts``         each attempt: ``number``, ``mode``, ``raw`` (the output as received, redacted), ``finish`` (the
                     vendor's finish reason),
                     ``error`` (its kind, or ``null``), ``fixes`` (their kinds), and ``answer`` when the loop read one
                     as a whole answer: ``{"text", "wrapped", "absent_as_null"}`` (``text`` is omitted when it is
                     ``raw``; a field re-ask's is the merged whole that was validated)
``outcome``          ``{"ok": true, "value": ...}`` (the value as JSON, redacted) or ``{"ok": false, "error": class
                     name, "kind": its kind, "message": redacted}``
``vendor_calls``, ``trace_id``  as on the :class:`~guardrail.outcome.Outcome`; ``tokens``: ``{"input", "output"}``
===================  ================================================================================================

Redaction is the audit log's (:func:`guardrail.observe.redact.redact`): secret-looking strings (API keys, bearer
tokens, JWTs, private keys...) anywhere, and the values of secret-named keys in the value and the context. A
replay reads the redacted text, so an answer that held a secret replays with ``[REDACTED]`` in its place.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias

from pydantic_core import to_jsonable_python

from guardrail.call.cache_key import TRANSPORT_ONLY, Uncacheable, canonical_json
from guardrail.errors import ConfigError
from guardrail.observe.redact import redact, redact_text
from guardrail.observe.telemetry import get_logger

if TYPE_CHECKING:
    from guardrail.call.engine import Answer, Call
    from guardrail.contract import Contract
    from guardrail.errors import CallError
    from guardrail.outcome import Outcome
    from guardrail.store.base import Store

__all__ = ["RECORD_VERSION", "JsonlRecorder", "RecordTo", "Recorder", "StoreRecorder", "contract_name", "record_of",
           "recorder_for", "request_hash", "schema_version", "value_json"]

log = get_logger("guardrail")

#: The version of the record format; a reader refuses records of a version it does not know.
RECORD_VERSION = 1


class Recorder:
    """Where finished structured calls go. Subclass it and implement :meth:`write` (one JSON record per call);
    :class:`JsonlRecorder` appends them to a file."""

    def record_call(self, call: Call, outcome: Outcome, error: CallError | None,
                    answers: Mapping[int, Answer]) -> None:
        """Record one finished call (``error`` is ``None`` when it returned a value); never raises."""
        try:
            self.write(record_of(call, outcome, error, answers))
        except Exception as failure:  # a recorder must never fail the call it records
            log.warning("guardrail.record_failed", recorder=type(self).__name__,
                        error=f"{type(failure).__name__}: {redact_text(str(failure))[:200]}")

    def write(self, record: dict[str, Any]) -> None:
        """Store one record (a JSON-ready dict)."""
        raise NotImplementedError


class JsonlRecorder(Recorder):
    """Appends each record to a JSONL file as one line.

    Safe with several threads (one lock per path in this process) and several processes (each line is one
    ``write`` to a file opened with ``O_APPEND``). Nothing is buffered or held in memory: the file is opened for
    each record and closed again, so the recorder survives a ``fork`` and a rotated file.
    """

    _locks: ClassVar[dict[str, threading.Lock]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise ConfigError(f"record={str(path)!r} is a directory; give a file path (it is appended to)")
        self._target = self.path.resolve()  # a relative path means the working directory of now, not of later
        with self._guard:
            self._lock = self._locks.setdefault(str(self._target), threading.Lock())

    def write(self, record: dict[str, Any]) -> None:
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n").encode(
            "utf-8", "surrogatepass")
        with self._lock:
            fd = os.open(self._target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)

    def __repr__(self) -> str:
        return f"JsonlRecorder({str(self.path)!r})"


class StoreRecorder(Recorder):
    """Records into a :mod:`guardrail.store` store (``SQLiteStore``, ``RedisStore``, ``MemoryStore``), so several
    processes and hosts share one recording.

    Each record is one entry, ``{prefix}{name}:{n}``, numbered by the store's atomic counter ``{prefix}{name}:n``
    and kept ``ttl`` seconds (30 days by default). :meth:`lines` reads them back in order, one at a time (as the
    lines of a JSONL recording, for :func:`~guardrail.replay.replay`); entries that expired are left out.
    """

    #: The counter lives far longer than any entry: numbers are never reused while entries live.
    COUNTER_WINDOW = 10 * 365 * 86400.0
    _LIMIT = float(2**53)

    def __init__(self, store: Any, *, name: str = "default", ttl: float = 30 * 86400.0,
                 prefix: str = "guardrail-record:") -> None:
        self.store, self.name, self.ttl, self.prefix = store, name, ttl, prefix

    def _key(self, suffix: str) -> str:
        return f"{self.prefix}{self.name}:{suffix}"

    def write(self, record: dict[str, Any]) -> None:
        _, number = self.store.add_within_limit(self._key("n"), 1, self._LIMIT, self.COUNTER_WINDOW)
        self.store.put_if_absent(self._key(str(int(number))), json.dumps(record, ensure_ascii=False,
                                                                         separators=(",", ":"), default=str), self.ttl)

    def count(self) -> int:
        """How many records were written (expired ones included)."""
        _, total = self.store.add_within_limit(self._key("n"), 0, self._LIMIT, self.COUNTER_WINDOW)
        return int(total)

    def lines(self) -> Iterator[str]:
        """The records still held, in the order they were written, as JSON lines."""
        for number in range(1, self.count() + 1):
            text = self.store.get(self._key(str(number)))
            if text is not None:
                yield text

    def __repr__(self) -> str:
        return f"StoreRecorder({type(self.store).__name__}, name={self.name!r})"


#: What ``record=`` accepts: a JSONL file path, a :mod:`guardrail.store` store or a :class:`Recorder`.
RecordTo: TypeAlias = "str | os.PathLike[str] | Store | Recorder"


def recorder_for(record: RecordTo) -> Recorder:
    """The recorder ``record=`` names: a :class:`Recorder` as it is, a path as a :class:`JsonlRecorder`, a store
    as a :class:`StoreRecorder`."""
    from guardrail.store.base import Store

    if isinstance(record, Recorder):
        return record
    if isinstance(record, (str, os.PathLike)):
        return JsonlRecorder(record)
    if isinstance(record, Store):
        return StoreRecorder(record)
    raise ConfigError(f"record= takes a JSONL file path, a guardrail store or a guardrail.replay.Recorder, not "
                      f"{type(record).__name__}")


# -- one record ----------------------------------------------------------------------------------------------------
def record_of(call: Call, outcome: Outcome, error: CallError | None, answers: Mapping[int, Answer]) -> dict[str, Any]:
    """The record of one finished call (see the module docstring), redacted."""
    contract = call.prepared.contract
    options = call.options
    attempts = []
    for attempt in outcome.attempts:
        entry: dict[str, Any] = {"number": attempt.number, "mode": attempt.mode,
                                 "raw": None if attempt.raw is None else redact_text(attempt.raw),
                                 "finish": attempt.finish_reason, "error": attempt.error_kind,
                                 "fixes": [fix.kind for fix in attempt.fixes]}
        answer = answers.get(attempt.number)
        if answer is not None:
            read: dict[str, Any] = {"wrapped": answer.wrapped, "absent_as_null": answer.absent_as_null}
            if answer.text != (attempt.raw or ""):
                read["text"] = redact_text(answer.text)
            entry["answer"] = read
        attempts.append(entry)
    if error is None:
        ended: dict[str, Any] = {"ok": True, "value": redact(value_json(contract, getattr(outcome, "value", None)))}
    else:
        kind = getattr(error, "kind", None)
        ended = {"ok": False, "error": type(error).__name__, "kind": kind if isinstance(kind, str) else None,
                 "message": redact_text(str(error))[:2000]}
    usage = outcome.usage
    return {
        "guardrail_record": RECORD_VERSION,
        "at": datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "request_hash": request_hash(call),
        "provider": outcome.provider, "api": call.endpoint.api, "model": outcome.model,
        "prompt_version": options.prompt_version,
        "contract": contract_name(contract.output_type), "schema_hash": contract.schema_hash,
        "schema_version": schema_version(contract),
        "aliases": dict(options.aliases) if options.aliases else None,
        "rules": [rule.name for rule in options.rules],
        "context": redact(to_jsonable_python(dict(options.context), fallback=repr)) if options.context else None,
        "mode": outcome.mode, "attempts": attempts, "outcome": ended,
        "vendor_calls": outcome.vendor_calls,
        "tokens": {"input": usage.input_tokens, "output": usage.output_tokens},
        "trace_id": outcome.trace_id,
    }


def request_hash(call: Call) -> str | None:
    """SHA-256 of the canonical request (endpoint and SDK keywords, transport ones left out); ``None`` when the
    request has no canonical form."""
    endpoint = call.endpoint
    document: dict[str, Any] = {"endpoint": [endpoint.provider, endpoint.api, endpoint.server],
                                "request": {k: v for k, v in call.kwargs.items() if k not in TRANSPORT_ONLY}}
    examples = call.prepared.plans[0].examples
    if examples:  # only then, so the hash of a call without examples is as it was
        document["examples"] = [json.loads(text) for text in examples]
    try:
        text = canonical_json(document)
    except Uncacheable:
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def contract_name(output_type: Any) -> str:
    """A readable name for a contract: ``module.QualifiedName`` for a class, the ``title`` of a JSON Schema
    document, else its ``repr`` (``list[myapp.Ticket]``)."""
    document = getattr(output_type, "schema", None) if type(output_type).__name__ == "JsonSchema" else output_type
    if isinstance(document, Mapping):  # a JSON Schema document, or guardrail's JsonSchema of one
        title = document.get("title")
        return str(title) if isinstance(title, str) else "json-schema"
    if isinstance(output_type, type):
        return f"{output_type.__module__}.{output_type.__qualname__}"
    return repr(output_type).replace("typing.", "")


def schema_version(contract: Contract[Any]) -> str | None:
    """The contract's version name: its ``__version__``, else a ``"version"`` at the top of its schema."""
    for found in (getattr(contract.output_type, "__version__", None),
                  contract.schema.get("version") if isinstance(contract.schema, Mapping) else None):
        if isinstance(found, (str, int, float)) and not isinstance(found, bool):
            return str(found)
    return None


def value_json(contract: Contract[Any], value: Any) -> Any:
    """``value`` as JSON data, as the contract dumps it (field names, not aliases)."""
    try:
        return contract.adapter.dump_python(value, mode="json")
    except Exception:  # a value the adapter cannot dump (an arbitrary object under Any): as pydantic_core can
        return to_jsonable_python(value, fallback=repr)
