"""Canary rollout: a share of traffic to a new prompt, contract or model, rolled back when it fails more.

:mod:`.rollout` is the :class:`Canary` that stands in for two clients, functions, chains or tiers;
:mod:`.routing` picks the arm (stable by key, else a seeded draw); :mod:`.ledger` keeps the shared counts and the
decision in a store; :mod:`.stats` is the test that decides; :mod:`.observe` logs, traces and counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.canary.rollout import Canary, CanaryStatus
    from guardrail.canary.stats import Tally, Verdict, decide

_NAMES: dict[str, str] = {
    "Canary": "guardrail.canary.rollout",
    "CanaryStatus": "guardrail.canary.rollout",
    "decide": "guardrail.canary.stats",
    "Tally": "guardrail.canary.stats",
    "Verdict": "guardrail.canary.stats",
}

__all__ = ["Canary", "CanaryStatus", "Tally", "Verdict", "decide"]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
