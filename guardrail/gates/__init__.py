"""The semantic gate a validated value passes after parsing: rules over its meaning (:mod:`.semantic`).

The permission gate for tool calls lives with the tools, in :mod:`guardrail.tools.authz`. Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.gates.semantic import (
        Rule,
        Verdict,
        evaluate,
        exit_status,
        implies,
        in_range,
        member_of,
        non_empty,
        relation,
        rule,
    )

_NAMES: dict[str, str] = {
    "evaluate": "guardrail.gates.semantic",
    "exit_status": "guardrail.gates.semantic",
    "implies": "guardrail.gates.semantic",
    "in_range": "guardrail.gates.semantic",
    "member_of": "guardrail.gates.semantic",
    "non_empty": "guardrail.gates.semantic",
    "relation": "guardrail.gates.semantic",
    "Rule": "guardrail.gates.semantic",
    "rule": "guardrail.gates.semantic",
    "Verdict": "guardrail.gates.semantic",
}

__all__ = [
    "Rule",
    "Verdict",
    "evaluate",
    "exit_status",
    "implies",
    "in_range",
    "member_of",
    "non_empty",
    "relation",
    "rule",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
