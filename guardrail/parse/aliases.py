"""Field-name normalization: map drifted keys onto the contract's names, at any depth.

Two sources of renames, tried in order for a key the object's schema does not declare:

1. the caller's alias table (``{"startTime": "start"}``), applied wherever the target is a declared
   property of the object at hand;
2. case drift of the field's own name: ``unitPrice``, ``Unit_Price``, ``UNIT_PRICE`` all fold to
   ``unit_price`` when exactly one declared property folds to the same thing.

A field given twice (under its own name and a drifted one) with different values is ambiguous: guardrail
will not pick one. Equal values collapse to one, recorded as a fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardrail.errors import Signal
from guardrail.parse.report import Fix, json_path
from guardrail.schema.view import Schema, SchemaView, json_type, normalize_key


class FieldConflict(Signal):
    """A field and a drifted name for it both appear with different values (the alias stage turns it into the
    candidate's schema violation)."""

    def __init__(self, path: str, field: str, first: str, second: str) -> None:
        super().__init__(path)
        self.path = path
        self.message = (
            f"the field {field!r} is given twice, as {first!r} and as {second!r}, with different values; "
            "give it once"
        )


def normalize(
    value: Any,
    schema: Schema,
    view: SchemaView,
    aliases: Mapping[str, str],
    fixes: list[Fix],
    path: list[str | int],
) -> Any:
    """Return ``value`` with object keys renamed to the contract's names; record each rename in ``fixes``."""
    if isinstance(value, dict):
        node = view.pick(schema, value)
        if node is None:
            return value
        if view.properties(node):
            value = _rename(value, node, view, aliases, fixes, path)
        for key, child in value.items():
            if isinstance(child, (dict, list)):
                path.append(key)
                value[key] = normalize(child, view.member(node, key), view, aliases, fixes, path)
                path.pop()
    elif isinstance(value, list):
        node = view.pick(schema, value)
        if node is None:
            return value
        for index, child in enumerate(value):
            if isinstance(child, (dict, list)):
                path.append(index)
                value[index] = normalize(child, view.item(node, index), view, aliases, fixes, path)
                path.pop()
    return value


def _rename(
    obj: dict[str, Any],
    node: Schema,
    view: SchemaView,
    aliases: Mapping[str, str],
    fixes: list[Fix],
    path: list[str | int],
) -> dict[str, Any]:
    props = view.properties(node)
    if all(key in props for key in obj):
        return obj
    folded = view.key_map(node)
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    renames: list[tuple[str, str, str]] = []
    for key, child in obj.items():
        target, kind = key, ""
        if key not in props:
            aliased = aliases.get(key)
            if aliased is not None and aliased in props:
                target, kind = aliased, "alias"
            else:
                matches = folded.get(normalize_key(key), [])
                if len(matches) == 1:
                    target, kind = matches[0], "case_drift"
        if target in out:
            if _same(out[target], child):
                fixes.append(Fix("duplicate_field", (*path, target), key, None))
                continue
            raise FieldConflict(json_path([*path, target]), target, origin[target], key)
        out[target] = child
        origin[target] = key
        if kind:
            renames.append((kind, key, target))
    for kind, key, target in renames:
        fixes.append(Fix(kind, (*path, target), key, target))
    return out


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values (``True`` is not ``1``; ``5`` is ``5.0``)."""
    numeric = (int, float)
    if isinstance(a, numeric) and isinstance(b, numeric) and not isinstance(a, bool) and not isinstance(b, bool):
        return bool(a == b)
    if json_type(a) != json_type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
