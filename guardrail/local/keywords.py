"""What llguidance does with each JSON Schema keyword, and the copy of a contract's schema it is given.

Facts checked against llguidance 1.9.1 (``LLMatcher.grammar_from_json_schema`` + ``validate_grammar``):

- compiled and enforced while decoding: ``type``, ``enum``, ``const``, ``anyOf``, ``allOf`` (by intersecting
  the branches; an intersection the engine cannot form is an error), local ``$ref`` (recursion included),
  ``properties`` (keys are generated in the schema's order: the order the keywords appear, ``properties``
  before ``required`` keys that ``properties`` does not list, before any other key), ``additionalProperties``,
  ``patternProperties``, ``required``, ``items`` (also the draft-4 tuple form), ``prefixItems``,
  ``additionalItems``, ``minItems``, ``maxItems``, ``minLength``/``maxLength`` (code points), ``pattern``
  (a Rust-regex dialect: no look-around, backreferences or ``\\b``), ``format`` for the formats the engine
  knows (probed, see :func:`format_known`), ``minimum``/``maximum``/``exclusive*`` (numeric and draft-4
  boolean forms), ``multipleOf``; ``minProperties``/``maxProperties`` only where every listed property is
  required (guardrail keeps them only where the node also merges no other schema);
- ``oneOf`` only with ``coerce_one_of`` (compiled as ``anyOf``): guardrail sets it and reports ``oneOf`` as
  *lowered*; that exactly one branch matches is checked after parsing;
- refused ("Unimplemented keys"): ``not``, ``if``/``then``/``else``, ``uniqueItems``, ``contains`` (and
  ``min/maxContains``), ``dependentRequired``, ``dependentSchemas``, ``dependencies``, ``propertyNames``,
  ``unevaluated*``, ``$dynamicRef``, ``$recursiveRef``; unknown formats and regexes it cannot parse are errors.

:func:`prepare` builds the copy sent to the engine. Refused keywords are removed from the copy (each one only
removes a constraint, so the looser grammar still allows every valid instance) and reported
``post_validated``: guardrail validates the parsed value against the original contract after decoding. So are
regexes the engine cannot parse (probed one by one, :func:`regex_problem`), ``minProperties``/
``maxProperties`` where the engine cannot count keys, and length bounds above :data:`LONG_WITH_REGEX` next to
a pattern (measured: the engine then refuses valid strings). Objects are closed (``additionalProperties:
false`` added, reported *lowered*) where that cannot clash with another schema the engine intersects them
with. Before draft 2019-09 keywords next to a ``$ref`` are ignored by validators: they are removed (*lowered*).
Numbers get engine bounds that hold for the value the text parses to, a finite range where the contract
has none (*lowered*), and no bound the engine cannot compile or would round (see :func:`_numbers`); the date
and time formats the engine checks with a looser regex are *lowered* (:data:`LOOSE_FORMATS`).
References are rewritten to percent-encoded JSON pointers from the root (the engine refuses non-ASCII
fragments and follows ``$id`` bases guardrail does not), and references nothing can resolve are *rejected*.
Keys that are not JSON Schema keywords are dropped from the copy without an entry (they constrain nothing).
Walks use explicit stacks; the input is never mutated.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any, Final
from urllib.parse import quote, urldefrag, urljoin

from guardrail.schema.dialects import JSON_TYPES
from guardrail.schema.refs import RefIndex
from guardrail.schema.report import Action, ReportBuilder
from guardrail.schema.tree import copy_json, join, unescape, walk

__all__ = ["ANNOTATIONS", "ENFORCED", "POST_VALIDATED", "Prepared", "format_known", "node_at", "prepare", "reachable",
           "regex_problem"]

#: Keywords the engine compiles and enforces while decoding (``format`` only for known formats).
ENFORCED: Final = frozenset({
    "type", "enum", "const", "anyOf", "allOf", "$ref", "properties", "additionalProperties", "patternProperties",
    "required", "items", "prefixItems", "additionalItems", "minItems", "maxItems", "minLength", "maxLength",
    "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minProperties", "maxProperties",
})
#: Keywords the engine refuses: removed from the copy, checked after parsing.
POST_VALIDATED: Final = frozenset({
    "not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains", "dependentRequired",
    "dependentSchemas", "dependencies", "propertyNames", "unevaluatedProperties", "unevaluatedItems",
    "$dynamicRef", "$recursiveRef",
})
_ASSERTIONS: Final = ENFORCED | POST_VALIDATED | {"oneOf"}
#: Keywords that assert nothing; every other unknown key (``x-*``, ``nullable``, ``example``...) is removed from
#: the copy, because the engine compiles a node with one as "any type" instead of "anything", which changes
#: how it merges the node (a ``$ref`` next to it becomes an intersection).
ANNOTATIONS: Final = frozenset({
    "title", "description", "default", "examples", "$comment", "$defs", "definitions", "readOnly", "writeOnly",
    "deprecated", "contentMediaType", "contentEncoding", "contentSchema", "$vocabulary", "$schema",
})
#: A length bound above this next to a ``pattern``/``format`` is removed (checked after parsing): measured on
#: llguidance 1.9.1, ``{"pattern": "^(\\S+\\s+)*\\S+$", "maxLength": 4000}`` refuses ``"a b"`` (its lexer runs out of
#: budget on the combined regex and then treats valid bytes as dead ends); 3000 still works for that pattern.
LONG_WITH_REGEX: Final = 1000
_YEAR = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"  # 0001-9999
_LEAP = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_DATE = (f"(?:{_YEAR}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)"
         f"|(?:0[13578]|1[02])-31)|{_LEAP}-02-29)")
_TIME = ("(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")
#: Date and time formats given to the engine as exact regexes instead of its looser built-in ones, where the
#: node has no ``pattern`` of its own: every string they allow is a real calendar date / time that pydantic
#: and JSON Schema both accept (no year 0000, February 29 only in leap years, no second 60, an offset).
EXACT_FORMATS: Final = {"date": f"^{_DATE}$", "date-time": f"^{_DATE}T{_TIME}$", "time": f"^{_TIME}$"}

#: Formats the engine knows but checks with a looser regex than the format's definition (measured on llguidance
#: 1.9.1): given to the engine (it still rules out most malformed text) and reported *lowered*; the exact check
#: is post-validation.
LOOSE_FORMATS: Final = {
    "date": "the engine's regex is looser than a calendar date (it allows 0000-01-01 and 2023-02-29): "
            "the exact check is post-validation",
    "date-time": "the engine's regex is looser than RFC 3339 (it allows year 0000, day 31 of any month and "
                 "second 60): the exact check is post-validation",
    "time": "the engine's regex is looser than RFC 3339 (it allows second 60 at any time): the exact check is "
            "post-validation",
}
#: The range (±) the engine copy gives a number the contract leaves unbounded: the engine's unbounded number
#: lets a model write 400 digits or an exponent like ``e3536``, which is no finite double (nor an int64).
#: 1e15 is an exact double, and every integer up to it too.
NUMBER_RANGE: Final = 10**15
#: The widest range the engine builds a regex for (llguidance 1.9.1: ±1e18 compiles, ±1e19 does not); bounds
#: beyond it are removed from the copy (post-validated).
NUMBER_LIMIT: Final = 10**18
#: The engine reads bounds as doubles: an integer bound beyond this is rounded (2**53 + 1 becomes 2**53).
EXACT_INTEGER: Final = 2**53
#: Float bounds given to the engine are rounded inward to this many significant digits and decimal places: the
#: engine's range regex is built with double arithmetic and lets texts past a bound with more digits through
#: (``maximum: 0.9999999999999999`` accepts ``1``; ``minimum: -0.00000000000366290718409`` accepts
#: ``-0.000000000003662907184090001``); 10 digits were exact in every probe, and 30 places still compile
#: (``minimum: 5e-324`` does not).
BOUND_DIGITS: Final = 10
BOUND_PLACES: Final = 30
#: Identifiers removed from the copy once every reference is a pointer from the root.
_IDENTIFIERS: Final = ("$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor")
_COUNTS: Final = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
_BOUNDS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
#: Keywords next to which an object is left open: they declare keys of their own, or merge other schemas.
_KEEP_OPEN: Final = frozenset({
    "additionalProperties", "patternProperties", "unevaluatedProperties", "dependentSchemas", "dependencies",
    "if", "then", "else", "allOf", "anyOf", "oneOf", "$ref",
})
_OBJECT_WORDS: Final = ("properties", "patternProperties", "additionalProperties", "required")
#: Probe results are kept for this many distinct regexes / formats.
_PROBE_CACHE: Final = 20_000

_probes: dict[tuple[str, str], str] = {}
_probe_lock = threading.Lock()


def _probe(kind: str, value: str) -> str:
    """The engine's error for a one-keyword string schema (``""`` when it compiles); cached."""
    with _probe_lock:
        found = _probes.get((kind, value))
    if found is not None:
        return found
    import llguidance

    schema = {"type": "string", kind: value}
    try:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(schema, overrides={"whitespace_flexible": False})
        problem = llguidance.LLMatcher.validate_grammar(grammar)
    except (ValueError, TypeError) as error:
        problem = str(error) or type(error).__name__
    with _probe_lock:
        if len(_probes) >= _PROBE_CACHE:
            _probes.clear()
        _probes[(kind, value)] = problem
    return problem


def format_known(name: str) -> bool:
    """Whether the installed engine knows ``format: name`` (it refuses unknown formats)."""
    return not _probe("format", name)


def regex_problem(pattern: str) -> str:
    """Why the engine cannot compile ``pattern`` (first line of its message), or ``""``."""
    problem = _probe("pattern", pattern)
    lines = [line.strip() for line in problem.splitlines() if line.strip()]
    useful = [line for line in lines if line.startswith("error:")] or lines[:1]
    return useful[0][:160] if useful else ""


@dataclass
class Prepared:
    """The copy to compile, its report so far, and the pointers of the objects guardrail closed."""

    schema: dict[str, Any]
    report: ReportBuilder
    closed: list[str] = field(default_factory=list)
    #: ``(path, keyword)`` removed from the copy (remedies after a failed compile add to it).
    removed: set[tuple[str, str]] = field(default_factory=set)
    #: Pending changes to the copy while :func:`prepare` walks: (path, keyword, new value or _DELETE).
    edits: list[tuple[str, str, Any]] = field(default_factory=list)
    #: Whether numbers were given the finite engine range (see :func:`_numbers`).
    narrowed: bool = True

    def drop(self, path: str, keyword: str, detail: str, action: Action = "post_validated") -> None:
        """Schedule the removal of ``keyword`` at ``path`` (applied at the end of :func:`prepare`)."""
        self.edits.append((path, keyword, _DELETE))
        self.removed.add((path, keyword))
        self.report.add(path, keyword, action, detail)

    def strip(self, path: str, keyword: str, detail: str, action: Action = "post_validated") -> bool:
        """Remove ``keyword`` from the copy's node at ``path`` and report it; false if it was not there."""
        node = node_at(self.schema, path)
        if not isinstance(node, dict) or keyword not in node:
            return False
        del node[keyword]
        self.removed.add((path, keyword))
        self.report.add(path, keyword, action, detail)
        return True


def node_at(doc: Any, pointer: str) -> Any:
    """The value at a JSON Pointer in ``doc``, or None."""
    node = doc
    if pointer:
        for token in (unescape(t) for t in pointer[1:].split("/")):
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
    return node


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


@dataclass
class _Visit:
    node: Mapping[str, Any]
    intersected: list[str] = field(default_factory=list)  # allOf members: always intersected with the node
    branches: list[str] = field(default_factory=list)  # anyOf/oneOf members and the $ref target


def prepare(schema: Mapping[str, Any], *, close: bool = True, narrow: bool = True) -> Prepared:
    """The copy of ``schema`` to give llguidance, with one report entry per constraint keyword it reaches.

    Only subschemas the engine evaluates are reported: those reachable from the root through evaluated
    keywords and references (an unreferenced definition is never compiled; a removed keyword's subschemas
    are checked after parsing as a whole). ``close`` adds ``additionalProperties: false`` where safe;
    ``narrow`` gives numbers the finite engine range of :func:`_numbers` (False: only bounds the contract has).
    """
    refs = RefIndex(schema)
    prepared = Prepared(copy_json(schema), ReportBuilder("grammar"), narrowed=narrow)
    report = prepared.report
    # Before draft 2019-09 a $ref replaces its schema: keywords next to it are ignored by validators.
    legacy = isinstance(schema.get("$schema"), str) and any(
        f"draft-0{n}" in schema["$schema"] for n in (3, 4, 6, 7))
    visits: dict[str, _Visit] = {}
    targets: set[str] = set()
    unknown: list[tuple[str, str]] = []
    pending: list[tuple[Mapping[str, Any], str]] = [(schema, "")]
    while pending:
        node, path = pending.pop()
        if path in visits:
            continue
        visit = visits[path] = _Visit(node)
        found: list[tuple[Mapping[str, Any], str]] = []
        step = _Step(path, node, prepared, visit, found)
        for kw, val in node.items():
            if kw in _IDENTIFIERS or kw in ANNOTATIONS:
                continue
            if kw not in _ASSERTIONS and kw != "x-guidance":
                unknown.append((path, kw))
            elif kw == "x-guidance":
                prepared.drop(path, kw, "engine options inside the schema are ignored; guardrail sets them", "lowered")
            elif legacy and "$ref" in node and kw != "$ref" and kw in _ASSERTIONS:
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
            prepared.edits.append((path, kw, _DELETE))
    merging = _merging(visits)
    combined = _combined_numbers(visits)
    for path, visit in visits.items():
        _objects(path, visit.node, path in merging, close, prepared)
        _numbers(path, visit.node, narrow and path not in combined, prepared)
    _apply(prepared.schema, prepared.edits)
    prepared.edits.clear()
    for node, _ in walk(prepared.schema, ""):  # every reference is a root pointer now: identifiers go
        for kw in _IDENTIFIERS:
            if isinstance(node, dict) and isinstance(node.get(kw), str):
                del node[kw]
    return prepared


_DELETE: Final = object()


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


@dataclass
class _Step:
    """Decisions for the keywords of one subschema: enforce (and queue subschemas) or remove a refused form."""

    path: str
    node: Mapping[str, Any]
    prepared: Prepared
    visit: _Visit
    found: list[tuple[Mapping[str, Any], str]]

    def drop(self, kw: str, detail: str) -> None:
        self.prepared.drop(self.path, kw, detail)

    def sub(self, value: Any, *tokens: object) -> None:
        if isinstance(value, Mapping):
            self.found.append((value, join(self.path, *tokens)))

    def enforce(self, kw: str, detail: str = "") -> None:
        self.prepared.report.add(self.path, kw, "enforced", detail)

    def keyword(self, kw: str, val: Any) -> None:
        if kw == "type":
            names = [val] if isinstance(val, str) else val
            if isinstance(names, list) and names and all(isinstance(n, str) and n in JSON_TYPES for n in names):
                self.enforce(kw)
            else:
                self.drop(kw, f"type {str(val)[:40]!r} is not a JSON type: removed")
        elif kw == "enum":
            self.enforce(kw) if isinstance(val, list) else self.drop(kw, "enum is not an array: removed")
        elif kw == "const":
            self.enforce(kw)
        elif kw in _COUNTS:
            self._count(kw, val)
        elif kw in _BOUNDS:
            draft4 = kw.startswith("exclusive") and isinstance(val, bool)
            number = isinstance(val, (int, float)) and not isinstance(val, bool)
            if kw == "multipleOf" and number and val > 0:
                self.enforce(kw)
            elif draft4 or (number and kw != "multipleOf" and (isinstance(val, int) or math.isfinite(val))):
                pass  # minimum/maximum/exclusive*: decided per node by _numbers
            else:
                self.drop(kw, f"{kw} {str(val)[:20]!r} is not a usable number: removed")
        elif kw == "pattern":
            problem = regex_problem(val) if isinstance(val, str) else "not a string"
            if problem:
                self.drop(kw, f"the engine cannot compile this regex ({problem}): removed")
            else:
                self.enforce(kw, "Rust regex dialect")
        elif kw == "format":
            if isinstance(val, str) and val in EXACT_FORMATS and "pattern" not in self.node:
                self.prepared.edits.append((self.path, "format", _DELETE))
                self.prepared.edits.append((self.path, "pattern", EXACT_FORMATS[val]))
                self.prepared.report.add(self.path, kw, "lowered", f"{val}: compiled as an exact regex (calendar "
                                         "dates, years 0001-9999, no leap second, up to 6 fraction digits, an "
                                         "offset required); a narrower form than the format allows")
            elif isinstance(val, str) and val in LOOSE_FORMATS and format_known(val):
                self.prepared.report.add(self.path, kw, "lowered", LOOSE_FORMATS[val])
            elif isinstance(val, str) and format_known(val):
                self.enforce(kw, f"{val}: the engine's built-in regex")
            else:
                self.drop(kw, f"format {str(val)[:40]!r} is unknown to the engine: removed")
        elif kw in ("properties", "patternProperties", "additionalProperties"):
            self._keys(kw, val)
        elif kw == "required":
            if isinstance(val, list) and all(isinstance(n, str) for n in val):
                self.enforce(kw)
            else:
                self.drop(kw, "required is not an array of names: removed")
        elif kw in ("items", "additionalItems") and isinstance(val, (Mapping, bool)):
            self.enforce(kw)
            self.sub(val, kw)
        elif isinstance(val, list) and (val or kw in ("items", "prefixItems")):
            self._list(kw, val)
        else:
            self.drop(kw, f"{kw} is malformed: removed")

    def _count(self, kw: str, val: Any) -> None:
        if isinstance(val, float) and val.is_integer() and val >= 0:
            self.prepared.edits.append((self.path, kw, int(val)))  # the engine wants an integer; 2.0 is 2
        elif not isinstance(val, int) or isinstance(val, bool) or val < 0:
            self.drop(kw, f"{kw} {str(val)[:20]!r} is not a non-negative integer: removed")
            return
        regex = "pattern" in self.node or "format" in self.node
        if kw in ("minLength", "maxLength") and val > LONG_WITH_REGEX and regex:
            self.drop(kw, f"above {LONG_WITH_REGEX} next to a pattern/format the engine's lexer runs out of budget "
                          "and refuses valid strings: removed")
            return
        if kw not in ("minProperties", "maxProperties"):  # decided with the object (see _objects)
            self.enforce(kw, "code points" if kw in ("minLength", "maxLength") else "")

    def _keys(self, kw: str, val: Any) -> None:
        if kw == "additionalProperties":
            if _pattern_problems(self.node):
                self.drop(kw, "removed with patternProperties (which keys it covers depends on their patterns)")
            else:
                self.enforce(kw)
                self.sub(val, kw)
            return
        if not isinstance(val, Mapping):
            self.drop(kw, f"{kw} is not an object: removed")
            return
        if kw == "patternProperties" and _pattern_problems(self.node):
            self.drop(kw, "the engine cannot compile " + "; ".join(_pattern_problems(self.node)) + ": removed")
            return
        self.enforce(kw, "keys generated in schema order" if kw == "properties" else "")
        for name, child in val.items():
            self.sub(child, kw, name)

    def _list(self, kw: str, val: list[Any]) -> None:
        if kw == "oneOf":
            self.prepared.report.add(self.path, kw, "lowered",
                            "compiled as anyOf; that exactly one branch matches is checked after parsing")
        else:
            self.enforce(kw, "draft-4 tuple form" if kw == "items" else
                         "branches intersected by the engine" if kw == "allOf" else "")
        for i, child in enumerate(val):
            self.sub(child, kw, i)
            if kw == "allOf":
                self.visit.intersected.append(join(self.path, kw, i))
            elif kw in ("anyOf", "oneOf"):
                self.visit.branches.append(join(self.path, kw, i))


def _pattern_problems(node: Mapping[str, Any]) -> list[str]:
    patterns = node.get("patternProperties")
    if not isinstance(patterns, Mapping):
        return []
    return [f"{p[:40]!r}: {regex_problem(p)}" for p in patterns if regex_problem(p)]


def _merging(visits: Mapping[str, _Visit]) -> set[str]:
    """Pointers of subschemas the engine intersects with another object schema: never closed.

    Closing one side of an intersection would forbid the keys the other side declares. Members of ``allOf``
    are always intersected; ``anyOf``/``oneOf`` members and ``$ref`` targets are when the node next to them
    constrains objects itself; whatever a merged node pulls in through its own combinators is merged too.
    """
    merging: set[str] = set()
    for visit in visits.values():
        merging.update(visit.intersected)
        if any(k in visit.node for k in _OBJECT_WORDS):
            merging.update(visit.branches)
    stack = list(merging)
    while stack:
        merged = visits.get(stack.pop())
        if merged is not None:
            for member in (*merged.intersected, *merged.branches):
                if member not in merging:
                    merging.add(member)
                    stack.append(member)
    return merging


def _objects(path: str, node: Mapping[str, Any], merged: bool, close: bool, prepared: Prepared) -> None:
    """Close an object schema where safe; keep ``min/maxProperties`` only where the engine supports them."""
    props = node.get("properties") if (path, "properties") not in prepared.removed else None
    names = set(props) if isinstance(props, Mapping) else set()
    required = node.get("required")
    required_names = {n for n in required if isinstance(n, str)} if isinstance(required, list) else set()
    standalone = not merged and not any(k in node for k in _KEEP_OPEN)
    combines = merged or any(k in node for k in ("allOf", "anyOf", "oneOf", "$ref"))
    for kw in ("minProperties", "maxProperties"):
        if kw in node and (path, kw) not in prepared.removed:
            if not combines and names <= required_names:
                prepared.report.add(path, kw, "enforced", "every listed property is required")
            else:
                prepared.drop(path, kw, "the engine counts keys only where every listed property is required: removed")
    if close and isinstance(props, Mapping) and standalone and required_names <= names and _may_be_object(node):
        prepared.edits.append((path, "additionalProperties", False))
        prepared.closed.append(path)
        prepared.report.add(path, "additionalProperties", "lowered",
                            "closed: additionalProperties false added, keys outside properties are not generated")


_NUMBER_WORDS: Final = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")


def _combined_numbers(visits: Mapping[str, _Visit]) -> set[str]:
    """Pointers of subschemas whose numbers the engine intersects with another schema's: no window added there.

    A window on one side of an intersection ignores the other side's bounds: ``{"minimum": 2e18, "allOf":
    [{"type": "number"}]}`` would get ``±1e15`` from its member and no valid value. So nodes that combine
    (``allOf``/``anyOf``/``oneOf``/``$ref``), ``allOf`` members, and branches of a node with bounds of its own
    keep only their own bounds.
    """
    combined: set[str] = set()
    for path, visit in visits.items():
        if any(k in visit.node for k in ("allOf", "anyOf", "oneOf", "$ref")):
            combined.add(path)
        combined.update(visit.intersected)
        if any(k in visit.node for k in _NUMBER_WORDS):
            combined.update(visit.branches)
    return combined


def _numbers(path: str, node: Mapping[str, Any], narrow: bool, prepared: Prepared) -> None:
    """The engine's bounds for a number schema: sound after parsing, finite, and compilable.

    The contract is checked on the *parsed* value (a double, or a Python int), the engine checks the *text*;
    each side's bound is turned into an inclusive engine bound ``D`` whose every text parses inside the
    contract's range. Rounding to the nearest double is monotonic, so a text ``t <= D`` parses to
    ``r(t) <= r(D)``; it suffices that ``r(D)`` is a double inside the range:

    - floats: an inclusive bound ``m`` becomes ``m`` itself when it has few digits (then no valid double is
      lost: *enforced*), an exclusive one the next double inside (``lt=1``: texts such as
      ``0.99999999999999999999`` parse to 1.0, and ``gt=0``: ``0.`` + 330 zeros + ``1`` parses to 0.0), then
      ``D`` is rounded *inward* to :data:`BOUND_DIGITS` significant digits and :data:`BOUND_PLACES` places (the
      engine's regex is exact only for such bounds); when that excludes valid doubles the bound is *lowered*;
    - integers: ``gt``/``lt`` become the integer inside; bounds beyond :data:`EXACT_INTEGER` are rounded by
      the engine to doubles, so the copy gets the nearest double *outside* (looser: *post_validated*);
    - a number the contract leaves unbounded on a side gets ``±NUMBER_RANGE`` there (*lowered*: the grammar is
      narrower than the contract; the engine's unbounded number writes values no double or int64 holds). If
      the valid range lies entirely beyond ``±NUMBER_RANGE`` the window is ``±NUMBER_LIMIT``; if it lies
      beyond that too, the bounds are removed (*post_validated*) rather than making the grammar unsatisfiable,
      and so are single bounds beyond ``NUMBER_LIMIT`` (the engine cannot build their regex: int64 range,
      ``lt=3.4e38``);
    - with ``narrow`` false (a remedy when narrowing made the schema unsatisfiable, and for nodes the engine
      intersects with other schemas, see :func:`_combined_numbers`), nodes with ``enum`` or ``const``, and
      untyped nodes without bounds, no window is added.

    Texts just *outside* a bound that round onto it are refused (a narrowing nobody notices: the value has a
    shorter spelling inside); texts inside it never parse outside, for either sign. Bounds on a node whose
    ``type`` excludes numbers constrain nothing that is generated: *enforced* as given.
    """
    present = [kw for kw in _NUMBER_WORDS if kw in node and (path, kw) not in prepared.removed]
    declared = node.get("type") if (path, "type") not in prepared.removed else None
    names = {declared} if isinstance(declared, str) else set(declared) if isinstance(declared, list) else set()
    numeric = bool(names & {"number", "integer"})
    report = prepared.report
    if names and not numeric:
        for kw in present:
            report.add(path, kw, "enforced", "applies to numbers only: none is generated here")
        return
    clamp = narrow and "enum" not in node and "const" not in node and (numeric or bool(present))
    if not present and not clamp:
        return
    integer = numeric and "number" not in names
    sides = [_bound(node, present, "minimum", "exclusiveMinimum", True),
             _bound(node, present, "maximum", "exclusiveMaximum", False)]
    exact: list[Any] = []
    for value, exclusive, _ in sides:
        if value is None:
            exact.append(None)
        elif integer:
            exact.append(_int_inside(value, exclusive, lower=len(exact) == 0))
        else:
            exact.append(_double_inside(value, exclusive, lower=len(exact) == 0))
    low, high = exact
    if low is not None and high is not None and low > high:
        for kw in present:  # an unsatisfiable contract: the engine says so
            report.add(path, kw, "enforced", "")
        return
    window = _window(low, high) if clamp else None
    if window is None:  # no window: keep what the engine can compile, remove the rest
        window = (low if low is not None and abs(low) <= NUMBER_LIMIT else None,
                  high if high is not None and abs(high) <= NUMBER_LIMIT else None)
    engine: list[Any] = []
    actions: list[tuple[Action, str]] = []
    for i, (bound, wanted) in enumerate(zip(exact, window, strict=True)):
        lower = i == 0
        word = "minimum" if lower else "maximum"
        if wanted is None:
            engine.append(None)
            actions.append(("post_validated", f"beyond ±{NUMBER_LIMIT:.0e}, where the engine cannot build the "
                            "range's regex: removed, checked after parsing") if bound is not None else ("enforced", ""))
            continue
        if integer:
            value, action, detail = _int_engine(bound, wanted, lower)
        else:
            value, action, detail = _float_engine(bound, wanted, lower)
        if bound is None:
            action, detail = "lowered", (f"unbounded {'below' if lower else 'above'}: the engine is given {word} "
                                         f"{value} (the grammar is narrower than the contract: beyond it the "
                                         "engine's numbers are not finite doubles)")
        engine.append(value)
        actions.append((action, detail))
    if integer is False and engine[0] is not None and engine[1] is not None and engine[0] > engine[1]:
        # rounding inward left nothing: round outward instead (looser, so checked after parsing)
        engine = [_decimal_bound(window[0], ROUND_FLOOR), _decimal_bound(window[1], ROUND_CEILING)]
        actions = [("post_validated", f"too narrow for the engine's precision: widened to {engine[0]}..{engine[1]}, "
                    "checked after parsing")] * 2
    for kw in present:
        prepared.edits.append((path, kw, _DELETE))
    for i, (_, _, kws) in enumerate(sides):
        word = "minimum" if i == 0 else "maximum"
        action, detail = actions[i]
        if engine[i] is not None:
            prepared.edits.append((path, word, engine[i]))
        for kw in kws or ([word] if engine[i] is not None else []):
            report.add(path, kw, action, detail)
            if action == "post_validated":
                prepared.removed.add((path, kw))


def _bound(node: Mapping[str, Any], present: list[str], plain: str, strict: str,
           lower: bool) -> tuple[Any, bool, list[str]]:
    """A side's tightest bound: (value or None, exclusive, the keywords that state it)."""
    kws = [k for k in (plain, strict) if k in present]
    flag = node.get(strict) if strict in present else None
    best: tuple[Any, bool] | None = None
    if plain in present:
        best = (node[plain], flag is True)
    if strict in present and not isinstance(flag, bool) and (
            best is None or (flag >= best[0] if lower else flag <= best[0])):
        best = (flag, True)
    return (best[0], best[1], kws) if best is not None else (None, False, kws)


def _int_inside(value: Any, exclusive: bool, lower: bool) -> int:
    """The integer nearest ``value`` on the inside of the bound."""
    if lower:
        return int(math.floor(value) + 1 if exclusive else math.ceil(value))
    return int(math.ceil(value) - 1 if exclusive else math.floor(value))


def _double_inside(value: Any, exclusive: bool, lower: bool) -> float:
    """The double nearest ``value`` on the inside of the bound (``value`` itself when inclusive and a double)."""
    try:
        found = float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf
    toward = math.inf if lower else -math.inf
    if (found < value if lower else found > value) or (exclusive and found == value):
        found = math.nextafter(found, toward)
    return found


def _window(low: Any, high: Any) -> tuple[Any, Any] | None:
    """The contract's range intersected with ±NUMBER_RANGE, else ±NUMBER_LIMIT; None if it misses both."""
    for reach in (NUMBER_RANGE, NUMBER_LIMIT):
        start = -reach if low is None else max(low, -reach)
        end = reach if high is None else min(high, reach)
        if start <= end:
            return start, end
    return None


def _int_engine(bound: int | None, wanted: int, lower: bool) -> tuple[int, Action, str]:
    word = "minimum" if lower else "maximum"
    if abs(wanted) > EXACT_INTEGER:  # the engine rounds it to a double: give it the double outside
        double = float(wanted)
        if (double > wanted) if lower else (double < wanted):
            double = math.nextafter(double, -math.inf if lower else math.inf)
        return int(double), "post_validated", (f"the engine rounds integer bounds beyond 2**53 to doubles: given "
                                               f"{word} {int(double)} (looser), checked after parsing")
    if bound is not None and bound != wanted:
        return wanted, "lowered", f"beyond the engine's range: the engine is given {word} {wanted} (narrower)"
    return wanted, "enforced", f"as {word} {wanted}"


def _float_engine(bound: float | None, wanted: float, lower: bool) -> tuple[float, Action, str]:
    word = "minimum" if lower else "maximum"
    value = _decimal_bound(wanted, ROUND_CEILING if lower else ROUND_FLOOR)
    if bound is not None and value == bound:  # the same double: no valid value is lost
        return value, "enforced", ""
    why = "beyond the engine's range" if bound is not None and wanted != bound else \
        "rounded inward to a bound the engine's regex holds exactly, so every text parses inside"
    return value, "lowered", f"{why}: the engine is given {word} {value!r} (narrower)"


def _decimal_bound(value: float, rounding: str) -> float:
    """``value``'s shortest spelling rounded (``rounding``) to BOUND_DIGITS significant digits and BOUND_PLACES
    places, as a double whose shortest spelling is that decimal (rounding the spelling, which parses to
    ``value``, keeps every text beyond it parsing beyond ``value``)."""
    exact = Decimal(repr(value))
    if exact == 0:
        return 0.0
    step = max(exact.adjusted() - BOUND_DIGITS + 1, -BOUND_PLACES)
    rounded = exact.quantize(Decimal(1).scaleb(step), rounding=rounding)
    return float(rounded) + 0.0  # no -0.0


def _may_be_object(node: Mapping[str, Any]) -> bool:
    declared = node.get("type")
    return declared is None or declared == "object" or (isinstance(declared, list) and "object" in declared)


def _apply(doc: dict[str, Any], edits: list[tuple[str, str, Any]]) -> None:
    """Apply edits to the copy: every target node is looked up before any of them changes."""
    targets = [(node_at(doc, path), kw, value) for path, kw, value in edits]
    for node, kw, value in targets:
        if not isinstance(node, dict):
            continue
        if value is _DELETE:
            node.pop(kw, None)
        else:
            node[kw] = value

