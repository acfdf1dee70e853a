"""The HTTP side of the emulator: request handler, routing, and writing JSON, SSE and dropped answers.

One thread per connection (``ThreadingHTTPServer``, daemon threads), HTTP/1.1 keep-alive; streams use
chunked transfer encoding so a connection survives a stream, as with the real APIs. Every wait goes through
the stop event of the :class:`~guardrail.testing.ledger.Ledger` it shares with the ``Emulator``, so
``Emulator.stop()`` never waits on a stalled answer. This module does not know the ``Emulator`` class.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import select
import socket
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from guardrail.testing import wire_batches
from guardrail.testing.behaviours import Reply, error
from guardrail.testing.ledger import Ledger
from guardrail.testing.recording import Api, RecordedRequest
from guardrail.testing.rendering import Output, new_id, resolve
from guardrail.testing.wire_anthropic import messages_body, messages_events, messages_stream
from guardrail.testing.wire_chat import chat_body, chat_stream
from guardrail.testing.wire_errors import check_request, error_answer
from guardrail.testing.wire_gemini import GEMINI_PATH, gemini_body, gemini_stream
from guardrail.testing.wire_platforms import (
    EVENT_STREAM,
    platform_error,
    platform_problem,
    platform_route,
    platform_stream,
)
from guardrail.testing.wire_responses import responses_body, responses_stream

__all__ = ["Handler", "Server", "render"]



@dataclasses.dataclass(frozen=True, slots=True)
class _Wire:
    """One API the emulator speaks: its route (or, where the path holds the model, the pattern its paths match),
    and its wire module's writers of a JSON answer and of an event stream, given the behaviour answered
    (``failure``: the ``stream_error`` behaviour that ends the stream early, else ``None``)."""

    route: str | re.Pattern[str]
    body: Callable[[Output, RecordedRequest, Reply], dict[str, Any]]
    stream: Callable[[Output, RecordedRequest, Reply, Reply | None], list[bytes]]


#: Every API the emulator serves, one row per wire module.
_WIRES: dict[Api, _Wire] = {
    "chat": _Wire("/chat/completions", lambda out, request, reply: chat_body(out),
                  lambda out, request, reply, failure: chat_stream(out, request, failure)),
    "responses": _Wire("/responses", lambda out, request, reply: responses_body(request, out),
                       lambda out, request, reply, failure: responses_stream(request, out, failure)),
    "messages": _Wire("/messages", lambda out, request, reply: messages_body(out),
                      lambda out, request, reply, failure: messages_stream(out, failure)),
    "gemini": _Wire(GEMINI_PATH, lambda out, request, reply: gemini_body(out, reply),
                    lambda out, request, reply, failure: gemini_stream(out, reply, failure)),
}
_ROUTES: dict[str, Api] = {wire.route: api for api, wire in _WIRES.items() if isinstance(wire.route, str)}
#: The deployment prefix of Azure OpenAI paths (``openai.AzureOpenAI`` puts the model's deployment in the path).
_AZURE_DEPLOYMENT = re.compile(r"^(?:/openai)?/deployments/[^/]+(?=/)")


class Server(ThreadingHTTPServer):
    """Threaded HTTP server owned by one :class:`~guardrail.testing.Emulator`."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # benchmarks open many connections at once
    ledger: Ledger

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet when a client goes away (closing a stream early resets the connection); report the rest."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Drop(Exception):
    """Close the connection without (further) response."""


class Handler(BaseHTTPRequestHandler):
    """Answers one connection's requests: route, record, check, take a behaviour, write it in the wire shape."""

    protocol_version = "HTTP/1.1"
    server: Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle + delayed ACK add ~40 ms per answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.ledger.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.ledger.track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests read ``emu.requests``, not a log."""

    def do_GET(self) -> None:
        if not self._serve_batches("GET", b""):
            self._send_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}}, [])

    def do_POST(self) -> None:
        self._answered = False
        try:
            if self._serve_batches("POST", None):
                return
            self._serve_post()
        except (_Drop, OSError):
            self._abort()
        except Exception as exc:  # a bug here must fail the test with a message, not a bare disconnect
            if self._answered:
                self._abort()
                raise
            message = f"emulator internal error: {type(exc).__name__}: {exc}"
            self._send_json(500, {"error": {"message": message, "type": "server_error"}}, [])

    # -- steps -----------------------------------------------------------------------------------------
    def _serve_batches(self, method: str, raw: bytes | None) -> bool:
        """Answer a batch route (:mod:`.wire_batches`); ``False`` when the path is not one (nothing was read)."""
        path = urlsplit(self.path).path
        route = path[3:] if path.startswith("/v1/") else path
        book = self.server.ledger.batches
        if book is None or not (wire_batches.ROUTE.match(route) or wire_batches.GEMINI_ROUTE.match(route)):
            return False
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = book.handle(method, route, headers, self._read_body() if raw is None else raw)
        if answer is None:
            return False
        self._send_answer(answer)
        return True

    def _serve_post(self) -> None:
        ledger = self.server.ledger
        path = urlsplit(self.path).path
        route = path[3:] if path.startswith("/v1/") else path
        route = _AZURE_DEPLOYMENT.sub("", route)  # Azure OpenAI: /openai/deployments/NAME/chat/completions
        api = _ROUTES.get(route.rstrip("/"))
        if api is None:  # a hosted provider's prefix before /v1 (/openai/v1, /inference/v1, /api/v1)
            api = next((name for known, name in _ROUTES.items() if path.rstrip("/").endswith("/v1" + known)), None)
        platform = platform_route(path)  # Anthropic on Bedrock / Vertex AI: the model in the path
        if platform is not None:
            api = "messages"
        in_path = GEMINI_PATH.match(path)  # Gemini: the model and the method are in the path
        if in_path is not None:
            api = "gemini"
        raw = self._read_body()
        if api is None:
            self._send_json(404, {"error": {"message": f"no route for POST {path}", "type": "not_found"}}, [])
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = RecordedRequest(api=api, path=path, headers=headers, body=body if isinstance(body, dict) else {},
                                  platform=None if platform is None else platform.platform,
                                  path_model=platform.model if platform is not None else
                                  in_path["model"] if in_path is not None else None,
                                  path_stream=(platform is not None and platform.stream) or (
                                      in_path is not None and in_path["method"] == "streamGenerateContent"))
        ledger.record(request)
        if not isinstance(body, dict):
            self._send_error(error(400, message="The request body is not a JSON object."), request)
            return
        rejection = platform_problem(request) if platform is not None else None
        if rejection is None and ledger.check_schemas:
            rejection = check_request(request)
        behaviour = rejection if rejection is not None else ledger.next(request)
        if ledger.sleep(ledger.latency + behaviour.delay):
            raise _Drop
        self._serve(behaviour, request)

    def _serve(self, behaviour: Reply, request: RecordedRequest) -> None:
        ledger = self.server.ledger
        if behaviour.kind == "drop":
            raise _Drop
        if behaviour.kind == "timeout":
            if ledger.sleep(behaviour.seconds) or behaviour.then is None:
                raise _Drop
            self._serve(behaviour.then, request)
            return
        if behaviour.kind == "error":
            self._send_error(behaviour, request)
            return
        if behaviour.kind == "raw":
            self._send(behaviour.status, behaviour.content_type, behaviour.text.encode(), list(behaviour.headers),
                       behaviour)
            return
        if behaviour.kind == "malformed_event" and not request.stream:
            self._send(200, "application/json", behaviour.line.encode(), _id_headers(request), behaviour)
            return
        if behaviour.kind == "stream_error" and not request.stream:
            self._send_error(Reply(kind="error", status=529, variant="overloaded"), request)
            return
        out = resolve(behaviour, request)
        failure = behaviour if behaviour.kind == "stream_error" else None
        if failure is None:
            ledger.bill(out.input_tokens, out.output_tokens)
        wire = _WIRES[request.api]
        if request.stream and request.platform == "bedrock":  # AWS event-stream framing around the same events
            line = behaviour.line if behaviour.kind == "malformed_event" else None
            self._send_stream(platform_stream(messages_events(out, failure), line), request, behaviour, EVENT_STREAM)
            return
        if request.stream:
            frames = wire.stream(out, request, behaviour, failure)
            if behaviour.kind == "malformed_event":
                line = behaviour.line
                if request.api == "messages" and not line.startswith("event:"):
                    line = f"event: content_block_delta\n{line}"  # the anthropic SDK skips unnamed events
                middle = len(frames) // 2
                frames = [*frames[:middle], line.encode() + b"\n\n", *frames[middle:]]
            self._send_stream(frames, request, behaviour)
            return
        body = wire.body(out, request, behaviour)
        self._send(200, "application/json", json.dumps(body).encode(), _id_headers(request), behaviour)

    # -- I/O -------------------------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_answer(self, answer: wire_batches.Answer) -> None:
        """A batch route's answer: its JSON, or a file streamed from disk with its length announced."""
        if answer.path is None:
            self._send(answer.status, answer.content_type, json.dumps(answer.body).encode(), [], None)
            return
        self._answered = True
        self.send_response(answer.status)
        self.send_header("content-type", answer.content_type)
        self.send_header("content-length", str(answer.path.stat().st_size))
        self.end_headers()
        with answer.path.open("rb") as source:
            while chunk := source.read(1 << 16):
                self.wfile.write(chunk)

    def _send_error(self, behaviour: Reply, request: RecordedRequest) -> None:
        status, body, headers = error_answer(behaviour, request)
        if request.platform is not None:
            status, body, headers = platform_error(behaviour, request, status, body, headers)
        self._send(status, "application/json", json.dumps(body).encode(), headers, behaviour)

    def _send_json(self, status: int, body: dict[str, Any], headers: list[tuple[str, str]]) -> None:
        self._send(status, "application/json", json.dumps(body).encode(), headers, None)

    def _send(self, status: int, content_type: str, payload: bytes, headers: list[tuple[str, str]],
              behaviour: Reply | None) -> None:
        """One whole body with its length announced (a ``cut`` behaviour sends less than announced)."""
        self._answered = True
        self.send_response(status, _REASONS.get(status))
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        for name, value in headers:
            self.send_header(name, value)
        self._end_head(behaviour)
        self._deliver(payload, behaviour, chunked=False)

    def _send_stream(self, frames: list[bytes], request: RecordedRequest, behaviour: Reply,
                     content_type: str = "text/event-stream; charset=utf-8") -> None:
        self._answered = True
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for name, value in _id_headers(request):
            self.send_header(name, value)
        self._end_head(behaviour)
        if behaviour.every > 0 or behaviour.kind == "cut":
            self._deliver(b"".join(frames), behaviour, chunked=True)
            return
        for frame in frames:
            if self.server.ledger.stopping.is_set():
                raise _Drop
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.write(b"0\r\n\r\n")

    def _end_head(self, behaviour: Reply | None) -> None:
        """End the headers: sent at once, or trickled like the body (``trickled(..., headers=True)``)."""
        if behaviour is None or not behaviour.slow_head or behaviour.every <= 0:
            self.end_headers()
            return
        head = b"".join(getattr(self, "_headers_buffer", [])) + b"\r\n"
        self._headers_buffer: list[bytes] = []
        self._deliver(head, dataclasses.replace(behaviour, kind="answer"), chunked=False)

    def _deliver(self, data: bytes, behaviour: Reply | None, *, chunked: bool) -> None:
        """Write a body: at once, or trickled (``behaviour.every``), or cut short (``cut``, then the connection
        closes). A client that closes the connection before the body is finished is counted."""
        ledger = self.server.ledger
        end = int(len(data) * behaviour.fraction) if behaviour is not None and behaviour.kind == "cut" else len(data)
        every = behaviour.every if behaviour is not None else 0.0
        size = behaviour.piece if behaviour is not None and every > 0 else max(end, 1)
        sent = 0
        try:
            while sent < end:
                if every > 0:
                    if ledger.sleep(every):
                        raise _Drop
                    if _peer_closed(self.connection):
                        raise ConnectionResetError("the client closed the connection")
                piece = data[sent:min(end, sent + size)]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                sent += len(piece)
            if end < len(data):
                raise _Drop
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except OSError:
            if not ledger.stopping.is_set():
                ledger.count_closed_early()
            raise

    def _abort(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


_REASONS = {529: "Overloaded"}
#: Behaviours that are an answer (the others are faults: a batch item gets an error 500 for them).
_CONTENT = frozenset({"answer", "text", "tool_call", "truncated", "refusal"})


def render(behaviour: Reply, request: RecordedRequest) -> tuple[int, dict[str, Any]]:
    """A behaviour's answer to ``request`` as (status, JSON body), as a batch item gets it: an answer in the API's
    shape, an error behaviour's error, and an error 500 for a transport fault (no connection to drop there)."""
    if behaviour.kind == "error":
        status, body, _ = error_answer(behaviour, request)
        return status, body
    if behaviour.kind not in _CONTENT:
        status, body, _ = error_answer(Reply(kind="error", status=500, variant="server_error"), request)
        return status, body
    return 200, _WIRES[request.api].body(resolve(behaviour, request), request, behaviour)


def _peer_closed(connection: socket.socket) -> bool:
    """Whether the client has closed its end (mid-answer it sends nothing, so readable means end of file)."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _id_headers(request: RecordedRequest) -> list[tuple[str, str]]:
    name = "request-id" if request.api == "messages" else "x-goog-request-id" if request.api == "gemini" \
        else "x-request-id"
    return [(name, new_id("req_"))]
