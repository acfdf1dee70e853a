"""What the model left out of a tool call: the locations of the defaults the tool receives unasked.

A policy constraint judges what the model *sent* (:mod:`guardrail.tools.policy.arguments`); the defaults a
tool's signature (or a nested model's fields) fill in are the tool author's own. This module finds them in a
validated call:

- a tool declared by its signature: every field of the arguments model (and of each nested model, through
  lists, tuples and dicts) that is not in the model's ``model_fields_set``, and every field the model sent as
  ``null`` whose default is ``None``: the tool receives the same value either way, so the gate judges the two
  alike (models in strict tool mode send ``null`` for every optional parameter they do not use);
- a tool declared by JSON Schema: every declared property missing from the call's object (``properties`` of
  the object's schema, ``anyOf``/``oneOf``/``allOf`` members looked through, ``$ref`` not followed). The gate's
  walkers already see a missing key as left out; where a policy rule says ``check_default``, the schema's
  ``default`` is filled in here, so that what the gate judges is what the tool then receives.

Locations are tuples of keys and list indexes (``("items", 1, "sku")``); elements of sets are not looked into
(a model inside a set counts as sent in full, which judges more, never less).
"""

from __future__ import annotations

import copy
import functools
import types
import typing
from collections.abc import Collection, Iterator
from typing import Any

from pydantic import BaseModel

from guardrail.tools.policy.arguments import Location, split

__all__ = ["model_left_out", "schema_left_out"]

_DEPTH = 200


def model_left_out(model: BaseModel) -> frozenset[Location]:
    """The locations in ``model`` (a validated arguments model) whose values are defaults the model did not
    send (module docstring)."""
    found: list[Location] = []
    _visit_model(model, (), found, 0)
    return frozenset(found)


def _visit_model(model: BaseModel, at: Location, found: list[Location], depth: int) -> None:
    given = model.__pydantic_fields_set__  # what model_fields_set returns, without the property call
    for name, none_default, nested in _plan(type(model)):
        if name not in given:
            found.append((*at, name))
        elif none_default or nested:
            value = getattr(model, name)
            if value is None and none_default:
                found.append((*at, name))
            elif nested and depth < _DEPTH:
                _visit_value(value, (*at, name), found, depth + 1)


def _visit_value(value: Any, at: Location, found: list[Location], depth: int) -> None:
    if isinstance(value, BaseModel):
        _visit_model(value, at, found, depth)
    elif depth >= _DEPTH:
        return
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _visit_value(item, (*at, index), found, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _visit_value(item, (*at, str(key)), found, depth + 1)


@functools.lru_cache(maxsize=1024)
def _plan(model: type[BaseModel]) -> tuple[tuple[str, bool, bool], ...]:
    """Each field of ``model`` with whether its default is ``None`` (a ``null`` sent counts as left out) and
    whether its type can hold a nested model (the only fields worth walking)."""
    return tuple((name, info.default is None and info.default_factory is None, _holds_models(info.annotation, 0))
                 for name, info in model.model_fields.items())


def _holds_models(annotation: Any, depth: int) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    if depth > 32 or annotation is None:
        return False
    if isinstance(annotation, (typing.TypeVar, typing.ForwardRef, str)) or annotation in (Any, object):
        return True  # unknown until the value is seen: walk it
    origin = typing.get_origin(annotation)
    if origin is None:
        return False
    if origin in (typing.Union, types.UnionType, typing.Annotated) or isinstance(origin, type):
        return any(_holds_models(member, depth + 1) for member in typing.get_args(annotation)
                   if member is not Ellipsis)
    return False


def schema_left_out(arguments: dict[str, Any], schema: dict[str, Any],
                    check_default: Collection[str] = ()) -> tuple[dict[str, Any], frozenset[Location]]:
    """The declared properties missing from ``arguments`` (a call of a tool declared by ``schema``), and the
    arguments with the schema's ``default`` filled in where a ``check_default`` path (an argument path of the
    policy) reaches a missing property; ``arguments`` itself is not changed."""
    paths = [split(path) for path in check_default]
    found: list[Location] = []
    filled = _fill(arguments, [schema], (), (), paths, found, 0)
    return filled, frozenset(found)


def _members(nodes: list[Any]) -> Iterator[dict[str, Any]]:
    for node in nodes:
        if isinstance(node, dict):
            yield node
            for key in ("anyOf", "oneOf", "allOf"):
                members = node.get(key)
                if isinstance(members, list):
                    yield from _members(members)


def _fill(value: Any, nodes: list[Any], at: Location, keys: tuple[str, ...], paths: list[tuple[str, ...]],
          found: list[Location], depth: int) -> Any:
    if depth > _DEPTH:
        return value
    members = list(_members(nodes))
    if isinstance(value, dict):
        declared: dict[str, list[Any]] = {}
        for member in members:
            properties = member.get("properties")
            if isinstance(properties, dict):
                for name, sub in properties.items():
                    declared.setdefault(name, []).append(sub)
        out = value
        for name, subs in declared.items():
            place, named = (*at, name), (*keys, name)
            if name in value:
                inner = _fill(value[name], subs, place, named, paths, found, depth + 1)
            else:
                found.append(place)
                defaults = [sub["default"] for sub in subs if isinstance(sub, dict) and "default" in sub]
                if not defaults or not any(path[:len(named)] == named for path in paths):
                    continue
                inner = copy.deepcopy(defaults[0])
            if name not in value or inner is not value[name]:
                if out is value:
                    out = dict(value)  # copied on the first change: the caller's arguments stay as they were
                out[name] = inner
        return out
    if isinstance(value, list):
        out_list = value
        for index, item in enumerate(value):
            subs = [member["items"] for member in members if isinstance(member.get("items"), dict)]
            subs += [member["prefixItems"][index] for member in members
                     if isinstance(member.get("prefixItems"), list) and index < len(member["prefixItems"])]
            inner = _fill(item, subs, (*at, index), keys, paths, found, depth + 1)
            if inner is not item:
                if out_list is value:
                    out_list = list(value)
                out_list[index] = inner
        return out_list
    return value
