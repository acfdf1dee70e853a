"""A minimal valid instance of a JSON schema: the default "correct answer" of FaultProfile and the CLI.

Why: a fault-injection run needs *some* right answer for each request without a hand-written fixture per
schema. The instance is small and deterministic: required properties only, the first enum value / union
branch, bounds respected where the schema states them. Patterns are not solved; pass your own ``answer``
when the schema needs a value this cannot guess.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["example_instance"]

_FORMATS = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00",
    "duration": "P1D",
    "email": "user@example.com",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "uri": "https://example.com/",
}
_MAX_DEPTH = 12


def example_instance(schema: dict[str, Any], *, root: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """A small value that satisfies ``schema`` (local ``$ref`` resolved against ``root``, default ``schema``)."""
    root = schema if root is None else root
    if depth > _MAX_DEPTH or not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return example_instance(_resolve(root, ref), root=root, depth=depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if isinstance(o, dict)]
        if options:
            chosen = next((o for o in options if o.get("type") != "null"), options[0])
            return example_instance(chosen, root=root, depth=depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None and "properties" in schema:
        kind = "object"
    if kind == "object":
        properties = schema.get("properties") or {}
        required = schema.get("required")
        names = required if isinstance(required, list) else list(properties)
        return {name: example_instance(properties.get(name, {}), root=root, depth=depth + 1) for name in names}
    if kind == "array":
        count = max(int(schema.get("minItems", 1)), 0)
        count = min(count, int(schema.get("maxItems", count)))
        items: dict[str, Any] = schema["items"] if isinstance(schema.get("items"), dict) else {}
        return [example_instance(items, root=root, depth=depth + 1) for _ in range(count)]
    if kind == "string":
        return _string(schema)
    if kind in ("integer", "number"):
        return _number(schema, integer=kind == "integer")
    if kind == "boolean":
        return False
    return None


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = root
    if ref.startswith("#/"):
        for token in ref[2:].split("/"):
            node = node.get(token.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _string(schema: dict[str, Any]) -> str:
    value = _FORMATS.get(str(schema.get("format")), "example")
    low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
    if len(value) < low:
        value += "x" * (low - len(value))
    if isinstance(high, int) and len(value) > high:
        value = value[:high]
    return value


def _number(schema: dict[str, Any], *, integer: bool) -> int | float:
    value: float = 0
    if isinstance(schema.get("minimum"), int | float):
        value = max(value, schema["minimum"]) if "maximum" not in schema else schema["minimum"]
    if isinstance(schema.get("exclusiveMinimum"), int | float):
        value = max(value, schema["exclusiveMinimum"] + 1)
    if isinstance(schema.get("maximum"), int | float):
        value = min(value, schema["maximum"])
    if isinstance(schema.get("exclusiveMaximum"), int | float):
        value = min(value, schema["exclusiveMaximum"] - 1)
    return math.ceil(value) if integer else float(value)
