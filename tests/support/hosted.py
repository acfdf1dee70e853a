"""An OpenAI client that presents as a hosted provider: its base URL names the provider's real host, and its HTTP
client's transport sends each real request to the emulator on loopback instead (as a proxy would), so the SDK
builds and sends exactly what it would send to that provider, and guardrail picks the provider's row by host."""

from __future__ import annotations

from typing import Any

import httpx2

from guardrail.testing import Emulator


class ToEmulator(httpx2.HTTPTransport):
    """Sends every request to ``emu`` (scheme, host and port replaced; path, headers and body as the SDK made them)."""

    def __init__(self, emu: Emulator) -> None:
        super().__init__()
        self.target = httpx2.URL(emu.base_url)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(scheme=self.target.scheme, host=self.target.host, port=self.target.port)
        return super().handle_request(request)


class AsyncToEmulator(httpx2.AsyncHTTPTransport):
    """The async twin of :class:`ToEmulator`."""

    def __init__(self, emu: Emulator) -> None:
        super().__init__()
        self.target = httpx2.URL(emu.base_url)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request.url = request.url.copy_with(scheme=self.target.scheme, host=self.target.host, port=self.target.port)
        return await super().handle_async_request(request)


def hosted_client(emu: Emulator, base_url: str, *, is_async: bool = False) -> Any:
    """``openai.OpenAI(base_url=base_url)`` (or the async one) whose requests reach ``emu``."""
    import openai

    if is_async:
        return openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0,
                                  http_client=httpx2.AsyncClient(transport=AsyncToEmulator(emu)))
    return openai.OpenAI(base_url=base_url, api_key="test", max_retries=0,
                         http_client=httpx2.Client(transport=ToEmulator(emu)))
