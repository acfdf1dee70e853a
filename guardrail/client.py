"""``guardrail.wrap(client)``: the official OpenAI/Anthropic client, with ``response_model=`` added.

The wrapper composes; it never patches the client. Calls without ``response_model`` go to the SDK
unchanged (same arguments, same return value). Calls with it run guardrail's attempt loop and return the
validated value; ``create_with_result`` (same arguments) returns the :class:`~guardrail.Result` instead,
with the value, every attempt's raw output, fixes, usage, mode, timing and trace id::

    client = guardrail.wrap(openai.OpenAI())
    ticket = client.chat.completions.create(model="gpt-4o", messages=[...], response_model=Ticket)
    result = client.chat.completions.create_with_result(model="gpt-4o", messages=[...], response_model=Ticket)

guardrail sends requests through a copy of the client with the SDK's own retries switched off
(``with_options(max_retries=0)``) and retries transport failures itself, so nothing is retried twice.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from guardrail._drivers import iterate_async, iterate_sync, run_async, run_sync
from guardrail._engine import Call, Settings
from guardrail.contract import compile_contract
from guardrail.gates.semantic import Rule
from guardrail.modes import SERVER_KINDS, Mode, capabilities, plans, schema_name
from guardrail.outcome import Budget, Result
from guardrail.retry import RetryPolicy
from guardrail.streaming import AsyncStructuredStream, StructuredStream
from guardrail.vendors.anthropic_messages import Messages
from guardrail.vendors.base import Endpoint
from guardrail.vendors.openai_chat import ChatCompletions
from guardrail.vendors.openai_responses import Responses


class StructuredMethod:
    """One SDK ``create`` method with ``response_model=`` support; other attributes pass through."""

    def __init__(self, endpoint: Endpoint, raw: Any, quiet: Any, *, is_async: bool, settings: Settings,
                 retry: RetryPolicy, timeout: float | None = None) -> None:
        self._timeout = timeout  # the client's own request timeout, in seconds
        self._endpoint = endpoint
        self._raw = raw          # the caller's SDK resource (passthrough calls)
        self._quiet = quiet      # the same resource on the client copy with max_retries=0
        self._is_async = is_async
        self._settings = settings
        self._retry = retry

    def create(self, *, response_model: Any = None, aliases: Mapping[str, str] | None = None,
               max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
               rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
        """The SDK's ``create``; with ``response_model`` it returns the validated value (async: an awaitable).

        Args:
            response_model: the output type (a pydantic model or any type ``TypeAdapter`` accepts).
            aliases: drifted field name -> contract field name, applied at any depth.
            max_attempts: model attempts before :class:`~guardrail.GaveUp` (default ``Settings.max_attempts``).
            mode: force ``"native"``, ``"tool"``, ``"json"`` or ``"prompt"`` instead of the strongest available.
            budget: a token/cost cap across all attempts (:class:`~guardrail.Budget`).
            rules: semantic rules (:mod:`guardrail.gates.semantic`) every validated answer must meet.
            context: runtime facts the rules read (ids that must exist, retrieved evidence).
            **kwargs: the SDK's own arguments, passed on.
        """
        if response_model is None:
            return self._raw.create(**kwargs)
        call = self._call(response_model, aliases, max_attempts, mode, budget, kwargs, rules, context)
        if self._is_async:
            return self._value_async(call)
        return run_sync(call, self._quiet.create, self._retry).value

    def create_with_result(self, *, response_model: Any, aliases: Mapping[str, str] | None = None,
                           max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
                           rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None,
                           **kwargs: Any) -> Any:
        """Like :meth:`create` but returns the :class:`~guardrail.Result` (async: an awaitable of it)."""
        call = self._call(response_model, aliases, max_attempts, mode, budget, kwargs, rules, context)
        if self._is_async:
            return run_async(call, self._quiet.create, self._retry)
        return run_sync(call, self._quiet.create, self._retry)

    def create_partial(self, *, response_model: Any, aliases: Mapping[str, str] | None = None,
                       max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
                       rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None,
                       **kwargs: Any) -> Any:
        """Stream: iterate :class:`~guardrail.Partial` previews while the answer arrives, then the validated value.

        Returns a :class:`~guardrail.StructuredStream` (async clients: an :class:`AsyncStructuredStream` to use
        with ``async for``); after the loop its ``.result`` holds the :class:`~guardrail.Result`. Previews are
        never validated; only the last item, the value, is.
        """
        call = self._call(response_model, aliases, max_attempts, mode, budget, {**kwargs, "stream": True}, rules,
                          context)
        if self._is_async:
            return AsyncStructuredStream(iterate_async(call, self._quiet.create, self._retry, previews=True))
        return StructuredStream(iterate_sync(call, self._quiet.create, self._retry, previews=True))

    async def _value_async(self, call: Call) -> Any:
        result: Result[Any] = await run_async(call, self._quiet.create, self._retry)
        return result.value

    def _call(self, response_model: Any, aliases: Mapping[str, str] | None, max_attempts: int | None,
              mode: Mode | None, budget: Budget | None, kwargs: dict[str, Any], rules: Sequence[Rule] = (),
              context: Mapping[str, Any] | None = None) -> Call:
        taken = _CONFLICTS[self._endpoint.api] & _given(kwargs)
        if taken:
            raise TypeError(f"{', '.join(sorted(taken))} cannot be combined with response_model: guardrail sets it "
                            "for the mode it chooses (use mode= to choose one)")
        contract = compile_contract(response_model)
        model = str(kwargs.get("model", ""))
        caps = capabilities(self._endpoint.provider, model)
        chosen = plans(contract.schema, schema_name(contract.output_type), caps, forced=mode,
                       thinking=self._endpoint.thinking(kwargs))
        settings = self._settings if max_attempts is None else \
            dataclasses.replace(self._settings, max_attempts=max_attempts)
        return Call(self._endpoint, kwargs, contract, chosen, caps, aliases, budget, settings, timeout=self._timeout,
                    rules=tuple(rules), context=dict(context or {}))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class Wrapped:
    """An SDK namespace (``client``, ``client.chat``) whose structured methods are replaced, the rest passed on.

    ``vendor`` is ``"openai"`` or ``"anthropic"`` on the client itself (``None`` on inner namespaces).
    """

    def __init__(self, raw: Any, members: Mapping[str, Any], vendor: str | None = None) -> None:
        self._raw = raw
        self._members = dict(members)
        self.vendor = vendor

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        members = self.__dict__.get("_members", {})
        if name in members:
            return members[name]
        return getattr(self.__dict__["_raw"], name)

    def __repr__(self) -> str:
        return f"guardrail.wrap({self._raw!r})"


def wrap(client: Any, *, server: str | None = None, settings: Settings | None = None,
         retry: RetryPolicy | None = None) -> Any:
    # Returns Any: the wrapper has the SDK client's whole surface, which only the SDK's own types describe.
    """Wrap an official ``openai`` (sync or async) or ``anthropic`` (sync or async) client.

    Args:
        client: ``openai.OpenAI``/``AsyncOpenAI`` (also any OpenAI-compatible server via ``base_url``) or
            ``anthropic.Anthropic``/``AsyncAnthropic``.
        server: for an OpenAI-compatible self-hosted server, its kind (``"vllm"``, ``"sglang"``,
            ``"llamacpp"``, ``"ollama"``), so its own constrained-decoding fields are sent.
        settings: attempt-loop settings (attempts, token ceiling, temperature, content capture).
        retry: the transport retry policy (tries, waits, deadline).

    Returns:
        An object with the client's call shape: ``chat.completions.create`` and ``responses.create``
        (OpenAI) or ``messages.create`` (Anthropic) accept ``response_model=`` and friends, and each has a
        ``create_with_result`` twin; everything else is the client's own.
    """
    if isinstance(client, Wrapped):
        return client
    if server is not None and server not in SERVER_KINDS:
        raise ValueError(f"unknown server kind {server!r}; expected one of {', '.join(SERVER_KINDS)}")
    kind, is_async = _kind(client)
    if server is not None and kind != "openai":
        raise ValueError("server= applies to OpenAI-compatible clients (openai.OpenAI(base_url=...)) only")
    quiet = _quiet(client)
    make = _structured_factory(is_async, settings or Settings(), retry or RetryPolicy(), _seconds(client.timeout))
    if kind == "openai":
        completions = make(ChatCompletions(server), client.chat.completions, quiet.chat.completions)
        members: dict[str, Any] = {"chat": Wrapped(client.chat, {"completions": completions})}
        if server is None:
            members["responses"] = make(Responses(), client.responses, quiet.responses)
        return Wrapped(client, members, "openai")
    return Wrapped(client, {"messages": make(Messages(), client.messages, quiet.messages)}, "anthropic")


_QUIET: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_QUIET_LOCK = threading.Lock()


def _quiet(client: Any) -> Any:
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


def _structured_factory(is_async: bool, settings: Settings, retry: RetryPolicy,
                        timeout: float | None) -> Callable[[Endpoint, Any, Any], StructuredMethod]:
    def make(endpoint: Endpoint, raw: Any, quiet: Any) -> StructuredMethod:
        return StructuredMethod(endpoint, raw, quiet, is_async=is_async, settings=settings, retry=retry,
                                timeout=timeout)
    return make


#: Request fields guardrail sets for its modes; the caller giving them too is a conflict, not a merge.
_CONFLICTS: dict[str, frozenset[str]] = {
    "chat": frozenset({"response_format", "tool_choice"}),
    "responses": frozenset({"tool_choice", "text.format"}),
    "messages": frozenset({"tool_choice", "output_config.format"}),
}


def _given(kwargs: Mapping[str, Any]) -> set[str]:
    """The caller's keywords, with ``text.format``/``output_config.format`` named when those are set."""
    names = set(kwargs)
    for outer in ("text", "output_config"):
        inner = kwargs.get(outer)
        if isinstance(inner, Mapping) and inner.get("format") is not None:
            names.add(f"{outer}.format")
    return names


def _seconds(timeout: Any) -> float | None:
    """A client timeout (a number, or an httpx ``Timeout`` whose read timeout counts) in seconds."""
    if isinstance(timeout, (int, float)):
        return float(timeout)
    read = getattr(timeout, "read", None)
    return float(read) if isinstance(read, (int, float)) else None


def _kind(client: Any) -> tuple[str, bool]:
    """("openai" | "anthropic", is_async) for a supported client; TypeError otherwise."""
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
    raise TypeError(f"guardrail.wrap() takes an openai.OpenAI/AsyncOpenAI or anthropic.Anthropic/AsyncAnthropic "
                    f"client, not {type(client).__name__} (install the extra: pip install 'guardrail[vendors]')")
