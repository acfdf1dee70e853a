"""Validated batch jobs: submit many structured calls at the batch discount, collect each as a validated value.

::

    job = guardrail.batch.submit(client, requests, response_model=Ticket, store=SQLiteStore("jobs.db"))
    job.wait(poll_interval=60)
    for custom_id, outcome in job.results():      # Result, or the CallError a live call would raise
        ...
    job = guardrail.batch.resume(client, job.id, store=SQLiteStore("jobs.db"))   # in another process

How it runs (rounds): every request is built as a live call's would be (:mod:`guardrail.batch.items`) and
written to the vendor's batch input (:mod:`guardrail.batch.spool`); that is round 0. :meth:`Job.results` reads
a round's results as a stream and gives each answer to the item's attempt loop: an accepted answer is yielded
at once, a typed end too; an answer that fails the contract or the rules is re-asked with the feedback the live
loop sends, **only for those items**, within the same attempt limits: live calls when there are at most
``live_threshold`` of them, else a follow-up vendor batch (the next round), waited for and read the same way.
Usage and cost add up across rounds on each item's result (every attempt is in it).

The job's state lives in the store (:mod:`guardrail.batch.records`), written item by item as replies come, so
a process that stops anywhere can be replaced by another that calls :func:`resume` and :meth:`Job.results`:
replies already recorded are not asked again, and an item asked in a later round is read from that round.
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from guardrail.batch.items import Calls, ItemRun, read_answer
from guardrail.batch.records import JOB_TTL, ItemRecord, JobRecord, Records
from guardrail.batch.spool import Spool
from guardrail.call.client import WrappedClient, unwrap, wrap
from guardrail.call.engine import run_sync
from guardrail.contract import compile_contract
from guardrail.errors import BatchJobError, CallError, ConfigError, UsageError
from guardrail.outcome import Budget, Result
from guardrail.store.base import Store
from guardrail.vendors.batches import BatchApi, BatchState
from guardrail.vendors.registry import batch_api

if TYPE_CHECKING:
    from guardrail.gates.semantic import Rule
    from guardrail.vendors.profiles import Mode

__all__ = ["Job", "JobStatus", "resume", "submit"]

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


class Job:
    """A submitted batch job (see the module docstring). Made by :func:`submit` and :func:`resume`."""

    def __init__(self, client: WrappedClient, records: Records, record: JobRecord, calls: Calls,
                 api: BatchApi) -> None:
        self.client, self._records, self._calls, self._api = client, records, calls, api
        self._raw = unwrap(client)  # the vendor's batch endpoints are the SDK's own
        self.record = record

    @property
    def id(self) -> str:
        return self.record.job_id

    # -- status and waiting --------------------------------------------------------------------------------------
    def status(self) -> JobStatus:
        """The current round's vendor batches, asked now."""
        self.record = self._records.job()
        round_ = len(self.record.rounds) - 1
        states = tuple(self._api.state(self._raw, batch_id) for batch_id in self.record.rounds[round_]) \
            if round_ >= 0 else ()
        return JobStatus(self.id, max(round_, 0), states, sum(s.total for s in states), sum(s.done for s in states),
                         sum(s.errored for s in states), all(s.ended for s in states))

    def wait(self, *, poll_interval: float = 30.0, timeout: float | None = None) -> JobStatus:
        """Poll until the current round's vendor batches have all ended; :class:`BatchJobError` after ``timeout``
        seconds, or when one failed as a whole."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = self.status()
            for state in status.batches:
                if state.failed:
                    raise BatchJobError(f"vendor batch {state.id} of job {self.id} failed: "
                                        f"{state.message or state.status}", job_id=self.id, batch_id=state.id)
            if status.ended:
                return status
            if deadline is not None and time.monotonic() + poll_interval > deadline:
                raise BatchJobError(f"batch job {self.id} has not ended after {timeout} s (round {status.round}: "
                                    f"{status.done} of {status.total} done)", job_id=self.id)
            time.sleep(poll_interval)

    def cancel(self) -> None:
        """Ask the vendor to stop the current round (its items not yet run end as :class:`BatchItemFailed`)."""
        self.record = self._records.job()
        for batch_id in self.record.rounds[-1] if self.record.rounds else ():
            self._api.cancel(self._raw, batch_id)

    # -- results -------------------------------------------------------------------------------------------------
    def results(self, *, poll_interval: float = 30.0, timeout: float | None = None
                ) -> Iterator[tuple[str, Result[Any] | CallError]]:
        """Each item's ``(custom_id, outcome)`` as it is settled, in the vendor's order: the validated
        :class:`~guardrail.Result`, or the :class:`~guardrail.errors.CallError` a live call would raise
        (:class:`~guardrail.errors.BatchItemFailed` for an item the vendor never ran). Items re-asked are
        yielded once their re-ask settles them, after waiting for the follow-up round (``poll_interval`` and
        ``timeout`` as for :meth:`wait`, per round)."""
        round_ = 0
        while True:
            self.wait(poll_interval=poll_interval, timeout=timeout)
            self.record = self._records.job()
            last = len(self.record.rounds) - 1
            with tempfile.TemporaryDirectory(prefix="guardrail-batch-") as folder:
                pending = Path(folder) / "pending"
                count = 0
                with pending.open("w", encoding="utf-8") as again:
                    for batch_id in self.record.rounds[round_]:
                        for custom_id, answer in self._api.results(self._raw, batch_id):
                            settled = self._settle(custom_id, answer, round_, last)
                            if settled is None:
                                continue
                            if isinstance(settled, str):
                                again.write(custom_id + "\n")
                                count += 1
                            else:
                                yield custom_id, settled
                if count == 0:
                    if round_ < last:  # resumed: the items re-asked are in the next round already
                        round_ += 1
                        continue
                    return
                with pending.open(encoding="utf-8") as again:
                    ids = (line.rstrip("\n") for line in again)
                    if count <= self.record.live_threshold:
                        yield from self._live(ids)
                        return
                    self._next_round(ids, round_)
            round_ += 1

    def _settle(self, custom_id: str, answer: Any, round_: int, last: int) -> Result[Any] | CallError | str | None:
        """One result line of round ``round_``: the item's outcome; ``"again"`` when it must be asked again;
        ``None`` when the line is not for this round (not this job's item, or the item was already asked in a
        later round that the job has recorded)."""
        for _ in range(50):
            found = self._records.item(custom_id)
            if found is None:
                return None
            raw, item = found
            # an item marked for round + 1 whose round was never started (a stop in between) is still this round's
            if item.round != round_ and not (item.round == round_ + 1 and last == round_):
                return None
            call = self._calls.call(item.kwargs)
            run = ItemRun(call, [reply for _, reply in item.replies], custom_id)
            try:
                if not item.answered_in(round_):
                    if run.send is None:  # the stored replies already settle it (nothing asked in this round)
                        return run.value
                    reply = read_answer(call, run.send, answer)
                    item.replies.append((round_, reply))
                    run.feed(reply)
                    if run.send is not None:
                        item.round = round_ + 1
                    if not self._records.save_item(custom_id, raw, item):
                        continue  # another process recorded it first: read again
                if run.send is not None:
                    return "again"
                return run.value
            finally:
                run.close()
        raise BatchJobError(f"batch item {custom_id!r} kept changing under this process", job_id=self.id)

    def _live(self, ids: Iterable[str]) -> Iterator[tuple[str, Result[Any] | CallError]]:
        """Re-ask these items now, each as a live call going on from its replies so far."""
        for custom_id in ids:
            found = self._records.item(custom_id)
            if found is None:
                continue
            item = found[1]
            call, method = self._calls.live(item.kwargs)
            try:
                yield custom_id, run_sync(call, method, replies=[reply for _, reply in item.replies])
            except CallError as error:
                yield custom_id, error

    def _next_round(self, ids: Iterable[str], round_: int) -> None:
        """Start round ``round_ + 1`` with these items' next asks."""
        self._records.change_job(lambda job: job.rounds.append([]) if len(job.rounds) == round_ + 1 else None)
        spool = Spool(self._api, self._raw, {"guardrail_job": self.id, "round": str(round_ + 1)},
                      lambda batch_id: self._records.change_job(lambda job: job.rounds[round_ + 1].append(batch_id)))
        try:
            for custom_id in ids:
                found = self._records.item(custom_id)
                if found is None:
                    continue
                call = self._calls.call(found[1].kwargs)
                run = ItemRun(call, [reply for _, reply in found[1].replies], custom_id)
                if run.send is not None:
                    spool.add(custom_id, run.send.kwargs)
                run.close()
        except BaseException:
            spool.discard()
            raise
        spool.close()


# -- submit and resume --------------------------------------------------------------------------------------------
def submit(client: Any, requests: Iterable[Mapping[str, Any]], *, response_model: Any, store: Store,
           mode: Mode | None = None, max_attempts: int | None = None, aliases: Mapping[str, str] | None = None,
           rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None, budget: Budget | None = None,
           api: str | None = None, live_threshold: int = LIVE_THRESHOLD, job_id: str | None = None,
           ttl: float = JOB_TTL) -> Job:
    """Submit a batch job: each of ``requests`` is the keywords of one ``create(...)`` call plus its
    ``custom_id`` (unique in the job), read one at a time.

    Args:
        client: an ``openai``/``anthropic`` client, plain or wrapped (its settings then apply: attempts, token
            ceiling); sync clients.
        response_model: the contract every answer must satisfy, as for a live call.
        store: where the job's state lives (a :class:`~guardrail.store.SQLiteStore` or
            :class:`~guardrail.store.RedisStore` to resume it from another process).
        mode, max_attempts, aliases, rules, context, budget: as for a live call, per item. ``rules``,
            ``context`` and ``budget`` are not written to the store: pass them to :func:`resume` again.
        api: the client's API to batch (``"chat"``/``"responses"`` for OpenAI; the client's default when None).
        live_threshold: re-ask the items that failed validation live when at most this many did, else in a
            follow-up batch.
        job_id: the job's id (default: a new random one).
        ttl: seconds the job's records are kept in the store.
    """
    wrapped = client if isinstance(client, WrappedClient) else wrap(client)
    if wrapped._guardrail.asynchronous:
        raise UsageError("guardrail.batch takes a synchronous client (openai.OpenAI, anthropic.Anthropic)")
    options = {"mode": mode, "max_attempts": max_attempts, "aliases": dict(aliases) if aliases else None}
    calls = Calls(wrapped, api, {**options, "response_model": response_model, "rules": rules, "context": context,
                                 "budget": budget})
    vendor = batch_api(wrapped._guardrail.kind, calls.endpoint.api)
    job_id = job_id or f"gbatch_{uuid.uuid4().hex}"
    records = Records(store, job_id, ttl)
    record = JobRecord(job_id, vendor.sdk, vendor.api, _reference(response_model),
                       compile_contract(response_model).schema_hash, options, live_threshold, [[]], time.time())
    records.create_job(record)
    job = Job(wrapped, records, record, calls, vendor)
    spool = Spool(vendor, job._raw, {"guardrail_job": job_id, "round": "0"},
                  lambda batch_id: records.change_job(lambda saved: saved.rounds[0].append(batch_id)))
    total = 0
    try:
        for request in requests:
            kwargs = dict(request)
            custom_id = kwargs.pop("custom_id", None)
            if not isinstance(custom_id, str) or not custom_id:
                raise UsageError("every batch request needs a custom_id (a non-empty str)")
            run = ItemRun(calls.call(kwargs), (), custom_id)
            if run.send is None:  # ended before asking anything (a budget too small for one request)
                assert run.value is not None
                raise run.value if isinstance(run.value, CallError) else UsageError(f"{custom_id}: no request")
            records.add_item(custom_id, ItemRecord(kwargs))
            spool.add(custom_id, run.send.kwargs)
            run.close()
            total += 1
    except BaseException:
        spool.discard()
        raise
    spool.close()

    def count(saved: JobRecord) -> None:
        saved.total = total

    job.record = records.change_job(count)
    return job


def resume(client: Any, job_id: str, *, store: Store, response_model: Any = None, rules: Sequence[Rule] = (),
           context: Mapping[str, Any] | None = None, budget: Budget | None = None) -> Job:
    """The job ``job_id`` from ``store``, to wait for and collect in this process. ``response_model`` is found
    from the reference the job recorded when it is importable (give it otherwise); it must be the contract the
    job was submitted with (its schema hash is checked). ``rules``, ``context`` and ``budget`` as at submit."""
    wrapped = client if isinstance(client, WrappedClient) else wrap(client)
    records = Records(store, job_id)
    record = records.job()
    model = response_model if response_model is not None else _resolve(record)
    if compile_contract(model).schema_hash != record.schema_hash:
        raise ConfigError(f"response_model {model!r} is not the contract batch job {job_id} was submitted with")
    if wrapped._guardrail.kind != record.sdk:
        raise UsageError(f"batch job {job_id} runs on {record.sdk}; resume it with a {record.sdk} client")
    calls = Calls(wrapped, record.api, {**record.options, "response_model": model, "rules": rules,
                                        "context": context, "budget": budget})
    return Job(wrapped, records, record, calls, batch_api(record.sdk, record.api))


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
        import importlib

        found: Any = importlib.import_module(module_name)
        for part in name.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        raise UsageError(f"batch job {record.job_id}'s response_model {record.model} cannot be imported: pass "
                         "response_model=") from None
    return found

