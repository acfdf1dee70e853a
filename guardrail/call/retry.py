"""Transport retries, built on tenacity: which failures, how long to wait, when to stop.

Only transport failures are retried here (408/409/429/5xx/529, timeouts, dropped connections, an overload
event mid-stream); a reply that fails the contract is the attempt loop's business, with feedback. The wait
is the server's ``retry-after-ms``/``retry-after`` when it sent one (capped at ``max_wait``), else full
jitter (``wait_random_exponential``). Tries stop at ``max_tries`` or when the next wait would pass the
call's deadline, whichever comes first. The SDK's own retries are switched off on the client guardrail uses,
so nothing is retried twice.

The deadline is wall-clock and covers the whole call: every attempt, retry and wait, and the time the
answer takes to arrive (a body or stream that trickles in is cut off when it passes). By default it follows
the wrapped client's own timeout (the call's ``timeout=`` when given), so guardrail never cuts a request
the SDK itself would let finish; a number sets it, ``None`` removes it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Final, Literal

from tenacity import RetryCallState, retry_if_exception, stop_after_attempt, wait_random_exponential
from tenacity.stop import stop_base

from guardrail.errors import ConfigError
from guardrail.vendors.failures import classify

#: ``RetryPolicy.deadline`` value meaning "as long as the client's own timeout" (the default).
CLIENT_TIMEOUT: Final = "client"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How transport failures are retried within one call.

    Attributes:
        max_tries: HTTP tries per attempt, the first included.
        initial_wait: the full-jitter base (seconds); waits grow as ``initial_wait * 2**n`` up to ``max_wait``.
        max_wait: the cap on any one wait, ``Retry-After`` included.
        deadline: wall-clock seconds for the whole call (all attempts, retries and the answer arriving);
            ``"client"`` (the default): the wrapped client's own timeout, or the call's ``timeout=``;
            ``None``: no deadline.
    """

    max_tries: int = 4
    initial_wait: float = 0.5
    max_wait: float = 20.0
    deadline: float | Literal["client"] | None = CLIENT_TIMEOUT

    def __post_init__(self) -> None:
        if self.max_tries < 1:
            raise ConfigError("max_tries must be at least 1")
        if isinstance(self.deadline, str) and self.deadline != CLIENT_TIMEOUT:
            raise ConfigError(f"deadline must be seconds, {CLIENT_TIMEOUT!r} or None, not {self.deadline!r}")
        if isinstance(self.deadline, (int, float)) and not self.deadline > 0:  # NaN fails this too
            raise ConfigError(f"deadline must be a positive number of seconds (None: none), not {self.deadline!r}")

    def deadline_seconds(self, timeout: float | None) -> float | None:
        """The call's deadline in seconds, given the client's (or the call's) timeout in seconds; ``None`` for
        none (an infinite or NaN timeout sets none either)."""
        seconds = timeout if self.deadline == CLIENT_TIMEOUT else self.deadline
        if seconds is None or isinstance(seconds, str) or not math.isfinite(seconds):
            return None
        return float(seconds)

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


def timeout_seconds(timeout: Any) -> float | None:
    """An SDK timeout in seconds: a number, or an httpx ``Timeout`` (its read timeout counts); else ``None``."""
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    read = getattr(timeout, "read", None)
    return float(read) if isinstance(read, (int, float)) and not isinstance(read, bool) else None


def _error(state: RetryCallState) -> BaseException:
    outcome = state.outcome
    error = outcome.exception() if outcome is not None else None
    return error if error is not None else RuntimeError("no outcome")
