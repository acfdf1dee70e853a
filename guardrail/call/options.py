"""The two option values of a wrapped client: what ``wrap()`` was given, and what one call adds.

* :class:`ClientOptions` is what ``guardrail.wrap(client, server=..., settings=..., retry=..., cache=...)`` was
  given, with the endpoints that client serves. A wrapped client carries it (copies made with ``copy()`` and
  ``with_options()`` carry the same); everything else a call needs from the client (``base_url``, ``timeout``,
  headers, the HTTP client) is read from the live client when the call is made.
* :class:`CallOptions` is guardrail's keywords of one call (``response_model=`` and friends), taken out of the
  SDK's keywords by :meth:`CallOptions.take` before anything else looks at them. Without ``response_model`` they
  are a mistake, and raise the ``TypeError`` (:class:`~guardrail.errors.UsageError`) the SDK raises for any
  keyword it does not know.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from guardrail.call.cache import Cache
from guardrail.call.engine import Settings
from guardrail.call.retry import RetryPolicy
from guardrail.contract import Contract, compile_contract
from guardrail.errors import UsageError
from guardrail.gates.semantic import Rule
from guardrail.outcome import Budget
from guardrail.vendors.base import Endpoint
from guardrail.vendors.plans import Plan, plans, schema_name
from guardrail.vendors.profiles import Capabilities, Mode, capabilities

__all__ = ["KEYWORDS", "CallOptions", "ClientOptions"]


@dataclasses.dataclass(frozen=True, slots=True)
class CallOptions:
    """guardrail's keywords of one structured call (see :meth:`StructuredMethod.create
    <guardrail.call.methods.StructuredMethod.create>` for what each means)."""

    response_model: Any
    aliases: Mapping[str, str] | None = None
    max_attempts: int | None = None
    mode: Mode | None = None
    budget: Budget | None = None
    rules: Sequence[Rule] = ()
    context: Mapping[str, Any] | None = None
    cache: bool = True
    prompt_version: str | None = None

    @staticmethod
    def take(kwargs: dict[str, Any], method: str = "create") -> CallOptions | None:
        """Remove guardrail's keywords from a call's ``kwargs``: the options of a structured call, or ``None`` for
        a plain one (``kwargs`` then holds the SDK's keywords only, untouched).

        Any of them without ``response_model`` (or with ``response_model=None``) raises
        :class:`~guardrail.errors.UsageError`, a ``TypeError`` as the SDK's own for an unknown keyword.
        """
        if _NAMES.isdisjoint(kwargs):
            return None
        given = {name: kwargs.pop(name) for name in KEYWORDS if name in kwargs}
        if given.get("response_model") is None:
            others = [name for name in KEYWORDS if name in given and name != "response_model"]
            if others:
                raise UsageError(f"{method}() got an unexpected keyword argument {others[0]!r}: guardrail's "
                                 f"{', '.join(others)} {'applies' if len(others) == 1 else 'apply'} to structured "
                                 "calls only, so pass response_model= with it (or leave it out)")
            return None
        return CallOptions(**given)


#: guardrail's keywords, in the order signatures list them.
KEYWORDS: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(CallOptions))
_NAMES = frozenset(KEYWORDS)

#: Entries of :attr:`ClientOptions.prepared`; past it, new shapes of call are prepared each time (still cached below).
_PREPARED_SIZE = 256


@dataclasses.dataclass(eq=False)
class ClientOptions:
    """What ``wrap()`` was given for one client, and the endpoints (wire formats) that client serves.

    ``origin`` is the client object that was wrapped (the wrapped client shares its state). ``endpoints`` maps
    each endpoint the client serves to the dotted paths of its SDK resources (the first endpoint is the client's
    default API). ``resources`` holds the client's guardrail resources once made (``chat``, ``messages``, ...):
    the client's own ``__dict__`` is shared with the SDK client, so nothing of guardrail's is kept there.
    """

    kind: str
    asynchronous: bool
    server: str | None
    settings: Settings
    retry: RetryPolicy
    cache: Cache | None
    endpoints: dict[Endpoint, tuple[str, ...]]
    origin: Any = None
    resources: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: (endpoint, response_model, model, mode, thinking) -> (contract, capabilities, plans): what a call needs
    #: before it is sent depends on nothing else, so a repeated call pays one lookup.
    prepared: dict[tuple[Any, ...], tuple[Contract[Any], Capabilities, tuple[Plan, ...]]] = dataclasses.field(
        default_factory=dict)

    def for_client(self, origin: Any) -> ClientOptions:
        """The same options for another client object (a ``copy()``), with fresh caches."""
        return dataclasses.replace(self, origin=origin, resources={}, prepared={})

    def with_cache(self, cache: Cache) -> ClientOptions:
        """The same options with another response cache (the same client; fresh resources)."""
        return dataclasses.replace(self, cache=cache, resources={})

    def endpoint(self, kind: type[Endpoint]) -> Endpoint:
        """This client's endpoint of a class (each is made once per wrap, with the server kind)."""
        for endpoint in self.endpoints:
            if type(endpoint) is kind:
                return endpoint
        raise LookupError(kind)  # pragma: no cover - a resource class is only made for the client's endpoints

    def prepare(self, endpoint: Endpoint, response_model: Any, model: str, mode: Mode | None, thinking: bool
                ) -> tuple[Contract[Any], Capabilities, tuple[Plan, ...]]:
        """The contract, the model's capabilities and the plans, remembered per shape of call (each part is
        cached on its own too; this saves the lookups, which the hot path pays on every call)."""
        prepared = self.prepared
        key: tuple[Any, ...] | None = (endpoint, response_model, model, mode, thinking)
        try:
            found = prepared.get(key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable contract (a JSON Schema dict): its parts' own caches serve it
            found, key = None, None
        if found is None:
            contract = compile_contract(response_model)
            caps = capabilities(endpoint.provider, model)
            found = (contract, caps, tuple(plans(contract.schema, schema_name(contract.output_type), caps,
                                                 forced=mode, thinking=thinking)))
            if key is not None and len(prepared) < _PREPARED_SIZE:
                prepared[key] = found
        return found
