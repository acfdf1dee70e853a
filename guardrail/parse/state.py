"""The state one parse run threads through its stages, and the limits it runs under.

A stage is a plain callable ``(ParseState) -> ParseState``; it reads what earlier stages left and adds its
part. Keeping the whole run in one object is what lets the default stage list be an ordinary list that a
user can copy, reorder or extend.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from guardrail.contract import Contract
from guardrail.errors import ConfigError
from guardrail.parse.fences import Segment
from guardrail.parse.report import Candidate, ParseReport

#: The most ``Limits.max_depth`` may be: the stages walk values recursively, one frame per level.
MAX_DEPTH: Final = 200


@dataclass(frozen=True, slots=True)
class Limits:
    """Caps enforced before any work is done on a text; exceeding one is an :class:`InputLimitError`.

    The defaults are far above any honest model output (a 128k-token answer is about 0.5 MB) and bound
    the work an adversarial text can cause: the search never costs more than linear time, and the
    slowest linear paths (a reply of tens of thousands of objects that all need renaming or coercing)
    run at a few hundred KB per second, so 2 MiB is a few seconds at worst.

    Attributes:
        max_bytes: largest accepted text, in UTF-8 bytes (default 2 MiB).
        max_depth: deepest accepted nesting of objects and arrays (default 200, at most 200: the
            stages walk values recursively).
        max_candidates: most JSON values (or attempts at one) and fenced blocks one text may hold
            (default 1000); honest answers hold a handful (a long report may cite ``[1]`` ... ``[300]``),
            a flood of tiny values or failing openers is refused before each is read.
    """

    max_bytes: int = 2 * 1024 * 1024
    max_depth: int = MAX_DEPTH
    max_candidates: int = 1000

    def __post_init__(self) -> None:
        if self.max_bytes < 1:
            raise ConfigError("max_bytes must be positive")
        if self.max_candidates < 1:
            raise ConfigError("max_candidates must be positive")
        if not 1 <= self.max_depth <= MAX_DEPTH:
            raise ConfigError(f"max_depth must be between 1 and {MAX_DEPTH}")


@dataclass(slots=True)
class ParseState:
    """Everything a parse run knows so far. Stages read and extend it in order."""

    text: str
    contract: Contract[Any]
    aliases: Mapping[str, str]
    limits: Limits
    segments: list[Segment] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    report: ParseReport[Any] = field(init=False)

    def __post_init__(self) -> None:
        self.report = ParseReport(text=self.text, candidates=self.candidates)


Stage = Callable[[ParseState], ParseState]
