"""The leaves of a wrapped client: one SDK ``create`` method with ``response_model=`` added, in three flavors.

* :class:`StructuredMethod` / :class:`AsyncStructuredMethod` (``client.chat.completions``,
  ``client.responses``, ``client.messages``, their ``beta`` twins): ``create`` returns the validated value,
  ``create_with_result`` the :class:`~guardrail.Result`, ``create_partial`` a stream of previews.
* :class:`RawStructuredMethod` / :class:`AsyncRawStructuredMethod` (under ``with_raw_response``): ``create``
  returns a :class:`RawStructured`, the validated value together with the SDK's raw HTTP responses.
* :class:`StreamingResponseMethod` (under ``with_streaming_response``): passthrough only. That flavor exists
  to leave the body unread, while validation needs all of it, so ``response_model=`` there raises
  :class:`~guardrail.errors.UnsupportedCall` before any request (and is a type error for a type checker).

Without ``response_model`` every flavor calls the SDK unchanged (same arguments, same return value), and
every attribute a flavor does not define is the SDK resource's own.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, NoReturn, TypeVar, overload

from guardrail.call.cache import Cache, run_cached, run_cached_async
from guardrail.call.drivers import iterate_async, iterate_sync, run_async, run_sync
from guardrail.call.engine import Call, Settings
from guardrail.call.retry import RetryPolicy
from guardrail.call.streaming import AsyncStructuredStream, StructuredStream
from guardrail.contract import Contract, compile_contract
from guardrail.errors import UnsupportedCall, UsageError
from guardrail.gates.semantic import Rule
from guardrail.outcome import Budget, Result
from guardrail.vendors.base import Endpoint
from guardrail.vendors.plans import Plan, plans, schema_name
from guardrail.vendors.profiles import Capabilities, Mode, capabilities

if TYPE_CHECKING:
    from types import GenericAlias, UnionType
    from typing import _SpecialForm

    from typing_extensions import TypeAliasType

    #: Contracts whose value type a checker cannot name: type expressions that are not classes
    #: (``Literal[...]``, ``Ticket | None``, ``Annotated[...]``, type aliases) and JSON Schema documents (a
    #: ``dict``; the value is plain JSON data). Accepted as ``response_model``, their values typed ``Any``.
    #: A class (``type[T]``, which includes ``list[Ticket]``) gets the precise overload instead, so a
    #: mismatch there is a type error rather than a silent ``Any``.
    TypeForm = _SpecialForm | UnionType | GenericAlias | TypeAliasType | dict[str, Any]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Binding:
    """What every flavor of one wrapped method shares: the endpoint, the SDK resources and the policies.

    ``raw`` is the caller's SDK resource (passthrough calls); ``quiet`` the same resource on the client copy
    with the SDK's retries off (guardrail retries); ``timeout`` the client's own request timeout in seconds;
    ``cache`` the response cache structured calls go through (:mod:`guardrail.call.cache`), if any.
    """

    endpoint: Endpoint
    raw: Any
    quiet: Any
    settings: Settings
    retry: RetryPolicy
    timeout: float | None = None
    cache: Cache | None = None
    #: (response_model, model, mode, thinking) -> (contract, capabilities, plans): what a call needs before it is
    #: sent depends on nothing else, so a repeated call pays one lookup (see :meth:`_Method._call`).
    prepared: dict[tuple[Any, ...], tuple[Contract[Any], Capabilities, tuple[Plan, ...]]] = dataclasses.field(
        default_factory=dict)


#: Entries of :attr:`Binding.prepared`; past it, new shapes of call are prepared each time (still cached below).
_PREPARED_SIZE = 256


class _Method:
    """Shared by the flavors: building the :class:`Call` and passing unknown attributes to the SDK."""

    def __init__(self, binding: Binding, raw: Any = None) -> None:
        self._binding = binding
        self._raw = binding.raw if raw is None else raw  # this flavor's SDK object (passthrough calls)
        self._quiet = binding.quiet
        self._endpoint = binding.endpoint

    def _call(self, response_model: Any, aliases: Mapping[str, str] | None, max_attempts: int | None,
              mode: Mode | None, budget: Budget | None, kwargs: dict[str, Any], rules: Sequence[Rule] = (),
              context: Mapping[str, Any] | None = None) -> Call:
        taken = self._endpoint.conflicts(kwargs)
        if taken:
            raise UsageError(f"{', '.join(sorted(taken))} cannot be combined with response_model: guardrail sets it "
                            "for the mode it chooses (use mode= to choose one)")
        contract, caps, chosen = self._prepare(response_model, str(kwargs.get("model", "")), mode,
                                               self._endpoint.thinking(kwargs))
        settings = self._binding.settings
        if max_attempts is not None:
            settings = dataclasses.replace(settings, max_attempts=max_attempts)
        # The caller's context object itself (not a copy): pydantic validators may collect into it.
        return Call(self._endpoint, kwargs, contract, list(chosen), caps, aliases, budget, settings,
                    timeout=self._binding.timeout, rules=tuple(rules), context=context if context is not None else {})

    def _prepare(self, response_model: Any, model: str, mode: Mode | None, thinking: bool
                 ) -> tuple[Contract[Any], Capabilities, tuple[Plan, ...]]:
        """The contract, the model's capabilities and the plans, remembered per shape of call (each part is
        cached on its own too; this saves the lookups, which the hot path pays on every call)."""
        prepared = self._binding.prepared
        key: tuple[Any, ...] | None = (response_model, model, mode, thinking)
        try:
            found = prepared.get(key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable contract (a JSON Schema dict): its parts' own caches serve it
            found, key = None, None
        if found is None:
            contract = compile_contract(response_model)
            caps = capabilities(self._endpoint.provider, model)
            found = (contract, caps, tuple(plans(contract.schema, schema_name(contract.output_type), caps,
                                                 forced=mode, thinking=thinking)))
            if key is not None and len(prepared) < _PREPARED_SIZE:
                prepared[key] = found
        return found

    def _cache(self, use: bool) -> Cache | None:
        """The response cache for this call: the wrapper's, unless the call said ``cache=False``."""
        return self._binding.cache if use else None

    @property
    def endpoint(self) -> Endpoint:
        """The wire format this method speaks (:class:`~guardrail.vendors.base.Endpoint`)."""
        return self._endpoint

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_binding", "_raw", "_quiet", "_endpoint"):
            raise AttributeError(name)
        return getattr(self._raw, name)

    def __repr__(self) -> str:
        return f"<guardrail {type(self).__name__} of {self._raw!r}>"


class StructuredMethod(_Method):
    """A synchronous SDK ``create`` with ``response_model=`` support; other attributes pass through."""

    @overload
    def create(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def create(self, *, response_model: type[T], **kwargs: Any) -> T: ...
    @overload
    def create(self, *, response_model: TypeForm, **kwargs: Any) -> Any: ...
    def create(self, *, response_model: Any = None, aliases: Mapping[str, str] | None = None,
               max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
               rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None, cache: bool = True,
               prompt_version: str | None = None, **kwargs: Any) -> Any:
        """The SDK's ``create``; with ``response_model`` it returns the validated value.

        Args:
            response_model: the output type (a pydantic model or any type ``TypeAdapter`` accepts).
            aliases: drifted field name -> contract field name, applied at any depth.
            max_attempts: model attempts before :class:`~guardrail.GaveUp` (default ``Settings.max_attempts``).
            mode: force ``"native"``, ``"tool"``, ``"json"`` or ``"prompt"`` instead of the strongest available.
            budget: a token/cost cap across all attempts (:class:`~guardrail.Budget`).
            rules: semantic rules (:mod:`guardrail.gates.semantic`) every validated answer must meet.
            context: runtime facts the rules read and pydantic validators see as ``info.context``.
            cache: ``False`` skips the wrapper's response cache for this call (:mod:`guardrail.call.cache`).
            prompt_version: your prompt's version, part of the cache key (change it to stop reusing answers).
            **kwargs: the SDK's own arguments, passed on.
        """
        if response_model is None:
            return self._raw.create(**kwargs)
        call = self._call(response_model, aliases, max_attempts, mode, budget, kwargs, rules, context)
        return self._run(call, cache, prompt_version).value

    def _run(self, call: Call, cache: bool, prompt_version: str | None) -> Result[Any]:
        retry = self._binding.retry
        return run_cached(self._cache(cache), call, prompt_version, retry,
                          lambda policy: run_sync(call, self._quiet.create, policy or retry))

    @overload
    def create_with_result(self, *, response_model: type[T], **kwargs: Any) -> Result[T]: ...
    @overload
    def create_with_result(self, *, response_model: TypeForm, **kwargs: Any) -> Result[Any]: ...
    def create_with_result(self, *, response_model: Any, aliases: Mapping[str, str] | None = None,
                           max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
                           rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None,
                           cache: bool = True, prompt_version: str | None = None, **kwargs: Any) -> Result[Any]:
        """Like :meth:`create` but returns the :class:`~guardrail.Result` (value, attempts, usage, timing;
        ``cached`` says whether it came from the response cache)."""
        call = self._call(response_model, aliases, max_attempts, mode, budget, kwargs, rules, context)
        return self._run(call, cache, prompt_version)

    @overload
    def create_partial(self, *, response_model: type[T], **kwargs: Any) -> StructuredStream[T]: ...
    @overload
    def create_partial(self, *, response_model: TypeForm, **kwargs: Any) -> StructuredStream[Any]: ...
    def create_partial(self, *, response_model: Any, aliases: Mapping[str, str] | None = None,
                       max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
                       rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None,
                       cache: bool = True, prompt_version: str | None = None,
                       **kwargs: Any) -> StructuredStream[Any]:
        """Stream: iterate :class:`~guardrail.outcome.Partial` previews as the answer arrives, then the validated value.

        After the loop the stream's ``.result`` holds the :class:`~guardrail.Result`. Previews are never
        validated; only the last item, the value, is. Streams do not use the response cache (``cache`` and
        ``prompt_version`` are accepted so one set of keywords serves every method).
        """
        call = self._call(response_model, aliases, max_attempts, mode, budget, self._endpoint.streaming(kwargs), rules,
                          context)
        return StructuredStream(iterate_sync(call, self._quiet.create, self._binding.retry, previews=True))

    @property
    def with_raw_response(self) -> RawStructuredMethod:
        """This method whose ``create`` also gives the SDK's raw HTTP responses (:class:`RawStructured`)."""
        return RawStructuredMethod(self._binding, self._raw.with_raw_response)

    @property
    def with_streaming_response(self) -> StreamingResponseMethod:
        """The SDK's streaming-response flavor; passthrough only (``response_model=`` is refused there)."""
        return StreamingResponseMethod(self._binding, self._raw.with_streaming_response)


class AsyncStructuredMethod(_Method):
    """An asynchronous SDK ``create`` with ``response_model=`` support; other attributes pass through."""

    @overload
    def create(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def create(self, *, response_model: type[T], **kwargs: Any) -> Coroutine[Any, Any, T]: ...
    @overload
    def create(self, *, response_model: TypeForm, **kwargs: Any) -> Coroutine[Any, Any, Any]: ...
    def create(self, *, response_model: Any = None, aliases: Mapping[str, str] | None = None,
               max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
               rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None, cache: bool = True,
               prompt_version: str | None = None, **kwargs: Any) -> Any:
        """The SDK's ``create``; with ``response_model`` an awaitable of the validated value (see
        :meth:`StructuredMethod.create` for the arguments)."""
        if response_model is None:
            return self._raw.create(**kwargs)
        call = self._call(response_model, aliases, max_attempts, mode, budget, kwargs, rules, context)
        return self._value(call, cache, prompt_version)

    async def _value(self, call: Call, cache: bool, prompt_version: str | None) -> Any:
        result = await self._run(call, cache, prompt_version)
        return result.value

    async def _run(self, call: Call, cache: bool, prompt_version: str | None) -> Result[Any]:
        retry = self._binding.retry
        return await run_cached_async(self._cache(cache), call, prompt_version, retry,
                                      lambda policy: run_async(call, self._quiet.create, policy or retry))

    @overload
    def create_with_result(self, *, response_model: type[T],
                           **kwargs: Any) -> Coroutine[Any, Any, Result[T]]: ...
    @overload
    def create_with_result(self, *, response_model: TypeForm, **kwargs: Any) -> Coroutine[Any, Any, Result[Any]]: ...
    def create_with_result(self, *, response_model: Any, aliases: Mapping[str, str] | None = None,
                           max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
                           rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None,
                           cache: bool = True, prompt_version: str | None = None,
                           **kwargs: Any) -> Coroutine[Any, Any, Result[Any]]:
        """Like :meth:`create` but an awaitable of the :class:`~guardrail.Result`."""
        call = self._call(response_model, aliases, max_attempts, mode, budget, kwargs, rules, context)
        return self._run(call, cache, prompt_version)

    @overload
    def create_partial(self, *, response_model: type[T], **kwargs: Any) -> AsyncStructuredStream[T]: ...
    @overload
    def create_partial(self, *, response_model: TypeForm, **kwargs: Any) -> AsyncStructuredStream[Any]: ...
    def create_partial(self, *, response_model: Any, aliases: Mapping[str, str] | None = None,
                       max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
                       rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None,
                       cache: bool = True, prompt_version: str | None = None,
                       **kwargs: Any) -> AsyncStructuredStream[Any]:
        """Stream previews with ``async for``, then the validated value; ``.result`` after the loop (no cache, as
        :meth:`StructuredMethod.create_partial`)."""
        call = self._call(response_model, aliases, max_attempts, mode, budget, self._endpoint.streaming(kwargs), rules,
                          context)
        return AsyncStructuredStream(iterate_async(call, self._quiet.create, self._binding.retry, previews=True))

    @property
    def with_raw_response(self) -> AsyncRawStructuredMethod:
        """This method whose ``create`` also gives the SDK's raw HTTP responses (:class:`RawStructured`)."""
        return AsyncRawStructuredMethod(self._binding, self._raw.with_raw_response)

    @property
    def with_streaming_response(self) -> StreamingResponseMethod:
        """The SDK's streaming-response flavor; passthrough only (``response_model=`` is refused there)."""
        return StreamingResponseMethod(self._binding, self._raw.with_streaming_response)


class RawStructured(Generic[T]):
    """A structured call's value together with the SDK's raw HTTP responses (``with_raw_response``).

    Reads like the SDK's own raw response: ``.parse()`` gives the value (validated, of the
    ``response_model`` type, not the SDK's completion object), ``.headers``, ``.status_code`` and
    ``.http_response`` are those of the last request. ``.responses`` holds the SDK's raw response object of
    every request the call made, in order (a retried attempt sends more than one), and ``.result`` the
    :class:`~guardrail.Result`.
    """

    def __init__(self, result: Result[T], responses: Sequence[Any]) -> None:
        self.result = result
        self.responses: tuple[Any, ...] = tuple(responses)

    @property
    def value(self) -> T:
        """The validated value (the same as :meth:`parse`)."""
        return self.result.value

    def parse(self) -> T:
        """The validated value, as the SDK's ``parse()`` gives its completion object."""
        return self.result.value

    @property
    def http_response(self) -> Any:
        """The HTTP client's response object of the last request (the SDK's ``.http_response``)."""
        return self.responses[-1].http_response

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers of the last request (request ids, rate-limit counters)."""
        headers: Mapping[str, str] = self.responses[-1].headers
        return headers

    @property
    def status_code(self) -> int:
        """The HTTP status of the last request."""
        return int(self.responses[-1].status_code)

    def __repr__(self) -> str:
        return f"<RawStructured {self.status_code} value={self.result.value!r} requests={len(self.responses)}>"


class RawStructuredMethod(_Method):
    """``create`` under ``with_raw_response``: with ``response_model``, a :class:`RawStructured`."""

    @overload
    def create(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def create(self, *, response_model: type[T], **kwargs: Any) -> RawStructured[T]: ...
    @overload
    def create(self, *, response_model: TypeForm, **kwargs: Any) -> RawStructured[Any]: ...
    def create(self, *, response_model: Any = None, aliases: Mapping[str, str] | None = None,
               max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
               rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None, cache: bool = True,
               prompt_version: str | None = None, **kwargs: Any) -> Any:
        """The SDK's raw-response ``create``; with ``response_model`` the value and the raw responses (always from
        the vendor: this flavor exists for the HTTP responses, so it does not use the response cache)."""
        if response_model is None:
            return self._raw.create(**kwargs)
        call = self._call(response_model, aliases, max_attempts, mode, budget, kwargs, rules, context)
        responses: list[Any] = []
        send = self._quiet.with_raw_response.create

        def parsed(**request: Any) -> Any:
            response = send(**request)
            responses.append(response)
            return response.parse()

        return RawStructured(run_sync(call, parsed, self._binding.retry), responses)


class AsyncRawStructuredMethod(_Method):
    """``create`` under ``with_raw_response`` of an async client: an awaitable :class:`RawStructured`."""

    @overload
    def create(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def create(self, *, response_model: type[T], **kwargs: Any) -> Coroutine[Any, Any, RawStructured[T]]: ...
    @overload
    def create(self, *, response_model: TypeForm, **kwargs: Any) -> Coroutine[Any, Any, RawStructured[Any]]: ...
    def create(self, *, response_model: Any = None, aliases: Mapping[str, str] | None = None,
               max_attempts: int | None = None, mode: Mode | None = None, budget: Budget | None = None,
               rules: Sequence[Rule] = (), context: Mapping[str, Any] | None = None, cache: bool = True,
               prompt_version: str | None = None, **kwargs: Any) -> Any:
        """The SDK's raw-response ``create``; with ``response_model`` an awaitable of the value and the responses
        (never from the response cache)."""
        if response_model is None:
            return self._raw.create(**kwargs)
        return self._structured(self._call(response_model, aliases, max_attempts, mode, budget, kwargs, rules,
                                           context))

    async def _structured(self, call: Call) -> RawStructured[Any]:
        responses: list[Any] = []
        send: Callable[..., Any] = self._quiet.with_raw_response.create

        async def parsed(**request: Any) -> Any:
            response = await send(**request)
            responses.append(response)
            value = response.parse()  # openai's raw response parses synchronously, anthropic's is awaited
            return await value if inspect.isawaitable(value) else value

        return RawStructured(await run_async(call, parsed, self._binding.retry), responses)


class StreamingResponseMethod(_Method):
    """``create`` under ``with_streaming_response``: the SDK's own call; ``response_model=`` is refused."""

    def create(self, *, response_model: None = None, **kwargs: Any) -> Any:
        """The SDK's streaming-response ``create`` (a context manager), unchanged."""
        if response_model is not None:
            _refuse("create")
        return self._raw.create(**kwargs)

    def create_with_result(self, **kwargs: Any) -> NoReturn:
        """Refused: see :meth:`create`."""
        _refuse("create_with_result")

    def create_partial(self, **kwargs: Any) -> NoReturn:
        """Refused: see :meth:`create`."""
        _refuse("create_partial")


def _refuse(name: str) -> NoReturn:
    raise UnsupportedCall(
        f"{name}(response_model=...) is not available under with_streaming_response: it exists to leave the "
        "response body unread, and a validated value needs all of it. Use with_raw_response.create(...) for the "
        "value with the HTTP response (headers, status), or create_partial(...) for previews as the answer "
        "streams in")

