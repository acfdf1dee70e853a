"""The HTML report as a person sees it: headless Chromium (Debian's ``chromium``) renders the page to a PNG, and the
charts must have drawn: each chart's colours cover the screen in the proportions of the report's counts.

Skipped where no Chromium is installed, except under CI (``CI=true``), where ``.ci/run`` installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import openai
import pytest
from support.eval_cases import CASES, RULES, Extract

import guardrail
from guardrail.evals import build_report, parse_cases, render_html, run_matrix
from guardrail.testing import Emulator

FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.05, deadline=30)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
OUTCOME_COLOURS = {"clean": (0x2E, 0x7D, 0x32), "locally_repaired": (0x9C, 0xCC, 0x65),
                   "reasked": (0xFF, 0xB3, 0x00), "failed": (0xC6, 0x28, 0x28)}
OTHER_CHARTS = {"cost per valid result": (0x15, 0x65, 0xC0), "latency p50": (0x90, 0xCA, 0xF9),
                "exact match per slice": (0x6A, 0x1B, 0x9A)}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None and os.environ.get("CI") != "true", reason="no chromium installed"),
]


def screenshot(html: str, tmp_path: Path) -> Counter[tuple[int, int, int]]:
    """The page rendered by headless Chromium: how many pixels of each colour."""
    from PIL import Image

    assert CHROMIUM is not None, "CI=true: .ci/run installs Debian's chromium"
    page, png = tmp_path / "report.html", tmp_path / "report.png"
    page.write_text(html, encoding="utf-8")
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--force-device-scale-factor=1", "--window-size=1400,5000", f"--screenshot={png}",
                    page.as_uri()], check=True, capture_output=True, timeout=120)
    with Image.open(png) as image:
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=rgb.width * rgb.height) or []
    return Counter({colour: count for count, colour in colours})


def test_chromium_draws_every_chart_in_the_proportions_of_the_counts(scripted: Emulator, tmp_path: Path) -> None:
    client = guardrail.wrap(openai.OpenAI(base_url=scripted.openai_base_url, api_key="test", timeout=10), retry=FAST)
    results = run_matrix(client, parse_cases(CASES), Extract, models=["gpt-4o"], modes=["native", "json"],
                         rules=RULES, concurrency=2)
    report = build_report(results, contract="Extract")
    pixels = screenshot(render_html(report, results), tmp_path)
    drawn = {name: pixels[colour] for name, colour in OUTCOME_COLOURS.items()}
    # per run of 8 cases: 3 clean, 1 repaired locally, 2 re-asked, 2 failed (two runs, one bar each, plus a legend
    # square of each colour): the areas keep those proportions
    unit = drawn["locally_repaired"]
    assert unit > 500, drawn
    for name, cases in (("clean", 3), ("reasked", 2), ("failed", 2)):
        assert abs(drawn[name] / unit - cases) < 0.25, drawn
    for name, colour in OTHER_CHARTS.items():
        assert pixels[colour] > 100, f"the {name} chart did not draw: {pixels[colour]} pixels"
    # the latency histogram: ten equal bins from 0 to the slowest case, bars 46 px wide and as tall (of 50 px) as
    # their count over the fullest bin's, counted here from the case results themselves
    top = max(result.seconds for result in results)
    bins = Counter((result.mode, min(9, int(result.seconds / top * 10))) for result in results)
    fullest = max(bins.values())
    expected = sum(46 * round(50 * count / fullest) for count in bins.values())
    drawn_histogram = pixels[(0x00, 0x89, 0x7B)]
    assert expected >= 46 * 50 and 0.97 * expected <= drawn_histogram <= 1.01 * expected, (drawn_histogram, expected)


def test_chromium_draws_the_reliability_diagrams_in_the_proportions_of_the_bins(tmp_path: Path) -> None:
    from guardrail.evals.calibrate import ChoiceCase, Scored, build_report
    from guardrail.evals.calibrate_html import COLOURS, PLOT, render_calibration_html

    # 0.85 x4 (3 right), 0.75 x2 (1 right), 0.65 x2 (1 right): bars of accuracy 0.75, 0.5, 0.5
    table = [(0.85, "yes")] * 3 + [(0.85, "no"), (0.25, "no"), (0.25, "yes"), (0.65, "yes"), (0.65, "no")]
    scored = [Scored(ChoiceCase(str(i), "q", ("yes", "no"), label), {"yes": p, "no": 1 - p})
              for i, (p, label) in enumerate(table)]
    report, _ = build_report(scored, fit="temperature")
    pixels = screenshot(render_calibration_html(report), tmp_path)
    for which in ("raw", "calibrated"):
        colour = tuple(int(COLOURS[which][i:i + 2], 16) for i in (1, 3, 5))
        width = PLOT // report["bins"]
        expected = sum(width * round(b["accuracy"] * PLOT) for b in report[which]["reliability"] if b["count"])
        # every bar drew, as tall as its bin's accuracy (the dashed diagonal drawn over them hides a few pixels)
        assert expected > 5000 and 0.97 * expected <= pixels[colour] <= expected, (which, pixels[colour], expected)
