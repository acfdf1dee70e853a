"""The experiment report as one self-contained HTML file: no script, no stylesheet or font to fetch, so it opens
anywhere offline.

It holds the comparison table, five charts drawn as inline SVG (how the cases ended per run: clean, repaired
locally, re-asked, failed; latency p50 and p99; the latency distribution per run, a histogram on bins shared by
every run; cost per valid result; exact-match accuracy per slice), what the fixes suggest, and the worst cases
(failed first, then re-asked) with their last raw output, secrets redacted.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from guardrail.evals.run import CaseResult

__all__ = ["latency_bins", "render_html"]

#: How the cases ended, in the order the stacked bars draw them, with their colours.
OUTCOMES = (("clean", "#2e7d32"), ("locally_repaired", "#9ccc65"), ("reasked", "#ffb300"), ("failed", "#c62828"))
#: Width of a chart's bar area in pixels, and of the label column beside it.
BAR_WIDTH, LABEL_WIDTH, ROW = 480, 220, 26
#: Worst cases shown.
WORST = 20
#: The latency histogram: equal-width bins from 0 to the slowest case of any run, a row of this height per run
#: (bars as tall as their count over the fullest bin of any run), in this colour.
HISTOGRAM_BINS, HISTOGRAM_ROW, HISTOGRAM_COLOUR = 10, 60, "#00897b"


def render_html(report: dict[str, Any], results: Sequence[CaseResult]) -> str:
    """The report (:func:`~guardrail.evals.report.build_report`) and its case results as one HTML page."""
    runs = report["runs"]
    parts = [
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>guardrail eval: {escape(str(report.get('contract', '')))}</title>",
        "<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}"
        "td:first-child,td:nth-child(2){text-align:left}pre{background:#f7f7f7;padding:6px;white-space:pre-wrap;"
        "max-width:60em}svg text{font:12px system-ui,sans-serif}h2{margin-top:1.6em}</style></head><body>",
        f"<h1>guardrail eval: {escape(str(report.get('contract', '')))}</h1>",
        f"<p>{escape(str(report.get('cases', '')))} &middot; {len(runs)} runs (mode &times; model)</p>",
        (f"<p><strong>The budget cut the run: {int(report.get('skipped_budget') or 0)} cases were not run"
         "</strong> (skipped_budget per run in the table).</p>") if report.get("cut_by_budget") else "",
        _table(runs),
        "<h2>How the cases ended</h2>", _outcome_chart(runs),
        "<h2>Latency (seconds per case)</h2>", _pair_chart(runs, "latency_p50_s", "latency_p99_s", "p50", "p99"),
        "<h3>Latency distribution</h3>", _latency_histogram(runs, results),
        "<h2>Cost per valid result (USD)</h2>", _value_chart(runs, "cost_per_valid_usd", "#1565c0"),
        "<h2>Exact match per slice</h2>", _slice_chart(runs),
        "<h2>Suggestions from the fixes</h2>", _suggestions(report.get("suggestions") or {}),
        "<h2>Worst cases</h2>", _worst(results),
        "</body></html>",
    ]
    return "\n".join(parts)


def _label(run: dict[str, Any]) -> str:
    return f"{run['mode']} / {run['model']}"


def _table(runs: Sequence[dict[str, Any]]) -> str:
    columns = [name for name, value in (runs[0] if runs else {}).items() if not isinstance(value, (dict, list))]
    head = "".join(f"<th>{escape(name)}</th>" for name in columns)
    rows = "".join("<tr>" + "".join(f"<td>{escape(_cell(run.get(name)))}</td>" for name in columns) + "</tr>"
                   for run in runs)
    return f"<table><tr>{head}</tr>{rows}</table>"


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _svg(rows: int, body: str, legend: str = "") -> str:
    height = rows * ROW + 30
    return (f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{LABEL_WIDTH + BAR_WIDTH + 120}\" "
            f"height=\"{height}\" role=\"img\">{body}{legend}</svg>")


def _legend(items: Sequence[tuple[str, str]], y: int) -> str:
    out, x = [], LABEL_WIDTH
    for name, colour in items:
        out.append(f"<rect x=\"{x}\" y=\"{y}\" width=\"12\" height=\"12\" fill=\"{colour}\"/>"
                   f"<text x=\"{x + 16}\" y=\"{y + 11}\">{escape(name)}</text>")
        x += 24 + 8 * len(name)
    return "".join(out)


def _outcome_chart(runs: Sequence[dict[str, Any]]) -> str:
    """One stacked bar per run: the share of cases that ended each way."""
    body = []
    for i, run in enumerate(runs):
        y, x, cases = i * ROW, float(LABEL_WIDTH), max(1, run["cases"])
        body.append(f"<text x=\"0\" y=\"{y + 17}\">{escape(_label(run))}</text>")
        for name, colour in OUTCOMES:
            width = BAR_WIDTH * run[name] / cases
            if width > 0:
                body.append(f"<rect class=\"bar {name}\" x=\"{x:.1f}\" y=\"{y + 4}\" width=\"{width:.1f}\" "
                            f"height=\"{ROW - 8}\" fill=\"{colour}\"><title>{escape(name)}: {run[name]}</title>"
                            "</rect>")
            x += width
    return _svg(len(runs), "".join(body), _legend(OUTCOMES, len(runs) * ROW + 8))


def _bars(items: Sequence[tuple[str, float | None, str]], scale: float) -> str:
    body = []
    for i, (label, value, colour) in enumerate(items):
        y = i * ROW
        body.append(f"<text x=\"0\" y=\"{y + 17}\">{escape(label)}</text>")
        if value is None:
            body.append(f"<text x=\"{LABEL_WIDTH}\" y=\"{y + 17}\">unknown</text>")
            continue
        width = BAR_WIDTH * value / scale if scale else 0.0
        body.append(f"<rect class=\"bar\" x=\"{LABEL_WIDTH}\" y=\"{y + 4}\" width=\"{width:.1f}\" height=\"{ROW - 8}\""
                    f" fill=\"{colour}\"><title>{value:.4g}</title></rect>"
                    f"<text x=\"{LABEL_WIDTH + width + 6:.1f}\" y=\"{y + 17}\">{value:.4g}</text>")
    return "".join(body)


def _value_chart(runs: Sequence[dict[str, Any]], name: str, colour: str) -> str:
    items = [(_label(run), run.get(name), colour) for run in runs]
    scale = max((value for _, value, _ in items if value is not None), default=0.0)
    return _svg(len(items), _bars(items, scale))


def _pair_chart(runs: Sequence[dict[str, Any]], first: str, second: str, one: str, two: str) -> str:
    items: list[tuple[str, float | None, str]] = []
    for run in runs:
        items.append((f"{_label(run)} {one}", run.get(first), "#90caf9"))
        items.append((f"{_label(run)} {two}", run.get(second), "#1565c0"))
    scale = max((value for _, value, _ in items if value is not None), default=0.0)
    return _svg(len(items), _bars(items, scale))


def latency_bins(runs: Sequence[dict[str, Any]], results: Sequence[CaseResult]) -> tuple[float, list[list[int]]]:
    """The histogram's upper edge (the slowest case's seconds) and, per run, how many of its cases that ran fall in
    each of :data:`HISTOGRAM_BINS` equal-width bins from 0 (the slowest in the last bin)."""
    seconds: dict[tuple[str, str], list[float]] = {(run["mode"], run["model"]): [] for run in runs}
    for result in results:
        if result.outcome != "skipped_budget" and (result.mode, result.model) in seconds:
            seconds[(result.mode, result.model)].append(result.seconds)
    top = max((value for values in seconds.values() for value in values), default=0.0)
    counts = []
    for run in runs:
        row = [0] * HISTOGRAM_BINS
        for value in seconds[(run["mode"], run["model"])]:
            row[min(HISTOGRAM_BINS - 1, int(value / top * HISTOGRAM_BINS)) if top > 0 else 0] += 1
        counts.append(row)
    return top, counts


def _latency_histogram(runs: Sequence[dict[str, Any]], results: Sequence[CaseResult]) -> str:
    """Per run, a row of bars: how many cases took how long, on bins every run shares, so rows compare."""
    top, counts = latency_bins(runs, results)
    fullest = max((count for row in counts for count in row), default=0)
    if not fullest:
        return "<p>No case ran.</p>"
    width, tallest, body = BAR_WIDTH // HISTOGRAM_BINS, HISTOGRAM_ROW - 10, []
    for i, (run, row) in enumerate(zip(runs, counts, strict=True)):
        base = (i + 1) * HISTOGRAM_ROW - 4
        body.append(f"<text x=\"0\" y=\"{base - 4}\">{escape(_label(run))}</text>")
        for j, count in enumerate(row):
            height = round(tallest * count / fullest)
            if height:
                low, high = top * j / HISTOGRAM_BINS, top * (j + 1) / HISTOGRAM_BINS
                body.append(f"<rect class=\"hist\" x=\"{LABEL_WIDTH + j * width}\" y=\"{base - height}\" "
                            f"width=\"{width - 2}\" height=\"{height}\" fill=\"{HISTOGRAM_COLOUR}\"><title>"
                            f"{low:.3g}-{high:.3g} s: {count}</title></rect>")
    axis = len(runs) * HISTOGRAM_ROW + 14
    body.append(f"<text x=\"{LABEL_WIDTH}\" y=\"{axis}\">0 s</text><text x=\"{LABEL_WIDTH + BAR_WIDTH - 60}\" "
                f"y=\"{axis}\">{top:.3g} s</text>")
    return (f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{LABEL_WIDTH + BAR_WIDTH + 120}\" "
            f"height=\"{axis + 8}\" role=\"img\">{''.join(body)}</svg>")


def _slice_chart(runs: Sequence[dict[str, Any]]) -> str:
    items = [(f"{_label(run)} {name}", figures["exact_match"], "#6a1b9a")
             for run in runs for name, figures in run.get("slices", {}).items()
             if figures.get("exact_match") is not None]
    if not items:
        return "<p>No case has an expected value.</p>"
    return _svg(len(items), _bars(items, 1.0))


def _suggestions(found: dict[str, Any]) -> str:
    names = found.get("drifted_names") or []
    repairs = found.get("repairs") or {}
    rows = "".join(f"<tr><td>{escape(item['from'])}</td><td>{escape(item['to'])}</td><td>{item['seen']}</td></tr>"
                   for item in names)
    fixes = "".join(f"<tr><td>{escape(kind)}</td><td>{seen['answers']}</td><td>{seen['accepted']}</td>"
                    f"<td>{seen['rate']:.0%}</td></tr>" for kind, seen in repairs.items())
    out = ["<table><tr><th>drifted name</th><th>contract field</th><th>seen</th></tr>" + rows + "</table>"
           if rows else "<p>No drifted field names.</p>"]
    out.append("<table><tr><th>repair</th><th>answers</th><th>accepted</th><th>rate</th></tr>" + fixes + "</table>"
               if fixes else "<p>No repairs.</p>")
    return "".join(out)


def _worst(results: Sequence[CaseResult]) -> str:
    order = {"failed": 0, "reasked": 1}
    worst = sorted((r for r in results if r.outcome in order), key=lambda r: (order[r.outcome], -r.vendor_calls))
    if not worst:
        return "<p>Every case was valid from its first answer.</p>"
    items = []
    for result in worst[:WORST]:
        said = f"{result.outcome}" + (f" ({result.failure})" if result.failure else "")
        items.append(f"<div class=\"case\"><h3>{escape(result.case)} &middot; {escape(result.mode)} / "
                     f"{escape(result.model)} &middot; {escape(said)} &middot; {result.vendor_calls} requests</h3>"
                     f"<pre>{escape(result.raw if result.raw is not None else '(no output)')}</pre></div>")
    return "".join(items)
