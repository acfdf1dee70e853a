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

from guardrail.errors import ConfigError
from guardrail.vendors.anthropic_messages import Messages
from guardrail.vendors.base import Endpoint, ToolCall
from guardrail.vendors.gemini import Gemini
from guardrail.vendors.openai_chat import ChatCompletions
from guardrail.vendors.openai_responses import Responses

__all__ = ["ENDPOINTS", "SDKS", "Sdk", "endpoint_for", "endpoint_named", "endpoints_for", "sdk_of", "tool_calls_of"]


@dataclass(frozen=True, slots=True)
class Sdk:
    """One vendor SDK: its module and its sync and async client classes (names, so nothing is imported; a dotted
    name is looked up from the module: ``"client.AsyncClient"``). ``async_member`` names the member of a sync
    client that holds its async twin, where the SDK makes the async client that way (google-genai's
    ``client.aio``): a wrapped sync client's member is that client, wrapped alike."""

    module: str
    sync_client: str
    async_client: str
    async_member: str | None = None


#: The SDKs ``guardrail.wrap`` accepts, in the order clients are matched.
SDKS: tuple[Sdk, ...] = (Sdk("openai", "OpenAI", "AsyncOpenAI"), Sdk("anthropic", "Anthropic", "AsyncAnthropic"),
                         Sdk("google.genai", "Client", "client.AsyncClient", async_member="aio"))

#: Every endpoint; per SDK, the first is the client's default API.
ENDPOINTS: tuple[type[Endpoint], ...] = (ChatCompletions, Responses, Messages, Gemini)


def sdk_of(client: Any, *, load: bool = True) -> tuple[str, bool] | None:
    """``(SDK module, is_async)`` for a client of a known SDK, else ``None``.

    With ``load=False`` an SDK that is not imported yet is not imported (a client of it cannot exist then).
    """
    for sdk in SDKS:
        module = sys.modules.get(sdk.module)
        if module is None and load:
            try:
                module = importlib.import_module(sdk.module)
            except ImportError:
                module = None
        if module is None:
            continue
        if isinstance(client, _class(module, sdk.async_client)):
            return sdk.module, True
        if isinstance(client, _class(module, sdk.sync_client)):
            return sdk.module, False
    return None


def _class(module: Any, name: str) -> type:
    found: Any = module
    for part in name.split("."):
        found = getattr(found, part)
    return found  # type: ignore[no-any-return]


def endpoints_for(sdk: str, server: str | None = None) -> list[Endpoint]:
    """Fresh endpoints for a client of ``sdk`` (only those self-hosted servers serve, when ``server`` is set)."""
    return [cls(server) for cls in ENDPOINTS if cls.sdk == sdk and (server is None or cls.self_hosted)]


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
