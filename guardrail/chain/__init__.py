"""Degrading gracefully:
a chain of tiers (vendor, backup vendor, local model, rule engine, safe default), each held to the same contract.

:mod:`.tiers` runs the chain, :mod:`.breaker` keeps a circuit breaker per tier, :mod:`.fallback` is the
deterministic rule engine of the last-but-one tier.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.chain.breaker import CircuitBreaker, SharedCircuitBreaker
    from guardrail.chain.tiers import (
        Chain,
        ChainExhausted,
        ChainResult,
        Departure,
        Tier,
        local,
        rule_engine,
        safe_default,
        vendor,
    )

_NAMES: dict[str, str] = {
    "Chain": "guardrail.chain.tiers",
    "ChainExhausted": "guardrail.errors",
    "ChainResult": "guardrail.chain.tiers",
    "CircuitBreaker": "guardrail.chain.breaker",
    "Departure": "guardrail.chain.tiers",
    "local": "guardrail.chain.tiers",
    "rule_engine": "guardrail.chain.tiers",
    "safe_default": "guardrail.chain.tiers",
    "SharedCircuitBreaker": "guardrail.chain.breaker",
    "Tier": "guardrail.chain.tiers",
    "vendor": "guardrail.chain.tiers",
}

__all__ = [
    "Chain",
    "ChainExhausted",
    "ChainResult",
    "CircuitBreaker",
    "Departure",
    "SharedCircuitBreaker",
    "Tier",
    "local",
    "rule_engine",
    "safe_default",
    "vendor",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
