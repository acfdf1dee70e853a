"""The walk that lowers a schema for llguidance: every subschema the engine evaluates, each keyword decided.

:func:`prepare` visits what is reachable through evaluated keywords and references, lets
:class:`~guardrail.local.lowering.keywords.KeywordStep` decide each keyword, then objects and numbers per node
(they depend on how the node is merged), applies the edits and rewrites references as root pointers.
:func:`reachable` lists the same subschemas for the compile remedies in :mod:`guardrail.local.grammar`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote, urldefrag, urljoin

from guardrail.local.lowering.engine import ANNOTATIONS, ASSERTIONS, ENFORCED, POST_VALIDATED
from guardrail.local.lowering.keywords import KeywordStep
from guardrail.local.lowering.numbers import combined_numbers, number_bounds
from guardrail.local.lowering.objects import merged_paths, object_bounds
from guardrail.local.lowering.prepared import DELETE, Prepared, Visit, apply_edits
from guardrail.schema.refs import RefIndex
from guardrail.schema.report import ReportBuilder
from guardrail.schema.tree import copy_json, join, walk

__all__ = ["prepare", "reachable"]

#: Identifiers removed from the copy once every reference is a pointer from the root.
_IDENTIFIERS: Final = ("$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor")


def reachable(doc: Mapping[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Every subschema of ``doc`` with its pointer: the usual positions plus wherever a ``$ref`` points."""
    refs = RefIndex(doc)
    out: list[tuple[dict[str, Any], str]] = []
    seen: set[str] = set()
    pending: list[tuple[Mapping[str, Any], str]] = [(doc, "")]
    while pending:
        start, start_path = pending.pop()
        for node, path in walk(start, start_path):
            if path in seen or not isinstance(node, dict):
                continue
            seen.add(path)
            out.append((node, path))
            target = refs.resolve(node.get("$ref"))
            if target is not None and target[1] not in seen:
                pending.append(target)
    return out


def prepare(schema: Mapping[str, Any], *, close: bool = True, narrow: bool = True) -> Prepared:
    """The copy of ``schema`` to give llguidance, with one report entry per constraint keyword it reaches.

    Only subschemas the engine evaluates are reported: those reachable from the root through evaluated
    keywords and references (an unreferenced definition is never compiled; a removed keyword's subschemas
    are checked after parsing as a whole). ``close`` adds ``additionalProperties: false`` where safe;
    ``narrow`` gives numbers the finite engine range of
    :func:`.numbers.number_bounds` (False: only bounds the contract has).
    """
    refs = RefIndex(schema)
    prepared = Prepared(copy_json(schema), ReportBuilder("grammar"), narrowed=narrow)
    report = prepared.report
    # Before draft 2019-09 a $ref replaces its schema: keywords next to it are ignored by validators.
    legacy = isinstance(schema.get("$schema"), str) and any(
        f"draft-0{n}" in schema["$schema"] for n in (3, 4, 6, 7))
    visits: dict[str, Visit] = {}
    targets: set[str] = set()
    unknown: list[tuple[str, str]] = []
    pending: list[tuple[Mapping[str, Any], str]] = [(schema, "")]
    while pending:
        node, path = pending.pop()
        if path in visits:
            continue
        visit = visits[path] = Visit(node)
        found: list[tuple[Mapping[str, Any], str]] = []
        step = KeywordStep(path, node, prepared, visit, found)
        for kw, val in node.items():
            if kw in _IDENTIFIERS or kw in ANNOTATIONS:
                continue
            if kw not in ASSERTIONS and kw != "x-guidance":
                unknown.append((path, kw))
            elif kw == "x-guidance":
                prepared.drop(path, kw, "engine options inside the schema are ignored; guardrail sets them", "lowered")
            elif legacy and "$ref" in node and kw != "$ref" and kw in ASSERTIONS:
                prepared.drop(path, kw, "ignored next to $ref before draft 2019-09: removed", "lowered")
            elif kw in POST_VALIDATED:
                prepared.drop(path, kw, "refused by the engine: removed, checked after parsing")
            elif kw == "$ref":
                target = _resolve(refs, schema, val)
                if target is None:
                    report.add(path, kw, "rejected", f"unresolvable reference {str(val)[:60]!r}")
                    continue
                prepared.edits.append((path, kw, "#" + quote(target[1], safe="/~!$&'()*+,;=:@")))
                report.add(path, kw, "enforced", "recursive reference" if refs.recursive(target[1]) else "")
                visit.branches.append(target[1])
                targets.add(target[1])
                found.append(target)
            elif kw in ENFORCED or kw == "oneOf":
                step.keyword(kw, val)
        pending.extend(reversed(found))
    for path, kw in unknown:  # not a keyword: validators ignore it (kept where a reference points into it)
        inside = join(path, kw)
        if not any(t == inside or t.startswith(inside + "/") for t in targets):
            prepared.edits.append((path, kw, DELETE))
    merging = merged_paths(visits)
    combined = combined_numbers(visits)
    for path, visit in visits.items():
        object_bounds(path, visit.node, path in merging, close, prepared)
        number_bounds(path, visit.node, narrow and path not in combined, prepared)
    apply_edits(prepared.schema, prepared.edits)
    prepared.edits.clear()
    for node, _ in walk(prepared.schema, ""):  # every reference is a root pointer now: identifiers go
        for kw in _IDENTIFIERS:
            if isinstance(node, dict) and isinstance(node.get(kw), str):
                del node[kw]
    return prepared



def _resolve(refs: RefIndex, root: Mapping[str, Any], ref: Any) -> tuple[Mapping[str, Any], str] | None:
    """``refs.resolve`` plus absolute references to the root's own ``$id``."""
    found = refs.resolve(ref)
    if found is not None or not isinstance(ref, str):
        return found
    base = root.get("$id", root.get("id"))
    if isinstance(base, str) and base:
        absolute, fragment = urldefrag(urljoin(base, ref))
        if absolute == urldefrag(base)[0]:
            return refs.resolve("#" + fragment)
    return None
