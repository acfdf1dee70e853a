"""When a canary is decided: a one-sided confidence bound on how much worse the candidate's failure rate is.

Each arm's outcomes are a count of calls and a count of failures (:class:`Tally`). The quantity judged is the
difference of failure rates, candidate minus control, in absolute terms (``margin=0.02`` means two percentage
points). Its confidence interval is Newcombe's hybrid score interval (Newcombe 1998, method 10), built from each
arm's Wilson score interval, which stays sound at small counts and at rates of 0 or 1, where the plain normal
(Wald) interval collapses to a point. Only the standard library is used: ``z`` is
``statistics.NormalDist().inv_cdf(confidence)``, one-sided.

- **rollback** when the lower bound of the difference is above ``margin``: the candidate fails more than control
  by more than the margin, with the stated confidence (a one-sided test of ``p_candidate - p_control <= margin``);
- **promote** (only when asked, ``promote_after``) when the candidate has at least that many calls and the upper
  bound of the difference is below ``margin``: the candidate is not worse by the margin (non-inferiority);
- otherwise **continue**. Nothing is decided before both arms have ``min_samples`` calls.

Two properties hold exactly (tested with hypothesis): a candidate whose failure rate is at most control's is never
rolled back (the lower bound is at most the observed difference, which is then ``<= 0 <= margin``), and the lower
bound never falls as the candidate's failures rise (more failures never turn a rollback into a continue).

The decision is re-evaluated after every candidate outcome, so the chance of a false rollback over a long run is
higher than ``1 - confidence`` (repeated looks); ``min_samples`` and a tight ``confidence`` keep it small, and a
rollback is the safe direction to err in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from guardrail.errors import ConfigError

__all__ = ["Tally", "Verdict", "decide", "difference_bounds", "wilson"]

Action = Literal["continue", "rollback", "promote"]


@dataclass(frozen=True, slots=True)
class Tally:
    """One arm's outcomes so far: ``calls`` judged and how many of them ``failures``."""

    calls: int
    failures: int

    def __post_init__(self) -> None:
        if self.calls < 0 or not 0 <= self.failures <= self.calls:
            raise ConfigError(f"a tally needs 0 <= failures <= calls, got {self.failures} of {self.calls}")

    @property
    def rate(self) -> float:
        """The failure rate (0.0 with no calls)."""
        return self.failures / self.calls if self.calls else 0.0


@dataclass(frozen=True, slots=True)
class Verdict:
    """What :func:`decide` concluded: the ``action``, the bounds of candidate-minus-control failure rate at the
    stated confidence (``lower``, ``upper``), and the reason in words (for logs and the decision record)."""

    action: Action
    lower: float
    upper: float
    reason: str


def wilson(failures: int, calls: int, z: float) -> tuple[float, float]:
    """The Wilson score interval of a failure rate (each side at one-sided level ``z``); ``(0, 1)`` with no calls."""
    if calls == 0:
        return 0.0, 1.0
    p = failures / calls
    denominator = 1 + z * z / calls
    centre = p + z * z / (2 * calls)
    spread = z * math.sqrt(p * (1 - p) / calls + z * z / (4 * calls * calls))
    # the interval always holds p; min/max keep that true where rounding would put a bound a hair past it
    return max(0.0, min(p, (centre - spread) / denominator)), min(1.0, max(p, (centre + spread) / denominator))


def difference_bounds(control: Tally, candidate: Tally, z: float) -> tuple[float, float]:
    """Newcombe's hybrid score bounds of ``candidate.rate - control.rate`` (each one-sided at level ``z``)."""
    low1, high1 = wilson(candidate.failures, candidate.calls, z)
    low2, high2 = wilson(control.failures, control.calls, z)
    difference = candidate.rate - control.rate
    lower = difference - math.sqrt((candidate.rate - low1) ** 2 + (high2 - control.rate) ** 2)
    upper = difference + math.sqrt((high1 - candidate.rate) ** 2 + (control.rate - low2) ** 2)
    return lower, upper


def check_settings(margin: float, confidence: float, min_samples: int, promote_after: int | None) -> None:
    """Refuse settings the test cannot mean: a margin outside [0, 1), a confidence outside (0.5, 1), fewer than one
    sample, or a promotion threshold below ``min_samples``."""
    if not (isinstance(margin, int | float) and 0 <= margin < 1):
        raise ConfigError(f"margin is a difference of failure rates in [0, 1), got {margin!r}")
    if not (isinstance(confidence, int | float) and 0.5 < confidence < 1):
        raise ConfigError(f"confidence must be in (0.5, 1), got {confidence!r}")
    if isinstance(min_samples, bool) or not isinstance(min_samples, int) or min_samples < 1:
        raise ConfigError(f"min_samples must be an int >= 1, got {min_samples!r}")
    if promote_after is not None and (isinstance(promote_after, bool) or not isinstance(promote_after, int)
                                      or promote_after < min_samples):
        raise ConfigError(f"promote_after must be an int >= min_samples ({min_samples}), got {promote_after!r}")


def decide(control: Tally, candidate: Tally, *, margin: float, confidence: float, min_samples: int,
           promote_after: int | None = None) -> Verdict:
    """Roll back, promote or continue, from the two arms' tallies (see the module docstring)."""
    check_settings(margin, confidence, min_samples, promote_after)
    z = NormalDist().inv_cdf(confidence)
    lower, upper = difference_bounds(control, candidate, z)
    rates = (f"candidate {candidate.failures}/{candidate.calls} failed vs control "
             f"{control.failures}/{control.calls}")
    if min(control.calls, candidate.calls) < min_samples:
        return Verdict("continue", lower, upper, f"{rates}; fewer than {min_samples} calls on an arm")
    if lower > margin:
        return Verdict("rollback", lower, upper, f"{rates}: worse by at least {lower:.4f} (> margin {margin}) "
                                                 f"at {confidence:.0%} confidence")
    if promote_after is not None and candidate.calls >= promote_after and upper < margin:
        return Verdict("promote", lower, upper, f"{rates}: worse by at most {upper:.4f} (< margin {margin}) "
                                                f"at {confidence:.0%} confidence")
    return Verdict("continue", lower, upper, f"{rates}: difference in [{lower:.4f}, {upper:.4f}]")
