"""The option values of a structured call: what ``wrap()`` was given, what one call adds, and the deadline.

* :class:`Settings` (the attempt loop's knobs) and :class:`RetryPolicy` (the transport tries' knobs and the
  call's wall-clock deadline) are given to ``guardrail.wrap(client, settings=..., retry=...)`` (or
  ``guardrail.configure``).
* :class:`ClientOptions` is everything ``wrap()`` was given, with the endpoints the client serves; a wrapped
  client carries it. :meth:`ClientOptions.prepare` compiles what a call needs before it is sent (the contract,
  the model's capabilities, the plans) once per shape of call: a :class:`Prepared`.
* :class:`CallOptions` is guardrail's keywords of one call (``response_model=`` and friends). The wrapper's
  methods take it out of the SDK's keywords (:meth:`CallOptions.take`); the decorator and the chain build it
  themselves; all three hand the same value to the methods. Two of its fields are not keywords: ``deadline``
  (what a chain has left) and ``response_cache`` (the chain's cache).
* :func:`deadline_at` turns the policy, the SDK timeout and the options into the call's deadline, once per call
  (a ``time.monotonic()`` value): the response cache, the attempt loop and every HTTP try read that one value.

Nothing here does I/O; :meth:`RetryPolicy.wait` is the rule the attempt loop follows between transport tries.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import pydantic
import tenacity

from guardrail.contract import Contract, compile_contract
from guardrail.errors import ConfigError, GuardrailError, UsageError
from guardrail.vendors.plans import Plan, plans, schema_name
from guardrail.vendors.profiles import Capabilities, Mode, capabilities

if TYPE_CHECKING:
    from guardrail.call.cache import Cache
    from guardrail.call.reasoning import Reasoning, ReasoningMode
    from guardrail.gates.semantic import Rule
    from guardrail.outcome import Budget
    from guardrail.replay.record import Recorder
    from guardrail.vendors.base import Endpoint
    from guardrail.vendors.failures import Failure

__all__ = ["CLIENT_TIMEOUT", "KEYWORDS", "CallOptions", "ClientOptions", "Prepared", "RetryPolicy", "Settings",
           "deadline_at", "timeout_seconds", "wrapped_answer_type"]


# -- what wrap() is given ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True, slots=True)
class Settings:
    """Knobs of the attempt loop.

    Attributes:
        max_attempts: model attempts per call (a re-ask after truncation counts; a schema 400 does not).
        max_tokens_ceiling: the highest output-token limit a truncated answer may be retried with.
        repair_temperature_factor: each repair attempt multiplies the temperature by this (from 1.0 when
            the caller set none), so the model explores less while fixing.
        capture_content: put raw model outputs on the trace span as events.
    """

    max_attempts: int = 3
    max_tokens_ceiling: int = 16384
    repair_temperature_factor: float = 0.5
    #: Record raw model outputs on the OpenTelemetry span (off by default: outputs may hold personal data).
    capture_content: bool = False

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError("max_attempts must be at least 1")


#: ``RetryPolicy.deadline`` value meaning "as long as the client's own timeout" (the default).
CLIENT_TIMEOUT: Final = "client"


@dataclasses.dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How transport failures are retried within one call, and the call's wall-clock deadline.

    Only transport failures are retried (408/409/429/5xx/529, timeouts, dropped connections, an overload event
    mid-stream, an answer not in the API's shape); a reply that fails the contract is the attempt loop's
    business, with feedback. The wait before a retry is the server's ``retry-after-ms``/``retry-after`` when it
    sent one (capped at ``max_wait``), else full jitter (a random wait up to ``initial_wait * 2**n``, capped at
    ``max_wait``). Tries stop at ``max_tries`` or when the next wait would end past the deadline. The SDK's own
    retries are off for the requests guardrail sends, so nothing is retried twice.

    The deadline is wall-clock and covers the whole call: every attempt, retry and wait, and the time the answer
    takes to arrive (a body or stream that trickles in is cut off when it passes). By default it follows the
    client's own timeout (the call's ``timeout=`` when given), so guardrail never cuts a request the SDK itself
    would let finish; a number sets it, ``None`` removes it.

    Attributes:
        max_tries: HTTP tries per attempt, the first included.
        initial_wait: the full-jitter base (seconds); waits grow as ``initial_wait * 2**n`` up to ``max_wait``.
        max_wait: the cap on any one wait, ``Retry-After`` included.
        deadline: wall-clock seconds for the whole call (all attempts, retries and the answer arriving);
            ``"client"`` (the default): the wrapped client's own timeout, or the call's ``timeout=``;
            ``None``: no deadline.
    """

    max_tries: int = 4
    initial_wait: float = 0.5
    max_wait: float = 20.0
    deadline: float | Literal["client"] | None = CLIENT_TIMEOUT

    def __post_init__(self) -> None:
        if self.max_tries < 1:
            raise ConfigError("max_tries must be at least 1")
        if isinstance(self.deadline, str) and self.deadline != CLIENT_TIMEOUT:
            raise ConfigError(f"deadline must be seconds, {CLIENT_TIMEOUT!r} or None, not {self.deadline!r}")
        if isinstance(self.deadline, (int, float)) and not self.deadline > 0:  # NaN fails this too
            raise ConfigError(f"deadline must be a positive number of seconds (None: none), not {self.deadline!r}")

    def deadline_seconds(self, timeout: float | None) -> float | None:
        """The call's deadline in seconds, given the client's (or the call's) timeout in seconds; ``None`` for
        none (an infinite or NaN timeout sets none either)."""
        seconds = timeout if self.deadline == CLIENT_TIMEOUT else self.deadline
        if seconds is None or isinstance(seconds, str) or not math.isfinite(seconds):
            return None
        return float(seconds)

    def wait(self, tries: int, failure: Failure, deadline: float | None) -> float | None:
        """Seconds to wait before the next HTTP try, after ``tries`` tries of which the last failed with the
        retryable ``failure``; ``None``: stop (the tries are spent, or the wait would end past ``deadline``, a
        ``time.monotonic()`` value).

        The attempt loop steps the tries itself (one loop for sync and async, see :mod:`guardrail.call.engine`);
        what to wait and when to stop are tenacity's strategies (``stop_after_attempt``,
        ``wait_random_exponential``: full jitter), asked with the state of the tries so far."""
        policy = _tenacity(self.max_tries, self.initial_wait, self.max_wait)
        state = tenacity.RetryCallState(policy, None, (), {})
        state.attempt_number = tries
        if policy.stop(state):
            return None
        # the server's Retry-After (capped), else full jitter: anywhere up to the exponentially growing window
        seconds = policy.wait(state) if failure.retry_after is None else min(failure.retry_after, self.max_wait)
        if deadline is not None and time.monotonic() + seconds > deadline:
            return None
        return seconds


@functools.lru_cache(maxsize=64)
def _tenacity(max_tries: int, initial_wait: float, max_wait: float) -> tenacity.Retrying:
    """tenacity's policy for these numbers (made once each): its ``stop`` and ``wait`` strategies are asked, its
    loop is never run."""
    return tenacity.Retrying(stop=tenacity.stop_after_attempt(max_tries),
                             wait=tenacity.wait_random_exponential(multiplier=initial_wait, max=max_wait))


def timeout_seconds(timeout: Any) -> float | None:
    """An SDK timeout in seconds: a number, or an httpx ``Timeout`` (its read timeout counts); else ``None``."""
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    read = getattr(timeout, "read", None)
    return float(read) if isinstance(read, (int, float)) and not isinstance(read, bool) else None


# -- what one call adds ----------------------------------------------------------------------------------------
#: The metadata of a :class:`CallOptions` field that is not one of guardrail's keywords.
_NOT_A_KEYWORD = {"keyword": False}


@dataclasses.dataclass(frozen=True, slots=True)
class CallOptions:
    """guardrail's options of one structured call: its keywords (see :meth:`StructuredMethod.create
    <guardrail.call.methods.StructuredMethod.create>` for what each means), and two values a caller that builds
    the options itself may set.

    Attributes:
        deadline: the latest ``time.monotonic()`` the call may end at (a chain passes what it has left); the
            call's own deadline (:class:`RetryPolicy`) may end it sooner. Not a keyword.
        response_cache: the response cache to use instead of the client's (a chain's vendor tier passes its own,
            else the chain's); ``cache=False`` still turns caching off. Not a keyword.
        recorder: where the call is recorded for replay (:mod:`guardrail.replay`), instead of the client's
            ``wrap(record=...)``; the decorator and the chain pass their own. Not a keyword.
    """

    response_model: Any
    aliases: Mapping[str, str] | None = None
    max_attempts: int | None = None
    mode: Mode | None = None
    budget: Budget | None = None
    rules: Sequence[Rule] = ()
    context: Mapping[str, Any] | None = None
    cache: bool = True
    prompt_version: str | None = None
    examples: Sequence[Any] = ()
    reason_first: Reasoning | ReasoningMode | None = None
    deadline: float | None = dataclasses.field(default=None, metadata=_NOT_A_KEYWORD)
    response_cache: Cache | None = dataclasses.field(default=None, metadata=_NOT_A_KEYWORD)
    recorder: Recorder | None = dataclasses.field(default=None, metadata=_NOT_A_KEYWORD)

    @property
    def constrains_text(self) -> bool:
        """Whether ``response_model`` is a :class:`guardrail.local.Regex` or ``Grammar`` (the answer is text
        matching it, :mod:`guardrail.call.text_constraints`), not a contract. The constraints module is not
        imported for this: a value of it can only exist once it has been."""
        module = sys.modules.get("guardrail.local.constraints")
        return module is not None and bool(module.is_constraint(self.response_model))

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
KEYWORDS: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(CallOptions)
                                  if field.metadata.get("keyword", True))
_NAMES = frozenset(KEYWORDS)


def deadline_at(retry: RetryPolicy, timeout: float | None, cap: float | None) -> float | None:
    """The call's deadline as a ``time.monotonic()`` value, computed once when the call starts: the policy's
    (by default ``timeout``, the call's or the client's SDK timeout in seconds), never later than ``cap`` (what a
    chain has left); ``None`` for none."""
    seconds = retry.deadline_seconds(timeout)
    at = None if seconds is None else time.monotonic() + seconds
    return cap if cap is not None and (at is None or cap < at) else at


# -- what is prepared once per shape of call -----------------------------------------------------------------------
@dataclasses.dataclass(eq=False, slots=True)
class Prepared:
    """What a call needs before it is sent, for one shape of call (endpoint, contract, model, mode, thinking):
    the compiled contract, the model's capabilities and the plans, strongest first. Shared by every call of that
    shape, so the attempt loop never compiles: a field re-ask's plan is compiled here on first use and kept."""

    contract: Contract[Any]
    caps: Capabilities
    plans: tuple[Plan, ...]
    thinking: bool
    _fields: dict[tuple[Any, ...], Plan | None] = dataclasses.field(default_factory=dict)

    def answer_type(self, plan: Plan) -> Any:
        """The type an answer under ``plan`` is parsed as: the contract, or ``{wrapped: contract}`` when the plan
        wrapped a non-object root."""
        return self.contract.output_type if plan.wrapped is None else _wrapped(self.contract.output_type, plan.wrapped)

    def fields_plan(self, fields_model: type, plan: Plan) -> Plan | None:
        """The plan asking for the fields of ``fields_model`` (a model of a few of the contract's fields) in
        ``plan``'s mode and under its name; ``None`` when that mode cannot carry them (ask for the whole answer)."""
        key = (fields_model, plan.mode, plan.name)
        try:
            return self._fields[key]
        except KeyError:
            pass
        try:
            found: Plan | None = plans(compile_contract(fields_model).schema, plan.name, self.caps, forced=plan.mode,
                                       thinking=self.thinking)[0]
        except (ValueError, GuardrailError):
            found = None
        if len(self._fields) < _PREPARED_SIZE:
            self._fields[key] = found
        return found


@functools.lru_cache(maxsize=256)
def _wrapped(output_type: Any, key: str) -> Any:
    """``{key: output_type}`` as a model (made once per contract and key, whatever the client)."""
    fields: dict[str, Any] = {key: (output_type, ...)}
    return pydantic.create_model("Wrapped", **fields)


def wrapped_answer_type(output_type: Any, key: str) -> Any:
    """What an answer is parsed as under a plan that wrapped a non-object root under ``key``: ``{key: output_type}``
    as a model (a replay re-reads recorded answers so, :mod:`guardrail.replay`)."""
    return _wrapped(output_type, key)


#: Entries of :attr:`ClientOptions.prepared`; past it, new shapes of call are prepared each time (still cached below).
_PREPARED_SIZE = 256


@dataclasses.dataclass(eq=False)
class ClientOptions:
    """What ``wrap()`` was given for one client, and the endpoints (wire formats) that client serves.

    ``origin`` is the client object that was wrapped (the wrapped client shares its state). ``endpoints`` maps
    each endpoint the client serves to the dotted paths of its SDK resources (the first endpoint is the client's
    default API). ``resources`` holds the client's guardrail resources once made (``chat``, ``messages``, ...)
    and the view structured calls send through: the client's own ``__dict__`` is shared with the SDK client, so
    nothing of guardrail's is kept there.
    """

    kind: str
    asynchronous: bool
    server: str | None
    settings: Settings
    retry: RetryPolicy
    cache: Cache | None
    endpoints: dict[Endpoint, tuple[str, ...]]
    origin: Any = None
    resources: dict[Any, Any] = dataclasses.field(default_factory=dict)
    #: (endpoint, response_model, model, mode, thinking) -> what a call of that shape needs before it is sent,
    #: which depends on nothing else: a repeated call pays one lookup.
    prepared: dict[tuple[Any, ...], Prepared] = dataclasses.field(default_factory=dict)
    #: Where structured calls are recorded for replay (``wrap(record=...)``, :mod:`guardrail.replay`), or None.
    recorder: Recorder | None = None
    #: The provider ``wrap(provider=...)`` named (its capability rows), or None: read off the client.
    provider: str | None = None

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

    def prepare(self, endpoint: Endpoint, response_model: Any, model: str, mode: Mode | None,
                thinking: bool) -> Prepared:
        """The contract, the model's capabilities and the plans, remembered per shape of call (each part is
        cached on its own too; this saves the lookups, which every call pays)."""
        prepared = self.prepared
        key: tuple[Any, ...] | None = (endpoint, response_model, model, mode, thinking)
        try:
            found = prepared.get(key)  # type: ignore[arg-type]
        except TypeError:  # an unhashable contract (a JSON Schema dict): its parts' own caches serve it
            found, key = None, None
        if found is None:
            contract = compile_contract(response_model)
            caps = capabilities(endpoint.provider, model)
            found = Prepared(contract, caps, tuple(plans(contract.schema, schema_name(contract.output_type), caps,
                                                         forced=mode, thinking=thinking)), thinking)
            if key is not None and len(prepared) < _PREPARED_SIZE:
                prepared[key] = found
        return found
