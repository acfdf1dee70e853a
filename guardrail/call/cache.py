"""A response cache for structured calls, with single flight, over any :class:`~guardrail.store.Store`.

``guardrail.wrap(client, cache=Cache(store))`` (and ``@structured(cache=...)``, ``chain.vendor(..., cache=...)``)
answers a repeated structured call from the store instead of the vendor::

    cache = Cache(SQLiteStore("cache.db"), ttl=3600)
    client = guardrail.wrap(openai.OpenAI(), cache=cache)
    result = client.chat.completions.create_with_result(model=..., messages=..., response_model=Ticket,
                                                        prompt_version="triage-v3")
    result.cached        # True when it came from the cache (then result.vendor_calls == 0)

**Key** (:mod:`guardrail.call.cache_key`): SHA-256 of the canonical JSON of the endpoint, every request keyword that
can change the answer, the contract's schema hash, the semantic rules' identity, aliases, modes and the caller's
``prompt_version``. A call passes ``cache=False`` to skip the cache.

**What is stored**: only a validated value that met the rules, as the contract's JSON dump, and only when that
dump validates back to an equal value. A failure, a refusal, a typed non-answer, a streamed call's previews and a
chain's degraded result (rule engine, safe default) never reach the cache. Each entry carries a digest of its key
and value (HMAC-SHA256 with ``secret=`` when given), so an entry edited in the store, or copied under another key,
does not verify.

**A hit** is checked before it is returned: the digest, then strict validation against the *current* contract
(with the call's ``context``), then the current semantic rules. An entry that fails any of them is a miss: it is
removed and the call runs (and stores its own answer). A hit's :class:`~guardrail.Result` has ``cached=True``, no
attempts, no usage, ``vendor_calls == 0``.

**Single flight**: concurrent identical calls send one request. The first caller claims the key through
:class:`~guardrail.store.Idempotency` (a lease renewed by a heartbeat while the call runs); the others wait for
its entry and return it as a hit. It holds across threads and asyncio tasks on any store, and across processes
on a shared :class:`~guardrail.store.SQLiteStore` file or :class:`~guardrail.store.RedisStore`. A waiter never
fails because of its leader:

- the leader's call failed or was refused, or its process died and its lease lapsed: a waiter makes its own call,
  as the next leader;
- the leader's answer could not be cached (too large, or a value whose JSON dump does not read back as itself):
  the leader leaves a short-lived marker, and every waiter (and every identical call for :data:`PASS_SECONDS`)
  calls side by side rather than queueing;
- still waiting after ``wait`` seconds, or at its own deadline: it makes its own call, by the same deadline.

A store that fails never fails the call: the call runs uncached.

The cache's decisions are one I/O-free generator (:func:`_flow`) that yields what it needs done (claim the key and
run the call, discard an unusable entry, run the call uncached); :func:`run_cached` and :func:`run_cached_async`
perform them, synchronously or with ``await``, stepped by :func:`guardrail.store.idempotency.advance` as the
idempotency protocol is. A wrapper without a cache never comes here.

Streamed previews (``create_partial``) and ``with_raw_response`` (which exists for the HTTP responses) do not use
the cache.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import math
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any

from guardrail.call.cache_key import Uncacheable, request_key
from guardrail.call.engine import Call
from guardrail.call.examples import shown_in_key
from guardrail.contract import validation_context
from guardrail.errors import ConfigError, IdempotencyError, IdempotencyInFlight, StoreError
from guardrail.gates.semantic import evaluate
from guardrail.observe import metrics
from guardrail.observe.telemetry import cache_hit_span, get_logger
from guardrail.outcome import Result, Usage
from guardrail.store.base import Store, check_ttl
from guardrail.store.idempotency import DEFAULT_LEASE, Idempotency, advance

__all__ = ["FOREVER", "Cache", "run_cached", "run_cached_async"]

log = get_logger("guardrail")

#: The time to live of entries of a cache made with ``ttl=None`` (stores need a finite one): ten years.
FOREVER = 10 * 365 * 86400.0
#: Version of the stored entry's shape.
ENTRY_VERSION = 1
#: How long a leader's "this answer cannot be cached" marker sends identical calls straight to the vendor.
PASS_SECONDS = 60.0
#: Looks at one key per call: an entry found unusable is removed and the key claimed once more, then the call
#: runs uncached (an entry that keeps reappearing unusable cannot hold a call in a loop).
_ROUNDS = 2


def _observe(hit: bool, cache: Cache) -> None:
    """THE single place a cache lookup's verdict is reported (one call per cached call: hit or miss)."""
    log.debug("guardrail.cache", hit=hit)
    metrics.cache_lookup(hit, store=_STORE_KINDS.get(type(cache.store).__name__))


#: The ``guardrail.cache.store`` attribute of the lookup metric, by store class.
_STORE_KINDS = {"MemoryStore": "memory", "SQLiteStore": "sqlite", "RedisStore": "redis"}


class Cache:
    """A response cache over ``store`` (see the module docstring).

    Args:
        store: where entries live: :class:`~guardrail.store.MemoryStore` (one process),
            :class:`~guardrail.store.SQLiteStore` (processes of one host sharing the file) or
            :class:`~guardrail.store.RedisStore` (every process that reaches the server).
        ttl: seconds an entry is kept; ``None`` keeps it for :data:`FOREVER`.
        wait: the longest a caller waits for another caller's identical call in flight before making its own
            (also bounded by the caller's own deadline).
        lease: seconds the in-flight claim lives without a heartbeat: how soon waiters notice a leader that died.
        poll: seconds between a waiter's looks at the store.
        prefix: prepended to every store key, so the cache can share a store with idempotency records and quotas.
        secret: signs entries (HMAC-SHA256) so that only holders of the secret can write an entry that verifies;
            without it the digest catches edits and corruption but not a forger who recomputes it.
        max_entry_bytes: answers whose entry is larger are returned but not stored.
    """

    def __init__(self, store: Store, *, ttl: float | None = None, wait: float = 120.0, lease: float = DEFAULT_LEASE,
                 poll: float = 0.02, prefix: str = "guardrail-cache:", secret: bytes | str | None = None,
                 max_entry_bytes: int = 1_000_000) -> None:
        if ttl is not None:
            check_ttl(ttl)
        check_ttl(lease, "lease")
        check_ttl(poll, "poll")
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not math.isfinite(wait) or wait < 0:
            raise ConfigError(f"wait must be a finite number of seconds >= 0, got {wait!r}")
        if isinstance(max_entry_bytes, bool) or not isinstance(max_entry_bytes, int) or max_entry_bytes < 1:
            raise ConfigError(f"max_entry_bytes must be an int >= 1, got {max_entry_bytes!r}")
        self.store = store
        self.ttl = ttl
        self.wait = float(wait)
        self.lease = lease
        self.poll = poll
        self.prefix = prefix
        self.max_entry_bytes = max_entry_bytes
        self._secret = (secret.encode("utf-8") if isinstance(secret, str) else secret) or b"guardrail-cache"

    def __repr__(self) -> str:
        return f"Cache({self.store!r}, ttl={self.ttl!r})"

    def key(self, call: Call, prompt_version: str | None = None) -> str | None:
        """The call's cache key (64 hex digits), or ``None`` when its request has no canonical form."""
        try:
            return request_key(provider=call.endpoint.provider, api=call.endpoint.api, server=call.endpoint.server,
                               kwargs=call.kwargs, schema_hash=call.prepared.contract.schema_hash,
                               rules=call.options.rules, aliases=call.options.aliases,
                               modes=[plan.mode for plan in call.prepared.plans], prompt_version=prompt_version,
                               **shown_in_key(call.prepared.plans[0]))
        except Uncacheable as why:
            log.debug("guardrail.cache_skipped", reason=f"the request holds {why}")
            return None
        except Exception as error:  # a request object that fails to dump itself: never fail the call for the cache
            log.debug("guardrail.cache_skipped", reason=f"{type(error).__name__}: {error}")
            return None

    # -- entries ---------------------------------------------------------------------------------------------------

    def _digest(self, key: str, payload: str) -> str:
        return hmac.new(self._secret, f"{key}\n{payload}".encode(), hashlib.sha256).hexdigest()

    def _entry(self, call: Call, key: str, result: Result[Any]) -> str | None:
        """The text to store for a call's result, or ``None`` when it must not (or cannot) be stored."""
        contract = call.prepared.contract
        try:
            payload = contract.adapter.dump_json(result.value, by_alias=True).decode("utf-8")
            with validation_context(call.options.context or None):
                if contract.validate_json(payload) != result.value:
                    return None  # the dump does not read back as the same value: a hit could not give it
        except Exception:
            return None
        text = json.dumps({"v": ENTRY_VERSION, "mode": result.mode, "value": payload,
                           "digest": self._digest(key, payload)}, separators=(",", ":"))
        return None if len(text.encode("utf-8")) > self.max_entry_bytes else text

    def _hit(self, call: Call, key: str, text: str, started: float) -> Result[Any] | None:
        """The result an entry gives, re-checked against the current contract and rules; ``None`` if unusable."""
        try:
            entry = json.loads(text)
        except ValueError:
            return None
        if not (isinstance(entry, dict) and entry.get("v") == ENTRY_VERSION and isinstance(entry.get("value"), str)
                and isinstance(entry.get("mode"), str) and isinstance(entry.get("digest"), str)):
            return None
        payload: str = entry["value"]
        if not hmac.compare_digest(entry["digest"], self._digest(key, payload)):
            return None
        contract, rules, context = call.prepared.contract, call.options.rules, call.options.context
        try:
            with validation_context(context or None):
                value = contract.validate_json(payload)
            if rules and not evaluate(rules, value, context or {}).ok:
                return None
        except Exception:  # a ValidationError, a RuleError, or a validator of the caller's that raised: a miss
            return None
        trace_id = cache_hit_span(call.endpoint.provider, call.model, entry["mode"], contract.schema_hash)
        return Result(provider=call.endpoint.provider, model=call.model, mode=entry["mode"], attempts=(),
                      usage=Usage(), trace_id=trace_id, seconds=time.monotonic() - started,
                      schema_hash=contract.schema_hash, compile_report=None, value=value, cached=True)

    def _flight(self, wait: float) -> Idempotency:
        """Single flight for one call: a failed or interrupted leader releases the key (``rerun_safe``), so a
        waiter leads next."""
        return Idempotency(self.store, ttl=self.ttl or FOREVER, wait=wait, poll=self.poll, lease=self.lease,
                           max_result_bytes=self.max_entry_bytes, rerun_safe=True, prefix=self.prefix)


# -- one protocol for sync and async -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Claim:
    """Effect: claim the key and run the call (``finish`` turns its result into the entry), or get the entry."""

    flight: Idempotency
    key: str
    finish: Callable[[Result[Any]], str]


@dataclass(frozen=True, slots=True)
class _Discard:
    """Effect: remove an unusable entry (``text``; ``None``: whatever unusable record the key holds)."""

    flight: Idempotency
    key: str
    text: str | None


@dataclass(frozen=True, slots=True)
class _Own:
    """Effect: make the call without the cache (by the call's own deadline)."""


_Step = _Claim | _Discard | _Own
_Flow = Generator[_Step, Any, Result[Any]]


def _flow(cache: Cache, call: Call, key: str) -> _Flow:
    """The cache's I/O-free protocol for one call: hit, lead, wait, or fall back to an uncached call."""
    started = time.monotonic()
    left = None if call.deadline is None else call.deadline - started
    flight = cache._flight(cache.wait if left is None else max(0.0, min(cache.wait, left)))
    produced: list[Result[Any]] = []

    def finish(result: Result[Any]) -> str:
        produced.append(result)
        return cache._entry(call, key, result) or _pass_marker()

    for _ in range(_ROUNDS):
        try:
            text, replayed = yield _Claim(flight, key, finish)
        except StoreError:
            if produced:  # our call succeeded; only storing its answer failed
                _observe(False, cache)
                return produced[-1]
            break
        except IdempotencyInFlight:
            break
        except IdempotencyError:  # the key holds something that is not a usable record: someone wrote there
            if not (yield from _discard(flight, key, None)):
                break
            continue
        if not replayed:
            _observe(False, cache)
            return produced[-1]
        until = _passes_until(text)
        if until is not None and time.time() < until <= time.time() + PASS_SECONDS:
            break  # the answer for this request cannot be cached: everyone calls, side by side
        hit = cache._hit(call, key, text, started) if until is None else None
        if hit is not None:
            _observe(True, cache)
            return hit
        if not (yield from _discard(flight, key, text)):
            break
    _observe(False, cache)
    own: Result[Any] = yield _Own()
    return own


def _pass_marker() -> str:
    """What the leader stores when its answer cannot be cached (too large, or its JSON dump does not read back
    as the same value): waiters and callers in the next :data:`PASS_SECONDS` make their own calls side by side
    instead of queueing for a leader each in turn; after that (or if it claims a longer life) it is discarded
    like a stale entry."""
    return json.dumps({"v": ENTRY_VERSION, "uncacheable_until": time.time() + PASS_SECONDS})


def _passes_until(text: str) -> float | None:
    """The wall-clock end of a pass marker, or ``None`` when ``text`` is not one."""
    if not text.startswith('{"v"') or "uncacheable_until" not in text:
        return None
    try:
        until = json.loads(text).get("uncacheable_until")
    except (ValueError, AttributeError):
        return None
    return float(until) if isinstance(until, (int, float)) and not isinstance(until, bool) else None


def _discard(flight: Idempotency, key: str, text: str | None) -> Generator[_Step, Any, bool]:
    """Remove an unusable entry; ``False`` when the store failed (the caller then stops using the cache)."""
    try:
        yield _Discard(flight, key, text)
    except StoreError:
        return False
    return True


def _label(key: str) -> str:
    return f"cache entry {key[:16]}"


def run_cached(cache: Cache, call: Call, prompt_version: str | None, execute: Callable[[], Result[Any]]
               ) -> Result[Any]:
    """Run a structured call through ``cache``; ``execute()`` makes the call itself (a request that cannot be
    keyed runs uncached, counted as a miss)."""
    key = cache.key(call, prompt_version)
    if key is None:
        _observe(False, cache)
        return execute()
    flow = _flow(cache, call, key)
    reply: tuple[Any, Exception | None] = (None, None)
    while True:
        finished, step = advance(flow, reply)
        if finished:
            return step  # type: ignore[no-any-return]
        try:
            reply = (_perform(step, execute), None)
        except Exception as error:
            reply = (None, error)


def _perform(step: _Step, execute: Callable[[], Result[Any]]) -> Any:
    if isinstance(step, _Claim):
        return step.flight.run(step.key, step.key, lambda: step.finish(execute()), label=_label(step.key))
    if isinstance(step, _Discard):
        return step.flight.discard(step.key, step.key, result=step.text, label=_label(step.key))
    return execute()


async def run_cached_async(cache: Cache, call: Call, prompt_version: str | None,
                           execute: Callable[[], Awaitable[Result[Any]]]) -> Result[Any]:
    """The async :func:`run_cached`: the same protocol; store calls run in threads, waits are ``asyncio.sleep``."""
    key = cache.key(call, prompt_version)
    if key is None:
        _observe(False, cache)
        return await execute()
    flow = _flow(cache, call, key)
    reply: tuple[Any, Exception | None] = (None, None)
    while True:
        finished, step = advance(flow, reply)
        if finished:
            return step  # type: ignore[no-any-return]
        try:
            reply = (await _perform_async(step, execute), None)
        except Exception as error:
            reply = (None, error)


async def _perform_async(step: _Step, execute: Callable[[], Awaitable[Result[Any]]]) -> Any:
    if isinstance(step, _Claim):
        claim = step

        async def lead() -> str:
            return claim.finish(await execute())

        return await claim.flight.arun(claim.key, claim.key, lead, label=_label(claim.key))
    if isinstance(step, _Discard):
        return await asyncio.to_thread(step.flight.discard, step.key, step.key, result=step.text,
                                       label=_label(step.key))
    return await execute()
