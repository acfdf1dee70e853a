"""The experiment report: the figures of each mode x model run, and of each slice of its cases.

Per run (one entry of ``"runs"``), and again per slice under ``"slices"``:

=======================  ===========================================================================================
``cases``                cases run
``skipped_budget``       cases the run-wide budget left unstarted (not in ``cases`` nor any other figure)
``valid``                cases that gave a value: ``clean`` + ``locally_repaired`` + ``reasked``
``clean``                valid from the first answer with no repair
``locally_repaired``     valid after local fixes of the first answer, no re-ask
``reasked``              valid after one re-ask or more (a feedback round, a raised token limit)
``failed``               no value; ``failures`` counts them by kind (``gave_up``, ``Refused``, ``VendorUnavailable``...)
``vendor_calls``         HTTP requests sent, transport retries included
``input_tokens``,        tokens billed, every attempt included
``output_tokens``
``cost_usd``             what the cases cost (``genai-prices``, the ``cost`` extra); ``null`` when any case's price is
                         unknown, never a partial sum; ``cost_per_valid_usd`` the same per valid case
``latency_p50_s``,       each case's wall time (every attempt, retry and wait), nearest-rank percentiles
``latency_p99_s``
``semantic_rejections``  answers a semantic rule rejected, by rule (one answer can break several)
``empty_but_valid``      valid values that hold no content (every string, list and object empty, every leaf null)
``expected_cases``       cases with an ``expected`` value; ``exact_match`` the share whose value equals it exactly,
                         ``field_accuracy`` the share right per top-level field (a failed case is wrong everywhere);
                         both ``null`` without expected values
=======================  ===========================================================================================

Over every run, ``"suggestions"``: the drifted field names the parse layer renamed (case drift), most frequent
first, as a ready ``aliases=`` table, and per repair kind how many answers carried it and how many were accepted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from guardrail.evals.run import CaseResult

__all__ = ["build_report", "figures", "suggestions"]


def figures(results: Sequence[CaseResult]) -> dict[str, Any]:
    """The figures of these case results (see the module docstring); cases the budget left unstarted count only
    in ``skipped_budget``."""
    skipped = sum(1 for result in results if not result.ran)
    results = [result for result in results if result.ran]
    outcomes = Counter(result.outcome for result in results)
    valid = len(results) - outcomes["failed"]
    costs = [result.cost_usd for result in results]
    cost = None if any(each is None for each in costs) else sum(each for each in costs if each is not None)
    seconds = sorted(result.seconds for result in results)
    rejections: Counter[str] = Counter()
    for result in results:
        rejections.update(result.rejections)
    with_expected = [result for result in results if result.exact is not None]
    fields: dict[str, list[bool]] = {}
    for result in with_expected:
        for name, right in (result.fields or {}).items():
            fields.setdefault(name, []).append(right)
    return {
        "cases": len(results),
        "skipped_budget": skipped,
        "valid": valid,
        "clean": outcomes["clean"],
        "locally_repaired": outcomes["locally_repaired"],
        "reasked": outcomes["reasked"],
        "failed": outcomes["failed"],
        "failures": dict(sorted(Counter(r.failure or "unknown" for r in results if not r.valid).items())),
        "vendor_calls": sum(result.vendor_calls for result in results),
        "input_tokens": sum(result.input_tokens for result in results),
        "output_tokens": sum(result.output_tokens for result in results),
        "cost_usd": cost,
        "cost_per_valid_usd": cost / valid if cost is not None and valid else None,
        "latency_p50_s": _percentile(seconds, 0.50),
        "latency_p99_s": _percentile(seconds, 0.99),
        "semantic_rejections": dict(sorted(rejections.items())),
        "empty_but_valid": sum(1 for result in results if result.valid and result.empty),
        "expected_cases": len(with_expected),
        "exact_match": (sum(1 for r in with_expected if r.exact) / len(with_expected)) if with_expected else None,
        "field_accuracy": {name: sum(rights) / len(rights) for name, rights in sorted(fields.items())} or None,
    }


def _percentile(ordered: Sequence[float], share: float) -> float | None:
    """The nearest-rank percentile of sorted numbers; ``None`` for none."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def suggestions(results: Sequence[CaseResult]) -> dict[str, Any]:
    """What the fixes suggest, over every run: the drifted field names seen, most frequent first, as a ready alias
    table (``aliases=``), and per repair kind how many answers carried it and how many of those were accepted."""
    renamed: Counter[tuple[str, str]] = Counter()
    repairs: dict[str, list[int]] = {}
    for result in results:
        renamed.update((before, after) for before, after in result.renames)
        for kind, (answers, accepted) in result.repairs.items():
            seen = repairs.setdefault(kind, [0, 0])
            seen[0] += answers
            seen[1] += accepted
    ranked = sorted(renamed.items(), key=lambda item: (-item[1], item[0]))
    return {"aliases": {before: after for (before, after), _ in ranked},
            "drifted_names": [{"from": before, "to": after, "seen": seen} for (before, after), seen in ranked],
            "repairs": {kind: {"answers": answers, "accepted": accepted, "rate": accepted / answers}
                        for kind, (answers, accepted) in sorted(repairs.items())}}


def build_report(results: Sequence[CaseResult], **about: Any) -> dict[str, Any]:
    """The JSON report: ``about`` (contract, cases file, prompt version...), then one entry per mode x model run in
    ``"runs"``, each with its figures and ``"slices"`` (the same figures per slice, when the cases have slices),
    and ``"suggestions"`` drawn from the fixes (:func:`suggestions`). ``"cut_by_budget"`` says the run-wide
    budget left cases unstarted, ``"skipped_budget"`` how many (over every run)."""
    runs: dict[tuple[str, str], list[CaseResult]] = {}
    for result in results:
        runs.setdefault((result.mode, result.model), []).append(result)
    entries = []
    for (mode, model), found in runs.items():
        slices: dict[str, list[CaseResult]] = {}
        for result in found:
            if result.slice is not None:
                slices.setdefault(result.slice, []).append(result)
        entries.append({"mode": mode, "model": model, **figures(found),
                        "slices": {name: figures(part) for name, part in sorted(slices.items())}})
    skipped = sum(1 for result in results if not result.ran)
    return {**about, "cut_by_budget": skipped > 0, "skipped_budget": skipped, "runs": entries,
            "suggestions": suggestions(results)}
