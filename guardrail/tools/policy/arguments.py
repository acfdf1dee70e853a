"""Argument paths: where in a call's arguments a policy constraint applies, and how the gate gets there.

A key of ``[args]`` (or of a rule's ``when``) is an argument path: a parameter name, then field names of
nested models separated by dots (``target.url``). Lists met on the way are walked element by element, and
so is a list at the end of the path: ``[args.urls]`` on ``urls: list[str]`` checks every URL, and its
``min_length``/``max_length`` bound the list itself. The arguments are the gate's JSON-like form of the
validated call (models are dicts, tuples and sets are lists), so walking them needs no type information.

What the model *left out* is judged apart from what it sent. ``omitted`` holds the locations (tuples of keys
and list indexes, ``("items", 1, "sku")``) where the arguments hold a default the model did not send, and a key
missing from an object (a tool declared by JSON Schema) is left out too. A left-out argument meets no value
constraint and breaks none: only ``required`` (it must be given) and ``absent`` (it must not) speak about it,
unless the rule says ``check_default``, which judges the default there as if it had been sent.

:func:`canonicalize` applies one rule and returns the arguments with the canonical values the tool must
receive; a rejection names where it happened (``urls[1]``, ``hooks[0].url``). :func:`leaves` gives the
values a ``when`` condition judges, each with whether the model left it out (presence is judged at the end of
the path, a list there as a whole; the value constraints judge its :func:`elements`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from guardrail.errors import Rejected

if TYPE_CHECKING:
    from guardrail.tools.policy.facts import Facts
    from guardrail.tools.policy.model import ArgRule

__all__ = ["NOTHING", "Location", "canonicalize", "elements", "leaves", "location_text", "split"]

#: Where a value sits in the arguments: keys of objects and indexes of lists, from the top.
Location = tuple[str | int, ...]

#: What :func:`leaves` gives where a path reaches no value (a ``null`` or a non-object on the way, a key left
#: out with no default known).
NOTHING: Any = type("Nothing", (), {"__repr__": lambda self: "NOTHING", "__slots__": ()})()

_NONE: frozenset[Location] = frozenset()


def split(path: str) -> tuple[str, ...]:
    """The segments of an argument path (``"target.url"`` -> ``("target", "url")``)."""
    return tuple(path.split("."))


def location_text(location: Location) -> str:
    """A location as a denial names it: ``("items", 1, "sku")`` -> ``"items[1].sku"``."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def canonicalize(arguments: dict[str, Any], path: str, rule: ArgRule,
                 omitted: Collection[Location] = _NONE, facts: Facts | None = None) -> dict[str, Any]:
    """``arguments`` with the values at ``path`` replaced by their canonical form; :class:`Rejected` (with the
    argument's location) when one breaks ``rule``. A path that stops at a ``null`` object is skipped unless the
    rule is ``required``; a left-out value (module docstring) is skipped unless the rule is ``required``
    (refused) or ``check_default`` (its default judged and canonicalised). ``facts`` are what the rule's list,
    provenance and ``changed`` keys consult (:mod:`guardrail.tools.policy.facts`)."""
    return _step(arguments, split(path), rule, "", (), omitted, False, facts)


def _step(container: dict[str, Any], segments: tuple[str, ...], rule: ArgRule, where: str, at: Location,
          omitted: Collection[Location], gone: bool, facts: Facts | None) -> dict[str, Any]:
    """Into ``container[segments[0]]`` (``gone``: the container is itself a default the model left out)."""
    key = segments[0]
    here, at = (f"{where}.{key}" if where else key), (*at, key)
    if key not in container:
        if gone:
            return container  # the default holds nothing here: nothing reaches the tool to judge
        if rule.required:
            raise Rejected("required argument missing", here)
        if rule.check_default:
            raise Rejected("left out, and there is no default to check", here)
        return container
    left_out = not gone and at in omitted
    if left_out:
        if rule.required:
            raise Rejected("required argument missing", here)
        if not rule.check_default:
            return container  # the tool gets its own default
    value = container[key]
    if value is None and len(segments) > 1:
        if rule.required and not (gone or left_out):
            raise Rejected("required argument missing", here)
        return container  # an optional nested model that is absent holds nothing to check
    return {**container, key: _walk(value, segments[1:], rule, here, at, omitted, gone or left_out, facts)}


def _walk(value: Any, segments: tuple[str, ...], rule: ArgRule, where: str, at: Location,
          omitted: Collection[Location], gone: bool, facts: Facts | None) -> Any:
    if not segments:
        if rule.absent and not gone:
            raise Rejected("must not be given", where)
        reason = rule.whole_reason(value, facts, at)
        if reason is not None:
            raise Rejected(reason, where)
    if isinstance(value, list):
        if not segments:
            reason = rule.length_reason(value)
            if reason is not None:
                raise Rejected(reason, where)
            element_rule = rule.for_elements()
            return [_leaf(element_rule, item, f"{where}[{index}]", facts) for index, item in enumerate(value)]
        return [_walk(item, segments, rule, f"{where}[{index}]", (*at, index), omitted, gone, facts)
                for index, item in enumerate(value)]
    if not segments:
        return _leaf(rule, value, where, facts)
    if value is None and (gone or not rule.required):
        return value
    if not isinstance(value, dict):
        raise Rejected(f"not an object (cannot reach {'.'.join(segments)})", where)
    return _step(value, segments, rule, where, at, omitted, gone, facts)


def _leaf(rule: ArgRule, value: Any, where: str, facts: Facts | None) -> Any:
    try:
        return rule.canonical(value, facts, where)
    except Rejected as rejected:
        raise rejected.at(where) from None


def leaves(arguments: dict[str, Any], path: str, omitted: Collection[Location] = _NONE, *,
           into_defaults: bool = False) -> list[tuple[Any, bool, Location]]:
    """Every value at the end of ``path`` (lists on the way walked; a list at the end is one value), each with
    whether the model left it out and where it is. A left-out value is :data:`NOTHING` unless ``into_defaults``
    (then the default, walked like a sent value); so is a place the path cannot reach (a ``null`` or a
    non-object on the way)."""
    found: list[tuple[Any, bool, Location]] = []
    _collect(arguments, split(path), (), omitted, False, into_defaults, found)
    return found


def _collect(value: Any, segments: tuple[str, ...], at: Location, omitted: Collection[Location], gone: bool,
             into_defaults: bool, found: list[tuple[Any, bool, Location]]) -> None:
    if not segments:
        found.append((value, gone, at))
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _collect(item, segments, (*at, index), omitted, gone, into_defaults, found)
        return
    key = segments[0]
    if not isinstance(value, dict) or key not in value:
        found.append((NOTHING, gone or isinstance(value, dict), (*at, key)))
        return
    at = (*at, key)
    if not gone and at in omitted:
        if not into_defaults:
            found.append((NOTHING, True, at))
            return
        gone = True
    _collect(value[key], segments[1:], at, omitted, gone, into_defaults, found)


def elements(value: Any) -> list[Any]:
    """A value as the ``when`` conditions judge it: a list is its elements (nested lists flattened)."""
    if not isinstance(value, list):
        return [value]
    flat: list[Any] = []
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, list):
            pending.extend(reversed(current))
        else:
            flat.append(current)
    return flat
