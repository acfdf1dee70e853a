"""``guardrail.wrap(client)``: the official OpenAI/Anthropic/Gemini client, with ``response_model=`` added.

The wrapped client *is* the SDK client: an instance of a subclass of the client's own class (as ``AzureOpenAI``
subclasses ``OpenAI``) that shares the client's state, so ``isinstance``, ``with``/``async with``, attribute
assignment, ``copy()``/``with_options()``, ``dir()`` and every plain call behave as the SDK's. Its resources that
speak a structured API (``chat.completions``, ``responses``, ``messages``, their ``beta`` twins and the
``with_raw_response``/``with_streaming_response`` flavors of each) subclass the SDK's resources too
(:mod:`guardrail.call.resources`) and add guardrail's keywords to ``create``::

    client = guardrail.wrap(openai.OpenAI())
    ticket = client.chat.completions.create(model="gpt-4o", messages=[...], response_model=Ticket)
    result = client.chat.completions.create_with_result(model="gpt-4o", messages=[...], response_model=Ticket)

Calls without ``response_model`` are the SDK's own (same function, same arguments, same return value). With it,
guardrail's attempt loop runs and returns the validated value; ``create_with_result`` (same arguments) returns
the :class:`~guardrail.Result`. ``with_raw_response`` returns a :class:`~guardrail.call.methods.RawStructured`,
and ``with_streaming_response`` refuses ``response_model=`` with :class:`~guardrail.errors.UnsupportedCall`.

The wrapper and the client it wraps are one client: setting ``client.base_url``, ``timeout`` or a method on
either is seen by both, and by structured calls, which read the live client when they are made. They send
through a view of the same client whose ``max_retries`` reads 0 (:func:`guardrail.call.methods.quiet_resource`),
since guardrail retries transport failures itself; nothing is copied, so a client the SDK accepted always wraps.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from guardrail.call.cache import Cache
from guardrail.call.methods import AsyncStructuredMethod, StructuredMethod
from guardrail.call.options import ClientOptions, RetryPolicy, Settings
from guardrail.call.resources import (
    FLAVORS,
    has_member,
    made,
    resource_class,
    same_signature,
    sdk_dir,
    sdk_member,
    sdk_member_class,
    tree_of,
    twin_class,
)
from guardrail.errors import ConfigError, UsageError
from guardrail.vendors.base import Endpoint
from guardrail.vendors.profiles import PROVIDERS, SERVER_KINDS
from guardrail.vendors.registry import SDKS, endpoint_for, endpoints_for, provider_of, sdk_of

if TYPE_CHECKING:
    import anthropic
    import google.genai
    import google.genai.client
    import openai

    from guardrail.call.client_types import (
        AnthropicClient,
        AsyncAnthropicClient,
        AsyncGeminiClient,
        AsyncOpenAIClient,
        AsyncPlatformAnthropicClient,
        GeminiClient,
        OpenAIClient,
        PlatformAnthropicClient,
    )
    from guardrail.replay.record import RecordTo

    #: An already wrapped client, returned as it is.
    W = TypeVar("W", OpenAIClient, AsyncOpenAIClient, AnthropicClient, AsyncAnthropicClient, PlatformAnthropicClient,
                AsyncPlatformAnthropicClient, GeminiClient, AsyncGeminiClient)

__all__ = ["AsyncStructuredMethod", "StructuredMethod", "WrappedClient", "structured_method", "unwrap", "wrap"]


class WrappedClient:
    """The part of every wrapped client's class that is guardrail's (the rest is the SDK client class).

    ``isinstance(client, WrappedClient)`` tells a wrapped client. ``vendor`` is ``"openai"`` or ``"anthropic"``.
    The options ``wrap()`` was given live in a slot (the instance ``__dict__`` is the SDK client's own), and
    ``copy()``/``with_options()`` (the SDK's, with its signature) give a wrapped client with the same options.
    """

    __slots__ = ("_guardrail_state",)
    _guardrail_state: ClientOptions
    _guardrail_sdk: type  # the SDK client class (set on each class made by client_class)

    @property
    def _guardrail(self) -> ClientOptions:
        try:
            state: ClientOptions = self._guardrail_state
        except AttributeError:  # made by the class itself (type(client)(...)): wrap()'s defaults
            state = self._guardrail_state = _options(self, None, None, None, None)
        return state

    @property
    def vendor(self) -> str:
        """The SDK this client comes from: ``"openai"``, ``"anthropic"`` or ``"google.genai"``."""
        return self._guardrail.kind

    def copy(self, *args: Any, **kwargs: Any) -> Any:
        """The SDK's ``copy`` (a new client with some options changed), wrapped with the same guardrail options."""
        copied = cast(Any, super()).copy(*args, **kwargs)
        if isinstance(copied, WrappedClient):  # the SDK builds self.__class__(...): a class of ours
            copied._guardrail_state = self._guardrail.for_client(copied)
        return copied


# -- the classes ----------------------------------------------------------------------------------------------
_LOCK = threading.Lock()
_CLIENT_CLASSES: dict[tuple[Any, ...], type] = {}


def client_class(sdk_class: type, paths: Mapping[str, type[Endpoint]], asynchronous: bool) -> type:
    """guardrail's subclass of an SDK client class, serving structured calls at ``paths``."""
    key = (sdk_class, tuple(sorted(paths.items(), key=lambda item: item[0])), asynchronous)
    found = _CLIENT_CLASSES.get(key)
    if found is None:
        made = _make_client_class(sdk_class, paths, asynchronous)
        with _LOCK:
            found = _CLIENT_CLASSES.setdefault(key, made)
    return found


def _make_client_class(sdk_class: type, paths: Mapping[str, type[Endpoint]], asynchronous: bool) -> type:
    tree = tree_of(paths)
    namespace: dict[str, Any] = {"__module__": __name__, "__qualname__": sdk_class.__qualname__,
                                 "_guardrail_sdk": sdk_class, "__dir__": sdk_dir}
    for name, node in tree.items():
        namespace[name] = _member(name, lambda client, sdk, name=name, node=node: _resource(client, sdk, name, node,
                                                                                           asynchronous))
    async_member = _async_member(sdk_class) if not asynchronous else None
    if async_member is not None:  # the async client the sync one holds (google-genai's client.aio), wrapped alike
        namespace[async_member] = _member(async_member, lambda client, sdk: _twin(
            sdk_member(sdk, async_member, client), client._guardrail))
    if has_member(sdk_class, "__del__"):  # the SDK closes the connection there: only the wrapped client may
        namespace["__del__"] = _keep_open
    for flavor in FLAVORS:
        if has_member(sdk_class, flavor):
            namespace[flavor] = _member(flavor, lambda client, sdk, flavor=flavor: twin_class(
                sdk_member_class(sdk, flavor, client), tree, flavor, asynchronous, sdk)(client))
    for name in ("copy", "with_options"):
        if has_member(sdk_class, name):
            namespace[name] = same_signature(WrappedClient.copy, sdk_class, getattr(sdk_class, name), name)
    return type(sdk_class.__name__, (WrappedClient, sdk_class), namespace)


def _resource(client: Any, sdk: type, name: str, node: Any, asynchronous: bool) -> Any:
    """guardrail's resource at the client's member ``name``: the SDK's member, seen through guardrail's class."""
    sdk_object = sdk_member(sdk, name, client)
    return made(resource_class(type(sdk_object), node, asynchronous), sdk_object, client)


def _keep_open(self: Any) -> None:
    """A wrapped client going away leaves the connection open: it is the wrapped SDK client's (which it keeps
    alive), and that one closes it when it goes (google-genai's ``Client.__del__`` closes its HTTP client)."""


def _async_member(sdk_class: type) -> str | None:
    """The member of a sync client of this class that holds its async twin (``aio``), if its SDK has one."""
    for sdk in SDKS:
        if sdk.async_member and has_member(sdk_class, sdk.async_member) and sdk_class.__module__.startswith(
                sdk.module):
            return sdk.async_member
    return None


def _member(name: str, make: Any) -> property:
    """A client member on the way to structured resources: made once per wrapped client and kept with its options
    (never in the shared ``__dict__``, which the SDK client reads too)."""

    def member(self: WrappedClient) -> Any:
        resources = self._guardrail.resources
        found = resources.get(name)
        if found is None:
            found = resources.setdefault(name, make(self, type(self)._guardrail_sdk))
        return found

    def assign(self: WrappedClient, value: Any) -> None:
        """A client that sets its resources in ``__init__`` (anthropic's Bedrock and Vertex clients, whose
        ``copy()`` makes an instance of this class) keeps them where the SDK does: in its ``__dict__``."""
        self.__dict__[name] = value

    member.__name__ = member.__qualname__ = name
    return property(member, assign, doc=f"The SDK's ``{name}``, with ``response_model=`` on its structured resources.")


_PATHS: dict[tuple[type, str, str | None], dict[str, type[Endpoint]]] = {}


def _paths(client: Any, kind: str, server: str | None) -> dict[str, type[Endpoint]]:
    """The dotted resource paths this client's class has, each with the endpoint class speaking there."""
    key = (type(client), kind, server)
    found = _PATHS.get(key)
    if found is None:
        found = {path: type(endpoint) for endpoint in endpoints_for(kind, server) for path in endpoint.paths
                 if _has_path(type(client), client, path)}
        with _LOCK:
            found = _PATHS.setdefault(key, found)
    return found


def _has_path(sdk_class: type, instance: Any, path: str) -> bool:
    """Whether this SDK version has the resource at ``path`` (beta namespaces come and go between versions),
    asked of the SDK's members, which are made on the way and stored nowhere."""
    for name in path.split("."):
        if not has_member(sdk_class, name, instance):
            return False
        instance = sdk_member(sdk_class, name, instance)
        sdk_class = type(instance)
    return True


# -- wrap -----------------------------------------------------------------------------------------------------
@overload
def wrap(client: openai.AsyncOpenAI, *, server: str | None = None,
         provider: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None,
         record: RecordTo | None = None) -> AsyncOpenAIClient: ...
@overload
def wrap(client: openai.OpenAI, *, server: str | None = None,
         provider: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None,
         record: RecordTo | None = None) -> OpenAIClient: ...
@overload
def wrap(client: anthropic.AsyncAnthropic, *, server: str | None = None,
         provider: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None,
         record: RecordTo | None = None) -> AsyncAnthropicClient: ...
@overload
def wrap(client: anthropic.Anthropic, *, server: str | None = None,
         provider: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None,
         record: RecordTo | None = None) -> AnthropicClient: ...
@overload
def wrap(client: anthropic.AsyncAnthropicBedrock | anthropic.AsyncAnthropicVertex, *, server: str | None = None,
         provider: str | None = None,
         settings: Settings | None = None, retry: RetryPolicy | None = None,
         cache: Cache | None = None, record: RecordTo | None = None) -> AsyncPlatformAnthropicClient: ...
@overload
def wrap(client: anthropic.AnthropicBedrock | anthropic.AnthropicVertex, *, server: str | None = None,
         provider: str | None = None,
         settings: Settings | None = None, retry: RetryPolicy | None = None,
         cache: Cache | None = None, record: RecordTo | None = None) -> PlatformAnthropicClient: ...
@overload
def wrap(client: google.genai.Client, *, server: str | None = None,
         provider: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None,
         record: RecordTo | None = None) -> GeminiClient: ...
@overload
def wrap(client: google.genai.client.AsyncClient, *, server: str | None = None,
         provider: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None,
         record: RecordTo | None = None) -> AsyncGeminiClient: ...
@overload
def wrap(client: W, *, server: str | None = None, provider: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None,
         record: RecordTo | None = None) -> W: ...
@overload
def wrap(client: Any, *, server: str | None = None, provider: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None,
         record: RecordTo | None = None) -> Any: ...
def wrap(client: Any, *, server: str | None = None, provider: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None, cache: Cache | None = None,
         record: RecordTo | None = None) -> Any:
    """Wrap an official ``openai`` (sync or async), ``anthropic`` (sync or async) or ``google.genai`` client.

    Args:
        client: ``openai.OpenAI``/``AsyncOpenAI`` (also ``AzureOpenAI``, a subclass of your own, or any
            OpenAI-compatible server via ``base_url``: a hosted provider is recognised by the URL's host),
            ``anthropic.Anthropic``/``AsyncAnthropic`` (also ``AnthropicBedrock``/``AnthropicVertex`` and their
            async classes: Claude on Amazon Bedrock and Vertex AI) or ``google.genai.Client`` (its ``client.aio`` is
            wrapped alike; ``client.aio`` alone wraps too). An already
            wrapped client is returned as it is (with ``cache=``: the same client wrapped alike with that cache).
        server: for an OpenAI-compatible self-hosted server, its kind (``"vllm"``, ``"sglang"``,
            ``"llamacpp"``, ``"ollama"``), so its own constrained-decoding fields are sent.
        provider: the ``gen_ai.provider.name`` whose capability rows the client's calls use, when the client
            alone does not say it: an OpenAI-compatible client behind a proxy or gateway on a host no row names
            (which otherwise starts at JSON mode), e.g. ``provider="openai"`` or ``"groq"``. One of
            :data:`~guardrail.vendors.profiles.PROVIDERS`; not with ``server=``. Telemetry and cost report it.
        settings: attempt-loop settings (attempts, token ceiling, temperature, content capture).
        retry: the transport retry policy (tries, waits, deadline).
        cache: a response cache (:class:`~guardrail.call.cache.Cache`) structured calls go through: a repeated
            call is answered from it, concurrent identical calls send one request; a call opts out with
            ``cache=False`` and versions its prompt with ``prompt_version=``.
        record: record every structured call for replay (off by default): a JSONL file path or a
            :class:`~guardrail.replay.Recorder` (:mod:`guardrail.replay`, ``guardrail replay``). Each record holds
            the request hash, prompt version, contract and schema version, every raw output and the outcome,
            secrets redacted.

    Returns:
        The same client, seen through a subclass of its class (it shares the client's state; see the module
        docstring): ``chat.completions.create`` and ``responses.create`` (OpenAI) or ``messages.create``
        (Anthropic), and the same under ``beta`` and ``with_raw_response``, accept ``response_model=`` and
        friends, and each has ``create_with_result`` and ``create_partial`` twins; Gemini's ``models`` keeps its
        own names (``generate_content``, ``generate_content_with_result``, ``generate_content_stream``: the
        endpoint's :class:`~guardrail.vendors.base.Methods`). Type checkers see one protocol per client class
        (:mod:`guardrail.call.client_types`).
    """
    recorder = None
    if record is not None:
        from guardrail.replay.record import recorder_for

        recorder = recorder_for(record)
    if isinstance(client, WrappedClient):  # as it is; given a cache, a recorder or a provider: wrapped alike with it
        like = client._guardrail
        if provider is not None and provider != like.provider:  # its calls profiled for (and reported as) provider
            _check_provider(provider, server or like.server)
            options = _options(client, like.server, like.settings, like.retry, cache or like.cache, provider)
            return _view(client, dataclasses.replace(options, recorder=recorder or like.recorder))
        if cache is None and recorder is None:
            return client
        options = like if cache is None else like.with_cache(cache)
        return _view(client, options if recorder is None else dataclasses.replace(options, recorder=recorder,
                                                                                   resources={}))
    if server is not None and server not in SERVER_KINDS:
        raise ConfigError(f"unknown server kind {server!r}; expected one of {', '.join(SERVER_KINDS)}")
    if provider is not None:
        _check_provider(provider, server)
    options = _options(client, server, settings, retry, cache, provider)
    return _view(client, options if recorder is None else dataclasses.replace(options, recorder=recorder))


def _check_provider(provider: str, server: str | None) -> None:
    """A :class:`ConfigError` unless ``provider`` is a hosted provider some profile row names (and no server)."""
    if server is not None:
        raise ConfigError("give server= (a self-hosted server's kind) or provider=, not both")
    if provider not in PROVIDERS:
        raise ConfigError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")


def _twin(client: Any, like: ClientOptions) -> Any:
    """``client`` (the async twin a sync client holds) wrapped with the settings of ``like`` (its recorder too)."""
    options = _options(client, like.server, like.settings, like.retry, like.cache, like.provider)
    return _view(client, dataclasses.replace(options, recorder=like.recorder))


def _options(client: Any, server: str | None, settings: Settings | None, retry: RetryPolicy | None,
             cache: Cache | None, provider: str | None = None) -> ClientOptions:
    kind, is_async = client_kind(client)
    if server is not None and kind != "openai":
        raise ConfigError("server= applies to OpenAI-compatible clients (openai.OpenAI(base_url=...)) only")
    sdk_class = getattr(type(client), "_guardrail_sdk", type(client))
    paths = _paths(_plain(client, sdk_class), kind, server)
    endpoints: dict[Endpoint, tuple[str, ...]] = {}
    for endpoint in endpoints_for(kind, server, provider or provider_of(client, server)):
        found = tuple(path for path in endpoint.paths if paths.get(path) is type(endpoint))
        if found:
            endpoints[endpoint.flavored(client)] = found
    return ClientOptions(kind, is_async, server, settings or Settings(), retry or RetryPolicy(), cache, endpoints,
                         origin=client, provider=provider)


def _plain(client: Any, sdk_class: type) -> Any:
    """The client as an instance of the SDK class itself (the same state), for asking the SDK's own members."""
    if type(client) is sdk_class:
        return client
    plain: Any = object.__new__(sdk_class)
    plain.__dict__ = client.__dict__
    return plain


def _view(client: Any, options: ClientOptions) -> Any:
    """``client`` seen through guardrail's subclass of its class: the same ``__dict__``, these options."""
    sdk_class = getattr(type(client), "_guardrail_sdk", type(client))
    paths = {path: type(endpoint) for endpoint, found in options.endpoints.items() for path in found}
    wrapped: Any = object.__new__(client_class(sdk_class, paths, options.asynchronous))
    wrapped.__dict__ = client.__dict__  # shared, not copied: the wrapper is the client
    wrapped._guardrail_state = options
    return wrapped


def structured_method(client: WrappedClient, api: str | None = None) -> StructuredMethod | AsyncStructuredMethod:
    """The wrapped client's structured resource for ``api`` (``"chat"``, ``"responses"``, ``"messages"``): its
    default API when ``api`` is ``None`` or one this client does not serve. The resource's ``endpoint`` builds
    vendor-neutral prompt requests (:meth:`~guardrail.vendors.base.Endpoint.prompt_request`)."""
    endpoints = client._guardrail.endpoints
    found: StructuredMethod | AsyncStructuredMethod = _at(client, endpoints[endpoint_for(list(endpoints), api)][0])
    return found


def unwrap(client: Any) -> Any:
    """The SDK client a wrapped client shares its state with (any other object is returned as it is)."""
    if not isinstance(client, WrappedClient):
        return client
    origin = client._guardrail.origin
    if origin is not None and not isinstance(origin, WrappedClient):
        return origin
    return _plain(client, type(client)._guardrail_sdk)


def _at(root: Any, path: str) -> Any:
    """The resource at a dotted path (``"beta.chat.completions"``) of a client."""
    for name in path.split("."):
        root = getattr(root, name)
    return root


def client_kind(client: Any) -> tuple[str, bool]:
    """(SDK module, is_async) for a supported SDK client; :class:`~guardrail.errors.UsageError` (a
    ``TypeError``) otherwise."""
    found = sdk_of(client)
    if found is None:
        names = " or ".join(f"{sdk.module}.{sdk.sync_client}/{sdk.async_client}" for sdk in SDKS)
        raise UsageError(f"guardrail.wrap() takes an {names} client, not {type(client).__name__} (install the "
                         "extra: pip install 'guardrail[vendors]')")
    return found
