"""Independent checkers of the JSON-schema subsets that vendors accept in strict structured-output modes.

Why independent: guardrail's own schema compiler decides how to *send* a schema; these functions say what a
vendor would *accept*, written from the vendors' published rules rather than from guardrail's code, so a test
can catch guardrail sending something a vendor would refuse with a 400. The emulator runs them on every
strict-mode request when ``Emulator(check_schemas=True)``.

Each problem string starts with the JSON pointer (as a URI fragment, ``#`` is the root) of the offending
subschema, then says what is wrong there, e.g. ``"#/properties/tags: 'uniqueItems' is not supported"``.
The checkers never follow a ``$ref`` when reporting, so each problem is reported once, where it is written;
only the depth limit (OpenAI) and the recursion rule (Anthropic) look through references.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = [
    "ANTHROPIC_FORMATS",
    "OPENAI_FORMATS",
    "anthropic_strict_problems",
    "gemini_schema_problems",
    "openai_strict_problems",
]

#: ``format`` values OpenAI strict mode accepts on strings.
OPENAI_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
#: ``format`` values Anthropic strict mode accepts on strings (``uri`` is the difference with OpenAI).
ANTHROPIC_FORMATS = OPENAI_FORMATS | {"uri"}

_OPENAI_FORBIDDEN = (
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "uniqueItems",
    "prefixItems",
)
_ANTHROPIC_FORBIDDEN = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
)
#: ``format`` values Gemini's ``response_json_schema`` takes on strings.
GEMINI_FORMATS = frozenset({"date-time", "date", "time"})
#: The keywords Gemini documents for ``response_json_schema`` (ai.google.dev/gemini-api/docs/structured-output,
#: "JSON Schema support"); the emulator refuses the others, so guardrail is held to what is documented.
GEMINI_KEYWORDS = frozenset({
    "$id", "$defs", "$ref", "$anchor", "$schema", "type", "format", "title", "description", "enum", "items",
    "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf", "properties",
    "additionalProperties", "required", "propertyOrdering",
})
OPENAI_MAX_DEPTH = 10
OPENAI_MAX_PROPERTIES = 5000
OPENAI_MAX_ENUM_VALUES = 1000
ANTHROPIC_MAX_OPTIONAL = 24
ANTHROPIC_MAX_UNION_PROPERTIES = 16

# Keywords whose value is one subschema / a list of subschemas / a name -> subschema map.
_SINGLE = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames")
_LIST = ("anyOf", "oneOf", "allOf", "prefixItems")
_MAP = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _walk(node: Any, path: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(pointer, subschema)`` for every dict subschema, depth first, without following ``$ref``."""
    if not isinstance(node, dict):
        return
    yield path, node
    for key in _SINGLE:
        if isinstance(node.get(key), dict):
            yield from _walk(node[key], f"{path}/{key}")
    for key in _LIST:
        value = node.get(key)
        if isinstance(value, list):
            for index, child in enumerate(value):
                yield from _walk(child, f"{path}/{key}/{index}")
    for key in _MAP:
        value = node.get(key)
        if isinstance(value, dict):
            for name, child in value.items():
                yield from _walk(child, f"{path}/{key}/{_escape(str(name))}")


def _is_object(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any] | None:
    """Resolve a local ``$ref`` (``#`` or ``#/a/b``) against ``root``; ``None`` when it does not resolve."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for raw in ref[2:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or token not in node:
            return None
        node = node[token]
    return node if isinstance(node, dict) else None


def _children(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Direct subschemas of ``node``, leaving out ``$defs`` (those are reached through ``$ref``)."""
    for key in _SINGLE:
        if isinstance(node.get(key), dict):
            yield node[key]
    for key in _LIST:
        value = node.get(key)
        if isinstance(value, list):
            yield from (child for child in value if isinstance(child, dict))
    for key in ("properties", "patternProperties"):
        value = node.get(key)
        if isinstance(value, dict):
            yield from (child for child in value.values() if isinstance(child, dict))


def _depth(root: dict[str, Any], *, budget: int = 100_000) -> int:
    """Deepest count of nested objects-with-properties, following local refs once per path.

    A reference cycle stops at its second visit, so a recursive schema counts one extra level; ``budget``
    caps the nodes visited, so a pathological DAG of references cannot make the check slow.
    """
    best = 0
    stack: list[tuple[dict[str, Any], int, frozenset[str]]] = [(root, 0, frozenset())]
    while stack and budget > 0:
        budget -= 1
        node, level, seen = stack.pop()
        if "properties" in node:
            level += 1
        best = max(best, level)
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            target = _resolve(root, ref)
            if target is not None:
                stack.append((target, level, seen | {ref}))
        stack.extend((child, level, seen) for child in _children(node))
    return best


def openai_strict_problems(schema: dict[str, Any]) -> list[str]:
    """What OpenAI would refuse in ``schema`` under ``strict: true``; an empty list means it is accepted.

    Rules (OpenAI structured outputs, strict subset): the root is an object and not an ``anyOf``; every object
    has ``additionalProperties: false`` and lists every property in ``required``; no ``oneOf``, ``allOf``,
    ``not``, ``if``/``then``/``else``, ``dependentRequired``, ``dependentSchemas``, ``patternProperties``,
    ``uniqueItems`` or ``prefixItems``; ``format`` only in :data:`OPENAI_FORMATS`; ``$ref`` only to ``#`` or
    ``#/$defs/...`` (and it must resolve); no non-null ``default``; at most 10 levels of nesting, 5000
    properties and 1000 enum values in total.
    """
    problems: list[str] = []
    if not isinstance(schema, dict):
        return ["#: the schema must be a JSON object"]
    if "anyOf" in schema:
        problems.append("#: the root schema must not be 'anyOf'; wrap it in an object")
    if schema.get("type") != "object":
        problems.append(f"#: the root schema must have type 'object', not {schema.get('type')!r}")
    total_properties = 0
    total_enum = 0
    for path, node in _walk(schema):
        for keyword in _OPENAI_FORBIDDEN:
            if keyword in node:
                problems.append(f"{path}: '{keyword}' is not permitted")
        if _is_object(node):
            if node.get("additionalProperties") is not False:
                problems.append(f"{path}: 'additionalProperties' is required to be supplied and to be false")
            properties = node.get("properties") or {}
            required = node.get("required") or []
            missing = [name for name in properties if name not in required]
            if missing:
                problems.append(f"{path}: 'required' must list every property; missing {missing}")
            total_properties += len(properties)
        fmt = node.get("format")
        if fmt is not None and fmt not in OPENAI_FORMATS:
            problems.append(f"{path}: format {fmt!r} is not supported")
        ref = node.get("$ref")
        if ref is not None:
            if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/$defs/")):
                problems.append(f"{path}: $ref {ref!r} must point to '#' or '#/$defs/...'")
            elif _resolve(schema, ref) is None:
                problems.append(f"{path}: $ref {ref!r} does not resolve")
        if node.get("default") is not None:
            problems.append(f"{path}: a non-null 'default' is not permitted")
        if isinstance(node.get("enum"), list):
            total_enum += len(node["enum"])
    depth = _depth(schema)
    if depth > OPENAI_MAX_DEPTH:
        problems.append(f"#: nesting depth {depth} exceeds the limit of {OPENAI_MAX_DEPTH}")
    if total_properties > OPENAI_MAX_PROPERTIES:
        problems.append(f"#: {total_properties} properties in total exceed the limit of {OPENAI_MAX_PROPERTIES}")
    if total_enum > OPENAI_MAX_ENUM_VALUES:
        problems.append(f"#: {total_enum} enum values in total exceed the limit of {OPENAI_MAX_ENUM_VALUES}")
    return problems


_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")


def _pattern_problem(pattern: str) -> str | None:
    """Why Anthropic would refuse ``pattern`` (backreference, lookaround, word boundary), or ``None``."""
    if any(token in pattern for token in _LOOKAROUND):
        return "lookaround is not supported"
    index = 0
    while index < len(pattern):
        if pattern[index] == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            if escaped.isdigit() and escaped != "0":
                return f"backreference '\\{escaped}' is not supported"
            if escaped == "k" and pattern[index + 2 : index + 3] == "<":
                return "named backreference is not supported"
            if escaped in "bB":
                return f"word boundary '\\{escaped}' is not supported"
            index += 2
            continue
        index += 1
    return None


def _ref_cycle(schema: dict[str, Any]) -> str | None:
    """Pointer of a ``$ref`` that closes a reference cycle (recursion), or ``None``."""
    # Edges: the ref target (as a pointer string) -> refs written inside it.
    refs_inside: dict[str, list[tuple[str, str]]] = {}

    def refs_under(pointer: str, node: dict[str, Any]) -> list[tuple[str, str]]:
        if pointer not in refs_inside:
            found: list[tuple[str, str]] = []
            for path, sub in _walk(node, pointer):
                ref = sub.get("$ref")
                if isinstance(ref, str) and _resolve(schema, ref) is not None:
                    found.append((path, ref))
            refs_inside[pointer] = found
        return refs_inside[pointer]

    # Depth-first from the root's own refs (ignoring $defs bodies unless referenced).
    root_view = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    stack: list[tuple[str, str, frozenset[str]]] = [(p, r, frozenset()) for p, r in refs_under("#", root_view)]
    while stack:
        path, ref, active = stack.pop()
        if ref in active or ref == "#":
            return path
        target = _resolve(schema, ref)
        if target is None:
            continue
        body = {k: v for k, v in target.items() if k not in ("$defs", "definitions")} if ref == "#" else target
        for inner_path, inner_ref in refs_under(ref, body):
            stack.append((inner_path, inner_ref, active | {ref}))
    return None


def anthropic_strict_problems(schema: dict[str, Any]) -> list[str]:
    """What Anthropic would refuse in ``schema`` for structured outputs / strict tools; empty means accepted.

    Rules (Anthropic's strict subset): no recursion through ``$ref`` cycles; no ``minimum``, ``maximum``,
    ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``, ``minLength``, ``maxLength``, ``maxItems`` or
    ``uniqueItems``; ``minItems`` only 0 or 1; every object has ``additionalProperties: false``; ``format`` only
    in :data:`ANTHROPIC_FORMATS`; ``pattern`` without backreferences, lookaround or ``\\b``; ``allOf`` not
    combined with ``$ref``; at most 24 optional properties and at most 16 properties whose schema is an
    ``anyOf`` or a type array, counted over the whole schema as written. Optional properties are allowed.
    """
    problems: list[str] = []
    if not isinstance(schema, dict):
        return ["#: the schema must be a JSON object"]
    optional = 0
    unions = 0
    for path, node in _walk(schema):
        for keyword in _ANTHROPIC_FORBIDDEN:
            if keyword in node:
                problems.append(f"{path}: '{keyword}' is not supported")
        min_items = node.get("minItems")
        if min_items is not None and min_items not in (0, 1):
            problems.append(f"{path}: 'minItems' must be 0 or 1, not {min_items!r}")
        if _is_object(node):
            if node.get("additionalProperties") is not False:
                problems.append(f"{path}: 'additionalProperties' must be false")
            properties = node.get("properties") or {}
            required = node.get("required") or []
            optional += sum(1 for name in properties if name not in required)
            unions += sum(
                1
                for child in properties.values()
                if isinstance(child, dict) and ("anyOf" in child or isinstance(child.get("type"), list))
            )
        fmt = node.get("format")
        if fmt is not None and fmt not in ANTHROPIC_FORMATS:
            problems.append(f"{path}: format {fmt!r} is not supported")
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            why = _pattern_problem(pattern)
            if why:
                problems.append(f"{path}: pattern {pattern!r}: {why}")
        all_of = node.get("allOf")
        if isinstance(all_of, list) and (
            "$ref" in node or any(isinstance(part, dict) and "$ref" in part for part in all_of)
        ):
            problems.append(f"{path}: 'allOf' combined with '$ref' is not supported")
        ref = node.get("$ref")
        if ref is not None and (not isinstance(ref, str) or _resolve(schema, ref) is None):
            problems.append(f"{path}: $ref {ref!r} must be a local reference that resolves")
    cycle = _ref_cycle(schema)
    if cycle is not None:
        problems.append(f"{cycle}: recursive schemas are not supported")
    if optional > ANTHROPIC_MAX_OPTIONAL:
        problems.append(f"#: {optional} optional properties exceed the limit of {ANTHROPIC_MAX_OPTIONAL}")
    if unions > ANTHROPIC_MAX_UNION_PROPERTIES:
        problems.append(
            f"#: {unions} properties with 'anyOf' or a type array exceed the limit of {ANTHROPIC_MAX_UNION_PROPERTIES}"
        )
    return problems


def gemini_schema_problems(schema: dict[str, Any]) -> list[str]:
    """What the emulated Gemini refuses in a ``response_json_schema``; an empty list means it is accepted.

    Rules (Gemini structured output, "JSON Schema support"): only the keywords of :data:`GEMINI_KEYWORDS`;
    ``format`` only in :data:`GEMINI_FORMATS`; ``enum`` values strings or numbers; ``$ref`` must resolve
    (to ``#`` or ``#/$defs/...``).
    """
    if not isinstance(schema, dict):
        return ["#: the schema must be a JSON object"]
    problems: list[str] = []
    for path, node in _walk(schema):
        for keyword in node:
            if keyword not in GEMINI_KEYWORDS:
                problems.append(f"{path}: '{keyword}' is not supported")
        fmt = node.get("format")
        if fmt is not None and fmt not in GEMINI_FORMATS:
            problems.append(f"{path}: format {fmt!r} is not supported")
        values = node.get("enum")
        if isinstance(values, list) and not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                                for v in values):
            problems.append(f"{path}: enum values must be strings or numbers")
        ref = node.get("$ref")
        if ref is not None and (not isinstance(ref, str) or _resolve(schema, ref) is None):
            problems.append(f"{path}: $ref {ref!r} does not resolve")
    return problems
