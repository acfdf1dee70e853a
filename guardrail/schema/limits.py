"""Vendor size limits, checked on a LOWERED strict schema (one ``$defs`` at the root, refs ``#/$defs/name``).

A schema inside every keyword rule can still be refused for its size: OpenAI caps properties, nesting,
enum values and string sizes; Anthropic caps optional and union-typed parameters per request. Each
function returns one human-readable line per limit exceeded (the caller reports them as rejections).
Definitions are counted once however often they are referenced.

An enum too large for OpenAI's limits (a per-request list of IDs, thousands long) need not cost the whole strict
schema: :func:`shed_enums` leaves the largest enums out of it (the field keeps its type) until the limits hold,
and the report says each one is validated after parsing instead (the contract still lists its values).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from guardrail.schema.refs import cyclic
from guardrail.schema.tree import join, unescape, walk

OPENAI_MAX_PROPERTIES: Final = 5000
OPENAI_MAX_NESTING: Final = 10
OPENAI_MAX_ENUM_VALUES: Final = 1000
OPENAI_LARGE_ENUM: Final = 250
OPENAI_LARGE_ENUM_CHARS: Final = 15_000
OPENAI_MAX_STRING_CHARS: Final = 120_000
ANTHROPIC_MAX_OPTIONAL: Final = 24
ANTHROPIC_MAX_UNION_PROPERTIES: Final = 16

_DEFS_PREFIX: Final = "#/$defs/"


def _documents(schema: Mapping[str, Any]) -> Iterator[tuple[str | None, Mapping[str, Any]]]:
    """The root body (name None) and each definition (by name)."""
    yield None, schema
    defs = schema.get("$defs")
    if isinstance(defs, Mapping):
        for name, body in defs.items():
            if isinstance(body, Mapping):
                yield str(name), body


def _nodes(schema: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for _, body in _documents(schema):
        for node, _ in walk(body, "", defs=False):
            yield node


def openai_limits(schema: Mapping[str, Any]) -> list[str]:
    """OpenAI strict limits exceeded by ``schema``."""
    problems: list[str] = []
    properties = enum_values = chars = 0
    defs = schema.get("$defs")
    chars += sum(len(str(n)) for n in defs) if isinstance(defs, Mapping) else 0
    for node in _nodes(schema):
        props = node.get("properties")
        if isinstance(props, Mapping):
            properties += len(props)
            chars += sum(len(str(n)) for n in props)
        values = node.get("enum")
        if isinstance(values, list):
            enum_values += len(values)
            text = sum(len(v) for v in values if isinstance(v, str))
            chars += text
            if len(values) > OPENAI_LARGE_ENUM and text > OPENAI_LARGE_ENUM_CHARS:
                problems.append(f"an enum of {len(values)} values totals {text} characters "
                                f"(over {OPENAI_LARGE_ENUM_CHARS} for more than {OPENAI_LARGE_ENUM} values)")
        if isinstance(node.get("const"), str):
            chars += len(node["const"])
    if properties > OPENAI_MAX_PROPERTIES:
        problems.append(f"{properties} properties in total (max {OPENAI_MAX_PROPERTIES})")
    if enum_values > OPENAI_MAX_ENUM_VALUES:
        problems.append(f"{enum_values} enum values in total (max {OPENAI_MAX_ENUM_VALUES})")
    if chars > OPENAI_MAX_STRING_CHARS:
        problems.append(f"{chars} characters of names and enum values (max {OPENAI_MAX_STRING_CHARS})")
    depth = object_nesting(schema)
    if depth > OPENAI_MAX_NESTING:
        problems.append(f"objects nested {depth} levels deep (max {OPENAI_MAX_NESTING})")
    return problems


_JSON_TYPES: Final = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"))


def _type_of(values: list[Any]) -> str | None:
    """The one JSON type every value has (``integer`` and ``number`` mixed give ``number``), else None."""
    found = set()
    for value in values:
        found.add(next((name for kind, name in _JSON_TYPES if isinstance(value, kind)), None))
    if found == {"integer", "number"}:
        return "number"
    return found.pop() if len(found) == 1 and None not in found else None


def shed_enums(schema: dict[str, Any]) -> list[tuple[str, int]]:
    """Remove enums from ``schema`` (a lowered OpenAI strict body, mutated), largest first, while OpenAI's enum
    limits are exceeded; an enum is only removed where its values share one JSON type, which the node then keeps
    as ``type``. Returns the (pointer, number of values) of each enum removed."""
    removed: list[tuple[str, int]] = []
    while any("enum" in problem for problem in openai_limits(schema)):
        candidates: list[tuple[int, str, dict[str, Any]]] = []
        for name, body in _documents(schema):
            for node, path in walk(body, "" if name is None else join("/$defs", name), defs=False):
                values = node.get("enum")
                if isinstance(values, list) and isinstance(node, dict) and _type_of(values) is not None:
                    size = len(values) + sum(len(v) for v in values if isinstance(v, str))
                    candidates.append((size, path, node))
        if not candidates:
            break
        _, path, node = max(candidates, key=lambda c: c[0])
        values = node.pop("enum")
        node.setdefault("type", _type_of(values))
        removed.append((path, len(values)))
    return removed


def anthropic_limits(schema: Mapping[str, Any]) -> list[str]:
    """Anthropic strict limits exceeded by ``schema`` (as if it were the only schema in the request)."""
    optional = unions = 0
    for node in _nodes(schema):
        props = node.get("properties")
        if not isinstance(props, Mapping):
            continue
        required = node.get("required")
        named = set(required) if isinstance(required, list) else set()
        optional += sum(1 for n in props if n not in named)
        unions += sum(1 for p in props.values()
                      if isinstance(p, Mapping) and ("anyOf" in p or isinstance(p.get("type"), list)))
    problems: list[str] = []
    if optional > ANTHROPIC_MAX_OPTIONAL:
        problems.append(f"{optional} optional properties (max {ANTHROPIC_MAX_OPTIONAL} per request)")
    if unions > ANTHROPIC_MAX_UNION_PROPERTIES:
        problems.append(f"{unions} properties typed by anyOf or a type array (max {ANTHROPIC_MAX_UNION_PROPERTIES})")
    return problems


def object_nesting(schema: Mapping[str, Any], cap: int = OPENAI_MAX_NESTING + 1) -> int:
    """How many object schemas nest inside each other, following references (a recursive one adds its body
    once, not forever); values above ``cap`` are reported as ``cap``."""
    local: dict[str | None, int] = {}
    calls: dict[str | None, list[tuple[str, int]]] = {}
    for name, body in _documents(schema):
        local[name], calls[name] = _local_nesting(body)
    looped = cyclic({n: [t for t, _ in c] for n, c in calls.items() if n is not None})
    height: dict[str | None, int] = {n: min(v, cap) for n, v in local.items()}
    for _ in range(len(height) + 1):
        changed = False
        for name, sites in calls.items():
            best = height[name]
            for target, depth in sites:
                if target in height:
                    reach = local[target] if target in looped else height[target]
                    best = max(best, min(cap, depth + reach))
            if best != height[name]:
                height[name], changed = best, True
        if not changed:
            break
    return height[None]


def _local_nesting(body: Mapping[str, Any]) -> tuple[int, list[tuple[str, int]]]:
    """Deepest object nesting within one document, and its references with the nesting at each."""
    deepest = 0
    sites: list[tuple[str, int]] = []
    stack: list[tuple[Mapping[str, Any], int]] = [(body, 0)]
    while stack:
        node, above = stack.pop()
        declared = node.get("type")
        here = above + (1 if declared == "object" or (isinstance(declared, list) and "object" in declared) else 0)
        deepest = max(deepest, here)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
            sites.append((unescape(ref[len(_DEFS_PREFIX):]), here))
        for key in ("properties",):
            members = node.get(key)
            if isinstance(members, Mapping):
                stack.extend((m, here) for m in members.values() if isinstance(m, Mapping))
        items = node.get("items")
        if isinstance(items, Mapping):
            stack.append((items, here))
        branches = node.get("anyOf")
        if isinstance(branches, list):
            stack.extend((b, here) for b in branches if isinstance(b, Mapping))
    return deepest, sites
