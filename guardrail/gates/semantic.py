"""The semantic gate: rules over a validated value and the call's runtime context.

Valid JSON is not a correct answer. A rule is a plain callable ``(value, context) -> violations`` (a
:class:`~guardrail.parse.Violation`, a message string, a list of either, ``True``/``None`` for "fine" or ``False``
for "wrong") wrapped by :func:`rule`, or one of the declarative built-ins below. ``context`` is what the
application passes with the call (``context={"asset_ids": {...}, "retrieved": [...]}``): runtime facts the
model cannot change.

=================================  ==================================================================
``relation("start", "<", "end")``  a cross-field comparison (``<``, ``<=``, ``>``, ``>=``, ``==``, ``!=``)
``implies(("urgency", "==", 5),    "urgency 5 requires category != other"
  ("category", "!=", "other"))``
``in_range("score", 0, 1)``        a range the vendor did not enforce
``member_of("evidence[*]",         every value at the path is in ``context["retrieved_ids"]``
  "retrieved_ids")``
``non_empty()``                    the answer (or the value at a path) is not ``{}``, ``[]``, ``""`` or null
``exit_status("status")``          ``status`` other than ``answered`` ends the call as a typed
                                   :class:`~guardrail.errors.Declined` outcome, never as an answer
=================================  ==================================================================

Each rule says what a failure does: ``on_fail="feedback"`` (default) sends the violations back to the model in
the same feedback message as parse errors; ``on_fail="end"`` ends the call (:class:`~guardrail.SemanticRejected`).
Paths are dotted names with ``[n]`` and ``[*]`` (``items[*].sku``); ``$`` is the whole value.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from guardrail.errors import ConfigError, RuleError
from guardrail.parse.report import Violation, json_path

__all__ = ["Rule", "Verdict", "Violation", "evaluate", "exit_status", "implies", "in_range", "member_of",
           "non_empty", "relation", "rule", "select"]

OnFail = Literal["feedback", "end"]
_OPS: dict[str, Callable[[Any, Any], bool]] = {"<": operator.lt, "<=": operator.le, ">": operator.gt,
                                                ">=": operator.ge, "==": operator.eq, "!=": operator.ne}
_PART = re.compile(r"\[(\d+|\*)\]|\.?([^.\[\]]+)")


@dataclass(frozen=True, slots=True)
class Rule:
    """A named check with its failure policy; ``kind="exit"`` rules route non-answers (see :func:`exit_status`)."""

    name: str
    check: Callable[[Any, Mapping[str, Any]], Any]
    on_fail: OnFail = "feedback"
    kind: Literal["check", "exit"] = "check"

    def __call__(self, value: Any, context: Mapping[str, Any]) -> list[Violation]:
        """The violations of ``value``; :class:`~guardrail.errors.RuleError` if the rule cannot be evaluated."""
        try:
            found = self.check(value, context)
        except RuleError:
            raise
        except Exception as exc:
            raise RuleError(self.name, f"raised {type(exc).__name__}: {exc}") from exc
        return _violations(found, self.name)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the gate found: violations to feed back, whether the call must end, and a non-answer status."""

    violations: tuple[Violation, ...] = ()
    end: bool = False
    declined: str | None = None
    #: The names of the rules that failed, in order (metrics count rejections per rule).
    failed: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations and self.declined is None


def evaluate(rules: Iterable[Rule], value: Any, context: Mapping[str, Any]) -> Verdict:
    """Run every rule over ``value``; an exit rule that fires wins (the answer is a typed non-answer)."""
    found: list[Violation] = []
    failed: list[str] = []
    end = False
    for each in rules:
        problems = each(value, context)
        if each.kind == "exit" and problems:
            return Verdict(tuple(problems), False, problems[0].message, (each.name,))
        if problems:
            found.extend(problems)
            failed.append(each.name)
            end = end or each.on_fail == "end"
    return Verdict(tuple(found), end, None, tuple(failed))


def rule(fn: Callable[[Any, Mapping[str, Any]], Any] | None = None, *, name: str | None = None,
         on_fail: OnFail = "feedback") -> Any:
    """Make a :class:`Rule` from a callable ``(value, context)``; usable bare or with keywords."""
    def make(check: Callable[[Any, Mapping[str, Any]], Any]) -> Rule:
        return Rule(name or str(getattr(check, "__name__", "rule")), check, on_fail)
    return make(fn) if fn is not None else make


def _violations(found: Any, name: str) -> list[Violation]:
    if found is None or found is True:
        return []
    if found is False:
        return [Violation("$", f"the answer breaks the rule {name!r}")]
    if isinstance(found, (Violation, str)):
        found = [found]
    return [item if isinstance(item, Violation) else Violation("$", str(item)) for item in found]


# -- paths --------------------------------------------------------------------------------------------------


_PATH_SYNTAX = re.compile(r"\$?(\.?[^.\[\]]+|\[(\d+|\*)\])*")


def check_path_syntax(path: str) -> str:
    """``path`` if it is well-formed (``a.b[0].c``, ``items[*].sku``, ``$``); ValueError otherwise."""
    if path in {"", "$"} or _PATH_SYNTAX.fullmatch(path):
        return path
    raise ConfigError(f"malformed rule path {path!r}: use names, [n] and [*], like items[*].sku")


def select(value: Any, path: str) -> list[tuple[str, Any]]:
    """Every (JSON path, value) the path names; missing members are skipped. ``$`` is the whole value."""
    current: list[tuple[list[str | int], Any]] = [([], value)]
    if path in {"", "$"}:
        return [("$", value)]
    for index, name in _PART.findall(path.removeprefix("$").removeprefix(".")):
        nxt: list[tuple[list[str | int], Any]] = []
        for loc, item in current:
            if name:
                child = _member(item, name)
                if child is not _MISSING:
                    nxt.append(([*loc, name], child))
            elif index == "*" and isinstance(item, (list, tuple)):
                nxt.extend(([*loc, i], child) for i, child in enumerate(item))
            elif index.isdigit() and isinstance(item, (list, tuple)) and int(index) < len(item):
                nxt.append(([*loc, int(index)], item[int(index)]))
        current = nxt
    return [(json_path(loc), item) for loc, item in current]


_MISSING: Any = object()


def _member(item: Any, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name, _MISSING)
    if hasattr(type(item), "model_fields") or hasattr(type(item), "__dataclass_fields__"):
        return getattr(item, name, _MISSING)
    return _MISSING


def _plain(value: Any) -> Any:
    return value.value if hasattr(value, "value") and type(value).__module__ != "builtins" and \
        hasattr(type(value), "__members__") else value


def _compare(left: Any, op: str, right: Any) -> bool:
    try:
        return bool(_OPS[op](_plain(left), _plain(right)))
    except TypeError:
        return False


# -- built-ins ----------------------------------------------------------------------------------------------


def relation(left: str, op: str, right: str, *, on_fail: OnFail = "feedback", message: str | None = None) -> Rule:
    """``left op right`` between two fields (``relation("start", "<", "end")``)."""
    if op not in _OPS:
        raise ConfigError(f"unknown operator {op!r}; use one of {', '.join(_OPS)}")
    check_path_syntax(left)
    check_path_syntax(right)

    def check(value: Any, context: Mapping[str, Any]) -> list[Violation]:
        lefts, rights = select(value, left), select(value, right)
        if not lefts or not rights:
            return []
        (lpath, lval), (_, rval) = lefts[0], rights[0]
        if _compare(lval, op, rval):
            return []
        return [Violation(lpath, message or f"must be {op} {right} ({_show(rval)}), got {_show(lval)}")]

    return Rule(f"{left} {op} {right}", check, on_fail)


def implies(when: tuple[str, str, Any], then: tuple[str, str, Any], *, on_fail: OnFail = "feedback",
            message: str | None = None) -> Rule:
    """If ``when`` holds then ``then`` must: ``implies(("urgency", "==", 5), ("category", "!=", "other"))``."""
    for _, op, _ in (when, then):
        if op not in _OPS:
            raise ConfigError(f"unknown operator {op!r}")

    def check(value: Any, context: Mapping[str, Any]) -> list[Violation]:
        cond = select(value, when[0])
        if not cond or not _compare(cond[0][1], when[1], when[2]):
            return []
        target = select(value, then[0])
        if target and _compare(target[0][1], then[1], then[2]):
            return []
        path = target[0][0] if target else json_path([then[0]])
        return [Violation(path, message or f"when {when[0]} {when[1]} {_show(when[2])}, {then[0]} must be "
                                           f"{then[1]} {_show(then[2])}")]

    return Rule(f"{when} implies {then}", check, on_fail)


def in_range(path: str, minimum: float | None = None, maximum: float | None = None, *,
             on_fail: OnFail = "feedback") -> Rule:
    """Every number at ``path`` lies in ``[minimum, maximum]`` (NaN never does)."""
    check_path_syntax(path)
    def check(value: Any, context: Mapping[str, Any]) -> list[Violation]:
        out = []
        for where, item in select(value, path):
            number = isinstance(item, (int, float)) and not isinstance(item, bool) and item == item  # NaN is not
            if not number or (minimum is not None and item < minimum) or (maximum is not None and item > maximum):
                out.append(Violation(where, f"must be between {minimum} and {maximum}, got {_show(item)}"))
        return out

    return Rule(f"{path} in [{minimum}, {maximum}]", check, on_fail)


def member_of(path: str, context_key: str, *, on_fail: OnFail = "feedback", what: str = "a known id") -> Rule:
    """Every value at ``path`` is in ``context[context_key]`` (ids that must exist, evidence actually retrieved)."""
    check_path_syntax(path)
    def check(value: Any, context: Mapping[str, Any]) -> list[Violation]:
        allowed = context.get(context_key)
        if allowed is None:
            raise RuleError(f"{path} in context[{context_key!r}]",
                            f"needs context[{context_key!r}]: pass context={{{context_key!r}: ...}} with the call")
        known = set(allowed) if not isinstance(allowed, (str, bytes)) else {allowed}
        return [Violation(where, f"{_show(item)} is not {what}; use only values given in the input")
                for where, item in select(value, path) if not _known(_plain(item), known)]

    return Rule(f"{path} in context[{context_key!r}]", check, on_fail)


def _known(item: Any, known: set[Any]) -> bool:
    try:
        return item in known
    except TypeError:  # an object or array where an id belongs is not a known id
        return False


def non_empty(path: str = "$", *, on_fail: OnFail = "feedback") -> Rule:
    """The value at ``path`` is not null, ``{}``, ``[]``, ``""`` (nor a model whose every field is empty)."""
    def check(value: Any, context: Mapping[str, Any]) -> list[Violation]:
        out = []
        for where, item in select(value, path) or [(json_path([path]) if path != "$" else "$", None)]:
            data = item.model_dump() if hasattr(item, "model_dump") else item
            if data in (None, "", [], {}) or (isinstance(data, dict) and all(v in (None, "", [], {})
                                                                              for v in data.values())):
                out.append(Violation(where, "is empty; give the actual content"))
        return out

    return Rule(f"non_empty({path})", check, on_fail)


def exit_status(path: str = "status", answered: Iterable[str] = ("answered",)) -> Rule:
    """A status field other than ``answered`` (``refused``, ``unknown``...) makes the result a typed
    :class:`~guardrail.errors.Declined` outcome carrying the status, never an answer."""
    ok = {str(a) for a in answered}

    def check(value: Any, context: Mapping[str, Any]) -> list[Violation]:
        found = select(value, path)
        if not found:
            return []
        where, status = found[0]
        status = _plain(status)
        return [] if str(status) in ok else [Violation(where, str(status))]

    return Rule(f"exit_status({path})", check, "end", "exit")


def _show(value: Any) -> str:
    value = _plain(value)
    text = repr(value) if isinstance(value, str) else "null" if value is None else str(value)
    return text if len(text) <= 60 else text[:57] + "..."
