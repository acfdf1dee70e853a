"""No module reaches into another module's private names.

A name starting with one underscore (``_CACHE``, ``_run``, ``_Scanner``; dunders such as ``__version__`` are not
private) belongs to the module that defines it. What another module needs gets a public name in its own module,
or moves. The rule, checked with an ``ast`` walk over every file of ``guardrail/`` and ``tests/``:

1. ``from X import _name`` is refused when ``X`` is another first-party module (a module of the ``guardrail``
   package, or a helper module of ``tests/support/`` such as ``support.redis_server``). Relative imports are
   resolved first.
2. ``X._name`` (any depth: ``guardrail.parse.stages._name``) is refused when ``X`` is bound, by an import, to
   another first-party *module*. Private attributes of classes and instances are not modules' names and are
   outside this rule.
3. So are the string forms of the same reach: ``mock.patch.object(X, "_name")`` and
   ``monkeypatch.setattr(X, "_name", ...)`` on such a module, and ``mock.patch("guardrail.x._name")``.
4. Importing a private *module* is refused too, except the root-level private helper modules
   ``guardrail._version``, ``guardrail._optional`` and ``guardrail._lazy``, which exist to be imported by every
   package (they are private only to keep them off the public surface).

Third-party and standard-library private names (``sys._getframe``, ``typing._SpecialForm``) are outside the rule:
the rule is about guardrail's own boundaries.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "guardrail"
TESTS = REPO / "tests"
ALLOWED_PRIVATE_MODULES = frozenset({"guardrail._version", "guardrail._optional", "guardrail._lazy"})


def module_name(path: Path) -> str:
    """The import name of a file: ``guardrail.parse.stages``; a tests/ file by its path under tests/ (tests/ is on
    ``sys.path``: ``support.calls``)."""
    if path.is_relative_to(TESTS):
        return ".".join(path.relative_to(TESTS).with_suffix("").parts)
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = sorted([*PACKAGE.rglob("*.py"), *TESTS.rglob("*.py")])
FIRST_PARTY = frozenset(module_name(path) for path in FILES)


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def absolute(module: str | None, level: int, here: str, is_package: bool) -> str:
    """The absolute name of ``from <level dots><module> import ...`` written in module ``here``."""
    if not level:
        return module or ""
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def reaches(source: str, here: str, is_package: bool = False) -> list[str]:
    """Every private reach in ``source``, the text of module ``here``, as ``line: what``."""
    tree = ast.parse(source)
    found: list[str] = []
    modules: dict[str, str] = {}  # local name -> the first-party module it is bound to

    def private_module(name: str) -> bool:
        return any(private(part) for part in name.split(".")) and name not in ALLOWED_PRIVATE_MODULES

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in {m.split(".")[0] for m in FIRST_PARTY} and private_module(alias.name):
                    found.append(f"{node.lineno}: import {alias.name}")
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source_module = absolute(node.module, node.level, here, is_package)
            if source_module not in FIRST_PARTY:
                continue
            if private_module(source_module):
                found.append(f"{node.lineno}: from {source_module} import ...")
            for alias in node.names:
                target = f"{source_module}.{alias.name}"
                if target in FIRST_PARTY:  # a submodule
                    if private_module(target):
                        found.append(f"{node.lineno}: from {source_module} import {alias.name}")
                    modules[alias.asname or alias.name] = target
                elif private(alias.name) and source_module != here:
                    found.append(f"{node.lineno}: from {source_module} import {alias.name}")

    def owner(expr: ast.expr) -> str | None:
        """The first-party module ``expr`` names (through an imported binding), else ``None``."""
        chain = dotted(expr)
        if chain is None:
            return None
        head, *rest = chain.split(".")
        if head not in modules:
            return None
        name = ".".join([modules[head], *rest])
        return name if name in FIRST_PARTY else None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            home = owner(node.value)
            if home is not None and home != here:
                found.append(f"{node.lineno}: {home}.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            args = node.args
            if node.func.attr in {"object", "setattr"} and len(args) >= 2 and isinstance(args[1], ast.Constant) \
                    and isinstance(args[1].value, str) and private(args[1].value):
                home = owner(args[0])
                if home is not None and home != here:
                    found.append(f"{node.lineno}: {node.func.attr}({home}, {args[1].value!r})")
            if node.func.attr in {"patch", "setattr"} and args and isinstance(args[0], ast.Constant) \
                    and isinstance(args[0].value, str) and "." in args[0].value:
                target_module, _, attribute = args[0].value.rpartition(".")
                if target_module in FIRST_PARTY and private(attribute) and target_module != here:
                    found.append(f"{node.lineno}: {node.func.attr}({args[0].value!r})")
    return sorted(set(found))


def test_the_rule_finds_each_kind_of_reach() -> None:
    """The checker itself: each form it must refuse is refused, and the allowed forms pass."""
    here = "guardrail.parse.pipeline"
    assert reaches("from guardrail.contract import _CACHE", here) == ["1: from guardrail.contract import _CACHE"]
    assert reaches("from ..contract import _CACHE", here) == ["1: from guardrail.contract import _CACHE"]
    assert reaches("import guardrail.parse.stages as S\nS._bare_reply", here) == [
        "2: guardrail.parse.stages._bare_reply"]
    assert reaches("import guardrail.parse.stages\nguardrail.parse.stages._x()", here) == [
        "2: guardrail.parse.stages._x"]
    assert reaches("from guardrail.parse import scanner\nscanner._Scanner.run", here) == [
        "2: guardrail.parse.scanner._Scanner"]
    assert reaches("from unittest import mock\nimport guardrail.parse.pipeline as P\n"
                   "mock.patch.object(P, '_run')", "tests.test_x") == [
        "3: object(guardrail.parse.pipeline, '_run')"]
    assert reaches("mock.patch('guardrail.call.client._quiet')", "tests.test_x") == [
        "1: patch('guardrail.call.client._quiet')"]
    assert reaches("from support.redis_server import _free_port", "call.test_x") == [
        "1: from support.redis_server import _free_port"]
    # allowed: one's own privates, the root helper modules, dunders, third-party privates, class attributes
    allowed = ("from guardrail.parse.pipeline import _run\n"
               "from guardrail._lazy import namespace\nfrom guardrail import _version\nimport guardrail._optional\n"
               "from guardrail import __version__\nimport sys\nsys._getframe()\n"
               "from guardrail.call.client import WrappedClient\nWrappedClient._rewrap\n")
    assert reaches(allowed, here) == []
    assert reaches("import guardrail._secret", here) == ["1: import guardrail._secret"]


@pytest.mark.parametrize("path", FILES, ids=lambda path: str(path.relative_to(REPO)))
def test_no_module_reaches_into_another_modules_private_names(path: Path) -> None:
    found = reaches(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")
    assert not found, f"{path.relative_to(REPO)} reaches into private names: {found}"


def test_the_allowed_private_modules_are_the_root_helpers() -> None:
    private_modules = {name for name in FIRST_PARTY if name.startswith("guardrail.") and private_module_name(name)}
    assert private_modules == ALLOWED_PRIVATE_MODULES


def private_module_name(name: str) -> bool:
    return any(private(part) for part in name.split("."))
