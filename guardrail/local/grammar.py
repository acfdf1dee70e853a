"""Compiling a contract's JSON Schema into an llguidance grammar for one tokenizer, with caches.

Two caches, both process-wide and thread-safe:

- the llguidance tokenizer, built once per tokenizer *content* (:func:`tokenizer_key`: the tokenizer's name
  plus a hash of its serialised vocabulary, merges and special tokens, so two loads of the same files share
  one entry and a retrained tokenizer under the same name does not) and vocabulary size;
- the compiled grammar, keyed by (canonical schema hash, engine name and version, tokenizer key).

:func:`compile_grammar` returns the grammar with the engine's compile report (see
:mod:`guardrail.local.lowering`: per keyword and schema path, whether llguidance enforces it while decoding,
guardrail lowered it, or removed it from the copy the engine compiles and validates it after parsing) and
says whether the cache was hit and how long compiling took, so every generation's trace can show it.

When the engine still refuses the copy, :func:`build_grammar` applies the remedy its message names, each a
removal that keeps the grammar sound (every valid instance still allowed), reported ``post_validated``: a
keyword it refuses, an unknown format, ``min/maxProperties`` it cannot count, whatever it would intersect with
a recursive ``$ref``, ``patternProperties`` whose patterns overlap, ``allOf`` nested too deep to intersect,
long length bounds or patterns whose intersection it cannot decide, numeric bounds it cannot build a range
regex for; it compiles objects open again when closing them left no valid value, and numbers without the finite
engine range (``guardrail.local.lowering.numbers.number_bounds``) when that range left none.

Whatever is left is a :class:`GrammarError` carrying the report with a
``rejected`` entry (unresolvable references, unsatisfiable schemas, engine limits).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote

from guardrail.errors import GrammarError, UsageError
from guardrail.local.lowering.engine import ENFORCED, POST_VALIDATED
from guardrail.local.lowering.numbers import NUMBER_RANGE
from guardrail.local.lowering.prepare import prepare, reachable
from guardrail.local.lowering.prepared import Prepared, node_at
from guardrail.schema.lower import CompileReport
from guardrail.schema.refs import RefIndex
from guardrail.schema.tree import measure

__all__ = ["Built", "Compiled", "GrammarError", "build_grammar", "compile_grammar", "engine_version",
           "lltokenizer", "tokenizer_key"]

ENGINE = "llguidance"
#: Compile options guardrail always sets (``overrides``: a schema's own ``x-guidance`` cannot change them).
OPTIONS: Final = {"whitespace_flexible": False, "coerce_one_of": True, "lenient": False}
#: Deepest schema the engine's JSON reader accepts (serde_json stops at 128 nested containers).
MAX_DEPTH: Final = 120
#: Compile attempts (each after one remedy) before the contract is rejected.
MAX_ATTEMPTS: Final = 24

_GRAMMARS: dict[tuple[str, str, str], tuple[str, CompileReport, dict[str, Any]]] = {}
_TOKENIZERS: dict[tuple[str, int], Any] = {}
_KEYS: dict[int, tuple[Any, str]] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Compiled:
    """A grammar ready for ``llguidance.LLMatcher``, the engine's compile report, and how it was obtained.

    ``engine_schema`` is the copy of the contract's schema the engine compiled (keywords it refuses removed,
    objects closed, references as root pointers).
    """

    grammar: str
    report: CompileReport
    cache_hit: bool
    seconds: float
    key: tuple[str, str, str]
    engine_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class Built:
    """What :func:`build_grammar` made: the grammar, the report and the schema copy the engine compiled."""

    grammar: str
    report: CompileReport
    engine_schema: dict[str, Any]


def engine_version() -> str:
    """The installed llguidance version (part of every grammar cache key)."""
    import llguidance

    getter = getattr(llguidance, "get_version", None)
    return f"{ENGINE}-{getter() if getter else 'unknown'}"


def tokenizer_key(tokenizer: Any) -> str:
    """``name@sha256`` of a tokenizer's content: the same files give the same key, in any process.

    A fast tokenizer is hashed through its full serialisation (vocabulary, merges, normaliser, special
    tokens); a slow one through its vocabulary. Computed once per tokenizer object.
    """
    with _LOCK:
        found = _KEYS.get(id(tokenizer))
        if found is not None and found[0] is tokenizer:
            return found[1]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        content = backend.to_str()
    else:
        content = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
    special = json.dumps([str(t) for t in getattr(tokenizer, "all_special_tokens", [])])
    digest = hashlib.sha256((content + special).encode()).hexdigest()[:24]
    name = str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)
    key = f"{name}@{digest}"
    with _LOCK:
        _KEYS[id(tokenizer)] = (tokenizer, key)
    return key


def lltokenizer(tokenizer: Any, n_vocab: int) -> Any:
    """The llguidance tokenizer for ``tokenizer`` with ``n_vocab`` logits (built once per content and size)."""
    import llguidance.hf

    key = (tokenizer_key(tokenizer), n_vocab)
    with _LOCK:
        found = _TOKENIZERS.get(key)
    if found is None:
        found = llguidance.hf.from_tokenizer(tokenizer, n_vocab=n_vocab)
        with _LOCK:
            found = _TOKENIZERS.setdefault(key, found)
    return found


def compile_grammar(schema: dict[str, Any], schema_hash: str, tokenizer: Any, n_vocab: int) -> Compiled:
    """Compile ``schema`` (the contract's JSON Schema; ``schema_hash`` its canonical hash) for ``tokenizer``.

    Raises :class:`GrammarError` when the engine cannot compile it (the report lists the rejections).
    """
    key = (schema_hash, engine_version(), tokenizer_key(tokenizer))
    with _LOCK:
        found = _GRAMMARS.get(key)
    if found is not None:
        return Compiled(found[0], found[1], True, 0.0, key, found[2])
    started = time.perf_counter()
    built = build_grammar(schema, lltokenizer(tokenizer, n_vocab))
    seconds = time.perf_counter() - started
    with _LOCK:
        _GRAMMARS[key] = (built.grammar, built.report, built.engine_schema)
    return Compiled(built.grammar, built.report, False, seconds, key, built.engine_schema)


def build_grammar(schema: Mapping[str, Any], lltok: Any = None) -> Built:
    """Compile ``schema`` for the llguidance tokenizer ``lltok`` (None: check the grammar without one); no cache.

    Never mutates ``schema``. Raises :class:`GrammarError` with the report when it cannot be compiled.
    """
    import llguidance

    if not isinstance(schema, Mapping):
        raise UsageError(f"schema must be a mapping (a JSON Schema object), not {type(schema).__name__}")
    depth = measure(schema)
    if depth > MAX_DEPTH:
        prepared = prepare({})
        prepared.report.add("", "limits", "rejected", f"schema nested {depth} containers deep (max {MAX_DEPTH})")
        raise _error(prepared, f"the schema is nested {depth} containers deep")
    prepared = prepare(schema)
    if prepared.report.build().rejected:
        raise _error(prepared, "; ".join(e.detail for e in prepared.report.build().rejected))
    remedied: set[str] = set()
    options: Any = dict(OPTIONS)
    for _ in range(MAX_ATTEMPTS):
        try:
            grammar: str = llguidance.LLMatcher.grammar_from_json_schema(prepared.schema, overrides=options)
            problem = llguidance.LLMatcher.validate_grammar(grammar, lltok)
        except (ValueError, TypeError) as error:  # not a JSON document (NaN, odd keys)
            grammar, problem = "", str(error) or type(error).__name__
        if not problem:
            return Built(grammar, prepared.report.build(), prepared.schema)
        remedy = _remedy(problem, prepared, schema, remedied)
        if remedy is None:
            _reject(prepared, problem)
            raise _error(prepared, _first_line(problem))
        prepared = remedy
    _reject(prepared, "too many remedies")
    raise _error(prepared, "the engine kept refusing the schema")


def _error(prepared: Prepared, why: str) -> GrammarError:
    return GrammarError(f"the contract cannot be compiled for constrained decoding: {why}", prepared.report.build())


def _first_line(problem: str) -> str:
    lines = [line.strip() for line in problem.splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith("error:")), lines[0] if lines else problem)
    return detail[:200]


def _reject(prepared: Prepared, problem: str) -> None:
    text = problem.lower()
    keyword = "limits" if any(w in text for w in ("limit", "too large", "too many", "too complex", "size")) else "root"
    if "unsatisfiable" in text:
        keyword = "unsatisfiable"
    prepared.report.add("", keyword, "rejected", f"llguidance: {_first_line(problem)}")


_UNIMPLEMENTED = re.compile(r'Unimplemented keys: \[([^\]]*)\]')
_UNKNOWN_FORMAT = re.compile(r"Unknown format: (.+)")
_CIRCULAR = re.compile(r"circular references with sibling keys are not supported: (\S+)")
_NOT_DISJOINT = re.compile(r"patternProperty regexes /(.*)/ and /(.*)/ are not disjoint")
_RANGE = re.compile(r"Failed to generate regex for (integer|float) range")


def _remedy(problem: str, prepared: Prepared, schema: Mapping[str, Any], done: set[str]) -> Prepared | None:
    """The copy changed as the engine's message asks, where that keeps the grammar sound; None otherwise."""
    if (found := _UNIMPLEMENTED.search(problem)) is not None:
        names = {n.strip().strip('"') for n in found.group(1).split(",")}
        return prepared if _strip_all(prepared, lambda node, kw: kw in names,
                                      "refused by the engine: removed, checked after parsing") else None
    if (found := _UNKNOWN_FORMAT.search(problem)) is not None:
        name = found.group(1).strip()
        return prepared if _strip_all(prepared, lambda node, kw: kw == "format" and node[kw] == name,
                                      f"format {name[:40]!r} is unknown to the engine: removed") else None
    if "min/maxProperties" in problem:
        return prepared if _strip_all(prepared, lambda node, kw: kw in ("minProperties", "maxProperties"),
                                      "the engine counts keys only where every listed property is required: "
                                      "removed") else None
    if (found := _CIRCULAR.search(problem)) is not None:
        target = unquote(found.group(1).partition("#")[2])
        return prepared if _strip_siblings(prepared, target) else None
    if (found := _NOT_DISJOINT.search(problem)) is not None:
        return prepared if _strip_patterns(prepared, {found.group(1), found.group(2)}) else None
    if "intersection stack level exceeded" in problem:
        return prepared if _strip_all(prepared, lambda node, kw: kw == "allOf",
                                      "too deep for the engine to intersect: removed") else None
    if "Unable to determine if regex is empty" in problem:
        if _strip_all(prepared, lambda node, kw: kw in ("minLength", "maxLength") and _long(node[kw]),
                      "the engine cannot combine this length with a pattern: removed"):
            return prepared
        return prepared if _strip_all(prepared, lambda node, kw: kw == "pattern",
                                      "the engine cannot intersect the patterns: removed") else None
    if "nsatisfiable" in problem and prepared.closed and "open" not in done:
        done.add("open")  # closing objects left no valid value: compile them open (as the contract says)
        return prepare(schema, close=False, narrow=prepared.narrowed)
    if "nsatisfiable" in problem and prepared.narrowed and "wide" not in done:
        done.add("wide")  # the finite number range left no valid value: compile numbers with their own bounds
        return prepare(schema, close="open" not in done, narrow=False)
    if _RANGE.search(problem) is not None:
        if _strip_all(prepared, lambda node, kw: kw in ("minimum", "maximum") and _wide(node[kw]),
                      "the engine cannot build the regex for this range: removed"):
            return prepared
        return prepared if _strip_all(prepared, lambda node, kw: kw in ("minimum", "maximum"),
                                      "the engine cannot build the regex for this range: removed") else None
    return None


def _wide(value: Any) -> bool:
    return isinstance(value, (int, float)) and (abs(value) > NUMBER_RANGE or 0 < abs(value) < 1e-30)


def _strip_all(prepared: Prepared, match: Any, detail: str) -> bool:
    """Remove every matching keyword from the copy's subschemas; true if anything was removed."""
    hits = [(path, kw) for node, path in reachable(prepared.schema) for kw in list(node) if match(node, kw)]
    for path, kw in hits:
        prepared.strip(path, kw, detail)
    return bool(hits)


def _long(value: Any) -> bool:
    return isinstance(value, (int, float)) and value > 256


def _strip_patterns(prepared: Prepared, patterns: set[str]) -> bool:
    """Remove ``patternProperties`` naming one of ``patterns`` (all of them when none does), with the
    ``additionalProperties`` next to them (which keys that covers depends on the patterns)."""
    holders = [(node, path) for node, path in reachable(prepared.schema)
               if isinstance(node.get("patternProperties"), dict)]
    aimed = [(node, path) for node, path in holders if patterns & set(node["patternProperties"])]
    removed = False
    for node, path in aimed or holders:
        removed |= prepared.strip(path, "patternProperties", "the engine needs disjoint patterns: removed")
        if node.get("additionalProperties", True) is not True:
            prepared.strip(path, "additionalProperties", "removed with patternProperties next to it")
    return removed


def _strip_siblings(prepared: Prepared, target: str) -> bool:
    """Remove what the engine would intersect with a recursive reference (``target`` first, then any):
    constraints next to the ``$ref``, constraints next to an ``anyOf``/``oneOf`` listing it, an ``allOf``
    listing it. Each removal only loosens the grammar."""
    refs = RefIndex(prepared.schema)

    def aimed(node: Any) -> bool:
        return isinstance(node, dict) and isinstance(node.get("$ref"), str) and unquote(
            node["$ref"].partition("#")[2]) == target

    def recursive(node: Any) -> bool:
        found = refs.resolve(node.get("$ref")) if isinstance(node, dict) else None
        return found is not None and refs.recursive(found[1])

    detail = "intersected with a recursive $ref, which the engine cannot do: removed"
    for hits in (aimed, recursive):
        removed = False
        for node, path in reachable(prepared.schema):
            if hits(node):
                for kw in [k for k in node if k != "$ref" and _constraint(k)]:
                    removed |= prepared.strip(path, kw, detail)
            for combinator in ("anyOf", "oneOf"):
                members = node.get(combinator)
                if isinstance(members, list) and any(hits(m) for m in members):
                    for kw in [k for k in node if k != combinator and _constraint(k)]:
                        removed |= prepared.strip(path, kw, detail)
            members = node.get("allOf")
            if isinstance(members, list) and any(hits(m) for m in members):
                removed |= prepared.strip(path, "allOf", detail)
        if removed:
            return True
    return False


def _constraint(keyword: str) -> bool:
    return keyword in ENFORCED or keyword in POST_VALIDATED or keyword == "oneOf"


def clear_caches() -> None:
    """Forget compiled grammars and tokenizers (benchmarks measure cold compiles with it)."""
    with _LOCK:
        _GRAMMARS.clear()
        _TOKENIZERS.clear()
        _KEYS.clear()


def closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with ``additionalProperties: false`` on the object schemas guardrail closes for decoding.

    In JSON Schema an object is open unless it says so; a pydantic model that does not allow extra fields
    should not let the decoder invent keys that validation would then drop. A model with ``extra="allow"``
    emits ``additionalProperties: true`` and stays open; so does an object the engine intersects with another
    one (``allOf`` members, branches next to their own ``properties``), where closing one side would forbid the
    keys the other declares. Walks with an explicit stack (no recursion limit); the input is not mutated.
    """
    from guardrail.schema.tree import copy_json

    out: dict[str, Any] = copy_json(schema)
    for path in prepare(schema).closed:
        node = node_at(out, path)
        if isinstance(node, dict):
            node["additionalProperties"] = False
    return out
