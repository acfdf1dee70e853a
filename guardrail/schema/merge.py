"""Merging schema parts into one node, exactly or not at all.

``allOf`` members, a ``$ref`` target with its sibling keywords, and a union's sibling constraints pushed
into each branch all come down to one question: can these schemas be written as ONE schema that admits
exactly the same values? They can when their keywords do not interfere: disjoint keywords combine,
``required`` unions, ``type`` intersects, bounds take the tighter value, the same property in two parts
becomes a child made of both parts. When a combination would change the meaning (two different
``pattern``s, ``additionalProperties: false`` next to another part's properties), :func:`assemble` says
why it cannot, and the caller rejects instead of guessing.

Each keyword remembers which original node it came from (:class:`Site`), so report entries point into the
original schema even after merging.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from guardrail.schema.dialects import CONSTRAINTS
from guardrail.schema.tree import DEF_CONTAINERS, canonical, join


@dataclass(frozen=True)
class Site:
    """Where a (possibly merged) node's keywords came from: ``origins`` overrides ``path`` per keyword."""

    path: str
    origins: Mapping[str, str] = field(default_factory=dict)

    def of(self, keyword: str) -> str:
        """The pointer of the original node that held ``keyword``."""
        return self.origins.get(keyword, self.path)


Part = tuple[Any, Site]


@dataclass(frozen=True)
class Conflict:
    """Why parts cannot become one schema; ``unsatisfiable`` when no value could satisfy them all anyway."""

    reason: str
    unsatisfiable: bool = False
Slot = tuple[str, str]


@dataclass
class Flat:
    """One merged node: keyword values, where they came from, and the parts each child is made of.

    ``node["properties"]`` holds the property names (values unused); a child's schema is in ``slots``
    under ``("properties", name)``, ``("items", "")``, ``("anyOf", "0")``, ``("prefixItems", "1")``...
    """

    node: dict[str, Any]
    site: Site
    slots: dict[Slot, list[Part]]
    #: Constraints that stood beside the union were pushed into each branch.
    distributed: bool = False
    #: Lenient keywords (removed, post-validated) that later members gave with other values: each applies,
    #: and the words restating them (:mod:`guardrail.schema.describe`) say every one.
    also: dict[str, list[Any]] = field(default_factory=dict)


_LIST_KEYWORDS: Final = ("anyOf", "oneOf", "prefixItems")
_SINGLE_KEYWORDS: Final = ("additionalItems", "additionalProperties")
_TIGHTEST_MAX: Final = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties",
                                  "minContains"})
_TIGHTEST_MIN: Final = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties",
                                  "maxContains"})
#: Annotation-like keywords: the first part's value wins (siblings come before a ``$ref`` target).
_FIRST_WINS: Final = frozenset({"default", "discriminator"})


def assemble(parts: list[Part], lenient: frozenset[str] = frozenset()) -> Flat | Conflict:
    """Merge ``parts`` (schema dicts with their sites) into one :class:`Flat`, or say why that is not exact.

    Keywords in ``lenient`` will be removed and post-validated by the caller: for them the first value is
    kept without an exactness check (the post-validation sees the whole original).
    """
    node: dict[str, Any] = {}
    origins: dict[str, str] = {}
    slots: dict[Slot, list[Part]] = {}
    also: dict[str, list[Any]] = {}
    for schema, site in parts:
        for kw, val in schema.items():
            if kw in DEF_CONTAINERS:
                continue
            where = site.of(kw)
            if kw in lenient and kw in node:
                _take_lenient(node, also, kw, val)
                continue
            problem = _take(node, slots, kw, val, where, lenient)
            if problem:
                return problem
            origins.setdefault(kw, where)
    reason = _interference(parts)
    if reason:
        return Conflict(reason)
    base = parts[0][1].path if parts else ""
    return Flat(node, Site(base, {k: v for k, v in origins.items() if v != base}), slots, also=also)


def _take_lenient(node: dict[str, Any], also: dict[str, list[Any]], kw: str, val: Any) -> None:
    """A second value of a keyword that will be removed: merged where that is exact (the tighter bound,
    ``uniqueItems`` if any says so), else kept beside the first in ``also`` (both apply)."""
    prev = node[kw]
    if (kw in _TIGHTEST_MAX or kw in _TIGHTEST_MIN) and _is_number(prev) and _is_number(val):
        node[kw] = max(prev, val) if kw in _TIGHTEST_MAX else min(prev, val)
    elif kw == "uniqueItems" and isinstance(prev, bool) and isinstance(val, bool):
        node[kw] = prev or val
    elif not same_json(prev, val) and not any(same_json(v, val) for v in also.get(kw, ())):
        also.setdefault(kw, []).append(val)


def _take(node: dict[str, Any], slots: dict[Slot, list[Part]], kw: str, val: Any, where: str,
          lenient: frozenset[str]) -> Conflict | None:
    """Fold one keyword of one part into ``node``; a :class:`Conflict` when it cannot be folded exactly."""
    if kw == "properties":
        if isinstance(val, Mapping):
            names = node.setdefault("properties", {})
            for name, sub in val.items():
                names[str(name)] = True
                slots.setdefault(("properties", str(name)), []).append((sub, Site(join(where, kw, name))))
        return None
    if kw == "items" and not isinstance(val, (list, tuple)):
        node.setdefault("items", val)
        slots.setdefault(("items", ""), []).append((val, Site(join(where, kw))))
        return None
    if kw in _LIST_KEYWORDS or kw == "items":
        if kw in node:
            return Conflict(f"two members both have {kw}")
        node[kw] = val
        if isinstance(val, (list, tuple)):
            for i, sub in enumerate(val):
                slots[(kw, str(i))] = [(sub, Site(join(where, kw, i)))]
        return None
    if kw in _SINGLE_KEYWORDS:
        prev = node.get(kw, True)
        node[kw] = False if val is False or prev is False else (val if isinstance(val, Mapping) else prev)
        slots.setdefault((kw, ""), []).append((val, Site(join(where, kw))))
        return None
    if kw not in node:
        node[kw] = val
        return None
    prev = node[kw]
    if kw in lenient or kw in _FIRST_WINS or kw not in CONSTRAINTS:
        return None
    if kw == "required":
        if isinstance(prev, list) and isinstance(val, (list, tuple)):
            node[kw] = prev + [n for n in val if n not in prev]
            return None
    elif kw == "type":
        merged = _intersect_types(prev, val)
        if merged is None:
            return Conflict(f"no JSON type satisfies both type {_short(prev)} and type {_short(val)}", True)
        node[kw] = merged
        return None
    elif kw in _TIGHTEST_MAX or kw in _TIGHTEST_MIN:
        if _is_number(prev) and _is_number(val):
            node[kw] = max(prev, val) if kw in _TIGHTEST_MAX else min(prev, val)
            return None
    elif kw == "uniqueItems" and isinstance(prev, bool) and isinstance(val, bool):
        node[kw] = prev or val
        return None
    elif kw == "enum" and isinstance(prev, list) and isinstance(val, (list, tuple)):
        node[kw] = [v for v in prev if any(same_json(v, w) for w in val)]
        return None if node[kw] else Conflict("no value is in both enums", True)
    elif kw == "const":
        return None if same_json(prev, val) else Conflict("two different consts", True)
    if canonical(prev) != canonical(val):
        return Conflict(f"members disagree on {kw} ({_short(prev)} vs {_short(val)})")
    return None


def _interference(parts: list[Part]) -> str | None:
    """Keywords that read other keywords of their own schema cannot be split across members."""
    if len(parts) < 2:
        return None
    for i, (schema, _) in enumerate(parts):
        if not isinstance(schema, Mapping):
            continue
        closed = any(k in schema and schema[k] is not True
                     for k in ("additionalProperties", "unevaluatedProperties")) or "patternProperties" in schema
        if closed:
            own = schema.get("properties")
            own_names = set(own) if isinstance(own, Mapping) else set()
            for j, (other, _) in enumerate(parts):
                theirs = other.get("properties") if j != i and isinstance(other, Mapping) else None
                if isinstance(theirs, Mapping) and not set(theirs) <= own_names:
                    return "additionalProperties/patternProperties of one member would apply to another's properties"
        if "prefixItems" in schema or isinstance(schema.get("items"), (list, tuple)):
            for j, (other, _) in enumerate(parts):
                if j != i and isinstance(other, Mapping) and any(
                        k in other for k in ("items", "prefixItems", "additionalItems", "unevaluatedItems")):
                    return "a tuple (prefixItems) cannot be merged with another member's items"
    return None


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``true != 1``; containers compare by canonical form."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, (dict, list, tuple)) or isinstance(b, (dict, list, tuple)):
        return canonical(a) == canonical(b)
    return type(a) is type(b) and bool(a == b)


def _intersect_types(a: Any, b: Any) -> str | list[str] | None:
    """The JSON types both ``a`` and ``b`` admit (integer is a subset of number); None when none."""
    first, second = _type_list(a), _type_list(b)
    if first is None or second is None:
        return None

    def admits(types: list[str], t: str) -> bool:
        return t in types or (t == "integer" and "number" in types)

    out = [t for t in first if admits(second, t)]
    out += [t for t in second if t not in out and admits(first, t)]
    if "number" in out and "integer" in out:
        out.remove("integer")
    if not out:
        return None
    return out[0] if len(out) == 1 else out


def _type_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value):
        return list(value)
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value: Any, limit: int = 40) -> str:
    text = canonical(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
