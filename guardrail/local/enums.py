"""Per-request enums for the local tier: narrow one field of a fixed contract to values known only at call time.

``LocalModel.generate(prompt, Pick, enums={"product_id": ids})`` generates a ``Pick`` whose ``product_id`` is one
of ``ids`` (the IDs retrieved for this request, possibly 10,000). The contract itself stays fixed, so its
expensive part is compiled once and cached (:func:`guardrail.local.grammar.compile_grammar`: the lowering, the
engine's remedies and its validation); each call only splices the enum into the cached engine schema
(:func:`splice`, copying just the nodes on the path) and builds one llguidance matcher for the row(s).

The values are spliced as a JSON ``enum``. A prefix-trie ``pattern`` was measured too and lost: with a
32,000-id tokenizer and 10,000 random IDs llguidance built its matcher in about 34 ms for the ``enum`` and
114 ms for the trie (which also took 200 ms to build in Python); see ``bench/bench_enum_compile.py``.

A path names a property, through nested objects (``"order.product_id"``), array items (``"lines[].sku"``),
``$ref`` definitions (narrowing a shared definition narrows every use of it) and optional (``anyOf`` with
``null``) wrappers. The value is still validated against the contract as a whole, and every value found at the
path is checked against the enum afterwards (:func:`check`): the mask makes a stray value impossible, the check
makes sure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from guardrail.errors import ConfigError, SchemaViolationError

__all__ = ["check", "parse_path", "piece", "splice"]


def parse_path(path: str) -> list[str]:
    """``"a.b[].c"`` as ``["a", "b", "[]", "c"]``; ``[]`` steps into array items."""
    if not isinstance(path, str) or not path:
        raise ConfigError(f"an enum path must be a non-empty string like 'field' or 'lines[].sku', not {path!r}")
    parts: list[str] = []
    for name in path.split("."):
        items = 0
        while name.endswith("[]"):
            name, items = name[:-2], items + 1
        if not name:
            raise ConfigError(f"enum path {path!r} has an empty property name")
        parts += [name] + ["[]"] * items
    return parts


def piece(values: Sequence[Any]) -> dict[str, Any]:
    """The JSON Schema node allowing exactly ``values`` (a JSON ``enum``, duplicates dropped)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, set, frozenset)):
        raise ConfigError("an enum's values must be a list (or set) of values, not a single value")
    if all(isinstance(v, str) for v in values):
        unique: list[Any] = list(dict.fromkeys(values))
    else:
        unique = [json.loads(v) for v in dict.fromkeys(json.dumps(v, sort_keys=True) for v in values)]
    if not unique:
        raise ConfigError("an enum needs at least one value: no output could match an empty one")
    return {"enum": unique}


def splice(schema: Mapping[str, Any], enums: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """A copy of the engine schema ``schema`` with each path of ``enums`` narrowed to its values; only the
    nodes on the paths are copied (``schema`` is the cached one and is never mutated)."""
    root: dict[str, Any] = dict(schema)
    for path, values in enums.items():
        parts = parse_path(path)
        narrowed = piece(values)
        if not _replace(root, root, parts, narrowed, path, set()):
            raise ConfigError(f"enum path {path!r} names no property of the contract")
    return root


def _replace(root: dict[str, Any], node: dict[str, Any], parts: list[str], narrowed: dict[str, Any], path: str,
             seen: set[str]) -> bool:
    """Narrow, in ``node`` (already a private copy), what ``parts`` names; whether anything was found."""
    found = False
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/") and ref not in seen:
        seen.add(ref)
        target = _own(root, ref)
        if target is not None:
            found |= _replace(root, target, parts, narrowed, path, seen)
    for key in ("anyOf", "oneOf", "allOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            copies = [dict(b) if isinstance(b, Mapping) else b for b in branches]
            hits = [_replace(root, b, parts, narrowed, path, seen) for b in copies if isinstance(b, dict)]
            if any(hits):
                node[key] = copies
                found = True
    head, rest = parts[0], parts[1:]
    container = "items" if head == "[]" else "properties"
    holder = node.get(container)
    if head == "[]" and isinstance(holder, Mapping):
        child = dict(holder)
        if rest:
            found |= _replace(root, child, rest, narrowed, path, seen) and _set(node, "items", child)
        else:
            node["items"] = _narrowed(child, narrowed)
            found = True
    elif head != "[]" and isinstance(holder, Mapping) and isinstance(holder.get(head), Mapping):
        child = dict(holder[head])
        if rest:
            found |= _replace(root, child, rest, narrowed, path, seen) and _set(node, "properties",
                                                                                {**holder, head: child})
        else:
            node["properties"] = {**holder, head: _narrowed(child, narrowed)}
            found = True
    return found


def _set(node: dict[str, Any], key: str, value: Any) -> bool:
    node[key] = value
    return True


def _narrowed(node: Mapping[str, Any], narrowed: dict[str, Any]) -> dict[str, Any]:
    """``narrowed``, kept nullable where the field was (an optional field may still be ``null``)."""
    branches = node.get("anyOf")
    nullable = node.get("type") == "null" or (
        isinstance(branches, list) and any(isinstance(b, Mapping) and b.get("type") == "null" for b in branches))
    return {"anyOf": [narrowed, {"type": "null"}]} if nullable else dict(narrowed)


def _own(root: dict[str, Any], ref: str) -> dict[str, Any] | None:
    """The node ``ref`` points at, made a private copy along the way (copy on write from the root)."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in ref[2:].split("/")]
    node: dict[str, Any] = root
    for token in tokens:
        child = node.get(token)
        if not isinstance(child, Mapping):
            return None
        node[token] = dict(child)
        node = node[token]
    return node


def check(data: Any, enums: Mapping[str, Sequence[Any]], text: str) -> None:
    """Raise :class:`SchemaViolationError` unless every value at each path of ``enums`` in the parsed JSON
    ``data`` is one of that path's values (``null`` is left to the contract's own validation)."""
    for path, values in enums.items():
        strings = all(isinstance(v, str) for v in values)
        allowed = set(values) if strings else {json.dumps(v, sort_keys=True) for v in values}
        for value in _values_at(data, parse_path(path)):
            if value is None:
                continue
            if not (isinstance(value, str) and value in allowed if strings else
                    json.dumps(value, sort_keys=True) in allowed):
                raise SchemaViolationError(f"{path}: {value!r} is not one of the {len(allowed)} values allowed "
                                           "for this request", text=text)


def _values_at(data: Any, parts: list[str]) -> list[Any]:
    level = [data]
    for part in parts:
        if part == "[]":
            level = [item for value in level if isinstance(value, list) for item in value]
        else:
            level = [value[part] for value in level if isinstance(value, dict) and part in value]
    return level
