"""Who a call goes to, as telemetry names it: provider, server address and port, and whether the SDK method is
already instrumented by OpenTelemetry.

* **Provider.** ``gen_ai.provider.name`` is the endpoint's (``openai``, ``anthropic``, or a self-hosted server
  kind), except that an ``openai.AzureOpenAI``/``AsyncAzureOpenAI`` client is ``azure.ai.openai``, the
  conventions' own name for Azure OpenAI: it speaks OpenAI's wire format but bills and fails as Azure.
* **Server.** ``server.address``/``server.port`` come from the SDK client's ``base_url`` (the port defaults
  to 443 for https, 80 for http).
* **Instrumented.** When the SDK method guardrail calls is wrapped by an OpenTelemetry instrumentation (a
  ``wrapt`` wrapper whose function lives under ``opentelemetry.instrumentation.*``, as
  ``opentelemetry-instrumentation-openai-v2`` installs on ``Completions.create``), that instrumentation
  already records ``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration`` for every HTTP request
  guardrail sends through it; guardrail then records neither (see :mod:`guardrail.observe.metrics`). The
  method actually called is the SDK's ``with_streaming_response`` twin, which keeps the instrumented
  ``create`` it was built from as ``__wrapped__``; both are inspected.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["AZURE_OPENAI", "Target", "instrumented", "target_of"]

#: ``gen_ai.provider.name`` of Azure OpenAI in the GenAI semantic conventions.
AZURE_OPENAI = "azure.ai.openai"
#: How far ``__wrapped__`` chains are followed looking for an instrumentation's wrapper.
_MAX_UNWRAP = 8


@dataclass(frozen=True, slots=True)
class Target:
    """The telemetry identity of one call's destination."""

    provider: str
    address: str | None = None
    port: int | None = None
    #: An OpenTelemetry instrumentation already records the GenAI client metrics of these requests.
    instrumented: bool = False

    def attributes(self) -> dict[str, Any]:
        """``gen_ai.provider.name`` plus ``server.address``/``server.port`` when known."""
        found: dict[str, Any] = {"gen_ai.provider.name": self.provider}
        if self.address:
            found["server.address"] = self.address
            if self.port is not None:
                found["server.port"] = self.port
        return found


def target_of(method: Callable[..., Any], provider: str) -> Target:
    """The :class:`Target` of a bound SDK ``create`` method (``provider``: the endpoint's provider name).

    Remembered per SDK resource while what it depends on stays the same object (the method's class attribute,
    which an instrumentation replaces, the streaming twin, the client's ``base_url``): a call pays a lookup.
    """
    resource = getattr(method, "__self__", None)
    if resource is None:  # a plain function (the raw-response flavor's): nothing to learn a server from
        return Target(provider, instrumented=instrumented(method))
    name = getattr(method, "__name__", "create")
    client = getattr(resource, "_client", None)
    streaming = getattr(getattr(resource, "with_streaming_response", None), name, None)
    key = (provider, name, getattr(type(resource), name, None), streaming, getattr(client, "base_url", None))
    try:
        known = _TARGETS.get(resource)
    except TypeError:  # not weak-referenceable
        known = None
    if known is not None and known[0] == key:
        return known[1]
    if provider == "openai" and _is_azure(client):
        provider = AZURE_OPENAI
    address, port = _server(key[-1])
    target = Target(provider, address, port, instrumented(method) or instrumented(streaming))
    with contextlib.suppress(TypeError):
        _TARGETS[resource] = (key, target)
    return target


_TARGETS: weakref.WeakKeyDictionary[Any, tuple[tuple[Any, ...], Target]] = weakref.WeakKeyDictionary()


def instrumented(function: Any) -> bool:
    """Whether ``function`` (or anything it wraps) is an OpenTelemetry instrumentation's ``wrapt`` wrapper."""
    for _ in range(_MAX_UNWRAP):
        if function is None:
            return False
        wrapper = getattr(function, "_self_wrapper", None)  # wrapt's FunctionWrapper/BoundFunctionWrapper
        if wrapper is not None and str(getattr(wrapper, "__module__", "")).startswith("opentelemetry.instrumentation"):
            return True
        function = getattr(function, "__wrapped__", None)
    return False


def _is_azure(client: Any) -> bool:
    openai = sys.modules.get("openai")  # an Azure client means openai is imported already
    if openai is None or client is None:
        return False
    kinds = tuple(kind for kind in (getattr(openai, "AzureOpenAI", None), getattr(openai, "AsyncAzureOpenAI", None))
                  if isinstance(kind, type))
    return bool(kinds) and isinstance(client, kinds)


def _server(url: Any) -> tuple[str | None, int | None]:
    """(host, port) of an httpx URL (or URL text); the scheme's default port when none is written."""
    if url is None:
        return None, None
    host = getattr(url, "host", None)
    if host is None:  # a plain string
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(str(url))
            return parts.hostname, parts.port or _default_port(parts.scheme)
        except ValueError:
            return None, None
    port = getattr(url, "port", None)
    return (str(host) or None), (port if isinstance(port, int) else _default_port(str(getattr(url, "scheme", ""))))


def _default_port(scheme: str) -> int | None:
    return {"https": 443, "http": 80}.get(scheme)
