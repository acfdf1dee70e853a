"""Lazy package namespaces (PEP 562): a package lists its public names and the module each lives in.

``import guardrail`` (or one of its subpackages) then costs almost nothing: a name's module is imported the
first time the name is read, and the value is kept in the package namespace so later reads are plain lookups.
Every lazy package (``guardrail``, ``guardrail.call``, ``guardrail.chain``, ``guardrail.gates``,
``guardrail.observe``, ``guardrail.schema``, ``guardrail.testing``, ``guardrail.tools``, ``guardrail.tools.policy``,
``guardrail.vendors``) builds its ``__getattr__``/``__dir__`` here, so they all behave the same. A name that maps to
the package's own submodule of that name (``"reply": "guardrail.testing.reply"``) is that submodule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def namespace(package: str, namespace: dict[str, Any],
              names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` whose public ``names`` map to their modules."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = import_module(module) if module == f"{package}.{name}" else getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
