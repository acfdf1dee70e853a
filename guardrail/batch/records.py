"""A batch job's state in a :class:`~guardrail.store.Store`: one record for the job, one per item.

Everything another process needs to pick the job up lives here, so ``resume`` works with nothing but the job id:

- ``batch:<job>``: the :class:`JobRecord`: the vendor and API, the contract's reference and hash, the options
  that can be written down, the live threshold and, per round, the vendor batches that carry it.
- ``batch:<job>:<custom_id>``: the :class:`ItemRecord`: the caller's SDK keywords of the item, the round it was
  last asked in, and every reply it got so far (a completion, or the item's error), each with its round. The
  attempt loop decides only from the replies it is sent (:func:`guardrail.call.engine.replayed`), so these are
  the whole state of the item's call.

Records are JSON text, written with the store's atomic operations only (``put_if_absent``, ``compare_and_set``):
SQLite and Redis stores hold them across processes; nothing is ever held for all items at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from guardrail.errors import BatchJobError, StoreError, UsageError
from guardrail.outcome import Usage
from guardrail.store.base import Store
from guardrail.vendors.base import Completion
from guardrail.vendors.batches import ItemError
from guardrail.vendors.failures import BadResponse

__all__ = ["JOB_TTL", "ItemRecord", "JobRecord", "Records", "Reply", "reply_from_json", "reply_to_json"]

#: Seconds a job's records are kept after their last change (a vendor batch may take 24 hours, its results
#: are kept for 30 days).
JOB_TTL = 30 * 86400.0
#: One reply an item got: an answer, the item's error, or an answer that is not in the API's shape.
Reply = Completion | ItemError | BadResponse
_TRIES = 50
_COMPLETION = tuple(field.name for field in fields(Completion))
_USAGE = tuple(field.name for field in fields(Usage))


def reply_to_json(reply: Reply) -> dict[str, Any]:
    if isinstance(reply, Completion):  # field by field: dataclasses.asdict deep-copies, at 10x the cost
        data = {name: getattr(reply, name) for name in _COMPLETION}
        data["usage"] = {name: getattr(reply.usage, name) for name in _USAGE}
        return {"completion": data}
    if isinstance(reply, ItemError):
        return {"error": reply.to_json()}
    return {"bad": {"message": str(reply), "status": reply.status, "content_type": reply.content_type,
                    "code": reply.code, "snippet": reply.snippet}}


def reply_from_json(data: Mapping[str, Any]) -> Reply:
    if "completion" in data:
        fields = dict(data["completion"])
        fields["usage"] = Usage(**fields["usage"])
        return Completion(**fields)
    if "error" in data:
        return ItemError.from_json(data["error"])
    bad = data["bad"]
    return BadResponse(bad["message"], status=bad["status"], content_type=bad["content_type"], code=bad["code"],
                       body=bad["snippet"])


@dataclass(slots=True)
class JobRecord:
    """A job: its vendor (``sdk``, ``api``), the contract (``model``: ``module:qualname`` when importable, and
    ``schema_hash``), the options written down, ``rounds``: the vendor batch ids of each round, in order, and
    ``total``: its items."""

    job_id: str
    sdk: str
    api: str
    model: str | None
    schema_hash: str
    options: dict[str, Any]
    live_threshold: int
    rounds: list[list[str]] = field(default_factory=list)
    created: float = 0.0
    #: Items in the job, and whether every request was sent (both known once the submission is done).
    total: int = 0
    complete: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> JobRecord:
        return cls(**json.loads(text))


@dataclass(slots=True)
class ItemRecord:
    """An item: the caller's SDK keywords, the round it was last asked in, and its replies as ``(round, reply)``."""

    kwargs: dict[str, Any]
    round: int = 0
    replies: list[tuple[int, Reply]] = field(default_factory=list)

    def to_json(self) -> str:
        # ASCII: a model's text may hold lone surrogates (JSON escapes allow them), which no store could encode
        return json.dumps({"kwargs": self.kwargs, "round": self.round,
                           "replies": [[r, reply_to_json(reply)] for r, reply in self.replies]},
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> ItemRecord:
        data = json.loads(text)
        return cls(data["kwargs"], data["round"], [(r, reply_from_json(reply)) for r, reply in data["replies"]])

    def answered_in(self, round_: int) -> bool:
        """Whether the reply of round ``round_`` is already recorded (a round read again after a restart)."""
        return bool(self.replies) and self.replies[-1][0] == round_


class Records:
    """The records of one job in ``store`` (each written for ``ttl`` seconds)."""

    def __init__(self, store: Store, job_id: str, ttl: float = JOB_TTL) -> None:
        self.store, self.job_id, self.ttl = store, job_id, ttl
        self.job_key = f"batch:{job_id}"

    def item_key(self, custom_id: str) -> str:
        return f"batch:{self.job_id}:{custom_id}"

    # -- the job ---------------------------------------------------------------------------------------------
    def create_job(self, job: JobRecord) -> None:
        if not self.store.put_if_absent(self.job_key, job.to_json(), self.ttl):
            raise UsageError(f"a batch job {self.job_id!r} already exists in this store")

    def job(self) -> JobRecord:
        raw = self.store.get(self.job_key)
        if raw is None:
            raise BatchJobError(f"no batch job {self.job_id!r} in this store (never submitted, or expired)",
                                job_id=self.job_id)
        return JobRecord.from_json(raw)

    def change_job(self, change: Callable[[JobRecord], None]) -> JobRecord:
        """Apply ``change`` to the job record by compare-and-set (again from a fresh read if another wrote first)."""
        for _ in range(_TRIES):
            raw = self.store.get(self.job_key)
            if raw is None:
                raise BatchJobError(f"no batch job {self.job_id!r} in this store", job_id=self.job_id)
            job = JobRecord.from_json(raw)
            change(job)
            if self.store.compare_and_set(self.job_key, raw, job.to_json(), self.ttl):
                return job
        raise StoreError(f"batch job {self.job_id!r} changed under {_TRIES} tries to change it",
                         operation="change batch job", key=self.job_key)

    # -- the items -------------------------------------------------------------------------------------------
    def add_item(self, custom_id: str, item: ItemRecord) -> None:
        try:
            text = item.to_json()
        except (TypeError, ValueError) as error:
            raise UsageError(f"batch request {custom_id!r}: its keywords are not JSON data ({error})") from None
        if not self.store.put_if_absent(self.item_key(custom_id), text, self.ttl):
            raise UsageError(f"custom_id {custom_id!r} appears twice in the batch job (each must be unique)")

    def item(self, custom_id: str) -> tuple[str, ItemRecord] | None:
        """The item's stored text and record, or ``None`` for a custom_id that is not this job's."""
        raw = self.store.get(self.item_key(custom_id))
        return None if raw is None else (raw, ItemRecord.from_json(raw))

    def save_item(self, custom_id: str, raw: str, item: ItemRecord) -> bool:
        """Write ``item`` over the text ``raw`` it was read from; ``False`` if another process wrote first."""
        return self.store.compare_and_set(self.item_key(custom_id), raw, item.to_json(), self.ttl)
