"""Calibrated choices (:mod:`guardrail.local.calibration`): temperature scaling and isotonic calibration fitted
on synthetic labelled data with a known miscalibration, applied by ``guardrail.choose(calibration=...)``; and
token healing (each option tokenized together with the prompt) for a local model.

The synthetic data: each case has true logits ``z``; its label is drawn from ``softmax(z)`` (so ``softmax(z)`` is
perfectly calibrated), and the model reports ``softmax(3 * z)``: overconfident by a temperature of exactly 3.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import guardrail
from guardrail.errors import CalibrationError, Uncertain
from guardrail.evals.calibrate import expected_calibration_error
from guardrail.local import Calibration, LocalModel
from guardrail.local.calibration import CalibrationKind, fit_temperature, isotonic_points

OPTIONS = ["a", "b", "c", "d"]


def softmax(z: list[float]) -> list[float]:
    top = max(z)
    weights = [math.exp(v - top) for v in z]
    return [w / math.fsum(weights) for w in weights]


def overconfident(count: int, *, factor: float = 3.0, seed: int = 0) -> tuple[list[dict[str, float]], list[str]]:
    """``count`` cases whose labels follow softmax(z) and whose reported probabilities are softmax(factor * z)."""
    rng = random.Random(seed)
    distributions, labels = [], []
    for _ in range(count):
        z = [rng.gauss(0, 1.5) for _ in OPTIONS]
        labels.append(rng.choices(OPTIONS, softmax(z))[0])
        distributions.append(dict(zip(OPTIONS, softmax([factor * v for v in z]), strict=True)))
    return distributions, labels


def top_ece(distributions: list[dict[str, float]], labels: list[str], bests: list[str] | None = None) -> float:
    bests = bests or [max(d, key=lambda o: d[o]) for d in distributions]
    return expected_calibration_error([d[b] for d, b in zip(distributions, bests, strict=True)],
                                      [b == label for b, label in zip(bests, labels, strict=True)], 10)


# -- temperature --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("factor", [3.0, 0.5])
def test_temperature_fitting_recovers_the_known_miscalibration_and_ece_drops(factor: float) -> None:
    distributions, labels = overconfident(4000, factor=factor)
    calibration = Calibration.fit(distributions, labels, "temperature")
    assert calibration.kind == "temperature" and calibration.cases == 4000
    assert calibration.temperature == pytest.approx(factor, rel=0.1)
    fixed = [calibration.apply(d) for d in distributions]
    before, after = top_ece(distributions, labels), top_ece(fixed, labels)
    assert before > 0.05 and after < before / 3, (before, after)
    # the fitted T is the NLL's minimum: a little either side is worse
    logs = [[math.log(p) for p in d.values()] for d in distributions]
    index = [OPTIONS.index(label) for label in labels]

    def nll(t: float) -> float:
        return -math.fsum(math.log(Calibration("temperature", temperature=t).apply(d)[label])
                          for d, label in zip(distributions, labels, strict=True))
    t = fit_temperature(logs, index)
    assert nll(t) < nll(t * 1.05) and nll(t) < nll(t / 1.05)


def test_a_perfectly_calibrated_model_keeps_a_temperature_near_one() -> None:
    distributions, labels = overconfident(4000, factor=1.0, seed=1)
    assert Calibration.fit(distributions, labels).temperature == pytest.approx(1.0, rel=0.1)


PROBABILITIES = st.lists(st.floats(min_value=0, max_value=1), min_size=2, max_size=6).filter(
    lambda ps: sum(ps) > 1e-6).map(lambda ps: [p / math.fsum(ps) for p in ps])


def check_distribution(probabilities: dict[str, float], options: list[str]) -> None:
    assert list(probabilities) == options
    assert all(math.isfinite(p) and 0 <= p <= 1 for p in probabilities.values())
    assert math.fsum(probabilities.values()) == pytest.approx(1, abs=1e-9)


@settings(max_examples=300)
@given(ps=PROBABILITIES, temperature=st.floats(min_value=1e-3, max_value=1e3))
def test_property_temperature_keeps_a_distribution_and_the_order(ps: list[float], temperature: float) -> None:
    options = [f"o{i}" for i in range(len(ps))]
    raw = dict(zip(options, ps, strict=True))
    out = Calibration("temperature", temperature=temperature).apply(raw)
    check_distribution(out, options)
    for x in options:
        for y in options:
            if raw[x] > raw[y]:
                assert out[x] >= out[y]
            if raw[x] == raw[y]:
                assert out[x] == out[y]
    best = max(raw, key=lambda o: raw[o])
    assert max(out, key=lambda o: out[o]) == best


# -- isotonic -----------------------------------------------------------------------------------------------------

def reference_isotonic(x: list[float], y: list[float]) -> dict[float, float]:
    """The isotonic least-squares fit by its min-max formula (independent of PAV): at the i-th distinct x, the
    max over j <= i of the min over k >= i of the mean of y over the distinct x j..k."""
    xs = sorted(set(x))
    groups = [[yi for xi, yi in zip(x, y, strict=True) if xi == value] for value in xs]
    def mean(j: int, k: int) -> float:
        inside = [yi for group in groups[j:k + 1] for yi in group]
        return math.fsum(inside) / len(inside)

    return {value: max(min(mean(j, k) for k in range(i, len(xs))) for j in range(i + 1))
            for i, value in enumerate(xs)}


@settings(max_examples=200)
@given(pairs=st.lists(st.tuples(st.sampled_from([i / 20 for i in range(21)]), st.booleans()), min_size=1,
                      max_size=40))
def test_property_pav_is_the_isotonic_least_squares_fit(pairs: list[tuple[float, bool]]) -> None:
    x = [p for p, _ in pairs]
    y = [float(r) for _, r in pairs]
    points = isotonic_points(x, y)
    calibration = Calibration("isotonic", points=points)
    expected = reference_isotonic(x, y)
    for value, fitted in expected.items():
        assert calibration.confidence(value) == pytest.approx(fitted, abs=1e-12)
    values = [v for _, v in points]
    assert values == sorted(values) and all(0 <= v <= 1 for v in values)


def test_isotonic_fitting_is_monotone_and_lowers_the_ece() -> None:
    distributions, labels = overconfident(4000)
    calibration = Calibration.fit(distributions, labels, "isotonic")
    grid = [i / 200 for i in range(201)]
    mapped = [calibration.confidence(p) for p in grid]
    assert all(a <= b for a, b in itertools.pairwise(mapped))
    bests = [max(d, key=lambda o: d[o]) for d in distributions]
    fixed = [calibration.apply(d) for d in distributions]
    assert top_ece(fixed, labels, bests) < top_ece(distributions, labels) / 3


@settings(max_examples=300)
@given(ps=PROBABILITIES, pairs=st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=30))
def test_property_isotonic_keeps_a_distribution_and_the_best_option(ps: list[float],
                                                                   pairs: list[tuple[float, bool]]) -> None:
    options = [f"o{i}" for i in range(len(ps))]
    raw = dict(zip(options, ps, strict=True))
    calibration = Calibration("isotonic", points=isotonic_points([p for p, _ in pairs], [r for _, r in pairs]))
    out = calibration.apply(raw)
    check_distribution(out, options)
    best = max(raw, key=lambda o: raw[o])
    assert all(out[best] >= out[o] - 1e-12 for o in options)
    others = [o for o in options if o != best]
    for x in others:
        for y in others:
            if raw[x] > raw[y]:
                assert out[x] >= out[y]


# -- files and errors ---------------------------------------------------------------------------------------------

def test_a_calibration_round_trips_through_its_file(tmp_path: Path) -> None:
    distributions, labels = overconfident(300)
    kinds: tuple[CalibrationKind, ...] = ("temperature", "isotonic")
    for kind in kinds:
        fitted = Calibration.fit(distributions, labels, kind)
        path = tmp_path / f"{kind}.json"
        fitted.save(path)
        assert Calibration.load(path) == fitted
        assert json.loads(path.read_text(encoding="utf-8"))["format"] == "guardrail.calibration"


@pytest.mark.parametrize(("content", "message"), [
    ("not json", "not JSON"),
    ("[1, 2]", "not a guardrail calibration"),
    ('{"format": "guardrail.calibration", "version": 9, "kind": "temperature"}', "version 9"),
    ('{"format": "guardrail.calibration", "version": 1, "kind": "platt"}', "kind"),
    ('{"format": "guardrail.calibration", "version": 1, "kind": "temperature", "temperature": -1}', "positive"),
    ('{"format": "guardrail.calibration", "version": 1, "kind": "temperature"}', "positive"),
    ('{"format": "guardrail.calibration", "version": 1, "kind": "isotonic", "points": [[0.5, 0.9], [0.6, 0.2]]}',
     "never decrease"),
    ('{"format": "guardrail.calibration", "version": 1, "kind": "isotonic", "points": [[0.5, 1.5]]}', "in \\[0, 1\\]"),
    ('{"format": "guardrail.calibration", "version": 1, "kind": "isotonic", "points": "x"}', "points"),
])
def test_a_bad_calibration_file_is_a_typed_error_naming_it(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CalibrationError, match=message) as caught:
        Calibration.load(path)
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, guardrail.GuardrailError)
    with pytest.raises(CalibrationError, match="cannot be read"):
        Calibration.load(tmp_path / "missing.json")


SCALARS = st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=12)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                      max_size=4), max_leaves=12)
FIELDS = st.fixed_dictionaries({"format": st.just("guardrail.calibration"), "version": st.just(1),
                                "kind": st.sampled_from(["temperature", "isotonic", "platt"])},
                               optional={"temperature": JSON, "points": JSON | st.lists(st.lists(JSON, max_size=3),
                                                                                       max_size=4),
                                         "cases": JSON})


@settings(max_examples=300)
@given(data=JSON | FIELDS)
def test_property_any_file_content_is_a_calibration_or_a_calibration_error(data: Any) -> None:
    try:
        calibration = Calibration.from_dict(data)
    except CalibrationError:
        return
    out = calibration.apply({"a": 0.7, "b": 0.2, "c": 0.1})
    check_distribution(out, ["a", "b", "c"])


def test_fitting_needs_cases_and_labels_among_the_options() -> None:
    with pytest.raises(CalibrationError):
        Calibration.fit([], [])
    with pytest.raises(CalibrationError, match="not one of its options"):
        Calibration.fit([{"a": 0.6, "b": 0.4}], ["c"])
    with pytest.raises(CalibrationError):
        Calibration.fit([{"a": 0.6, "b": 0.4}], ["a"], "platt")  # type: ignore[arg-type]


# -- choose applies it ------------------------------------------------------------------------------------------

def test_choose_applies_a_calibration_before_its_threshold(tiny: LocalModel, tmp_path: Path) -> None:
    options = ["billing", "shipping", "account"]
    raw = guardrail.choose("Category:", options, backend=tiny)
    sharp = Calibration("temperature", temperature=0.05)
    path = tmp_path / "sharp.json"
    sharp.save(path)
    for given_as in (sharp, path, str(path)):
        calibrated = guardrail.choose("Category:", options, backend=tiny, calibration=given_as)
        assert calibrated.probabilities == pytest.approx(sharp.apply(raw.probabilities))
        assert calibrated.best == raw.best and calibrated.confidence > raw.confidence
    # the threshold acts on the calibrated probability
    threshold = (raw.confidence + guardrail.choose("Category:", options, backend=tiny,
                                                   calibration=sharp).confidence) / 2
    with pytest.raises(Uncertain):
        guardrail.choose("Category:", options, backend=tiny, threshold=threshold)
    assert guardrail.choose("Category:", options, backend=tiny, threshold=threshold, calibration=sharp).best == raw.best
    awaited = asyncio.run(guardrail.achoose("Category:", options, backend=tiny, calibration=path))
    assert awaited.probabilities == pytest.approx(sharp.apply(raw.probabilities))
    with pytest.raises(CalibrationError):
        guardrail.choose("Category:", options, backend=tiny, calibration=tmp_path / "missing.json")
    with pytest.raises(CalibrationError):
        guardrail.choose("Category:", options, backend=tiny, calibration=3)  # type: ignore[arg-type]


# -- token healing ------------------------------------------------------------------------------------------------

class Canonical(torch.nn.Module):
    """A causal LM that knows one text in its canonical tokens only (as a real model knows text the way its
    tokenizer writes it): after a canonical prefix it puts nearly all mass on the next canonical token; after any
    other history (a split token it never saw) it has no idea: uniform logits."""

    def __init__(self, tokenizer: Any, text: str) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.config = SimpleNamespace(vocab_size=len(tokenizer), n_positions=4096)
        self.canonical = list(tokenizer(text)["input_ids"])

    def forward(self, input_ids: Any, attention_mask: Any = None, **_: Any) -> Any:
        ids = input_ids.tolist()
        logits = torch.zeros(len(ids), len(ids[0]), self.config.vocab_size)
        for b, row in enumerate(ids):
            for j in range(len(row)):
                if row[: j + 1] == self.canonical[: j + 1] and j + 1 < len(self.canonical):
                    logits[b, j, self.canonical[j + 1]] = 30.0
        return SimpleNamespace(logits=logits)


def separate_scores(model: Any, tokenizer: Any, prompt: str, options: list[str]) -> dict[str, float]:
    """What scoring the option's tokens after the prompt's (tokenized apart) would give, normalised."""
    prefix = list(tokenizer(prompt)["input_ids"])
    logs = []
    for option in options:
        ids = prefix + list(tokenizer(option, add_special_tokens=False)["input_ids"])
        logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0], dim=-1)
        logs.append(sum(float(logp[len(prefix) + k - 1, t]) for k, t in enumerate(ids[len(prefix):])))
    return dict(zip(options, softmax(logs), strict=True))


def test_options_are_tokenized_together_with_the_prompt(tiny: LocalModel) -> None:
    tokenizer = tiny.tokenizer
    prompt, options = "The quick ", ["brown", "fox"]
    # the tiny tokenizer writes "The quick brown" as "The", " quick", " brown": the prompt's trailing space and
    # the option share a token, so tokenizing them apart ("The", " quick", " ", "br", "own") differs
    apart = list(tokenizer(prompt)["input_ids"]) + list(tokenizer("brown", add_special_tokens=False)["input_ids"])
    together = list(tokenizer(prompt + "brown")["input_ids"])
    assert apart != together
    model = LocalModel(Canonical(tokenizer, "The quick brown"), tokenizer, device="cpu")
    healed = guardrail.choose(prompt, options, backend=model)
    assert healed.best == "brown" and healed.confidence > 0.99
    # tokenized apart, the model sees a split it never saw and cannot tell the options apart: the skew healing fixes
    skewed = separate_scores(model.model, tokenizer, prompt, options)
    assert skewed["brown"] == pytest.approx(0.5, abs=0.01)


def test_healing_scores_the_joint_tokens_after_the_shared_prefix(tiny: LocalModel) -> None:
    """The definition: log p(joint tokens after the longest prefix every option shares with the prompt's own)."""
    tokenizer, model = tiny.tokenizer, tiny.model
    prompt, options = "The quick ", ["brown", "fox", "배송"]
    plain = list(tokenizer(prompt)["input_ids"])
    joint = [list(tokenizer(prompt + option)["input_ids"]) for option in options]
    keep = min(next((i for i, (a, b) in enumerate(zip(plain, j, strict=False)) if a != b), min(len(plain), len(j)))
               for j in joint)
    assert keep < len(plain)  # the boundary token was backed up
    logs = []
    for ids in joint:
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), dim=-1)
        logs.append(sum(float(logp[k - 1, ids[k]]) for k in range(keep, len(ids))))
    expected = dict(zip(options, softmax(logs), strict=True))
    assert guardrail.choose(prompt, options, backend=tiny).probabilities == pytest.approx(expected, rel=1e-4)
