"""Running rule sets: inputs in, a validated contract value and the rules that fired out.

:class:`RuleEngine` is the last tier of the degradation chain, so it is built to be boring: no model, no I/O,
no randomness; keyword matching is substring search and patterns run on RE2, so time is linear in the input
(a 100 KB inquiry takes milliseconds). The produced dict (or list, for a rule function) is validated with
pydantic against the contract, and a value the contract refuses raises :class:`RuleSetError` (never an invalid
value): a broken fallback must be loud, because it is what answers when nothing else can.

:func:`load_rule_set` reads one file; :func:`check_rule_sets` reads a directory and returns every problem,
including contract mismatches (fields the contract lacks, values it refuses, required fields nothing sets), for
a ``guardrail rules check`` command to print.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TextIO, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from guardrail.chain.fallback.functions import get_rule_function, strip_surrogates
from guardrail.chain.fallback.model import Condition, Derived, Problem, RuleSet, parse_rule_set
from guardrail.errors import ConfigError, Declined, Denied, Refused, RuleSetError
from guardrail.problems import Locator, print_check

__all__ = ["MAX_RULES_BYTES", "Fired", "RuleEngine", "check_rule_sets", "load_rule_set", "rules_check"]

T = TypeVar("T")

#: Rule-set files larger than this are refused unread.
MAX_RULES_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Fired:
    """One rule that matched: its id, the fields it set, those a later rule overrode, and why it matched.

    For a ``function`` rule set there is one entry, ``rule_id = "function:<name>"``.
    """

    rule_id: str
    fields: tuple[str, ...]
    why: str
    overridden: tuple[str, ...] = ()


def load_rule_set(path: str | Path) -> RuleSet:
    """Read and validate one rule-set file; :class:`RuleSetError` listing every problem (file, line, key)."""
    file = Path(path)
    try:
        if file.stat().st_size > MAX_RULES_BYTES:
            raise RuleSetError([Problem(str(file), None, "", f"larger than {MAX_RULES_BYTES} bytes")])
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise RuleSetError([Problem(str(file), None, "", f"not UTF-8: {error}")]) from None
    except OSError as error:
        raise RuleSetError([Problem(str(file), None, "", f"cannot be read: {error.strerror or error}")]) from None
    return parse_rule_set(text, str(file))


@functools.lru_cache(maxsize=256)
def _cached_adapter(contract: Any) -> TypeAdapter[Any]:
    return TypeAdapter(contract)


def _adapter(contract: Any) -> TypeAdapter[Any]:
    try:
        return _cached_adapter(contract)
    except TypeError:  # unhashable type expressions
        return TypeAdapter(contract)


def _input_text(inputs: Mapping[str, Any], name: str | None) -> str:
    if name is None:
        return ""
    value = inputs.get(name)
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _present(inputs: Mapping[str, Any], name: str) -> bool:
    value = inputs.get(name)
    if value is None:
        return False
    return not (isinstance(value, str) and not value.strip())


_SENTENCE_END = re.compile(r"[.!?…](?=\s|$)|[。？！]")


def _clip(text: str, spec: Derived) -> str:
    text = " ".join(strip_surrogates(text).split())
    if spec.first_sentence:
        match = _SENTENCE_END.search(text)
        if match:
            text = text[: match.end()]
    if spec.truncate is not None and len(text) > spec.truncate:
        text = text[: spec.truncate - 1].rstrip() + "…"
    return text


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class RuleEngine:
    """Runs one :class:`RuleSet` (see :mod:`guardrail.chain.fallback.model` for what the file means)."""

    def __init__(self, rule_set: RuleSet) -> None:
        self.rule_set = rule_set

    def _matches(self, condition: Condition, text: str, folded: str, inputs: Mapping[str, Any]) -> str | None:
        """Why ``condition`` holds (a short explanation), or ``None`` when it does not."""
        reasons: list[str] = []
        if condition.any_keywords:
            hit = next((word for word in condition.any_keywords if word in folded), None)
            if hit is None:
                return None
            reasons.append(f"keyword {hit!r}")
        if condition.all_keywords:
            if not all(word in folded for word in condition.all_keywords):
                return None
            reasons.append("keywords " + ", ".join(repr(word) for word in condition.all_keywords))
        if condition.pattern is not None:
            if not condition.pattern.search(text):
                return None
            reasons.append(f"pattern {condition.pattern.pattern!r}")
        if condition.input_present is not None:
            if not _present(inputs, condition.input_present):
                return None
            reasons.append(f"input {condition.input_present!r} present")
        if condition.input_missing is not None:
            if _present(inputs, condition.input_missing):
                return None
            reasons.append(f"input {condition.input_missing!r} missing")
        return "; ".join(reasons)

    def _derive(self, spec: Derived, inputs: Mapping[str, Any]) -> Any:
        if spec.function is not None:
            function = get_rule_function(spec.function)
            if function is None:
                raise ConfigError(f"rule function {spec.function!r} is no longer registered")
            value = function(inputs)
        elif spec.template is not None:
            value = _clip(_PLACEHOLDER.sub(lambda m: _input_text(inputs, m.group(1)), spec.template), spec)
        else:
            value = _clip(_input_text(inputs, spec.source), spec)
        if spec.default is not None and value in ("", None):
            return spec.default
        return value

    def produce(self, inputs: Mapping[str, Any]) -> tuple[Any, tuple[Fired, ...]]:
        """The raw value (before contract validation) and the rules that fired; ``RuleSetError`` if a function fails."""
        rule_set = self.rule_set
        if not isinstance(inputs, Mapping):
            message = f"inputs must be a mapping, not {type(inputs).__name__}"
            raise RuleSetError([Problem(rule_set.source, None, "", message)])
        if rule_set.function is not None:
            function = get_rule_function(rule_set.function)
            try:
                if function is None:
                    raise ConfigError("not registered")
                value = function(inputs)
            except (Denied, Refused, Declined):
                raise  # answers (a denial, a refusal), not faults: the caller must see them as they are
            except Exception as error:
                raise RuleSetError(
                    [Problem(rule_set.source, None, "function", f"rule function {rule_set.function!r} failed: {error}")]
                ) from error
            return value, (Fired(f"function:{rule_set.function}", (), "rule function"),)

        values: dict[str, Any] = dict(rule_set.defaults)
        for name, spec in rule_set.derived.items():
            try:
                values[name] = self._derive(spec, inputs)
            except Exception as error:
                raise RuleSetError([Problem(rule_set.source, None, f"derived.{name}", f"failed: {error}")]) from error
        text = _input_text(inputs, rule_set.input)
        folded = text.casefold()
        matched: list[tuple[str, tuple[str, ...], str]] = []
        setter: dict[str, int] = {}
        for rule in rule_set.rules:
            why = self._matches(rule.when, text, folded, inputs)
            if why is None:
                continue
            for name, value in rule.set.items():
                values[name] = value
                setter[name] = len(matched)
            matched.append((rule.id, tuple(rule.set), why))
        fired = tuple(
            Fired(rule_id, names, why, tuple(name for name in names if setter[name] != index))
            for index, (rule_id, names, why) in enumerate(matched)
        )
        return values, fired

    def run(self, inputs: Mapping[str, Any], contract: type[T]) -> tuple[T, tuple[Fired, ...]]:
        """A value of ``contract`` built from ``inputs``, and the rules that fired (in file order).

        ``contract`` is a pydantic model or any type pydantic validates (``list[Segment]``). A value the contract
        refuses raises :class:`RuleSetError` with one problem per validation error and ``.fired`` set.
        """
        value, fired = self.produce(inputs)
        try:
            return _adapter(contract).validate_python(value), fired
        except ValidationError as error:
            problems = [
                Problem(
                    self.rule_set.source,
                    None,
                    ".".join(str(part) for part in item["loc"]),
                    f"the rule set produced a value the contract refuses: {item['msg']}"
                    f" (rules fired: {', '.join(f.rule_id for f in fired) or 'none'})",
                )
                for item in error.errors()
            ]
            raise RuleSetError(problems, fired) from None


def _field_adapter(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    info = model.model_fields[name]
    annotation: Any = info.annotation
    if info.metadata:
        annotation = Annotated[(annotation, *info.metadata)]
    return TypeAdapter(annotation)


def _check_contract(rule_set: RuleSet, contract: Any) -> list[Problem]:
    """Contract problems a rule set has before any input arrives (fields, values, required fields)."""
    if not (isinstance(contract, type) and issubclass(contract, BaseModel)):
        return []  # list[...] and other types: only running the set can tell
    problems: list[Problem] = []
    locator = Locator(rule_set.text)
    fields = contract.model_fields
    aliases = {info.alias: name for name, info in fields.items() if info.alias}

    def report(key: str, message: str) -> None:
        problems.append(Problem(rule_set.source, locator.line(key), key, message))

    def check_value(key: str, name: str, value: Any) -> None:
        target = aliases.get(name, name)
        if target not in fields:
            report(key, f"{contract.__name__} has no field {name!r} (fields: {', '.join(fields)})")
            return
        try:
            _field_adapter(contract, target).validate_python(value)
        except ValidationError as error:
            report(key, f"value {value!r} is refused by {contract.__name__}.{target}: {error.errors()[0]['msg']}")

    for name, value in rule_set.defaults.items():
        check_value(f"defaults.{name}", name, value)
    for name in rule_set.derived:
        if aliases.get(name, name) not in fields:
            report(f"derived.{name}", f"{contract.__name__} has no field {name!r} (fields: {', '.join(fields)})")
    for index, rule in enumerate(rule_set.rules):
        for name, value in rule.set.items():
            check_value(f"rules[{index}].set.{name}", name, value)
    if rule_set.function is None:
        always = {aliases.get(name, name) for name in (*rule_set.defaults, *rule_set.derived)}
        for name, info in fields.items():
            if info.is_required() and name not in always:
                message = f"required field {name!r} has no default or derived value: inputs no rule matches fail"
                report("defaults", message)
    return problems


def check_rule_sets(directory: str | Path, contracts: Mapping[str, Any] | None = None) -> list[Problem]:
    """Every problem in the ``*.toml`` rule sets of ``directory`` (all files are read; empty list: all good).

    ``directory`` may also be one rule-set file (of any name). A path that does not exist, and a directory
    without any ``*.toml`` file, are problems: a check that read nothing does not pass.

    ``contracts`` maps rule-set names to contract types; for a pydantic model, ``defaults``, ``derived`` and every
    rule's ``set`` are checked against its fields (unknown fields, values the field refuses, required fields
    nothing always sets). A contract name without a rule set is a problem too; two files with one name are.
    """
    return _check(directory, contracts)[1]


def _check(directory: str | Path, contracts: Mapping[str, Any] | None) -> tuple[dict[str, str], list[Problem]]:
    """The valid rule sets found (name -> file) and every problem; see :func:`check_rule_sets`."""
    folder = Path(directory)
    if not folder.exists():
        return {}, [Problem(str(folder), None, "", "does not exist")]
    files = sorted(folder.glob("*.toml")) if folder.is_dir() else [folder]
    if not files:
        return {}, [Problem(str(folder), None, "", "no rule sets (*.toml) in this directory; nothing to check")]
    problems: list[Problem] = []
    found: dict[str, str] = {}
    for file in files:
        try:
            rule_set = load_rule_set(file)
        except RuleSetError as error:
            problems.extend(error.problems)
            continue
        if rule_set.name in found:
            problems.append(Problem(str(file), Locator(rule_set.text).line("name"), "name",
                                    f"rule set {rule_set.name!r} is already defined in {found[rule_set.name]}"))
            continue
        found[rule_set.name] = str(file)
        if contracts and rule_set.name in contracts:
            problems.extend(_check_contract(rule_set, contracts[rule_set.name]))
    for name in contracts or {}:
        if name not in found and not any(problem.file.endswith(".toml") for problem in problems):
            problems.append(Problem(str(folder), None, name, f"no rule set named {name!r} for this contract"))
    return found, problems


def _resolve(target: Any) -> Any:
    """A contract given as ``"module:Attribute"`` (as a CLI passes it), imported; anything else as is."""
    if not isinstance(target, str):
        return target
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"expected MODULE:Type, got {target!r}")
    value: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def rules_check(
    directory: str | Path = "fallbacks",
    contracts: Mapping[str, Any] | None = None,
    *,
    as_json: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """What ``guardrail rules check [PATH] [--contract NAME=MODULE:Type ...] [--json]`` does; the exit code.

    Prints every problem (file:line: key: message) on ``err`` and a summary line on ``out`` (or one JSON object
    on ``out`` with ``as_json``); returns 1 when there is any problem, else 0. ``contracts`` values may be types
    or ``"module:Type"`` strings; one that cannot be imported is reported as a problem, not raised, so that one
    run shows everything wrong.
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    resolved: dict[str, Any] = {}
    problems: list[Problem] = []
    for name, target in (contracts or {}).items():
        try:
            resolved[name] = _resolve(target)
        except Exception as error:  # ImportError, AttributeError, ValueError: all one message for the user
            problems.append(Problem("<contracts>", None, name, f"cannot load contract {target!r}: {error}"))
    found, found_problems = _check(directory, resolved)
    problems.extend(found_problems)
    return print_check(list(found), problems, noun=("rule set", "rule sets"), key="rule_sets", as_json=as_json,
                       out=out, err=err)
