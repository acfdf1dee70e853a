"""Calibrated choices: a :class:`Calibration` fitted on labelled cases maps the probabilities ``choose`` reads
from a model to probabilities that mean what they say (of the answers given with confidence 0.8, about 80% are
right), so a ``threshold`` acts on a frequency, not on a model's habit of over- or under-confidence.

Two kinds, both fitted here in plain Python (no scipy):

* **temperature** (one number ``T``): every option's probability becomes ``p ** (1 / T)``, renormalised, i.e.
  ``softmax(log p / T)``. ``T > 1`` softens an overconfident model, ``T < 1`` sharpens an underconfident one.
  Fitted by minimising the negative log-likelihood of the labels; the NLL is convex in ``1 / T``, so a
  golden-section search over ``log(1 / T)`` finds its minimum (``T`` is searched in ``[1e-3, 1e3]``). It keeps
  the options' order strictly, so it never changes the best option.
* **isotonic** (a non-decreasing map of the best option's probability to the share of right answers):
  pool-adjacent-violators over ``(confidence, was it right)`` pairs, then linear interpolation between the
  fitted points (flat beyond the first and last). It calibrates the *top* probability, the one a threshold
  acts on: the best option gets ``f(p_best)`` and the other options share the rest in proportion to their
  probabilities (evenly when they had none). ``f(p_best)`` is raised, if need be, to the least value that
  keeps the best option the most probable (``p_2 / (1 - p_best + p_2)``), so calibrating never changes the
  answer.

A calibration is saved as a small JSON file (:meth:`Calibration.save`, :meth:`Calibration.load`) that
``guardrail.choose(..., calibration=PATH_OR_CALIBRATION)`` applies before its threshold; a file that is not one
raises :class:`~guardrail.errors.CalibrationError`. ``guardrail calibrate`` fits and reports one over a
``CASES.jsonl`` file (:mod:`guardrail.evals.calibrate`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from guardrail.errors import CalibrationError

__all__ = ["Calibration", "CalibrationKind", "fit_temperature", "isotonic_points", "resolve"]

#: The kinds of calibration (see the module docstring).
CalibrationKind = Literal["temperature", "isotonic"]
KINDS: tuple[CalibrationKind, ...] = ("temperature", "isotonic")
#: The kind fitted when none is named.
DEFAULT_KIND: CalibrationKind = KINDS[0]
#: The file's format marker and version.
FORMAT = "guardrail.calibration"
VERSION = 1
#: The range the temperature is searched in.
T_MIN, T_MAX = 1e-3, 1e3
#: A log-probability floor for fitting (log 1e-300): a label read at probability 0 costs much, not infinitely.
_LOG_FLOOR = math.log(1e-300)


@dataclass(frozen=True, slots=True)
class Calibration:
    """A fitted calibration for ``choose``'s probabilities (see the module docstring).

    ``kind`` is ``"temperature"`` (with ``temperature``) or ``"isotonic"`` (with ``points``, ``(confidence,
    calibrated)`` pairs, both non-decreasing, in [0, 1]); ``cases`` is how many labelled cases it was fitted on.
    Build one with :meth:`fit` (or directly), keep it with :meth:`save`, read it back with :meth:`load`.
    """

    kind: CalibrationKind
    temperature: float = 1.0
    points: tuple[tuple[float, float], ...] = ()
    cases: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise CalibrationError(f"calibration kind must be one of {', '.join(KINDS)}, not {self.kind!r}")
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
            raise CalibrationError(f"temperature must be a positive finite number, not {t!r}")
        if self.kind == "isotonic":
            _check_points(self.points)
        if isinstance(self.cases, bool) or not isinstance(self.cases, int) or self.cases < 0:
            raise CalibrationError(f"cases must be a whole number >= 0, not {self.cases!r}")

    # -- fitting ---------------------------------------------------------------------------------------------

    @classmethod
    def fit(cls, distributions: Sequence[Mapping[str, float]], labels: Sequence[str],
            kind: CalibrationKind = DEFAULT_KIND) -> Calibration:
        """Fit ``kind`` on labelled judgments: ``distributions[i]`` is what ``choose`` gave for case ``i``
        (``Choice.probabilities``), ``labels[i]`` the right option. :class:`CalibrationError`
        without cases, with a label that is not an option, or an unknown kind."""
        if kind not in KINDS:
            raise CalibrationError(f"calibration kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if len(distributions) != len(labels) or not distributions:
            raise CalibrationError(f"fitting needs one label per distribution and at least one case "
                                   f"({len(distributions)} distributions, {len(labels)} labels)")
        for number, (distribution, label) in enumerate(zip(distributions, labels, strict=True), 1):
            if label not in distribution:
                raise CalibrationError(f"case {number}: label {label!r} is not one of its options")
        if kind == "temperature":
            logs = [[_log(p) for p in d.values()] for d in distributions]
            index = [list(d).index(label) for d, label in zip(distributions, labels, strict=True)]
            return cls("temperature", temperature=fit_temperature(logs, index), cases=len(labels))
        confidences = [max(d.values()) for d in distributions]
        right = [_best(d) == label for d, label in zip(distributions, labels, strict=True)]
        return cls("isotonic", points=isotonic_points(confidences, right), cases=len(labels))

    # -- applying --------------------------------------------------------------------------------------------

    def apply(self, probabilities: Mapping[str, float]) -> dict[str, float]:
        """The calibrated distribution (same options, same order, summing to 1, the same best option)."""
        if self.kind == "temperature":
            return _temper(probabilities, self.temperature)
        return self._isotonic(probabilities)

    def confidence(self, p: float) -> float:
        """The calibrated probability of a best option read at ``p`` (isotonic: the fitted map, before the
        floor that keeps the best option first; temperature: not defined for one number alone, ``p``)."""
        if self.kind == "temperature":
            return p
        return _interpolate(self.points, p)

    def _isotonic(self, probabilities: Mapping[str, float]) -> dict[str, float]:
        options = list(probabilities)
        best = _best(probabilities)
        others = [o for o in options if o != best]
        rest = math.fsum(probabilities[o] for o in others)
        second = max((probabilities[o] for o in others), default=0.0)
        floor = second / (rest + second) if rest > 0 else 1.0 / len(options)
        top = min(1.0, max(self.confidence(probabilities[best]), floor))
        out = {}
        for option in options:
            if option == best:
                out[option] = top
            elif rest > 0:
                out[option] = (1.0 - top) * (probabilities[option] / rest)  # the share first: no underflow
            else:
                out[option] = (1.0 - top) / len(others)
        return out

    def describe(self) -> str:
        """One line for a person: ``temperature scaling, T = 3.02`` or ``isotonic, 12 points``."""
        if self.kind == "temperature":
            return f"temperature scaling, T = {self.temperature:.4g}"
        return f"isotonic, {len(self.points)} points"

    # -- files -----------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The JSON form :meth:`save` writes."""
        data: dict[str, Any] = {"format": FORMAT, "version": VERSION, "kind": self.kind, "cases": self.cases}
        if self.kind == "temperature":
            data["temperature"] = self.temperature
        else:
            data["points"] = [[x, y] for x, y in self.points]
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Calibration:
        """Read :meth:`to_dict`'s form; :class:`CalibrationError` for anything else."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise CalibrationError(f"not a guardrail calibration (expected a JSON object with \"format\": "
                                   f"\"{FORMAT}\")")
        if data.get("version") != VERSION:
            raise CalibrationError(f"calibration version {data.get('version')!r} is not supported (this guardrail "
                                   f"reads version {VERSION})")
        kind = data.get("kind")
        cases = data.get("cases", 0)
        if kind == "temperature":
            return cls("temperature", temperature=data.get("temperature"), cases=cases)  # type: ignore[arg-type]
        if kind == "isotonic":
            raw = data.get("points")
            if not isinstance(raw, list) or not all(isinstance(p, list) and len(p) == 2 for p in raw):
                raise CalibrationError("isotonic calibration needs \"points\": a list of [confidence, calibrated]")
            return cls("isotonic", points=tuple((p[0], p[1]) for p in raw), cases=cases)
        raise CalibrationError(f"calibration kind must be one of {', '.join(KINDS)}, not {kind!r}")

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the calibration as JSON to ``path`` (:class:`CalibrationError` if it cannot be written)."""
        try:
            Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            raise CalibrationError(f"{os.fspath(path)}: cannot be written: {error.strerror or error}") from None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Calibration:
        """Read a calibration file; :class:`CalibrationError` naming the file for a missing, unreadable, non-JSON
        or malformed one."""
        name = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or error
            raise CalibrationError(f"{name}: cannot be read: {reason}") from None
        try:
            data = json.loads(text)
        except ValueError as error:
            raise CalibrationError(f"{name}: not JSON ({error})") from None
        try:
            return cls.from_dict(data)
        except CalibrationError as error:
            raise CalibrationError(f"{name}: {error}") from None


def resolve(calibration: Calibration | str | os.PathLike[str] | None) -> Calibration | None:
    """``choose``'s ``calibration`` argument as a :class:`Calibration` (a path is loaded)."""
    if calibration is None or isinstance(calibration, Calibration):
        return calibration
    if isinstance(calibration, (str, os.PathLike)):
        return Calibration.load(calibration)
    raise CalibrationError(f"calibration must be a guardrail.local.Calibration or the path of its JSON file, not "
                           f"{type(calibration).__name__}")


# -- temperature ---------------------------------------------------------------------------------------------

def _log(p: float) -> float:
    return math.log(p) if p > 0 else -math.inf


def _best(probabilities: Mapping[str, float]) -> str:
    return max(probabilities, key=lambda o: probabilities[o])


def _logsumexp(values: Sequence[float]) -> float:
    top = max(values)
    if top == -math.inf:
        return -math.inf
    return top + math.log(math.fsum(math.exp(v - top) for v in values))


def _temper(probabilities: Mapping[str, float], temperature: float) -> dict[str, float]:
    logs = [_log(p) / temperature for p in probabilities.values()]
    total = _logsumexp(logs)
    if not math.isfinite(total):  # every option at 0: nothing to temper
        return dict(probabilities)
    return {option: math.exp(s - total) for option, s in zip(probabilities, logs, strict=True)}


def _nll(beta: float, logs: Sequence[Sequence[float]], labels: Sequence[int]) -> float:
    total = 0.0
    for row, label in zip(logs, labels, strict=True):
        scaled = [beta * max(s, _LOG_FLOOR) for s in row]
        total += _logsumexp(scaled) - scaled[label]
    return total


def fit_temperature(logs: Sequence[Sequence[float]], labels: Sequence[int], *, tolerance: float = 1e-9) -> float:
    """The temperature ``T`` minimising the negative log-likelihood of ``labels`` under ``softmax(logs / T)``.

    ``logs[i]`` are case ``i``'s log-probabilities (or logits: only differences matter); ``labels[i]`` the index
    of its right option. Golden-section search over ``log(1/T)`` in ``[log 1e-3, log 1e3]`` (the NLL is convex in
    ``1/T``, so unimodal there); a minimum at an end of the range returns that end.
    """
    lo, hi = math.log(1 / T_MAX), math.log(1 / T_MIN)
    ratio = (math.sqrt(5) - 1) / 2
    a, b = lo + (1 - ratio) * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = _nll(math.exp(a), logs, labels), _nll(math.exp(b), logs, labels)
    while hi - lo > tolerance:
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = lo + (1 - ratio) * (hi - lo)
            fa = _nll(math.exp(a), logs, labels)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = _nll(math.exp(b), logs, labels)
    return 1.0 / math.exp((lo + hi) / 2)


# -- isotonic ------------------------------------------------------------------------------------------------

def isotonic_points(x: Sequence[float], y: Sequence[float | bool]) -> tuple[tuple[float, float], ...]:
    """The least-squares non-decreasing fit of ``y`` on ``x`` (pool adjacent violators), as the points
    ``(x, fitted y)`` at each distinct ``x`` where the fit bends (the points between which it is linear)."""
    if len(x) != len(y) or not x:
        raise CalibrationError("isotonic fitting needs as many outcomes as confidences, at least one")
    pairs = sorted(zip(x, (float(v) for v in y), strict=True))
    # distinct x, with the sum and count of their y
    xs: list[float] = []
    sums: list[float] = []
    counts: list[int] = []
    for xi, yi in pairs:
        if xs and xs[-1] == xi:
            sums[-1] += yi
            counts[-1] += 1
        else:
            xs.append(xi)
            sums.append(yi)
            counts.append(1)
    # blocks of adjacent distinct x: (one past the last index, sum of y, count); merge while a block's mean is
    # not above the one before it
    ends: list[int] = []
    totals: list[float] = []
    sizes: list[int] = []
    for i, (total, size) in enumerate(zip(sums, counts, strict=True)):
        ends.append(i + 1)
        totals.append(total)
        sizes.append(size)
        while len(ends) > 1 and totals[-2] / sizes[-2] >= totals[-1] / sizes[-1]:
            end, total_, size_ = ends.pop(), totals.pop(), sizes.pop()
            ends[-1], totals[-1], sizes[-1] = end, totals[-1] + total_, sizes[-1] + size_
    fitted: list[float] = []
    start = 0
    for end, total, size in zip(ends, totals, sizes, strict=True):
        fitted += [min(1.0, max(0.0, total / size))] * (end - start)
        start = end
    points = [(xs[i], fitted[i]) for i in range(len(xs))]
    # keep only the points where the fit bends (the ends, and where the value changes on either side)
    kept = [p for i, p in enumerate(points)
            if i in (0, len(points) - 1) or points[i - 1][1] != p[1] or points[i + 1][1] != p[1]]
    return tuple(kept)


def _interpolate(points: Sequence[tuple[float, float]], p: float) -> float:
    if p <= points[0][0]:
        return points[0][1]
    if p >= points[-1][0]:
        return points[-1][1]
    lo, hi = 0, len(points) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if points[mid][0] <= p:
            lo = mid
        else:
            hi = mid
    (x0, y0), (x1, y1) = points[lo], points[hi]
    return y0 + (y1 - y0) * (p - x0) / (x1 - x0) if x1 > x0 else y1


def _check_points(points: Any) -> None:
    if not isinstance(points, tuple) or not points:
        raise CalibrationError("isotonic calibration needs at least one (confidence, calibrated) point")
    previous = (-math.inf, -math.inf)
    for point in points:
        if not (isinstance(point, tuple) and len(point) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in point)):
            raise CalibrationError(f"an isotonic point is a pair of numbers in [0, 1], not {point!r}")
        if point[0] <= previous[0] or point[1] < previous[1]:
            raise CalibrationError("isotonic points must increase in confidence and never decrease in value")
        previous = point
