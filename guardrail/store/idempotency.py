"""Run an action at most once per idempotency key, on any :class:`~guardrail.store.Store`.

A caller (a tool executor, typically) passes a key (the idempotency key the model or the app chose), a fingerprint
of the arguments (e.g. a SHA-256 of their canonical JSON) and the action. The first caller claims the key and runs
the action; everyone else with the same key and fingerprint waits for and replays its result; a caller with the same
key and *different* arguments is refused. Correctness rests only on the store's atomic operations, so with
:class:`~guardrail.store.SQLiteStore` or :class:`~guardrail.store.RedisStore` it holds across processes too.

Records (small JSON strings, stored under ``prefix + key``)::

    {"state":"in_flight","fingerprint":"...","owner":"<random hex>"}   while the action runs
    {"state":"done","fingerprint":"...","result":"<the result text>"}   afterwards, for ``ttl`` seconds

The ``owner`` token makes each claim unique, so an executor whose claim expired can never overwrite or delete a
newer claim of the same key. The in-flight record has a time to live of its own, ``in_flight_ttl`` (default
``min(ttl, 300)`` seconds): if an executor crashes, its claim expires and the key can run again. An action that runs
longer than ``in_flight_ttl`` can therefore be started a second time by a caller who arrives after the claim expired;
raise ``in_flight_ttl`` for long actions.

The result must be JSON text (it is what the tool executor hands back to the model); it is stored as a JSON string
inside the record and replayed byte for byte. A failed action stores nothing: the claim is released and the next
caller runs the action again.
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import time
from collections.abc import Awaitable, Callable

from guardrail.errors import GuardrailError
from guardrail.store.base import Store, check_ttl

__all__ = ["MAX_IN_FLIGHT_TTL", "Idempotency", "IdempotencyConflict", "IdempotencyInFlight"]

#: Default cap on an in-flight claim's time to live: how long a crashed executor can block its key.
MAX_IN_FLIGHT_TTL = 300.0


class IdempotencyConflict(GuardrailError):
    """The key was already used with different arguments (another fingerprint); the action was not run.

    Attributes:
        key: the idempotency key.
    """

    def __init__(self, key: str, detail: str = "was already used with different arguments") -> None:
        super().__init__(f"idempotency key {key!r} {detail}")
        self.key = key


class IdempotencyInFlight(GuardrailError):
    """The same key and arguments were still executing elsewhere after waiting; the action was not run here.

    Attributes:
        key: the idempotency key.
        waited: seconds waited for the other execution to finish.
    """

    def __init__(self, key: str, waited: float) -> None:
        super().__init__(f"idempotency key {key!r} is still executing elsewhere after waiting {waited:g} s")
        self.key = key
        self.waited = waited


def _dumps(record: dict[str, str]) -> str:
    return json.dumps(record, separators=(",", ":"))


def _decode(key: str, text: str) -> tuple[str, str | None]:
    """A stored record as ``(fingerprint, result)``; ``result`` is ``None`` while the action is in flight."""
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if isinstance(record, dict) and isinstance(record.get("fingerprint"), str):
        if record.get("state") == "in_flight":
            return record["fingerprint"], None
        if record.get("state") == "done" and isinstance(record.get("result"), str):
            return record["fingerprint"], record["result"]
    raise IdempotencyConflict(key, "holds a value that is not an idempotency record")


class Idempotency:
    """At-most-once execution per key over a :class:`~guardrail.store.Store` (see the module docstring).

    Args:
        store: where claims and results live; its atomicity is this helper's atomicity.
        ttl: seconds a finished result is kept (and replayed); after that the key runs again.
        wait: seconds a caller waits for another caller's in-flight execution of the same key and arguments
            before :class:`IdempotencyInFlight`.
        poll: seconds between looks at an in-flight record while waiting.
        in_flight_ttl: time to live of a claim, i.e. how long a crashed executor blocks the key; default
            ``min(ttl, 300)``. Keep it above the longest action.
        prefix: prepended to every key, so idempotency records do not collide with quota counters or approvals
            kept in the same store.
    """

    def __init__(
        self,
        store: Store,
        *,
        ttl: float = 86400.0,
        wait: float = 30.0,
        poll: float = 0.01,
        in_flight_ttl: float | None = None,
        prefix: str = "idempotency:",
    ) -> None:
        check_ttl(ttl)
        check_ttl(poll, "poll")
        if not math.isfinite(wait) or wait < 0:
            raise ValueError(f"wait must be a finite number of seconds >= 0, got {wait!r}")
        self.in_flight_ttl = min(ttl, MAX_IN_FLIGHT_TTL) if in_flight_ttl is None else in_flight_ttl
        check_ttl(self.in_flight_ttl, "in_flight_ttl")
        self.store = store
        self.ttl = ttl
        self.wait = wait
        self.poll = poll
        self.prefix = prefix

    def _claim(self, fingerprint: str) -> str:
        return _dumps({"state": "in_flight", "fingerprint": fingerprint, "owner": secrets.token_hex(8)})

    @staticmethod
    def _done(fingerprint: str, result: object) -> str:
        if not isinstance(result, str):
            raise TypeError(f"an idempotent action must return JSON text (str), got {type(result).__name__}")
        return _dumps({"state": "done", "fingerprint": fingerprint, "result": result})

    def _seen(self, key: str, fingerprint: str, text: str, deadline: float) -> str | None:
        """Judge an existing record: its result to replay, ``None`` to keep waiting, or raise."""
        stored_fingerprint, result = _decode(key, text)
        if stored_fingerprint != fingerprint:
            raise IdempotencyConflict(key)
        if result is None and time.monotonic() >= deadline:
            raise IdempotencyInFlight(key, self.wait)
        return result

    def _release_failed(self, error: BaseException, release_error: Exception) -> None:
        error.add_note(
            f"guardrail: releasing the idempotency claim failed ({release_error!r}); "
            f"the key stays blocked until the claim expires ({self.in_flight_ttl:g} s)"
        )

    def _save(self, full: str, claim: str, done: str) -> None:
        """Replace our claim with the done record; store errors propagate with a note that the action did run."""
        try:
            # If the claim expired meanwhile (the action outlived in_flight_ttl), keep the result if the key is free;
            # if someone else claimed it since, their record stands and our result goes to our caller only.
            if not self.store.compare_and_set(full, claim, done, self.ttl):
                self.store.put_if_absent(full, done, self.ttl)
        except Exception as error:
            error.add_note(
                "guardrail: the idempotent action ran, but its result could not be recorded; "
                f"the key stays blocked until the claim expires ({self.in_flight_ttl:g} s), then runs again"
            )
            raise

    def run(self, key: str, fingerprint: str, execute: Callable[[], str]) -> tuple[str, bool]:
        """Run ``execute`` at most once for ``key``; returns ``(result_json, replayed)``.

        Raises :class:`IdempotencyConflict` if the key holds another fingerprint, :class:`IdempotencyInFlight` if
        another execution of it is still running after ``wait`` seconds, and whatever ``execute`` raises (after
        releasing the claim, so nothing is stored). Store errors propagate.
        """
        full = self.prefix + key
        claim = self._claim(fingerprint)
        deadline = time.monotonic() + self.wait
        while True:
            if self.store.put_if_absent(full, claim, self.in_flight_ttl):
                try:
                    result = execute()
                    done = self._done(fingerprint, result)
                except BaseException as error:
                    try:
                        self.store.delete_if(full, claim)
                    except Exception as release_error:
                        self._release_failed(error, release_error)
                    raise
                self._save(full, claim, done)
                return result, False
            while (text := self.store.get(full)) is not None:
                replay = self._seen(key, fingerprint, text, deadline)
                if replay is not None:
                    return replay, True
                time.sleep(self.poll)
            # The record vanished: the executor failed (or its claim expired). Try to claim it ourselves.

    async def arun(self, key: str, fingerprint: str, execute: Callable[[], Awaitable[str]]) -> tuple[str, bool]:
        """:meth:`run` for coroutines: store calls run in threads (``asyncio.to_thread``), waits use ``asyncio.sleep``.

        If the task is cancelled while ``execute`` runs, the claim is released as for any failure; releasing and
        saving the result are shielded from cancellation so they always reach the store.
        """
        full = self.prefix + key
        claim = self._claim(fingerprint)
        deadline = time.monotonic() + self.wait
        store = self.store
        while True:
            if await asyncio.to_thread(store.put_if_absent, full, claim, self.in_flight_ttl):
                try:
                    result = await execute()
                    done = self._done(fingerprint, result)
                except BaseException as error:
                    try:
                        await asyncio.shield(asyncio.to_thread(store.delete_if, full, claim))
                    except Exception as release_error:
                        self._release_failed(error, release_error)
                    raise
                await asyncio.shield(asyncio.to_thread(self._save, full, claim, done))
                return result, False
            while (text := await asyncio.to_thread(store.get, full)) is not None:
                replay = self._seen(key, fingerprint, text, deadline)
                if replay is not None:
                    return replay, True
                await asyncio.sleep(self.poll)
