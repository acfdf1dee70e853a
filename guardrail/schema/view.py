"""Walking a contract's JSON Schema alongside a parsed value.

The normalization and coercion stages ask the same questions at every node: what does the schema here
allow (after ``$ref``/``allOf``/``anyOf``), which union branch does this value belong to, what schema do
this object's properties and this array's items have. This module answers them once, from the JSON
Schema pydantic generates, so the stages never look at pydantic internals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

Schema = dict[str, Any]
A = TypeVar("A")

_MAX_REF_HOPS: Final = 64
ANY: Final[Schema] = {}


def json_type(value: Any) -> str:
    """The JSON Schema type name of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "unknown"


def normalize_key(name: str) -> str:
    """Fold case, snake/kebab/camel/Pascal drift: ``unitPrice``, ``Unit_Price``, ``UNIT-PRICE`` -> ``unitprice``."""
    return name.replace("_", "").replace("-", "").replace(" ", "").casefold()


def _memo(table: dict[int, A], schema: Schema, compute: Callable[[Schema], A]) -> A:
    """``compute(schema)``, kept in ``table`` by the node's identity (the view's nodes live as long as it does)."""
    found = table.get(id(schema))
    if found is None:
        found = table[id(schema)] = compute(schema)
    return found


class SchemaView:
    """Resolves and queries one root JSON Schema; caches per-node answers by node identity."""

    def __init__(self, root: Schema) -> None:
        self.root = root
        self.defs: dict[str, Schema] = {**root.get("definitions", {}), **root.get("$defs", {})}
        self._branches: dict[int, list[Schema]] = {}
        self._types: dict[int, frozenset[str]] = {}
        self._keys: dict[int, dict[str, list[str]]] = {}

    def resolve(self, schema: Schema) -> Schema:
        """Follow ``$ref`` and single-member ``allOf`` wrappers to the schema that says something."""
        for _ in range(_MAX_REF_HOPS):
            target = self._ref_target(schema)
            if target is not None:
                schema = target
                continue
            all_of = schema.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and "properties" not in schema:
                schema = all_of[0]
                continue
            return schema
        return ANY

    def _ref_target(self, schema: Schema) -> Schema | None:
        """What a ``$ref`` node points to (:data:`ANY` when that cannot be found), ``None`` for any other node.
        Here: pydantic's local references, ``#/$defs/Name`` and ``#``."""
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return None
        target = self.defs.get(ref.rsplit("/", 1)[-1])
        if target is None and ref == "#":
            target = self.root
        return ANY if target is None else target

    def branches(self, schema: Schema) -> list[Schema]:
        """The alternatives a value may take here: members of ``anyOf``/``oneOf``, flattened and resolved."""
        return _memo(self._branches, schema, self._flatten)

    def _flatten(self, schema: Schema) -> list[Schema]:
        out: list[Schema] = []
        pending = [schema]
        hops = 0
        while pending and hops < 256:
            hops += 1
            node = self.resolve(pending.pop(0))
            members = node.get("anyOf") or node.get("oneOf")
            if isinstance(members, list) and members:
                pending[:0] = members
            else:
                out.append(node)
        return out

    def types(self, schema: Schema) -> frozenset[str]:
        """JSON types a (resolved, single-branch) schema admits; empty means anything."""
        return _memo(self._types, schema, self._declared_types)

    @staticmethod
    def _declared_types(schema: Schema) -> frozenset[str]:
        found: set[str] = set()
        declared = schema.get("type")
        if isinstance(declared, str):
            found.add(declared)
        elif isinstance(declared, list):
            found.update(t for t in declared if isinstance(t, str))
        for choices in (schema.get("enum"), [schema["const"]] if "const" in schema else None):
            if isinstance(choices, list):
                found.update(json_type(c) for c in choices)
        if not found:
            if "properties" in schema or "additionalProperties" in schema:
                found.add("object")
            if "items" in schema or "prefixItems" in schema:
                found.add("array")
        return frozenset(found)

    def admits(self, schema: Schema, value: Any) -> bool:
        """Whether the value's JSON type is one this branch admits (integers count as numbers)."""
        allowed = self.types(schema)
        if not allowed:
            return True
        t = json_type(value)
        return t in allowed or (t == "integer" and "number" in allowed)

    def allows_null(self, schema: Schema) -> bool:
        """Whether null is one of the values this schema admits (in any branch)."""
        return any(not self.types(b) or "null" in self.types(b) for b in self.branches(schema))

    def pick(self, schema: Schema, value: Any) -> Schema | None:
        """The branch of ``schema`` that ``value`` belongs to, or ``None`` if that cannot be told."""
        options = self.branches(schema)
        if len(options) == 1:
            return options[0]
        fitting = [b for b in options if self.admits(b, value)]
        if len(fitting) == 1:
            return fitting[0]
        if len(fitting) > 1 and isinstance(value, dict):
            return self._pick_object(schema, fitting, value)
        if not fitting:
            non_null = [b for b in options if self.types(b) != frozenset({"null"})]
            if len(non_null) == 1:
                return non_null[0]
        return None

    def _pick_object(self, schema: Schema, options: list[Schema], value: dict[str, Any]) -> Schema | None:
        disc = schema.get("discriminator")
        if isinstance(disc, dict) and isinstance(disc.get("propertyName"), str):
            tag = value.get(disc["propertyName"])
            for b in options:
                prop = self.resolve(b.get("properties", {}).get(disc["propertyName"], {}))
                if tag is not None and (prop.get("const") == tag or tag in prop.get("enum", [])):
                    return b
        keys = {normalize_key(k) for k in value}
        scores = [(len(keys & set(self.key_map(b))), i) for i, b in enumerate(options)]
        scores.sort(reverse=True)
        if scores[0][0] > 0 and (len(scores) == 1 or scores[0][0] > scores[1][0]):
            return options[scores[0][1]]
        return None

    def properties(self, schema: Schema) -> dict[str, Schema]:
        """The declared properties of an object schema (empty when none are declared)."""
        props = schema.get("properties")
        return props if isinstance(props, dict) else {}

    def key_map(self, schema: Schema) -> dict[str, list[str]]:
        """Normalized key -> the property names that fold to it."""
        return _memo(self._keys, schema, self._fold_keys)

    def _fold_keys(self, schema: Schema) -> dict[str, list[str]]:
        folded: dict[str, list[str]] = {}
        for name in self.properties(schema):
            folded.setdefault(normalize_key(name), []).append(name)
        return folded

    def member(self, schema: Schema, key: str) -> Schema:
        """The schema of property ``key`` of an object schema (declared, or additionalProperties)."""
        props = self.properties(schema)
        if key in props:
            return props[key]
        extra = schema.get("additionalProperties")
        return extra if isinstance(extra, dict) else ANY

    def item(self, schema: Schema, index: int) -> Schema:
        """The schema of element ``index`` of an array schema."""
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and index < len(prefix) and isinstance(prefix[index], dict):
            chosen: Schema = prefix[index]
            return chosen
        items: Any = schema.get("items")
        return items if isinstance(items, dict) else ANY
