"""Hang guards and thread helpers: turn a hang into a failure, wait for another thread's progress, start
workers together. Never speed claims (speed is measured in ``bench/``)."""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


#: How long a hang guard waits: generous, so that it only ever turns a hang into a failure (speed is bench/'s).
HANG_GUARD_S = 60.0


def finishes(fn: Callable[[], T], what: str, within: float = HANG_GUARD_S) -> T:
    """``fn()``'s value (or its exception, re-raised here), failing with a clear message if it still runs after
    ``within`` seconds. A hang guard, not a speed claim: it runs ``fn`` in a daemon thread (in a copy of the
    caller's context, so ``guardrail.identity`` and other context variables hold there too) and joins it."""
    done: list[T] = []
    raised: list[BaseException] = []
    context = contextvars.copy_context()

    def run() -> None:
        try:
            done.append(context.run(fn))
        except BaseException as error:  # handed back to the test's thread below
            raised.append(error)

    worker = threading.Thread(target=run, daemon=True, name=f"hang guard: {what}")
    worker.start()
    worker.join(within)
    if worker.is_alive():
        raise AssertionError(f"{what} still running after {within:.0f} s: it hangs (or is quadratic or worse)")
    if raised:
        raise raised[0]
    return done[0]


def in_threads(worker: Callable[[int], object], count: int) -> None:
    """Run ``worker(0)`` .. ``worker(count - 1)``, each in its own thread, all started before any is joined
    (a worker that must start at the same moment as the others waits on a barrier of its own)."""
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def until(condition: Callable[[], bool], what: str, within: float = HANG_GUARD_S) -> None:
    """Poll ``condition`` (every 10 ms) until it holds; fail with ``what`` if it still does not after ``within``
    seconds. For waiting on another thread's progress instead of sleeping a guessed time."""
    give_up = time.monotonic() + within
    while not condition():
        if time.monotonic() > give_up:
            raise AssertionError(f"{what}: still not true after {within:.0f} s")
        time.sleep(0.01)
