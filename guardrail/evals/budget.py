"""The run-wide budget of an experiment (``guardrail eval --budget-usd X --budget-tokens N``).

A :class:`~guardrail.outcome.Budget` caps one call's attempts; here its ``max_tokens`` and ``max_usd`` cap the
whole run. Before each case starts, what the finished cases spent (input + output tokens, dollars) is compared
with the caps: once a cap is reached, no case starts, and the cases left are reported as ``skipped_budget``.
Calls already in flight finish (stopping them would throw away answers already paid for), so a run may pass the
budget by what at most ``--concurrency`` cases spend; with ``--concurrency 1``, by one case. A case whose price
is unknown makes the spend unknown, and a dollar cap is never assumed kept: no case starts after it.
"""

from __future__ import annotations

from guardrail.errors import UsageError
from guardrail.outcome import Budget, Usage

__all__ = ["RunBudget"]


class RunBudget:
    """What a run has spent against its ``budget`` (``max_tokens``, ``max_usd``; ``max_cost`` is per call)."""

    def __init__(self, budget: Budget) -> None:
        if budget.max_cost is not None:
            raise UsageError("a run-wide budget caps tokens (max_tokens) and dollars (max_usd), not max_cost")
        if budget.max_tokens is None and budget.max_usd is None:
            raise UsageError("a run-wide budget needs max_tokens and/or max_usd")
        self.budget = budget
        self.used = Usage()
        self.usd: float | None = 0.0

    def add(self, input_tokens: int, output_tokens: int, usd: float | None) -> None:
        """Count a finished case's tokens and dollars (``None``: its price is unknown)."""
        self.used = self.used + Usage(input_tokens, output_tokens)
        self.usd = None if usd is None or self.usd is None else self.usd + usd

    def spent(self) -> bool:
        """Whether the budget is reached: no case may start."""
        if self.budget.tokens_left(self.used) <= 0:
            return True
        return self.budget.max_usd is not None and (self.usd is None or self.usd >= self.budget.max_usd)
