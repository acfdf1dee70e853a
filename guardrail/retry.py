"""Transport retries, built on tenacity: which failures, how long to wait, when to stop.

Only transport failures are retried here (408/409/429/5xx/529, timeouts, dropped connections, an overload
event mid-stream); a reply that fails the contract is the attempt loop's business, with feedback. The wait
is the server's ``retry-after-ms``/``retry-after`` when it sent one (capped at ``max_wait``), else full
jitter (``wait_random_exponential``). Tries stop at ``max_tries`` or when the next wait would pass the
call's deadline, whichever comes first. The SDK's own retries are switched off on the client guardrail uses,
so nothing is retried twice.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState, retry_if_exception, stop_after_attempt, wait_random_exponential
from tenacity.stop import stop_base

from guardrail.vendors.failures import classify


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How transport failures are retried within one call.

    Attributes:
        max_tries: HTTP tries per attempt, the first included.
        initial_wait: the full-jitter base (seconds); waits grow as ``initial_wait * 2**n`` up to ``max_wait``.
        max_wait: the cap on any one wait, ``Retry-After`` included.
        deadline: seconds for the whole call (all attempts and retries); ``None`` for no deadline.
    """

    max_tries: int = 4
    initial_wait: float = 0.5
    max_wait: float = 20.0
    deadline: float | None = 120.0

    def __post_init__(self) -> None:
        if self.max_tries < 1:
            raise ValueError("max_tries must be at least 1")

    def tenacity_kwargs(self, deadline_at: float | None) -> dict[str, Any]:
        """Keyword arguments for ``tenacity.Retrying``/``AsyncRetrying`` for one attempt's HTTP tries."""
        jitter = wait_random_exponential(multiplier=self.initial_wait, max=self.max_wait)

        def wait(state: RetryCallState) -> float:
            failure = classify(_error(state))
            if failure is not None and failure.retry_after is not None:
                return min(failure.retry_after, self.max_wait)
            return float(jitter(state))

        def retryable(error: BaseException) -> bool:
            failure = classify(error)
            return failure is not None and failure.kind == "retryable"

        return {"stop": stop_after_attempt(self.max_tries) | StopAtDeadline(deadline_at), "wait": wait,
                "retry": retry_if_exception(retryable), "reraise": True}


class StopAtDeadline(stop_base):
    """Stop when the next wait would end after the deadline (a ``time.monotonic()`` value; ``None``: never)."""

    def __init__(self, deadline_at: float | None) -> None:
        self.deadline_at = deadline_at

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self.deadline_at is not None and time.monotonic() + retry_state.upcoming_sleep > self.deadline_at


def _error(state: RetryCallState) -> BaseException:
    outcome = state.outcome
    error = outcome.exception() if outcome is not None else None
    return error if error is not None else RuntimeError("no outcome")
