"""Argument paths: where in a call's arguments a policy constraint applies, and how the gate gets there.

A key of ``[args]`` (or of a rule's ``when``) is an argument path: a parameter name, then field names of
nested models separated by dots (``target.url``). Lists met on the way are walked element by element, and
so is a list at the end of the path: ``[args.urls]`` on ``urls: list[str]`` checks every URL, and its
``min_length``/``max_length`` bound the list itself. The arguments are the gate's JSON-like form of the
validated call (models are dicts, tuples and sets are lists), so walking them needs no type information.

:func:`canonicalize` applies one rule and returns the arguments with the canonical values the tool must
receive; a rejection names where it happened (``urls[1]``, ``hooks[0].url``). :func:`leaves` gives the
values a ``when`` condition judges.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from guardrail.tools.policy.verdict import Rejected

if TYPE_CHECKING:
    from guardrail.tools.policy.model import ArgRule

__all__ = ["canonicalize", "leaves", "split"]


def split(path: str) -> tuple[str, ...]:
    """The segments of an argument path (``"target.url"`` -> ``("target", "url")``)."""
    return tuple(path.split("."))


def canonicalize(arguments: dict[str, Any], path: str, rule: ArgRule) -> dict[str, Any]:
    """``arguments`` with the values at ``path`` replaced by their canonical form; :class:`Rejected` (with the
    argument's location) when one breaks ``rule``. A path that stops at a missing or ``null`` object is
    skipped unless the rule is ``required``."""
    segments = split(path)
    head = segments[0]
    if head not in arguments:
        if rule.required:
            raise Rejected("required argument missing", head)
        return arguments
    return {**arguments, head: _walk(arguments[head], segments[1:], rule, head)}


def _walk(value: Any, segments: tuple[str, ...], rule: ArgRule, where: str) -> Any:
    if isinstance(value, list):
        if not segments:
            reason = rule.length_reason(value)
            if reason is not None:
                raise Rejected(reason, where)
            element_rule = rule.for_elements()
            return [_leaf(element_rule, item, f"{where}[{index}]") for index, item in enumerate(value)]
        return [_walk(item, segments, rule, f"{where}[{index}]") for index, item in enumerate(value)]
    if not segments:
        return _leaf(rule, value, where)
    if value is None and not rule.required:
        return value  # an optional nested model that is absent holds nothing to check
    if not isinstance(value, dict):
        raise Rejected(f"not an object (cannot reach {'.'.join(segments)})", where)
    key = segments[0]
    if key not in value or (value[key] is None and len(segments) > 1):
        if rule.required:
            raise Rejected("required argument missing", f"{where}.{key}")
        return value
    return {**value, key: _walk(value[key], segments[1:], rule, f"{where}.{key}")}


def _leaf(rule: ArgRule, value: Any, where: str) -> Any:
    try:
        return rule.canonical(value)
    except Rejected as rejected:
        raise rejected.at(where) from None


def leaves(arguments: dict[str, Any], path: str) -> list[Any] | None:
    """Every value at ``path`` (lists walked, a list at the end flattened into its elements); ``None`` when
    the path is missing."""
    segments = split(path)
    if segments[0] not in arguments:
        return None
    found: list[Any] = []
    pending: list[tuple[Any, tuple[str, ...]]] = [(arguments[segments[0]], segments[1:])]
    while pending:
        value, rest = pending.pop()
        if isinstance(value, list):
            pending.extend((item, rest) for item in reversed(value))
        elif not rest:
            found.append(value)
        elif isinstance(value, dict) and rest[0] in value:
            pending.append((value[rest[0]], rest[1:]))
        else:
            return None
    return found
