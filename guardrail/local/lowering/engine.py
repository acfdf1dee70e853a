"""What llguidance (1.9.1) does with each JSON Schema keyword, and probes of what the installed engine compiles.

Kept apart from the walk that lowers a schema (:mod:`guardrail.local.lowering.prepare`) so the facts about the
engine (which keywords it enforces, refuses or checks loosely; which regexes and formats it compiles) live in
one table a reader can check against the engine's release notes.
"""

from __future__ import annotations

import threading
from typing import Final

__all__ = ["ANNOTATIONS", "ASSERTIONS", "ENFORCED", "EXACT_FORMATS", "LONG_WITH_REGEX", "LOOSE_FORMATS",
           "POST_VALIDATED", "format_known", "regex_problem"]

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
ASSERTIONS: Final = ENFORCED | POST_VALIDATED | {"oneOf"}
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
