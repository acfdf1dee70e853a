"""What the sync and async jobs share: everything but the vendor's I/O.

:class:`Submission` turns the caller's requests into the vendor's batch input (files to send); :class:`Round`
reads one round's results: each answer to its item's attempt loop (:class:`~guardrail.batch.items.ItemRun`),
recorded in the store, and says what comes after the round (:meth:`Round.finish`). The drivers
(:mod:`guardrail.batch.job`, :mod:`guardrail.batch.async_job`) do the polling, reading, sending and live calls,
and differ only in ``await``, as the attempt loop's drivers do.
"""

from __future__ import annotations

import importlib
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from guardrail.batch.items import Calls, ItemOutcome, ItemRun, read_answer
from guardrail.batch.records import JOB_TTL, ItemRecord, JobRecord, Records
from guardrail.batch.spool import Spool, spooled
from guardrail.call.client import WrappedClient, unwrap, wrap
from guardrail.contract import compile_contract
from guardrail.errors import BatchJobError, CallError, ConfigError, UsageError
from guardrail.outcome import Budget
from guardrail.store.base import Store
from guardrail.vendors.batch_apis import batch_api
from guardrail.vendors.batches import BatchApi, BatchState

if TYPE_CHECKING:
    from guardrail.gates.semantic import Rule
    from guardrail.vendors.profiles import Mode

__all__ = ["LIVE_THRESHOLD", "JobCore", "JobHandle", "JobStatus", "Round", "Submission", "open_job", "reopen_job"]

#: Re-ask the items that failed validation live, instead of in a follow-up batch, when at most this many did.
LIVE_THRESHOLD = 10


@dataclass(frozen=True, slots=True)
class JobStatus:
    """Where a job stands: its current ``round`` (0: the first submission), the vendor batches of that round and
    their counts summed (``total`` items, ``done`` processed, ``errored`` of them failed); ``ended`` when every
    one of them has ended (results readable; reading them may start another round)."""

    job_id: str
    round: int
    batches: tuple[BatchState, ...]
    total: int
    done: int
    errored: int
    ended: bool


class JobCore:
    """A job's parts: the wrapped client (and the SDK client the batch endpoints are called on), its records,
    the calls its items make and the vendor's batch API."""

    def __init__(self, client: WrappedClient, records: Records, record: JobRecord, calls: Calls,
                 api: BatchApi) -> None:
        self.client, self.records, self.record, self.calls, self.api = client, records, record, calls, api
        self.raw = unwrap(client)

    @property
    def id(self) -> str:
        return self.record.job_id

    def current(self) -> list[str]:
        """The vendor batches of the current round (the job record read again)."""
        self.record = self.records.job()
        return self.record.rounds[-1] if self.record.rounds else []

    def status(self, states: Sequence[BatchState]) -> JobStatus:
        round_ = max(len(self.record.rounds) - 1, 0)
        return JobStatus(self.id, round_, tuple(states), sum(s.total for s in states), sum(s.done for s in states),
                         sum(s.errored for s in states), all(s.ended for s in states))

    def waited(self, status: JobStatus, deadline: float | None, poll_interval: float, timeout: float | None) -> bool:
        """Whether waiting is over (every batch ended); a :class:`BatchJobError` when a batch failed or the time
        is up."""
        for state in status.batches:
            if state.failed:
                raise BatchJobError(f"vendor batch {state.id} of job {self.id} failed: "
                                    f"{state.message or state.status}", job_id=self.id, batch_id=state.id)
        if status.ended:
            return True
        if deadline is not None and time.monotonic() + poll_interval > deadline:
            raise BatchJobError(f"batch job {self.id} has not ended after {timeout} s (round {status.round}: "
                                f"{status.done} of {status.total} done)", job_id=self.id)
        return False

    def started(self, round_: int, batch_id: str) -> None:
        """Record a vendor batch of round ``round_`` (the round is added when it is the job's next)."""
        def add(job: JobRecord) -> None:
            while len(job.rounds) <= round_:
                job.rounds.append([])
            job.rounds[round_].append(batch_id)

        self.record = self.records.change_job(add)

    def metadata(self, round_: int) -> dict[str, str]:
        return {"guardrail_job": self.id, "round": str(round_)}

    def check_complete(self) -> None:
        """A :class:`BatchJobError` for a job whose submission stopped before every request was sent (its items
        would never all come back)."""
        self.record = self.records.job()
        if not self.record.complete:
            raise BatchJobError(f"the submission of batch job {self.id} did not finish (stopped while its requests "
                                "were sent): submit the requests again as a new job", job_id=self.id)

    def round(self, round_: int) -> Round:
        self.record = self.records.job()
        return Round(self, round_, len(self.record.rounds) - 1)

    def live_call(self, custom_id: str) -> tuple[Any, Any, list[Any]] | None:
        """The live call that goes on from an item's replies: (call, SDK method, replies)."""
        found = self.records.item(custom_id)
        if found is None:
            return None
        call, method = self.calls.live(self.api.restored(found[1].kwargs))
        return call, method, [reply for _, reply in found[1].replies]


Next = Literal["done", "advance", "live", "batch"]


class JobHandle:
    """What the sync :class:`~guardrail.batch.job.Job` and the async
    :class:`~guardrail.batch.async_job.AsyncJob` share: the job's id and size, read from its core."""

    def __init__(self, core: JobCore) -> None:
        self._core = core

    @property
    def id(self) -> str:
        return self._core.id

    @property
    def total(self) -> int:
        """The items in the job."""
        return self._core.record.total


class Round:
    """Reading the results of round ``round_`` (``last``: the job's latest round when it began)."""

    def __init__(self, core: JobCore, round_: int, last: int) -> None:
        self.core, self.round, self.last = core, round_, last
        self.batches = core.record.rounds[round_] if round_ < len(core.record.rounds) else []
        self._dir = tempfile.TemporaryDirectory(prefix="guardrail-batch-")
        self._pending = Path(self._dir.name) / "again"
        self._again: IO[str] | None = self._pending.open("w", encoding="utf-8")
        self.count = 0

    def settle(self, custom_id: str, answer: Any) -> ItemOutcome | None:
        """One result line: the item's outcome, or ``None`` when it is not settled by it (asked again: noted for
        :meth:`finish`; not this job's item; or already asked in a later round the job recorded)."""
        records, round_ = self.core.records, self.round
        for _ in range(50):
            found = records.item(custom_id)
            if found is None:
                return None
            raw, item = found
            if item.round != round_:  # asked again in a later round already: read there
                return None
            call = self.core.calls.call(self.core.api.restored(item.kwargs))
            run = ItemRun(call, [reply for _, reply in item.replies], custom_id)
            try:
                if not item.answered_in(round_):
                    if run.send is None:  # the stored replies already settle it
                        return run.value
                    reply = read_answer(call, run.send, answer)
                    item.replies.append((round_, reply))
                    run.feed(reply)
                    if not records.save_item(custom_id, raw, item):
                        continue  # another process recorded it first: read again
                if run.send is None:
                    return run.value
                assert self._again is not None
                self._again.write(custom_id + "\n")
                self.count += 1
                return None
            finally:
                run.close()
        raise BatchJobError(f"batch item {custom_id!r} kept changing under this process", job_id=self.core.id)

    def finish(self) -> tuple[Next, Iterator[str]]:
        """What comes after the round: ``done``; ``advance`` (a resumed job whose next round exists); ``live``
        or ``batch``, with the ids of the items to ask again."""
        if self._again is not None:
            self._again.close()
            self._again = None
        if self.count == 0:
            return ("advance" if self.round < self.last else "done"), iter(())
        ids = self._ids()
        return ("live" if self.count <= self.core.record.live_threshold else "batch"), ids

    def _ids(self) -> Iterator[str]:
        with self._pending.open(encoding="utf-8") as again:
            for line in again:
                yield line.rstrip("\n")

    def follow_up(self, ids: Iterator[str]) -> Iterator[Path]:
        """The next round's input, file by file: the caller sends each and records it (:meth:`sent`) before
        taking the next."""
        return spooled(self.core.api, self._asks(ids))

    def _asks(self, ids: Iterator[str]) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """(custom_id, request) of each item still asking, brought back to its ask by its recorded replies."""
        for custom_id in ids:
            found = self.core.records.item(custom_id)
            if found is None:
                continue
            kwargs = self.core.api.restored(found[1].kwargs)
            run = ItemRun(self.core.calls.call(kwargs), [reply for _, reply in found[1].replies], custom_id)
            if run.send is not None:
                yield custom_id, run.send.kwargs
            run.close()

    def sent(self, path: Path, batch_id: str) -> None:
        """A file of the next round is a vendor batch now: record it in the job, then move its items to that
        round. In that order, so a stop in between leaves them in this round, to be asked again (possibly twice),
        never lost."""
        self.core.started(self.round + 1, batch_id)
        records = self.core.records
        for custom_id in Spool.ids(path):
            for _ in range(50):
                found = records.item(custom_id)
                if found is None or found[1].round > self.round:
                    break
                raw, item = found
                item.round = self.round + 1
                if records.save_item(custom_id, raw, item):
                    break
        Spool.sent(path)

    def close(self) -> None:
        if self._again is not None:
            self._again.close()
            self._again = None
        self._dir.cleanup()


class Submission:
    """A new job's requests written out as its first round (:meth:`files`: each file to send)."""

    def __init__(self, core: JobCore) -> None:
        self.core = core
        self.total = 0

    def files(self, requests: Iterator[Mapping[str, Any]]) -> Iterator[Path]:
        return spooled(self.core.api, self._asks(requests))

    def _asks(self, requests: Iterator[Mapping[str, Any]]) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """(custom_id, request) of each new item, its record written first."""
        for request in requests:
            kwargs = dict(request)
            custom_id = kwargs.pop("custom_id", None)
            if not isinstance(custom_id, str) or not custom_id:
                raise UsageError("every batch request needs a custom_id (a non-empty str)")
            run = ItemRun(self.core.calls.call(kwargs), (), custom_id)
            if run.send is None:  # ended before asking anything (a budget too small for one request)
                raise run.value if isinstance(run.value, CallError) else UsageError(f"{custom_id}: no request")
            self.core.records.add_item(custom_id, ItemRecord(self.core.api.storable(kwargs)))
            self.total += 1
            yield custom_id, run.send.kwargs
            run.close()

    def sent(self, path: Path, batch_id: str) -> None:
        """A file of the first round is a vendor batch now: record it."""
        self.core.started(0, batch_id)
        Spool.sent(path)

    def finish(self) -> None:
        """Every request is sent: the job is whole (until then its results are not read)."""
        total = self.total

        def complete(saved: JobRecord) -> None:
            saved.total, saved.complete = total, True

        self.core.record = self.core.records.change_job(complete)


# -- making and finding jobs -------------------------------------------------------------------------------------
def open_job(client: Any, *, response_model: Any, store: Store, asynchronous: bool, mode: Mode | None,
             max_attempts: int | None, aliases: Mapping[str, str] | None, rules: Sequence[Rule],
             context: Mapping[str, Any] | None, budget: Budget | None, api: str | None, live_threshold: int,
             job_id: str | None, ttl: float = JOB_TTL) -> JobCore:
    """A new job's parts, its record written to the store."""
    wrapped = client if isinstance(client, WrappedClient) else wrap(client)
    _check_kind(wrapped, asynchronous)
    options = {"mode": mode, "max_attempts": max_attempts, "aliases": dict(aliases) if aliases else None}
    calls = Calls(wrapped, api, {**options, "response_model": response_model, "rules": rules, "context": context,
                                 "budget": budget})
    vendor = _batch_api(wrapped, calls.endpoint.api)
    job_id = job_id or f"gbatch_{uuid.uuid4().hex}"
    records = Records(store, job_id, ttl)
    record = JobRecord(job_id, vendor.sdk, vendor.api, _reference(response_model),
                       compile_contract(response_model).schema_hash, options, live_threshold, [[]], time.time())
    records.create_job(record)
    return JobCore(wrapped, records, record, calls, vendor)


def reopen_job(client: Any, job_id: str, *, store: Store, asynchronous: bool, response_model: Any,
               rules: Sequence[Rule], context: Mapping[str, Any] | None, budget: Budget | None) -> JobCore:
    """An existing job's parts, from its record."""
    wrapped = client if isinstance(client, WrappedClient) else wrap(client)
    _check_kind(wrapped, asynchronous)
    records = Records(store, job_id)
    record = records.job()
    model = response_model if response_model is not None else _resolve(record)
    if compile_contract(model).schema_hash != record.schema_hash:
        raise ConfigError(f"response_model {model!r} is not the contract batch job {job_id} was submitted with")
    if wrapped._guardrail.kind != record.sdk:
        raise UsageError(f"batch job {job_id} runs on {record.sdk}; resume it with a {record.sdk} client")
    calls = Calls(wrapped, record.api, {**record.options, "response_model": model, "rules": rules,
                                        "context": context, "budget": budget})
    return JobCore(wrapped, records, record, calls, _batch_api(wrapped, record.api))


def _batch_api(client: WrappedClient, api: str) -> BatchApi:
    """The vendor's batch API for this client's ``api`` requests; a :class:`ConfigError` for a client that does
    not reach it."""
    found = batch_api(client._guardrail.kind, api)
    if not found.serves(unwrap(client)):
        raise ConfigError(f"guardrail.batch does not run on {type(unwrap(client)).__name__} clients: their "
                          f"platform's batch service is not the {found.sdk} batch API")
    return found


def _check_kind(client: WrappedClient, asynchronous: bool) -> None:
    if client._guardrail.asynchronous != asynchronous:
        if asynchronous:
            raise UsageError("guardrail.batch.asubmit/aresume take an async client (openai.AsyncOpenAI, "
                             "anthropic.AsyncAnthropic, a google.genai client's .aio); use submit/resume with a "
                             "sync one")
        raise UsageError("guardrail.batch.submit/resume take a sync client (openai.OpenAI, anthropic.Anthropic, "
                         "google.genai.Client); use asubmit/aresume with an async one")


def _reference(model: Any) -> str | None:
    """``module:qualname`` of a contract class another process can import, else ``None``."""
    module, name = getattr(model, "__module__", None), getattr(model, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str) or "<" in name or module == "__main__":
        return None
    return f"{module}:{name}"


def _resolve(record: JobRecord) -> Any:
    if record.model is None:
        raise UsageError(f"batch job {record.job_id}'s response_model cannot be imported: pass response_model=")
    module_name, _, name = record.model.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in name.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        raise UsageError(f"batch job {record.job_id}'s response_model {record.model} cannot be imported: pass "
                         "response_model=") from None
    return found
