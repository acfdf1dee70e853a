"""Run an action at most once per idempotency key, on any :class:`~guardrail.store.Store`, even when things break.

A caller (a tool executor, typically) passes a key (the idempotency key the model or the app chose), a fingerprint
of the arguments (e.g. a SHA-256 of their canonical JSON) and the action. The first caller claims the key and runs
the action; everyone else with the same key and fingerprint waits for and replays its outcome; a caller with the
same key and *different* arguments is refused. Correctness rests only on the store's atomic operations, so with
:class:`~guardrail.store.SQLiteStore` or :class:`~guardrail.store.RedisStore` it holds across processes too.

Two keys per idempotency key (``prefix + key`` and the lease key next to it)::

    record  {"state":"started","fingerprint":..,"owner":..,"attempt":1,"started_at":<unix time>}   kept ``ttl``
            {"state":"done","fingerprint":..,"result":"<result text>"}                               kept ``ttl``
            {"state":"failed","fingerprint":..,"error_type":..,"message":..}                         kept ``ttl``
            {"state":"unstorable","fingerprint":..,"reason":..,"preview":..}                         kept ``ttl``
    lease   "<owner token>"                                         kept ``lease`` s, renewed while the action runs

The **lease** says "someone is working on this key right now". It is taken (``put_if_absent``) before anything
else, its time to live is short (``lease``, 30 s by default) and a heartbeat thread renews it every ``lease / 3``
seconds while the action runs, so a slow action keeps its claim and a crashed one loses it within ``lease``
seconds. The **record** says what happened, and outlives the lease: once a run has *started*, the key is never run
again silently. A record still ``started`` with no lease means the runner vanished mid-action (crash, ``kill -9``,
Ctrl-C, a cancelled task, a lost store): the outcome is unknown, and the next caller gets
:class:`~guardrail.errors.IdempotencyUnknown` (key, start time) until the application resolves it
(:meth:`Idempotency.resolve`), the action's ``reconcile`` hook answers, or the action was declared
``rerun_safe``.

Every write of a runner is conditional on the record still holding *its* started record (the ``owner`` token is
the fencing token): a runner that lost its lease and whose key was since resolved or re-run cannot store a result
over the newer one. A runner that merely outlived its lease still records its outcome if the record is untouched.

What is recorded, always before the caller hears back: the result text (``done``), a result that cannot be
serialized or is larger than ``max_result_bytes`` (``unstorable``, with a redacted preview; every caller gets
:class:`~guardrail.errors.ResultNotStorable`), or the action's exception (``failed``; replayed as
:class:`~guardrail.errors.IdempotencyFailed`). An action that raises :class:`~guardrail.errors.NothingHappened`
releases the key instead, and so does any failure of a ``rerun_safe`` action (today's "retry on failure").

Store failures raise :class:`~guardrail.errors.StoreUnavailable` / :class:`~guardrail.errors.StoreError` with the
key and what is known: ``claimed``, ``executed``, ``result_stored``. A store that fails before the claim runs
nothing; a lease write that timed out is read back and deleted if it landed (a "ghost" lease can only outlive a
store that stays down, and then only for ``lease`` seconds).

One core serves :meth:`Idempotency.run` and :meth:`Idempotency.arun`: the protocol is a generator that yields the
operations it needs (store calls, the action, sleeps) and a small driver performs them, synchronously or with
``asyncio`` (store calls in threads).
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from guardrail.errors import (
    ConfigError,
    IdempotencyConflict,
    IdempotencyFailed,
    IdempotencyInFlight,
    IdempotencyUnknown,
    NothingHappened,
    ResultNotStorable,
    StoreError,
    UsageError,
)
from guardrail.observe.redact import redact_text
from guardrail.store.base import Store, check_ttl

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_MAX_RESULT_BYTES",
    "NOT_EXECUTED",
    "Idempotency",
    "IdempotencyConflict",
    "IdempotencyFailed",
    "IdempotencyInFlight",
    "IdempotencyUnknown",
    "ResultNotStorable",
    "advance",
]

#: Default lease: how long a vanished runner blocks its key before callers hear "unknown".
DEFAULT_LEASE = 30.0
#: Default cap on a stored result (UTF-8 bytes of its text); Redis refuses values past ``proto-max-bulk-len``.
DEFAULT_MAX_RESULT_BYTES = 1_000_000
#: Suffix of the lease key (a control character no sensible key contains).
LEASE_SUFFIX = "\x1flease"
_FINAL = ("done", "failed", "unstorable")

_T = TypeVar("_T")


class _NotExecuted:
    """The type of :data:`NOT_EXECUTED`."""

    def __repr__(self) -> str:
        return "NOT_EXECUTED"


#: What a ``reconcile`` hook returns when the downstream system says the earlier run took no effect.
NOT_EXECUTED = _NotExecuted()

#: A reconcile hook: given the unknown run, the result text it had (replayed from now on), :data:`NOT_EXECUTED`
#: (the key runs again now) or ``None`` (still unknown: the caller gets the error).
Reconcile = Callable[[IdempotencyUnknown], "str | _NotExecuted | None"]


@dataclass(frozen=True, slots=True)
class _StoreOp:
    method: str
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class _Act:
    lease_key: str
    owner: str


@dataclass(frozen=True, slots=True)
class _Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class _AskReconcile:
    unknown: IdempotencyUnknown


_Op = _StoreOp | _Act | _Sleep | _AskReconcile
_Flow = Generator[_Op, Any, _T]


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"))


def _decode(key: str, text: str) -> dict[str, Any]:
    """A stored record, checked for shape; anything else under the key is a conflict, never overwritten."""
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if isinstance(record, dict) and isinstance(record.get("fingerprint"), str) and (
            (record.get("state") == "started" and isinstance(record.get("owner"), str))
            or (record.get("state") == "done" and isinstance(record.get("result"), str))
            or record.get("state") in ("failed", "unstorable")):
        return record
    raise IdempotencyConflict(key, "holds a value that is not an idempotency record")


def _preview(value: object) -> str:
    """A short, redacted ``repr`` (never raises)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return redact_text(text[:200])


class _Heartbeat:
    """Renews a lease every ``lease / 3`` seconds from a daemon thread until stopped; stops renewing once the
    lease is no longer ours (``lost``). Store errors are retried at the next beat (the lease may still be alive)."""

    def __init__(self, store: Store, lease_key: str, owner: str, lease: float) -> None:
        self._store, self._key, self._owner, self._lease = store, lease_key, owner, lease
        self._stop = threading.Event()
        self.lost = False
        self.beats = 0
        self._thread = threading.Thread(target=self._beat, name="guardrail-idempotency-heartbeat", daemon=True)

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self._lease / 3):
            try:
                renewed = self._store.compare_and_set(self._key, self._owner, self._owner, self._lease)
            except StoreError:
                continue
            self.beats += 1
            if not renewed:
                self.lost = True
                return


class Idempotency:
    """At-most-once execution per key over a :class:`~guardrail.store.Store` (see the module docstring).

    Args:
        store: where records and leases live; its atomicity and durability are this helper's.
        ttl: seconds an outcome (or an unknown run) is kept; after that the key is new again.
        wait: seconds a caller waits for another caller's running execution of the same key and arguments
            before :class:`~guardrail.errors.IdempotencyInFlight`.
        poll: seconds between looks while waiting.
        lease: seconds a claim lives without a heartbeat: how soon a vanished runner is noticed. The heartbeat
            renews it while the action runs, so it need not exceed the action's duration.
        max_result_bytes: the largest result text (UTF-8 bytes) stored; larger results are recorded as
            unstorable (the action ran once; callers get :class:`~guardrail.errors.ResultNotStorable`).
        rerun_safe: the action may run again when a run's outcome is unknown or it failed (no unknown state,
            failures are not recorded): today's "retry" behaviour, for actions without side effects.
        reconcile: asked when a run's outcome is unknown (see :data:`Reconcile`).
        prefix: prepended to every key, so idempotency records do not collide with quota counters or approvals
            kept in the same store.
        clock: monotonic clock for the wait deadline.
    """

    def __init__(
        self,
        store: Store,
        *,
        ttl: float = 86400.0,
        wait: float = 30.0,
        poll: float = 0.01,
        lease: float = DEFAULT_LEASE,
        max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
        rerun_safe: bool = False,
        reconcile: Reconcile | None = None,
        prefix: str = "idempotency:",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_ttl(ttl)
        check_ttl(poll, "poll")
        check_ttl(lease, "lease")
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not math.isfinite(wait) or wait < 0:
            raise ConfigError(f"wait must be a finite number of seconds >= 0, got {wait!r}")
        if isinstance(max_result_bytes, bool) or not isinstance(max_result_bytes, int) or max_result_bytes < 1:
            raise ConfigError(f"max_result_bytes must be an int >= 1, got {max_result_bytes!r}")
        self.store = store
        self.ttl = ttl
        self.wait = wait
        self.poll = poll
        self.lease = lease
        self.max_result_bytes = max_result_bytes
        self.rerun_safe = rerun_safe
        self.reconcile = reconcile
        self.prefix = prefix
        self.clock = clock

    # -- public API ------------------------------------------------------------------------------------------------

    def run(self, key: str, fingerprint: str, execute: Callable[[], Any],
            serialize: Callable[[Any], str] | None = None, *, label: str | None = None) -> tuple[str, bool]:
        """Run ``execute`` at most once for ``key``; returns ``(result_text, replayed)``.

        ``serialize`` turns the action's return value into the stored text (default: it must already be a
        ``str``). Raises :class:`~guardrail.errors.IdempotencyConflict`, ``IdempotencyInFlight``,
        ``IdempotencyUnknown``, ``IdempotencyFailed`` (a replayed failure), ``ResultNotStorable``, what the action
        raised (first run only, after recording it), and ``StoreUnavailable`` / ``StoreError``. Errors name the
        key as ``label`` when given (the caller's key, when ``key`` is an internal scoped form of it).
        """
        return self._drive(self._flow(key, label or key, fingerprint, serialize or _require_text), execute)

    async def arun(self, key: str, fingerprint: str, execute: Callable[[], Awaitable[Any]],
                   serialize: Callable[[Any], str] | None = None, *, label: str | None = None) -> tuple[str, bool]:
        """:meth:`run` for coroutines: store calls run in threads, waits use ``asyncio.sleep``. A task cancelled
        while the action runs leaves the run's outcome unknown (it may have taken effect)."""
        return await self._adrive(self._flow(key, label or key, fingerprint, serialize or _require_text), execute)

    def replay(self, key: str, fingerprint: str, *, label: str | None = None) -> str | None:
        """The recorded outcome for ``key`` with these arguments without claiming anything: the result text, or
        ``None`` if there is none (absent, running, unknown, or other arguments); a recorded failure or unstorable
        result raises its error, as :meth:`run` would."""
        text = self._drive(self._peek_flow(key, label or key), None)
        if text is None:
            return None
        record = _decode(label or key, text)
        if record["fingerprint"] != fingerprint or record["state"] == "started":
            return None
        return self._replayed(label or key, record)

    def resolve(self, key: str, *, result: str | None = None, failed: bool = False, label: str | None = None) -> bool:
        """Settle a run whose outcome is unknown, once the application knows what happened.

        ``result``: it took effect and this is its result text (replayed from now on). ``failed=True``: it took no
        effect, and the key may run again. Returns ``False`` if there was nothing unknown to settle (no record, or
        an outcome already recorded); raises :class:`~guardrail.errors.IdempotencyInFlight` while a runner still
        holds the key.
        """
        if (result is None) == (not failed):
            raise ConfigError("resolve needs exactly one of result=... or failed=True")
        return self._drive(self._resolve_flow(key, label or key, result), None)

    def discard(self, key: str, fingerprint: str, *, result: str | None = None, label: str | None = None) -> bool:
        """Remove a recorded outcome the caller cannot use, so the key runs again (a response cache's stale entry).

        Removes the ``done`` record of ``result`` (any ``done`` record when ``None``), or whatever the key holds
        that is not a usable record of ``fingerprint`` (unreadable text, another fingerprint, a ``failed`` or
        ``unstorable`` record). Never a ``started`` record (a run in progress, or an unknown outcome), and never a
        record that changed since it was read (the delete is conditional). ``True`` if something was removed.
        """
        return self._drive(self._discard_flow(key, label or key, fingerprint, result), None)

    # -- the protocol (one generator for sync and async) -----------------------------------------------------------

    def _op(self, key: str, method: str, *args: Any, claimed: bool | None = False, executed: bool = False,
            stored: bool | None = None) -> _Flow[Any]:
        """One store call; a store error gets the caller's key and what is known about the key's state."""
        try:
            return (yield _StoreOp(method, args))
        except StoreError as error:
            error.key, error.claimed, error.executed, error.result_stored = key, claimed, executed, stored
            raise

    def _acquire(self, key: str, lease_key: str, owner: str) -> _Flow[bool]:
        """Take the lease; a write that failed is read back and removed if it landed (no ghost claims)."""
        try:
            taken = yield _StoreOp("put_if_absent", (lease_key, owner, self.lease))
        except StoreError as error:
            error.key, error.claimed = key, None
            try:
                if (yield _StoreOp("get", (lease_key,))) == owner:
                    yield _StoreOp("delete_if", (lease_key, owner))
                error.claimed = False
            except StoreError:
                error.add_note(f"guardrail: the claim may have landed; it expires within {self.lease:g} s")
            raise error from error.__cause__
        if taken:
            return True
        # A client that retries on timeouts may have written our own lease on its first try.
        held = yield from self._op(key, "get", lease_key)
        return bool(held == owner)

    def _release(self, key: str, lease_key: str, owner: str, error: BaseException | None = None) -> _Flow[None]:
        """Give the lease back. A failure is not the caller's problem: the lease expires within ``lease`` seconds,
        and a final record is read before any lease, so it only delays an "unknown" verdict by that much."""
        try:
            yield _StoreOp("delete_if", (lease_key, owner))
        except StoreError as release_error:
            if error is not None:
                error.add_note(f"guardrail: releasing the lease of {key!r} failed ({release_error}); it expires "
                               f"within {self.lease:g} s")

    def _replayed(self, key: str, record: dict[str, Any]) -> str:
        state = record["state"]
        if state == "done":
            result: str = record["result"]
            return result
        if state == "failed":
            raise IdempotencyFailed(key, str(record.get("error_type", "Exception")), str(record.get("message", "")))
        raise ResultNotStorable(key, str(record.get("reason", "")), str(record.get("preview", "")))

    def _final(self, key: str, fingerprint: str, result: Any,
               serialize: Callable[[Any], str]) -> tuple[str, ResultNotStorable | None]:
        """The record to store after a completed run, and the error every caller gets if it is unstorable."""
        reason = None
        try:
            text = serialize(result)
            size = len(text.encode("utf-8"))
        except Exception as error:
            reason = f"it cannot be serialized: {type(error).__name__}: {redact_text(str(error))[:200]}"
        else:
            if size > self.max_result_bytes:
                reason = f"it is {size} bytes of text; the limit is {self.max_result_bytes}"
            else:
                return _dumps({"state": "done", "fingerprint": fingerprint, "result": text}), None
        preview = _preview(result)
        record = _dumps({"state": "unstorable", "fingerprint": fingerprint, "reason": reason, "preview": preview})
        return record, ResultNotStorable(key, reason, preview)

    def _flow(self, name: str, key: str, fingerprint: str,
              serialize: Callable[[Any], str]) -> _Flow[tuple[str, bool]]:
        full, lease_key = self.prefix + name, self.prefix + name + LEASE_SUFFIX
        owner = secrets.token_hex(16)
        deadline = self.clock() + self.wait
        while True:
            text = yield from self._op(key, "get", full)
            if text is not None:
                record = _decode(key, text)
                if record["fingerprint"] != fingerprint:
                    raise IdempotencyConflict(key)
                if record["state"] in _FINAL:
                    return self._replayed(key, record), True
            # While a runner holds the lease, waiting is a read; only a free-looking key is worth a claim write.
            held = text is not None and (yield from self._op(key, "get", lease_key)) is not None
            if not held and (yield from self._acquire(key, lease_key, owner)):
                break
            if self.clock() >= deadline:
                raise IdempotencyInFlight(key, self.wait)
            yield _Sleep(self.poll)
        # We hold the lease: nobody else is deciding about this key now.
        try:
            started = yield from self._start(key, fingerprint, full)
        except BaseException as error:
            yield from self._release(key, lease_key, owner, error)
            raise
        if isinstance(started, tuple):  # replayed (an outcome appeared, or the reconcile hook answered)
            yield from self._release(key, lease_key, owner)
            return started
        return (yield from self._execute(key, fingerprint, full, lease_key, owner, started, serialize))

    def _start(self, key: str, fingerprint: str, full: str) -> _Flow[str | tuple[str, bool]]:
        """Write our started record (the lease is held); or the outcome to replay instead."""
        while True:
            text = yield from self._op(key, "get", full, claimed=True)
            attempt = 1
            if text is not None:
                record = _decode(key, text)
                if record["fingerprint"] != fingerprint:
                    raise IdempotencyConflict(key)
                if record["state"] in _FINAL:
                    return self._replayed(key, record), True
                # Started, and nobody holds the lease: that runner vanished. The outcome is unknown.
                unknown = IdempotencyUnknown(key, float(record.get("started_at", 0.0)), int(record.get("attempt", 1)))
                if not self.rerun_safe:
                    verdict = None if self.reconcile is None else (yield _AskReconcile(unknown))
                    if verdict is None:
                        raise unknown
                    if not isinstance(verdict, _NotExecuted):
                        if not isinstance(verdict, str):
                            raise UsageError(f"a reconcile hook returns result text, NOT_EXECUTED or None, "
                                            f"got {type(verdict).__name__}")
                        done = _dumps({"state": "done", "fingerprint": fingerprint, "result": verdict})
                        if (yield from self._op(key, "compare_and_set", full, text, done, self.ttl, claimed=True)):
                            return verdict, True
                        continue
                attempt = unknown.attempt + 1
            started = _dumps({"state": "started", "fingerprint": fingerprint, "owner": secrets.token_hex(16),
                              "attempt": attempt, "started_at": time.time()})
            if text is None:
                written = yield from self._op(key, "put_if_absent", full, started, self.ttl, claimed=True)
            else:
                written = yield from self._op(key, "compare_and_set", full, text, started, self.ttl, claimed=True)
            if written:
                return started
            # The record changed under us (a late runner recorded its outcome): look again.

    def _execute(self, key: str, fingerprint: str, full: str, lease_key: str, owner: str, started: str,
                 serialize: Callable[[Any], str]) -> _Flow[tuple[str, bool]]:
        try:
            result = yield _Act(lease_key, owner)
        except NothingHappened as error:
            yield from self._forget(key, full, started, lease_key, owner, error)
            raise
        except Exception as error:
            if self.rerun_safe:
                yield from self._forget(key, full, started, lease_key, owner, error)
                raise
            failed = _dumps({"state": "failed", "fingerprint": fingerprint, "error_type": type(error).__name__,
                             "message": redact_text(str(error))[:500]})
            yield from self._record(key, full, started, failed, error)
            yield from self._release(key, lease_key, owner, error)
            raise
        except BaseException as error:  # interrupted (Ctrl-C, cancelled): it may have taken effect
            if self.rerun_safe:
                yield from self._forget(key, full, started, lease_key, owner, error)
            else:
                error.add_note(f"guardrail: idempotency key {key!r} was interrupted mid-run; its outcome is "
                               "unknown until resolved")
                yield from self._release(key, lease_key, owner, error)
            raise
        final, unstorable = self._final(key, fingerprint, result, serialize)
        yield from self._record(key, full, started, final, unstorable)
        yield from self._release(key, lease_key, owner, unstorable)
        if unstorable is not None:
            raise unstorable
        return json.loads(final)["result"], False

    def _record(self, key: str, full: str, started: str, final: str, error: BaseException | None) -> _Flow[None]:
        """Replace our started record with the outcome, only if it is still ours (fencing)."""
        try:
            if not (yield from self._op(key, "compare_and_set", full, started, final, self.ttl, claimed=True,
                                        executed=True, stored=False)):
                # Not ours any more: resolved or re-run meanwhile (their record stands), or the store lost it
                # (then keep what we know, if the key is still free).
                yield from self._op(key, "put_if_absent", full, final, self.ttl, claimed=True, executed=True,
                                    stored=False)
        except StoreError as store_error:
            if error is None:
                raise
            error.add_note(f"guardrail: the outcome could not be recorded ({store_error}); the key's outcome "
                           "is unknown to later callers")

    def _forget(self, key: str, full: str, started: str, lease_key: str, owner: str,
                error: BaseException) -> _Flow[None]:
        """Release the key entirely: the run had no effect (or may run again)."""
        try:
            yield _StoreOp("delete_if", (full, started))
        except StoreError as store_error:
            error.add_note(f"guardrail: releasing the key failed ({store_error}); later callers see an unknown "
                           "outcome")
        yield from self._release(key, lease_key, owner, error)

    def _peek_flow(self, name: str, key: str) -> _Flow[str | None]:
        text: str | None = yield from self._op(key, "get", self.prefix + name)
        return text

    def _discard_flow(self, name: str, key: str, fingerprint: str, result: str | None) -> _Flow[bool]:
        full = self.prefix + name
        text = yield from self._op(key, "get", full)
        if text is None:
            return False
        try:
            record: dict[str, Any] | None = _decode(key, text)
        except IdempotencyConflict:
            record = None
        if record is not None and record["fingerprint"] == fingerprint and (
                record["state"] == "started" or (record["state"] == "done" and result not in (None, record["result"]))):
            return False
        return bool((yield from self._op(key, "delete_if", full, text)))

    def _resolve_flow(self, name: str, key: str, result: str | None) -> _Flow[bool]:
        full, lease_key = self.prefix + name, self.prefix + name + LEASE_SUFFIX
        owner = secrets.token_hex(16)
        if not (yield from self._acquire(key, lease_key, owner)):
            raise IdempotencyInFlight(key, 0.0)
        try:
            text = yield from self._op(key, "get", full, claimed=True)
            if text is None or (record := _decode(key, text))["state"] != "started":
                return False
            if result is None:
                return bool((yield from self._op(key, "delete_if", full, text, claimed=True)))
            done = _dumps({"state": "done", "fingerprint": record["fingerprint"], "result": result})
            return bool((yield from self._op(key, "compare_and_set", full, text, done, self.ttl, claimed=True)))
        finally:
            yield from self._release(key, lease_key, owner)

    # -- drivers: thin shells that perform the operations the protocol yields ---------------------------------------

    def _drive(self, flow: _Flow[_T], execute: Callable[[], Any] | None) -> _T:
        reply: _Reply = (None, None)
        while True:
            finished, step = advance(flow, reply)
            if finished:
                return cast(_T, step)
            try:
                if isinstance(step, _Sleep):
                    time.sleep(step.seconds)
                    reply = (None, None)
                elif isinstance(step, _Act):
                    assert execute is not None
                    with self._heartbeat(step):
                        reply = (execute(), None)
                else:
                    call, args = self._blocking(step)
                    reply = (call(*args), None)
            except BaseException as raised:
                reply = (None, raised)

    async def _adrive(self, flow: _Flow[_T], execute: Callable[[], Awaitable[Any]]) -> _T:
        reply: _Reply = (None, None)
        while True:
            finished, step = advance(flow, reply)
            if finished:
                return cast(_T, step)
            try:
                if isinstance(step, _Sleep):
                    await asyncio.sleep(step.seconds)
                    reply = (None, None)
                elif isinstance(step, _Act):
                    with self._heartbeat(step):
                        reply = (await execute(), None)
                else:
                    call, args = self._blocking(step)
                    reply = (await asyncio.to_thread(call, *args), None)  # blocking I/O off the event loop
            except BaseException as raised:
                reply = (None, raised)

    def _blocking(self, op: _StoreOp | _AskReconcile) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        """The blocking call behind a store operation or a reconcile question."""
        if isinstance(op, _StoreOp):
            return getattr(self.store, op.method), op.args
        assert self.reconcile is not None
        return self.reconcile, (op.unknown,)

    def _heartbeat(self, act: _Act) -> _Heartbeat:
        return _Heartbeat(self.store, act.lease_key, act.owner, self.lease)


#: What the last operation gave the protocol: its value, or the exception it raised.
_Reply = tuple[Any, BaseException | None]


def advance(flow: Generator[Any, Any, Any], reply: tuple[Any, BaseException | None]) -> tuple[bool, Any]:
    """Feed the protocol the last operation's value (or throw its exception in); ``(True, result)`` when the
    protocol finished, else ``(False, next operation)``. The one stepping rule every driver of an I/O-free
    protocol shares (these drivers, and the response cache's in :mod:`guardrail.call.cache`)."""
    value, error = reply
    try:
        return False, (flow.send(value) if error is None else flow.throw(error))
    except StopIteration as stop:
        return True, stop.value


def _require_text(result: Any) -> str:
    if not isinstance(result, str):
        # never escapes: the run's result is recorded as not storable, with this error's type in the reason
        raise UsageError(f"an idempotent action must return JSON text (str), got {type(result).__name__}")
    return result
