"""Reporting on a schema that is sent unchanged: the grammar and advisory dialects.

Grammar decoders (guardrail's local llguidance backend; on self-hosted servers xgrammar in vLLM/SGLang, with
guidance behind vLLM's, and llama.cpp's converter, also Ollama's) compile much of JSON Schema themselves, each
its own part (:data:`~guardrail.schema.dialects.GRAMMARS`), and an advisory schema is only shown to the model.
Nothing is rewritten; the report lists, per constraint, whether the decoder enforces it or guardrail must check
it after parsing. Every
subschema is listed once at its place in the document; ``$ref`` targets outside the usual positions
(``#/some/where``) are listed too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardrail.schema.dialects import (
    BOUNDS,
    CONSTRAINTS,
    DYNAMIC_REFS,
    GRAMMAR_ENFORCED,
    GRAMMAR_FORMATS,
    GRAMMARS,
    GrammarRules,
)
from guardrail.schema.refs import RefIndex
from guardrail.schema.report import ReportBuilder
from guardrail.schema.tree import walk


def inventory(schema: Mapping[str, Any], report: ReportBuilder) -> dict[str, list[str]]:
    """Add one entry per constraint keyword of ``schema`` to ``report`` (dialect ``grammar``, a self-hosted
    server's (:data:`~guardrail.schema.dialects.GRAMMARS`) or ``advisory``).

    Returns, per subschema pointer, the keywords a grammar decoder is sent but does not enforce (in
    document order; empty for ``advisory``, whose schema is shown to the model keyword by keyword)."""
    unenforced: dict[str, list[str]] = {}
    refs = RefIndex(schema)
    server = GRAMMARS.get(report.dialect)
    grammar = report.dialect == "grammar" or server is not None
    seen: set[str] = set()
    pending: list[tuple[Mapping[str, Any], str]] = [(schema, "")]
    while pending:
        start, start_path = pending.pop()
        for node, path in walk(start, start_path):
            if path in seen:
                continue
            seen.add(path)
            for kw, val in node.items():
                if kw == "items" and isinstance(val, (list, tuple)):
                    report.add(path, "items", "post_validated", "draft-4 tuple form: not relied on")
                    if grammar:
                        unenforced.setdefault(path, []).append("items")
                elif kw in CONSTRAINTS:
                    if kw == "$ref":
                        target = refs.resolve(val)
                        if target is not None and target[1] not in seen:
                            pending.append(target)
                        _reference(report, path, val, target is not None and refs.recursive(target[1]),
                                   target is None, grammar)
                    elif server is not None:
                        if not _server(report, path, kw, val, node, server):
                            unenforced.setdefault(path, []).append(kw)
                    elif grammar:
                        if not _grammar(report, path, kw, val):
                            unenforced.setdefault(path, []).append(kw)
                    else:
                        report.add(path, kw, "post_validated", "")
    return unenforced


def _reference(report: ReportBuilder, path: str, ref: Any, recursive: bool, missing: bool, grammar: bool) -> None:
    if missing:
        if grammar:
            report.add(path, "$ref", "rejected", f"unresolvable reference {str(ref)[:60]!r}: not compilable")
        else:
            report.add(path, "$ref", "post_validated", f"unresolvable reference {str(ref)[:60]!r}")
    elif grammar:
        report.add(path, "$ref", "enforced", "recursive reference" if recursive else "")
    else:
        report.add(path, "$ref", "post_validated", "recursive reference" if recursive else "")


def _grammar(report: ReportBuilder, path: str, kw: str, val: Any) -> bool:
    """Report one keyword for a grammar decoder; whether the decoder enforces it."""
    if kw in DYNAMIC_REFS:
        report.add(path, kw, "rejected", "dynamic references cannot be followed")
    elif kw == "format":
        if isinstance(val, str) and val in GRAMMAR_FORMATS:
            report.add(path, kw, "enforced", val)
            return True
        report.add(path, kw, "post_validated", f"format {str(val)[:40]!r}: kept, not relied on")
    elif kw in GRAMMAR_ENFORCED:
        report.add(path, kw, "enforced", "")
        return True
    else:
        report.add(path, kw, "post_validated", "kept, not relied on")
    return False


def _server(report: ReportBuilder, path: str, kw: str, val: Any, node: Mapping[str, Any], rules: GrammarRules
            ) -> bool:
    """One keyword as a self-hosted server's compiler treats it: enforced only where it is compiled (returns
    whether it is)."""
    if kw in DYNAMIC_REFS:
        report.add(path, kw, "rejected", "dynamic references cannot be followed")
    elif kw not in rules.enforced:
        report.add(path, kw, "post_validated", f"not compiled by {rules.name}")
    elif kw == "format":
        if isinstance(val, str) and val in rules.formats:
            report.add(path, kw, "enforced", val)
            return True
        report.add(path, kw, "post_validated", f"format {str(val)[:40]!r}: not compiled by {rules.name}")
    elif kw in BOUNDS and rules.integer_bounds_only and node.get("type") != "integer":
        report.add(path, kw, "post_validated", f"{rules.name} compiles bounds for integers only")
    elif kw == "pattern" and rules.anchored_patterns and not (
            isinstance(val, str) and val.startswith("^") and val.endswith("$")):
        report.add(path, kw, "post_validated", f"{rules.name} compiles a pattern only when written ^...$")
    elif kw in ("minLength", "maxLength") and not rules.lengths_beside_pattern and (
            "pattern" in node or "format" in node):
        report.add(path, kw, "post_validated", f"{rules.name} drops a string's lengths beside its pattern/format")
    else:
        report.add(path, kw, "enforced", "")
        return True
    return False
