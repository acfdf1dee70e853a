"""A process that submits a batch job and stops hard while collecting it: ``python -m support.batch_worker
BASE_URL DB_PATH JOB_ID STOP_AFTER`` submits the batch tests' mixed requests to the emulator at BASE_URL with its
state in the SQLite file DB_PATH, reads STOP_AFTER results, and exits at once (``os._exit``: no cleanup runs, as
when a process is killed)."""

from __future__ import annotations

import os
import sys

import openai
from support.batch_jobs import Ticket, requests

import guardrail.batch
from guardrail.store import SQLiteStore


def main() -> None:
    base_url, db, job_id, stop_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    job = guardrail.batch.submit(client, requests(12), response_model=Ticket, store=SQLiteStore(db), job_id=job_id,
                                 live_threshold=0)
    for read, (custom_id, _) in enumerate(job.results(poll_interval=0), start=1):
        print(custom_id, flush=True)
        if read >= stop_after:
            os._exit(3)
    os._exit(0)


if __name__ == "__main__":
    main()
