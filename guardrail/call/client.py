"""``guardrail.wrap(client)``: the official OpenAI/Anthropic client, with ``response_model=`` added.

The wrapper composes; it never patches the client. Calls without ``response_model`` go to the SDK
unchanged (same arguments, same return value). Calls with it run guardrail's attempt loop and return the
validated value; ``create_with_result`` (same arguments) returns the :class:`~guardrail.Result` instead,
with the value, every attempt's raw output, fixes, usage, mode, timing and trace id::

    client = guardrail.wrap(openai.OpenAI())
    ticket = client.chat.completions.create(model="gpt-4o", messages=[...], response_model=Ticket)
    result = client.chat.completions.create_with_result(model="gpt-4o", messages=[...], response_model=Ticket)

The SDK's other ways in keep the wrapper: ``client.with_options(...)`` (and ``copy``) wrap the new client
with the same settings; ``beta`` namespaces have the same structured methods (``client.beta.chat.completions``,
``client.beta.responses``, ``client.beta.messages``); ``with_raw_response`` (on the client, a namespace or a
method) returns a :class:`~guardrail.call.methods.RawStructured`, the value with the HTTP responses; and
``with_streaming_response`` refuses ``response_model=`` with :class:`~guardrail.errors.UnsupportedCall`.
See :mod:`guardrail.call.methods` for the flavors and :mod:`guardrail.call.client_types` for what type checkers see.

guardrail sends requests through a copy of the client with the SDK's own retries switched off
(``with_options(max_retries=0)``) and retries transport failures itself, so nothing is retried twice.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from guardrail.call.cache import Cache
from guardrail.call.engine import Settings
from guardrail.call.methods import AsyncStructuredMethod, Binding, StructuredMethod
from guardrail.call.retry import RetryPolicy
from guardrail.errors import ConfigError, UsageError
from guardrail.vendors.base import Endpoint
from guardrail.vendors.profiles import SERVER_KINDS
from guardrail.vendors.registry import SDKS, endpoint_for, endpoints_for, sdk_of

if TYPE_CHECKING:
    import anthropic
    import openai

    from guardrail.call.client_types import AnthropicClient, AsyncAnthropicClient, AsyncOpenAIClient, OpenAIClient

    #: An already wrapped client, returned as it is.
    W = TypeVar("W", OpenAIClient, AsyncOpenAIClient, AnthropicClient, AsyncAnthropicClient)

__all__ = ["AsyncStructuredMethod", "StructuredMethod", "WrappedClient", "structured_method", "unwrap", "wrap"]

#: The SDK's flavors of a namespace or method that keep the wrapper (each member is asked for its own).
_FLAVORS = frozenset({"with_raw_response", "with_streaming_response"})


class WrappedClient:
    """An SDK namespace (``client``, ``client.chat``) whose structured methods are replaced, the rest passed on.

    ``vendor`` is ``"openai"`` or ``"anthropic"`` on the client itself (``None`` on inner namespaces). Asked
    for ``with_raw_response`` or ``with_streaming_response``, a namespace answers with the SDK's flavor of
    itself whose members are the same flavor of its own members, so ``response_model=`` is never dropped.
    """

    def __init__(self, raw: Any, members: Mapping[str, Any], vendor: str | None = None,
                 rewrap: Callable[..., WrappedClient] | None = None,
                 apis: Mapping[Endpoint, StructuredMethod | AsyncStructuredMethod] | None = None) -> None:
        self._raw = raw
        self._members = dict(members)
        self.vendor = vendor
        self._rewrap = rewrap  # wraps another client like this one (with_options, copy, cache=); clients only
        self._apis = dict(apis or {})  # each endpoint's main structured method (clients only)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        members = self.__dict__.get("_members", {})
        if name in members:
            return members[name]
        raw = self.__dict__["_raw"]
        if name in _FLAVORS:
            flavored = WrappedClient(getattr(raw, name), {key: getattr(member, name) for key, member in members.items()
                                                    if _has(member, name)})
            self.__dict__[name] = flavored  # made once, like the SDK's own cached flavors
            return flavored
        return getattr(raw, name)

    def with_options(self, **options: Any) -> Any:
        """The SDK's ``with_options`` (a client copy with other options), wrapped like this client."""
        if self._rewrap is None:
            return self._raw.with_options(**options)
        return self._rewrap(self._raw.with_options(**options))

    def copy(self, **options: Any) -> Any:
        """The SDK's ``copy`` (the same as ``with_options``), wrapped like this client."""
        if self._rewrap is None:
            return self._raw.copy(**options)
        return self._rewrap(self._raw.copy(**options))

    def __repr__(self) -> str:
        return f"guardrail.wrap({self._raw!r})"


@overload
def wrap(client: openai.AsyncOpenAI, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None) -> AsyncOpenAIClient: ...
@overload
def wrap(client: openai.OpenAI, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None) -> OpenAIClient: ...
@overload
def wrap(client: anthropic.AsyncAnthropic, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None) -> AsyncAnthropicClient: ...
@overload
def wrap(client: anthropic.Anthropic, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None) -> AnthropicClient: ...
@overload
def wrap(client: W, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None) -> W: ...
@overload
def wrap(client: Any, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None) -> Any: ...
def wrap(client: Any, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None) -> Any:
    """Wrap an official ``openai`` (sync or async) or ``anthropic`` (sync or async) client.

    Args:
        client: ``openai.OpenAI``/``AsyncOpenAI`` (also any OpenAI-compatible server via ``base_url``) or
            ``anthropic.Anthropic``/``AsyncAnthropic``. An already wrapped client is returned as it is (with
            ``cache=``: a copy wrapped with the same settings and that cache).
        server: for an OpenAI-compatible self-hosted server, its kind (``"vllm"``, ``"sglang"``,
            ``"llamacpp"``, ``"ollama"``), so its own constrained-decoding fields are sent.
        settings: attempt-loop settings (attempts, token ceiling, temperature, content capture).
        retry: the transport retry policy (tries, waits, deadline).
        cache: a response cache (:class:`~guardrail.call.cache.Cache`) structured calls go through: a repeated
            call is answered from it, concurrent identical calls send one request; a call opts out with
            ``cache=False`` and versions its prompt with ``prompt_version=``.

    Returns:
        An object with the client's call shape: ``chat.completions.create`` and ``responses.create``
        (OpenAI) or ``messages.create`` (Anthropic), and the same under ``beta``, accept ``response_model=``
        and friends, and each has ``create_with_result`` and ``create_partial`` twins; ``with_options``,
        ``with_raw_response`` and ``with_streaming_response`` keep the wrapper; everything else is the
        client's own. Type checkers see one protocol per client class (:mod:`guardrail.call.client_types`).
    """
    if isinstance(client, WrappedClient):  # as it is; given a cache, the same client wrapped alike with it
        return client if cache is None or client._rewrap is None else client._rewrap(client._raw, cache)
    if server is not None and server not in SERVER_KINDS:
        raise ConfigError(f"unknown server kind {server!r}; expected one of {', '.join(SERVER_KINDS)}")
    kind, is_async = client_kind(client)
    if server is not None and kind != "openai":
        raise ConfigError("server= applies to OpenAI-compatible clients (openai.OpenAI(base_url=...)) only")
    settings = settings or Settings()
    retry = retry or RetryPolicy()
    quiet = quiet_client(client)
    method = AsyncStructuredMethod if is_async else StructuredMethod
    timeout = _seconds(client.timeout)

    def make(endpoint: Endpoint, path: str) -> StructuredMethod | AsyncStructuredMethod:
        return method(Binding(endpoint, _at(client, path), _at(quiet, path), settings, retry, timeout, cache))

    def rewrap(other: Any, other_cache: Cache | None = cache) -> WrappedClient:
        wrapped: WrappedClient = wrap(other, server=server, settings=settings, retry=retry, cache=other_cache)
        return wrapped

    tree: dict[str, Any] = {}
    apis: dict[Endpoint, StructuredMethod | AsyncStructuredMethod] = {}
    for endpoint in endpoints_for(kind, server):
        for path in endpoint.paths:
            if not _has(client, path):  # beta namespaces come and go between SDK versions
                continue
            made = make(endpoint, path)
            apis.setdefault(endpoint, made)
            *parents, leaf = path.split(".")
            node = tree
            for name in parents:
                node = node.setdefault(name, {})
            node[leaf] = made
    members = {name: _namespace(client, name, child) for name, child in tree.items()}
    return WrappedClient(client, members, kind, rewrap, apis)


def _namespace(client: Any, path: str, node: Any) -> Any:
    """A structured method, or the SDK namespace at ``path`` wrapped with its (nested) structured members."""
    if not isinstance(node, dict):
        return node
    return WrappedClient(_at(client, path), {name: _namespace(client, f"{path}.{name}", child)
                                              for name, child in node.items()})


def structured_method(client: WrappedClient, api: str | None = None) -> StructuredMethod | AsyncStructuredMethod:
    """The wrapped client's structured method for ``api`` (``"chat"``, ``"responses"``, ``"messages"``): its
    default API when ``api`` is ``None`` or one this client does not serve. The method's ``endpoint`` builds
    vendor-neutral prompt requests (:meth:`~guardrail.vendors.base.Endpoint.prompt_request`)."""
    apis = client.__dict__["_apis"]
    return apis[endpoint_for(list(apis), api)]  # type: ignore[no-any-return]


def unwrap(client: Any) -> Any:
    """The SDK client inside a :class:`WrappedClient` (any other object is returned as it is)."""
    return client.__dict__["_raw"] if isinstance(client, WrappedClient) else client


def _has(root: Any, path: str) -> bool:
    """Whether this SDK version has the resource at ``path`` (beta namespaces come and go between versions)."""
    try:
        _at(root, path)
    except AttributeError:
        return False
    return True


def _at(root: Any, path: str) -> Any:
    """The SDK resource at a dotted path (``"beta.chat.completions"``) of a client."""
    for name in path.split("."):
        root = getattr(root, name)
    return root


_QUIET: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_QUIET_LOCK = threading.Lock()


def quiet_client(client: Any) -> Any:
    """The client's copy with the SDK's own retries off (guardrail retries), made once per client.

    Building the copy's resources costs milliseconds; the decorator and chain tiers wrap per call, so the
    copy is kept for as long as the client lives.
    """
    with _QUIET_LOCK:
        found = _QUIET.get(client)
    if found is None:
        found = client.with_options(max_retries=0)
        with _QUIET_LOCK:
            found = _QUIET.setdefault(client, found)
    return found


def _seconds(timeout: Any) -> float | None:
    """A client timeout (a number, or an httpx ``Timeout`` whose read timeout counts) in seconds."""
    if isinstance(timeout, (int, float)):
        return float(timeout)
    read = getattr(timeout, "read", None)
    return float(read) if isinstance(read, (int, float)) else None


def client_kind(client: Any) -> tuple[str, bool]:
    """(SDK module, is_async) for a supported SDK client; :class:`~guardrail.errors.UsageError` (a
    ``TypeError``) otherwise."""
    found = sdk_of(client)
    if found is None:
        names = " or ".join(f"{sdk.module}.{sdk.sync_client}/{sdk.async_client}" for sdk in SDKS)
        raise UsageError(f"guardrail.wrap() takes an {names} client, not {type(client).__name__} (install the "
                         "extra: pip install 'guardrail[vendors]')")
    return found
