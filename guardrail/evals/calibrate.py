"""How well ``guardrail.choose``'s probabilities are calibrated on labelled cases, and what to do about it
(``guardrail calibrate``).

Cases: one JSON object per line of a ``CASES.jsonl`` file: ``{"prompt": "...", "options": ["a", "b", ...],
"label": "a"}``, optional ``"id"`` (the line number otherwise). :func:`score_cases` runs ``choose`` on each (no
threshold, no calibration); :func:`build_report` measures the probabilities, fits a
:class:`~guardrail.local.Calibration` (or applies a given one) and measures them again.

The figures, on the *top* probability (the best option's, the one a threshold acts on):

* ``accuracy``: the share of cases whose best option is the label. A case whose API reply named no option
  (``NoOptionMatched``) counts as wrong here and is left out of the other figures (it has no judgment).
* ``ece``: expected calibration error with ``bins`` equal-width bins over [0, 1] (a confidence of exactly 1 falls
  in the last): ``sum over bins of (cases in bin / cases) * |accuracy in bin - mean confidence in bin|``.
* ``brier``: the multi-class Brier score, ``mean over cases of sum over options of (p - [option is the label])**2``
  (0 is perfect, 2 the worst).
* ``nll``: the mean negative log-likelihood of the labels (a label at probability 0 counts as ``-log 1e-300``).
* ``reliability``: per bin, its range, case count, mean confidence and accuracy (the reliability diagram).
* ``threshold``: for ``target_precision``, the lowest threshold ``t`` on the top probability such that, accepting
  only the cases whose top probability is ``>= t`` (as ``choose(threshold=t)`` does), the share of accepted cases
  that are right is ``>= target_precision``; with that precision and its ``coverage`` (accepted / all cases).
  ``None`` when no threshold meets the target. Measured on the same cases (in-sample when the calibration was
  fitted on them: check it on held-out cases with ``guardrail calibrate HELDOUT.jsonl --calibration FILE``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from guardrail.errors import CalibrationError, CommandError, NoOptionMatched
from guardrail.evals.cases import json_objects, read_jsonl
from guardrail.local.calibration import DEFAULT_KIND, Calibration, CalibrationKind

__all__ = ["ChoiceCase", "Scored", "brier", "build_report", "expected_calibration_error", "load_choice_cases",
           "parse_choice_cases", "reliability", "score_cases", "suggest_threshold"]

#: A label read at probability 0 costs -log of this in the NLL (finite, so one such case does not hide the rest).
_TINY = 1e-300


@dataclass(frozen=True, slots=True)
class ChoiceCase:
    """One labelled case: its id, the prompt, the options and the right option."""

    id: str
    prompt: str
    options: tuple[str, ...]
    label: str


@dataclass(frozen=True, slots=True)
class Scored:
    """A case and what ``choose`` gave for it (``None``: the reply named no option)."""

    case: ChoiceCase
    probabilities: Mapping[str, float] | None


def load_choice_cases(path: str | os.PathLike[str]) -> list[ChoiceCase]:
    """The cases of a ``CASES.jsonl`` file; :class:`~guardrail.errors.CommandError` naming the line of the first
    problem (a case that cannot be read is never skipped: the figures would mislead)."""
    return read_jsonl(path, parse_choice_cases)


def parse_choice_cases(lines: Iterable[str], name: str = "cases") -> list[ChoiceCase]:
    """The cases of these JSONL lines (blank lines skipped); see :func:`load_choice_cases`."""
    cases: list[ChoiceCase] = []
    seen: set[str] = set()
    for number, data in json_objects(lines, name):
        where = f"{name}:{number}"
        prompt, options, label = data.get("prompt"), data.get("options"), data.get("label")
        if not isinstance(prompt, str):
            raise CommandError(f"{where}: \"prompt\" must be a string")
        if not isinstance(options, list) or len(options) < 2 or len(set(map(str, options))) != len(options) \
                or not all(isinstance(o, str) and o for o in options):
            raise CommandError(f"{where}: \"options\" must be a list of at least two distinct, non-empty strings")
        if not isinstance(label, str) or label not in options:
            raise CommandError(f"{where}: \"label\" must be one of the options, not {label!r}")
        case_id = str(data.get("id", number))
        if case_id in seen:
            raise CommandError(f"{where}: id {case_id!r} is used twice")
        seen.add(case_id)
        cases.append(ChoiceCase(case_id, prompt, tuple(options), label))
    if not cases:
        raise CommandError(f"{name}: no cases")
    return cases


def score_cases(cases: Sequence[ChoiceCase], backend: Any,
                progress: Callable[[int, int], None] | None = None) -> list[Scored]:
    """``choose`` on every case (no threshold, no calibration), in order."""
    from guardrail.local.choose import choose

    out = []
    for done, case in enumerate(cases, 1):
        try:
            probabilities: Mapping[str, float] | None = choose(case.prompt, case.options, backend=backend).probabilities
        except NoOptionMatched:
            probabilities = None
        out.append(Scored(case, probabilities))
        if progress is not None:
            progress(done, len(cases))
    return out


# -- the figures -------------------------------------------------------------------------------------------------

def _top(probabilities: Mapping[str, float]) -> tuple[str, float]:
    best = max(probabilities, key=lambda o: probabilities[o])
    return best, probabilities[best]


def reliability(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10) -> list[dict[str, Any]]:
    """Per equal-width bin of [0, 1]: ``lo``, ``hi``, ``count``, mean ``confidence`` and ``accuracy`` (``None``
    for an empty bin). A confidence of 1 falls in the last bin."""
    if bins < 1:
        raise CalibrationError(f"bins must be at least 1, not {bins}")
    members: list[list[int]] = [[] for _ in range(bins)]
    for i, confidence in enumerate(confidences):
        members[min(int(confidence * bins), bins - 1)].append(i)
    out = []
    for b, inside in enumerate(members):
        n = len(inside)
        out.append({"lo": b / bins, "hi": (b + 1) / bins, "count": n,
                    "confidence": math.fsum(confidences[i] for i in inside) / n if n else None,
                    "accuracy": sum(bool(correct[i]) for i in inside) / n if n else None})
    return out


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    """ECE with ``bins`` equal-width bins (see the module docstring); 0 for no cases."""
    total = len(confidences)
    if not total:
        return 0.0
    return math.fsum(b["count"] / total * abs(b["accuracy"] - b["confidence"])
                     for b in reliability(confidences, correct, bins) if b["count"])


def brier(distributions: Sequence[Mapping[str, float]], labels: Sequence[str]) -> float:
    """The mean multi-class Brier score; 0 for no cases."""
    if not distributions:
        return 0.0
    return math.fsum(math.fsum((p - (option == label)) ** 2 for option, p in d.items())
                     for d, label in zip(distributions, labels, strict=True)) / len(distributions)


def suggest_threshold(confidences: Sequence[float], correct: Sequence[bool], target: float,
                      total: int | None = None) -> dict[str, Any] | None:
    """The lowest threshold on the top probability whose accepted cases (confidence ``>=`` it) are right at least
    ``target`` of the time: ``{"threshold", "precision", "accepted", "coverage"}`` (coverage over ``total`` cases,
    default all given), or ``None`` when none is."""
    if not 0 < target <= 1:
        raise CalibrationError(f"target precision must be in (0, 1], not {target!r}")
    total = len(confidences) if total is None else total
    order = sorted(range(len(confidences)), key=lambda i: -confidences[i])
    found = None
    accepted = right = 0
    i = 0
    while i < len(order):  # walk down through groups of equal confidence: each is a candidate threshold
        value = confidences[order[i]]
        while i < len(order) and confidences[order[i]] == value:
            accepted += 1
            right += bool(correct[order[i]])
            i += 1
        if right / accepted >= target:
            found = {"threshold": value, "precision": right / accepted, "accepted": accepted,
                     "coverage": accepted / total if total else 0.0}
    return found


def figures(distributions: Sequence[Mapping[str, float]], labels: Sequence[str], *, total: int, bins: int,
            target: float | None, bests: Sequence[str] | None = None) -> dict[str, Any]:
    """accuracy, ece, brier, nll, reliability and the threshold suggestion (see the module docstring).

    ``bests``: each case's chosen option (default: its most probable one; a calibration that ties the best
    option with another keeps the one ``choose`` chose)."""
    if bests is None:
        tops = [_top(d) for d in distributions]
    else:
        tops = [(best, d[best]) for d, best in zip(distributions, bests, strict=True)]
    confidences = [p for _, p in tops]
    correct = [best == label for (best, _), label in zip(tops, labels, strict=True)]
    nll = math.fsum(-math.log(max(d[label], _TINY)) for d, label in zip(distributions, labels, strict=True))
    return {
        "accuracy": sum(correct) / total if total else 0.0,
        "mean_confidence": math.fsum(confidences) / len(confidences) if confidences else None,
        "ece": expected_calibration_error(confidences, correct, bins),
        "brier": brier(distributions, labels),
        "nll": nll / len(distributions) if distributions else None,
        "reliability": reliability(confidences, correct, bins),
        "threshold": None if target is None else suggest_threshold(confidences, correct, target, total),
    }


def build_report(scored: Sequence[Scored], *, bins: int = 10, fit: CalibrationKind | None = DEFAULT_KIND,
                 calibration: Calibration | None = None, target_precision: float | None = None,
                 cases: str | None = None) -> tuple[dict[str, Any], Calibration | None]:
    """The report and the calibration: fitted (``fit``) on the scored cases, or ``calibration`` applied as given
    (to check it on other cases), or none (``fit=None`` and no ``calibration``)."""
    judged = [s for s in scored if s.probabilities is not None]
    raw = [dict(s.probabilities) for s in judged if s.probabilities is not None]
    labels = [s.case.label for s in judged]
    fitted = calibration is None and fit is not None
    if fitted and fit is not None:
        if not raw:
            raise CalibrationError("no case has a judgment (every reply named no option): nothing to fit on")
        calibration = Calibration.fit(raw, labels, fit)
    report: dict[str, Any] = {
        "cases": cases,
        "count": len(scored),
        "judged": len(judged),
        "no_option_matched": len(scored) - len(judged),
        "bins": bins,
        "target_precision": target_precision,
        "definitions": {
            "ece": f"expected calibration error of the top probability over {bins} equal-width bins of [0, 1]",
            "brier": "mean over cases of the sum over options of (p - [option is the label])^2",
            "threshold": "lowest t such that the cases with top probability >= t are right >= target_precision "
                         "of the time; coverage = those cases / all cases",
        },
        "raw": figures(raw, labels, total=len(scored), bins=bins, target=target_precision),
        "calibration": None if calibration is None else calibration.to_dict(),
        "fitted": fitted,
        "calibrated": None,
    }
    if calibration is not None:
        tuned = [calibration.apply(d) for d in raw]
        report["calibrated"] = figures(tuned, labels, total=len(scored), bins=bins, target=target_precision,
                                       bests=[_top(d)[0] for d in raw])
    return report, calibration
