"""A policy's ``[limits]``: rate, quota and spend, counted per tool and caller when the tool is about to run.

:func:`over_limits` counts one execution against every limit of the policy in one atomic step, or names the
limit it would pass (then the tool does not run). A replayed result costs nothing: only executions count.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from guardrail.store.base import Counter, Store
from guardrail.tools.identity import Identity, key_of
from guardrail.tools.policy.model import Policy

__all__ = ["over_limits"]


def over_limits(policy: Policy, store: Store, tool: str, args: dict[str, Any], who: Identity | None,
                fn: Callable[..., Any]) -> str | None:
    """The limit a call would pass (``limits.rate``/``quota``/``spend``), else ``None`` (counting the call).

    The spend counts what the tool receives: the amount sent, or the default of an amount the model left out
    (for a tool declared by JSON Schema, the function's own default); a default that is not a number (``None``)
    or no default at all is refused, never counted as nothing.

    Every counter of the call is updated in one atomic step (:meth:`Store.add_within_limits`): a call refused by
    one limit consumes none of the others. Spend is exact: amounts and budgets are :class:`~decimal.Decimal` (a
    float amount by its shortest repr, so ``0.1`` counts as exactly one tenth). The keys share one Redis hash tag.
    """
    tag = "{" + hashlib.sha256(json.dumps([tool, key_of(who)]).encode()).hexdigest()[:32] + "}"
    limits = policy.limits
    counters: list[tuple[str, Counter]] = []
    for label, rate in (("rate", limits.rate), ("quota", limits.quota)):
        if rate is not None:
            counters.append((f"limits.{label}", Counter(f"limits:{tag}:{label}", Decimal(1), Decimal(rate.calls),
                                                        rate.per_seconds)))
    if limits.spend is not None:
        name = limits.spend.arg
        amount = args[name] if name in args else _signature_default(fn, name)
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0 \
                or (isinstance(amount, float) and not math.isfinite(amount)):
            return "limits.spend"
        exact = Decimal(amount) if isinstance(amount, int) else Decimal(repr(amount))
        counters.append(("limits.spend", Counter(f"limits:{tag}:spend", exact,
                                                 Decimal(repr(limits.spend.max)), limits.spend.per_seconds)))
    if not counters:
        return None
    over = store.add_within_limits([counter for _, counter in counters])
    return None if over is None else counters[over][0]


def _signature_default(fn: Callable[..., Any], name: str) -> Any:
    """The default ``fn`` gives its parameter ``name`` when it is not passed, else ``None``."""
    try:
        parameter = inspect.signature(fn).parameters.get(name)
    except (TypeError, ValueError):  # a callable without a signature
        return None
    return None if parameter is None or parameter.default is parameter.empty else parameter.default
