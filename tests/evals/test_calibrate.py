"""``guardrail calibrate`` and :mod:`guardrail.evals.calibrate`: calibration figures (accuracy, ECE, Brier), the
threshold for a target precision, the JSON and HTML reports, end to end through the command with the vendor
emulator (scripted logprobs, so every figure is known in advance) and with the tiny local model."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import guardrail
from guardrail.cli.app import main
from guardrail.errors import CalibrationError, CommandError
from guardrail.evals.calibrate import (
    brier,
    build_report,
    expected_calibration_error,
    parse_choice_cases,
    reliability,
    score_cases,
    suggest_threshold,
)
from guardrail.evals.calibrate_html import render_calibration_html
from guardrail.local import Calibration
from guardrail.testing import Emulator, reply

# -- the figures --------------------------------------------------------------------------------------------------


def brute_force_threshold(confidences: list[float], correct: list[bool], target: float) -> dict[str, float] | None:
    """Every candidate threshold tried on its own: the lowest whose accepted cases meet the target."""
    best = None
    for t in sorted(set(confidences)):
        accepted = [c for p, c in zip(confidences, correct, strict=True) if p >= t]
        if accepted and sum(accepted) / len(accepted) >= target:
            best = {"threshold": t, "precision": sum(accepted) / len(accepted), "accepted": len(accepted),
                    "coverage": len(accepted) / len(confidences)}
            break
    return best


@settings(max_examples=400)
@given(cases=st.lists(st.tuples(st.sampled_from([i / 10 for i in range(11)] + [0.33, 0.95, 0.999]), st.booleans()),
                      max_size=40),
       target=st.sampled_from([0.5, 0.75, 0.9, 0.95, 1.0]))
def test_property_the_threshold_is_the_brute_force_one(cases: list[tuple[float, bool]], target: float) -> None:
    confidences, correct = [p for p, _ in cases], [c for _, c in cases]
    assert suggest_threshold(confidences, correct, target) == brute_force_threshold(confidences, correct, target)


def test_the_threshold_for_known_cases_and_when_none_meets_the_target() -> None:
    confidences = [0.95, 0.9, 0.9, 0.8, 0.6, 0.55]
    correct = [True, True, False, True, False, True]
    assert suggest_threshold(confidences, correct, 0.75) == {
        "threshold": 0.8, "precision": 0.75, "accepted": 4, "coverage": 4 / 6}
    assert suggest_threshold(confidences, correct, 1.0)["threshold"] == 0.95  # type: ignore[index]
    assert suggest_threshold([0.9, 0.8], [False, False], 0.5) is None
    with pytest.raises(CalibrationError):
        suggest_threshold(confidences, correct, 0)


def test_ece_brier_and_reliability_by_hand() -> None:
    # bins of 0.1: 0.85 x4 (3 right), 0.75 x2 (1 right), 0.65 x2 (1 right)
    confidences = [0.85] * 4 + [0.75] * 2 + [0.65] * 2
    correct = [True, True, True, False, True, False, True, False]
    assert expected_calibration_error(confidences, correct, 10) == pytest.approx(
        4 / 8 * 0.1 + 2 / 8 * 0.25 + 2 / 8 * 0.15)
    bins = reliability(confidences, correct, 10)
    assert [b["count"] for b in bins] == [0, 0, 0, 0, 0, 0, 2, 2, 4, 0]
    assert bins[8]["accuracy"] == 0.75 and bins[8]["confidence"] == pytest.approx(0.85)
    assert reliability([1.0], [True], 4)[-1]["count"] == 1  # a confidence of 1 falls in the last bin
    assert expected_calibration_error([0.6, 0.6, 0.6, 0.6, 0.6], [True, True, True, False, False], 1) \
        == pytest.approx(0.0)
    assert brier([{"a": 1.0, "b": 0.0}, {"a": 0.7, "b": 0.3}], ["a", "b"]) == pytest.approx((0 + 2 * 0.49) / 2)


@pytest.mark.parametrize(("lines", "message"), [
    (["not json"], "cases:1: not JSON"),
    (['{"prompt": "q", "options": ["a"], "label": "a"}'], "at least two distinct"),
    (['{"prompt": "q", "options": ["a", "a"], "label": "a"}'], "at least two distinct"),
    (['{"prompt": "q", "options": ["a", "b"], "label": "c"}'], "one of the options"),
    (['{"options": ["a", "b"], "label": "a"}'], "prompt"),
    (['{"id": 1, "prompt": "q", "options": ["a", "b"], "label": "a"}'] * 2, "used twice"),
    ([""], "no cases"),
])
def test_cases_that_cannot_be_read_are_refused_with_their_line(lines: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        parse_choice_cases(lines)


# -- end to end through the emulator: every figure known in advance -----------------------------------------------

#: (probability of "yes", label) per case; the last case's reply names no option.
SCRIPT = [(0.85, "yes")] * 3 + [(0.85, "no"), (0.25, "no"), (0.25, "yes"), (0.65, "yes"), (0.65, "no")]


def script(emu: Emulator) -> Path:
    emu.script(*(reply.logprobs([{"yes": p, "no": 1 - p}]) for p, _ in SCRIPT),
               reply.logprobs([{"I": 0.9, "The": 0.1}]))
    lines = [{"prompt": f"Is case {i} fine?", "options": ["yes", "no"], "label": label}
             for i, (_, label) in enumerate(SCRIPT)]
    lines.append({"id": "unanswerable", "prompt": "?", "options": ["yes", "no"], "label": "no"})
    return Path("\n".join(json.dumps(line) for line in lines))


def test_the_command_reports_the_scripted_figures(emu: Emulator, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(str(script(emu)), encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", emu.openai_base_url)
    out, saved, page = tmp_path / "report.json", tmp_path / "cal.json", tmp_path / "report.html"
    code = main(["calibrate", str(cases), "--model", "gpt-test", "--target-precision", "0.75", "--json", str(out),
                 "--save", str(saved), "--html", str(page)])
    assert code == 0, capsys.readouterr().err
    assert len(emu.requests) == 9 and all(r.body["logprobs"] is True for r in emu.requests)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert (report["count"], report["judged"], report["no_option_matched"], report["bins"]) == (9, 8, 1, 10)
    raw = report["raw"]
    # right: 3 of the four 0.85 cases, 1 of the two 0.75 ("no" at 0.75), 1 of the two 0.65; the 9th has no answer
    assert raw["accuracy"] == pytest.approx(5 / 9)
    assert raw["ece"] == pytest.approx(4 / 8 * 0.1 + 2 / 8 * 0.25 + 2 / 8 * 0.15)
    assert raw["brier"] == pytest.approx((3 * 2 * 0.15 ** 2 + 2 * 0.85 ** 2 + 2 * 0.25 ** 2 + 2 * 0.75 ** 2
                                          + 2 * 0.35 ** 2 + 2 * 0.65 ** 2) / 8)
    assert raw["threshold"]["threshold"] == pytest.approx(0.85)
    assert (raw["threshold"]["precision"], raw["threshold"]["coverage"]) == (0.75, pytest.approx(4 / 9))
    # the fitted temperature keeps the order, so the same cases pass at the calibrated threshold
    calibration = Calibration.load(saved)
    assert report["calibration"] == calibration.to_dict() and report["fitted"]
    after = report["calibrated"]
    assert after["accuracy"] == raw["accuracy"] and after["nll"] <= raw["nll"]
    assert after["threshold"]["threshold"] == pytest.approx(calibration.apply({"yes": 0.85, "no": 0.15})["yes"])
    assert after["threshold"]["coverage"] == pytest.approx(4 / 9)
    html = page.read_text(encoding="utf-8")
    assert html.count("<svg") == 2 and "http" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    drawn = [sum(b["count"] > 0 for b in figures["reliability"]) for figures in (raw, after)]
    assert drawn[0] == 3 and html.count('class="bar"') == sum(drawn)  # one bar per non-empty bin
    printed = capsys.readouterr().out
    assert "ece" in printed and "threshold: 0." in printed

    # the saved calibration, applied to the same cases: the same calibrated figures, and choose uses it too
    emu.script(*(reply.logprobs([{"yes": p, "no": 1 - p}]) for p, _ in SCRIPT), reply.logprobs([{"I": 1.0}]))
    again = tmp_path / "again.json"
    assert main(["calibrate", str(cases), "--model", "gpt-test", "--calibration", str(saved), "--json",
                 str(again), "--target-precision", "0.75"]) == 0
    checked = json.loads(again.read_text(encoding="utf-8"))
    assert not checked["fitted"] and checked["calibrated"]["ece"] == pytest.approx(after["ece"])
    emu.script(reply.logprobs([{"yes": 0.85, "no": 0.15}]))
    client = guardrail.local.LogprobBackend(__import__("openai").OpenAI(base_url=emu.openai_base_url,
                                                                        api_key="test"), "gpt-test")
    chosen = guardrail.choose("Is it fine?", ["yes", "no"], backend=client, calibration=saved)
    assert chosen.confidence == pytest.approx(calibration.apply({"yes": 0.85, "no": 0.15})["yes"])


def test_a_failing_request_names_its_case(emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": name, "prompt": "q", "options": ["yes", "no"], "label": "yes"}) + "\n"
                             for name in ("first", "second")), encoding="utf-8")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("OPENAI_BASE_URL", emu.openai_base_url)
    emu.script(reply.logprobs([{"yes": 0.9, "no": 0.1}]), reply.error(400))
    assert main(["calibrate", str(cases), "--model", "gpt-test"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("guardrail calibrate: case 'second': BadRequestError") and len(err.strip().splitlines()) == 1


def test_command_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"prompt": "q", "options": ["a", "b"], "label": "a"}\n', encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    for argv, code, message in [
        (["calibrate", str(tmp_path / "none.jsonl"), "--choose", "guardrail.testing.tiny:tiny_local_model"], 1,
         "does not exist"),
        (["calibrate", str(cases), "--choose", "guardrail.testing.tiny:tiny_local_model", "--calibration",
          str(bad)], 1, "not a guardrail calibration"),
        (["calibrate", str(cases), "--choose", "no_such_module_here:x"], 1, "cannot import"),
        (["calibrate", str(cases), "--choose", "json:dumps"], 1, "failed"),
        (["calibrate", str(cases), "--choose", "json:JSONDecoder"], 1, "backend must be"),
        (["calibrate", str(cases)], 2, "required"),
        (["calibrate", str(cases), "--choose", "nocolon"], 2, "MODULE:Type"),
        (["calibrate", str(cases), "--choose", "a:b", "--target-precision", "1.5"], 2, "precision"),
        (["calibrate", str(cases), "--choose", "a:b", "--fit", "none", "--save", "x.json"], 2, "--save"),
    ]:
        assert main(argv) == code, argv
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (argv, err)


# -- end to end with the tiny local model -------------------------------------------------------------------------

@pytest.mark.slow
def test_the_command_runs_a_local_model_in_a_subprocess(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("llguidance")
    from guardrail.testing.tiny import tiny_local_model

    options = ["billing", "shipping", "account"]
    lines = [{"prompt": f"Category of case {i}:", "options": options, "label": options[i % 3]} for i in range(12)]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out, saved = tmp_path / "report.json", tmp_path / "cal.json"
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "calibrate", str(cases), "--choose",
                           "guardrail.testing.tiny:tiny_local_model", "--fit", "isotonic", "--save", str(saved),
                           "--json", str(out), "--target-precision", "0.5"],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    # the same model built here gives the same judgments: the report's figures are theirs
    model = tiny_local_model()
    choices = [guardrail.choose(str(line["prompt"]), options, backend=model) for line in lines]
    right = [c.best == line["label"] for c, line in zip(choices, lines, strict=True)]
    assert report["raw"]["accuracy"] == pytest.approx(sum(right) / 12)
    assert report["raw"]["ece"] == pytest.approx(expected_calibration_error([c.confidence for c in choices], right))
    calibration = Calibration.load(saved)
    assert calibration.kind == "isotonic" and calibration.cases == 12
    calibrated = [guardrail.choose(str(line["prompt"]), options, backend=model, calibration=saved)
                  for line in lines]
    assert [c.best for c in calibrated] == [c.best for c in choices]
    assert report["calibrated"]["ece"] <= report["raw"]["ece"] + 1e-12  # in-sample isotonic never worsens it
    assert math.isclose(math.fsum(calibrated[0].probabilities.values()), 1.0)


def test_the_report_without_a_calibration_and_with_no_judgment() -> None:
    from guardrail.evals.calibrate import ChoiceCase, Scored

    case = ChoiceCase("1", "q", ("a", "b"), "a")
    report, calibration = build_report([Scored(case, {"a": 0.8, "b": 0.2})], fit=None)
    assert calibration is None and report["calibrated"] is None and report["raw"]["accuracy"] == 1.0
    assert "No target precision" in render_calibration_html(report)
    with pytest.raises(CalibrationError, match="nothing to fit"):
        build_report([Scored(case, None)])
    assert score_cases([], object()) == []
