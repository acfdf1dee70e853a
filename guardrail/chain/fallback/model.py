"""FallbackRule-set files: the model-free last tier of the degradation chain, one TOML file per contract use.

When every LLM tier fails, guardrail still has to return a value of the call's contract. A rule set says how to
build one from the call's inputs (a dict such as ``{"inquiry": "..."}``) with keywords, RE2 patterns, defaults
and small derived fields, or by calling a registered Python function. Files live in ``fallbacks/``.

Format::

    name = "ticket_triage"          # required; the contract use this set serves (check_rule_sets matches on it)
    version = "1"                   # required; a string (an integer is accepted and kept as its text)
    description = "..."             # optional
    input = "inquiry"               # the input the text conditions read; required when any rule has one

    [defaults]                      # field values when no rule sets them
    urgency = 2
    category = "other"

    [[rules]]                       # applied in file order
    id = "billing-keywords"         # required, unique within the file
    description = "..."             # optional
    when.any_keywords = ["refund", "환불"]     # some keyword occurs (case-insensitive substring)
    when.all_keywords = ["charged", "twice"]   # every keyword occurs
    when.pattern = "(?i)urgent|긴급"           # RE2 search (linear time; no backreferences or lookaround)
    when.input_present = true       # the input is present and not blank (true: the set's input; "name": that one)
    when.input_missing = "order_id" # the input is absent or blank
    set = { category = "billing" }  # contract field -> value

    [derived]                       # fields computed from the inputs
    summary = { from = "inquiry", first_sentence = true, truncate = 120, default = "(empty)" }
    title = { template = "Ticket: {inquiry}", truncate = 80 }   # {name} is replaced by that input's text
    score = { function = "my_score" }                           # a registered rule function's return value

    function = "segment_transcript"  # instead of defaults/rules/derived: the whole value from a rule function

Semantics:

- The conditions of one ``when`` must all hold; a ``when`` needs at least one condition.
- Precedence, lowest to highest: ``defaults``, then ``derived``, then matching rules in file order. **A later
  matching rule overrides an earlier one for the same field** (as in CSS: put general rules first and specific
  ones after). The engine reports every rule that matched, with the fields it set and those a later rule
  overrode.
- Text conditions read the set's ``input``; an absent or ``None`` input reads as ``""``, any other non-str value
  as its ``str()``. Keywords match case-insensitively (``casefold``) as substrings, so Korean particles
  (``배송이``) do not hide a keyword (``배송``).
- Derived ``from``/``template`` text has its whitespace collapsed; ``first_sentence`` keeps the text up to the
  first sentence end; ``truncate = N`` keeps at most N characters, ending in "…" when it cut; ``default`` is used
  when the result is empty.
- ``function`` excludes ``defaults``, ``rules`` and ``derived``: the function's return value is the whole value.

Everything is validated when the file is loaded (unknown keys, missing or duplicate ids, patterns RE2 cannot
compile, unknown functions), with the line of the offending key where it can be found, because a fallback that
fails only once every model has failed is the worst time to learn about a typo.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guardrail.chain.fallback.functions import get_rule_function, registered_functions
from guardrail.errors import RuleSetError
from guardrail.problems import Locator, Problem
from guardrail.tools.policy.regex import LinearPattern, compile_pattern

__all__ = ["Condition", "Derived", "FallbackRule", "Problem", "RuleSet", "RuleSetError", "parse_rule_set"]


@dataclass(frozen=True, slots=True)
class Condition:
    """A rule's ``when``: every given condition must hold. Keywords are stored casefolded."""

    any_keywords: tuple[str, ...] = ()
    all_keywords: tuple[str, ...] = ()
    pattern: LinearPattern | None = None
    input_present: str | None = None
    input_missing: str | None = None

    @property
    def reads_text(self) -> bool:
        """Whether the condition reads the rule set's ``input`` text."""
        return bool(self.any_keywords or self.all_keywords or self.pattern is not None)


@dataclass(frozen=True, slots=True)
class FallbackRule:
    """One ``[[rules]]`` entry: when ``when`` holds, the fields of ``set`` take its values."""

    id: str
    when: Condition
    set: Mapping[str, Any]
    description: str = ""
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Derived:
    """One ``[derived]`` field: text from an input (``source``), a ``template``, or a rule ``function``."""

    source: str | None = None
    template: str | None = None
    function: str | None = None
    first_sentence: bool = False
    truncate: int | None = None
    default: Any = None


@dataclass(frozen=True, slots=True)
class RuleSet:
    """A validated rule-set file (see the module docstring for the format)."""

    name: str
    version: str
    input: str | None = None
    description: str = ""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    rules: tuple[FallbackRule, ...] = ()
    derived: Mapping[str, Derived] = field(default_factory=dict)
    function: str | None = None
    source: str = "<rules>"
    text: str = field(default="", repr=False, compare=False)

    def fields(self) -> dict[str, str]:
        """Every contract field the set writes, with the key that writes it first (for contract checks)."""
        written: dict[str, str] = {}
        for name in self.defaults:
            written.setdefault(name, f"defaults.{name}")
        for name in self.derived:
            written.setdefault(name, f"derived.{name}")
        for index, rule in enumerate(self.rules):
            for name in rule.set:
                written.setdefault(name, f"rules[{index}].set.{name}")
        return written


_TOP_KEYS = ("name", "version", "description", "input", "defaults", "rules", "derived", "function")
_RULE_KEYS = ("id", "description", "when", "set")
_WHEN_KEYS = ("any_keywords", "all_keywords", "pattern", "input_present", "input_missing")
_DERIVED_KEYS = ("from", "template", "function", "first_sentence", "truncate", "default")
_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,99}")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")


class _Collector:
    """Gathers problems for one file, locating each key's line in the text (best effort)."""

    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self.locator = Locator(text)
        self.problems: list[Problem] = []

    def add(self, key: str, message: str) -> None:
        self.problems.append(Problem(self.source, self.locator.line(key), key, message))


def parse_rule_set(text: str, source: str = "<rules>") -> RuleSet:
    """Parse and validate one rule set's TOML text; :class:`RuleSetError` listing every problem found."""
    import tomllib

    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise RuleSetError([Problem(source, None, "", "nested too deeply")]) from None
    except tomllib.TOMLDecodeError as error:
        match = re.search(r"line (\d+)", str(error))
        line = getattr(error, "lineno", None) or (int(match.group(1)) if match else None)
        raise RuleSetError([Problem(source, line, "", f"not valid TOML: {error}")]) from None
    out = _Collector(source, text)
    rule_set = _build(data, out, source, text)
    if out.problems or rule_set is None:
        raise RuleSetError(out.problems or [Problem(source, None, "", "invalid rule set")])
    return rule_set


def _unknown(out: _Collector, table: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    for key in table:
        if key not in allowed:
            out.add(f"{prefix}{key}", f"unknown key {key!r} (expected one of: {', '.join(allowed)})")


def _text(out: _Collector, data: Mapping[str, Any], key: str, prefix: str = "", required: bool = False) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            out.add(f"{prefix}{key}", "required")
        return None
    if not isinstance(value, str) or not value.strip():
        out.add(f"{prefix}{key}", f"must be a non-empty string, not {value!r}")
        return None
    return value


def _field_table(out: _Collector, value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        out.add(key, "must be a table of contract field names to values")
        return {}
    for name in value:
        if not _FIELD.fullmatch(name):
            out.add(f"{key}.{name}", "not a valid field name")
    return dict(value)


def _build(data: dict[str, Any], out: _Collector, source: str, text: str) -> RuleSet | None:
    _unknown(out, data, _TOP_KEYS, "")
    name = _text(out, data, "name", required=True)
    version = data.get("version")
    if version is None:
        out.add("version", "required")
    elif isinstance(version, int) and not isinstance(version, bool):
        version = str(version)
    elif not isinstance(version, str) or not version.strip():
        out.add("version", f"must be a non-empty string, not {version!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        out.add("description", "must be a string")
    input_name = _text(out, data, "input")
    function = _text(out, data, "function")
    if function is not None and get_rule_function(function) is None:
        known = ", ".join(registered_functions()) or "none"
        out.add("function", f"unknown rule function {function!r} (registered: {known})")
    if function is not None:
        for key in ("defaults", "rules", "derived"):
            if key in data:
                out.add(key, f"'{key}' cannot be combined with 'function' (the function builds the whole value)")

    defaults = _field_table(out, data.get("defaults", {}), "defaults")
    rules = _rules(out, data.get("rules", []), input_name)
    derived = _derived(out, data.get("derived", {}))
    if function is None and not (defaults or rules or derived) and not out.problems:
        out.add("", "a rule set needs 'function', or at least one of 'defaults', 'rules' or 'derived'")
    if out.problems or name is None or not isinstance(version, str):
        return None
    return RuleSet(
        name=name,
        version=version,
        input=input_name,
        description=description if isinstance(description, str) else "",
        defaults=defaults,
        rules=rules,
        derived=derived,
        function=function,
        source=source,
        text=text,
    )


def _keywords(out: _Collector, when: Mapping[str, Any], key: str, prefix: str) -> tuple[str, ...]:
    value = when.get(key)
    if value is None:
        return ()
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(word, str) and word.strip() for word in value)
    ):
        out.add(f"{prefix}{key}", "must be a non-empty list of non-empty strings")
        return ()
    return tuple(dict.fromkeys(word.casefold() for word in value))


def _input_ref(out: _Collector, when: Mapping[str, Any], key: str, prefix: str, input_name: str | None) -> str | None:
    value = when.get(key)
    if value is None or value is False:
        return None
    if value is True:
        if input_name is None:
            out.add(f"{prefix}{key}", "true refers to the rule set's 'input', which is not set (or name an input)")
        return input_name
    if isinstance(value, str) and value.strip():
        return value
    out.add(f"{prefix}{key}", f"must be true or an input name, not {value!r}")
    return None


def _rules(out: _Collector, value: Any, input_name: str | None) -> tuple[FallbackRule, ...]:
    if not isinstance(value, list):
        out.add("rules", "must be an array of tables ([[rules]])")
        return ()
    rules: list[FallbackRule] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(value):
        prefix = f"rules[{index}]."
        if not isinstance(entry, dict):
            out.add(f"rules[{index}]", "must be a table")
            continue
        _unknown(out, entry, _RULE_KEYS, prefix)
        rule_id = entry.get("id")
        if rule_id is None:
            out.add(f"{prefix}id", "every rule needs an id (it is what the engine reports when the rule fires)")
        elif not isinstance(rule_id, str) or not _ID.fullmatch(rule_id):
            out.add(f"{prefix}id", f"must be letters, digits and _ . : - (at most 100), not {rule_id!r}")
            rule_id = None
        elif rule_id in seen:
            out.add(f"{prefix}id", f"duplicate rule id {rule_id!r} (also rules[{seen[rule_id]}])")
        else:
            seen[rule_id] = index
        when = entry.get("when")
        condition = Condition()
        if not isinstance(when, dict) or not when:
            out.add(f"{prefix}when", "every rule needs a 'when' table with at least one condition")
        else:
            _unknown(out, when, _WHEN_KEYS, f"{prefix}when.")
            pattern = None
            raw = when.get("pattern")
            if raw is not None:
                try:
                    pattern = compile_pattern(raw) if isinstance(raw, str) and raw else None
                    if pattern is None:
                        out.add(f"{prefix}when.pattern", "must be a non-empty string")
                except ValueError as error:  # the shared RE2 compiler words it for policies
                    out.add(f"{prefix}when.pattern", re.sub(r"^(?:policy )?regex", "rule set regex", str(error)))
            condition = Condition(
                any_keywords=_keywords(out, when, "any_keywords", f"{prefix}when."),
                all_keywords=_keywords(out, when, "all_keywords", f"{prefix}when."),
                pattern=pattern,
                input_present=_input_ref(out, when, "input_present", f"{prefix}when.", input_name),
                input_missing=_input_ref(out, when, "input_missing", f"{prefix}when.", input_name),
            )
            if condition.reads_text and input_name is None:
                out.add(f"{prefix}when", "text conditions need the rule set's top-level 'input' (the text to read)")
        if "set" not in entry:
            out.add(f"{prefix}set", "every rule needs a 'set' table (the fields it sets)")
            values: dict[str, Any] = {}
        else:
            values = _field_table(out, entry["set"], f"{prefix}set")
            if not values and isinstance(entry["set"], dict):
                out.add(f"{prefix}set", "sets no field")
        description = entry.get("description", "")
        if not isinstance(description, str):
            out.add(f"{prefix}description", "must be a string")
            description = ""
        if isinstance(rule_id, str):
            rules.append(FallbackRule(rule_id, condition, values, description, out.locator.line(f"rules[{index}]")))
    return tuple(rules)


def _derived(out: _Collector, value: Any) -> dict[str, Derived]:
    if not isinstance(value, dict):
        out.add("derived", "must be a table of field names to specs")
        return {}
    derived: dict[str, Derived] = {}
    for name, spec in value.items():
        key = f"derived.{name}"
        if not _FIELD.fullmatch(name):
            out.add(key, "not a valid field name")
        if not isinstance(spec, dict):
            out.add(key, "must be a table such as { from = \"inquiry\", truncate = 120 }")
            continue
        _unknown(out, spec, _DERIVED_KEYS, f"{key}.")
        kinds = [kind for kind in ("from", "template", "function") if kind in spec]
        if len(kinds) != 1:
            out.add(key, "needs exactly one of 'from', 'template' or 'function'")
            continue
        source = _text(out, spec, "from", f"{key}.")
        template = _text(out, spec, "template", f"{key}.")
        function = _text(out, spec, "function", f"{key}.")
        if function is not None and get_rule_function(function) is None:
            out.add(f"{key}.function", f"unknown rule function {function!r}")
        first_sentence = spec.get("first_sentence", False)
        if not isinstance(first_sentence, bool):
            out.add(f"{key}.first_sentence", "must be true or false")
            first_sentence = False
        truncate = spec.get("truncate")
        if truncate is not None and (isinstance(truncate, bool) or not isinstance(truncate, int) or truncate < 1):
            out.add(f"{key}.truncate", f"must be a positive integer, not {truncate!r}")
            truncate = None
        if function is not None and (first_sentence or truncate is not None):
            out.add(key, "'first_sentence' and 'truncate' apply to text ('from' or 'template'), not 'function'")
        derived[name] = Derived(source, template, function, first_sentence, truncate, spec.get("default"))
    return derived
