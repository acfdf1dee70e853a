"""Calling a vendor: the SDK wrapper, the decorator, the attempt loop and its drivers, streaming, the cache.

``wrap`` returns the SDK client itself, seen through a subclass of its class (:mod:`.client`), whose structured
resources subclass the SDK's (:mod:`.resources`, :mod:`.methods`); :mod:`.options` holds the option values (what
``wrap()`` was given, what one call adds, the deadline).

One call flows :mod:`.methods` (``create``: the options and the ``Call``) -> :mod:`.engine` (the I/O-free
attempt loop and its two drivers) -> :mod:`.http` (one HTTP try under the deadline, :mod:`.watchdog` for sync
clients) -> an endpoint in :mod:`guardrail.vendors`, which owns every vendor wire format. The decorator
(:mod:`.decorator`) and the chain (:mod:`guardrail.chain`) build the same options and enter at :mod:`.methods`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.call.cache import Cache
    from guardrail.call.chunked import ChunkedResult, Chunking
    from guardrail.call.client import WrappedClient, wrap
    from guardrail.call.config import Config, configure, get_config, reset_config
    from guardrail.call.decorator import StructuredFunction, structured
    from guardrail.call.iterable import AsyncItemStream, ItemStream
    from guardrail.call.methods import AsyncStructuredMethod, RawStructured, StructuredMethod
    from guardrail.call.options import RetryPolicy, Settings
    from guardrail.call.streaming import AsyncStructuredStream, StructuredStream

_NAMES: dict[str, str] = {
    "AsyncItemStream": "guardrail.call.iterable",
    "AsyncStructuredMethod": "guardrail.call.methods",
    "AsyncStructuredStream": "guardrail.call.streaming",
    "Cache": "guardrail.call.cache",
    "ChunkedResult": "guardrail.call.chunked",
    "Chunking": "guardrail.call.chunked",
    "Config": "guardrail.call.config",
    "configure": "guardrail.call.config",
    "get_config": "guardrail.call.config",
    "ItemStream": "guardrail.call.iterable",
    "RawStructured": "guardrail.call.methods",
    "reset_config": "guardrail.call.config",
    "RetryPolicy": "guardrail.call.options",
    "Settings": "guardrail.call.options",
    "structured": "guardrail.call.decorator",
    "StructuredFunction": "guardrail.call.decorator",
    "StructuredMethod": "guardrail.call.methods",
    "StructuredStream": "guardrail.call.streaming",
    "wrap": "guardrail.call.client",
    "WrappedClient": "guardrail.call.client",
}

__all__ = [
    "AsyncItemStream",
    "AsyncStructuredMethod",
    "AsyncStructuredStream",
    "Cache",
    "ChunkedResult",
    "Chunking",
    "Config",
    "ItemStream",
    "RawStructured",
    "RetryPolicy",
    "Settings",
    "StructuredFunction",
    "StructuredMethod",
    "StructuredStream",
    "WrappedClient",
    "configure",
    "get_config",
    "reset_config",
    "structured",
    "wrap",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
