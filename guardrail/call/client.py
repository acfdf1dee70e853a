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

from guardrail.call.engine import Settings
from guardrail.call.methods import AsyncStructuredMethod, Binding, StructuredMethod
from guardrail.call.modes import SERVER_KINDS
from guardrail.call.retry import RetryPolicy
from guardrail.errors import ConfigError, UsageError
from guardrail.vendors.anthropic_messages import Messages
from guardrail.vendors.base import Endpoint
from guardrail.vendors.openai_chat import ChatCompletions
from guardrail.vendors.openai_responses import Responses

if TYPE_CHECKING:
    import anthropic
    import openai

    from guardrail.call.client_types import AnthropicClient, AsyncAnthropicClient, AsyncOpenAIClient, OpenAIClient

    #: An already wrapped client, returned as it is.
    W = TypeVar("W", OpenAIClient, AsyncOpenAIClient, AnthropicClient, AsyncAnthropicClient)

__all__ = ["AsyncStructuredMethod", "StructuredMethod", "WrappedClient", "wrap"]

#: The SDK's flavors of a namespace or method that keep the wrapper (each member is asked for its own).
_FLAVORS = frozenset({"with_raw_response", "with_streaming_response"})


class WrappedClient:
    """An SDK namespace (``client``, ``client.chat``) whose structured methods are replaced, the rest passed on.

    ``vendor`` is ``"openai"`` or ``"anthropic"`` on the client itself (``None`` on inner namespaces). Asked
    for ``with_raw_response`` or ``with_streaming_response``, a namespace answers with the SDK's flavor of
    itself whose members are the same flavor of its own members, so ``response_model=`` is never dropped.
    """

    def __init__(self, raw: Any, members: Mapping[str, Any], vendor: str | None = None,
                 rewrap: Callable[[Any], WrappedClient] | None = None) -> None:
        self._raw = raw
        self._members = dict(members)
        self.vendor = vendor
        self._rewrap = rewrap  # wraps another client like this one (with_options, copy); clients only

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
         retry: RetryPolicy | None = None) -> AsyncOpenAIClient: ...
@overload
def wrap(client: openai.OpenAI, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None) -> OpenAIClient: ...
@overload
def wrap(client: anthropic.AsyncAnthropic, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None) -> AsyncAnthropicClient: ...
@overload
def wrap(client: anthropic.Anthropic, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None) -> AnthropicClient: ...
@overload
def wrap(client: W, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None) -> W: ...
@overload
def wrap(client: Any, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None) -> Any: ...
def wrap(client: Any, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None) -> Any:
    """Wrap an official ``openai`` (sync or async) or ``anthropic`` (sync or async) client.

    Args:
        client: ``openai.OpenAI``/``AsyncOpenAI`` (also any OpenAI-compatible server via ``base_url``) or
            ``anthropic.Anthropic``/``AsyncAnthropic``. An already wrapped client is returned as it is.
        server: for an OpenAI-compatible self-hosted server, its kind (``"vllm"``, ``"sglang"``,
            ``"llamacpp"``, ``"ollama"``), so its own constrained-decoding fields are sent.
        settings: attempt-loop settings (attempts, token ceiling, temperature, content capture).
        retry: the transport retry policy (tries, waits, deadline).

    Returns:
        An object with the client's call shape: ``chat.completions.create`` and ``responses.create``
        (OpenAI) or ``messages.create`` (Anthropic), and the same under ``beta``, accept ``response_model=``
        and friends, and each has ``create_with_result`` and ``create_partial`` twins; ``with_options``,
        ``with_raw_response`` and ``with_streaming_response`` keep the wrapper; everything else is the
        client's own. Type checkers see one protocol per client class (:mod:`guardrail.call.client_types`).
    """
    if isinstance(client, WrappedClient):
        return client
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
        return method(Binding(endpoint, _at(client, path), _at(quiet, path), settings, retry, timeout))

    def rewrap(other: Any) -> WrappedClient:
        wrapped: WrappedClient = wrap(other, server=server, settings=settings, retry=retry)
        return wrapped

    if kind == "openai":
        chat = ChatCompletions(server)
        members: dict[str, Any] = {"chat": WrappedClient(client.chat, {"completions": make(chat, "chat.completions")})}
        beta: dict[str, Any] = {}
        if _has(client, "beta.chat.completions"):
            beta["chat"] = WrappedClient(client.beta.chat, {"completions": make(chat, "beta.chat.completions")})
        if server is None:  # self-hosted OpenAI-compatible servers have no Responses API
            members["responses"] = make(Responses(), "responses")
            if _has(client, "beta.responses"):
                beta["responses"] = make(Responses(), "beta.responses")
    else:
        members = {"messages": make(Messages(), "messages")}
        beta = {"messages": make(Messages(), "beta.messages")} if _has(client, "beta.messages") else {}
    if beta:
        members["beta"] = WrappedClient(client.beta, beta)
    return WrappedClient(client, members, kind, rewrap)


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
    """("openai" | "anthropic", is_async) for a supported SDK client; :class:`~guardrail.errors.UsageError` (a
    ``TypeError``) otherwise."""
    for module, sync_name, async_name in (("openai", "OpenAI", "AsyncOpenAI"),
                                          ("anthropic", "Anthropic", "AsyncAnthropic")):
        try:
            sdk = __import__(module)
        except ImportError:
            continue
        if isinstance(client, getattr(sdk, async_name)):
            return module, True
        if isinstance(client, getattr(sdk, sync_name)):
            return module, False
    raise UsageError(f"guardrail.wrap() takes an openai.OpenAI/AsyncOpenAI or anthropic.Anthropic/AsyncAnthropic "
                    f"client, not {type(client).__name__} (install the extra: pip install 'guardrail[vendors]')")
