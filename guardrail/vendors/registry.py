"""The rows that name every vendor guardrail speaks: the SDK client classes, and the endpoints (wire formats).

Everything outside ``guardrail/vendors/`` finds a vendor through these lookups, never by its name:
:func:`sdk_of` tells which SDK a client comes from, :func:`endpoints_for` gives the endpoints a wrapped
client serves (``guardrail.wrap`` builds its structured methods from their :attr:`~Endpoint.paths`),
:func:`endpoint_for` picks the one for a configured ``api``, and :func:`tool_calls_of` reads the tool calls
of any vendor's response. Adding a vendor adds a row here (see docs/vendors.md, "Adding a vendor").
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from guardrail.errors import ConfigError
from guardrail.vendors.anthropic_messages import Messages
from guardrail.vendors.base import Endpoint, ToolCall
from guardrail.vendors.gemini import Gemini
from guardrail.vendors.openai_chat import ChatCompletions
from guardrail.vendors.openai_responses import Responses
from guardrail.vendors.profiles import provider_for_host

__all__ = ["ENDPOINTS", "SDKS", "Sdk", "endpoint_for", "endpoint_named", "endpoints_for", "provider_of", "sdk_of",
           "tool_calls_of"]


@dataclass(frozen=True, slots=True)
class Sdk:
    """One vendor SDK client pair: its module and its sync and async client classes (names, so nothing is
    imported; a dotted name is looked up from the module: ``"client.AsyncClient"``), and ``provider``: the
    ``gen_ai.provider.name`` of its calls when the classes reach the vendor's API through another platform (Amazon
    Bedrock, Vertex AI, Azure), else ``None`` (the endpoint's own). ``async_member`` names the member of a sync
    client that holds its async twin, where the SDK makes the async client that way (google-genai's
    ``client.aio``): a wrapped sync client's member is that client, wrapped alike."""

    module: str
    sync_client: str
    async_client: str
    provider: str | None = None
    async_member: str | None = None


#: The SDK clients ``guardrail.wrap`` accepts, in the order clients are matched (a subclass before its base).
#: The cloud platforms' classes speak the same wire as their SDK's own client (the endpoints of ``module``),
#: under their own capability rows (:data:`guardrail.vendors.profiles.PROFILES`).
SDKS: tuple[Sdk, ...] = (
    Sdk("openai", "AzureOpenAI", "AsyncAzureOpenAI", provider="azure.ai.openai"),
    Sdk("openai", "OpenAI", "AsyncOpenAI"),
    Sdk("anthropic", "Anthropic", "AsyncAnthropic"),
    Sdk("anthropic", "AnthropicBedrock", "AsyncAnthropicBedrock", provider="aws.bedrock"),
    Sdk("anthropic", "AnthropicVertex", "AsyncAnthropicVertex", provider="gcp.vertex_ai"),
    # the same Client for the Gemini API and Vertex AI: the endpoint tells them apart (Gemini.flavored)
    Sdk("google.genai", "Client", "client.AsyncClient", async_member="aio"),
)

#: Every endpoint; per SDK, the first is the client's default API.
ENDPOINTS: tuple[type[Endpoint], ...] = (ChatCompletions, Responses, Messages, Gemini)


def sdk_of(client: Any, *, load: bool = True) -> tuple[str, bool] | None:
    """``(SDK module, is_async)`` for a client of a known SDK, else ``None``.

    With ``load=False`` an SDK that is not imported yet is not imported (a client of it cannot exist then).
    """
    found = _row_of(client, load)
    return None if found is None else (found[0].module, found[1])


def _row_of(client: Any, load: bool) -> tuple[Sdk, bool] | None:
    """The first :data:`SDKS` row whose class ``client`` is an instance of, and whether it is the async one."""
    for sdk in SDKS:
        module = sys.modules.get(sdk.module)
        if module is None and load:
            try:
                module = importlib.import_module(sdk.module)
            except ImportError:
                module = None
        if module is None:
            continue
        for name, is_async in ((sdk.async_client, True), (sdk.sync_client, False)):
            kind = _class(module, name)  # an SDK version without this class has no such client
            if isinstance(kind, type) and isinstance(client, kind):
                return sdk, is_async
    return None


def _class(module: Any, name: str) -> Any:
    """The attribute at a dotted ``name`` of ``module`` (``"client.AsyncClient"``), ``None`` when absent."""
    found: Any = module
    for part in name.split("."):
        found = getattr(found, part, None)
    return found


def provider_of(client: Any, server: str | None = None) -> str:
    """The ``gen_ai.provider.name`` a client's calls go to, which also picks its capability rows: a self-hosted
    ``server`` kind; a cloud platform's client class (:data:`SDKS`); for an OpenAI client, the provider its
    base URL's host names (:func:`guardrail.vendors.profiles.provider_for_host`); else ``""``: the endpoints' own
    (``openai``, ``anthropic``, ``gcp.gemini``; a google-genai client on Vertex AI is told apart by its endpoint,
    :meth:`~guardrail.vendors.base.Endpoint.flavored`)."""
    if server is not None:
        return server
    found = _row_of(client, True)
    if found is None:
        return ""
    sdk = found[0]
    if sdk.provider is not None:
        return sdk.provider
    if sdk.module == "openai":
        hosted = provider_for_host(_host(getattr(client, "base_url", None)))
        if hosted is not None:
            return hosted
    return ""


def _host(url: Any) -> str:
    """The host of an httpx URL or URL text (``""`` when there is none)."""
    host = getattr(url, "host", None)
    if host is None:
        host = urlsplit(str(url or "")).hostname
    return str(host or "").lower()


def endpoints_for(sdk: str, server: str | None = None, provider: str | None = None) -> list[Endpoint]:
    """Fresh endpoints for a client of ``sdk`` (only those self-hosted servers serve, when ``server`` is set),
    reporting ``provider`` (:func:`provider_of`) when given, else their own."""
    found = [cls(server) for cls in ENDPOINTS if cls.sdk == sdk and (server is None or cls.self_hosted)]
    if provider:
        for endpoint in found:
            endpoint.provider = provider
    return found


def endpoint_for(endpoints: list[Endpoint], api: str | None) -> Endpoint:
    """The endpoint for ``api`` among a client's ``endpoints``; the client's default (its first) when ``api``
    is ``None`` or names an API this client does not serve (a configured ``api`` is a preference)."""
    return next((endpoint for endpoint in endpoints if endpoint.api == api), endpoints[0])


def endpoint_named(api: str) -> Endpoint:
    """A fresh endpoint for an API name (``"chat"``, ``"responses"``, ``"messages"``, ``"gemini"``); a
    :class:`~guardrail.errors.ConfigError` for any other name."""
    for cls in ENDPOINTS:
        if cls.api == api:
            return cls()
    names = [cls.api for cls in ENDPOINTS]
    raise ConfigError(f"api must be {', '.join(repr(n) for n in names[:-1])} or {names[-1]!r}, not {api!r}")


def tool_calls_of(response: Any) -> list[ToolCall]:
    """Every tool call in a non-streamed response of any endpoint (each reads only its own API's shape)."""
    return [call for cls in ENDPOINTS for call in cls().tool_calls(response)]
