"""What the gate consults besides a call's arguments, and the record of what it read.

Some conditions cannot be judged from the arguments alone: ``list = "payees:{tenant}"`` reads a list from the
store, ``source = "user"`` asks the run's content (:mod:`guardrail.tools.provenance`), ``changed = true`` compares
with the current values of the object the call changes (the tool's ``current`` hook). A :class:`Facts` holds
those sources for one call, every one of them from the trusted runtime (the identity, the application's store,
the run context, the application's hook), never from the model. It reads each list once per call (so a call is
judged against one version of it) and keeps what it read for the audit record: each list's name and version,
and each provenance check with a hash of the value (never the value or the content) and where it was seen.

A list that refuses what is on it (``not_list`` as a constraint or in an allow rule, ``list`` in a deny or approve
rule) holds every spelling of its members (:func:`loose_keys`); a list that admits holds exact strings.

Where a fact is missing (no identity to name a tenant's list, no run context, no current values), the check
says so with a reason starting ``"cannot be judged"``: a constraint refuses the call, an allow condition is not
met, a deny or approve condition is (fail closed), as for any condition that cannot judge its value.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from guardrail.errors import ConfigError
from guardrail.store.lists import Lists, ListSnapshot
from guardrail.tools.identity import Identity
from guardrail.tools.policy.arguments import Location
from guardrail.tools.policy.finders import MAX_NEEDLE_CHARS, normal_text, whole_item
from guardrail.tools.provenance import MAX_SCAN_CHARS, Piece, RunContext, ScanBudget

__all__ = ["UNJUDGED", "Facts", "check_list_template", "list_name", "loose_keys"]

#: How a fact-based check that could not run starts its reason.
UNJUDGED = "cannot be judged"
#: The placeholders a list name may use: fields of the caller's identity.
PLACEHOLDERS = ("tenant", "user")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NO_CURRENT: Any = object()
_MAX_SEEN = 5


def check_list_template(template: str) -> str:
    """``template`` if it is a usable list name (placeholders ``{tenant}`` and ``{user}`` only), else
    :class:`ConfigError` saying why (the policy loader reports it with the line)."""
    if not template or len(template) > 200:
        raise ConfigError("a list name has 1 to 200 characters")
    for name in _PLACEHOLDER.findall(template):
        if name not in PLACEHOLDERS:
            raise ConfigError(f"unknown placeholder {{{name}}} in list name {template!r}: use "
                              + " or ".join(f"{{{p}}}" for p in PLACEHOLDERS))
    if "{" in _PLACEHOLDER.sub("", template) or "}" in _PLACEHOLDER.sub("", template):
        raise ConfigError(f"unbalanced brace in list name {template!r}")
    between = _PLACEHOLDER.split(template)[2:-1:2]  # the text between two placeholders
    if any(":" not in text for text in between):
        raise ConfigError(f"in list name {template!r}, two placeholders must be apart by text with a ':' (an "
                          "identity's ':' is escaped, so then no two identities name one list)")
    return template


def _escaped(value: str) -> str:
    """An identity field as it goes into a list name: ``%`` and ``:`` escaped, so that no two identities share one
    list name (``("a:b", "c")`` and ``("a", "b:c")`` stay apart)."""
    return value.replace("%", "%25").replace(":", "%3A")


def list_name(template: str, who: Identity | None) -> str | None:
    """The list ``template`` names for the caller ``who``; ``None`` when a placeholder has no value (an anonymous
    caller, an identity without a tenant)."""
    missing = False

    def fill(match: re.Match[str]) -> str:
        nonlocal missing
        value = getattr(who, match.group(1), None) if who is not None else None
        if not isinstance(value, str) or not value:
            missing = True
            return ""
        return _escaped(value)

    name = _PLACEHOLDER.sub(fill, template)
    return None if missing else name


def loose_keys(value: str) -> frozenset[str]:
    """The forms under which ``value`` is the same value to whoever finally reads it: its text NFKC, case-folded,
    without invisible characters or white space (``GB29 NWBK ...`` and ``gb29nwbk...``, ``EVE@evil.com`` and
    ``eve@evil.com``), and, when it is one URL, e-mail address or IBAN, that item's normal form. A list that
    *refuses* a value (``list`` in a deny or approve rule, ``not_list`` elsewhere) matches on these, so no
    spelling slips past it; a list that admits matches exact strings."""
    keys = {"".join(normal_text(value).split())}
    item = whole_item(value)
    if item is not None:
        keys.add(f"{item.kind}:{item.value}")
    return frozenset(keys)


@functools.lru_cache(maxsize=64)
def _loose_members(snapshot: ListSnapshot) -> frozenset[str]:
    """Every loose key of a list's members, once per version of the list (snapshots are reused while unchanged)."""
    return frozenset(key for member in snapshot.members for key in loose_keys(member))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Facts:
    """The facts for judging one call (module docstring). ``current`` is the mapping the tool's ``current`` hook
    returned (``None``: the object does not exist, every value given counts as a change); leave it out when there
    is no hook. ``secret`` names the arguments whose provenance records carry no hash."""

    def __init__(self, who: Identity | None, *, lists: Lists | None = None, run: RunContext | None = None,
                 current: Mapping[str, Any] | None = _NO_CURRENT, secret: frozenset[str] = frozenset()) -> None:
        self.who = who
        self.run = run
        self._lists = lists
        self._current = current
        self._secret = secret
        self._snapshots: dict[str, ListSnapshot] = {}
        self._sightings: dict[tuple[str, tuple[str, ...]], list[tuple[str, str, list[Piece]]]] = {}
        self._budget = ScanBudget()
        self._checks: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    # ------------------------------------------------------------------------------------------------- lists

    def members(self, template: str) -> ListSnapshot | str:
        """The list ``template`` names for this caller, read once per call; or why it cannot be read."""
        name = list_name(template, self.who)
        if name is None:
            return f"{UNJUDGED}: the list name {template!r} needs an identity with that field"
        if self._lists is None:
            return f"{UNJUDGED}: no store to read lists from"
        if name not in self._snapshots:
            try:
                self._snapshots[name] = self._lists.read(name)
            except ConfigError as error:  # a name the identity made too long for a store key
                return f"{UNJUDGED}: {error}"
        return self._snapshots[name]

    @staticmethod
    def holds(snapshot: ListSnapshot, value: Any, *, loose: bool) -> bool:
        """Whether ``value`` is a member of ``snapshot``: exactly, or (``loose``, for a list that refuses) under
        any spelling :func:`loose_keys` takes for the same value, a whole number also as its digits (an account
        number sent as ``12345`` is the listed ``"12345"``)."""
        if value in snapshot:
            return True
        if loose and not isinstance(value, bool) and isinstance(value, (int, float)) \
                and float(value).is_integer() and abs(value) < 1e16:
            value = str(int(value))
        return loose and isinstance(value, str) and not loose_keys(value).isdisjoint(_loose_members(snapshot))

    @property
    def lists_read(self) -> list[dict[str, Any]]:
        """Each list read for this call, with the version read (for the audit record)."""
        return [{"list": name, "version": snapshot.version} for name, snapshot in self._snapshots.items()]

    # ------------------------------------------------------------------------------------------------ provenance

    def sightings(self, text: str, kinds: tuple[str, ...]) -> list[tuple[str, str, list[Piece]]] | str:
        """:meth:`RunContext.sightings` for this call (computed once per value), or why it cannot be judged."""
        if self.run is None:
            return f"{UNJUDGED}: no run context (guardrail.tools.run_context) says where values came from"
        if not self.run.complete:
            return f"{UNJUDGED}: the run's content outgrew its limit; where values came from is unknown"
        if not kinds and len(text) > MAX_NEEDLE_CHARS and len(normal_text(text)) > MAX_NEEDLE_CHARS:
            return (f"{UNJUDGED}: a value longer than {MAX_NEEDLE_CHARS} characters is free text "
                    "(judge the items inside it with find)")
        key = (text, kinds)
        if key not in self._sightings:
            found = self.run.sightings(text, kinds, self._budget)
            if found is None:
                return (f"{UNJUDGED}: this call asks about more values than the run can be searched for "
                        f"({MAX_SCAN_CHARS} characters of content in all)")
            self._sightings[key] = found
        return self._sightings[key]

    def record(self, where: str, check: str, kind: str, normal: str, seen: list[Piece], met: bool) -> None:
        """Keep one provenance check for the audit record: the value's hash (none for a secret argument), the
        sources and piece numbers it was seen in (the first few), and whether the check held."""
        name = where.split("[", 1)[0].rsplit(".", 1)[-1]
        secret = where.split("[", 1)[0] in self._secret or name in self._secret
        digest = "" if secret else _sha(normal)
        entry = {"argument": where, "check": check, "kind": kind, "sha256": digest or None,
                 "seen": [[piece.source, piece.index] for piece in seen[:_MAX_SEEN]], "met": met}
        self._checks[(where, check, kind, digest or normal)] = entry

    @property
    def provenance_checks(self) -> list[dict[str, Any]]:
        """Each provenance check made for this call (for the audit record)."""
        return list(self._checks.values())

    # ------------------------------------------------------------------------------------------ current values

    def current_at(self, at: Location) -> tuple[bool, Any] | str:
        """The current value at ``at`` (``(True, value)``, or ``(False, None)`` where the object has none), or why
        it cannot be judged (the tool has no ``current`` hook)."""
        if self._current is _NO_CURRENT:
            return f"{UNJUDGED}: the tool gives no current values to compare with"
        value: Any = self._current
        for part in at:
            if isinstance(part, int):
                if not isinstance(value, list) or not 0 <= part < len(value):
                    return False, None
                value = value[part]
            elif isinstance(value, Mapping) and part in value:
                value = value[part]
            else:
                return False, None
        return True, value
