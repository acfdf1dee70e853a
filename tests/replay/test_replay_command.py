"""``guardrail replay``, run as a user (or CI) runs it: exit 0 within --max-regressions, 1 past it or on a bad
recording or contract, 2 on a malformed command line; always one line on stderr, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import openai
import pytest
from support.replay_contracts import Ticket, ticket

import guardrail
from guardrail.testing import Emulator, reply

TESTS = Path(__file__).resolve().parents[1]  # the command imports support.replay_contracts from here


def guardrail_replay(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "guardrail.cli", "replay", *args], capture_output=True, text=True,
                          cwd=TESTS, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture
def recorded(emu: Emulator, recording: Path) -> Path:
    """A recording of five clean calls with urgencies 1, 2, 3, 4, 5."""
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), record=recording)
    emu.script(*(reply.answer(ticket(u)) for u in range(1, 6)))
    for n in range(5):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": f"case {n}"}],
                                       response_model=Ticket)
    return recording


def test_the_same_contract_passes(recorded: Path) -> None:
    done = guardrail_replay(str(recorded), "--contract", "support.replay_contracts:Ticket")
    assert done.returncode == 0, done.stderr
    assert "replayed 5 records" in done.stdout and "regressions    0" in done.stdout


def test_regressions_fail_the_gate_with_their_paths(recorded: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = guardrail_replay(str(recorded), "--contract", "support.replay_contracts:Tight", "--json", str(out))
    assert done.returncode == 1
    assert "regression at line 4" in done.stdout and "$.urgency: Input should be less than or equal to 3" in \
        done.stdout
    assert done.stderr.strip().splitlines() == [
        "guardrail replay: 2 regressions, more than --max-regressions 0"]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert (report["records"], report["still_valid"], report["regressions"], report["newly_valid"]) == (5, 3, 2, 0)
    assert [each["line"] for each in report["details"]["regressions"]] == [4, 5]
    assert report["details"]["regressions"][0]["after"]["problems"][0]["path"] == "$.urgency"


def test_max_regressions_lets_known_ones_through(recorded: Path) -> None:
    done = guardrail_replay(str(recorded), "--contract", "support.replay_contracts:Tight", "--max-regressions", "2")
    assert done.returncode == 0, done.stderr


def test_json_to_stdout(recorded: Path) -> None:
    done = guardrail_replay(str(recorded), "--contract", "support.replay_contracts:WithPriority", "--json", "-")
    assert done.returncode == 0
    report = json.loads(done.stdout)
    assert (report["still_valid"], report["changed"]) == (5, 5)


def test_a_json_schema_file_is_a_contract(recorded: Path, tmp_path: Path) -> None:
    schema = tmp_path / "ticket.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"urgency": {"type": "integer", "maximum": 4},
                                                                   "summary": {"type": "string"}},
                                  "required": ["urgency", "summary"]}), encoding="utf-8")
    done = guardrail_replay(str(recorded), "--contract", str(schema), "--json", "-")
    assert done.returncode == 1 and json.loads(done.stdout)["regressions"] == 1


@pytest.mark.parametrize(("args", "code", "message"), [
    (["--contract", "support.replay_contracts:Nope"], 1, "has no attribute 'Nope'"),
    (["--contract", "no_such_module_here:Ticket"], 1, "cannot import 'no_such_module_here'"),
    (["--contract", "ticket.json"], 1, "neither MODULE:Type nor a JSON Schema file"),
    (["--contract", "support.replay_contracts:ticket"], 1, "not a type"),
    (["--contract", "support.replay_contracts:Ticket", "--rules", "support.replay_contracts:Ticket"], 1,
     "is not a guardrail Rule"),
    (["--contract", "support.replay_contracts:Ticket", "--max-regressions", "-1"], 2, "-1 is less than 0"),
    (["--contract", "support.replay_contracts:Ticket", "--rules", "nocolon"], 2, "expected MODULE:Type"),
    ([], 2, "--contract"),
])
def test_bad_command_lines_are_one_line(recorded: Path, args: list[str], code: int, message: str) -> None:
    done = guardrail_replay(str(recorded), *args)
    assert done.returncode == code
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr


def test_a_missing_or_empty_recording_is_an_error(tmp_path: Path) -> None:
    missing = guardrail_replay(str(tmp_path / "none.jsonl"), "--contract", "support.replay_contracts:Ticket")
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("garbage\n", encoding="utf-8")
    done = guardrail_replay(str(empty), "--contract", "support.replay_contracts:Ticket")
    assert done.returncode == 1 and "holds no record (1 unreadable lines)" in done.stderr
