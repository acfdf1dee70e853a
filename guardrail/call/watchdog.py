"""A wall-clock watchdog for synchronous HTTP reads: at the deadline it cuts the connection.

Why: httpx's timeouts are per read. A body that trickles in (every read returning within the read timeout)
can run for as long as the server likes, and a synchronous read cannot be cancelled. So while a sync
driver reads an answer, an :class:`Alarm` is armed for the call's deadline; when it rings it shuts the
response's socket down (``shutdown(SHUT_RDWR)``), which wakes the blocked read with an error at once, and
the driver reports the deadline. Asynchronous drivers need none of this: they cancel with ``asyncio``.

The alarm is armed *before* the request is sent, because the SDK itself reads before handing a response
over: the status line and headers, and the whole body of an error status (4xx/5xx), which a server can trickle
as slowly as a good answer. So the connection is learned as soon as it exists: :func:`watching` puts the try's
:class:`Cut` in a context variable, and two inert hooks installed once on the SDK's synchronous httpx client
(:func:`install_hooks`) tell it the connection: a request hook adds httpcore's ``trace`` extension, whose
``connect_tcp``/``start_tls`` events carry a new connection's stream, and a response hook gives the stream of
every response the moment its headers are in, before the SDK reads an error body. A request sent on a kept-alive
connection has no such event; its stream is found on the connection that traces ``send_request_headers``
(:func:`_sending_stream`). The hooks do nothing outside a guardrail try. A deadline that rings before the
connection is known cuts it the moment it becomes known.

One daemon thread serves every alarm of the process (a heap of due times), started on first use; a forked
child starts afresh. When no socket is ever exposed (a custom transport), nothing is cut and the per-read
timeout, itself never longer than the time left, still bounds each read.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import itertools
import os
import socket
import sys
import threading
import time
import types
import weakref
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


#: The longest single wait of the watchdog thread (seconds); it re-checks the heap after each.
_MAX_WAIT = 3600.0


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
                    # a far deadline (a huge or infinite timeout) waits in bounded steps: the platform's
                    # timed wait overflows past time_t, which would kill this thread
                    self._wake.wait(None if not self._heap else min(self._heap[0][0] - time.monotonic(), _MAX_WAIT))
                _, _, alarm = heapq.heappop(self._heap)
            alarm.ring()


    def _after_fork(self) -> None:
        """In a forked child: the parent's thread is gone and its lock may have been held; start afresh."""
        self.__init__()  # type: ignore[misc]


_WATCHDOG = _Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WATCHDOG._after_fork)


class Cut:
    """Shuts one try's connection down when called (the alarm's action), as soon as the connection is known.

    :meth:`attach` tells it a connection (an httpcore network stream); a cut already due shuts it at once.
    """

    def __init__(self) -> None:
        self._streams: list[Any] = []
        self._due = False
        self._lock = threading.Lock()

    @property
    def known(self) -> bool:
        """Whether a connection has been attached."""
        return bool(self._streams)

    def attach(self, stream: Any) -> None:
        """Note the try's connection; shut it now if the deadline has already rung."""
        if stream is None:
            return
        with self._lock:
            self._streams.append(stream)
            due = self._due
        if due:
            _shut_stream(stream)

    def __call__(self) -> None:
        with self._lock:
            self._due = True
            streams = list(self._streams)
        for stream in streams:
            _shut_stream(stream)


def arm(deadline_at: float, cut: Cut) -> Alarm:
    """Arm an alarm that runs ``cut`` at ``deadline_at`` (a ``time.monotonic()`` value)."""
    return _WATCHDOG.arm(deadline_at, cut)


def cut_at(deadline_at: float, http_response: Any) -> Alarm:
    """Arm an alarm that shuts ``http_response``'s connection down at ``deadline_at``."""
    cut = Cut()
    cut.attach(getattr(http_response, "extensions", {}).get("network_stream"))
    return arm(deadline_at, cut)


# -- learning the connection while the SDK sends and reads ----------------------------------------------------
_CURRENT: contextvars.ContextVar[Cut | None] = contextvars.ContextVar("guardrail_cut", default=None)
_HOOKED: weakref.WeakSet[Any] = weakref.WeakSet()
_HOOK_LOCK = threading.Lock()
#: httpcore trace events whose ``return_value`` is the connection's (new) network stream.
_STREAM_EVENTS = ("connect_tcp.complete", "start_tls.complete", "connect_unix_socket.complete")
#: The trace event of a request about to be written on its connection (new or kept alive).
_SENDING = "send_request_headers.started"
#: How many frames above the tracer :func:`_sending_stream` looks for the connection.
_FRAMES = 6
#: The methods whose ``self`` may be the connection (httpcore's ``HTTP11Connection.handle_request``).
_SENDERS = frozenset({"handle_request", "_send_request_headers", "_send_event"})


class watching:
    """While inside, the installed hooks report this thread's (context's) connections to ``cut``.

    A class rather than a generator context manager: it is entered on every HTTP try."""

    __slots__ = ("_cut", "_token")

    def __init__(self, cut: Cut) -> None:
        self._cut = cut

    def __enter__(self) -> None:
        self._token = _CURRENT.set(self._cut)

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


def install_hooks(http_client: Any) -> bool:
    """Install the two inert hooks on a synchronous httpx client once; ``False`` when it cannot take them
    (an async client, whose hooks must be coroutines, or no ``event_hooks``)."""
    with contextlib.suppress(TypeError):  # hooked already (the common case, once per call): no more checks
        if http_client in _HOOKED:
            return True
    hooks = getattr(http_client, "event_hooks", None)
    send = getattr(http_client, "send", None)
    if not isinstance(hooks, dict) or send is None or asyncio.iscoroutinefunction(send):
        return False
    requests, responses = hooks.get("request"), hooks.get("response")
    if not isinstance(requests, list) or not isinstance(responses, list):
        return False
    with _HOOK_LOCK:
        with contextlib.suppress(TypeError):  # not weak-referenceable: the membership checks below suffice
            if http_client in _HOOKED:
                return True
            _HOOKED.add(http_client)
        if _on_request not in requests:
            requests.append(_on_request)
        if _on_response not in responses:
            responses.append(_on_response)
    return True


def _on_request(request: Any) -> None:
    cut = _CURRENT.get()
    extensions = getattr(request, "extensions", None)
    if cut is None or not isinstance(extensions, dict):
        return
    extensions["trace"] = _Tracer(cut, extensions.get("trace"))


def _on_response(response: Any) -> None:
    cut = _CURRENT.get()
    if cut is not None:
        cut.attach(getattr(response, "extensions", {}).get("network_stream"))


class _Tracer:
    """httpcore's ``trace`` callback: passes each new connection's stream to the cut, then any earlier tracer."""

    def __init__(self, cut: Cut, previous: Any) -> None:
        self.cut = cut
        self.previous = previous

    def __call__(self, name: str, info: dict[str, Any]) -> None:
        if name.endswith(_STREAM_EVENTS):
            self.cut.attach(info.get("return_value"))
        elif name.endswith(_SENDING) and not self.cut.known:
            self.cut.attach(_sending_stream())
        if self.previous is not None:
            self.previous(name, info)


def _sending_stream() -> Any:
    """The stream of the kept-alive connection that is sending this request, or ``None``.

    httpcore names a connection's stream in its trace events only when it opens the connection. A request
    sent on a kept-alive one is traced from the connection's own ``handle_request``, whose ``self`` holds the
    stream: so look a few frames up for it. Nothing found (another httpcore layout): no cut before the
    response, and the per-read timeout bounds the headers, as the module docstring says.
    """
    frame: types.FrameType | None = sys._getframe(2)
    for _ in range(_FRAMES):
        if frame is None:
            return None
        if frame.f_code.co_name not in _SENDERS:  # f_locals copies a frame's locals: read only the likely ones
            frame = frame.f_back
            continue
        stream = getattr(frame.f_locals.get("self"), "_network_stream", None)
        if stream is not None and callable(getattr(stream, "get_extra_info", None)):
            return stream
        frame = frame.f_back
    return None


def _shut_stream(stream: Any) -> None:
    sock = None
    with contextlib.suppress(Exception):
        sock = stream.get_extra_info("socket")
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
