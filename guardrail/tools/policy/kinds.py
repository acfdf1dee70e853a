"""Argument kinds: how a tool says "this parameter is a file path / a URL / SQL" so that a policy must check it.

A parameter annotated with :data:`PathArg`, :data:`UrlArg` or :data:`SqlArg` (or typed ``pathlib.Path`` /
a pydantic URL type), also inside ``list[...]``, ``Optional[...]`` or a nested model, must have a matching
``path``/``url``/``sql`` constraint in the tool's policy: a policy that forgets one is a load error, not a
tool that opens whatever the model names. Each marker is plain ``str`` to pydantic and to the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

__all__ = ["ArgKind", "PathArg", "SqlArg", "UrlArg"]


@dataclass(frozen=True, slots=True)
class ArgKind:
    """Annotation metadata naming the checker an argument needs."""

    kind: Literal["path", "url", "sql"]


#: A file path: the policy needs ``path = { base = ... }``; the tool receives the resolved path.
PathArg = Annotated[str, ArgKind("path")]
#: A URL: the policy needs ``url = { hosts = [...] }``; the tool receives the normalised URL.
UrlArg = Annotated[str, ArgKind("url")]
#: One SQL statement: the policy needs ``sql = { allow = [...] }``; the tool receives the text that was parsed.
SqlArg = Annotated[str, ArgKind("sql")]
