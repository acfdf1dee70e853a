"""``--function`` cases: a decorated function run per model and mode gives the same scripted figures as the
messages cases, ``vendor_calls`` equals the requests the emulator received, and each run's ``--model`` is the
model the requests named (the decorator's own is replaced)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.eval_cases import FUNCTION_CASES, check_run, extract

from guardrail.errors import CommandError
from guardrail.evals import build_report, parse_cases, run_matrix
from guardrail.evals.function import bind_inputs
from guardrail.testing import Emulator

MODELS = ["gpt-4o", "gpt-4o-mini"]
MODES = ["native", "json"]
TESTS = Path(__file__).resolve().parents[1]


def test_a_decorated_function_gives_the_scripted_counts(scripted: Emulator) -> None:
    client = openai.OpenAI(base_url=scripted.openai_base_url, api_key="test", timeout=10)  # replaces the function's
    results = run_matrix(client, parse_cases(FUNCTION_CASES), models=MODELS, modes=MODES, function=extract,
                         concurrency=3)
    report = build_report(results)
    assert [(run["mode"], run["model"]) for run in report["runs"]] == [
        (mode, model) for mode in MODES for model in MODELS]
    for entry in report["runs"]:
        check_run(entry)
    assert sum(entry["vendor_calls"] for entry in report["runs"]) == len(scripted.requests) == 4 * 13
    assert {request.body["model"] for request in scripted.requests} == set(MODELS)
    assert report["suggestions"]["aliases"] == {"Summary": "summary"}


def test_the_command_runs_a_function(scripted: Emulator, tmp_path: Path) -> None:
    cases, out = tmp_path / "cases.jsonl", tmp_path / "report.json"
    cases.write_text("".join(case + "\n" for case in FUNCTION_CASES), encoding="utf-8")
    environ = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": scripted.openai_base_url,
               "GUARDRAIL_VENDOR": "openai"}
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "eval", str(cases), "--function",
                           "support.eval_cases:extract", "--model", "gpt-4o", "--modes", "native",
                           "--json", str(out)], capture_output=True, text=True, cwd=TESTS, env=environ, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["function"] == "support.eval_cases:extract" and report["contract"] == "support.eval_cases.Extract"
    (entry,) = report["runs"]
    check_run(entry)
    assert entry["vendor_calls"] == len(scripted.requests) == 13
    assert {request.body["model"] for request in scripted.requests} == {"gpt-4o"}


def test_function_options_that_do_not_go_together_are_usage_errors(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(FUNCTION_CASES[0] + "\n", encoding="utf-8")
    base = [sys.executable, "-m", "guardrail.cli", "eval", str(cases), "--model", "m"]
    for extra, message in [
        (["--function", "support.eval_cases:extract", "--contract", "support.eval_cases:Extract"], "or --function"),
        (["--function", "support.eval_cases:extract", "--rules", "support.eval_cases:RULES"], "own rules"),
        (["--function", "support.eval_cases:Extract"], "not a @guardrail.structured function"),
    ]:
        done = subprocess.run([*base, *extra], capture_output=True, text=True, cwd=TESTS, timeout=120,
                              env={**os.environ, "OPENAI_API_KEY": "test"})
        assert done.returncode in (1, 2) and message in done.stderr, (extra, done.stderr)


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "x", "input": {"text": "a", "other": 1}}', "does not fit"),
    ('{"id": "x", "input": {"text": 5}}', "input 'text' is not a str"),
    ('{"id": "x", "messages": [{"role": "user", "content": "a"}]}', "not \"messages\""),
])
def test_cases_that_do_not_fit_the_function_are_refused_before_any_call(line: str, message: str) -> None:
    with pytest.raises(CommandError, match=message):
        bind_inputs(extract, parse_cases([line]))


def test_a_case_has_messages_or_input_not_both() -> None:
    with pytest.raises(CommandError, match="one of them"):
        parse_cases(['{"input": "a", "messages": [{"role": "user", "content": "a"}]}'])


@given(st.one_of(st.text(), st.dictionaries(st.just("text"), st.text(), min_size=1, max_size=1)))
def test_any_text_input_binds_to_the_text_argument(given_input: object) -> None:
    (case,) = parse_cases([json.dumps({"id": "x", "input": given_input})])
    args, kwargs = bind_inputs(extract, [case])["x"]
    want = given_input["text"] if isinstance(given_input, dict) else given_input
    assert args == () and kwargs == {"text": want}
