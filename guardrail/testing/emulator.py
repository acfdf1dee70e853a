"""The vendor emulator: a real HTTP server on loopback that answers like OpenAI and Anthropic.

Why a real server rather than a mocked transport: the official SDKs are exercised end to end (their retry
loop, error classes, SSE decoding, stream helpers), so a test that passes against the emulator says the
code works with the SDK as shipped. It uses only the standard library.

Routes (with or without the ``/v1`` prefix, or a hosted provider's prefix before it such as ``/openai/v1``):
``POST /v1/chat/completions`` (OpenAI Chat Completions), ``POST /v1/responses`` (OpenAI Responses),
``POST /v1/messages`` (Anthropic Messages), and Anthropic's Messages on the cloud platforms
(:mod:`~guardrail.testing.wire_platforms`): Amazon Bedrock's ``POST /model/{model}/invoke`` and
``/invoke-with-response-stream`` (point ``anthropic.AnthropicBedrock(base_url=emu.base_url, ...)`` here) and
Vertex AI's ``.../publishers/anthropic/models/{model}:rawPredict`` and ``:streamRawPredict``
(``anthropic.AnthropicVertex(base_url=emu.base_url + "/v1", ...)``). Each request is
recorded, checked (``check_schemas``), then answered by the next scripted behaviour, else the responder,
else an HTTP 500 saying the script is exhausted.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

from guardrail.errors import NotReady
from guardrail.testing.behaviours import Reply
from guardrail.testing.ledger import EXHAUSTED, Ledger, Responder
from guardrail.testing.recording import RecordedRequest
from guardrail.testing.server import Handler, Server, render
from guardrail.testing.wire_batches import BatchBook
from guardrail.testing.wire_errors import check_request

__all__ = ["EXHAUSTED", "Emulator", "Responder"]


class Emulator:
    """A loopback HTTP server speaking OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini
    ``generateContent``.

    Use it as a context manager (``with Emulator() as emu: ...``) or call :meth:`start` / :meth:`stop`.
    Point the SDKs at :attr:`openai_base_url`, :attr:`anthropic_base_url` and :attr:`gemini_base_url`, then
    :meth:`script` what the "model" does with each request (any endpoint consumes the next behaviour) or set
    :attr:`responder`.

    Args:
        latency: seconds to wait before every answer (benchmarks); a behaviour's own ``delay`` adds to it.
        check_schemas: answer strict-mode requests whose schema the vendor would refuse (and OpenAI JSON mode
            without the word "JSON") with the vendor's 400, consuming no behaviour.
        host, port: where to listen; port 0 picks a free one.
    """

    def __init__(
        self, latency: float = 0.0, check_schemas: bool = True, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        ledger = self._ledger = Ledger(latency, check_schemas)
        ledger.batches = BatchBook(ledger.record, ledger.next,
                                   lambda request: check_request(request) if ledger.check_schemas else None)
        ledger.batches.render = render
        self._host = host
        self._port = port
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    # -- settings the server reads on each request -------------------------------------------------------
    @property
    def latency(self) -> float:
        """Seconds to wait before every answer; a behaviour's own ``delay`` adds to it."""
        return self._ledger.latency

    @latency.setter
    def latency(self, value: float) -> None:
        self._ledger.latency = value

    @property
    def check_schemas(self) -> bool:
        """Whether strict-mode requests whose schema the vendor would refuse get the vendor's 400."""
        return self._ledger.check_schemas

    @check_schemas.setter
    def check_schemas(self, value: bool) -> None:
        self._ledger.check_schemas = value

    @property
    def responder(self) -> Responder | None:
        """Called with each request when the script is empty; ``None`` means answer "script exhausted"."""
        return self._ledger.responder

    @responder.setter
    def responder(self, value: Responder | None) -> None:
        self._ledger.responder = value

    # -- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> Emulator:
        """Start serving in a daemon thread (no-op if already started); returns ``self``."""
        if self._server is not None:
            return self
        self._ledger.stopping.clear()
        server = Server((self._host, self._port), Handler)
        server.ledger = self._ledger
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="guardrail-emulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving promptly: stalls in flight are cut short and open connections closed."""
        server, self._server = self._server, None
        if server is None:
            return
        self._ledger.stopping.set()
        server.shutdown()
        for connection in self._ledger.connections():
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` of the running server."""
        if self._server is None:
            raise NotReady("the emulator is not running; call start() first")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        """Base URL for ``openai.OpenAI(base_url=...)``: :attr:`base_url` + ``/v1``."""
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Base URL for ``anthropic.Anthropic(base_url=...)`` (the SDK adds ``/v1`` itself)."""
        return self.base_url

    @property
    def gemini_base_url(self) -> str:
        """Base URL for ``google.genai.Client(http_options=HttpOptions(base_url=...))`` (the SDK adds the API
        version and the model's path itself; a ``vertexai=True`` client's Vertex AI paths are served too)."""
        return self.base_url

    # -- scripting and recording -----------------------------------------------------------------------
    def script(self, *behaviours: Reply) -> None:
        """Append behaviours to the FIFO queue; each incoming request (any endpoint) consumes one."""
        self._ledger.script(behaviours)

    @property
    def batches(self) -> BatchBook:
        """The batch APIs the emulator serves too (OpenAI files and batches, Anthropic message batches:
        :mod:`guardrail.testing.wire_batches`), their state and the test's controls over it
        (:class:`~guardrail.testing.wire_batches.BatchBook`: ``hold()``, ``expire()``, ``ids()``)."""
        assert self._ledger.batches is not None
        return self._ledger.batches

    @property
    def pending(self) -> int:
        """How many scripted behaviours are still queued."""
        return self._ledger.pending()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received (rejected ones too), in arrival order; a snapshot copy."""
        return self._ledger.requests()

    @property
    def tokens_served(self) -> tuple[int, int]:
        """(input, output) tokens of every completed answer, as reported in their ``usage`` (benchmarks)."""
        return self._ledger.tokens_served()

    @property
    def closed_early(self) -> int:
        """How many answers the client cut off: it closed the connection before the body was finished."""
        return self._ledger.closed_early()

    def wait_closed_early(self, count: int = 1, timeout: float = 10.0) -> bool:
        """Wait until :attr:`closed_early` reaches ``count`` (the server notices a closed connection at its next
        write, up to one trickle interval later); ``False`` if ``timeout`` seconds pass first."""
        return self._ledger.wait_closed_early(count, timeout)

    def reset(self) -> None:
        """Clear the queue, the responder, the recorded requests, the tokens served and :attr:`closed_early`."""
        self._ledger.reset()
