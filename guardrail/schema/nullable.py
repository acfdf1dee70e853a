"""Making a lowered schema node admit ``null`` (OpenAI strict: optional = required + nullable).

OpenAI's strict mode wants every property required, so an optional property is sent as a required one
that may be ``null``; the model then says "absent" with a null. Simple typed nodes get ``"null"`` added
to their ``type`` (and to their ``enum``); anything else (objects, references, unions, constants) is
wrapped as ``anyOf: [node, {"type": "null"}]``, the form OpenAI's own SDK produces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_NULL: dict[str, Any] = {"type": "null"}


def allows_null(node: Mapping[str, Any]) -> bool:
    """Whether ``node`` visibly admits null (its type, enum, const or a direct union branch says so)."""
    declared = node.get("type")
    typed_null = declared == "null" or (isinstance(declared, list) and "null" in declared)
    if typed_null and ("enum" not in node or None in node["enum"]):
        return True
    if "const" in node and node["const"] is None:
        return True
    if "type" not in node and isinstance(node.get("enum"), list) and None in node["enum"]:
        return True
    branches = node.get("anyOf")
    return isinstance(branches, list) and any(isinstance(b, Mapping) and allows_null(b) for b in branches)


def make_nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` admitting null as well: in place where a type array is enough, else a new ``anyOf`` wrapper."""
    if allows_null(node):
        return node
    declared = node.get("type")
    simple = "const" not in node and "anyOf" not in node and "$ref" not in node
    if simple and isinstance(declared, (str, list)) and "object" not in declared:
        listed = [declared] if isinstance(declared, str) else list(declared)
        node["type"] = listed if "null" in listed else [*listed, "null"]
        if isinstance(node.get("enum"), list) and None not in node["enum"]:
            node["enum"] = [*node["enum"], None]
        return node
    if set(node) <= {"anyOf", "title", "description"} and isinstance(node.get("anyOf"), list):
        node["anyOf"] = [*node["anyOf"], dict(_NULL)]
        return node
    return {"anyOf": [node, dict(_NULL)]}
