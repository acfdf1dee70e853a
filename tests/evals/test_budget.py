"""The run-wide budget: once the finished cases spent it, no case starts; the cases left are ``skipped_budget``,
the report says the budget cut the run, the command exits 3, and ``--resume`` runs the rest.

Every scripted answer carries 15 tokens (10 in, 5 out), so with one case at a time the cut falls at a known case:
c1 spends 15 tokens, c2 15, c3 30 (a re-ask).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from support.eval_cases import CASES, RULES, USAGE, Extract, Script, check_run

import guardrail
from guardrail.errors import UsageError
from guardrail.evals import build_report, parse_cases, read_state, run_matrix
from guardrail.evals.budget import RunBudget
from guardrail.observe import cost
from guardrail.outcome import Budget, Usage
from guardrail.testing import Emulator

FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.05, deadline=30)
MODES = ["native", "json"]
TESTS = Path(__file__).resolve().parents[1]


def client(emu: Emulator) -> Any:
    return guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10), retry=FAST)


def test_a_token_budget_stops_the_run_at_a_known_case(scripted: Emulator, tmp_path: Path) -> None:
    cases, state = parse_cases(CASES), tmp_path / "state.jsonl"
    results = run_matrix(client(scripted), cases, Extract, models=["gpt-4o"], modes=MODES, rules=RULES,
                         concurrency=1, state=state, budget=Budget(max_tokens=60))
    report = build_report(results)
    assert report["cut_by_budget"] is True and report["skipped_budget"] == 12
    for entry in report["runs"]:  # case by case across the runs: c1 and c2 in each, 60 tokens in all
        assert (entry["cases"], entry["skipped_budget"], entry["clean"], entry["locally_repaired"]) == (2, 6, 1, 1)
        assert entry["input_tokens"] + entry["output_tokens"] == 30
        assert entry["vendor_calls"] == 2
    assert len(scripted.requests) == 4
    assert len(read_state(state)) == 4  # the skipped cases are not in the state file...
    scripted.responder = Script()
    resumed = run_matrix(client(scripted), cases, Extract, models=["gpt-4o"], modes=MODES, rules=RULES,
                         state=state, resume=True)
    assert len(scripted.requests) == 26  # ...so a resumed run without the budget runs only them
    whole = build_report(resumed)
    assert whole["cut_by_budget"] is False
    for entry in whole["runs"]:
        check_run(entry)
        assert entry["skipped_budget"] == 0


def test_a_dollar_budget_stops_the_run(scripted: Emulator) -> None:
    price = cost.usd(Usage(*USAGE), "openai", "gpt-4o")  # one answer's price
    limit = 1.5 * price if price is not None else 0.01
    results = run_matrix(client(scripted), parse_cases(CASES), Extract, models=["gpt-4o"], modes=["native"],
                         rules=RULES, concurrency=1, budget=Budget(max_usd=limit))
    (entry,) = build_report(results)["runs"]
    # priced: c1 leaves half an answer's worth, c2 passes the cap; unpriced: the spend is unknown after c1
    want = 2 if price is not None else 1
    assert (entry["cases"], entry["skipped_budget"]) == (want, 8 - want)
    assert entry["vendor_calls"] == len(scripted.requests) == want


def test_the_calls_in_flight_finish_and_nothing_more_starts(scripted: Emulator) -> None:
    results = run_matrix(client(scripted), parse_cases(CASES), Extract, models=["gpt-4o"], modes=["native"],
                         rules=RULES, concurrency=3, budget=Budget(max_tokens=1))
    (entry,) = build_report(results)["runs"]
    assert 1 <= entry["cases"] <= 3 and entry["cases"] + entry["skipped_budget"] == 8
    assert entry["vendor_calls"] == len(scripted.requests)


def test_the_command_exits_3_when_the_budget_cuts_the_run(scripted: Emulator, cases_file: Path,
                                                          tmp_path: Path) -> None:
    out, page = tmp_path / "report.json", tmp_path / "report.html"
    environ = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": scripted.openai_base_url,
               "GUARDRAIL_VENDOR": "openai"}
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "eval", str(cases_file), "--contract",
                           "support.eval_cases:Extract", "--rules", "support.eval_cases:RULES", "--model", "gpt-4o",
                           "--modes", "native", "--concurrency", "1", "--budget-tokens", "60", "--json", str(out),
                           "--html", str(page)], capture_output=True, text=True, cwd=TESTS, env=environ, timeout=300)
    assert done.returncode == 3, done.stderr
    assert "the budget cut the run: 5 cases were not run" in done.stderr and "skipped_budget" in done.stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["budget"] == {"max_usd": None, "max_tokens": 60} and report["skipped_budget"] == 5
    (entry,) = report["runs"]
    assert (entry["cases"], entry["valid"], entry["reasked"], entry["skipped_budget"]) == (3, 3, 1, 5)
    assert entry["vendor_calls"] == len(scripted.requests) == 4
    assert "The budget cut the run: 5 cases were not run" in page.read_text(encoding="utf-8")


def test_a_budget_needs_a_cap_it_can_hold() -> None:
    with pytest.raises(UsageError, match="max_tokens and/or max_usd"):
        RunBudget(Budget())
    gate = RunBudget(Budget(max_tokens=30, max_usd=1.0))
    gate.add(10, 5, 0.5)
    assert not gate.spent()
    gate.add(10, 5, None)  # tokens reach the cap; the dollars are unknown from now on
    assert gate.spent()
    unknown = RunBudget(Budget(max_usd=1.0))
    unknown.add(1, 1, None)
    assert unknown.spent()  # a dollar cap is never assumed kept


def test_run_matrix_says_what_each_mode_lacks() -> None:
    cases = parse_cases(CASES[:1])
    with pytest.raises(UsageError, match="needs a model"):
        run_matrix(None, cases, Extract, modes=["native"])
    with pytest.raises(UsageError, match="needs a local model"):
        run_matrix(None, cases, Extract, modes=["local"])
    with pytest.raises(UsageError, match="needs a client"):
        run_matrix(None, cases, Extract, models=["gpt-4o"], modes=["native"])
