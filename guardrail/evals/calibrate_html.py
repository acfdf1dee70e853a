"""The calibration report (:func:`guardrail.evals.calibrate.build_report`) as one self-contained HTML page: no
script, stylesheet or font to fetch.

It holds the figures before and after calibration, the threshold suggestion, and a reliability diagram for each
(inline SVG): one bar per non-empty confidence bin, as tall as the accuracy of its cases, against the diagonal a
perfectly calibrated model's bars would reach (the bars' tops meet the diagonal at the bins' mean confidence).
"""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["COLOURS", "PLOT", "render_calibration_html"]

#: The bars' colours: before calibration, after it.
COLOURS = {"raw": "#ef6c00", "calibrated": "#00897b"}
#: The plot's side in pixels, and the margin around it for the axes' labels.
PLOT, MARGIN = 400, 40
_FIGURES = ("accuracy", "mean_confidence", "ece", "brier", "nll")


def render_calibration_html(report: dict[str, Any]) -> str:
    """The report as one HTML page."""
    title = f"guardrail calibrate: {report.get('cases') or 'cases'}"
    calibration = report.get("calibration")
    parts = [
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{escape(title)}</title>",
        "<style>body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}"
        "td:first-child{text-align:left}svg text{font:12px system-ui,sans-serif}h2{margin-top:1.6em}"
        ".diagrams{display:flex;gap:2em;flex-wrap:wrap}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>{report['count']} cases, {report['judged']} judged, {report['no_option_matched']} with no option in "
        f"the reply &middot; {escape(_describe(calibration, report.get('fitted', False)))}</p>",
        _table(report),
        "<h2>Reliability</h2><div class=\"diagrams\">",
        _diagram(report["raw"], "raw", "before calibration"),
    ]
    if report.get("calibrated") is not None:
        parts.append(_diagram(report["calibrated"], "calibrated", "after calibration"))
    parts += ["</div>", "<h2>Threshold</h2>", _threshold(report), "<h2>Definitions</h2>",
              "<ul>" + "".join(f"<li><b>{escape(k)}</b>: {escape(v)}</li>"
                               for k, v in report.get("definitions", {}).items()) + "</ul>",
              "</body></html>"]
    return "\n".join(parts)


def _describe(calibration: dict[str, Any] | None, fitted: bool) -> str:
    if calibration is None:
        return "no calibration"
    from guardrail.local.calibration import Calibration

    how = "fitted on these cases" if fitted else "given (not fitted on these cases)"
    return f"{Calibration.from_dict(calibration).describe()}, {how}"


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)


def _table(report: dict[str, Any]) -> str:
    after = report.get("calibrated")
    head = "<tr><th>figure</th><th>before</th>" + ("<th>after</th>" if after else "") + "</tr>"
    rows = "".join(f"<tr><td>{name}</td><td>{_cell(report['raw'][name])}</td>"
                   + (f"<td>{_cell(after[name])}</td>" if after else "") + "</tr>" for name in _FIGURES)
    return f"<table class=\"figures\">{head}{rows}</table>"


def _diagram(figures: dict[str, Any], which: str, caption: str) -> str:
    """A reliability diagram: accuracy per confidence bin as bars, the diagonal, axes from 0 to 1."""
    colour = COLOURS[which]
    size = PLOT + 2 * MARGIN
    out = [f"<figure><svg class=\"reliability {which}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{size}\" "
           f"height=\"{size}\" role=\"img\" shape-rendering=\"crispEdges\">",
           f"<rect x=\"{MARGIN}\" y=\"{MARGIN}\" width=\"{PLOT}\" height=\"{PLOT}\" fill=\"#fafafa\" "
           "stroke=\"#999\"/>"]
    for b in figures["reliability"]:
        if not b["count"]:
            continue
        x0, x1 = MARGIN + round(b["lo"] * PLOT), MARGIN + round(b["hi"] * PLOT)
        height = round(b["accuracy"] * PLOT)
        out.append(f"<rect class=\"bar\" x=\"{x0}\" y=\"{MARGIN + PLOT - height}\" width=\"{x1 - x0}\" "
                   f"height=\"{height}\" fill=\"{colour}\"><title>confidence {b['lo']:.2f}-{b['hi']:.2f}: "
                   f"{b['count']} cases, mean confidence {b['confidence']:.3f}, accuracy {b['accuracy']:.3f}"
                   "</title></rect>")
    out.append(f"<line x1=\"{MARGIN}\" y1=\"{MARGIN + PLOT}\" x2=\"{MARGIN + PLOT}\" y2=\"{MARGIN}\" "
               "stroke=\"#555\" stroke-dasharray=\"4 4\" shape-rendering=\"auto\"/>")
    for tick in range(0, 11, 2):
        at = tick / 10
        out.append(f"<text x=\"{MARGIN + at * PLOT:.0f}\" y=\"{MARGIN + PLOT + 16}\" text-anchor=\"middle\">"
                   f"{at:.1f}</text><text x=\"{MARGIN - 6}\" y=\"{MARGIN + PLOT - at * PLOT + 4:.0f}\" "
                   f"text-anchor=\"end\">{at:.1f}</text>")
    out.append(f"<text x=\"{MARGIN + PLOT / 2:.0f}\" y=\"{size - 4}\" text-anchor=\"middle\">confidence (top "
               f"probability)</text><text x=\"{MARGIN}\" y=\"{MARGIN - 10}\">accuracy &middot; ECE "
               f"{figures['ece']:.4f}</text></svg>")
    out.append(f"<figcaption>{escape(caption)}</figcaption></figure>")
    return "".join(out)


def _threshold(report: dict[str, Any]) -> str:
    target = report.get("target_precision")
    if target is None:
        return "<p>No target precision given (--target-precision).</p>"
    which = "calibrated" if report.get("calibrated") is not None else "raw"
    found = report[which]["threshold"]
    if found is None:
        return f"<p>No threshold on the {which} top probability reaches precision {target:g} on these cases.</p>"
    return (f"<p>On the {which} top probability: threshold <b>{found['threshold']:.4f}</b> gives precision "
            f"{found['precision']:.4f} (target {target:g}) on {found['accepted']} accepted cases, coverage "
            f"{found['coverage']:.1%}.</p>")
