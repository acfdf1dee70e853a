"""The error tree drawn in ``guardrail/errors.py``'s docstring is the real one, both ways.

Every module of the package is imported (``pkgutil.walk_packages``) and every exception class (a
``BaseException`` subclass) defined in it is collected. The drawing is read back: a line with a connector
(``├──``/``└──``) or starting at the left edge of a block names a class; its parent is the nearest line above it one
level up; ``[module]`` is the module under ``guardrail`` that defines it (``errors`` when absent) and
``(also a ValueError)`` a builtin it also subclasses. Then:

- every public class is drawn, with the module that defines it;
- every drawn class exists, its first base is the drawn parent (``Exception`` for a root), and its other bases are
  exactly the builtins drawn as ``(also ...)``;
- every error (not a warning) is a ``GuardrailError``, defined in ``guardrail/errors.py`` — or internal control
  flow (a ``Signal``), which no ``__all__`` lists;
- a private class (``_Name``) is one module's control flow: it is not drawn, and no other module names it.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

import guardrail
import guardrail.errors
from guardrail.errors import GuardrailError, Signal

ROOT = Path(guardrail.__file__).parent
CLASS_LINE = re.compile(r"^(?P<prefix>(?:[│ ]   )*)(?:[├└]── )(?P<name>\w+)(?P<rest>.*)$")
ROOT_LINE = re.compile(r"^(?P<name>[A-Za-z]\w*)(?P<rest>.*)$")


@dataclass(frozen=True)
class Drawn:
    name: str
    parent: str
    module: str
    also: frozenset[str]


def defined_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in guardrail, by ``module:qualname``."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(guardrail.__path__, "guardrail."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == info.name:
                found[f"{value.__module__}:{value.__qualname__}"] = value
    return found


def drawn_blocks(doc: str) -> list[list[str]]:
    """The literal blocks (after a line ending in ``::``) of the docstring, without their 4-space indent."""
    blocks: list[list[str]] = []
    lines = doc.splitlines()
    for index, line in enumerate(lines):
        if not line.endswith("::"):
            continue
        block: list[str] = []
        for body in lines[index + 1:]:
            if body and not body.startswith("    "):
                break
            block.append(body[4:])
        blocks.append([line for line in block if line.strip()])
    return blocks


def read_drawing(doc: str) -> list[Drawn]:
    drawn: list[Drawn] = []
    for block in drawn_blocks(doc):
        stack: list[str] = []  # the ancestors of the line being read, by depth
        for line in block:
            match = CLASS_LINE.match(line)
            if match:
                depth = len(match["prefix"]) // 4 + 1
            else:
                match = ROOT_LINE.match(line)
                if match is None:
                    continue  # a description continued from the line above
                depth = 0
            assert depth <= len(stack), f"{match['name']} is drawn deeper than its parent's child"
            del stack[depth:]
            rest = match["rest"]
            where = re.search(r"\[([\w.]+)\]", rest)
            drawn.append(Drawn(name=match["name"], parent=stack[-1] if stack else "Exception",
                               module=where[1] if where else "errors",
                               also=frozenset(re.findall(r"\(also an? (\w+)\)", rest))))
            stack.append(match["name"])
    return drawn


DOC = guardrail.errors.__doc__ or ""
DRAWN = read_drawing(DOC)
CLASSES = defined_exceptions()


def test_the_drawing_reads_back() -> None:
    names = [d.name for d in DRAWN]
    assert "GuardrailError" in names and "CallError" in names and len(names) > 40
    assert len(names) == len(set(names)), "a class is drawn twice"
    by_name = {d.name: d for d in DRAWN}
    assert by_name["DeadlineExceeded"].parent == "VendorUnavailable"
    grammar = Drawn("GrammarError", "GuardrailError", "errors", frozenset({"ValueError"}))
    assert by_name["GrammarError"] == grammar
    assert by_name["Stop"] == Drawn("Stop", "Signal", "parse.lexer", frozenset())


def test_every_public_exception_class_is_drawn_with_its_module() -> None:
    drawn = {(f"guardrail.{d.module}", d.name) for d in DRAWN}
    public = {(cls.__module__, cls.__qualname__) for cls in CLASSES.values() if not cls.__qualname__.startswith("_")}
    missing = sorted(f"{module}:{name}" for module, name in public - drawn)
    assert not missing, f"not drawn in guardrail/errors.py (or drawn with another module): {missing}"


def test_every_drawn_class_exists_with_the_drawn_parent_and_builtins() -> None:
    problems: list[str] = []
    for d in DRAWN:
        cls = CLASSES.get(f"guardrail.{d.module}:{d.name}")
        if cls is None:
            builtin = getattr(builtins, d.name, None)
            if not (d.parent == "Exception" and isinstance(builtin, type) and issubclass(builtin, BaseException)):
                problems.append(f"{d.name}: drawn, but guardrail.{d.module} defines no such exception")
            continue
        first, *others = cls.__bases__
        if first.__name__ != d.parent:
            problems.append(f"{d.name}: drawn under {d.parent}, but its first base is {first.__name__}")
        if {base.__name__ for base in others} != d.also or any(base.__module__ != "builtins" for base in others):
            problems.append(f"{d.name}: drawn also as {sorted(d.also)}, but its other bases are "
                            f"{[base.__qualname__ for base in others]}")
    assert not problems, "\n".join(problems)


def test_every_error_is_a_guardrail_error() -> None:
    outside = sorted(key for key, cls in CLASSES.items()
                     if not issubclass(cls, (GuardrailError, Signal, Warning)) and not cls.__qualname__.startswith("_"))
    assert not outside


def test_every_public_error_is_defined_in_errors_and_importable_from_there() -> None:
    public = {key: cls for key, cls in CLASSES.items() if not cls.__qualname__.startswith("_")}
    elsewhere = sorted(key for key, cls in public.items()
                       if issubclass(cls, GuardrailError) and cls.__module__ != "guardrail.errors")
    assert not elsewhere, f"define these in guardrail/errors.py: {elsewhere}"
    unlisted = sorted(cls.__qualname__ for cls in public.values()
                      if issubclass(cls, GuardrailError) and cls.__qualname__ not in guardrail.errors.__all__)
    assert not unlisted, f"missing from guardrail.errors.__all__: {unlisted}"


def test_internal_control_flow_is_in_no_all() -> None:
    """A Signal is raised and caught inside guardrail: no namespace offers it to users."""
    signals = {cls for cls in CLASSES.values() if issubclass(cls, Signal)}
    assert {cls.__name__ for cls in signals} >= {"Stop", "BadResponse", "Uncacheable"}
    listed = []
    for info in pkgutil.walk_packages(guardrail.__path__, "guardrail."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        listed += [f"{info.name}.{name}" for name in getattr(module, "__all__", ())
                   if any(getattr(module, name, None) is signal for signal in signals)]
    assert not listed

def test_private_exception_classes_stay_in_their_module() -> None:
    private = {cls.__qualname__: cls.__module__ for cls in CLASSES.values() if cls.__qualname__.startswith("_")}
    assert private, "the collection found no private control-flow class; the walk is broken"
    leaks: list[str] = []
    for path in sorted(ROOT.rglob("*.py")):
        module = ".".join(("guardrail", *path.relative_to(ROOT).with_suffix("").parts)).removesuffix(".__init__")
        names = {node.id for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.Name)}
        names |= {node.attr for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(node, ast.Attribute)}
        leaks += [f"{module} names {name} (defined in {home})" for name, home in private.items()
                  if name in names and module != home]
    assert not leaks, leaks


def _misuse_cases() -> list[tuple[str, object, type[Exception]]]:
    """Programmer misuse at a few public entry points: (what, a call raising, the builtin it must still be)."""
    from guardrail import Budget, Chain, RetryPolicy, choose
    from guardrail.parse import Limits
    from guardrail.schema.lower import lower
    from guardrail.testing import Emulator

    return [
        ("Budget(max_cost=...) without a price", lambda: Budget(max_cost=1.0), ValueError),
        ("lower() of a non-mapping", lambda: lower([], "openai"), TypeError),  # type: ignore[arg-type]
        ("lower() with an unknown dialect", lambda: lower({}, "nope"), ValueError),  # type: ignore[arg-type]
        ("a chain tier that is not a tier", lambda: Chain([object()]), TypeError),
        ("choose() with one option", lambda: choose("q", ["only"], backend=object()), ValueError),
        ("RetryPolicy(max_tries=0)", lambda: RetryPolicy(max_tries=0), ValueError),
        ("Limits(max_bytes=0)", lambda: Limits(max_bytes=0), ValueError),
        ("the address of an emulator not started", lambda: Emulator().base_url, RuntimeError),
    ]


def test_programmer_misuse_is_a_guardrail_error_and_still_the_builtin() -> None:
    from guardrail.errors import ConfigError, NotReady, UsageError

    expected_for = {TypeError: UsageError, ValueError: ConfigError, RuntimeError: NotReady}

    for what, call, builtin in _misuse_cases():
        try:
            call()  # type: ignore[operator]
        except Exception as error:  # what escapes, whatever it is
            expected = expected_for[builtin]
            assert isinstance(error, expected) and isinstance(error, builtin), \
                f"{what}: {type(error).__module__}.{type(error).__qualname__}: {error}"
        else:
            raise AssertionError(f"{what}: nothing raised")


def test_the_names_before_0_3_are_the_same_classes() -> None:
    """Renamed to stop clashing with a neighbour (OutputTruncated, RuleError); old code keeps working."""
    from guardrail.errors import RulesError, RuleSetError, TruncatedError, TruncatedJSONError

    assert TruncatedError is TruncatedJSONError and guardrail.TruncatedError is TruncatedJSONError
    assert RulesError is RuleSetError
    assert "TruncatedError" not in guardrail.__all__ and "RulesError" not in guardrail.errors.__all__
