"""The HTML report: one self-contained page whose charts are drawn from the report's own numbers."""

from __future__ import annotations

import dataclasses
import re
from html.parser import HTMLParser
from typing import Any

import openai
from support.eval_cases import CASES, RULES, Extract

import guardrail
from guardrail.evals import build_report, parse_cases, render_html, run_matrix
from guardrail.testing import Emulator

FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.05, deadline=30)


class Page(HTMLParser):
    """Every start tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def page_of(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


def run(emu: Emulator) -> tuple[dict[str, Any], list[Any]]:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10), retry=FAST)
    results = run_matrix(client, parse_cases(CASES), Extract, models=["gpt-4o"], modes=["native", "json"],
                         rules=RULES, concurrency=2)
    return build_report(results, contract="Extract"), results


def test_the_page_is_self_contained_and_its_bars_match_the_counts(scripted: Emulator) -> None:
    report, results = run(scripted)
    page = page_of(render_html(report, results))
    tags = [tag for tag, _ in page.tags]
    assert "script" not in tags and "link" not in tags and "img" not in tags and "iframe" not in tags
    assert not [attrs for _, attrs in page.tags if "src" in attrs or "href" in attrs]
    assert tags.count("svg") == 5
    # the latency histogram: every case of both runs counted once, in one of ten bins per run
    binned = [re.fullmatch(r"[0-9.e+-]+-[0-9.e+-]+ s: (\d+)", text) for text in page.text]
    assert sum(int(found.group(1)) for found in binned if found) == 16
    widths: dict[str, list[float]] = {}
    for tag, attrs in page.tags:
        if tag == "rect" and (attrs.get("class") or "").startswith("bar "):
            widths.setdefault(str(attrs["class"]).split()[1], []).append(float(str(attrs["width"])))
    # 8 cases per run: 3 clean, 1 repaired locally, 2 re-asked, 2 failed, on a 480-pixel bar; two runs
    assert widths == {"clean": [180.0, 180.0], "locally_repaired": [60.0, 60.0], "reasked": [120.0, 120.0],
                      "failed": [120.0, 120.0]}
    text = "".join(page.text)
    assert "c4 · native / gpt-4o · failed (gave_up)" in text and '"urgency": 9' in text
    assert text.index("· failed (gave_up) ·") < text.index("· reasked ·")  # the worst first
    assert "Summary" in text  # the drifted name, in the suggestions


def test_outputs_are_escaped_and_redacted(scripted: Emulator) -> None:
    report, results = run(scripted)
    nasty = dataclasses.replace(results[3], raw="<script>alert(1)</script> sk-abcdefghijklmnopqrstuvwxyz")
    html = render_html(report, [nasty])
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "sk-abcdefghijklmnopqrstuvwxyz" in html  # render_html shows the result's raw as it is...
    recorded = [result.raw or "" for result in results]
    assert all("sk-" not in raw for raw in recorded)  # ...and a case result keeps it redacted (run.judge_case)
