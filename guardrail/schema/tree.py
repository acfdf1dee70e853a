"""Iterative helpers over JSON Schema documents: pointers, measuring, copying, subschema positions.

Schemas can nest far deeper than Python's recursion limit (a 10,000-level chain is a valid document),
so everything here walks with explicit stacks. :func:`measure` also catches Python-level cycles (a dict
that contains itself), which no JSON document can have.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from guardrail.errors import ConfigError

#: Keywords whose value is a map of name -> subschema.
SCHEMA_MAPS: Final = ("properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions")
#: Keywords whose value is one subschema.
SCHEMA_SINGLES: Final = ("items", "additionalItems", "additionalProperties", "not", "if", "then", "else", "contains",
                         "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contentSchema")
#: Keywords whose value is a list of subschemas (``items`` too, in its draft-4 tuple form).
SCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
#: Definition containers: subschemas that are not evaluated where they stand, only through ``$ref``.
DEF_CONTAINERS: Final = ("$defs", "definitions")


def escape(token: str) -> str:
    """Escape one JSON Pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """Undo :func:`escape`."""
    return token.replace("~1", "/").replace("~0", "~")


def join(path: str, *tokens: object) -> str:
    """``path`` extended by the given tokens, escaped."""
    return path + "".join("/" + escape(str(t)) for t in tokens)


def at_pointer(doc: Any, pointer: str) -> Any:
    """The value at a JSON Pointer made by :func:`join` (``""`` is ``doc``), or ``None`` when there is none."""
    node = doc
    for token in pointer.split("/")[1:] if pointer else ():
        key = unescape(token)
        if isinstance(node, Mapping):
            node = node.get(key)
        elif isinstance(node, (list, tuple)) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def measure(value: Any) -> int:
    """The container nesting depth of a JSON-like value (a scalar is 0, ``{}`` is 1).

    Raises ``ValueError`` when a dict or list contains itself: such a structure is not a JSON document.
    Shared (but acyclic) sub-objects are fine.
    """
    deepest = 0
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(value, 1, False)]
    while stack:
        node, depth, leaving = stack.pop()
        if leaving:
            on_path.discard(id(node))
            continue
        if not isinstance(node, (Mapping, list, tuple)):
            continue
        if id(node) in on_path:
            raise ConfigError("schema contains itself (a Python-level cycle); it is not a JSON document")
        on_path.add(id(node))
        deepest = max(deepest, depth)
        stack.append((node, depth, True))
        children = node.values() if isinstance(node, Mapping) else node
        stack.extend((child, depth + 1, False) for child in children if isinstance(child, (Mapping, list, tuple)))
    return deepest


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON-like value as plain dicts and lists (any mapping becomes a dict, a tuple a list).

    The value must be acyclic (see :func:`measure`).
    """
    if not isinstance(value, (Mapping, list, tuple)):
        return value
    root: Any = {} if isinstance(value, Mapping) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        src, dst = stack.pop()
        pairs = src.items() if isinstance(src, Mapping) else enumerate(src)
        for key, child in pairs:
            if isinstance(child, (Mapping, list, tuple)):
                fresh: Any = {} if isinstance(child, Mapping) else []
                stack.append((child, fresh))
                child = fresh
            if isinstance(dst, dict):
                dst[key] = child
            else:
                dst.append(child)
    return root


def subschemas(node: Mapping[str, Any], path: str, *, defs: bool = True) -> Iterator[tuple[Mapping[str, Any], str]]:
    """The dict subschemas directly under ``node`` (in schema positions, not data like ``enum``), with pointers.

    ``defs=False`` leaves out definition containers: what is evaluated in place, for reference graphs.
    """
    for key in SCHEMA_MAPS:
        members = node.get(key)
        if isinstance(members, Mapping) and (defs or key not in DEF_CONTAINERS):
            for name, sub in members.items():
                if isinstance(sub, Mapping):
                    yield sub, join(path, key, name)
    for key in SCHEMA_SINGLES:
        sub = node.get(key)
        if isinstance(sub, Mapping):
            yield sub, join(path, key)
    for key in SCHEMA_LISTS:
        members = node.get(key)
        if isinstance(members, (list, tuple)):
            for i, sub in enumerate(members):
                if isinstance(sub, Mapping):
                    yield sub, join(path, key, i)


def walk(node: Mapping[str, Any], path: str, *, defs: bool = True) -> Iterator[tuple[Mapping[str, Any], str]]:
    """Every subschema at or below ``node`` (pre-order, document order), with its pointer; iterative."""
    stack: list[tuple[Mapping[str, Any], str]] = [(node, path)]
    while stack:
        current, where = stack.pop()
        yield current, where
        stack.extend(reversed(list(subschemas(current, where, defs=defs))))


def canonical(value: Any) -> str:
    """A comparison key for JSON values (``True`` is not ``1``); falls back to ``repr`` for odd values."""
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)
