"""Reading a checker's options as a policy file gives them (shared by the URL and SQL checkers)."""

from __future__ import annotations

from collections.abc import Collection

from guardrail.errors import ConfigError


def string_set(values: object, what: str) -> frozenset[str]:
    """``values`` as a set of strings; ``ConfigError`` (a ``ValueError``) naming ``what`` (``"URL policy hosts"``)
    when it is a lone string or not a collection of strings (the policy loader reports it as a problem of the
    policy file)."""
    if isinstance(values, str | bytes) or not isinstance(values, Collection):
        raise ConfigError(f"{what} must be a collection of str, not {type(values).__name__}")
    if not all(isinstance(value, str) for value in values):
        raise ConfigError(f"{what} must contain only str")
    return frozenset(values)
