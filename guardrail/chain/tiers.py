"""The degradation chain: primary vendor → backup vendor → self-hosted → rule engine → safe default.

A :class:`Chain` is an ordered list of tiers held to one contract. Each vendor tier runs guardrail's whole
attempt loop (its own mode, lowered schema, retries); a tier is *left* for the next one on a fault — transport
failure after retries, an open circuit breaker, validation or semantic failure after its attempts, truncation
at the token ceiling, a schema the vendor cannot take, the deadline running out — and *never* on an answer:
a refusal (:class:`~guardrail.Refused`), a typed non-answer (:class:`~guardrail.errors.Declined`) or an
authorization denial ends the call as it is. The result records which tier produced the value and why each
earlier tier was left; if every tier fails, :class:`ChainExhausted` carries every tier's failure.

The request is given once, vendor-neutrally: a system text, a user text and the call's inputs (a dict, for
the rule engine). The decorator builds exactly that (``@structured(chain=...)``); ``Chain.run`` takes it
directly. The deadline and the budget cover the whole chain: each tier gets what the earlier ones left, and
the deadline is wall-clock (a vendor answer still arriving when it passes is cut off).

A vendor tier runs the wrapper's structured call with the chain's :class:`~guardrail.call.options.CallOptions`
(the contract, rules, context, prompt version, cache choice), to which it adds its own attempts, mode, share of
the budget and the deadline the chain has left: the client is wrapped once, when the tier is made.

Sync and async: ``chain.run(...)`` for sync code, ``await chain.arun(...)`` for async code. Both step one
I/O-free core (``_walk``) that decides everything, with :func:`~guardrail.store.idempotency.advance` like every
I/O-free protocol of guardrail; ``arun`` awaits async tiers (vendors over ``AsyncOpenAI``/``AsyncAnthropic``) and
runs sync tiers in a worker thread, and the two drivers differ only in that ``await``. ``run`` refuses a chain with
an async tier (:class:`~guardrail.errors.SyncAsyncMismatch`) before sending anything, and no tier's value is ever
an un-awaited coroutine.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from guardrail.call.cache import Cache
from guardrail.call.chunked import ChunkedResult, Chunking, chain_chunked
from guardrail.call.client import WrappedClient, structured_method, wrap
from guardrail.call.examples import checked, examples_prompt
from guardrail.call.methods import run_with_result
from guardrail.call.options import CallOptions, RetryPolicy
from guardrail.chain.breaker import CircuitBreaker, SharedCircuitBreaker
from guardrail.errors import (
    CallError,
    ChainExhausted,
    ConfigError,
    Declined,
    Denied,
    GuardrailError,
    Refused,
    SyncAsyncMismatch,
    UsageError,
)
from guardrail.gates.semantic import Rule, evaluate
from guardrail.observe import metrics
from guardrail.observe.telemetry import tier_span
from guardrail.outcome import Budget, Outcome, Result, Usage
from guardrail.store.idempotency import advance
from guardrail.vendors.openai_chat import split_messages
from guardrail.vendors.registry import sdk_of

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Request:
    """One call, vendor-neutral: what every tier gets.

    ``system`` and ``user`` are the prompt, ``inputs`` the call's inputs by name (the rule engine's). ``options``
    are guardrail's options of the call (:class:`~guardrail.call.options.CallOptions`): the contract, the rules
    (the chain's and the call's), the context, the budget the earlier tiers left, the prompt's version and
    whether to use the response caches, with the chain's own cache (``Chain(cache=...)``) as the one for vendor
    tiers that have none. A vendor tier passes them on; every tier reads them through the properties below.
    """

    system: str
    user: str
    inputs: Mapping[str, Any]
    options: CallOptions

    @property
    def output_type(self) -> Any:
        """The contract."""
        return self.options.response_model

    @property
    def context(self) -> Mapping[str, Any]:
        """The runtime facts the rules read."""
        return self.options.context or {}

    @property
    def rules(self) -> Sequence[Rule]:
        """The semantic rules every tier's value must meet."""
        return self.options.rules

    @property
    def budget(self) -> Budget | None:
        """What the chain's budget has left for this tier."""
        return self.options.budget

    @property
    def prompt_version(self) -> str | None:
        """The prompt's version, part of the vendor tiers' cache keys."""
        return self.options.prompt_version

    @property
    def cache(self) -> bool:
        """``False``: the vendor tiers skip their response caches for this call."""
        return self.options.cache


@dataclass
class Tier:
    """One tier. Make them with :func:`vendor`, :func:`local`, :func:`rule_engine` and :func:`safe_default`.

    ``run(request, seconds_left)`` produces the value synchronously; ``arun`` (optional) is its async twin,
    which :meth:`Chain.arun` awaits. A tier with only ``arun`` (a vendor over ``AsyncOpenAI`` or
    ``AsyncAnthropic``) cannot serve :meth:`Chain.run`; one with only ``run`` is run in a worker thread by
    :meth:`Chain.arun`. A coroutine function given as ``run`` is taken as ``arun``.
    """

    name: str
    kind: str
    run: Callable[[Request, float | None], Any] | None
    breaker: CircuitBreaker | None = None
    arun: Callable[[Request, float | None], Awaitable[Any]] | None = None

    def __post_init__(self) -> None:
        if self.arun is None and inspect.iscoroutinefunction(self.run):
            self.run, self.arun = None, self.run
        if self.run is None and self.arun is None:
            raise ConfigError(f"tier {self.name!r} needs run (sync) or arun (async)")


@dataclass(frozen=True, slots=True)
class Departure:
    """Why the chain left a tier: the tier's name and the error (its ``.outcome`` when it was a vendor call)."""

    tier: str
    reason: str
    error: BaseException


@dataclass(frozen=True, slots=True)
class ChainResult(Generic[T]):
    """The value, the tier that produced it, and why each earlier tier was left.

    ``degraded`` is true when a rule engine or safe default produced the value; ``notice`` is then the
    user-facing sentence to show (e.g. "AI analysis is temporarily unavailable; an empty draft was created").
    ``detail`` is the tier's own record: a :class:`~guardrail.Result`, the rules that fired, or ``None``.
    """

    value: T
    tier: str
    departures: tuple[Departure, ...]
    degraded: bool = False
    notice: str | None = None
    detail: Any = None
    seconds: float = 0.0

    @property
    def reasoning(self) -> str | None:
        """What the model reasoned before answering (a tier asked to reason first), else ``None``."""
        return self.detail.reasoning if isinstance(self.detail, Result) else None


class _Degraded:
    """Marks a tier's value as degraded (rule engine, safe default), with its notice and detail."""

    def __init__(self, value: Any, notice: str | None, detail: Any) -> None:
        self.value, self.notice, self.detail = value, notice, detail


#: Errors that are answers (or a caller's mistake), never faults: they end the chain as they are.
_ANSWERS: tuple[type[BaseException], ...] = (Refused, Declined, Denied, SyncAsyncMismatch)


@dataclass(frozen=True, slots=True)
class _Step:
    """Effect of the chain's core: run ``tier`` for ``request`` with ``left`` seconds (``None``: no deadline)."""

    tier: Tier
    request: Request
    left: float | None


#: What a driver sends back for a step: the tier's product, or the exception it raised (thrown into the core).
_Reply = tuple[Any, BaseException | None]


def _walk(chain: Chain, request: Request) -> Generator[_Step, Any, ChainResult[Any]]:
    """The chain's I/O-free core, shared by :meth:`Chain.run` and :meth:`Chain.arun`: which tier next, with how
    much time and budget, what its outcome means (value, departure, or an answer that ends the chain), and the
    breakers' accounting. The drivers only run the tiers it yields, each in its own way."""
    started = time.monotonic()
    departures: list[Departure] = []
    used = Usage()
    spent: float | None = 0.0  # US dollars the failed tiers cost (None: a price was unknown)
    for tier in chain.tiers:
        if chain.budget is not None:
            request = replace(request, options=replace(request.options, budget=_remaining(chain.budget, used, spent)))
        left = None if chain.deadline is None else chain.deadline - (time.monotonic() - started)
        if left is not None and left <= 0 and tier.kind in ("vendor", "local"):
            departures.append(Departure(tier.name, "deadline", TimeoutError("no time left for this tier")))
            continue
        if tier.breaker is not None and not tier.breaker.allow():
            departures.append(Departure(tier.name, "circuit open", RuntimeError("circuit breaker is open")))
            continue
        error: Exception | None = None
        try:
            produced = yield _Step(tier, request, left)
        except Exception as raised:  # the tier failed
            produced, error = None, raised
        except BaseException:
            if tier.breaker is not None:
                tier.breaker.release()  # cancelled or interrupted: no verdict on the vendor
            raise
        value: Any = None
        if error is None:
            try:
                value = _judged(tier, produced, request, started)
            except Exception as judged:
                error = judged
        if isinstance(error, SyncAsyncMismatch):
            if tier.breaker is not None:
                tier.breaker.release()  # nothing reached the vendor
            raise error
        if isinstance(error, _ANSWERS):
            if tier.breaker is not None:
                tier.breaker.record(True)  # the vendor worked: refusing is an answer, not a fault
            raise error
        if error is not None:
            if tier.breaker is not None:
                if isinstance(error, CallError) and error.outcome.vendor_calls == 0:
                    tier.breaker.release()  # stopped before any request (budget): not the vendor's fault
                else:
                    tier.breaker.record(False)
            if isinstance(error, CallError):
                used = used + error.outcome.usage
                if chain.budget is not None and chain.budget.max_usd is not None and spent is not None:
                    cost = error.outcome.cost_usd
                    spent = None if cost is None else spent + cost
            departures.append(Departure(tier.name, _reason(error), error))
            continue
        if tier.breaker is not None:
            tier.breaker.record(True)
        degraded = isinstance(produced, _Degraded)
        metrics.chain_result(tier.name, tier.kind, degraded)
        return ChainResult(value, tier.name, tuple(departures), degraded,
                           produced.notice if degraded else None,
                           produced.detail if degraded else produced if isinstance(produced, Result) else None,
                           time.monotonic() - started)
    raise ChainExhausted(departures)


def _judged(tier: Tier, produced: Any, request: Request, started: float) -> Any:
    """The value a tier produced, held to the chain's rules (vendor tiers met them inside their own loop)."""
    if inspect.isawaitable(produced):
        if inspect.iscoroutine(produced):
            produced.close()  # never left un-awaited
        raise SyncAsyncMismatch(f"tier {tier.name!r} returned an awaitable from its sync run; give an async "
                                "function as the tier's arun and call `await chain.arun(...)`")
    value = produced.value if isinstance(produced, (_Degraded, Result)) else produced
    if not request.rules or tier.kind == "vendor":
        return value
    verdict = evaluate(request.rules, value, request.context)
    if verdict.declined is not None:  # a typed non-answer, as from a vendor
        raise Declined(verdict.declined, value=value, outcome=_tier_outcome(tier, started))
    if not verdict.ok:
        raise GuardrailError(f"the {tier.kind} tier's value broke the rules: "
                             + "; ".join(f"{v.path}: {v.message}" for v in verdict.violations))
    return value


async def _run_on_the_loop(step: _Step) -> Any:
    """How the async driver runs a tier: an async tier awaited, a sync one in a worker thread."""
    if step.tier.arun is not None:
        return await step.tier.arun(step.request, step.left)
    return await asyncio.to_thread(step.tier.run, step.request, step.left)  # type: ignore[arg-type]


@dataclass
class Chain:
    """Tiers tried in order for one contract, within one ``deadline`` (seconds for the whole chain).

    :meth:`run` serves sync code; ``await`` :meth:`arun` serves async code (async tiers awaited, sync tiers in a
    worker thread). Both walk the same core, so a tier is left, kept or refused for the same reasons.
    """

    tiers: Sequence[Tier]
    deadline: float | None = 60.0
    rules: Sequence[Rule] = field(default_factory=tuple)
    #: Tokens/cost for the whole chain: each vendor tier gets what the earlier tiers left.
    budget: Budget | None = None
    #: A response cache for the vendor tiers that have none of their own (``vendor(..., cache=...)``).
    cache: Cache | None = None
    #: Where the vendor tiers' calls are recorded for replay (a JSONL file path or a
    #: :class:`~guardrail.replay.Recorder`, :mod:`guardrail.replay`); off when unset.
    record: Any = None
    #: Reasoning first for every call of the chain (``"two_stage"``, ``"field"``, a
    #: :class:`~guardrail.call.reasoning.Reasoning`); ``run``/``arun`` may set it per call.
    reason_first: Any = None

    def __post_init__(self) -> None:
        # a LocalModel may stand in the list as itself: it becomes a default local tier
        self.tiers = [tier if isinstance(tier, Tier) else local(tier) if is_local_model(tier) else _not_a_tier(tier)
                      for tier in self.tiers]

    def _request(self, output_type: Any, system: str, user: str, inputs: Mapping[str, Any] | None,
                 context: Mapping[str, Any] | None, rules: Sequence[Rule], prompt_version: str | None = None,
                 cache: bool = True, examples: Sequence[Any] = (), reason_first: Any = None) -> Request:
        if isinstance(output_type, Mapping):  # a JSON Schema: its hashable, pydantic-compatible form for every tier
            from guardrail.schema.jsonschema_contract import as_output_type

            output_type = as_output_type(output_type)
        checked(output_type, examples)  # an invalid example fails here, before any tier runs
        recorder = None
        if self.record is not None:
            from guardrail.replay.record import recorder_for

            recorder = recorder_for(self.record)
        options = CallOptions(output_type, rules=(*self.rules, *rules), context=dict(context or {}), cache=cache,
                              prompt_version=prompt_version, response_cache=self.cache, recorder=recorder,
                              examples=tuple(examples),
                              reason_first=self.reason_first if reason_first is None else reason_first)
        return Request(system, user, dict(inputs or {}), options)

    def _from_messages(self, output_type: Any, messages: Sequence[Mapping[str, Any]],
                       inputs: Mapping[str, Any] | None, context: Mapping[str, Any] | None,
                       rules: Sequence[Rule], prompt_version: str | None, cache: bool,
                       examples: Sequence[Any] = ()) -> Request:
        """The request of a call in the wrapper's shape (the user text is the rule engine's input by default)."""
        system, user = split_messages(messages)
        return self._request(output_type, system, user, inputs or {"input": user}, context, rules, prompt_version,
                             cache, examples)

    def _run(self, request: Request) -> ChainResult[Any]:
        """Walk the chain for ``request`` in this thread (every tier's sync ``run``)."""
        for tier in self.tiers:
            if tier.run is None:
                raise SyncAsyncMismatch(f"tier {tier.name!r} is async (an AsyncOpenAI/AsyncAnthropic client or an "
                                        "async function): call `await chain.arun(...)` instead of chain.run(...)")
        walk = _walk(self, request)
        reply: _Reply = (None, None)
        while True:
            finished, step = advance(walk, reply)
            if finished:
                return step  # type: ignore[no-any-return]
            try:
                with tier_span(step.tier.name, step.tier.kind):
                    reply = (step.tier.run(step.request, step.left), None)
            except BaseException as error:  # thrown into the core: a departure, or (interrupted) released
                reply = (None, error)

    async def _arun(self, request: Request) -> ChainResult[Any]:
        """Walk the chain for ``request`` on the event loop (async tiers awaited, sync ones in a worker thread)."""
        walk = _walk(self, request)
        reply: _Reply = (None, None)
        while True:
            finished, step = advance(walk, reply)
            if finished:
                return step  # type: ignore[no-any-return]
            try:
                with tier_span(step.tier.name, step.tier.kind):
                    reply = (await _run_on_the_loop(step), None)
            except BaseException as error:  # thrown into the core: a departure, or (interrupted) released
                reply = (None, error)

    def run(self, output_type: Any, *, system: str, user: str, inputs: Mapping[str, Any] | None = None,
            context: Mapping[str, Any] | None = None, rules: Sequence[Rule] = (), prompt_version: str | None = None,
            cache: bool = True, examples: Sequence[Any] = (), reason_first: Any = None) -> ChainResult[Any]:
        """Produce a value of ``output_type`` from the first tier that can (see the module docstring).

        ``rules`` (with the chain's own) hold every tier to the same semantic gate: vendor tiers get them as
        feedback rules, and the rule engine's and safe default's values are checked by them too. A chain with
        an async tier raises :class:`~guardrail.errors.SyncAsyncMismatch` before calling anything: use :meth:`arun`.
        ``prompt_version`` goes into the vendor tiers' cache keys; ``cache=False`` skips their caches. Only a
        vendor tier's answer is ever cached: a degraded value (rule engine, safe default) never is. ``examples`` are
        few-shot examples, valid values of ``output_type`` shown to the vendor and local tiers
        (:mod:`guardrail.call.examples`): an invalid one raises :class:`~guardrail.errors.InvalidExample` first.
        ``reason_first`` (else the chain's) has vendor and local tiers reason first (:mod:`guardrail.call.reasoning`).
        """
        return self._run(self._request(output_type, system, user, inputs, context, rules, prompt_version, cache,
                                       examples, reason_first))

    async def arun(self, output_type: Any, *, system: str, user: str, inputs: Mapping[str, Any] | None = None,
                   context: Mapping[str, Any] | None = None, rules: Sequence[Rule] = (),
                   prompt_version: str | None = None, cache: bool = True,
                   examples: Sequence[Any] = (), reason_first: Any = None) -> ChainResult[Any]:
        """The async :meth:`run`: async tiers are awaited, sync tiers run in a worker thread (each still within
        the time the chain has left, which its own deadline enforces)."""
        request = self._request(output_type, system, user, inputs, context, rules, prompt_version, cache, examples,
                                reason_first)
        return await self._arun(request)

    def run_chunked(self, output_type: Any, *, chunking: Chunking, system: str, user: str,
                    inputs: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                    prompt_version: str | None = None, cache: bool = True) -> ChunkedResult[Any]:
        """A list (``output_type``: the item or ``list[item]``) asked for in chunks, each chunk walking the
        chain (:mod:`guardrail.call.chunked`): the :class:`~guardrail.call.chunked.ChunkedResult`."""
        request = self._request(output_type, system, user, inputs, context, (), prompt_version, cache)
        return chain_chunked(self, request, chunking)  # type: ignore[no-any-return]

    async def arun_chunked(self, output_type: Any, *, chunking: Chunking, system: str, user: str,
                           inputs: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                           prompt_version: str | None = None, cache: bool = True) -> ChunkedResult[Any]:
        """The async :meth:`run_chunked` (each chunk through :meth:`arun`)."""
        request = self._request(output_type, system, user, inputs, context, (), prompt_version, cache)
        return await chain_chunked(self, request, chunking, asynchronous=True)  # type: ignore[no-any-return]

    def create(self, *, response_model: Any, messages: Sequence[Mapping[str, Any]],
               inputs: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
               rules: Sequence[Rule] = (), prompt_version: str | None = None, cache: bool = True,
               examples: Sequence[Any] = ()) -> Any:
        """The wrapper's call shape: OpenAI-style ``messages`` in, the validated value out (any tier's).

        Use :meth:`create_with_result` for the :class:`ChainResult` (which tier, why earlier ones were left).
        """
        request = self._from_messages(response_model, messages, inputs, context, rules, prompt_version, cache,
                                      examples)
        return self._run(request).value

    def create_with_result(self, *, response_model: Any, messages: Sequence[Mapping[str, Any]],
                           inputs: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                           rules: Sequence[Rule] = (), prompt_version: str | None = None,
                           cache: bool = True, examples: Sequence[Any] = ()) -> ChainResult[Any]:
        """Like :meth:`create`, returning the :class:`ChainResult`."""
        request = self._from_messages(response_model, messages, inputs, context, rules, prompt_version, cache,
                                      examples)
        return self._run(request)

    async def acreate(self, *, response_model: Any, messages: Sequence[Mapping[str, Any]],
                      inputs: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                      rules: Sequence[Rule] = (), prompt_version: str | None = None, cache: bool = True,
                      examples: Sequence[Any] = ()) -> Any:
        """The async :meth:`create` (through :meth:`arun`)."""
        request = self._from_messages(response_model, messages, inputs, context, rules, prompt_version, cache,
                                      examples)
        return (await self._arun(request)).value

    async def acreate_with_result(self, *, response_model: Any, messages: Sequence[Mapping[str, Any]],
                                  inputs: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None,
                                  rules: Sequence[Rule] = (), prompt_version: str | None = None,
                                  cache: bool = True, examples: Sequence[Any] = ()) -> ChainResult[Any]:
        """The async :meth:`create_with_result` (through :meth:`arun`)."""
        request = self._from_messages(response_model, messages, inputs, context, rules, prompt_version, cache,
                                      examples)
        return await self._arun(request)


def _tier_outcome(tier: Tier, started: float) -> Outcome:
    """The record a non-vendor tier's typed non-answer carries (no vendor attempts, no usage)."""
    return Outcome(tier.name, tier.kind, tier.kind, (), Usage(), uuid.uuid4().hex, time.monotonic() - started, "")


def _tighter(first: Budget | None, second: Budget | None) -> Budget | None:
    """The tighter of two budgets, cap by cap (a chain's share and a tier's own)."""
    if first is None or second is None:
        return first or second
    tokens = [b.max_tokens for b in (first, second) if b.max_tokens is not None]
    priced = [b for b in (first, second) if b.max_cost is not None and b.price is not None]
    cheapest = min(priced, key=lambda b: b.max_cost or 0.0) if priced else None
    dollars = [b.max_usd for b in (first, second) if b.max_usd is not None]
    return Budget(min(tokens) if tokens else None, cheapest.max_cost if cheapest else None,
                  cheapest.price if cheapest else None, min(dollars) if dollars else None)


def _remaining(budget: Budget, used: Usage, spent: float | None = 0.0) -> Budget:
    """What ``budget`` leaves after ``used`` tokens and ``spent`` dollars (never negative; an unknown spend
    leaves no dollars: a dollar cap is never assumed kept)."""
    return budget.after(used, spent)


def _reason(error: BaseException) -> str:
    kind = getattr(error, "kind", None)
    name = type(error).__name__
    return f"{name} ({kind})" if isinstance(kind, str) else f"{name}: {str(error)[:120]}"


def vendor(client: Any, model: str, *, name: str | None = None, api: str | None = None,
           max_tokens: int | None = None,
           max_attempts: int | None = None, mode: Any = None, budget: Budget | None = None,
           retry: RetryPolicy | None = None, breaker: CircuitBreaker | None = None,
           server: str | None = None, cache: Cache | None = None) -> Tier:
    """A vendor tier: an OpenAI/Anthropic (or OpenAI-compatible self-hosted) client and a model.

    It runs the full attempt loop; its deadline is the tighter of its own (``retry.deadline``, by default the
    client's timeout) and what the chain has left. A sync client serves :meth:`Chain.run` (and
    :meth:`Chain.arun`, in a worker thread); an ``AsyncOpenAI``/``AsyncAnthropic`` client serves
    :meth:`Chain.arun` only. ``api`` picks the client's API (``"chat"``, ``"responses"``, ``"messages"``; by
    default the client's own default). ``max_tokens`` is the output-token limit per request; unset, the
    endpoint's default applies (none on OpenAI, Anthropic's required limit of 1024). ``cache`` is a response
    cache for this tier's answers (:class:`~guardrail.call.cache.Cache`; default: the chain's ``cache``); the
    chain's request passes ``prompt_version`` and ``cache=False`` on.
    """
    wrapped: WrappedClient = wrap(client, server=server, retry=retry or RetryPolicy())

    def call(request: Request, left: float | None) -> Any:
        """The wrapped SDK call for this request: a Result (sync client) or an awaitable of one (async), by the
        chain's deadline (``left`` seconds from now) at the latest."""
        options = replace(request.options, max_attempts=max_attempts, mode=mode,
                          budget=_tighter(request.options.budget, budget),
                          deadline=None if left is None else time.monotonic() + left,
                          response_cache=cache if cache is not None else request.options.response_cache)
        method = structured_method(wrapped, api)
        prompt = method.endpoint.prompt_request(request.system, request.user, max_tokens=max_tokens)
        return run_with_result(method, options, {**prompt, "model": model})

    async def acall(request: Request, left: float | None) -> Any:
        return await call(request, left)

    tier_name = name or f"{getattr(wrapped, 'vendor', 'vendor')}:{model}"
    chosen = breaker if breaker is not None else CircuitBreaker()
    if _is_async_client(client):
        return Tier(tier_name, "vendor", None, chosen, arun=acall)
    return Tier(tier_name, "vendor", call, chosen)


def _is_async_client(client: Any) -> bool:
    """An async vendor client (``AsyncOpenAI``/``AsyncAnthropic`` or a subclass); no SDK is imported to tell."""
    found = sdk_of(client, load=False)
    return found is not None and found[1]


def local(model: Any, *, name: str = "local", temperature: float = 1.0, max_new_tokens: int = 512,
          breaker: CircuitBreaker | None = None) -> Tier:
    """A local tier: a :class:`guardrail.local.LocalModel` generating under the contract's grammar mask.

    The prompt is the system text and the user text; the value passes the same parse layer, validation and
    (in the chain) semantic rules as every other tier's.
    """

    def run(request: Request, left: float | None) -> Any:
        prompt = f"{request.system}\n\n{request.user}" if request.system else request.user
        prompt = examples_prompt(prompt, request.output_type, request.options.examples)
        if request.options.reason_first is not None:  # reasoning first: a Result holding the reasoning
            from guardrail.local.reasoning import generate_reasoned

            return generate_reasoned(model, prompt, request.output_type, reason_first=request.options.reason_first,
                                     temperature=temperature, max_new_tokens=max_new_tokens, timeout=left)
        return model.generate(prompt, request.output_type, temperature=temperature, max_new_tokens=max_new_tokens,
                              timeout=left)

    return Tier(name, "local", run, breaker if breaker is not None else CircuitBreaker())


def is_local_model(candidate: Any) -> bool:
    """A :class:`guardrail.local.LocalModel` (checked by shape, so the ``local`` extra is not imported here)."""
    return callable(getattr(candidate, "generate_batch", None)) and hasattr(candidate, "tokenizer")


def _not_a_tier(candidate: Any) -> Tier:
    raise UsageError(f"a chain tier must be a Tier (vendor(...), local(...), rule_engine(...), safe_default(...)) or a "
                    f"LocalModel, not {type(candidate).__name__}")


def safe_default(value: Any | Callable[[], Any], *,
                 notice: str = "AI analysis is temporarily unavailable; an empty draft was created.",
                 name: str = "safe-default") -> Tier:
    """The last tier: a fixed contract value (or a factory) marked as a degraded default with a notice.

    The value is validated against the contract like any other tier's; a contract with no safe default simply
    has no such tier, and the chain ends with :class:`ChainExhausted`. It never runs a tool.
    """
    from guardrail.contract import compile_contract

    def run(request: Request, left: float | None) -> Any:
        raw = value() if callable(value) else value
        contract = compile_contract(request.output_type)
        checked = contract.adapter.validate_python(raw)
        return _Degraded(checked, notice, None)

    return Tier(name, "default", run)


def rule_engine(engine: Any, *, name: str = "rules",
          notice: str = "AI analysis is temporarily unavailable; this was filled in by rules.") -> Tier:
    """A rule-engine tier (:class:`guardrail.chain.fallback.RuleEngine`): deterministic, model-free, from the inputs."""

    def run(request: Request, left: float | None) -> Any:
        inputs = dict(request.inputs)
        field = getattr(getattr(engine, "rule_set", None), "input", None)
        if isinstance(field, str) and field not in inputs:
            inputs[field] = request.user  # a call made with messages: the user text is the input the rules read
        value, fired = engine.run(inputs, request.output_type)
        return _Degraded(value, notice, fired)

    return Tier(name, "rules", run)


__all__ = ["Chain", "ChainExhausted", "ChainResult", "CircuitBreaker", "Departure", "SharedCircuitBreaker", "Tier",
           "local", "rule_engine", "safe_default", "vendor"]
