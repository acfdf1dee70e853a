"""The emulator's shared state: what the test scripted, what the server received, served and saw closed.

The :class:`~guardrail.testing.Emulator` (the test's side) and the HTTP handler (:mod:`.server`, the client's side)
both hold one :class:`Ledger` and use it through its public methods, so neither reaches into the other: the
server module does not know the ``Emulator`` class at all. Every method is thread-safe (the server answers each
connection in its own thread).
"""

from __future__ import annotations

import socket
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from guardrail.errors import UsageError
from guardrail.testing.behaviours import Reply, error
from guardrail.testing.recording import RecordedRequest

if TYPE_CHECKING:
    from guardrail.testing.wire_batches import BatchBook

__all__ = ["EXHAUSTED", "Ledger", "Responder"]

#: What a responder is: called with each request the script does not cover; returns the behaviour.
Responder = Callable[[RecordedRequest], Reply]

#: The message of the 500 answered when there is no scripted behaviour and no responder.
EXHAUSTED = "emulator script exhausted: no scripted behaviour left and no responder set"


class Ledger:
    """The script queue and responder, the recorded requests, the tokens billed, the open connections, the answers
    cut off by the client, and the stop signal, with the settings the handler reads (``latency``,
    ``check_schemas``)."""

    def __init__(self, latency: float, check_schemas: bool) -> None:
        self.latency = latency
        self.check_schemas = check_schemas
        #: Called with each request when the script is empty; ``None`` means answer "script exhausted".
        self.responder: Responder | None = None
        #: Set while the emulator stops: stalls in flight end at once.
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._billed = [0, 0]
        self._connections: set[socket.socket] = set()
        self._closed_early = 0
        self._closed_early_changed = threading.Condition(self._lock)
        #: The batch APIs' files and batches (set by the ``Emulator``).
        self.batches: BatchBook | None = None

    # -- the test's side ---------------------------------------------------------------------------------
    def script(self, behaviours: tuple[Reply, ...]) -> None:
        """Append behaviours to the FIFO queue; each incoming request (any endpoint) consumes one."""
        for behaviour in behaviours:
            if not isinstance(behaviour, Reply):
                raise UsageError(f"expected a behaviour from guardrail.testing.reply, got {behaviour!r}")
        with self._lock:
            self._queue.extend(behaviours)

    def pending(self) -> int:
        """How many scripted behaviours are still queued."""
        with self._lock:
            return len(self._queue)

    def requests(self) -> list[RecordedRequest]:
        """Every request received (rejected ones too), in arrival order; a snapshot copy."""
        with self._lock:
            return list(self._requests)

    def tokens_served(self) -> tuple[int, int]:
        """(input, output) tokens of every completed answer."""
        with self._lock:
            return self._billed[0], self._billed[1]

    def closed_early(self) -> int:
        """How many answers the client cut off before the body was finished."""
        with self._lock:
            return self._closed_early

    def wait_closed_early(self, count: int, timeout: float) -> bool:
        """Wait until :meth:`closed_early` reaches ``count``; ``False`` if ``timeout`` seconds pass first."""
        with self._closed_early_changed:
            return self._closed_early_changed.wait_for(lambda: self._closed_early >= count, timeout)

    def connections(self) -> list[socket.socket]:
        """The connections open now (to shut them when the emulator stops)."""
        with self._lock:
            return list(self._connections)

    def reset(self) -> None:
        """Clear the queue, the responder, the recorded requests, the tokens served and the early closes."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._billed = [0, 0]
            self._closed_early = 0
            self.responder = None
        if self.batches is not None:
            self.batches.reset()

    # -- the handler's side ------------------------------------------------------------------------------
    def record(self, request: RecordedRequest) -> None:
        """Keep a received request."""
        with self._lock:
            self._requests.append(request)

    def next(self, request: RecordedRequest) -> Reply:
        """The behaviour answering ``request``: the next scripted one, else the responder's, else a 500."""
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            responder = self.responder
        if responder is None:
            return error(500, message=EXHAUSTED)
        try:
            behaviour = responder(request)
        except Exception as exc:  # a broken responder must fail the test loudly, not hang it
            return error(500, message=f"emulator responder raised {type(exc).__name__}: {exc}")
        if not isinstance(behaviour, Reply):
            return error(500, message=f"emulator responder returned {behaviour!r}, not a behaviour from reply.*")
        return behaviour

    def sleep(self, seconds: float) -> bool:
        """Wait ``seconds`` unless the emulator stops first; True when it is stopping."""
        return self.stopping.wait(seconds) if seconds > 0 else self.stopping.is_set()

    def track(self, connection: socket.socket, add: bool) -> None:
        """Note a connection opened (``add``) or closed."""
        with self._lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def bill(self, input_tokens: int, output_tokens: int) -> None:
        """Count the tokens of a completed answer."""
        with self._lock:
            self._billed[0] += input_tokens
            self._billed[1] += output_tokens

    def count_closed_early(self) -> None:
        """Note an answer the client cut off."""
        with self._closed_early_changed:
            self._closed_early += 1
            self._closed_early_changed.notify_all()
