"""``Problem``: one thing wrong in a configuration file (policy files, rule sets), with where and what.

Shared by the policy loader and the rule-set loader so both checks (``guardrail policy check``,
``guardrail rules check``) report problems the same way.
"""

from __future__ import annotations

from typing import NamedTuple


class Problem(NamedTuple):
    """One thing wrong in a file: where (file, line or ``None``, key) and what. A plain tuple too."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key or '(file)'}: {self.message}"
