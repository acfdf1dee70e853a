"""``Problem``: one thing wrong in a configuration file (policy files, rule sets), with where and what.

Shared by the policy loader and the rule-set loader so both checks (``guardrail policy check``,
``guardrail rules check``) report problems the same way, with :class:`Locator` finding the line a key is
written on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, NamedTuple, TextIO


class Problem(NamedTuple):
    """One thing wrong in a file: where (file, line or ``None``, key) and what. A plain tuple too."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.key or '(file)'}: {self.message}"


class Locator:
    """Finds the line a key path such as ``rules[2].when.pattern`` or ``defaults.urgency`` is written on.

    Best effort over the raw text: TOML does not keep positions, and a line number is what makes an error
    message actionable. Sections are split at ``[table]`` / ``[[array]]`` headers; within the section that
    holds the key, the first ``key =`` (bare, quoted, dotted or inside an inline table) wins; failing that, the
    section's header line.
    """

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]*?)\s*\]\]?\s*(?:#.*)?$")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        #: (header name, is array, first line number 1-based, index among same-name arrays)
        self.sections: list[tuple[str, bool, int, int]] = [("", False, 1, 0)]
        counts: dict[str, int] = {}
        for number, line in enumerate(self.lines, 1):
            match = self._HEADER.match(line)
            if match:
                name = match.group(2).replace('"', "").replace(" ", "")
                array = match.group(1) == "[["
                index = counts.get(name, 0)
                if array:
                    counts[name] = index + 1
                self.sections.append((name, array, number, index))

    def _span(self, position: int) -> tuple[int, int]:
        start = self.sections[position][2]
        end = self.sections[position + 1][2] if position + 1 < len(self.sections) else len(self.lines) + 1
        return start, end

    def _find(self, start: int, end: int, names: list[str]) -> int | None:
        """The first line in ``[start, end)`` assigning the dotted key ``names`` (or its last part)."""
        if not names:
            return None
        for candidate in (".".join(names), names[-1]):
            parts = [re.escape(part) for part in candidate.split(".")]
            key = r'"?\s*\.\s*"?'.join(parts)
            pattern = re.compile(rf'(?:^|[{{,\s.])"?{key}"?\s*=')
            for number in range(start, min(end, len(self.lines) + 1)):
                if pattern.search(self.lines[number - 1].split("#", 1)[0]):
                    return number
        return None

    def line(self, key: str) -> int | None:
        """The line of ``key`` (``""`` for the whole file gives ``None``)."""
        if not key:
            return None
        match = re.match(r"^(\w+)\[(\d+)\]\.?(.*)$", key)
        if match:
            array, index, rest = match.group(1), int(match.group(2)), match.group(3)
            for position, (name, is_array, number, nth) in enumerate(self.sections):
                if name == array and is_array and nth == index:
                    start, end = self._span(position)
                    # sub-tables such as [rules.when] belong to the rule too
                    while position + 1 < len(self.sections) and self.sections[position + 1][0].startswith(f"{array}."):
                        position += 1
                        end = self._span(position)[1]
                    found = self._find(start + 1, end, rest.split(".")) if rest else None
                    return found or number
            return None
        names = key.split(".")
        # a [table] header for the key or a prefix of it: search the rest inside that section
        for depth in range(len(names), 0, -1):
            header = ".".join(names[:depth])
            for position, (name, _array, number, _nth) in enumerate(self.sections):
                if name == header:
                    start, end = self._span(position)
                    return self._find(start + 1, end, names[depth:]) or number
        start, end = self._span(0)
        return self._find(start, end, names)

    def line_of(self, loc: Sequence[Any]) -> int | None:
        """The line of a pydantic error location such as ``("allow", 0, "when", "roles")``."""
        parts: list[str] = []
        for part in loc:
            if isinstance(part, int):
                if len(parts) == 1 and "[" not in parts[0]:
                    parts[-1] += f"[{part}]"  # an array of tables at the top level: allow[0]
            else:
                parts.append(str(part))
        return self.line(".".join(parts))


def print_check(
    found: Sequence[str],
    problems: Sequence[Problem],
    *,
    noun: tuple[str, str],
    key: str,
    as_json: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    """Print a check's result the way ``guardrail policy check`` and ``guardrail rules check`` both do; the exit code.

    Each problem goes to ``err`` as ``file:line: key: message`` and a summary to ``out``
    (``2 valid policies (a, b); 1 problem``); with ``as_json``, one object ``{"ok", key: found, "problems"}`` goes
    to ``out`` instead. ``noun`` is the singular and plural of what was found (``("policy", "policies")``).
    Returns 1 when there is any problem, else 0.
    """
    if as_json:
        report = {"ok": not problems, key: sorted(found), "problems": [problem._asdict() for problem in problems]}
        print(json.dumps(report, indent=2, ensure_ascii=False), file=out)
    else:
        for problem in problems:
            print(str(problem), file=err)
        names = ", ".join(sorted(found)) or "none"
        valid = noun[0] if len(found) == 1 else noun[1]
        trouble = "problem" if len(problems) == 1 else "problems"
        print(f"{len(found)} valid {valid} ({names}); {len(problems)} {trouble}", file=out)
    return 1 if problems else 0
