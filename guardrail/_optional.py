"""Importing an optional feature's package, with an error that says which extra brings it.

Vendor SDKs, Redis, local decoding and the like are extras of the ``guardrail-llm`` distribution: a plain
install does not have them, so they are imported where first used, through :func:`require`, never at module
level.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from guardrail.errors import MissingExtra

__all__ = ["require"]


def require(module: str, extra: str, feature: str | None = None) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtra` naming ``pip install 'guardrail-llm[extra]'``.

    Only a missing ``module`` itself (or its top-level package) becomes :class:`MissingExtra`; an installed
    package that fails while importing raises its own error, which is a different problem.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.split(".")[0] != exc.name.split(".")[0]:
            raise
        raise MissingExtra(module, extra, feature or f"this feature ({module})") from None
