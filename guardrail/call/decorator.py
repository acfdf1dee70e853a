"""``@guardrail.structured``: a function whose return annotation is the contract and whose body is the model.

The function's body is never run. Its docstring and the call's arguments make the prompt, the wrapped vendor
client runs the same attempt loop as ``guardrail.wrap``, and the call returns the validated value (or raises
the same typed errors)::

    @guardrail.structured(model="gpt-4o-mini")
    def triage(inquiry: str, customer_tier: str) -> Ticket:
        \"\"\"Triage a customer inquiry: urgency 1-5, a category, a one-line summary.\"\"\"

    ticket = triage("My parcel is two weeks late", customer_tier="gold")

The prompt template (``default_prompt``), one system and one user message:

* system: ``You compute the return value of the function `triage`.`` then the docstring, then
  ``Reply with that value only.``
* user: one line per argument, ``name = <JSON of the value>`` (pydantic models and dataclasses as JSON
  objects; ``self``/``cls`` left out).

``output=`` gives the contract explicitly instead of the return annotation: a type, or a JSON Schema ``dict``
(the value is then plain JSON data). ``prompt=`` replaces the user message: a callable taking the function's
arguments by name and returning a string. ``async def`` functions use the configured ``async_client`` and
return awaitables. Decorated functions also have ``.with_result(...)`` (the :class:`~guardrail.Result`),
``.stream(...)`` (partial previews, then the value) and ``.iterate(...)`` (a list's items, each as soon as it is
complete and validated: :mod:`guardrail.call.iterable`).

``cache=`` (a :class:`~guardrail.call.cache.Cache`, else the configured one; ``False``: none) answers repeated
calls from a response cache, and ``version=`` is the prompt's version in its key: bump it when the prompt's
meaning changes in a way the request text does not show (a ``prompt=`` function's logic, say).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, ParamSpec, TypeVar, overload

from pydantic_core import to_jsonable_python

from guardrail.call.cache import Cache
from guardrail.call.chunked import Chunking, function_chunked
from guardrail.call.client import WrappedClient, structured_method, wrap
from guardrail.call.config import Config, get_config
from guardrail.call.examples import checked
from guardrail.call.iterable import item_type_of
from guardrail.call.methods import run_iterable, run_partial, run_with_result
from guardrail.call.options import CallOptions
from guardrail.errors import UsageError
from guardrail.gates.semantic import Rule
from guardrail.outcome import Budget
from guardrail.vendors.profiles import Mode

P = ParamSpec("P")
R = TypeVar("R")
_SKIP = frozenset({"self", "cls"})


def default_prompt(name: str, doc: str, arguments: Mapping[str, Any]) -> tuple[str, str]:
    """The default (system, user) messages for a call of function ``name`` with ``arguments``."""
    system = f"You compute the return value of the function `{name}`.\n{doc}\nReply with that value only.".replace(
        "\n\n", "\n")
    user = "\n".join(f"{key} = {json.dumps(to_jsonable_python(value, fallback=str), ensure_ascii=False)}"
                     for key, value in arguments.items())
    return system, user or "(no arguments)"


class StructuredFunction(Generic[P, R]):
    """What ``@structured`` returns: call it like the function; ``with_result``/``stream`` give more."""

    def __init__(self, fn: Callable[P, R], config: Config | None, overrides: dict[str, Any],
                 prompt: Callable[..., str] | None, instance: Any = None, rules: Sequence[Rule] = (),
                 context: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None, *,
                 output: Any = None, version: str | None = None, chunking: Chunking | None = None,
                 examples: Sequence[Any] = (), reason_first: Any = None) -> None:
        functools.update_wrapper(self, fn)
        self._chunking = chunking
        self._reason_first = reason_first
        self._output = output
        self._version = version
        self._rules = tuple(rules)
        self._context = context
        self._fn = fn
        self._config = config
        self._overrides = overrides
        self._prompt = prompt
        self._instance = instance
        self._is_async = inspect.iscoroutinefunction(fn)
        self._signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
        if output is None and ("return" not in hints or hints["return"] is type(None)):
            raise UsageError(f"@structured needs a return annotation (or output=) on {fn.__qualname__}: "
                            "it is the contract")
        self.output_type: Any = hints["return"] if output is None else output
        checked(self.output_type, examples)  # an invalid example fails here, when the function is decorated
        self._examples = tuple(examples)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        result = self.with_result(*args, **kwargs)
        if self._is_async:
            return self._value_async(result)  # type: ignore[return-value]
        return result.value  # type: ignore[no-any-return]

    async def _value_async(self, pending: Any) -> Any:
        return (await pending).value

    def with_result(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Like calling the function, but returns the :class:`~guardrail.Result` (async: an awaitable of it);
        with a ``chain``, the :class:`~guardrail.chain.tiers.ChainResult` (which tier, why earlier ones were left)."""
        base = self._config or get_config()
        chain = self._overrides.get("chain") or base.chain
        config = self._merged(base)
        if chain is None:
            chain = self._local_chain(config)
        if self._chunking is not None:  # a long list in chunks (guardrail.call.chunked): a ChunkedResult
            return function_chunked(self, self._chunking, chain, config, args, kwargs)
        if chain is not None:
            system, user, arguments = self._prompt_parts(args, kwargs)
            context = self._context() if callable(self._context) else self._context
            cached = self._overrides.get("cache") is not False  # the chain's vendor tiers hold the caches
            if self._is_async:  # async tiers awaited, sync ones in a worker thread
                return chain.arun(self.output_type, system=system, user=user, inputs=arguments, context=context,
                                  rules=self._rules, prompt_version=self._version, cache=cached,
                                  examples=self._examples, reason_first=self._reason_first)
            return chain.run(self.output_type, system=system, user=user, inputs=arguments, context=context,
                             rules=self._rules, prompt_version=self._version, cache=cached, examples=self._examples,
                             reason_first=self._reason_first)
        method, options, request = self._request(args, kwargs, config)
        return run_with_result(method, options, request)

    def _merged(self, base: Config | None = None) -> Config:
        """The configuration for this call: the decorator's overrides over the given (or global) one."""
        config = (base or self._config or get_config()).merge(
            **{k: v for k, v in self._overrides.items() if k not in ("chain", "cache")})
        cache = self._overrides.get("cache")
        if cache is False:
            return dataclasses.replace(config, cache=None)
        return config.merge(cache=cache)

    def _local_chain(self, config: Config) -> Any:
        """A one-tier chain when the configured client is a :class:`guardrail.local.LocalModel`, else None.

        The configured ``max_tokens`` bounds the local model's new tokens (512 when unset)."""
        from guardrail.chain.tiers import Chain, is_local_model, local

        raw = config.async_client if self._is_async else config.client
        if raw is None and self._is_async:
            raw = config.client  # a local model serves async functions too (run in a worker thread)
        if raw is None or not is_local_model(raw):
            return None
        return Chain([local(raw, max_new_tokens=config.max_tokens or 512)])

    def _prompt_parts(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        """(system, user, arguments by name) for a call: the documented template, or ``prompt=``."""
        bound = self._signature.bind(*((self._instance,) if self._instance is not None else ()), *args, **kwargs)
        bound.apply_defaults()
        arguments = {k: v for k, v in bound.arguments.items() if k not in _SKIP}
        name = self._fn.__qualname__.rsplit("<locals>.", 1)[-1]
        system, user = default_prompt(name, inspect.getdoc(self._fn) or "", arguments)
        if self._prompt is not None:
            user = self._prompt(**arguments)
        return system, user, arguments

    def stream(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Stream previews, then the value: a :class:`~guardrail.call.StructuredStream` (async: ``async for``)."""
        if self._chunking is not None:
            raise UsageError("a chunked function has no preview stream: each chunk is its own call (call the "
                            "function, or with_result, for the whole list)")
        config = self._merged()
        if self._local_chain(config) is not None:
            raise UsageError("streaming previews need a vendor client; a LocalModel client has no preview stream "
                            "(call the function for the value)")
        method, options, request = self._request(args, kwargs, config)
        return run_partial(method, options, request)

    def iterate(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """The items of the answer, each as soon as it is complete and validated: an
        :class:`~guardrail.call.iterable.ItemStream` (async: ``async for``) of ``X`` for a ``list[X]`` contract
        (any other contract is the item type); ``.result`` after the loop (:mod:`guardrail.call.iterable`). The
        items of a ``list[X]`` function's ``examples`` (lists) are shown to the model as the item examples."""
        config = self._merged()
        if self._local_chain(config) is not None:
            raise UsageError("iterate() needs a vendor client; a LocalModel client has no stream of items "
                             "(call the function for the value)")
        method, options, request = self._request(args, kwargs, config)
        item_type = item_type_of(self.output_type)
        examples = self._examples  # a list contract's examples are lists: their items are the item examples
        if item_type is not self.output_type:
            examples = tuple(item for example in examples for item in example)
        items = dataclasses.replace(options, response_model=item_type, examples=examples)
        return run_iterable(method, items, request)

    def _request(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                 config: Config) -> tuple[Any, CallOptions, dict[str, Any]]:
        """The wrapped SDK method to call, guardrail's options and the SDK keywords, from the configuration and
        the call's arguments."""
        raw = config.async_client if self._is_async else config.client
        if raw is None:
            kind = "async_client" if self._is_async else "client"
            raise UsageError(f"no {kind} configured for {self._fn.__qualname__}: pass {kind}= to @structured or call "
                            "guardrail.configure(...), or set OPENAI_API_KEY / ANTHROPIC_API_KEY")
        client: WrappedClient = wrap(raw, server=config.server, settings=config.settings, retry=config.retry,
                                     cache=config.cache)
        system, user, _ = self._prompt_parts(args, kwargs)
        context = self._context() if callable(self._context) else self._context
        options = CallOptions(self.output_type, aliases=config.aliases, max_attempts=config.max_attempts,
                              mode=config.mode, budget=config.budget, rules=self._rules, context=context,
                              prompt_version=self._version, recorder=_recorder(config.record),
                              examples=self._examples, reason_first=self._reason_first)
        method = structured_method(client, config.api)
        return method, options, {"model": config.model,
                                 **method.endpoint.prompt_request(system, user, max_tokens=config.max_tokens)}

    def using(self, **overrides: Any) -> StructuredFunction[P, R]:
        """This function with some of :func:`structured`'s keywords (``client``, ``model``, ``mode``,
        ``max_tokens``...) replaced; ``None`` keeps the decorator's own. ``guardrail eval --function`` runs one
        function under several models and modes this way."""
        unknown = sorted(set(overrides) - (set(self._overrides) - {"record"}))
        if unknown:
            raise UsageError(f"using() takes {', '.join(sorted(set(self._overrides) - {'record'}))}, not "
                             f"{', '.join(unknown)}")
        given = {key: value for key, value in overrides.items() if value is not None}
        return self._rebuilt({**self._overrides, **given}, self._instance)

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        """Bind to an instance like a method does (``self`` is not part of the prompt)."""
        if instance is None:
            return self
        return self._rebuilt(self._overrides, instance)

    def _rebuilt(self, overrides: dict[str, Any], instance: Any) -> StructuredFunction[P, R]:
        """This function with other keyword overrides or bound to ``instance``, everything else kept."""
        return StructuredFunction(self._fn, self._config, overrides, self._prompt, instance, self._rules,
                                  self._context, output=self._output, version=self._version,
                                  chunking=self._chunking, examples=self._examples, reason_first=self._reason_first)


def _recorder(record: Any) -> Any:
    """The recorder ``record=`` (or the configuration's ``record``) names, or None."""
    if record is None:
        return None
    from guardrail.replay.record import recorder_for

    return recorder_for(record)


@overload
def structured(fn: Callable[P, R], /) -> StructuredFunction[P, R]: ...
@overload
def structured(*, config: Config | None = None, client: Any = None, async_client: Any = None,
               model: str | None = None, api: str | None = None, prompt: Callable[..., str] | None = None,
               aliases: Mapping[str, str] | None = None, max_attempts: int | None = None,
               budget: Budget | None = None, mode: Mode | None = None, max_tokens: int | None = None,
               rules: Sequence[Rule] = (),
               context: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
               chain: Any = None, output: Any = None, cache: Cache | bool | None = None,
               version: str | None = None, record: Any = None, chunking: Chunking | None = None,
               examples: Sequence[Any] = (), reason_first: Any = None
               ) -> Callable[[Callable[P, R]], StructuredFunction[P, R]]: ...
def structured(fn: Any = None, /, *, config: Config | None = None, client: Any = None, async_client: Any = None,
               model: str | None = None, api: str | None = None, prompt: Callable[..., str] | None = None,
               aliases: Mapping[str, str] | None = None, max_attempts: int | None = None,
               budget: Budget | None = None, mode: Mode | None = None, max_tokens: int | None = None,
               rules: Sequence[Rule] = (),
               context: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None, chain: Any = None,
               output: Any = None, cache: Cache | bool | None = None, version: str | None = None,
               record: Any = None, chunking: Chunking | None = None,
               examples: Sequence[Any] = (), reason_first: Any = None) -> Any:
    """Turn a typed function signature into a validated model call (see the module docstring).

    Keywords override the configuration (:func:`guardrail.configure`, or the environment) for this function
    only; ``config=`` replaces the configuration it starts from. ``rules`` are semantic rules every answer must
    meet; ``context`` (a mapping, or a callable giving one per call) is the runtime facts they read.
    ``chain`` (a :class:`guardrail.chain.tiers.Chain`) replaces the single client with a degradation chain.
    ``output`` is the contract when the return annotation is not (a JSON Schema ``dict``, say).
    ``cache`` is the response cache (:class:`~guardrail.call.cache.Cache`; the configured one when unset, none
    with ``False``; with a ``chain``, its vendor tiers hold the caches and ``False`` turns them off for this
    function) and ``version`` the prompt's version, part of the cache key. ``record`` records every call for
    replay (a JSONL file path or a :class:`~guardrail.replay.Recorder`; with a ``chain``, give it to the chain).
    ``chunking`` (a :class:`~guardrail.call.chunked.Chunking`) asks for a ``list[...]`` return value in chunks
    (:mod:`guardrail.call.chunked`); ``with_result`` then gives the :class:`~guardrail.call.chunked.ChunkedResult`.
    ``examples`` are few-shot examples, valid values of the contract shown to the model with the instructions
    (:mod:`guardrail.call.examples`): an invalid one raises :class:`~guardrail.errors.InvalidExample` when the
    function is decorated.
    ``reason_first`` (``"two_stage"``, ``"field"`` or a :class:`~guardrail.call.reasoning.Reasoning`) has the model
    reason before it answers; ``.with_result(...)`` then holds the text as ``.reasoning``.
    """
    if cache is True:
        raise UsageError("cache= takes a guardrail Cache(...), False for none, or None for the configured one")
    overrides = {"client": client, "async_client": async_client, "model": model, "api": api, "aliases": aliases,
                 "max_attempts": max_attempts, "budget": budget, "mode": mode, "max_tokens": max_tokens,
                 "chain": chain, "cache": cache, "record": _recorder(record)}

    def decorate(function: Callable[P, R]) -> StructuredFunction[P, R]:
        return StructuredFunction(function, config, overrides, prompt, None, rules, context, output=output,
                                  version=version, chunking=chunking, examples=examples,
                                  reason_first=reason_first)

    return decorate(fn) if fn is not None else decorate
