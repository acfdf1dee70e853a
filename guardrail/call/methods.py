"""The leaves of a wrapped client: the SDK's resource with ``create`` taking ``response_model=``, in three flavors.

Each class here is a mixin: :mod:`guardrail.call.resources` puts it in front of the SDK's own class, so a wrapped
client's ``chat.completions`` *is* an ``openai.resources.chat.Completions`` (and its ``with_raw_response`` a
``CompletionsWithRawResponse``), with guardrail's keywords added to the SDK's ``create``:

* :class:`StructuredMethod` / :class:`AsyncStructuredMethod` (``client.chat.completions``,
  ``client.responses``, ``client.messages``, their ``beta`` twins): ``create`` returns the validated value,
  ``create_with_result`` the :class:`~guardrail.Result`, ``create_partial`` a stream of previews,
  ``create_chunked`` a long list asked for in chunks (:mod:`guardrail.call.chunked`).
* :class:`RawStructuredMethod` / :class:`AsyncRawStructuredMethod` (under ``with_raw_response``): ``create``
  returns a :class:`RawStructured`, the validated value together with the SDK's raw HTTP responses.
* :class:`StreamingResponseMethod` (under ``with_streaming_response``): passthrough only. That flavor exists
  to leave the body unread, while validation needs all of it, so ``response_model=`` there raises
  :class:`~guardrail.errors.UnsupportedCall` before any request (and is a type error for a type checker).

Without ``response_model`` every flavor is the SDK's own call (the same function, the same arguments, the same
return value); guardrail's other keywords without it raise the ``TypeError`` the SDK raises for any keyword it
does not know (:meth:`~guardrail.call.options.CallOptions.take`). A structured call reads the live client when
it is made (``base_url``, ``timeout``, headers) and sends through the client's view without SDK retries
(:func:`quiet_resource`): guardrail retries transport failures itself.

Every structured call starts the same way, whoever makes it: a :class:`~guardrail.call.options.CallOptions` (taken
from the keywords here; built by the decorator and the chain, which call :func:`run_with_result`
and :func:`run_partial`) and the SDK keywords become a :class:`~guardrail.call.engine.Call` (``_guardrail_call``: the
prepared contract and plans, the settings, the deadline, computed once), which the response cache
(:mod:`guardrail.call.cache`, only when one is configured) and the attempt loop's drivers
(:mod:`guardrail.call.engine`) run.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, TypeVar, cast, overload

from guardrail.call.cache import Cache, run_cached, run_cached_async
from guardrail.call.chunked import AsyncChunkedCreate, ChunkedCreate
from guardrail.call.engine import Call, iterate_async, iterate_sync, run_async, run_sync
from guardrail.call.examples import with_examples
from guardrail.call.iterable import AsyncItemStream, ItemStream, ListRun
from guardrail.call.options import CallOptions, ClientOptions, deadline_at, timeout_seconds
from guardrail.call.reasoning import reasoned, reasoned_async, refuse
from guardrail.call.streaming import AsyncStructuredStream, StructuredStream
from guardrail.call.text_constraints import constraint_prepared
from guardrail.errors import UnsupportedCall, UsageError
from guardrail.outcome import Result
from guardrail.vendors.base import Endpoint, Methods

if TYPE_CHECKING:
    from types import GenericAlias, UnionType
    from typing import _SpecialForm

    from typing_extensions import TypeAliasType

    from guardrail.local.constraints import Grammar, Regex

    #: Contracts whose value type a checker cannot name: type expressions that are not classes
    #: (``Literal[...]``, ``Ticket | None``, ``Annotated[...]``, type aliases) and JSON Schema documents (a
    #: ``dict``; the value is plain JSON data). Accepted as ``response_model``, their values typed ``Any``.
    #: A class (``type[T]``, which includes ``list[Ticket]``) gets the precise overload instead, so a
    #: mismatch there is a type error rather than a silent ``Any``. A text constraint (``Regex``, ``Grammar``;
    #: the value is the text) is accepted too.
    TypeForm = _SpecialForm | UnionType | GenericAlias | TypeAliasType | dict[str, Any] | Regex | Grammar

T = TypeVar("T")

__all__ = ["AsyncRawStructuredMethod", "AsyncStructuredMethod", "MethodTwin", "RawStructured", "RawStructuredMethod",
           "StreamingResponseMethod", "StructuredMethod", "Twin", "quiet_resource", "run_iterable", "run_partial",
           "run_with_result"]

#: What guardrail adds to the SDK's ``create`` docstring (the keywords, documented once here).
KEYWORDS_DOC = """
guardrail: with ``response_model`` the call returns the validated value instead (an awaitable of it on an async
client; ``create_with_result`` returns the whole :class:`~guardrail.Result`).

    response_model: the output type (a pydantic model, any type ``TypeAdapter`` accepts, or a JSON Schema dict).
    aliases: drifted field name -> contract field name, applied at any depth.
    max_attempts: model attempts before :class:`~guardrail.GaveUp` (default ``Settings.max_attempts``).
    mode: force ``"native"``, ``"tool"``, ``"json"`` or ``"prompt"`` instead of the strongest available.
    budget: a token/cost cap across all attempts (:class:`~guardrail.Budget`).
    rules: semantic rules (:mod:`guardrail.gates.semantic`) every validated answer must meet.
    context: runtime facts the rules read and pydantic validators see as ``info.context``.
    cache: ``False`` skips the wrapper's response cache for this call (:mod:`guardrail.call.cache`).
    prompt_version: your prompt's version, part of the cache key (change it to stop reusing answers).
    examples: few-shot examples, valid values of the contract, shown with the instructions
        (:mod:`guardrail.call.examples`); an invalid one raises :class:`~guardrail.errors.InvalidExample` first.
    reason_first: ``"two_stage"`` or ``"field"``: the model reasons before it answers; the text is on
        ``Result.reasoning``, never the value (:mod:`guardrail.call.reasoning`).

The other keywords are the SDK's, passed on. guardrail's keywords without ``response_model`` are a ``TypeError``.
"""


class _Resource:
    """What the structured resources share: the SDK's own methods, the endpoint, and building a :class:`Call`."""

    #: The wrapped client this resource belongs to (set on each object :mod:`guardrail.call.resources` makes).
    _guardrail_client: Any
    #: The endpoint class this resource speaks (set on each class :mod:`guardrail.call.resources` makes).
    _guardrail_endpoint: ClassVar[type[Endpoint]]

    def _guardrail_super(self, name: str) -> Any:
        """The SDK's own method ``name`` of this resource (the class after guardrail's in the MRO)."""
        return getattr(super(), name)

    def _guardrail_plain(self, name: str, kwargs: dict[str, Any]) -> Any:
        """A call of ``name`` without ``response_model``: the SDK's own method of that name where it has one,
        else the ``TypeError`` of a missing argument."""
        sdk = getattr(type(self), "_guardrail_sdk", None)
        if not hasattr(sdk, name):
            raise UsageError(f"{name}() missing 1 required keyword-only argument: 'response_model'")
        return self._guardrail_super(name)(**kwargs)

    @property
    def _guardrail(self) -> ClientOptions:
        options: ClientOptions = self._guardrail_client._guardrail
        return options

    @property
    def endpoint(self) -> Endpoint:
        """The wire format this method speaks (:class:`~guardrail.vendors.base.Endpoint`)."""
        return self._guardrail.endpoint(self._guardrail_endpoint)

    def _guardrail_call(self, options: CallOptions, kwargs: dict[str, Any]) -> Call:
        """The call these options and SDK keywords make: what is prepared for its shape (the contract, the
        plans), its settings, and its deadline, computed here once (the call's ``timeout=``, else the live
        client's, under the client's retry policy, never past the options' own deadline)."""
        client = self._guardrail
        endpoint = client.endpoint(self._guardrail_endpoint)
        taken = endpoint.conflicts(kwargs)
        if taken:
            raise UsageError(f"{', '.join(sorted(taken))} cannot be combined with response_model: guardrail sets it "
                             "for the mode it chooses (use mode= to choose one)")
        if options.constrains_text:  # a Regex/Grammar (guardrail.call.text_constraints), not a contract
            prepared = constraint_prepared(endpoint, options.response_model, options.mode, options.examples)
        else:
            prepared = client.prepare(endpoint, options.response_model, str(kwargs.get("model", "")), options.mode,
                                      endpoint.thinking(kwargs))
        if options.examples:
            prepared = with_examples(prepared, options.examples)
        settings = client.settings
        if options.max_attempts is not None:
            settings = dataclasses.replace(settings, max_attempts=options.max_attempts)
        timeout = timeout_seconds(endpoint.client_timeout(self._guardrail_client))
        given = timeout_seconds(kwargs.get("timeout"))
        deadline = deadline_at(client.retry, timeout if given is None else given, options.deadline)
        if options.recorder is None and client.recorder is not None:  # the call's own recorder, else the client's
            options = dataclasses.replace(options, recorder=client.recorder)
        return Call(endpoint, kwargs, prepared, options, settings, client.retry, deadline, timeout)

    def _guardrail_quiet(self) -> Any:
        """The SDK's own resource of this class on the client's view without SDK retries: what structured calls
        send through (:func:`quiet_resource`)."""
        return quiet_resource(self, self._guardrail.resources)

    def _guardrail_send(self) -> Callable[..., Any]:
        """The SDK call each HTTP try of a structured call makes (the endpoint's sender on the quiet resource)."""
        return self.endpoint.sender(self._guardrail_quiet())

    def _guardrail_cache(self, options: CallOptions) -> Cache | None:
        """The response cache for this call: the options' own (a chain's), else the wrapper's; none when the
        call said ``cache=False``."""
        if not options.cache:
            return None
        return options.response_cache if options.response_cache is not None else self._guardrail.cache

    def _guardrail_required(self, kwargs: dict[str, Any], method: str) -> CallOptions:
        options = CallOptions.take(kwargs, method)
        if options is None:
            raise UsageError(f"{method}() missing 1 required keyword-only argument: 'response_model'")
        return options

    @property
    def _guardrail_methods(self) -> Methods:
        return self._guardrail_endpoint.methods

    if TYPE_CHECKING:  # made per SDK class by guardrail.call.resources; typed here for the protocols
        @property
        def with_streaming_response(self) -> StreamingResponseMethod: ...


class StructuredMethod(ChunkedCreate, _Resource):
    """A synchronous SDK resource whose ``create`` takes ``response_model=``; everything else is the SDK's."""

    @overload
    def create(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def create(self, *, response_model: type[T], **kwargs: Any) -> T: ...
    @overload
    def create(self, *, response_model: TypeForm, **kwargs: Any) -> Any: ...
    def create(self, **kwargs: Any) -> Any:
        """The SDK's ``create``; with ``response_model`` it returns the validated value (see ``KEYWORDS_DOC``)."""
        options = CallOptions.take(kwargs, self._guardrail_methods.value)
        if options is None:
            return self._guardrail_super(self._guardrail_methods.value)(**kwargs)
        return self._guardrail_run(options, kwargs).value

    def _guardrail_run(self, options: CallOptions, kwargs: dict[str, Any]) -> Result[Any]:
        """The structured call: through the response cache when there is one, else straight to the loop."""
        if options.reason_first is not None:  # reasoning first: guardrail.call.reasoning
            return reasoned(self, options, kwargs)
        call = self._guardrail_call(options, kwargs)
        send = self._guardrail_send()
        cache = self._guardrail_cache(options)
        if cache is None:
            return run_sync(call, send)
        return run_cached(cache, call, options.prompt_version, lambda: run_sync(call, send))

    @overload
    def create_with_result(self, *, response_model: type[T], **kwargs: Any) -> Result[T]: ...
    @overload
    def create_with_result(self, *, response_model: TypeForm, **kwargs: Any) -> Result[Any]: ...
    def create_with_result(self, **kwargs: Any) -> Result[Any]:
        """Like ``create`` with ``response_model``, but returns the :class:`~guardrail.Result` (value, attempts,
        usage, timing; ``cached`` says whether it came from the response cache)."""
        return self._guardrail_run(self._guardrail_required(kwargs, self._guardrail_methods.result), kwargs)

    @overload
    def create_partial(self, *, response_model: type[T], **kwargs: Any) -> StructuredStream[T]: ...
    @overload
    def create_partial(self, *, response_model: TypeForm, **kwargs: Any) -> StructuredStream[Any]: ...
    def create_partial(self, **kwargs: Any) -> Any:
        """Stream: iterate :class:`~guardrail.outcome.Partial` previews as the answer arrives, then the validated value.

        After the loop the stream's ``.result`` holds the :class:`~guardrail.Result`. Previews are never
        validated; only the last item, the value, is. Streams do not use the response cache (``cache`` and
        ``prompt_version`` are accepted so one set of keywords serves every method). Where the SDK has a method of
        this name (Gemini's ``generate_content_stream``), a call without ``response_model`` is the SDK's.
        """
        name = self._guardrail_methods.partial
        options = CallOptions.take(kwargs, name)
        if options is None:
            return self._guardrail_plain(name, kwargs)
        return self._guardrail_stream(options, kwargs)

    def _guardrail_stream(self, options: CallOptions, kwargs: dict[str, Any]) -> StructuredStream[Any]:
        refuse(options, self._guardrail_methods.partial)
        call = self._guardrail_call(options, self.endpoint.streaming(kwargs))
        return StructuredStream(iterate_sync(call, self._guardrail_send(), previews=True))

    @overload
    def create_iterable(self, *, response_model: type[T], **kwargs: Any) -> ItemStream[T]: ...
    @overload
    def create_iterable(self, *, response_model: TypeForm, **kwargs: Any) -> ItemStream[Any]: ...
    def create_iterable(self, **kwargs: Any) -> Any:
        """The model answers a list of ``response_model``: iterate its items, each as soon as it is complete and
        validated (rules included); ``.result`` after the loop (:mod:`guardrail.call.iterable`)."""
        return self._guardrail_items(self._guardrail_required(kwargs, self._guardrail_methods.iterable), kwargs)

    def _guardrail_items(self, options: CallOptions, kwargs: dict[str, Any]) -> ItemStream[Any]:
        refuse(options, self._guardrail_methods.iterable)  # reasoning first is for a whole answer
        streamed = self.endpoint.streaming(kwargs)
        run = ListRun(options.response_model, options, lambda given: self._guardrail_call(given, dict(streamed)))
        return ItemStream(run, self._guardrail_send())

    if TYPE_CHECKING:
        @property
        def with_raw_response(self) -> RawStructuredMethod: ...


class AsyncStructuredMethod(AsyncChunkedCreate, _Resource):
    """An asynchronous SDK resource whose ``create`` takes ``response_model=``; everything else is the SDK's."""

    @overload
    def create(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def create(self, *, response_model: type[T], **kwargs: Any) -> Coroutine[Any, Any, T]: ...
    @overload
    def create(self, *, response_model: TypeForm, **kwargs: Any) -> Coroutine[Any, Any, Any]: ...
    def create(self, **kwargs: Any) -> Any:
        """The SDK's ``create``; with ``response_model`` an awaitable of the validated value."""
        options = CallOptions.take(kwargs, self._guardrail_methods.value)
        if options is None:
            return self._guardrail_super(self._guardrail_methods.value)(**kwargs)
        return self._guardrail_value(self._guardrail_run(options, kwargs))

    async def _guardrail_value(self, running: Coroutine[Any, Any, Result[Any]]) -> Any:
        return (await running).value

    def _guardrail_run(self, options: CallOptions, kwargs: dict[str, Any]) -> Coroutine[Any, Any, Result[Any]]:
        """The structured call, as :meth:`StructuredMethod._guardrail_run` (the call is made now, so a mistake
        in it raises here, not when awaited)."""
        if options.reason_first is not None:  # reasoning first: guardrail.call.reasoning
            return reasoned_async(self, options, kwargs)
        call = self._guardrail_call(options, kwargs)
        send = self._guardrail_send()
        cache = self._guardrail_cache(options)
        if cache is None:
            return run_async(call, send)
        return run_cached_async(cache, call, options.prompt_version, lambda: run_async(call, send))

    @overload
    def create_with_result(self, *, response_model: type[T],
                           **kwargs: Any) -> Coroutine[Any, Any, Result[T]]: ...
    @overload
    def create_with_result(self, *, response_model: TypeForm, **kwargs: Any) -> Coroutine[Any, Any, Result[Any]]: ...
    def create_with_result(self, **kwargs: Any) -> Coroutine[Any, Any, Result[Any]]:
        """Like ``create`` with ``response_model``, but an awaitable of the :class:`~guardrail.Result`."""
        return self._guardrail_run(self._guardrail_required(kwargs, self._guardrail_methods.result), kwargs)

    @overload
    def create_partial(self, *, response_model: type[T], **kwargs: Any) -> AsyncStructuredStream[T]: ...
    @overload
    def create_partial(self, *, response_model: TypeForm, **kwargs: Any) -> AsyncStructuredStream[Any]: ...
    def create_partial(self, **kwargs: Any) -> Any:
        """Stream previews with ``async for``, then the validated value; ``.result`` after the loop (no cache, as
        :meth:`StructuredMethod.create_partial`). The stream may be awaited first (``async for item in await
        ...``), as the SDK's own stream method is (Gemini's ``generate_content_stream``)."""
        name = self._guardrail_methods.partial
        options = CallOptions.take(kwargs, name)
        if options is None:
            return self._guardrail_plain(name, kwargs)
        return self._guardrail_stream(options, kwargs)

    def _guardrail_stream(self, options: CallOptions, kwargs: dict[str, Any]) -> AsyncStructuredStream[Any]:
        refuse(options, self._guardrail_methods.partial)
        call = self._guardrail_call(options, self.endpoint.streaming(kwargs))
        return AsyncStructuredStream(iterate_async(call, self._guardrail_send(), previews=True))

    @overload
    def create_iterable(self, *, response_model: type[T], **kwargs: Any) -> AsyncItemStream[T]: ...
    @overload
    def create_iterable(self, *, response_model: TypeForm, **kwargs: Any) -> AsyncItemStream[Any]: ...
    def create_iterable(self, **kwargs: Any) -> Any:
        """The items of a list of ``response_model`` with ``async for``, each as soon as it is complete and
        validated; ``.result`` after the loop (as :meth:`StructuredMethod.create_iterable`)."""
        return self._guardrail_items(self._guardrail_required(kwargs, self._guardrail_methods.iterable), kwargs)

    def _guardrail_items(self, options: CallOptions, kwargs: dict[str, Any]) -> AsyncItemStream[Any]:
        refuse(options, self._guardrail_methods.iterable)  # reasoning first is for a whole answer
        streamed = self.endpoint.streaming(kwargs)
        run = ListRun(options.response_model, options, lambda given: self._guardrail_call(given, dict(streamed)))
        return AsyncItemStream(run, self._guardrail_send())

    if TYPE_CHECKING:
        @property
        def with_raw_response(self) -> AsyncRawStructuredMethod: ...


# -- the client view structured calls send through -----------------------------------------------------------------
# guardrail retries transport failures itself (RetryPolicy), so its requests must not be retried by the SDK too. The
# view is an instance of a subclass of the wrapped client's class that *shares* the client's state (its
# ``__dict__``): ``base_url``, ``timeout``, headers, the HTTP client, a monkeypatched method, all are the live
# client's, read when the request is built. Only ``max_retries`` differs: a property of the view's class that reads
# 0. Nothing is copied and the SDK's constructor is not run again, so a client the SDK accepted is always one
# guardrail can send through. The view never makes the SDK's cached resources (``client.models``, ...): those would
# be stored in the shared ``__dict__`` and seen by the client itself. Only the resources structured calls send
# through are made on it, by :func:`quiet_resource`, and kept on the view.

class _NoRetries:
    """The view's part: ``max_retries`` reads 0 (a data descriptor, so it wins over the shared ``__dict__``)."""

    __slots__ = ()

    @property
    def max_retries(self) -> int:
        return 0


_CLASSES: dict[type, type] = {}
_LOCK = threading.Lock()


def _view_class(client_class: type) -> type:
    found = _CLASSES.get(client_class)
    if found is None:
        made = type(client_class.__name__, (_NoRetries, client_class), {
            "__module__": __name__, "__qualname__": client_class.__qualname__, "__slots__": ("_guardrail_resources",)})
        with _LOCK:
            found = _CLASSES.setdefault(client_class, made)
    return found


def _view(client: Any) -> Any:
    view: Any = object.__new__(_view_class(type(client)))
    view.__dict__ = client.__dict__  # the same state, not a copy: every option is read live
    view._guardrail_resources = {}
    return view


def quiet_resource(resource: Any, views: dict[str, Any]) -> Any:
    """The SDK's resource of ``resource``'s class (a guardrail resource of a wrapped client) on the client's view
    without SDK retries: its ``create`` and its ``with_raw_response``/``with_streaming_response`` twins are the
    SDK's own, sending the same requests to the same server, never retried by the SDK. ``views`` is the wrapped
    client's own store (its :class:`~guardrail.call.options.ClientOptions` ``resources``), so a view lives as long
    as the wrapper.
    """
    client = getattr(resource, "_client", None)
    if client is None or not hasattr(client, "max_retries"):
        # an SDK whose client has no max_retries (google-genai: each request says how it is retried, and the
        # endpoint's sender says "never"): the SDK's own resource on the same state
        sdk = type(resource)._guardrail_sdk
        key = f"_plain.{sdk.__module__}.{sdk.__qualname__}"
        plain = views.get(key)
        if plain is None:
            plain = object.__new__(sdk)
            plain.__dict__ = resource.__dict__
            plain = views.setdefault(key, plain)
        return plain
    view = views.get("_quiet")
    if view is None:
        view = views.setdefault("_quiet", _view(client))
    made: dict[type, Any] = view._guardrail_resources
    found = made.get(type(resource))
    if found is None:  # the SDK's own resource class: what is sent through it is the SDK's call, nothing more
        found = made.setdefault(type(resource), type(resource)._guardrail_sdk(view))
    return found


class Twin:
    """The SDK's ``with_raw_response``/``with_streaming_response`` twin of a guardrail resource (or client).

    The SDK's twin takes the resource it flavors; guardrail keeps it as ``_guardrail_of`` so its own members
    are the same flavor of the resource's guardrail members.
    """

    def __init__(self, of: Any) -> None:
        cast(Any, super()).__init__(of)
        self._guardrail_of = of


class MethodTwin(Twin):
    """A twin at a structured resource: the SDK sets its flavored ``create`` on the instance; guardrail keeps it
    as the passthrough and puts its own ``create`` (of the class) in front."""

    def __init__(self, of: Any) -> None:
        super().__init__(of)
        self._guardrail_sdk_create: Callable[..., Any] = self.__dict__.pop("create")


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


class RawStructuredMethod(MethodTwin):
    """``create`` under ``with_raw_response``: with ``response_model``, a :class:`RawStructured`."""

    @overload
    def create(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def create(self, *, response_model: type[T], **kwargs: Any) -> RawStructured[T]: ...
    @overload
    def create(self, *, response_model: TypeForm, **kwargs: Any) -> RawStructured[Any]: ...
    def create(self, **kwargs: Any) -> Any:
        """The SDK's raw-response ``create``; with ``response_model`` the value and the raw responses (always from
        the vendor: this flavor exists for the HTTP responses, so it does not use the response cache)."""
        options = CallOptions.take(kwargs)
        if options is None:
            return self._guardrail_sdk_create(**kwargs)
        refuse(options, "with_raw_response.create")
        resource: StructuredMethod = self._guardrail_of
        call = resource._guardrail_call(options, kwargs)
        responses: list[Any] = []
        send = resource._guardrail_quiet().with_raw_response.create

        def parsed(**request: Any) -> Any:
            response = send(**request)
            responses.append(response)
            return response.parse()

        return RawStructured(run_sync(call, parsed), responses)


class AsyncRawStructuredMethod(MethodTwin):
    """``create`` under ``with_raw_response`` of an async client: an awaitable :class:`RawStructured`."""

    @overload
    def create(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def create(self, *, response_model: type[T], **kwargs: Any) -> Coroutine[Any, Any, RawStructured[T]]: ...
    @overload
    def create(self, *, response_model: TypeForm, **kwargs: Any) -> Coroutine[Any, Any, RawStructured[Any]]: ...
    def create(self, **kwargs: Any) -> Any:
        """The SDK's raw-response ``create``; with ``response_model`` an awaitable of the value and the responses
        (never from the response cache)."""
        options = CallOptions.take(kwargs)
        if options is None:
            return self._guardrail_sdk_create(**kwargs)
        refuse(options, "with_raw_response.create")
        resource: AsyncStructuredMethod = self._guardrail_of
        return self._structured(resource, resource._guardrail_call(options, kwargs))

    async def _structured(self, resource: AsyncStructuredMethod, call: Call) -> RawStructured[Any]:
        responses: list[Any] = []
        send: Callable[..., Any] = resource._guardrail_quiet().with_raw_response.create

        async def parsed(**request: Any) -> Any:
            response = await send(**request)
            responses.append(response)
            value = response.parse()  # openai's raw response parses synchronously, anthropic's is awaited
            return await value if inspect.isawaitable(value) else value

        return RawStructured(await run_async(call, parsed), responses)


class StreamingResponseMethod(MethodTwin):
    """``create`` under ``with_streaming_response``: the SDK's own call; ``response_model=`` is refused."""

    def create(self, *, response_model: None = None, **kwargs: Any) -> Any:
        """The SDK's streaming-response ``create`` (a context manager), unchanged."""
        if response_model is not None or CallOptions.take(kwargs) is not None:
            _refuse("create")
        return self._guardrail_sdk_create(**kwargs)

    def create_with_result(self, **kwargs: Any) -> NoReturn:
        """Refused: see :meth:`create`."""
        _refuse("create_with_result")

    def create_partial(self, **kwargs: Any) -> NoReturn:
        """Refused: see :meth:`create`."""
        _refuse("create_partial")

    def create_iterable(self, **kwargs: Any) -> NoReturn:
        """Refused: see :meth:`create`."""
        _refuse("create_iterable")


def _refuse(name: str) -> NoReturn:
    raise UnsupportedCall(
        f"{name}(response_model=...) is not available under with_streaming_response: it exists to leave the "
        "response body unread, and a validated value needs all of it. Use with_raw_response.create(...) for the "
        "value with the HTTP response (headers, status), or create_partial(...) for previews as the answer "
        "streams in")


# -- for callers that build the options themselves (the decorator, the chain's vendor tiers) ----------------------
def run_with_result(method: StructuredMethod | AsyncStructuredMethod, options: CallOptions,
                    kwargs: dict[str, Any]) -> Any:
    """``method.create_with_result`` with guardrail's options given as one value: the :class:`~guardrail.Result`
    (an awaitable of it on an async client). ``kwargs`` are the SDK keywords only."""
    return method._guardrail_run(options, kwargs)


def run_iterable(method: StructuredMethod | AsyncStructuredMethod, options: CallOptions,
                 kwargs: dict[str, Any]) -> Any:
    """``method.create_iterable`` with guardrail's options given as one value (``response_model`` the item type):
    the stream of the list's items (:class:`~guardrail.call.iterable.ItemStream`, or its async twin)."""
    return method._guardrail_items(options, kwargs)


def run_partial(method: StructuredMethod | AsyncStructuredMethod, options: CallOptions, kwargs: dict[str, Any]) -> Any:
    """``method.create_partial`` with guardrail's options given as one value: a stream of previews, then the
    value (:class:`~guardrail.call.streaming.StructuredStream`, or its async twin on an async client)."""
    return method._guardrail_stream(options, kwargs)
