"""Calling a vendor: the SDK wrapper, the decorator, the attempt loop and its drivers, retry, streaming, config.

``wrap`` returns the SDK client itself, seen through a subclass of its class (:mod:`.client`), whose structured
resources subclass the SDK's (:mod:`.resources`, :mod:`.methods`); :mod:`.options` holds what ``wrap()`` was
given and what one call adds, :mod:`.quiet` the view of the client structured calls send through.

One call flows ``wrap``/``structured`` -> :mod:`.engine` (the I/O-free attempt loop) -> :mod:`.drivers`
(sync/async shells) -> :mod:`.exchange` (one HTTP try under the deadline) -> an endpoint in
:mod:`guardrail.vendors`, which owns every vendor wire format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.call.cache import Cache
    from guardrail.call.client import WrappedClient, wrap
    from guardrail.call.config import Config, configure, get_config, reset_config
    from guardrail.call.decorator import StructuredFunction, structured
    from guardrail.call.engine import Settings
    from guardrail.call.methods import AsyncStructuredMethod, RawStructured, StructuredMethod
    from guardrail.call.retry import RetryPolicy
    from guardrail.call.streaming import AsyncStructuredStream, StructuredStream

_NAMES: dict[str, str] = {
    "AsyncStructuredMethod": "guardrail.call.methods",
    "AsyncStructuredStream": "guardrail.call.streaming",
    "Cache": "guardrail.call.cache",
    "Config": "guardrail.call.config",
    "configure": "guardrail.call.config",
    "get_config": "guardrail.call.config",
    "RawStructured": "guardrail.call.methods",
    "reset_config": "guardrail.call.config",
    "RetryPolicy": "guardrail.call.retry",
    "Settings": "guardrail.call.engine",
    "structured": "guardrail.call.decorator",
    "StructuredFunction": "guardrail.call.decorator",
    "StructuredMethod": "guardrail.call.methods",
    "StructuredStream": "guardrail.call.streaming",
    "wrap": "guardrail.call.client",
    "WrappedClient": "guardrail.call.client",
}

__all__ = [
    "AsyncStructuredMethod",
    "AsyncStructuredStream",
    "Cache",
    "Config",
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
