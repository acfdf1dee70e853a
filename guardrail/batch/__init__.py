"""Validated batch jobs over the vendors' batch APIs (OpenAI Batch, Anthropic Message Batches, Gemini batch mode).

``submit`` a job of many ``create(...)`` calls, ``resume`` it anywhere from its store, ``wait`` for it and read
``results()``: each item's validated :class:`~guardrail.Result` or typed error, with the same parse, repair and
gates as a live call and the failed items asked again (see :mod:`guardrail.batch.job`). ``asubmit`` and
``aresume`` do the same with async clients.
"""

from guardrail.batch.async_job import AsyncJob, aresume, asubmit
from guardrail.batch.core import LIVE_THRESHOLD, JobStatus
from guardrail.batch.job import Job, resume, submit
from guardrail.batch.records import JOB_TTL
from guardrail.errors import BatchItemFailed, BatchJobError

__all__ = ["JOB_TTL", "LIVE_THRESHOLD", "AsyncJob", "BatchItemFailed", "BatchJobError", "Job", "JobStatus", "aresume",
           "asubmit", "resume", "submit"]
