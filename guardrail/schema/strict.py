"""Lowering a JSON Schema to a strict vendor subset (OpenAI strict, Anthropic strict).

The walk builds a new schema node by node with an explicit work stack (no recursion, so deep schemas
cannot exhaust Python's stack). Each node is first *flattened*: ``allOf`` members and ``$ref`` targets
with sibling keywords are merged into one schema (only when that is exact, see :mod:`merge`), ``oneOf``
becomes ``anyOf``, and constraints beside a union are pushed into each branch. Then every keyword is kept
(``enforced``), rewritten (``lowered``), removed for guardrail to check after parsing (``post_validated``)
or refused (``rejected``), and the children are queued.

References: targets under the root ``$defs``/``definitions`` stay references (all output definitions live
under ``$defs``, names sanitised); other targets are inlined unless recursive, in which case they become
a generated definition. Recursive targets are never inlined (except once, at the root).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from guardrail.schema.describe import DESCRIBED, describe_into
from guardrail.schema.dialects import (
    CONSTRAINTS,
    DYNAMIC_REFS,
    JSON_TYPES,
    KEPT_ANNOTATIONS,
    StrictRules,
    unsupported_regex,
)
from guardrail.schema.flatten import NEVER, Flattener, KeptRef
from guardrail.schema.merge import Flat, Part, Site
from guardrail.schema.nullable import allows_null, make_nullable
from guardrail.schema.refs import RefIndex, root_def_name
from guardrail.schema.report import ReportBuilder
from guardrail.schema.tree import DEF_CONTAINERS, canonical, copy_json, escape, join

#: Most subschemas one lowering processes (inlining can multiply a schema); beyond it: a "limits" rejection.
MAX_NODES: Final = 20_000

_OBJECT_KWS: Final = ("properties", "required", "additionalProperties", "patternProperties", "minProperties",
                      "maxProperties", "propertyNames", "dependentRequired", "dependentSchemas", "dependencies")
_ARRAY_KWS: Final = ("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "additionalItems")
_STRING_KWS: Final = ("pattern", "minLength", "maxLength", "format")
_NUMBER_KWS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
#: Keywords the walker handles in dedicated sections rather than in the per-keyword loop.
_SECTIONED: Final = frozenset({"type", "properties", "items", "prefixItems", "additionalItems", "required",
                               "additionalProperties", "patternProperties", "anyOf", "oneOf"})
_UNION_KWS: Final = ("anyOf", "oneOf")
_NAME_BAD: Final = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass
class _Job:
    parts: list[Part]
    out: dict[str, Any]
    root: bool = False
    #: For a union branch: the output branch list, the union's pointer and keyword (an impossible branch is dropped).
    union: tuple[list[dict[str, Any]], str, str] | None = None


class StrictLowerer:
    """Lowers one schema for one strict dialect; :meth:`run` returns the new root (without ``$defs``)."""

    def __init__(self, schema: Mapping[str, Any], rules: StrictRules, report: ReportBuilder) -> None:
        self.schema = schema
        self.rules = rules
        self.report = report
        self.refs = RefIndex(schema)
        self.defs: dict[str, dict[str, Any]] = {}
        self.made_required = False
        self._names: dict[str, str] = {}
        self._taken: set[str] = set()
        self._jobs: list[_Job] = []
        self._nullable: list[tuple[dict[str, Any], str, str]] = []
        self._flattener = Flattener(self.refs, rules, report)
        for container in DEF_CONTAINERS:
            members = schema.get(container)
            if isinstance(members, Mapping):
                for name in members:
                    self._name_for(join("", container, name))

    def run(self) -> dict[str, Any]:
        root: dict[str, Any] = {}
        self._jobs.append(_Job([(self.schema, Site(""))], root, root=True))
        done = 0
        while self._jobs:
            done += 1
            if done > MAX_NODES:
                self.report.add("", "limits", "rejected", f"more than {MAX_NODES} subschemas after inlining references")
                break
            job = self._jobs.pop()
            flat = self._flattener.flatten(job.parts, root=job.root, branch=job.union is not None)
            if flat is NEVER and job.union is not None:
                self._drop_branch(job.union, job.out)
            elif isinstance(flat, KeptRef):
                job.out["$ref"] = self._ref_to(flat)
            elif isinstance(flat, Flat):
                self._emit(flat, job.out)
        made: dict[str, tuple[list[str], list[str]]] = {}
        for props, name, path in self._nullable:
            nulled, already = made.setdefault(path, ([], []))
            if allows_null(props[name]):
                already.append(name)
            else:
                props[name] = make_nullable(props[name])
                nulled.append(name)
        for path, (nulled, already) in made.items():
            said = [f"optional -> required + nullable (a null means absent): {_names(nulled)}"] if nulled else []
            said += [f"optional -> required, already nullable: {_names(already)}"] if already else []
            self.report.add(path, "required", "lowered", "; ".join(said))
        return root

    def _drop_branch(self, union: tuple[list[dict[str, Any]], str, str], branch: dict[str, Any]) -> None:
        branches, where, kw = union
        branches[:] = [b for b in branches if b is not branch]
        if branches:
            self.report.add(where, kw, "lowered", "a branch that contradicts the constraints beside it dropped")
        else:
            self._reject(where, kw, "no branch can match beside the union's other constraints")

    # -- references -------------------------------------------------------------------------------------

    def _name_for(self, pointer: str) -> str:
        name = self._names.get(pointer)
        if name is None:
            plain = root_def_name(pointer)
            if plain is None:
                plain = "root" if not pointer else pointer.strip("/").replace("/", "_")
            base = _NAME_BAD.sub("_", plain)[:64] or "def"
            name, n = base, 1
            while name in self._taken:
                n += 1
                name = f"{base}_{n}"
            self._taken.add(name)
            self._names[pointer] = name
        return name

    def _ref_to(self, ref: KeptRef) -> str:
        """The output reference for a kept target, queueing the target's lowering the first time."""
        name = self._name_for(ref.pointer)
        if name not in self.defs:
            self.defs[name] = {}
            self._jobs.append(_Job([(ref.target, Site(ref.pointer))], self.defs[name]))
        return "#/$defs/" + escape(name)

    # -- emitting ---------------------------------------------------------------------------------------

    def _emit(self, flat: Flat, out: dict[str, Any]) -> None:
        node, site, rules = flat.node, flat.site, self.rules
        for kw in KEPT_ANNOTATIONS:
            if isinstance(node.get(kw), str):
                out[kw] = node[kw]
        types = self._types(flat, out)
        if types is None:
            return
        for kw, val in node.items():
            if kw in _SECTIONED or kw not in CONSTRAINTS:
                continue
            where = site.of(kw)
            if kw in DYNAMIC_REFS:
                self._reject(where, kw, "dynamic references cannot be followed")
            elif kw == "default":
                out[kw] = copy_json(val)
                self.report.add(where, kw, "enforced", "kept")
            elif kw == "discriminator":
                self.report.add(where, kw, "post_validated", "removed: the branch choice is post-validated")
            elif kw in ("enum", "const"):
                self._literal(kw, val, where, out, "type" in out or "anyOf" in node or "oneOf" in node)
            elif kw == "format":
                if isinstance(val, str) and val in rules.formats:
                    out[kw] = val
                    self.report.add(where, kw, "enforced", val)
                else:
                    self.report.add(where, kw, "post_validated", f"format {str(val)[:40]!r} not supported: removed")
            elif kw == "pattern" and rules.simple_patterns and isinstance(val, str) and unsupported_regex(val):
                self.report.add(where, kw, "post_validated", f"pattern uses a {unsupported_regex(val)}: removed")
            elif kw == "minItems" and rules.max_min_items is not None and not (
                    isinstance(val, int) and val <= rules.max_min_items):
                self.report.add(where, kw, "post_validated", f"minItems {val!r} > {rules.max_min_items}: removed")
            elif kw in rules.kept:
                if (kw != "pattern" and not _is_number(val)) or (kw == "pattern" and not isinstance(val, str)):
                    self.report.add(where, kw, "post_validated", "unexpected value form: removed")
                    continue
                out[kw] = copy_json(val)
                self.report.add(where, kw, "enforced")
            else:
                self.report.add(where, kw, "post_validated", "not supported in this dialect: removed")
        self._describe(flat, out)
        if "object" in types:
            self._object(flat, out)
        if "array" in types:
            self._array(flat, out)
        for kw in _UNION_KWS:
            if kw in node:
                self._union(flat, kw, out)

    def _describe(self, flat: Flat, out: dict[str, Any]) -> None:
        """Restate in ``out``'s description, in words, each keyword of the node this dialect removed."""
        node = flat.node
        dropped = [kw for kw in node if kw in DESCRIBED and kw not in out]
        tuple_kw = _tuple_keyword(node)
        if tuple_kw is not None and len({canonical([s for s, _ in flat.slots[(tuple_kw, str(i))]])
                                         for i in range(len(node[tuple_kw]))}) > 1:
            dropped.append(tuple_kw)  # items of different schemas: sent as one anyOf, their order is lost
        describe_into(out, node, dropped, self.report, flat.site.of, flat.also)

    def _types(self, flat: Flat, out: dict[str, Any]) -> set[str] | None:
        """Copy or infer ``type``; the set of types the node admits, or None when rejected."""
        node, site = flat.node, flat.site
        declared = node.get("type")
        if "type" in node:
            listed = [declared] if isinstance(declared, str) else declared
            if not isinstance(listed, list) or not listed or not all(t in JSON_TYPES for t in listed):
                self._reject(site.of("type"), "type", f"unknown type {str(declared)[:40]}")
                return None
            unique = list(dict.fromkeys(listed))
            out["type"] = unique[0] if len(unique) == 1 else unique
            self.report.add(site.of("type"), "type", "enforced")
            return set(listed)
        if any(k in node for k in ("anyOf", "oneOf", "enum", "const")):
            return set()
        families = [t for t, kws in (("object", _OBJECT_KWS), ("array", _ARRAY_KWS), ("string", _STRING_KWS),
                                     ("number", _NUMBER_KWS)) if any(k in node for k in kws)]
        if len(families) != 1:
            self._reject(site.path, "type", "no type: a value of any JSON type cannot be expressed in strict mode")
            return None
        out["type"] = families[0]
        self.report.add(site.path, "type", "lowered", f"no type: {families[0]} inferred from its keywords")
        return {families[0]}

    def _literal(self, kw: str, val: Any, where: str, out: dict[str, Any], typed: bool) -> None:
        values = val if kw == "enum" else [val]
        if kw == "enum" and (not isinstance(val, (list, tuple)) or not val):
            self._reject(where, kw, "enum must be a non-empty list: no value is valid")
        elif self.rules.scalar_enums and not all(v is None or isinstance(v, (str, int, float, bool)) for v in values):
            if typed:
                self.report.add(where, kw, "post_validated", "object/array values not supported: removed")
            else:
                self._reject(where, kw, "object/array values not supported and nothing else types the value")
        else:
            out[kw] = copy_json(val)
            self.report.add(where, kw, "enforced")

    def _object(self, flat: Flat, out: dict[str, Any]) -> None:
        node, site = flat.node, flat.site
        names = list(node.get("properties") or {})
        addl = node.get("additionalProperties", _MISSING)
        pattern_props = node.get("patternProperties")
        mapped = isinstance(pattern_props, Mapping) and bool(pattern_props)
        where = site.of("additionalProperties")
        if mapped and names:
            self.report.add(site.of("patternProperties"), "patternProperties", "post_validated",
                            "removed: keys matching the patterns won't be produced")
        elif mapped:
            self._reject(site.of("patternProperties"), "patternProperties",
                         "map-like object (no properties): strict mode would force {} (silent data loss)")
        if addl is True or isinstance(addl, Mapping):
            if names:
                self.report.add(where, "additionalProperties", "lowered",
                                "-> false: extra keys the type allows won't be produced")
            else:
                self._reject(where, "additionalProperties",
                             "dict-like object (no properties): strict mode would force {} (silent data loss)")
        elif "properties" in node or addl is False:
            self.report.add(where, "additionalProperties", "enforced", "false" if addl is False else "false (added)")
        elif not mapped:
            self._reject(where, "additionalProperties",
                         "object without declared properties: strict mode would force {} (silent data loss)")
        props: dict[str, Any] = {}
        for name in names:
            props[name] = {}
            self._jobs.append(_Job(flat.slots[("properties", name)], props[name]))
        raw = node.get("required")
        required = list(dict.fromkeys(n for n in raw if isinstance(n, str))) if isinstance(raw, list) else []
        if "required" in node and not isinstance(raw, list):
            self.report.add(site.of("required"), "required", "post_validated", "not a list of names: removed")
        missing = [n for n in required if n not in props]
        if missing:
            self._reject(site.of("required"), "required", f"required without a property schema: {missing[:3]}")
        elif required:
            self.report.add(site.of("required"), "required", "enforced")
        if self.rules.all_required:
            for name in names:
                if name not in required:
                    self._nullable.append((props, name, site.of("required")))
                    self.made_required = True
            required = names
        out["properties"] = props
        out["required"] = [n for n in required if n in props]
        out["additionalProperties"] = False

    def _array(self, flat: Flat, out: dict[str, Any]) -> None:
        node, site = flat.node, flat.site
        tuple_kw = _tuple_keyword(node)
        if tuple_kw is None:
            if ("items", "") in flat.slots:
                out["items"] = {}
                self._jobs.append(_Job(flat.slots[("items", "")], out["items"]))
            else:
                self._reject(site.path, "items", "array without an item schema: items of any JSON type")
            return
        count = len(node[tuple_kw])
        branches = [flat.slots[(tuple_kw, str(i))] for i in range(count)]
        extra = flat.slots.get(("items" if tuple_kw == "prefixItems" else "additionalItems", ""))
        if extra and all(isinstance(s, Mapping) for s, _ in extra):
            branches.append(extra)
        if not branches:
            self._reject(site.of(tuple_kw), tuple_kw, "empty tuple")
            return
        distinct: dict[str, dict[str, Any]] = {}
        for parts in branches:
            child: dict[str, Any] = {}
            self._jobs.append(_Job(parts, child))  # duplicates are lowered too, for their report entries
            distinct.setdefault(canonical([s for s, _ in parts]), child)
        outs = list(distinct.values())
        out["items"] = outs[0] if len(outs) == 1 else {"anyOf": outs}
        self.report.add(site.of(tuple_kw), tuple_kw, "lowered",
                        f"tuple of {count} -> items of {len(outs)} distinct schema(s); positions post-validated")

    def _union(self, flat: Flat, kw: str, out: dict[str, Any]) -> None:
        members, where = flat.node[kw], flat.site.of(kw)
        if not isinstance(members, (list, tuple)) or not members:
            self._reject(where, kw, "empty union: no value is valid")
            return
        branches: list[dict[str, Any]] = []
        for i in range(len(members)):
            branches.append({})
            self._jobs.append(_Job(flat.slots[(kw, str(i))], branches[-1], union=(branches, where, kw)))
        out["anyOf"] = branches
        spread = "; sibling constraints distributed into each branch" if flat.distributed else ""
        if kw == "oneOf":
            self.report.add(where, kw, "lowered", "oneOf -> anyOf (exclusivity post-validated)" + spread)
        elif spread:
            self.report.add(where, kw, "lowered", spread.lstrip("; "))
        else:
            self.report.add(where, kw, "enforced")

    def _reject(self, path: str, keyword: str, detail: str) -> None:
        self.report.add(path, keyword, "rejected", detail)


_MISSING: Final = object()


def _tuple_keyword(node: Mapping[str, Any]) -> str | None:
    """``prefixItems`` (or draft 4's list-form ``items``) when ``node`` is a tuple, else None."""
    if isinstance(node.get("prefixItems"), (list, tuple)):
        return "prefixItems"
    return "items" if isinstance(node.get("items"), (list, tuple)) else None


def _names(names: list[str], shown: int = 8) -> str:
    more = f" (+{len(names) - shown} more)" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)

