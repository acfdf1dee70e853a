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
This module is the synchronous driver; :mod:`guardrail.batch.async_job` is its async twin, and
:mod:`guardrail.batch.core` everything they share.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from guardrail.batch.core import LIVE_THRESHOLD, JobHandle, JobStatus, Submission, open_job, reopen_job
from guardrail.batch.items import ItemOutcome
from guardrail.batch.records import JOB_TTL
from guardrail.call.engine import run_sync
from guardrail.errors import CallError
from guardrail.outcome import Budget
from guardrail.store.base import Store

if TYPE_CHECKING:
    from guardrail.gates.semantic import Rule
    from guardrail.vendors.profiles import Mode

__all__ = ["Job", "resume", "submit"]


class Job(JobHandle):
    """A submitted batch job (see the module docstring). Made by :func:`submit` and :func:`resume`."""

    def status(self) -> JobStatus:
        """The current round's vendor batches, asked now."""
        core = self._core
        return core.status([core.api.state(core.raw, batch_id) for batch_id in core.current()])

    def wait(self, *, poll_interval: float = 30.0, timeout: float | None = None) -> JobStatus:
        """Poll until the current round's vendor batches have all ended; :class:`~guardrail.errors.BatchJobError`
        after ``timeout`` seconds, or when one failed as a whole."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._core.waited(status := self.status(), deadline, poll_interval, timeout):
            time.sleep(poll_interval)
        return status

    def cancel(self) -> None:
        """Ask the vendor to stop the current round (its items not yet run end as
        :class:`~guardrail.errors.BatchItemFailed`)."""
        for batch_id in self._core.current():
            self._core.api.cancel(self._core.raw, batch_id)

    def results(self, *, poll_interval: float = 30.0, timeout: float | None = None
                ) -> Iterator[tuple[str, ItemOutcome]]:
        """Each item's ``(custom_id, outcome)`` as it is settled, in the vendor's order: the validated
        :class:`~guardrail.Result`, or the :class:`~guardrail.errors.CallError` a live call would raise
        (:class:`~guardrail.errors.BatchItemFailed` for an item the vendor never ran). Items asked again are
        yielded once their re-ask settles them, after waiting for the follow-up round (``poll_interval`` and
        ``timeout`` as for :meth:`wait`, per round)."""
        core, number = self._core, 0
        core.check_complete()
        while True:
            self.wait(poll_interval=poll_interval, timeout=timeout)
            round_ = core.round(number)
            try:
                for batch_id in round_.batches:
                    for custom_id, answer in core.api.results(core.raw, batch_id):
                        outcome = round_.settle(custom_id, answer)
                        if outcome is not None:
                            yield custom_id, outcome
                step, ids = round_.finish()
                if step == "done":
                    return
                if step == "live":
                    yield from self._live(ids)
                    return
                if step == "batch":
                    for path in round_.follow_up(ids):
                        round_.sent(path, core.api.submit(core.raw, path, metadata=core.metadata(number + 1)))
            finally:
                round_.close()
            number += 1

    def _live(self, ids: Iterable[str]) -> Iterator[tuple[str, ItemOutcome]]:
        """Ask these items again now, each as a live call going on from its replies so far."""
        for custom_id in ids:
            found = self._core.live_call(custom_id)
            if found is None:
                continue
            call, method, replies = found
            try:
                yield custom_id, run_sync(call, method, replies=replies)
            except CallError as error:
                yield custom_id, error


def submit(client: Any, requests: Iterable[Mapping[str, Any]], *, response_model: Any, store: Store,
           mode: Mode | None = None, max_attempts: int | None = None, aliases: Mapping[str, str] | None = None,
           rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None, budget: Budget | None = None,
           api: str | None = None, live_threshold: int = LIVE_THRESHOLD, job_id: str | None = None,
           ttl: float = JOB_TTL) -> Job:
    """Submit a batch job: each of ``requests`` is the keywords of one ``create(...)`` call (Gemini:
    ``generate_content``) plus its ``custom_id`` (unique in the job), read one at a time.

    Args:
        client: an ``openai.OpenAI``/``anthropic.Anthropic``/``google.genai.Client`` client, plain or wrapped
            (its settings then apply: attempts, token ceiling). Async clients: :func:`~guardrail.batch.asubmit`.
        response_model: the contract every answer must satisfy, as for a live call.
        store: where the job's state lives (a :class:`~guardrail.store.SQLiteStore` or
            :class:`~guardrail.store.RedisStore` to resume it from another process).
        mode, max_attempts, aliases, rules, context, budget: as for a live call, per item. ``rules``,
            ``context`` and ``budget`` are not written to the store: pass them to :func:`resume` again.
        api: the client's API to batch (``"chat"``/``"responses"`` for OpenAI; the client's default when None).
        live_threshold: ask the items that failed validation again live when at most this many did, else in a
            follow-up batch.
        job_id: the job's id (default: a new random one).
        ttl: seconds the job's records are kept in the store.
    """
    core = open_job(client, response_model=response_model, store=store, asynchronous=False, mode=mode,
                    max_attempts=max_attempts, aliases=aliases, rules=rules, context=context, budget=budget,
                    api=api, live_threshold=live_threshold, job_id=job_id, ttl=ttl)
    submission = Submission(core)
    for path in submission.files(iter(requests)):
        submission.sent(path, core.api.submit(core.raw, path, metadata=core.metadata(0)))
    submission.finish()
    return Job(core)


def resume(client: Any, job_id: str, *, store: Store, response_model: Any = None, rules: Sequence[Rule] = (),
           context: Mapping[str, Any] | None = None, budget: Budget | None = None) -> Job:
    """The job ``job_id`` from ``store``, to wait for and collect in this process. ``response_model`` is found
    from the reference the job recorded when it is importable (give it otherwise); it must be the contract the
    job was submitted with (its schema hash is checked). ``rules``, ``context`` and ``budget`` as at submit."""
    return Job(reopen_job(client, job_id, store=store, asynchronous=False, response_model=response_model,
                          rules=rules, context=context, budget=budget))
