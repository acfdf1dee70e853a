"""The async twin of :mod:`guardrail.batch.job`: the same jobs with ``openai.AsyncOpenAI``,
``anthropic.AsyncAnthropic`` and google-genai's ``client.aio`` clients (``await asubmit(...)``, ``await
job.wait()``, ``async for ... in job.results()``). Only the vendor's I/O and the live re-asks are awaited; the
store is called as it is (its operations are short, atomic and local or on a Redis round trip)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from guardrail.batch.core import LIVE_THRESHOLD, JobHandle, JobStatus, Submission, open_job, reopen_job
from guardrail.batch.items import ItemOutcome
from guardrail.batch.records import JOB_TTL
from guardrail.call.engine import run_async
from guardrail.errors import CallError
from guardrail.outcome import Budget
from guardrail.store.base import Store

if TYPE_CHECKING:
    from guardrail.gates.semantic import Rule
    from guardrail.vendors.profiles import Mode

__all__ = ["AsyncJob", "aresume", "asubmit"]


class AsyncJob(JobHandle):
    """A submitted batch job on an async client. Made by :func:`asubmit` and :func:`aresume`."""

    async def status(self) -> JobStatus:
        """The current round's vendor batches, asked now."""
        core = self._core
        return core.status([await core.api.astate(core.raw, batch_id) for batch_id in core.current()])

    async def wait(self, *, poll_interval: float = 30.0, timeout: float | None = None) -> JobStatus:
        """Poll until the current round's vendor batches have all ended (see :meth:`Job.wait
        <guardrail.batch.Job.wait>`)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._core.waited(status := await self.status(), deadline, poll_interval, timeout):
            await asyncio.sleep(poll_interval)
        return status

    async def cancel(self) -> None:
        """Ask the vendor to stop the current round."""
        for batch_id in self._core.current():
            await self._core.api.acancel(self._core.raw, batch_id)

    async def results(self, *, poll_interval: float = 30.0, timeout: float | None = None
                      ) -> AsyncIterator[tuple[str, ItemOutcome]]:
        """Each item's ``(custom_id, outcome)`` as it is settled (see :meth:`Job.results
        <guardrail.batch.Job.results>`)."""
        core, number = self._core, 0
        core.check_complete()
        while True:
            await self.wait(poll_interval=poll_interval, timeout=timeout)
            round_ = core.round(number)
            try:
                for batch_id in round_.batches:
                    async for custom_id, answer in core.api.aresults(core.raw, batch_id):
                        outcome = round_.settle(custom_id, answer)
                        if outcome is not None:
                            yield custom_id, outcome
                step, ids = round_.finish()
                if step == "done":
                    return
                if step == "live":
                    async for item in self._live(ids):
                        yield item
                    return
                if step == "batch":
                    for path in round_.follow_up(ids):
                        round_.sent(path, await core.api.asubmit(core.raw, path, metadata=core.metadata(number + 1)))
            finally:
                round_.close()
            number += 1

    async def _live(self, ids: Iterable[str]) -> AsyncIterator[tuple[str, ItemOutcome]]:
        for custom_id in ids:
            found = self._core.live_call(custom_id)
            if found is None:
                continue
            call, method, replies = found
            try:
                yield custom_id, await run_async(call, method, replies=replies)
            except CallError as error:
                yield custom_id, error


async def asubmit(client: Any, requests: Iterable[Mapping[str, Any]], *, response_model: Any, store: Store,
                  mode: Mode | None = None, max_attempts: int | None = None, aliases: Mapping[str, str] | None = None,
                  rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None, budget: Budget | None = None,
                  api: str | None = None, live_threshold: int = LIVE_THRESHOLD, job_id: str | None = None,
                  ttl: float = JOB_TTL) -> AsyncJob:
    """:func:`~guardrail.batch.submit` with an async client."""
    core = open_job(client, response_model=response_model, store=store, asynchronous=True, mode=mode,
                    max_attempts=max_attempts, aliases=aliases, rules=rules, context=context, budget=budget,
                    api=api, live_threshold=live_threshold, job_id=job_id, ttl=ttl)
    submission = Submission(core)
    for path in submission.files(iter(requests)):
        submission.sent(path, await core.api.asubmit(core.raw, path, metadata=core.metadata(0)))
    submission.finish()
    return AsyncJob(core)


async def aresume(client: Any, job_id: str, *, store: Store, response_model: Any = None,
                  rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None,
                  budget: Budget | None = None) -> AsyncJob:
    """:func:`~guardrail.batch.resume` with an async client."""
    return AsyncJob(reopen_job(client, job_id, store=store, asynchronous=True, response_model=response_model,
                               rules=rules, context=context, budget=budget))
