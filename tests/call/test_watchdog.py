"""The deadline watchdog itself (``guardrail.call.watchdog``), against a real server that never answers.

``test_deadlines`` proves the watchdog end to end through every endpoint; these tests pin its parts: a cut
finds the connection a thread is blocked on in that thread's own stack (no per-request hooks), keeps looking
until the try reaches a connection, leaves a paused try's thread alone, and a far or infinite deadline does not
kill the watchdog thread. No assertion is about elapsed time; a hang is caught by a generous join timeout.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import openai
import pytest

from guardrail.call.watchdog import RECHECK_S, Cut, arm, blocked_stream

JOIN_S = 30.0


def wait_for(get: Callable[[], Any]) -> Any:
    """``get()``'s first truthy value, polled for up to :data:`JOIN_S`; its last (falsy) value after that."""
    for _ in range(int(JOIN_S / 0.01)):
        value = get()
        if value:
            return value
        time.sleep(0.01)
    return get()


class Silent:
    """A TCP server that accepts connections and reads requests but never answers a byte."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(connection)

    def wait_connection(self) -> socket.socket:
        if not wait_for(lambda: self.connections):
            raise AssertionError("the client never connected")
        return self.connections[0]

    def close(self) -> None:
        self.listener.close()
        for connection in self.connections:
            connection.close()


@pytest.fixture
def silent() -> Iterator[Silent]:
    server = Silent()
    yield server
    server.close()


def blocked_call(server: Silent, before: Callable[[Cut], Any] = lambda cut: None
                 ) -> tuple[threading.Thread, dict[str, Any]]:
    """A thread that makes its cut (``outcome["cut"]``), runs ``before(cut)`` and then an SDK request that
    blocks reading the answer; ``outcome["error"]`` is how the request ended."""
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="k", max_retries=0, timeout=120)
    outcome: dict[str, Any] = {}
    made = threading.Event()

    def run() -> None:
        outcome["cut"] = cut = Cut()
        made.set()
        before(cut)
        try:
            client.models.list()
        except Exception as error:
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert made.wait(JOIN_S)
    return thread, outcome


def wait_blocked(thread: threading.Thread) -> Any:
    assert thread.ident is not None
    ident = thread.ident
    stream = wait_for(lambda: blocked_stream(ident))
    if stream is None:
        raise AssertionError("the thread never blocked on a connection")
    return stream


def test_a_cut_finds_and_shuts_the_connection_its_thread_is_blocked_on(silent: Silent) -> None:
    thread, outcome = blocked_call(silent)
    stream = wait_blocked(thread)
    assert stream.get_extra_info("socket").getpeername()[1] == silent.port
    outcome["cut"]()
    thread.join(JOIN_S)
    assert not thread.is_alive(), "the blocked read was not woken"
    assert isinstance(outcome["error"], openai.APIConnectionError)


def test_a_thread_not_blocked_in_httpcore_has_no_stream() -> None:
    assert threading.current_thread().ident is not None
    assert blocked_stream(threading.current_thread().ident) is None
    assert blocked_stream(-1) is None  # no such thread


def test_an_alarm_that_rings_before_the_connection_exists_cuts_it_once_it_does(silent: Silent) -> None:
    """The deadline passes while the try has not even sent its request: the alarm keeps ringing, and the
    connection is shut as soon as the thread blocks on it."""
    armed: dict[str, Any] = {}
    gate = threading.Event()

    def arm_then_wait(cut: Cut) -> None:
        armed["alarm"] = arm(time.monotonic(), cut)  # due at once
        gate.wait(JOIN_S)

    thread, outcome = blocked_call(silent, arm_then_wait)
    wait_for(lambda: "alarm" in armed and armed["alarm"].fired)
    assert armed["alarm"].fired and not armed["alarm"].done, "a rung alarm of a running try stops looking"
    gate.set()  # now the request goes out, after the deadline rang
    thread.join(JOIN_S)
    armed["alarm"].cancel()
    assert not thread.is_alive(), "the connection made after the deadline was never cut"
    assert isinstance(outcome["error"], openai.APIConnectionError)
    assert armed["alarm"].done


def test_a_paused_try_leaves_its_thread_alone(silent: Silent) -> None:
    """While a stream's preview is out, the try's thread runs the consumer's code: a cut must not shut what
    that code is blocked on."""
    thread, outcome = blocked_call(silent)
    wait_blocked(thread)
    cut: Cut = outcome["cut"]
    cut.pause()
    cut()
    server_side = silent.wait_connection()
    assert server_side.recv(65536)  # the request; what follows would be the client's end of the connection
    readable, _, _ = select.select([server_side], [], [], 0.3)
    assert not readable, "the connection was shut although the try was paused"
    assert thread.is_alive()
    server_side.close()  # end the request
    thread.join(JOIN_S)
    assert not thread.is_alive()


@pytest.mark.parametrize("far", [1e12, float("inf")])
def test_a_far_deadline_does_not_kill_the_watchdog(far: float) -> None:
    """A huge or infinite timeout made the watchdog's timed wait overflow ``time_t``, which killed its thread;
    nearer deadlines armed later were then rung only because the thread was restarted for them."""
    crashed: list[BaseException | None] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: crashed.append(args.exc_value)
    try:
        distant = arm(time.monotonic() + far, Cut())
        time.sleep(0.2)  # the watchdog thread now waits for the far deadline
        near = arm(time.monotonic() + 0.05, Cut())
        wait_for(lambda: near.fired)
        near.cancel()
        distant.cancel()
    finally:
        threading.excepthook = previous
    assert near.fired
    assert crashed == []


def test_an_alarm_cancelled_from_inside_its_own_cut_does_not_hang_the_watchdog() -> None:
    """A garbage collection on the watchdog thread, while a cut runs, may finalize the very try being cut, whose
    cleanup cancels the alarm: the watchdog thread itself then cancels the alarm it is ringing."""
    box: dict[str, Any] = {}

    class Reentrant(Cut):
        def __call__(self) -> float | None:
            box["alarm"].cancel()  # what the try's ``finally`` does when a collection finalizes it here
            box["cancelled_inside"] = True
            return RECHECK_S

    box["alarm"] = arm(time.monotonic(), Reentrant())
    later = arm(time.monotonic() + 0.05, Cut())
    wait_for(lambda: later.fired)
    later.cancel()
    assert box.get("cancelled_inside") and box["alarm"].done
    assert later.fired, "the watchdog thread hung inside a cut"


class AnswersOnce:
    """A keep-alive HTTP server on one connection: the first request gets a whole answer, the next none."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connection: socket.socket | None = None
        self.second = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        connection, _ = self.listener.accept()
        self.connection = connection
        connection.recv(65536)
        connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}")
        connection.recv(65536)  # the second request, on the same connection: never answered
        self.second.set()

    def close(self) -> None:
        self.listener.close()
        if self.connection is not None:
            self.connection.close()


def test_a_response_read_to_its_end_is_never_cut_its_connection_may_serve_another_request() -> None:
    """Once a try has read its whole answer, httpx hands the connection back to the pool; a deadline ringing
    before the try cancels its alarm must not shut it under the next request that reuses it."""
    import httpx2  # the HTTP client the SDKs use here

    server = AnswersOnce()
    try:
        client = httpx2.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=JOIN_S)
        first = client.get("/a")
        assert first.json() == {} and first.is_closed
        cut = Cut()
        cut.attach(first)
        outcome: dict[str, Any] = {}

        def second() -> None:
            try:
                outcome["response"] = client.get("/b")
            except Exception as error:
                outcome["error"] = error

        thread = threading.Thread(target=second, daemon=True)
        thread.start()
        assert server.second.wait(JOIN_S), "the second request never reached the server"
        assert cut() is not None  # nothing of its own was left to cut: it keeps looking
        assert server.connection is not None
        readable, _, _ = select.select([server.connection], [], [], 0.3)
        assert not readable, "the first response's cut shut the connection the second request is using"
        assert thread.is_alive() and "error" not in outcome
    finally:
        server.close()
    thread.join(JOIN_S)
