"""The ``local`` mode: one run through a tiny local model (random weights, so only the grammar mask keeps its
output in the contract), reported beside the vendor runs with ``vendor_calls`` 0 and ``cost_usd`` 0, loaded by
``--local-model`` from a ``save_pretrained`` directory.

The contract is ``Brief`` (every field bounded), so each output ends inside the token limit: a local case can then
fail only by a semantic rule, and each such failure is one rejection of that rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from support.eval_cases import CASES, FUNCTION_CASES, RULES, Brief, Extract, check_run, extract

import guardrail
from guardrail.evals import build_report, parse_cases, run_matrix
from guardrail.gates.semantic import rule
from guardrail.testing import Emulator


@rule
def refuse_all(value: Any, context: Any) -> Any:
    return "every value is refused here"


TESTS = Path(__file__).resolve().parents[1]
FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.05, deadline=30)
#: New tokens per local case: enough for a ticket, few enough to keep the test quick.
TOKENS = 96


def check_local(entry: dict[str, Any], results: list[Any]) -> None:
    """A local run's figures: nothing sent or billed, every case valid at once or failed, each value held to the
    contract and the rules."""
    assert entry["mode"] == "local" and entry["cases"] == 8
    assert entry["vendor_calls"] == 0 and entry["cost_usd"] == 0.0
    assert entry["valid"] + entry["failed"] == 8 and entry["clean"] == entry["valid"]
    assert entry["reasked"] == entry["locally_repaired"] == 0
    assert entry["input_tokens"] > 0 and entry["output_tokens"] > 0
    assert set(entry["failures"]) <= {"semantic_violation"}
    assert entry["semantic_rejections"].get("five_needs_tag", 0) == entry["failed"]
    for result in results:
        if result.valid:
            ticket = Brief.model_validate(result.value)
            assert ticket.urgency != 5 or ticket.tags  # the rule five_needs_tag
        else:
            assert result.failure == "semantic_violation" and result.rejections == {"five_needs_tag": 1}


@pytest.mark.slow
def test_the_local_mode_is_a_run_of_its_own(scripted: Emulator, tiny_dir: Path) -> None:
    from guardrail.local.load import load_local_model

    tiny = load_local_model(str(tiny_dir), device="cpu")
    client = guardrail.wrap(openai.OpenAI(base_url=scripted.openai_base_url, api_key="test", timeout=10), retry=FAST)
    cases = parse_cases(CASES)
    vendor = run_matrix(client, cases, Extract, models=["gpt-4o"], modes=["native"], rules=RULES)
    local = run_matrix(client, cases, Brief, models=["gpt-4o"], modes=["local"], rules=RULES, local_model=tiny,
                       local_name="tiny", max_tokens=TOKENS, concurrency=2)
    native, entry = build_report([*vendor, *local])["runs"]
    check_run(native)
    assert native["vendor_calls"] == len(scripted.requests) == 13  # the local run sent nothing
    assert entry["model"] == "tiny"
    check_local(entry, local)
    again = run_matrix(None, cases, Brief, modes=["local"], rules=RULES, local_model=tiny, local_name="tiny",
                       max_tokens=TOKENS)
    assert [(r.outcome, r.value) for r in again] == [(r.outcome, r.value) for r in local]  # greedy: repeatable


@pytest.mark.slow
def test_a_local_value_that_breaks_a_rule_fails_and_counts_the_rule(tiny_dir: Path) -> None:
    from guardrail.local.load import load_local_model

    tiny = load_local_model(str(tiny_dir), device="cpu")
    results = run_matrix(None, parse_cases(CASES[:3]), Brief, modes=["local"], rules=[*RULES, refuse_all],
                         local_model=tiny, local_name="tiny", max_tokens=TOKENS)
    (entry,) = build_report(results)["runs"]
    assert (entry["cases"], entry["valid"], entry["failed"]) == (3, 0, 3)
    assert entry["failures"] == {"semantic_violation": 3}
    assert entry["semantic_rejections"].get("refuse_all") == 3 and entry["vendor_calls"] == 0


@pytest.mark.slow
def test_a_function_runs_locally(tiny_dir: Path) -> None:
    from guardrail.local.load import load_local_model

    tiny = load_local_model(str(tiny_dir), device="cpu")
    results = run_matrix(None, parse_cases(FUNCTION_CASES), modes=["local"], function=extract, local_model=tiny,
                         local_name="tiny", max_tokens=TOKENS)
    (entry,) = build_report(results)["runs"]
    assert (entry["mode"], entry["model"], entry["cases"]) == ("local", "tiny", 8)
    assert entry["vendor_calls"] == 0 and entry["cost_usd"] == 0.0 and entry["valid"] + entry["failed"] == 8


@pytest.mark.slow
def test_the_command_loads_the_local_model(tiny_dir: Path, cases_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    environ = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}  # no vendor
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "eval", str(cases_file), "--contract",
                           "support.eval_cases:Brief", "--rules", "support.eval_cases:RULES", "--modes", "local",
                           "--local-model", str(tiny_dir), "--max-tokens", str(TOKENS), "--json", str(out)],
                          capture_output=True, text=True, cwd=TESTS, env=environ, timeout=300)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(out.read_text(encoding="utf-8"))["runs"]
    assert (entry["mode"], entry["model"], entry["cases"]) == ("local", str(tiny_dir), 8)
    assert entry["vendor_calls"] == 0 and entry["cost_usd"] == 0.0 and entry["valid"] + entry["failed"] == 8


@pytest.mark.slow
def test_local_options_are_checked(tmp_path: Path, cases_file: Path) -> None:
    base = [sys.executable, "-m", "guardrail.cli", "eval", str(cases_file), "--contract", "support.eval_cases:Extract"]
    alone = subprocess.run([*base, "--modes", "local"], capture_output=True, text=True, cwd=TESTS, timeout=120)
    assert alone.returncode == 2 and "--local-model" in alone.stderr
    missing = subprocess.run([*base, "--modes", "local", "--local-model", str(tmp_path / "none")],
                             capture_output=True, text=True, cwd=TESTS, timeout=300)
    assert missing.returncode == 1 and "cannot load the local model" in missing.stderr, missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
