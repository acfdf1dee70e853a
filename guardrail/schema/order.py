"""Field order as the model writes it: a reasoning field placed after the answer fields reasons too late.

Models write a JSON object's members in schema order, so a free-text field meant for the model's reasoning
(``reasoning``, ``rationale``, ``chain_of_thought``, ...) helps only when it comes before the fields it should
lead to. :func:`late_reasoning` finds every object whose reasoning-like property follows an answer property;
``guardrail schema`` prints a warning for each. ``reason_first="field"`` on a call (:mod:`guardrail.call.reasoning`)
adds such a field in first place for you, and ``reason_first="two_stage"`` reasons in a request of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["REASONING_NAMES", "LateReasoning", "is_reasoning", "late_reasoning"]

#: Property names taken for reasoning: these words alone or as the last part of a snake/camel-case name
#: (``step_by_step_reasoning``, ``finalRationale``), any case.
REASONING_NAMES = ("reasoning", "rationale", "thinking", "thoughts", "thought", "chain_of_thought", "scratchpad",
                   "analysis", "explanation", "justification")
_REASONING = re.compile(r"(?:^|_)(?:" + "|".join(REASONING_NAMES) + r")$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class LateReasoning:
    """A reasoning property (``path``, a JSON pointer) that follows the answer properties ``after``."""

    path: str
    name: str
    after: tuple[str, ...]

    def __str__(self) -> str:
        names = ", ".join(repr(name) for name in self.after)
        return (f"{self.path}: {self.name!r} comes after {names}; the model writes fields in schema order, so it "
                f"would reason after answering: put {self.name!r} first, or drop it and call with "
                f"reason_first='field' or 'two_stage' (guardrail.call.reasoning)")


def is_reasoning(name: str) -> bool:
    """Whether a property name reads as a reasoning field."""
    return _REASONING.search(_CAMEL.sub("_", name).lower()) is not None


def late_reasoning(schema: Mapping[str, Any]) -> list[LateReasoning]:
    """Every reasoning-like property of ``schema`` (at any depth, ``$defs`` included) that comes after a
    property that is not one, in document order."""
    found: list[LateReasoning] = []
    pending: list[tuple[Any, str]] = [(schema, "")]
    while pending:
        node, path = pending.pop()
        if isinstance(node, Mapping):
            properties = node.get("properties")
            if isinstance(properties, Mapping):
                answers: list[str] = []
                for name in properties:
                    if not isinstance(name, str):
                        continue
                    if not is_reasoning(name):
                        answers.append(name)
                    elif answers:
                        found.append(LateReasoning(f"{path}/properties/{_escape(name)}", name, tuple(answers)))
            for key, value in reversed(list(node.items())):
                pending.append((value, f"{path}/{_escape(str(key))}"))
        elif isinstance(node, list):
            for index in range(len(node) - 1, -1, -1):
                pending.append((node[index], f"{path}/{index}"))
    return found


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
