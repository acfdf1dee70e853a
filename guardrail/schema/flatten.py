"""Flattening one node for a strict dialect: references, ``allOf`` and union siblings resolved into one schema.

Strict vendors want each node to say everything itself: no ``allOf``, no ``$ref`` with sibling keywords,
no constraints beside a union. :class:`Flattener` takes the parts a node is made of and returns one of:

- a :class:`Flat` node (``allOf`` members and inlined ``$ref`` targets merged exactly, constraints beside
  an ``anyOf``/``oneOf`` pushed into each branch),
- a :class:`KeptRef` (the node is a reference that stays a reference: to a definition, or recursive),
- :data:`NEVER` (a union branch that contradicts the constraints pushed into it: the caller drops it),
- ``None`` (rejected; the report says why).

Expansion is iterative and bounded by :data:`MAX_HOPS`; recursive targets are never inlined (except
once at the root, whose body must be the object itself).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from guardrail.schema.dialects import CONSTRAINTS, KEPT_ANNOTATIONS, StrictRules
from guardrail.schema.merge import Conflict, Flat, Part, Site, assemble
from guardrail.schema.refs import RefIndex, root_def_name
from guardrail.schema.report import ReportBuilder
from guardrail.schema.tree import join

#: Most ``$ref``/``allOf`` expansions while flattening one node.
MAX_HOPS: Final = 256
_UNION_KWS: Final = ("anyOf", "oneOf")


@dataclass(frozen=True)
class KeptRef:
    """The node stays a reference to ``pointer`` (whose schema is ``target``)."""

    pointer: str
    target: Mapping[str, Any]


class _Never:
    """The type of :data:`NEVER`."""


#: A union branch that no value can match.
NEVER: Final = _Never()


class Flattener:
    """Flattens nodes of one schema for one strict dialect, reporting what it inlines, merges or refuses."""

    def __init__(self, refs: RefIndex, rules: StrictRules, report: ReportBuilder) -> None:
        self.refs = refs
        self.rules = rules
        self.report = report

    def flatten(self, parts: list[Part], *, root: bool = False,
                branch: bool = False) -> Flat | KeptRef | _Never | None:
        """One schema for ``parts`` (see the module docstring for the possible answers)."""
        queue: deque[Part] = deque(parts)
        expanded: list[Part] = []
        kept: list[tuple[KeptRef, str, str]] = []
        notes: list[tuple[str, str, str]] = []
        root_inline = root
        hops = 0
        while queue:
            hops += 1
            if hops > MAX_HOPS:
                self._reject(parts[0][1].path, "$ref", f"more than {MAX_HOPS} nested references/allOf members")
                return None
            schema, site = queue.popleft()
            if schema is True:
                continue
            if not isinstance(schema, Mapping):
                detail = "false schema: no value is valid" if schema is False else "not a schema object"
                self._reject(site.path, "type", detail)
                return None
            if not self.rules.keep_default and "default" in schema:
                self.report.add(site.of("default"), "default", "lowered",
                                "removed (not accepted by OpenAI strict); pydantic still applies it after parsing")
                schema = {k: v for k, v in schema.items() if k != "default"}
            if "allOf" in schema:
                members, at = schema["allOf"], site.of("allOf")
                if not isinstance(members, (list, tuple)) or not members:
                    self._reject(at, "allOf", "allOf must be a non-empty list")
                    return None
                rest = {k: v for k, v in schema.items() if k != "allOf"}
                new = [(m, Site(join(at, "allOf", i))) for i, m in enumerate(members)]
                queue.extendleft(reversed(([(rest, site)] if rest else []) + new))
                detail = "single member inlined" if len(members) == 1 else f"{len(members)} members merged exactly"
                notes.append((at, "allOf", detail))
                continue
            if "$ref" in schema:
                ref, at = schema["$ref"], site.of("$ref")
                rest = {k: v for k, v in schema.items() if k != "$ref" and _significant(k)}
                target = self.refs.resolve(ref)
                if target is None:
                    self._reject(at, "$ref", f"unresolvable reference {str(ref)[:60]!r}")
                    return None
                node, pointer = target
                recursive = self.refs.recursive(pointer)
                if recursive and not self.rules.recursion:
                    self._reject(at, "$ref", "recursive reference: this dialect cannot express recursion")
                    return None
                alone = not rest and not queue and not expanded and not kept and not notes
                if (recursive and not root_inline) or (alone and not root and root_def_name(pointer) is not None):
                    why = "recursive reference" if recursive else "reference to a definition"
                    kept.append((KeptRef(pointer, node), at, why))
                    if rest:
                        queue.appendleft((rest, site))
                    continue
                root_inline = False
                queue.extendleft(reversed(([(rest, site)] if rest else []) + [(node, Site(pointer))]))
                notes.append((at, "$ref", "inlined with its sibling keywords" if rest else "target inlined"))
                continue
            expanded.append((schema, site))
        if kept:
            return self._keep_ref(kept, expanded)
        flat = self._union_split(expanded)
        if isinstance(flat, Conflict):
            if flat.unsatisfiable and branch:
                return NEVER
            at, kw = next(((p, k) for p, k, _ in notes), (parts[0][1].path, "anyOf"))
            self._reject(at, kw, f"cannot be merged into one schema exactly: {flat.reason}")
            return None
        if flat is not None:
            for at, kw, detail in notes:
                self.report.add(at, kw, "lowered", detail)
        return flat

    def _keep_ref(self, kept: list[tuple[KeptRef, str, str]], others: list[Part]) -> KeptRef:
        """A kept reference; whatever stood beside it cannot be expressed and is post-validated."""
        ref, at, detail = kept[0]
        self.report.add(at, "$ref", "enforced", detail)
        for _, other_at, _ in kept[1:]:
            self.report.add(other_at, "$ref", "post_validated", "a second reference beside a recursive one: removed")
        for schema, site in others:
            for kw in schema:
                if kw in CONSTRAINTS:
                    self.report.add(site.of(kw), kw, "post_validated", "beside a recursive $ref: removed")
        return ref

    def _union_split(self, parts: list[Part]) -> Flat | Conflict | None:
        """Assemble the parts; constraints beside a union are distributed into each branch (exact)."""
        unions = [(i, kw) for i, (schema, _) in enumerate(parts) for kw in _UNION_KWS if kw in schema]
        if len(unions) > 1:
            index, kw = unions[1]
            self._reject(parts[index][1].of(kw), kw, "two unions (anyOf/oneOf) in one schema")
            return None
        if not unions:
            return assemble(parts, self.rules.removed)
        index, kw = unions[0]
        top: list[Part] = []
        siblings: list[Part] = []
        for i, (schema, site) in enumerate(parts):
            top.append(({k: v for k, v in schema.items() if not _distributable(k) or (i == index and k == kw)}, site))
            rest = {k: v for k, v in schema.items() if _distributable(k) and not (i == index and k == kw)}
            if rest:
                siblings.append((rest, site))
        flat = assemble(top, self.rules.removed)
        if isinstance(flat, Conflict) or not siblings:
            return flat
        for slot in flat.slots:
            if slot[0] == kw:
                flat.slots[slot] = flat.slots[slot] + siblings
        flat.distributed = True
        return flat

    def _reject(self, path: str, keyword: str, detail: str) -> None:
        self.report.add(path, keyword, "rejected", detail)


def _distributable(keyword: str) -> bool:
    """Whether a keyword beside a union constrains the value (and so must hold in every branch)."""
    return (keyword in CONSTRAINTS or keyword in ("properties", "items")) and keyword not in (
        "default", "discriminator")


def _significant(keyword: str) -> bool:
    """Whether a keyword beside ``$ref`` means something in the output (definitions and unknown keys do not)."""
    return keyword in CONSTRAINTS or keyword in KEPT_ANNOTATIONS or keyword in ("properties", "items")
