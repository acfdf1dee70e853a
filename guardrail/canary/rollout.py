"""``guardrail.Canary``: send a share of traffic to a new version, count both arms, roll back when it is worse.

A canary holds two interchangeable things, ``control`` (what runs today) and ``candidate`` (the new prompt,
contract, model or settings), and stands in for them: call it as the function, or reach the same attribute on it
as on them, and each call goes to one arm::

    canary = guardrail.Canary(triage_v1, triage_v2, share=0.05, store=SQLiteStore("canary.db"))
    ticket = canary("My parcel is two weeks late", customer_tier="gold")      # two @structured functions
    clients = guardrail.Canary(wrap(OpenAI()), wrap(OpenAI(base_url=...)))    # two wrapped clients
    value = clients.chat.completions.create(model=..., messages=..., response_model=Ticket)
    structured_fn = guardrail.structured(chain=guardrail.Canary(chain_v1, chain_v2))(fn)   # two chains
    Chain([Canary(vendor(a, "m1"), vendor(b, "m2")).tier(), safe_default(...)])           # two tiers

An attribute path exists on a canary only when it exists on both arms. A call returns what the arm returned, and
an exception the arm raised reaches the caller unchanged (``fallback_to_control=True`` instead re-runs a failed
candidate call on control). Async arms (async clients, ``async def`` functions, ``Chain.arun``) return an
awaitable, awaited by the caller as usual.

**Outcomes.** A call that returned is *valid*, except a :class:`~guardrail.chain.ChainResult` served by a degraded
tier (rule engine, safe default), which counts as the failure ``degraded``; a call that raised an ``Exception`` is a
failure of its ``kind`` (a parse error's or :class:`~guardrail.GaveUp`'s ``.kind``, else the class name). A stream
counts when it is opened (what goes wrong while it is read is not seen). Counts live in the ``store``
(:mod:`guardrail.canary.ledger`), so every process using the canary's ``name`` on one SQLite file or Redis server
counts together.

**Decisions** (:mod:`guardrail.canary.stats`): after each candidate outcome, the two arms' tallies are tested (a
verdict is never needed between two candidate calls, and a control call then costs two store operations); when the
candidate's failure rate is worse than control's by more than ``margin`` with ``confidence`` (both arms having at
least ``min_samples`` calls) the canary **rolls back**: the decision is written to the store and from then on every
call, in every process, goes to control. With ``promote_after`` it also **promotes** (every call to the candidate)
once the candidate has that many calls and is shown not worse by ``margin``. :meth:`Canary.rollback`,
:meth:`Canary.promote` and :meth:`Canary.reset` decide by hand. Every decision is logged, traced and counted
(:mod:`guardrail.canary.observe`). Decided outcomes are not counted any more.

**Routing** (:mod:`guardrail.canary.routing`): ``canary.routed(user_id)`` (or ``key=``, a function of the call's
arguments) sends a key always to the same arm; without a key the draw is random (``seed=`` for a reproducible one).

A store that cannot be read or written never fails the call: the event ``guardrail.canary.store_error`` is logged,
an unknown state routes to control, and an outcome that could not be counted is not counted.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar

from opentelemetry import trace
from opentelemetry.trace import Span

from guardrail.canary import observe
from guardrail.canary.ledger import ARMS, Arm, Ledger
from guardrail.canary.routing import Router, RoutingKey
from guardrail.canary.stats import Tally, Verdict, check_settings, decide
from guardrail.errors import ConfigError, StoreError, UsageError
from guardrail.store.base import Store
from guardrail.store.memory import MemoryStore

__all__ = ["Canary", "CanaryStatus", "State"]

A = TypeVar("A")
State = Literal["live", "rolled_back", "promoted"]
_STATES: Final[dict[str, State]] = {"rollback": "rolled_back", "promote": "promoted"}
#: How long an experiment's record lives from its first call, by default (then a canary of that name starts over).
DEFAULT_TTL: Final = 365 * 86400.0


class _Unset:
    """No routing key was given for this call (``key=`` decides, else a random draw)."""


_UNSET: Final = _Unset()


@dataclass(frozen=True, slots=True)
class CanaryStatus:
    """A canary as every process sees it: its ``state``, the decision record once made, each arm's tally and
    failures by kind, and what the test says of the counts now (``verdict``)."""

    name: str
    state: State
    control: Tally
    candidate: Tally
    verdict: Verdict
    decision: dict[str, Any] | None = None
    control_failures: dict[str, int] = field(default_factory=dict)
    candidate_failures: dict[str, int] = field(default_factory=dict)


def _resolve(target: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        target = getattr(target, name)
    return target


def _is_async(arm: Any) -> bool | None:
    """Whether calling ``arm`` gives an awaitable: an async SDK client, an ``async def`` function (also behind
    ``@structured``, which keeps it as ``__wrapped__``); ``None`` when it cannot be told (a chain has both)."""
    from guardrail.vendors.registry import sdk_of

    found = sdk_of(arm, load=False)
    if found is not None:
        return bool(found[1])
    if callable(arm) and not isinstance(arm, type):
        return inspect.iscoroutinefunction(inspect.unwrap(arm))
    return None


def _outcome(produced: Any, error: BaseException | None) -> str:
    """``valid``, ``degraded`` (a chain's degraded tier answered) or the failure's kind."""
    if error is not None:
        kind = getattr(error, "kind", None)
        return kind if isinstance(kind, str) and kind else type(error).__name__
    from guardrail.chain.tiers import ChainResult

    return "degraded" if isinstance(produced, ChainResult) and produced.degraded else "valid"


class Canary(Generic[A]):
    """Route a ``share`` of calls to ``candidate`` and the rest to ``control``; roll back when it fails more.

    Args:
        control: what runs today: a wrapped client, a ``@structured`` function, a :class:`~guardrail.Chain`, a
            chain :class:`~guardrail.chain.Tier` or any callable.
        candidate: the new version, of the same kind.
        share: the candidate's fraction of traffic, in [0, 1].
        store: where the counts and the decision live (:class:`~guardrail.store.SQLiteStore` or
            :class:`~guardrail.store.RedisStore` to share them between processes; a private
            :class:`~guardrail.store.MemoryStore` by default).
        name: the experiment's name: its store keys, its routing salt, its metrics' ``guardrail.canary.name``
            (required with a ``store``; ``"canary"`` for a private one).
        margin: how much higher (absolute difference of failure rates) the candidate's may be before it is
            rolled back.
        confidence: how sure the test must be (one-sided), in (0.5, 1).
        min_samples: calls each arm needs before anything is decided.
        promote_after: promote once the candidate has this many calls and is shown not worse by ``margin``;
            ``None`` (the default) never promotes automatically.
        key: a routing key from the call's arguments (called with them as the arm gets them), for calls not made
            through :meth:`routed`.
        seed: seeds the random draw of calls without a key.
        fallback_to_control: re-run a call the candidate failed on control (the control's answer or error then
            reaches the caller; the re-run is not counted in the test, since it is not a random control call).
        ttl: seconds the experiment's record lives from its first call.
    """

    def __init__(self, control: A, candidate: A, *, share: float = 0.05, store: Store | None = None,
                 name: str | None = None, margin: float = 0.02, confidence: float = 0.95, min_samples: int = 100,
                 promote_after: int | None = None, key: Callable[..., RoutingKey | None] | None = None,
                 seed: int | None = None, fallback_to_control: bool = False, ttl: float = DEFAULT_TTL) -> None:
        check_settings(margin, confidence, min_samples, promote_after)
        if key is not None and not callable(key):
            raise UsageError("key= is a function of the call's arguments returning the routing key")
        if store is not None and name is None:
            raise ConfigError("a canary with a store needs a name=: it names the experiment's keys, and two "
                              "experiments under one name would share their counts and their decision")
        flavours = {_is_async(control), _is_async(candidate)} - {None}
        if len(flavours) > 1:
            raise ConfigError("control and candidate must both be sync or both be async: a caller would get an "
                              "awaitable from one arm and a value from the other")
        name = name if name is not None else "canary"
        self._arms: dict[Arm, A] = {"control": control, "candidate": candidate}
        self._ledger = Ledger(store if store is not None else MemoryStore(), name, ttl)
        self._router = Router(share, name, seed)
        self._key = key
        self.margin = float(margin)
        self.confidence = float(confidence)
        self.min_samples = min_samples
        self.promote_after = promote_after
        self.fallback_to_control = fallback_to_control

    # -- what it is ----------------------------------------------------------------------------------------------
    @property
    def control(self) -> A:
        return self._arms["control"]

    @property
    def candidate(self) -> A:
        return self._arms["candidate"]

    @property
    def name(self) -> str:
        return self._ledger.name

    @property
    def share(self) -> float:
        return self._router.share

    @property
    def store(self) -> Store:
        return self._ledger.store

    def __repr__(self) -> str:
        return f"Canary(name={self.name!r}, share={self.share}, margin={self.margin}, confidence={self.confidence})"

    # -- standing in for the arms --------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the chosen arm with these arguments (see the module docstring)."""
        return self._invoke((), _UNSET, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _Route(self, (), _UNSET).__getattr__(name)

    def routed(self, key: RoutingKey | None) -> Any:
        """This canary for calls of routing ``key``: ``canary.routed(user_id).chat.completions.create(...)`` or
        ``canary.routed(user_id)(...)``; the same key always reaches the same arm (``None``: a random draw)."""
        return _Route(self, (), key)

    def tier(self, name: str | None = None) -> Any:
        """This canary as one tier of a :class:`~guardrail.Chain`, when both arms are tiers (``vendor(...)``,
        ``local(...)``) of one kind. A failed arm leaves the tier like any tier's failure (the chain goes on to the
        next); the arms' own circuit breakers are not consulted (give the canary tier's ``breaker`` if needed)."""
        from guardrail.chain.tiers import Request, Tier

        control, candidate = self.control, self.candidate
        if not isinstance(control, Tier) or not isinstance(candidate, Tier):
            raise UsageError("Canary.tier() needs two chain tiers (vendor(...), local(...)) as control and candidate")
        if control.kind != candidate.kind:
            raise ConfigError(f"a canary tier's arms must be of one kind, got {control.kind!r} and {candidate.kind!r}")
        run: Callable[[Request, float | None], Any] | None = None
        arun: Callable[[Request, float | None], Awaitable[Any]] | None = None
        if control.run is not None and candidate.run is not None:
            def run(request: Request, left: float | None) -> Any:
                return self._invoke(("run",), _UNSET, (request, left), {})
        if control.arun is not None and candidate.arun is not None:
            async def arun(request: Request, left: float | None) -> Any:
                return await self._invoke(("arun",), _UNSET, (request, left), {})
        if run is None and arun is None:
            raise ConfigError("a canary tier's arms must both be sync or both be async")
        return Tier(name or f"canary:{self.name}", control.kind, run, arun=arun)

    # -- the state every process follows ---------------------------------------------------------------------------
    @property
    def state(self) -> State:
        """``live`` (routing by share), ``rolled_back`` (all to control) or ``promoted`` (all to candidate)."""
        decision = self._ledger.decision()
        return "live" if decision is None else _STATES[decision["decision"]]

    def status(self) -> CanaryStatus:
        """The shared counts, failures by kind, the decision and what the test says now."""
        control, candidate = self._ledger.tallies()
        decision = self._ledger.decision()
        return CanaryStatus(self.name, "live" if decision is None else _STATES[decision["decision"]], control,
                            candidate, self._verdict(control, candidate), decision,
                            self._ledger.kinds("control"), self._ledger.kinds("candidate"))

    def check(self) -> Verdict:
        """Test the shared counts now and act on the verdict while the canary is live (as after every call)."""
        control, candidate = self._ledger.tallies()
        verdict = self._verdict(control, candidate)
        if verdict.action != "continue" and self._ledger.decision() is None:
            self._settle(verdict.action, verdict.reason, control, candidate, verdict, "automatic")
        return verdict

    def rollback(self, reason: str = "rolled back by hand") -> bool:
        """Send every call to control from now on, in every process; ``False`` if a decision was made already."""
        control, candidate = self._ledger.tallies()
        return self._settle("rollback", reason, control, candidate, None, "manual")

    def promote(self, reason: str = "promoted by hand") -> bool:
        """Send every call to the candidate from now on, in every process; ``False`` if a decision was made
        already."""
        control, candidate = self._ledger.tallies()
        return self._settle("promote", reason, control, candidate, None, "manual")

    def reset(self) -> None:
        """Forget the counts and the decision: the experiment starts over, live, with the next call."""
        self._ledger.clear()
        observe.log.info("guardrail.canary.reset", canary=self.name)

    def _verdict(self, control: Tally, candidate: Tally) -> Verdict:
        return decide(control, candidate, margin=self.margin, confidence=self.confidence,
                      min_samples=self.min_samples, promote_after=self.promote_after)

    def _settle(self, action: str, reason: str, control: Tally, candidate: Tally, verdict: Verdict | None,
                by: str) -> bool:
        record = {"decision": action, "by": by, "reason": reason, "at": time.time(),
                  "control": {"calls": control.calls, "failures": control.failures},
                  "candidate": {"calls": candidate.calls, "failures": candidate.failures},
                  "lower": None if verdict is None else verdict.lower,
                  "upper": None if verdict is None else verdict.upper,
                  "margin": self.margin, "confidence": self.confidence}
        _, ours = self._ledger.settle(record)
        if ours:
            observe.decided(self.name, record)
        return ours

    # -- one call ----------------------------------------------------------------------------------------------
    def _choose(self, key: RoutingKey | None) -> tuple[Arm, str]:
        """The arm for this call and the state it was chosen under (``unknown`` when the store failed)."""
        try:
            decision = self._ledger.decision()
        except StoreError as error:
            observe.store_failed(self.name, "read the decision", error)
            return "control", "unknown"
        if decision is not None:
            return ("control" if decision["decision"] == "rollback" else "candidate"), _STATES[decision["decision"]]
        return ("candidate" if self._router.to_candidate(key) else "control"), "live"

    def _invoke(self, path: tuple[str, ...], key: RoutingKey | _Unset | None, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        if isinstance(key, _Unset):
            key = self._key(*args, **kwargs) if self._key is not None else None
        arm, state = self._choose(key)
        span = observe.call_span(self.name, arm, state)
        return self._run(span, arm, state == "live", path, args, kwargs, False)

    def _run(self, span: Span, arm: Arm, live: bool, path: tuple[str, ...], args: tuple[Any, ...],
             kwargs: dict[str, Any], fallback: bool) -> Any:
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                produced = _resolve(self._arms[arm], path)(*args, **kwargs)
        except Exception as error:
            self._judged(span, arm, live, None, error, fallback)
            if self._falls_back(arm, fallback):
                return self._run(span, "control", live, path, args, kwargs, True)
            span.end()
            raise
        except BaseException:
            span.end()
            raise
        if inspect.isawaitable(produced):
            return self._awaited(span, arm, live, path, args, kwargs, fallback, produced)
        self._judged(span, arm, live, produced, None, fallback)
        span.end()
        return produced

    async def _awaited(self, span: Span, arm: Arm, live: bool, path: tuple[str, ...], args: tuple[Any, ...],
                       kwargs: dict[str, Any], fallback: bool, pending: Awaitable[Any]) -> Any:
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                value = await pending
        except Exception as error:
            self._judged(span, arm, live, None, error, fallback)
            if self._falls_back(arm, fallback):
                again = self._run(span, "control", live, path, args, kwargs, True)
                return await again if inspect.isawaitable(again) else again
            span.end()
            raise
        except BaseException:
            span.end()
            raise
        self._judged(span, arm, live, value, None, fallback)
        span.end()
        return value

    def _falls_back(self, arm: Arm, fallback: bool) -> bool:
        return self.fallback_to_control and arm == "candidate" and not fallback

    def _judged(self, span: Span, arm: Arm, live: bool, produced: Any, error: BaseException | None,
                fallback: bool) -> None:
        """Report one outcome; while live (and not a fallback re-run) count it in the store, and after a candidate
        outcome test the counts (the test reads four counters; a control call skips it)."""
        outcome = _outcome(produced, error)
        observe.counted(span, self.name, arm, outcome, error, fallback=fallback)
        if not live or fallback:
            return
        try:
            with trace.use_span(span, record_exception=False, set_status_on_exception=False):
                self._ledger.record(arm, None if outcome == "valid" else outcome)
                if arm == "candidate":
                    self.check()
        except StoreError as failed:
            observe.store_failed(self.name, "count the outcome", failed)


class _Route:
    """An attribute path reached on a :class:`Canary` (``canary.chat.completions.create``), maybe with a routing
    key: the same path on the arm chosen for each call. A path exists only where it exists on both arms."""

    __slots__ = ("_canary", "_key", "_path")

    def __init__(self, canary: Canary[Any], path: tuple[str, ...], key: RoutingKey | _Unset | None) -> None:
        self._canary, self._path, self._key = canary, path, key

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        path = (*self._path, name)
        for arm in ARMS:
            try:
                _resolve(self._canary._arms[arm], path)
            except AttributeError:
                raise AttributeError(f"the canary's {arm} has no attribute {'.'.join(path)!r}") from None
        return _Route(self._canary, path, self._key)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._canary._invoke(self._path, self._key, args, kwargs)

    def __repr__(self) -> str:
        return f"<canary {self._canary.name!r} route {'.'.join(self._path) or '()'}>"
