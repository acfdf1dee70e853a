"""A canary's shared record in a :class:`~guardrail.store.Store`: the two arms' counters and the decision.

Every process that opens a canary of the same name on the same store (one SQLite file, one Redis server) reads and
writes the same keys, so they count together and see the same decision:

- ``guardrail:canary:{NAME}:started``: when the experiment began (its first call);
- ``...:{ARM}:calls``, ``...:{ARM}:failures`` and ``...:{ARM}:kind:{KIND}``: counters, each added to with
  :meth:`~guardrail.store.Store.add_within_limit` (one atomic operation: a Lua script on Redis, one transaction on
  SQLite, so processes counting at once never retry), ``calls`` first; :meth:`Ledger.tallies` reads ``failures``
  before ``calls``, so it never sees more failures than calls. A process that dies between the two adds of a
  failure leaves one valid call counted for it (never a failure that was not);
- ``...:kinds``: the failure kinds seen so far (a JSON list, grown by compare-and-set), to read the counts by kind;
- ``...:decision``: the decision once made (JSON), written with ``put_if_absent``, so the first decision any
  process makes is the one every process follows.

``{NAME}`` is a Redis hash tag: every key of one canary lives in one cluster slot. The experiment lives ``ttl``
seconds from its first call; every key expires then (each counter's window is set to end at that moment), and a
canary of that name afterwards starts over.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any, Final, Literal

from guardrail.canary.stats import Tally
from guardrail.errors import ConfigError
from guardrail.store.base import Store, check_ttl, parse_number

__all__ = ["ARMS", "Arm", "Ledger"]

Arm = Literal["control", "candidate"]
ARMS: Final[tuple[Arm, Arm]] = ("control", "candidate")

#: Counters never refuse an add (the store's counters are limits; a canary only counts). Totals are floats, exact
#: as integers up to 2**53.
_NO_LIMIT: Final = 2.0**53
#: At most this many failure kinds are counted by name; later ones count as ``other``.
MAX_KINDS: Final = 32
_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,100}")
_KIND_CHARS = re.compile(r"[^A-Za-z0-9_.\-]")
#: Compare-and-set attempts when growing the kinds list while other processes do the same.
_CAS_TRIES: Final = 50


def kind_label(kind: str) -> str:
    """A failure kind as it is stored: letters, digits, ``_.-`` only, at most 64 characters."""
    return _KIND_CHARS.sub("_", kind)[:64] or "unknown"


class Ledger:
    """The shared counters and decision of the canary ``name`` in ``store`` (see the module docstring)."""

    def __init__(self, store: Store, name: str, ttl: float) -> None:
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            raise ConfigError(f"a canary's name is 1-100 letters, digits or _.- (it names its store keys), got "
                              f"{name!r}")
        check_ttl(ttl)
        self.store = store
        self.name = name
        self.ttl = float(ttl)
        self._prefix = f"guardrail:canary:{{{name}}}:"
        self._ends: float | None = None
        self._kinds: set[str] = set()
        self._lock = threading.Lock()

    def _key(self, *parts: str) -> str:
        return self._prefix + ":".join(parts)

    def _left(self) -> float:
        """Seconds until the experiment's keys expire (starting the experiment on its first call)."""
        now = time.time()
        with self._lock:
            ends = self._ends
        if ends is None or ends - now <= 0.001:
            key = self._key("started")
            self.store.put_if_absent(key, repr(now), self.ttl)
            raw = self.store.get(key)
            ends = (float(raw) if raw is not None else now) + self.ttl
            with self._lock:
                self._ends = ends
        return max(ends - now, 0.001)

    # -- counting ------------------------------------------------------------------------------------------------
    def record(self, arm: Arm, failure: str | None) -> None:
        """Count one judged call of ``arm``: valid (``failure`` is ``None``) or failed with that kind."""
        left = self._left()
        self.store.add_within_limit(self._key(arm, "calls"), 1, _NO_LIMIT, left)
        if failure is not None:
            kind = self._known(kind_label(failure))
            self.store.add_within_limit(self._key(arm, "failures"), 1, _NO_LIMIT, left)
            self.store.add_within_limit(self._key(arm, "kind", kind), 1, _NO_LIMIT, left)

    def _known(self, kind: str) -> str:
        """``kind`` once it is in the shared list of kinds (added if there is room, else ``other``)."""
        if kind in self._kinds:
            return kind
        key = self._key("kinds")
        for _ in range(_CAS_TRIES):
            raw = self.store.get(key)
            kinds: list[str] = json.loads(raw) if raw else []
            self._kinds.update(kinds)
            if kind in kinds:
                return kind
            if len(kinds) >= MAX_KINDS:
                return "other"
            text = json.dumps(sorted([*kinds, kind]))
            left = self._left()
            if (self.store.put_if_absent(key, text, left) if raw is None
                    else self.store.compare_and_set(key, raw, text, left)):
                self._kinds.add(kind)
                return kind
        return "other"

    def _count(self, *parts: str) -> int:
        key = self._key(*parts)
        raw = self.store.get(key)
        return 0 if raw is None else int(parse_number(key, raw))

    def tallies(self) -> tuple[Tally, Tally]:
        """(control, candidate) as every process counted them."""
        found = []
        for arm in ARMS:
            failures = self._count(arm, "failures")  # read first: calls only grow, so failures <= calls holds
            found.append(Tally(max(self._count(arm, "calls"), failures), failures))
        return found[0], found[1]

    def kinds(self, arm: Arm) -> dict[str, int]:
        """``arm``'s failures by kind."""
        raw = self.store.get(self._key("kinds"))
        names: list[str] = [*json.loads(raw)] if raw else []
        counts = {kind: self._count(arm, "kind", kind) for kind in [*names, "other"]}
        return {kind: count for kind, count in sorted(counts.items()) if count}

    # -- the decision --------------------------------------------------------------------------------------------
    def decision(self) -> dict[str, Any] | None:
        """The decision every process follows, or ``None`` while the experiment is live."""
        raw = self.store.get(self._key("decision"))
        return None if raw is None else dict(json.loads(raw))

    def settle(self, record: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Make ``record`` the decision unless one was made already; (the decision that holds, whether it is ours)."""
        key = self._key("decision")
        for _ in range(_CAS_TRIES):
            if self.store.put_if_absent(key, json.dumps(record, sort_keys=True), self._left()):
                return record, True
            held = self.decision()
            if held is not None:
                return held, False
            # it expired between the two reads: try again
        return record, False

    def clear(self) -> None:
        """Forget the experiment: counters, kinds and decision (every process starts over with the next call)."""
        raw = self.store.get(self._key("kinds"))
        kinds: list[str] = [*json.loads(raw)] if raw else []
        keys = [self._key("decision"), self._key("kinds"), self._key("started")]
        for arm in ARMS:
            keys += [self._key(arm, "calls"), self._key(arm, "failures")]
            keys += [self._key(arm, "kind", kind) for kind in [*kinds, "other"]]
        for key in keys:
            value = self.store.get(key)
            if value is not None:
                self.store.delete_if(key, value)
        with self._lock:
            self._ends = None
            self._kinds.clear()
