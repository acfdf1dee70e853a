"""A wall-clock watchdog for synchronous HTTP reads: at the deadline it cuts the connection.

Why: httpx's timeouts are per read. A body that trickles in (every read returning within the read timeout)
can run for as long as the server likes, and a synchronous read cannot be cancelled. So while a sync
driver reads an answer, an :class:`Alarm` is armed for the call's deadline; when it rings it shuts the
response's socket down (``shutdown(SHUT_RDWR)``), which wakes the blocked read with an error at once, and
the driver reports the deadline. Asynchronous drivers need none of this: they cancel with ``asyncio``.

One daemon thread serves every alarm of the process (a heap of due times), started on first use; a forked
child starts afresh. When the response exposes no socket (a custom transport), nothing is cut and the per-read
timeout, itself never longer than the time left, still bounds each read.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any


class Alarm:
    """One armed deadline. ``fired`` is set once its action ran; :meth:`cancel` stops it from running."""

    def __init__(self, at: float, action: Callable[[], None], on_cancel: Callable[[], None]) -> None:
        self.at = at
        self.fired = False
        self._action = action
        self._on_cancel = on_cancel
        self._done = False
        self._lock = threading.Lock()

    def cancel(self) -> None:
        """Disarm; after this returns the action has either run completely or will never run."""
        with self._lock:
            if self._done:
                return
            self._done = True
        self._on_cancel()

    @property
    def done(self) -> bool:
        """Rung or cancelled."""
        return self._done

    def ring(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            self.fired = True
            with contextlib.suppress(Exception):  # a failing action must not kill the watchdog thread
                self._action()


class _Watchdog:
    """The process-wide thread that rings alarms when they are due."""

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._heap: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._cancelled = 0

    def arm(self, at: float, action: Callable[[], None]) -> Alarm:
        """Run ``action`` at ``at`` (a ``time.monotonic()`` value) unless the returned alarm is cancelled."""
        alarm = Alarm(at, action, self._note_cancel)
        with self._wake:
            if self._cancelled > 64 and 2 * self._cancelled > len(self._heap):
                # most calls end long before their deadline: drop their alarms rather than hold them until due
                self._heap = [entry for entry in self._heap if not entry[2].done]
                heapq.heapify(self._heap)
                self._cancelled = 0
            heapq.heappush(self._heap, (at, next(self._order), alarm))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="guardrail-deadline-watchdog", daemon=True)
                self._thread.start()
            self._wake.notify()
        return alarm

    def _note_cancel(self) -> None:
        with self._wake:
            self._cancelled += 1

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._wake.wait(None if not self._heap else self._heap[0][0] - time.monotonic())
                _, _, alarm = heapq.heappop(self._heap)
            alarm.ring()


    def _after_fork(self) -> None:
        """In a forked child: the parent's thread is gone and its lock may have been held; start afresh."""
        self.__init__()  # type: ignore[misc]


_WATCHDOG = _Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WATCHDOG._after_fork)


def cut_at(deadline_at: float, http_response: Any) -> Alarm:
    """Arm an alarm that shuts ``http_response``'s connection down at ``deadline_at``."""
    return _WATCHDOG.arm(deadline_at, lambda: _shut(http_response))


def _shut(http_response: Any) -> None:
    stream = getattr(http_response, "extensions", {}).get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
