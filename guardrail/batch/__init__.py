"""Validated batch jobs over the vendors' batch APIs (OpenAI Batch, Anthropic Message Batches).

``submit`` a job of many ``create(...)`` calls, ``resume`` it anywhere from its store, ``wait`` for it and read
``results()``: each item's validated :class:`~guardrail.Result` or typed error, with the same parse, repair and
gates as a live call and the failed items re-asked (see :mod:`guardrail.batch.job`).
"""

from guardrail.batch.job import LIVE_THRESHOLD, Job, JobStatus, resume, submit
from guardrail.batch.records import JOB_TTL
from guardrail.errors import BatchItemFailed, BatchJobError

__all__ = ["JOB_TTL", "LIVE_THRESHOLD", "BatchItemFailed", "BatchJobError", "Job", "JobStatus", "resume", "submit"]
