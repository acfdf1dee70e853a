"""Policies and tools agree, or the policy does not load: every argument a policy names exists, and every
path/URL/SQL argument of the tool has its checker.

:func:`binding_problems` compares one policy with one tool's argument model and lists each disagreement as a
:class:`~guardrail.problems.Problem` with the policy file, the line and the reason (``refund_order has no
parameter card_token``); :func:`bind` raises :class:`~guardrail.tools.policy.loader.PolicyError` with them. A
silent drop (the checks of a misspelt argument never running) is what this prevents.

The rules:

- every ``[args.PATH]`` key, every ``when.PATH`` of an allow, deny or approve rule, every ``after_approval.add``
  and ``limits.spend.arg`` names a
  parameter, or a field of a nested model below one (lists and ``Optional`` are looked through);
- every parameter (or nested field) whose type is a path, URL or SQL kind (:mod:`guardrail.tools.policy.kinds`,
  ``pathlib.Path``, pydantic URL types) has an ``[args.PATH]`` with that checker;
- a ``path``/``url``/``sql`` checker sits on text: a ``str`` (or ``Path``/URL) argument, not an ``int``;
- (JSON Schema tools) a ``check_default`` path the model may leave out has a schema ``default`` to judge;
- a ``changed`` condition needs a tool that gives current values (``@tool(current=...)``).

A tool declared by a JSON Schema (``@tool(schema=...)``) is held to the same rules by
:func:`schema_binding_problems`: paths resolve through ``properties`` (arrays and ``anyOf``/``oneOf``/``allOf``
members looked through), a checker sits on a ``string``, and a ``format: uri`` string needs a ``url`` checker.
"""

from __future__ import annotations

import os
import pathlib
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from guardrail.errors import PolicyError
from guardrail.problems import Locator, Problem
from guardrail.tools.policy.kinds import ArgKind
from guardrail.tools.policy.model import Policy

__all__ = ["bind", "bind_schema", "binding_problems", "declared_kinds", "schema_binding_problems"]

_TEXT = (str, pathlib.PurePath)
_CONTAINERS = (list, tuple, set, frozenset, Sequence, typing.Sequence, typing.List, typing.Tuple)  # noqa: UP006


def _is_url_type(tp: Any) -> bool:
    return isinstance(tp, type) and any(cls.__module__.startswith("pydantic") and "Url" in cls.__name__
                                        for cls in tp.__mro__)


def _unwrap(annotation: Any, metadata: Sequence[Any] = ()) -> Iterator[tuple[Any, frozenset[str]]]:
    """The leaf types of ``annotation`` (Annotated, unions and containers looked through) with the kinds
    their metadata declares."""
    kinds = frozenset(item.kind for item in metadata if isinstance(item, ArgKind))
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        yield from _unwrap(base, [*metadata, *extra])
    elif origin in (typing.Union, types.UnionType):
        for member in typing.get_args(annotation):
            if member is not type(None):
                yield from _unwrap(member, metadata)
    elif origin in _CONTAINERS:
        for member in typing.get_args(annotation):
            if member is not Ellipsis:
                yield from _unwrap(member, metadata)
    else:
        yield annotation, kinds


def _kind_of(leaf: Any, kinds: frozenset[str]) -> set[str]:
    found = set(kinds)
    if isinstance(leaf, type) and (issubclass(leaf, pathlib.PurePath) or leaf is os.PathLike):
        found.add("path")
    if _is_url_type(leaf):
        found.add("url")
    return found


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    return {name: (info.annotation, info.metadata) for name, info in model.model_fields.items()}


def _resolve(model: type[BaseModel], path: str) -> tuple[list[Any] | None, str]:
    """The leaf types at ``path``, or ``None`` and what is missing."""
    current: list[tuple[Any, Sequence[Any]]] = [(model, ())]
    walked = ""
    for index, segment in enumerate(path.split(".")):
        candidates = [leaf for annotation, metadata in current for leaf, _ in _unwrap(annotation, metadata)]
        models = [leaf for leaf in candidates if isinstance(leaf, type) and issubclass(leaf, BaseModel)]
        found = [_fields(leaf)[segment] for leaf in models if segment in leaf.model_fields]
        if not found:
            if index == 0:
                return None, f"has no parameter {segment}"
            if any(leaf is Any for leaf in candidates):
                return [Any], ""  # an untyped value: nothing to check against
            return None, f"parameter {walked} has no field {segment}"
        current = found
        walked = f"{walked}.{segment}" if walked else segment
    return [leaf for annotation, metadata in current for leaf, _ in _unwrap(annotation, metadata)], ""


def declared_kinds(model: type[BaseModel]) -> dict[str, set[str]]:
    """Argument paths of ``model`` whose type is a path, URL or SQL kind, with the kinds."""
    found: dict[str, set[str]] = {}

    def visit(current: type[BaseModel], prefix: str, seen: frozenset[type[BaseModel]]) -> None:
        for name, (annotation, metadata) in _fields(current).items():
            path = f"{prefix}{name}"
            for leaf, kinds in _unwrap(annotation, metadata):
                kind = _kind_of(leaf, kinds)
                if kind:
                    found.setdefault(path, set()).update(kind)
                if isinstance(leaf, type) and issubclass(leaf, BaseModel) and leaf not in seen:
                    visit(leaf, f"{path}.", seen | {leaf})

    visit(model, "", frozenset({model}))
    return found


def _named(policy: Policy) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Every argument path the policy names, with its location in the file (for the line)."""
    for name in policy.args:
        yield name, ("args", name)
    for section in ("allow", "deny", "approve"):
        for index, rule in enumerate(getattr(policy, section)):
            for name in rule.when:
                yield name, (section, index, "when", name)
    for index, add in enumerate(policy.after_approval):
        yield add.add, ("after_approval", index, "add")
    if policy.limits.spend is not None:
        yield policy.limits.spend.arg, ("limits", "spend", "arg")


def _reporter(policy: Policy, where: str) -> Callable[[tuple[Any, ...], str], Problem]:
    """Makes the :class:`Problem` for a location in the policy file (its line) and a message."""
    source, text = policy.source
    locator = Locator(text) if text else None
    suffix = f" (tool defined at {where})" if where else ""

    def problem(loc: tuple[Any, ...], message: str) -> Problem:
        key = ".".join(str(part) for part in loc)
        return Problem(source, locator.line_of(loc) if locator else None, key, message + suffix)

    return problem


def _named_problems(policy: Policy, tool: str, problem: Callable[[tuple[Any, ...], str], Problem],
                    resolve: Callable[[str], tuple[list[Any] | None, str]],
                    not_text: Callable[[list[Any]], str | None]) -> list[Problem]:
    """The checks a model tool and a JSON Schema tool share: every argument the policy names exists (the spend
    argument at the top level), and a text constraint is on text. ``resolve`` finds what stands at a path (or
    says what is missing); ``not_text`` names the types there when they are not all text."""
    problems: list[Problem] = []
    for path, loc in _named(policy):
        found, missing = resolve(path)
        if found is None:
            problems.append(problem(loc, f"{tool} {missing}"))
        elif loc[0] == "limits" and "." in path:
            problems.append(problem(loc, "the spend argument must be a top-level parameter"))
    for path, rule in policy.args.items():
        found, _ = resolve(path)
        shown = None if found is None or not rule.kinds else not_text(found)
        if shown is not None:
            problems.append(problem(("args", path), f"a {'/'.join(sorted(rule.kinds))} constraint on {tool}.{path}, "
                                                    f"which is not text ({shown})"))
    return problems


def _leaves_not_text(leaves: list[Any]) -> str | None:
    if all(leaf is Any or (isinstance(leaf, type) and (issubclass(leaf, _TEXT) or _is_url_type(leaf)))
           for leaf in leaves):
        return None
    return ", ".join(getattr(leaf, "__name__", str(leaf)) for leaf in leaves)


def _changed_problems(policy: Policy, tool: str, problem: Callable[[tuple[Any, ...], str], Problem],
                      current: bool) -> list[Problem]:
    """A ``changed`` condition on a tool that gives no current values would judge nothing."""
    if current:
        return []
    found: list[tuple[Any, ...]] = [("args", name, "changed") for name, rule in policy.args.items()
                                    if rule.changed is not None]
    found += [(section, index, "when", name, "changed") for section in ("allow", "deny", "approve")
              for index, match in enumerate(getattr(policy, section))
              for name, rule in match.when.items() if rule.changed is not None]
    return [problem(loc, f"changed compares with the current values of what {tool} changes, but the tool gives "
                         "none: register it with @tool(current=...)") for loc in found]


def binding_problems(policy: Policy, model: type[BaseModel], tool: str, *, where: str = "",
                     current: bool = False) -> list[Problem]:
    """Every disagreement between ``policy`` and the tool's argument ``model`` (module docstring).
    ``where`` (the tool function's file:line) is added to the messages; ``current`` says whether the tool gives
    current values (its ``current`` hook) for ``changed`` conditions."""
    problem = _reporter(policy, where)
    problems = _named_problems(policy, tool, problem, lambda path: _resolve(model, path), _leaves_not_text)
    problems += _changed_problems(policy, tool, problem, current)
    for path, kinds in sorted(declared_kinds(model).items()):
        declared = policy.args.get(path)
        for kind in sorted(kinds - (declared.kinds if declared is not None else frozenset())):
            problems.append(problem(("args", path) if declared is not None else ("tool",),
                                    f"{tool}.{path} is a {kind} argument but the policy has no "
                                    f"[args.{path}] {kind} constraint"))
    return problems


def bind(policy: Policy, model: type[BaseModel], tool: str, *, where: str = "", current: bool = False) -> None:
    """Raise :class:`~guardrail.tools.policy.loader.PolicyError` listing every :func:`binding_problems` item."""
    problems = binding_problems(policy, model, tool, where=where, current=current)
    if problems:
        raise PolicyError(problems)


_URL_FORMATS = frozenset({"uri", "uri-reference", "iri", "iri-reference", "url"})


def _schema_members(node: Any) -> Iterator[dict[str, Any]]:
    """``node`` and what it stands for: array items and the members of anyOf/oneOf/allOf, looked through."""
    if not isinstance(node, dict):
        return
    yield node
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for member in node.get(key) or ():
            yield from _schema_members(member)
    if isinstance(node.get("items"), dict):
        yield from _schema_members(node["items"])


def _schema_resolve(schema: dict[str, Any], path: str) -> tuple[list[dict[str, Any]] | None, str]:
    """The subschemas at ``path`` of a JSON Schema tool, or ``None`` and what is missing."""
    current = [schema]
    walked = ""
    for index, segment in enumerate(path.split(".")):
        members = [m for node in current for m in _schema_members(node)]
        found = [m["properties"][segment] for m in members if segment in (m.get("properties") or {})]
        if not found:
            if index == 0:
                return None, f"has no parameter {segment}"
            return None, f"parameter {walked} has no field {segment}"
        current = found
        walked = f"{walked}.{segment}" if walked else segment
    return [m for node in current for m in _schema_members(node)], ""


def _nodes_not_text(nodes: list[dict[str, Any]]) -> str | None:
    types_ = {t for node in nodes for t in ([node["type"]] if isinstance(node.get("type"), str)
                                           else node.get("type") or [])}
    return ", ".join(sorted(types_)) if types_ - {"string", "null", "array"} else None


def schema_binding_problems(policy: Policy, schema: dict[str, Any], tool: str, *, where: str = "",
                            current: bool = False) -> list[Problem]:
    """:func:`binding_problems` for a tool whose arguments are a JSON Schema object."""
    problem = _reporter(policy, where)
    problems = _named_problems(policy, tool, problem, lambda path: _schema_resolve(schema, path), _nodes_not_text)
    problems += _changed_problems(policy, tool, problem, current)

    def visit(node: dict[str, Any], prefix: str, depth: int) -> None:
        for member in _schema_members(node):
            for name, sub in (member.get("properties") or {}).items():
                path = f"{prefix}{name}"
                formats = {m.get("format") for m in _schema_members(sub)}
                declared = policy.args.get(path)
                if formats & _URL_FORMATS and (declared is None or "url" not in declared.kinds):
                    problems.append(problem(("args", path) if declared is not None else ("tool",),
                                            f"{tool}.{path} is a URL (format uri) but the policy has no url "
                                            f"checker for it: add [args.{path}] url = {{...}}"))
                if depth < 32 and isinstance(sub, dict):
                    visit(sub, f"{path}.", depth + 1)

    visit(schema, "", 0)
    for path, loc in _default_checks(policy):
        if _schema_resolve(schema, path)[0] is not None and not _schema_default_reaches(schema, path):
            problems.append(problem(loc, f"check_default on {tool}.{path}, but the schema declares no default "
                                         "for it (a left-out value would have nothing to be judged by)"))
    return problems


def _default_checks(policy: Policy) -> Iterator[tuple[str, tuple[Any, ...]]]:
    """Every argument path whose constraint or ``when`` condition says ``check_default``, with its location."""
    for name, rule in policy.args.items():
        if rule.check_default:
            yield name, ("args", name, "check_default")
    for section in ("allow", "deny", "approve"):
        for index, match in enumerate(getattr(policy, section)):
            for name, rule in match.when.items():
                if rule.check_default:
                    yield name, (section, index, "when", name, "check_default")


def _schema_default_reaches(schema: dict[str, Any], path: str) -> bool:
    """Whether every way of leaving out ``path`` (or an object on the way) leaves a schema ``default`` to judge:
    each segment the schema does not require has a ``default`` there, or the segments below it do."""
    current = [schema]
    for segment in path.split("."):
        members = [m for node in current for m in _schema_members(node)]
        subs = [m["properties"][segment] for m in members if segment in (m.get("properties") or {})]
        if any(isinstance(sub, dict) and "default" in sub for sub in subs):
            return True
        if not any(segment in (m.get("required") or ()) for m in members if segment in (m.get("properties") or {})):
            return False
        current = subs
    return True  # required all the way down: never left out


def bind_schema(policy: Policy, schema: dict[str, Any], tool: str, *, where: str = "", current: bool = False) -> None:
    """Raise :class:`~guardrail.tools.policy.loader.PolicyError` listing every :func:`schema_binding_problems` item."""
    problems = schema_binding_problems(policy, schema, tool, where=where, current=current)
    if problems:
        raise PolicyError(problems)
