"""A wall-clock watchdog for synchronous HTTP reads: at the deadline it cuts the connection.

Why: httpx's timeouts are per read. A body that trickles in (every read returning within the read timeout)
can run for as long as the server likes, and a synchronous read cannot be cancelled. So while a sync
driver reads an answer, an :class:`Alarm` is armed for the call's deadline; when it rings it shuts the
try's socket down (``shutdown(SHUT_RDWR)``), which wakes the blocked read with an error at once, and the
driver reports the deadline. Asynchronous drivers need none of this: they cancel with ``asyncio``.

The alarm is armed *before* the request is sent, because the SDK itself reads before handing a response
over: the status line and headers, and the whole body of an error status (4xx/5xx), which a server can trickle
as slowly as a good answer. Nothing is done per request to learn the connection, so a call that ends in time
pays only for arming and cancelling its alarm. The connection is found when the alarm rings:

- once the SDK has handed the response over, the exchange :meth:`attaches <Cut.attach>` it (the connection is
  its ``network_stream`` extension, cut only while the response is open);
- before that (the status line, the headers, an error body the SDK reads itself), the try's thread is blocked
  inside httpcore, whose frames hold the stream: :func:`blocked_stream` finds it in that thread's stack.

An alarm whose cut found no connection rings again shortly (the thread was still connecting, or between
reads), and a response attached after the deadline is cut when attached. Once the try has read its whole answer
its connection is back in the pool, perhaps serving another request, and is never cut.

One daemon thread serves every alarm of the process (a heap of due times), started on first use; a forked
child starts afresh. When no socket is ever exposed (a custom transport), nothing is cut and the per-read
timeout, itself never longer than the time left, still bounds each read.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any

#: Seconds until an alarm whose cut found no connection rings again (doubling each time, up to
#: :data:`RECHECK_MAX_S`): the try had not reached its connection yet (see the module docstring).
RECHECK_S = 0.02
RECHECK_MAX_S = 0.32
#: The longest single wait of the watchdog thread (seconds); it re-checks the heap after each. A far
#: deadline (a huge or infinite timeout) would otherwise overflow the platform's timed wait.
_MAX_WAIT = 3600.0


class Alarm:
    """One armed deadline. ``fired`` is set once its action ran; :meth:`cancel` stops it from running again.

    The action returns ``None`` when it is done, or the seconds after which it should run again (until the
    alarm is cancelled). The action runs outside the alarm's lock, so whatever it triggers on the watchdog thread
    (a garbage collection finalizing the very try it cuts, which cancels this alarm) cannot deadlock it; the
    lock's own sections allocate no container, so no collection can start inside them.
    """

    def __init__(self, at: float, action: Callable[[], float | None], on_cancel: Callable[[], None]) -> None:
        self.at = at
        self.fired = False
        self._action = action
        self._on_cancel = on_cancel
        self._done = False
        self._running: tuple[int, threading.Event] | None = None  # (thread, set when done) while the action runs
        self._lock = threading.Lock()

    def cancel(self) -> None:
        """Disarm; after this returns the action is not running (unless this thread is the one running it, from
        inside the action) and will never run again."""
        with self._lock:
            first = not self._done
            self._done = True
            running = self._running
        if running is not None and running[0] != threading.get_ident():
            running[1].wait()
        if first:
            self._on_cancel()

    @property
    def done(self) -> bool:
        """Cancelled, or rung with nothing left to do."""
        return self._done

    def ring(self) -> float | None:
        """Run the action (once the alarm is due); the seconds until it should ring again, or ``None``."""
        finished = threading.Event()
        running = (threading.get_ident(), finished)
        with self._lock:
            if self._done:
                return None
            self.fired = True
            self._running = running
        again: float | None = None
        try:
            with contextlib.suppress(Exception):  # a failing action must not kill the watchdog thread
                again = self._action()
        finally:
            with self._lock:
                self._running = None
                if again is None or self._done:
                    self._done, again = True, None
            finished.set()
        return again


class _Watchdog:
    """The process-wide thread that rings alarms when they are due."""

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._heap: list[tuple[float, int, Alarm]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._cancelled = 0

    def arm(self, at: float, action: Callable[[], float | None]) -> Alarm:
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
            elif self._heap[0][2] is alarm:
                # The thread sleeps until the earliest due time; only an alarm due sooner needs to wake it.
                # Waking it for every call would hand the GIL to it on the hot path (about 1 ms a call).
                self._wake.notify()
        return alarm

    def _note_cancel(self) -> None:
        with self._wake:
            self._cancelled += 1

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._wake.wait(None if not self._heap else min(self._heap[0][0] - time.monotonic(), _MAX_WAIT))
                _, _, alarm = heapq.heappop(self._heap)
            again = alarm.ring()
            if again is not None:
                with self._wake:
                    heapq.heappush(self._heap, (time.monotonic() + again, next(self._order), alarm))

    def _after_fork(self) -> None:
        """In a forked child: the parent's thread is gone and its lock may have been held; start afresh."""
        self.__init__()  # type: ignore[misc]


_WATCHDOG = _Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WATCHDOG._after_fork)


class Cut:
    """Shuts one try's connection down when called (the alarm's action), wherever the try is.

    The try runs in the thread that made the cut (:meth:`follow` moves it to the current thread, :meth:`pause`
    says it is suspended and its thread is doing other work). When called it shuts the connection of every
    attached response still open and the one the try's thread is blocked on (:func:`blocked_stream`). Having shut
    one, it is done: the blocked read wakes with an error, and a response attached later is shut when attached.
    Having found none (the try is still connecting, or between reads), it asks to be called again, after
    :data:`RECHECK_S`, then twice as long each time up to :data:`RECHECK_MAX_S`. Once the try has read its whole
    answer (:meth:`over`), nothing is cut: its connection may already serve another request.
    """

    def __init__(self) -> None:
        self._responses: list[Any] = []
        self._due = False
        self._over = False
        self._wait = RECHECK_S / 2
        self._lock = threading.Lock()
        self._thread: int | None = threading.get_ident()

    def follow(self) -> None:
        """The try runs (again) in the current thread."""
        with self._lock:
            self._thread = threading.get_ident()

    def pause(self) -> None:
        """The try is suspended (a stream's preview was handed out): its thread's stack is not the try's."""
        with self._lock:
            self._thread = None

    def over(self) -> None:
        """The try has read its whole answer: its connection went back to the pool, so it is never cut now."""
        with self._lock:
            self._over, self._thread = True, None
            self._responses.clear()

    def attach(self, response: Any) -> None:
        """Note the try's httpx response (its connection is the one to cut); cut it now if the deadline rang."""
        if response is None:
            return
        with self._lock:
            if self._over:
                return
            self._responses.append(response)
            if self._due:
                _shut_response(response)

    def __call__(self) -> float | None:
        with self._lock:  # held while cutting: pause() or over() cannot slip between looking and shutting
            self._due = True
            if self._over:
                return None
            struck = False
            for response in self._responses:
                struck = _shut_response(response) or struck
            if self._thread is not None:
                stream = blocked_stream(self._thread)
                if stream is not None:
                    struck = _shut_stream(stream) or struck
            if struck:
                return None
            self._wait = min(2 * self._wait, RECHECK_MAX_S)
            return self._wait


def arm(deadline_at: float, cut: Cut) -> Alarm:
    """Arm an alarm that runs ``cut`` at ``deadline_at`` (a ``time.monotonic()`` value), and again while the cut
    asks for it, until cancelled."""
    return _WATCHDOG.arm(deadline_at, cut)


# -- finding the connection a blocked thread waits on ---------------------------------------------------------
#: How many frames of the blocked thread's stack are searched, innermost first.
_FRAMES = 40
#: httpcore's methods whose ``self`` is a network stream (``read``/``write``/``start_tls``) or holds one as
#: ``_network_stream`` (a connection sending a request or receiving its answer).
_HOLDERS = frozenset({"read", "write", "start_tls", "_send_event", "_receive_event", "_send_request_headers",
                      "_send_request_body", "_receive_response_headers", "_receive_response_body",
                      "handle_request"})


def blocked_stream(thread: int) -> Any:
    """The httpcore network stream the thread ``thread`` is using (blocked reading or writing it), or ``None``.

    httpcore names a connection's stream in no public place before the response exists, but its own frames
    hold it: the innermost frame of httpcore's that is one of :data:`_HOLDERS` has it as ``self`` or
    ``self._network_stream``. Only such frames' locals are read (reading a frame's locals copies them).
    """
    frame: types.FrameType | None = sys._current_frames().get(thread)
    for _ in range(_FRAMES):
        if frame is None:
            return None
        if frame.f_code.co_name in _HOLDERS and str(frame.f_globals.get("__name__", "")).startswith("httpcore"):
            holder = frame.f_locals.get("self")
            for stream in (holder, getattr(holder, "_network_stream", None)):
                if stream is not None and callable(getattr(stream, "get_extra_info", None)):
                    return stream
        frame = frame.f_back
    return None


def _shut_response(response: Any) -> bool:
    """Shut the connection of an httpx response whose body is still being read; whether one was shut. A closed
    response's connection is back in the pool, perhaps serving another request: it is left alone."""
    if getattr(response, "is_closed", False):
        return False
    return _shut_stream(getattr(response, "extensions", {}).get("network_stream"))


def _shut_stream(stream: Any) -> bool:
    """Shut an httpcore network stream's socket down; whether there was a socket to shut."""
    sock = None
    with contextlib.suppress(Exception):
        sock = stream.get_extra_info("socket")
    if not isinstance(sock, socket.socket):
        return False
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    return True
