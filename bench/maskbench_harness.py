"""Schema coverage of the llguidance grammar, measured on MaskBench (JSONSchemaBench) schemas and instances.

A benchmark harness, not runtime code: ``bench/maskbench_coverage.py`` prints its table and
``tests/local/test_local_maskbench.py`` asserts on it. The corpus is found and read by :mod:`guardrail.testing.corpora`.

For each schema: compile it as a contract (:func:`guardrail.local.grammar.build_grammar`) or record why not;
for each test instance: write it the way the decoder would emit it (:func:`emit`), tokenize it, feed the
tokens to an ``llguidance.LLMatcher`` and check that the grammar accepts at the end (EOS allowed).

Every valid instance must be accepted and every invalid one rejected, or the difference must be explained
by the compile report, and the explanation is checked, not assumed:

- a *valid* instance the grammar rejects is explained when the schema copy the engine compiled rejects it
  too (``jsonschema``) for a keyword the report lists as ``lowered`` (guardrail narrowed the contract on
  purpose: objects closed to extra keys);
- an *invalid* instance the grammar accepts is explained when the engine's copy accepts it (``oneOf`` read
  as ``anyOf``: the grammar did what it was given), the original schema rejects it (guardrail's
  post-validation catches it) and a keyword the original reports an error for is ``post_validated`` or
  ``lowered`` in the report.

Anything else is an unexplained mismatch, listed with the schema id. ``jsonschema`` (the dev extra) is the
reference validator, with its format checker: MaskBench labels instances with invalid formats invalid.
"""

from __future__ import annotations

import importlib
import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from guardrail.errors import GrammarError
from guardrail.local.grammar import build_grammar
from guardrail.schema.refs import RefIndex
from guardrail.schema.report import CompileReport
from guardrail.schema.tree import copy_json, walk

__all__ = ["Counts", "Mismatch", "check_schema", "coverage", "emit", "table"]

#: Column order of :func:`table`.
COLUMNS = ("schemas", "compiled", "rejected", "valid_accepted", "valid_rejected_explained",
           "valid_rejected_unexplained", "invalid_rejected", "invalid_accepted_explained",
           "invalid_accepted_unexplained")


@dataclass(frozen=True)
class Mismatch:
    """One instance the grammar got wrong with no explanation in the report."""

    schema_id: str
    valid: bool
    text: str
    why: str


@dataclass
class Counts:
    """Per-collection counts; ``rejected_by`` counts rejected schemas by reason, ``explained_by`` by keyword."""

    schemas: int = 0
    compiled: int = 0
    rejected: int = 0
    valid_accepted: int = 0
    valid_rejected_explained: int = 0
    valid_rejected_unexplained: int = 0
    invalid_rejected: int = 0
    invalid_accepted_explained: int = 0
    invalid_accepted_unexplained: int = 0
    #: Instances of rejected schemas (not fed to a matcher).
    untested: int = 0
    rejected_by: Counter[str] = field(default_factory=Counter)
    explained_by: Counter[str] = field(default_factory=Counter)
    mismatches: list[Mismatch] = field(default_factory=list)
    #: Ids of the rejected schemas.
    rejected_ids: list[str] = field(default_factory=list)

    def add(self, other: Counts) -> None:
        for name in (*COLUMNS, "untested"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.rejected_by.update(other.rejected_by)
        self.explained_by.update(other.explained_by)
        self.mismatches.extend(other.mismatches)
        self.rejected_ids.extend(other.rejected_ids)

    @property
    def unexplained(self) -> int:
        return self.valid_rejected_unexplained + self.invalid_accepted_unexplained


def emit(value: Any, schema: Any, branch_ok: Callable[[Any, Any], bool] | None = None) -> str:
    """``value`` as compact JSON the way the grammar of ``schema`` (the engine's copy) would have it emitted.

    ``separators=(",", ":")``, ``ensure_ascii=False`` (characters as UTF-8, only what JSON requires escaped),
    numbers in plain decimal form (an integral float as an integer, no exponent: ``1.0`` is ``1`` and
    ``1e-05`` is ``0.00001``), and object keys in the order the grammar generates them: the properties the
    applicable subschemas list, in the order their keywords appear (``properties``, ``$ref``, ``allOf``
    members, the matching ``anyOf``/``oneOf`` branch, ``const``/``enum`` objects), then required keys no
    ``properties`` lists, then every other key in the instance's order.

    This is a canonicalisation, not a change of meaning: a JSON object is an unordered set of members
    (RFC 8259 section 4; JSON Schema compares objects member-wise, never by position), and JSON Schema's data
    model compares numbers by value (``1.0`` and ``1`` are the same integer since draft 6), so every
    instance here validates exactly as the corpus's own serialisation does. A decoder can only write one
    spelling per value, and the grammar fixes which.

    ``branch_ok(branch, value)`` says whether ``value`` matches an ``anyOf``/``oneOf`` branch (the key order
    comes from the first branch it matches; without it, the first branch). Iterative: no recursion limit.
    """
    refs = RefIndex(schema) if isinstance(schema, Mapping) else None
    out: list[str] = []
    stack: list[tuple[Any, list[Any]] | str] = [(value, [schema])]
    while stack:
        task = stack.pop()
        if isinstance(task, str):
            out.append(task)
            continue
        item, sources = task
        if isinstance(item, dict):
            nodes, order, templates = _expand(item, sources, refs, branch_ok)
            keys = _key_order(item, order)
            tail: list[tuple[Any, list[Any]] | str] = []
            for i, key in enumerate(keys):
                tail.append(("," if i else "") + json.dumps(key, ensure_ascii=False) + ":")
                tail.append((item[key], _child(key, nodes, templates)))
            stack.append("}")
            stack.extend(reversed(tail))
            stack.append("{")
        elif isinstance(item, list):
            nodes, _, templates = _expand(item, sources, refs, branch_ok)
            parts: list[tuple[Any, list[Any]] | str] = []
            for i, element in enumerate(item):
                if i:
                    parts.append(",")
                parts.append((element, _item(i, nodes, templates)))
            stack.append("]")
            stack.extend(reversed(parts))
            stack.append("[")
        else:
            out.append(_scalar(item))
    return "".join(out)


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        text = repr(value)
        return format(Decimal(text), "f") if "e" in text or "E" in text else text
    return json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class _Literal:
    """A ``const``/``enum`` value an instance equals: its object keys come in the literal's order."""

    value: Any


def _expand(value: Any, sources: list[Any], refs: RefIndex | None,
            branch_ok: Callable[[Any, Any], bool] | None) -> tuple[list[Mapping[str, Any]], list[list[str]], list[Any]]:
    """The subschemas that apply to ``value`` (in the engine's merge order), key lists in order, and literals.

    Key lists: each ``properties`` (and each ``const``/``enum`` object equal to the value) contributes its keys
    where its keyword appears; the last list holds the ``required`` keys, which follow all listed properties.
    """
    nodes: list[Mapping[str, Any]] = []
    order: list[list[str]] = []
    required: list[str] = []
    literals: list[Any] = []
    seen: set[int] = set()

    def literal(member: Any) -> None:
        literals.append(member)
        if isinstance(member, dict):
            order.append(list(member))

    for source in sources:
        if isinstance(source, _Literal):
            literal(source.value)
    stack = [_entries(s, seen) for s in reversed(sources) if not isinstance(s, _Literal)]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            continue
        node, kw, val = step
        if kw == "":  # entering a node
            nodes.append(node)
        elif kw == "properties" and isinstance(val, Mapping):
            order.append(list(val))
        elif kw == "required" and isinstance(val, list):
            required.extend(n for n in val if isinstance(n, str))
        elif kw == "$ref" and refs is not None:
            target = refs.resolve(val)
            if target is not None:
                stack.append(_entries(target[0], seen))
        elif kw == "allOf" and isinstance(val, list):
            stack.append(itertools.chain.from_iterable(_entries(m, seen) for m in val))
        elif kw in ("anyOf", "oneOf") and isinstance(val, list) and val:
            chosen = next((b for b in val if branch_ok is not None and branch_ok(b, value)), val[0])
            stack.append(_entries(chosen, seen))
        elif kw in ("const", "enum"):
            member = next((m for m in ([val] if kw == "const" else val if isinstance(val, list) else [])
                           if _same(m, value)), _MISSING)
            if member is not _MISSING:
                literal(member)
    order.append(required)
    return nodes, order, literals


_MISSING = object()


def _entries(node: Any, seen: set[int]) -> Iterator[tuple[Mapping[str, Any], str, Any]]:
    """A node's keywords in document order, ``properties`` moved up to an earlier ``additionalProperties``.

    That is where llguidance 1.9 puts a node's own properties among the schemas it merges (measured: with
    ``{"additionalProperties": .., "oneOf": [..], "properties": ..}`` the node's own keys come first, with
    ``{"oneOf": [..], "properties": .., "additionalProperties": ..}`` the branch's do). A node already
    entered for this value (a reference cycle) yields nothing.
    """
    if not isinstance(node, Mapping) or id(node) in seen:
        return
    seen.add(id(node))
    yield node, "", None
    keys = list(node)
    if "properties" in node and "additionalProperties" in node:
        keys.remove("properties")
        keys.insert(keys.index("additionalProperties"), "properties")
    yield from ((node, kw, node[kw]) for kw in keys)


def _same(a: Any, b: Any) -> bool:
    """JSON equality (numbers by value, booleans apart from numbers)."""
    return json.dumps(_plain(a), sort_keys=True) == json.dumps(_plain(b), sort_keys=True)


def _plain(value: Any) -> Any:
    stack = [copy_json(value)] if isinstance(value, (dict, list)) else []
    root = stack[0] if stack else value
    while stack:
        node = stack.pop()
        pairs = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in list(pairs):
            if isinstance(child, float) and child.is_integer():
                node[key] = int(child)
            elif isinstance(child, (dict, list)):
                stack.append(child)
    if isinstance(root, float) and root.is_integer():
        return int(root)
    return root


def _key_order(value: Mapping[str, Any], order: list[list[str]]) -> list[str]:
    keys: list[str] = []
    placed: set[str] = set()
    for names in order:
        for name in names:
            if name in value and name not in placed:
                keys.append(name)
                placed.add(name)
    keys.extend(k for k in value if k not in placed)
    return keys


def _child(key: str, nodes: list[Mapping[str, Any]], literals: list[Any]) -> list[Any]:
    out: list[Any] = [_Literal(t[key]) for t in literals if isinstance(t, dict) and key in t]
    for node in nodes:
        props = node.get("properties")
        if isinstance(props, Mapping) and key in props:
            out.append(props[key])
            continue
        matched = [sub for pattern, sub in (node.get("patternProperties") or {}).items() if _search(pattern, key)]
        if matched:
            out.extend(matched)
        elif isinstance(node.get("additionalProperties"), Mapping):
            out.append(node["additionalProperties"])
    return out


def _item(i: int, nodes: list[Mapping[str, Any]], literals: list[Any]) -> list[Any]:
    out: list[Any] = [_Literal(t[i]) for t in literals if isinstance(t, list) and i < len(t)]
    for node in nodes:
        items, prefix = node.get("items"), node.get("prefixItems")
        if isinstance(items, list):
            prefix, items = items, node.get("additionalItems")
        if isinstance(prefix, list) and i < len(prefix):
            out.append(prefix[i])
        elif isinstance(items, Mapping):
            out.append(items)
    return out


def _search(pattern: str, key: str) -> bool:
    try:
        return re.search(pattern, key) is not None
    except (re.error, TypeError):
        return False


# --- checking one schema ---------------------------------------------------------------------------------


def _validator(schema: Any) -> Any:
    """A jsonschema validator for ``schema`` (its declared draft, 2020-12 by default) with format checks."""
    jsonschema: Any = importlib.import_module("jsonschema")  # untyped package: used as Any
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=jsonschema.FormatChecker())


def _errors(validator: Any, value: Any) -> list[str] | None:
    """The keywords on the schema paths of the errors ``value`` gets (``[]``: valid; None: validation broke).

    A failure inside a subschema names every keyword on its way there (``then`` ... ``required``), so a
    ``required`` that fails inside a removed ``then`` is traced to ``then``.
    """
    try:
        errors = list(validator.iter_errors(value))
    except Exception:  # an invalid or unresolvable schema: the reference validator cannot say
        return None
    keywords: list[str] = []
    stack = list(errors)
    while stack:
        error = stack.pop()
        keywords.append(str(error.validator))
        keywords.extend(str(t) for t in error.absolute_schema_path if isinstance(t, str) and t != error.validator)
        stack.extend(error.context or ())
    return keywords


def _any_of(engine_schema: dict[str, Any]) -> dict[str, Any]:
    """The engine's copy as the engine reads it: ``oneOf`` compiled as ``anyOf`` (key kept in place)."""
    view: dict[str, Any] = copy_json(engine_schema)
    for node, _ in list(walk(view, "")):
        if isinstance(node, dict) and "oneOf" in node:
            branches = node["oneOf"]
            if "anyOf" in node:
                node.setdefault("allOf", []).append({"anyOf": branches})
                del node["oneOf"]
            else:
                items = [("anyOf" if k == "oneOf" else k, v) for k, v in node.items()]
                node.clear()
                node.update(items)
    return view


def check_schema(entry: Mapping[str, Any], lltok: Any, encode: Callable[[str], list[int]]) -> Counts:
    """Compile one corpus entry and run each of its instances through a matcher (see the module docstring)."""
    import llguidance

    counts = Counts(schemas=1)
    schema = entry["schema"]
    tests = entry.get("tests") or []
    try:
        built = build_grammar(schema, lltok)
    except (GrammarError, TypeError, ValueError) as error:
        counts.rejected = 1
        counts.untested = len(tests)
        counts.rejected_ids.append(str(entry.get("id", "?")))
        reason = _reason(error.report) if isinstance(error, GrammarError) else f"not a schema: {type(error).__name__}"
        counts.rejected_by[reason] += 1
        return counts
    counts.compiled = 1
    if not tests:
        return counts
    view = _any_of(built.engine_schema)
    original, engine = _validator(schema), _validator(view)
    fresh = llguidance.LLMatcher(lltok, built.grammar, log_level=0)

    def branch_ok(branch: Any, value: Any) -> bool:
        try:
            return bool(engine.evolve(schema=branch).is_valid(value))
        except Exception:
            return False

    lowered = {e.keyword for e in built.report.lowered}
    loosened = lowered | {e.keyword for e in built.report.post_validated}
    for test in tests:
        value, valid = test["data"], bool(test["valid"])
        text = emit(value, view, branch_ok)
        matcher = fresh.deep_copy()
        accepted = (matcher.consume_tokens(encode(text)) and matcher.is_accepting()
                    and matcher.consume_token(lltok.eos_token))  # EOS allowed: the value is complete
        if accepted == valid:
            if valid:
                counts.valid_accepted += 1
            else:
                counts.invalid_rejected += 1
            continue
        if valid:
            failed = _errors(engine, value) or []
            why = [k for k in failed if k in lowered]
            if why:
                counts.valid_rejected_explained += 1
                counts.explained_by[why[0]] += 1
            else:
                counts.valid_rejected_unexplained += 1
                counts.mismatches.append(Mismatch(entry.get("id", "?"), True, text[:300],
                                                  "engine copy accepts" if not failed else f"engine copy: {failed}"))
        else:
            in_engine, in_original = _errors(engine, value), _errors(original, value)
            why = [k for k in in_original or [] if k in loosened]
            if in_engine == [] and why:
                counts.invalid_accepted_explained += 1
                counts.explained_by[why[0]] += 1
            else:
                counts.invalid_accepted_unexplained += 1
                reason = ("post-validation does not reject it" if in_original == [] else
                          "post-validation cannot run" if in_original is None else
                          f"engine copy rejects it too: {in_engine}" if in_engine else
                          f"failed keywords not in the report: {in_original}")
                counts.mismatches.append(Mismatch(entry.get("id", "?"), False, text[:300], reason))
    return counts


def _reason(report: CompileReport | None) -> str:
    if report is None or not report.rejected:
        return "unknown"
    entry = report.rejected[0]
    detail = re.sub(r"'[^']*'|\"[^\"]*\"|\S*#\S*|\d+", "…", entry.detail)
    return f"{entry.keyword}: {detail[:70]}"


def coverage(entries: Mapping[str, Iterable[Mapping[str, Any]]], tokenizer: Any, *,
             sample: int | None = None) -> dict[str, Counts]:
    """Counts per collection for ``entries`` (:func:`guardrail.testing.corpora.load`) with ``tokenizer`` (fast HF).

    ``sample``: at most this many schemas per collection, spread evenly over it (deterministic); None: all.
    """
    from guardrail.local.grammar import lltokenizer

    lltok = lltokenizer(tokenizer, len(tokenizer))

    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False))

    out: dict[str, Counts] = {}
    for collection, members in entries.items():
        chosen = list(members)
        if sample is not None and len(chosen) > sample:
            step = len(chosen) / sample
            chosen = [chosen[int(i * step)] for i in range(sample)]
        counts = out[collection] = Counts()
        for entry in chosen:
            counts.add(check_schema(entry, lltok, encode))
    return out


def table(results: Mapping[str, Counts]) -> str:
    """A text table: one row per collection and a total row."""
    heads = ("collection", "schemas", "compiled", "rejected", "valid ok", "valid rej expl", "valid rej UNEXPL",
             "invalid rej", "invalid acc expl", "invalid acc UNEXPL", "untested")
    total = Counts()
    rows = []
    for name, counts in sorted(results.items()):
        total.add(counts)
        rows.append([name, *(str(getattr(counts, c)) for c in COLUMNS), str(counts.untested)])
    rows.append(["TOTAL", *(str(getattr(total, c)) for c in COLUMNS), str(total.untested)])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(heads, widths, strict=True)))]
    lines += ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
              for r in rows]
    return "\n".join(lines)
