"""``guardrail batch submit|status|collect`` run as a user would, in a subprocess, against the emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.batch_jobs import Model, gemini_requests, requests

from guardrail.testing import Emulator

ROOT = Path(__file__).resolve().parents[2]


def guardrail(emu: Emulator, *args: str, vendor: str = "openai") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}", "OPENAI_API_KEY": "sk-test",
           "OPENAI_BASE_URL": emu.openai_base_url, "ANTHROPIC_API_KEY": "sk-ant-test",
           "ANTHROPIC_BASE_URL": emu.anthropic_base_url, "GEMINI_API_KEY": "test",
           "GOOGLE_GEMINI_BASE_URL": emu.gemini_base_url}
    return subprocess.run([sys.executable, "-m", "guardrail.cli", "batch", *args], capture_output=True, text=True,
                          timeout=120, check=False, env=env, cwd=ROOT)


def write_requests(path: Path, kinds: tuple[str, ...], count: int, **extra: object) -> Path:
    path.write_text("".join(json.dumps({**r, **extra}) + "\n" for r in requests(count, kinds)))
    return path


@pytest.mark.slow
def test_submit_status_collect(emu: Emulator, tmp_path: Path) -> None:
    emu.responder = Model()
    source = write_requests(tmp_path / "requests.jsonl", ("good", "bad", "failed"), 6)
    db = str(tmp_path / "jobs.db")
    done = guardrail(emu, "submit", str(source), "--contract", "support.batch_jobs:Ticket", "--store", db,
                     "--live-threshold", "0")
    assert done.returncode == 0, done.stderr
    job = done.stdout.strip()
    assert job.startswith("gbatch_")

    status = guardrail(emu, "status", job, "--store", db, "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    assert data["round"] == 0 and data["items"] == 6 and data["batches"][0]["status"] == "in_progress"

    out = tmp_path / "results.jsonl"
    collected = guardrail(emu, "collect", job, "--store", db, "--out", str(out), "--poll-interval", "0")
    assert collected.returncode == 1  # the "failed" items ended without a value
    assert "2 of 6 items ended without a value" in collected.stderr
    lines = {line["custom_id"]: line for line in map(json.loads, out.read_text().splitlines())}
    assert len(lines) == 6
    assert lines["good-0"]["value"] == {"title": "printer on fire", "priority": 2}
    assert lines["bad-1"]["attempts"] == 2
    assert lines["failed-2"]["error"] == "VendorError"


@pytest.mark.slow
def test_anthropic_job_collects_with_exit_status_0(emu: Emulator, tmp_path: Path) -> None:
    emu.responder = Model()
    source = write_requests(tmp_path / "requests.jsonl", ("good", "repairable"), 4, model="claude-sonnet-4-5",
                            max_tokens=128)
    db = str(tmp_path / "jobs.db")
    done = guardrail(emu, "submit", str(source), "--contract", "support.batch_jobs:Ticket", "--store", db,
                     "--vendor", "anthropic")
    assert done.returncode == 0, done.stderr
    collected = guardrail(emu, "collect", done.stdout.strip(), "--store", db, "--poll-interval", "0")
    assert collected.returncode == 0, collected.stderr
    assert len(collected.stdout.splitlines()) == 4


@pytest.mark.slow
def test_gemini_job_submits_and_collects(emu: Emulator, tmp_path: Path) -> None:
    emu.responder = Model()
    source = tmp_path / "requests.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in gemini_requests(4, ("good", "bad"))))
    db = str(tmp_path / "jobs.db")
    done = guardrail(emu, "submit", str(source), "--contract", "support.batch_jobs:Ticket", "--store", db,
                     "--vendor", "gemini", "--live-threshold", "0")
    assert done.returncode == 0, done.stderr
    job = done.stdout.strip()
    status = guardrail(emu, "status", job, "--store", db, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["batches"][0]["status"] == "JOB_STATE_RUNNING"
    collected = guardrail(emu, "collect", job, "--store", db, "--poll-interval", "0")
    assert collected.returncode == 0, collected.stderr
    lines = {line["custom_id"]: line for line in map(json.loads, collected.stdout.splitlines())}
    assert {c: line["attempts"] for c, line in lines.items()} == {"good-0": 1, "bad-1": 2, "good-2": 1, "bad-3": 2}
    assert lines["bad-1"]["value"] == {"title": "printer on fire", "priority": 2}
    assert {r.api for r in emu.requests} == {"gemini"}
    wrong = guardrail(emu, "submit", str(source), "--contract", "support.batch_jobs:Ticket", "--store", db,
                      "--vendor", "gemini", "--api", "chat")
    assert wrong.returncode == 2 and "not an API of gemini" in wrong.stderr


@pytest.mark.slow
def test_errors_are_one_line(emu: Emulator, tmp_path: Path) -> None:
    source = write_requests(tmp_path / "requests.jsonl", ("good",), 1)
    db = str(tmp_path / "jobs.db")
    usage = guardrail(emu, "submit", str(source), "--contract", "support.batch_jobs:Ticket")
    assert usage.returncode == 2 and "--store" in usage.stderr
    cases = [("submit", str(source), "--contract", "nowhere.models:Ticket", "--store", db),
             ("submit", str(tmp_path / "missing.jsonl"), "--contract", "support.batch_jobs:Ticket", "--store", db),
             ("status", "gbatch_unknown", "--store", db),
             ("collect", "gbatch_unknown", "--store", db)]
    for args in cases:
        done = guardrail(emu, *args)
        assert done.returncode == 1, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    done = guardrail(emu, "submit", str(tmp_path / "broken.jsonl"), "--contract", "support.batch_jobs:Ticket",
                     "--store", db)
    assert done.returncode == 1 and "broken.jsonl:1: not JSON" in done.stderr
    (tmp_path / "latin1.jsonl").write_bytes(b'{"custom_id": "caf\xe9"}\n')
    done = guardrail(emu, "submit", str(tmp_path / "latin1.jsonl"), "--contract", "support.batch_jobs:Ticket",
                     "--store", db)
    assert done.returncode == 1 and "not UTF-8" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not [r for r in emu.requests if "x-batch-id" in r.headers]  # nothing was sent
