"""The `guardrail` command: demo, schema, emulator - run as a user would, in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import openai
import pytest

ROOT = Path(__file__).resolve().parents[1]
NO_KEYS = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GUARDRAIL_VENDOR"}}


def guardrail(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "guardrail.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False, env={**NO_KEYS, "COLUMNS": "200"}, cwd=ROOT)


def test_demo_runs_against_the_emulator_without_keys_and_says_so() -> None:
    started = time.monotonic()
    done = guardrail("demo")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 30
    out = done.stdout
    assert "No OPENAI_API_KEY or ANTHROPIC_API_KEY set" in out and "emulator" in out
    assert "6/6 inquiries became valid tickets" in out
    for expected in ("strip_fence", "trailing_comma", "coerce_integer", "enum_fold", "mode: native"):
        assert expected in out, expected  # words short enough not to be wrapped by the table
    assert "배송이" in out
    assert "guardrail.attempt" not in out + done.stderr  # the command shows its own output, not log lines


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_demo_json_output_is_machine_readable(vendor: str) -> None:
    done = guardrail("demo", "--json", "--vendor", vendor)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["source"] == "emulator"
    rows = data["rows"]
    assert [r["result"]["category"] for r in rows] == ["billing", "shipping", "account", "technical", "shipping",
                                                       "billing"]
    assert all(r["error"] is None for r in rows)
    assert rows[3]["vendor_returned"] == '{"urgency": "high (4)", "category": "technical"}'
    assert rows[3]["result"]["urgency"] == 4
    steps = [" | ".join(r["steps"]) for r in rows]
    assert "repairs: strip_fence, strip_prose, trailing_comma" in steps[1]
    assert "case_drift x3" in steps[2] and "coerce_integer" in steps[2]
    assert "attempt 1: schema_violation -> one feedback round" in steps[3]
    assert "transport retries: 1" in steps[4] and "limit raised once" in steps[4]


def test_schema_command_shows_lowered_schema_and_report() -> None:
    done = guardrail("schema", "guardrail.demo:Ticket", "--vendor", "openai", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["mode"] == "native" and data["modes_available"][0] == "native"
    assert data["schema"]["additionalProperties"] is False
    actions = {(e["path"], e["keyword"]): e["action"] for e in data["report"]["entries"]}
    assert actions[("/properties/summary", "maxLength")] == "post_validated"
    assert actions[("/properties/urgency", "minimum")] == "enforced"
    anthropic = json.loads(guardrail("schema", "guardrail.demo:Ticket", "--vendor", "anthropic", "--json").stdout)
    anthropic_actions = {(e["path"], e["keyword"]): e["action"] for e in anthropic["report"]["entries"]}
    assert anthropic_actions[("/properties/urgency", "minimum")] == "post_validated"
    table = guardrail("schema", "guardrail.demo:Ticket", "--vendor", "vllm")
    assert table.returncode == 0 and "CompileReport (grammar)" in table.stdout


def test_schema_command_reports_a_rejected_mode_with_a_nonzero_status(tmp_path: Path) -> None:
    (tmp_path / "contracts.py").write_text("from pydantic import BaseModel\n"
                                           "class Prices(BaseModel):\n    by_sku: dict[str, float]\n")
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "schema", "contracts:Prices", "--mode", "native",
                           "--json"], capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
                          env=NO_KEYS)
    assert done.returncode == 1
    report = json.loads(done.stdout)["report"]
    assert report["ok"] is False and any(e["action"] == "rejected" for e in report["entries"])
    assert json.loads(done.stdout)["modes_available"][0] == "tool"
    bad = guardrail("schema", "no_such_module:Thing")
    assert bad.returncode != 0 and "cannot import" in bad.stderr


def test_help_explains_each_command() -> None:
    top = guardrail("--help")
    assert top.returncode == 0 and all(c in top.stdout for c in ("demo", "schema", "emulator"))
    for command in ("demo", "schema"):
        assert guardrail(command, "--help").returncode == 0
    emulator = guardrail("emulator", "--help")
    assert emulator.returncode == 0 and "--script" in emulator.stdout


def test_emulator_command_serves_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"answer": '{"ok": true}'}, {"rate_limited": {"retry_after": 0}}]))
    process = subprocess.Popen([sys.executable, "-m", "guardrail.cli", "emulator", "--script", str(script)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=NO_KEYS)
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while not any("OpenAI:" in line for line in lines):
            lines.append(process.stdout.readline())
        base_url = next(line for line in lines if "OpenAI:" in line).split("base_url=")[1].strip()
        client: Any = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
        first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert first.choices[0].message.content == '{"ok": true}'
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)


def test_a_bad_script_file_is_a_clear_error(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"answr": "x"}]))
    done = guardrail("emulator", "--script", str(script), timeout=30)
    assert done.returncode == 2 and "item 0" in done.stderr


def test_demo_with_a_key_calls_the_vendor_it_names() -> None:
    """The live path, pointed at an emulator through GUARDRAIL_BASE_URL (no real vendor in tests)."""
    from guardrail.testing import Emulator, reply

    with Emulator() as emu:
        emu.responder = lambda request: reply.answer('{"urgency": 2, "category": "other", "summary": "s"}')
        env = {**NO_KEYS, "OPENAI_API_KEY": "sk-test", "GUARDRAIL_BASE_URL": emu.openai_base_url}
        done = subprocess.run([sys.executable, "-m", "guardrail.cli", "demo", "--json"], capture_output=True,
                              text=True, timeout=120, check=False, env=env, cwd=ROOT)
        models = {r.model for r in emu.requests}
    assert done.returncode == 0, done.stderr
    assert "Calling the real OpenAI API (gpt-4o-mini)" in done.stderr
    data = json.loads(done.stdout)
    assert data["source"] == "live" and len(data["rows"]) == 6
    assert all(r["result"] == {"urgency": 2, "category": "other", "summary": "s"} for r in data["rows"])
    assert models == {"gpt-4o-mini"}
