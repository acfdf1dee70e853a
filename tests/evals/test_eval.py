"""The experiment matrix end to end: scripted answers whose counts are known in advance give exactly those counts,
``vendor_calls`` equals the requests the emulator received, and a resumed run sends nothing it already did."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from support.eval_cases import CASES, RULES, RUN, Extract, Script, check_run
from support.waiting import until

import guardrail
from guardrail.errors import CommandError
from guardrail.evals import build_report, load_cases, parse_cases, read_state, run_matrix
from guardrail.testing import Emulator

FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.05, deadline=30)
MODELS = ["gpt-4o", "gpt-4o-mini"]
MODES = ["native", "json"]
TESTS = Path(__file__).resolve().parents[1]


def client(emu: Emulator) -> Any:
    return guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10), retry=FAST)


def test_the_report_counts_exactly_what_was_scripted(scripted: Emulator, tmp_path: Path) -> None:
    cases = parse_cases(CASES)
    results = run_matrix(client(scripted), cases, Extract, models=MODELS, modes=MODES, rules=RULES, concurrency=3,
                         state=tmp_path / "state.jsonl")
    report = build_report(results, contract="Extract")
    assert [(run["mode"], run["model"]) for run in report["runs"]] == [
        (mode, model) for mode in MODES for model in MODELS]
    for entry in report["runs"]:
        check_run(entry)
    assert sum(entry["vendor_calls"] for entry in report["runs"]) == len(scripted.requests) == 4 * 13
    hints = report["suggestions"]
    assert hints["aliases"] == {"Summary": "summary"}
    assert hints["drifted_names"] == [{"from": "Summary", "to": "summary", "seen": 4}]
    assert hints["repairs"]["case_drift"] == {"answers": 4, "accepted": 4, "rate": 1.0}
    assert len(read_state(tmp_path / "state.jsonl")) == 32


def test_a_resumed_run_sends_only_what_is_left(scripted: Emulator, tmp_path: Path) -> None:
    cases, state = parse_cases(CASES), tmp_path / "state.jsonl"
    run_matrix(client(scripted), cases, Extract, models=MODELS[:1], modes=MODES[:1], rules=RULES, state=state)
    sent = len(scripted.requests)
    assert sent == 13
    lines = state.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["case"] not in {"c4", "c8"}]  # as if stopped before them
    state.write_text("\n".join(kept) + "\n" + lines[0][:30], encoding="utf-8")  # and a line cut short
    scripted.responder = Script()  # the cases' answers from the start again
    results = run_matrix(client(scripted), cases, Extract, models=MODELS[:1], modes=MODES[:1], rules=RULES,
                         state=state, resume=True)
    assert len(scripted.requests) - sent == 3 + 2  # c4's three attempts, c8's 429 and answer
    check_run(build_report(results)["runs"][0])
    again = run_matrix(client(scripted), cases, Extract, models=MODELS[:1], modes=MODES[:1], rules=RULES,
                       state=state, resume=True)
    assert len(scripted.requests) - sent == 5 and again == results  # nothing left to run


def test_the_command_writes_the_report(scripted: Emulator, cases_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    environ = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": scripted.openai_base_url,
               "GUARDRAIL_VENDOR": "openai"}
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "eval", str(cases_file),
                           "--contract", "support.eval_cases:Extract", "--rules", "support.eval_cases:RULES",
                           "--model", "gpt-4o", "--modes", "native,json", "--concurrency", "2", "--json", str(out),
                           "--html", str(tmp_path / "report.html")],
                          capture_output=True, text=True, cwd=TESTS, env=environ, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["contract"] == "support.eval_cases.Extract" and len(report["runs"]) == 2
    for entry in report["runs"]:
        check_run(entry)
    assert sum(entry["vendor_calls"] for entry in report["runs"]) == len(scripted.requests) == 26
    assert "native" in done.stdout and "gpt-4o" in done.stdout
    assert len(read_state(f"{out}.cases.jsonl")) == 16
    assert (tmp_path / "report.html").read_text(encoding="utf-8").count("<svg") == 5


def test_the_command_runs_on_gemini(scripted: Emulator, cases_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    environ = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    environ.update(GEMINI_API_KEY="test", GOOGLE_GEMINI_BASE_URL=scripted.gemini_base_url)
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "eval", str(cases_file), "--vendor", "gemini",
                           "--contract", "support.eval_cases:Extract", "--rules", "support.eval_cases:RULES",
                           "--model", "gemini-2.5-flash", "--modes", "native", "--json", str(out)],
                          capture_output=True, text=True, cwd=TESTS, env=environ, timeout=300)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(out.read_text(encoding="utf-8"))["runs"]
    assert {name: entry[name] for name in RUN} == RUN  # the same scripted counts as through the openai SDK
    assert entry["vendor_calls"] == len(scripted.requests) == 13
    assert {r.api for r in scripted.requests} == {"gemini"}


@pytest.mark.parametrize(("lines", "message"), [
    (["not json"], "cases:1: not JSON"),
    (['{"messages": []}'], "non-empty list"),
    (['{"id": 1, "messages": [{"role": "user", "content": "a"}]}'] * 2, "used twice"),
    ([""], "holds no case"),
])
def test_cases_that_cannot_be_read_are_refused_with_their_line(lines: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        parse_cases(lines)


def test_a_missing_cases_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="does not exist"):
        load_cases(tmp_path / "none.jsonl")
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "eval", str(tmp_path / "none.jsonl"),
                           "--contract", "support.eval_cases:Extract", "--model", "m"], capture_output=True,
                          text=True, cwd=TESTS, timeout=120, env={**os.environ, "OPENAI_API_KEY": "test"})
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1 and "does not exist" in done.stderr
    usage = subprocess.run([sys.executable, "-m", "guardrail.cli", "eval", "cases.jsonl", "--contract", "a:B",
                            "--model", "m", "--resume"], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert usage.returncode == 2 and "--resume needs the state file" in usage.stderr


def test_ctrl_c_keeps_what_was_done_and_resume_runs_only_the_rest(scripted: Emulator, cases_file: Path,
                                                                   tmp_path: Path) -> None:
    scripted.latency = 0.2  # each request takes a while, so the run is still going when it is interrupted
    out, state = tmp_path / "report.json", tmp_path / "report.json.cases.jsonl"
    environ = {**os.environ, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": scripted.openai_base_url,
               "GUARDRAIL_VENDOR": "openai"}
    command = [sys.executable, "-m", "guardrail.cli", "eval", str(cases_file), "--contract",
               "support.eval_cases:Extract", "--rules", "support.eval_cases:RULES", "--model", "gpt-4o",
               "--modes", "native", "--concurrency", "1", "--json", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=TESTS,
                               env=environ)
    try:
        until(lambda: state.exists() and len(state.read_text(encoding="utf-8").splitlines()) >= 2,
                 "two cases finished")
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr
    kept = read_state(state)
    assert 2 <= len(kept) < 8 and not out.exists()
    sent = len(scripted.requests)
    assert sent == sum(result.vendor_calls for result in kept)  # the case in flight finished and was kept
    done = subprocess.run([*command, "--resume"], capture_output=True, text=True, cwd=TESTS, env=environ,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    (entry,) = json.loads(out.read_text(encoding="utf-8"))["runs"]
    check_run(entry)
    assert len(scripted.requests) == 13  # every case sent once, across the two runs


def test_a_client_the_sdk_refuses_to_make_is_one_line(cases_file: Path) -> None:
    environ = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "eval", str(cases_file), "--contract",
                           "support.eval_cases:Extract", "--model", "m", "--vendor", "openai"], capture_output=True,
                          text=True, cwd=TESTS, env=environ, timeout=120)
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cannot make the openai client" in done.stderr
