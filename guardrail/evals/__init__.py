"""Experiments over your own cases: every case under every mode x model, with a JSON report (``guardrail eval``).

:func:`~guardrail.evals.run.run_matrix` runs the cases (:mod:`.cases`) concurrently through a wrapped client and
returns one :class:`~guardrail.evals.run.CaseResult` per case and run, resumable from a state file;
:func:`~guardrail.evals.report.build_report` turns them into the report: valid, locally repaired, re-asked and
failed counts, HTTP requests, tokens, cost, latency percentiles, failures by kind, semantic rejections by rule,
empty-but-valid values and accuracy against expected values, per run and per slice.

Cases run through a wrapped client (``{"messages": ...}``), a decorated function (``{"input": ...}``,
:mod:`.function`) or, in the ``local`` mode, a local model with constrained decoding (:mod:`.local`); a run-wide
budget (:mod:`.budget`) stops starting cases once it is spent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.evals.cases import Case, load_cases, parse_cases
    from guardrail.evals.html import render_html
    from guardrail.evals.report import build_report, figures, suggestions
    from guardrail.evals.run import AUTO, CaseResult, read_state, run_matrix

_NAMES: dict[str, str] = {
    "AUTO": "guardrail.evals.run",
    "Case": "guardrail.evals.cases",
    "CaseResult": "guardrail.evals.run",
    "build_report": "guardrail.evals.report",
    "figures": "guardrail.evals.report",
    "load_cases": "guardrail.evals.cases",
    "parse_cases": "guardrail.evals.cases",
    "read_state": "guardrail.evals.run",
    "render_html": "guardrail.evals.html",
    "run_matrix": "guardrail.evals.run",
    "suggestions": "guardrail.evals.report",
}

__all__ = [
    "AUTO",
    "Case",
    "CaseResult",
    "build_report",
    "figures",
    "load_cases",
    "parse_cases",
    "read_state",
    "render_html",
    "run_matrix",
    "suggestions",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
