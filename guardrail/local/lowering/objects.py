"""Object schemas for the engine: closing objects where that cannot clash with a merge, and key counts.

Closing (``additionalProperties: false``) makes the grammar generate only listed keys, which is what a
contract usually means; it is unsafe where the engine intersects the object with another schema, so
:func:`merged_paths` finds those first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from guardrail.local.lowering.prepared import Prepared, Visit

__all__ = ["may_be_object", "merged_paths", "object_bounds"]

#: Keywords next to which an object is left open: they declare keys of their own, or merge other schemas.
_KEEP_OPEN: Final = frozenset({
    "additionalProperties", "patternProperties", "unevaluatedProperties", "dependentSchemas", "dependencies",
    "if", "then", "else", "allOf", "anyOf", "oneOf", "$ref",
})
_OBJECT_WORDS: Final = ("properties", "patternProperties", "additionalProperties", "required")


def merged_paths(visits: Mapping[str, Visit]) -> set[str]:
    """Pointers of subschemas the engine intersects with another object schema: never closed.

    Closing one side of an intersection would forbid the keys the other side declares. Members of ``allOf``
    are always intersected; ``anyOf``/``oneOf`` members and ``$ref`` targets are when the node next to them
    constrains objects itself; whatever a merged node pulls in through its own combinators is merged too.
    """
    merging: set[str] = set()
    for visit in visits.values():
        merging.update(visit.intersected)
        if any(k in visit.node for k in _OBJECT_WORDS):
            merging.update(visit.branches)
    stack = list(merging)
    while stack:
        merged = visits.get(stack.pop())
        if merged is not None:
            for member in (*merged.intersected, *merged.branches):
                if member not in merging:
                    merging.add(member)
                    stack.append(member)
    return merging


def object_bounds(path: str, node: Mapping[str, Any], merged: bool, close: bool, prepared: Prepared) -> None:
    """Close an object schema where safe; keep ``min/maxProperties`` only where the engine supports them."""
    props = node.get("properties") if (path, "properties") not in prepared.removed else None
    names = set(props) if isinstance(props, Mapping) else set()
    required = node.get("required")
    required_names = {n for n in required if isinstance(n, str)} if isinstance(required, list) else set()
    standalone = not merged and not any(k in node for k in _KEEP_OPEN)
    combines = merged or any(k in node for k in ("allOf", "anyOf", "oneOf", "$ref"))
    for kw in ("minProperties", "maxProperties"):
        if kw in node and (path, kw) not in prepared.removed:
            if not combines and names <= required_names:
                prepared.report.add(path, kw, "enforced", "every listed property is required")
            else:
                prepared.drop(path, kw, "the engine counts keys only where every listed property is required: removed")
    if close and isinstance(props, Mapping) and standalone and required_names <= names and may_be_object(node):
        prepared.edits.append((path, "additionalProperties", False))
        prepared.closed.append(path)
        prepared.report.add(path, "additionalProperties", "lowered",
                            "closed: additionalProperties false added, keys outside properties are not generated")


def may_be_object(node: Mapping[str, Any]) -> bool:
    declared = node.get("type")
    return declared is None or declared == "object" or (isinstance(declared, list) and "object" in declared)
