"""Named lists of strings in a store, each with a version: the allow-lists a policy reads when a call is judged.

A policy rule can say ``list = "payees:{tenant}"`` (see :mod:`guardrail.tools.policy.model`): the gate reads
that list from the store at the moment it judges the call, so a payee the application added a second ago is
already known. The application keeps the lists up to date through :class:`Lists`::

    lists = Lists(store)
    lists.add("payees:acme", "DE89370400440532013000")     # -> ListSnapshot(version=1, members=...)
    lists.remove("payees:acme", "DE89370400440532013000")  # -> version 2
    lists.read("payees:acme").members                      # frozenset()

Each list is one value in the store (its version and sorted members, as JSON) under ``list:<name>``, changed by
compare-and-set: every change reads the list, makes the new one and writes it only if nobody changed it in
between (else reads again). So a list works on every :class:`~guardrail.store.Store` backend without anything
added to the protocol, a reader always sees one whole version (members and version number together), and two
processes adding at once both land. The version counts changes from 1; a list never written reads as version 0
with no members. Each change keeps the list for :data:`LIST_TTL` more seconds (stores need a time to live).

Lists are meant for what an agent's allow-lists hold (payees, contacts, members: up to some thousands of
entries): every read fetches and, when it changed, parses the whole list. Members are exact strings (no case
folding): store them in the form the tools receive them.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from guardrail.errors import ConfigError, StoreError, UsageError
from guardrail.store.base import Store

__all__ = ["LIST_TTL", "MAX_MEMBER_CHARS", "ListSnapshot", "Lists", "lists_of"]

#: Seconds a list is kept after its last change (ten years: stores need a finite time to live).
LIST_TTL = 10 * 365 * 86400.0
#: Longest member accepted, in characters.
MAX_MEMBER_CHARS = 1024
#: Longest list name accepted, in bytes of UTF-8 (the store key adds the prefix; keys hold 512 bytes).
MAX_NAME_BYTES = 256
_PREFIX = "list:"
_TRIES = 200
_CACHED = 64


@dataclass(frozen=True, slots=True)
class ListSnapshot:
    """One version of a list: ``version`` counts its changes (0: never written) and ``members`` is what it held."""

    name: str
    version: int
    members: frozenset[str]

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and value in self.members


def _check_name(name: str) -> None:
    if not isinstance(name, str):
        raise UsageError(f"a list name is a str, not {type(name).__name__}")
    if not name or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        raise ConfigError(f"a list name has 1 to {MAX_NAME_BYTES} bytes of UTF-8: {name[:40]!r}")


def _check_members(values: Iterable[str]) -> list[str]:
    if isinstance(values, str):
        raise UsageError("members are given one by one (or as a collection), not as one string of characters")
    members = list(values)
    for value in members:
        if not isinstance(value, str):
            raise UsageError(f"list members are str, not {type(value).__name__}")
        if not value or len(value) > MAX_MEMBER_CHARS:
            raise ConfigError(f"a list member has 1 to {MAX_MEMBER_CHARS} characters, got {len(value)}")
    return members


class Lists:
    """The named lists held in ``store`` (see the module docstring); safe to share between threads."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._parsed: OrderedDict[str, tuple[str, ListSnapshot]] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, name: str) -> ListSnapshot:
        """The list's current version and members (version 0 and no members when it was never written)."""
        _check_name(name)
        return self._snapshot(name, self.store.get(_PREFIX + name))

    def add(self, name: str, *values: str) -> ListSnapshot:
        """Add ``values`` (members already there stay once); the new version (unchanged if nothing was new)."""
        members = _check_members(values)
        return self._change(name, lambda current: current | set(members))

    def remove(self, name: str, *values: str) -> ListSnapshot:
        """Remove ``values`` (those not there are ignored); the new version (unchanged if nothing was removed)."""
        members = _check_members(values)
        return self._change(name, lambda current: current - set(members))

    def replace(self, name: str, values: Iterable[str]) -> ListSnapshot:
        """Make the list hold exactly ``values``; the new version (unchanged if it already did)."""
        members = set(_check_members(values))
        return self._change(name, lambda current: members)

    def _snapshot(self, name: str, raw: str | None) -> ListSnapshot:
        if raw is None:
            return ListSnapshot(name, 0, frozenset())
        with self._lock:
            cached = self._parsed.get(name)
            if cached is not None and cached[0] == raw:
                self._parsed.move_to_end(name)
                return cached[1]
        try:
            data = json.loads(raw)
            version, members = data["version"], data["members"]
            if not isinstance(version, int) or not isinstance(members, list) \
                    or not all(isinstance(member, str) for member in members):
                raise TypeError
        except (ValueError, TypeError, KeyError):
            raise StoreError(f"store key {_PREFIX + name!r} holds something that is not a list",
                             operation="read list") from None
        snapshot = ListSnapshot(name, version, frozenset(members))
        with self._lock:
            self._parsed[name] = (raw, snapshot)
            while len(self._parsed) > _CACHED:
                self._parsed.popitem(last=False)
        return snapshot

    def _change(self, name: str, change: Callable[[set[str]], set[str]]) -> ListSnapshot:
        """Read, change, write by compare-and-set; again from the read when another writer came first."""
        _check_name(name)
        key = _PREFIX + name
        for _ in range(_TRIES):
            raw = self.store.get(key)
            current = self._snapshot(name, raw)
            members = change(set(current.members))
            if members == current.members:
                return current
            updated = ListSnapshot(name, current.version + 1, frozenset(members))
            text = json.dumps({"version": updated.version, "members": sorted(members)}, ensure_ascii=False)
            written = (self.store.put_if_absent(key, text, LIST_TTL) if raw is None
                       else self.store.compare_and_set(key, raw, text, LIST_TTL))
            if written:
                return updated
        raise StoreError(f"list {name!r} changed under {_TRIES} attempts in a row to change it; nothing was written",
                         operation="change list")


_BY_STORE: weakref.WeakKeyDictionary[Store, Lists] = weakref.WeakKeyDictionary()
_BY_STORE_LOCK = threading.Lock()


def lists_of(store: Store) -> Lists:
    """The :class:`Lists` of ``store``, one per store object (so its parsed lists are reused between calls)."""
    with _BY_STORE_LOCK:
        try:
            found = _BY_STORE.get(store)
            if found is None:
                found = _BY_STORE[store] = Lists(store)
        except TypeError:  # a store that cannot be weakly referenced (__slots__ without __weakref__)
            return Lists(store)
    return found
