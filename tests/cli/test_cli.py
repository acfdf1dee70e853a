"""The `guardrail` command: demo, schema, emulator - run as a user would, in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest

ROOT = Path(__file__).resolve().parents[2]
NO_KEYS = {k: v for k, v in os.environ.items()
           if k not in {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "GUARDRAIL_VENDOR"}}


def guardrail(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "guardrail.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False, env={**NO_KEYS, "COLUMNS": "200"}, cwd=ROOT)


@pytest.mark.slow
def test_demo_runs_against_the_emulator_without_keys_and_says_so() -> None:
    done = guardrail("demo")  # the subprocess timeout is a hang guard; speed is not a test's business
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "No OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY set" in out and "emulator" in out
    assert "6/6 inquiries became valid tickets" in out
    for expected in ("strip_fence", "trailing_comma", "coerce_integer", "enum_fold", "mode: native"):
        assert expected in out, expected  # words short enough not to be wrapped by the table
    assert "배송이" in out
    assert "guardrail.attempt" not in out + done.stderr  # the command shows its own output, not log lines


@pytest.mark.slow
@pytest.mark.parametrize("vendor", ["openai", "anthropic", "gemini"])
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


@pytest.mark.slow
def test_schema_command_shows_lowered_schema_and_report() -> None:
    done = guardrail("schema", "guardrail.cli.triage:Ticket", "--vendor", "openai", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["mode"] == "native" and data["modes_available"][0] == "native"
    assert data["schema"]["additionalProperties"] is False
    actions = {(e["path"], e["keyword"]): e["action"] for e in data["report"]["entries"]}
    assert actions[("/properties/summary", "maxLength")] == "post_validated"
    assert actions[("/properties/urgency", "minimum")] == "enforced"
    anthropic = json.loads(guardrail("schema", "guardrail.cli.triage:Ticket", "--vendor", "anthropic", "--json").stdout)
    anthropic_actions = {(e["path"], e["keyword"]): e["action"] for e in anthropic["report"]["entries"]}
    assert anthropic_actions[("/properties/urgency", "minimum")] == "post_validated"
    table = guardrail("schema", "guardrail.cli.triage:Ticket", "--vendor", "vllm")
    assert table.returncode == 0 and "CompileReport (vllm)" in table.stdout  # the server compiler's own dialect


@pytest.mark.slow
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


@pytest.mark.slow
def test_help_explains_each_command() -> None:
    top = guardrail("--help")
    assert top.returncode == 0 and all(c in top.stdout for c in ("demo", "schema", "emulator"))
    for command in ("demo", "schema"):
        assert guardrail(command, "--help").returncode == 0
    emulator = guardrail("emulator", "--help")
    assert emulator.returncode == 0 and "--script" in emulator.stdout


@pytest.mark.slow
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
    assert done.returncode == 1 and "item 0" in done.stderr  # invalid input (1), not a usage error (2)


@pytest.mark.slow
@pytest.mark.parametrize(("key", "vendor", "model"), [("OPENAI_API_KEY", "OpenAI", "gpt-4o-mini"),
                                                      ("GEMINI_API_KEY", "Gemini", "gemini-2.5-flash")])
def test_demo_with_a_key_calls_the_vendor_it_names(key: str, vendor: str, model: str) -> None:
    """The live path, pointed at an emulator through GUARDRAIL_BASE_URL (no real vendor in tests)."""
    from guardrail.testing import Emulator, reply

    with Emulator() as emu:
        emu.responder = lambda request: reply.answer('{"urgency": 2, "category": "other", "summary": "s"}')
        base_url = emu.gemini_base_url if vendor == "Gemini" else emu.openai_base_url
        env = {**NO_KEYS, key: "sk-test", "GUARDRAIL_BASE_URL": base_url}
        done = subprocess.run([sys.executable, "-m", "guardrail.cli", "demo", "--json"], capture_output=True,
                              text=True, timeout=120, check=False, env=env, cwd=ROOT)
        seen = {(r.api, r.model) for r in emu.requests}
    assert done.returncode == 0, done.stderr
    assert f"Calling the real {vendor} API ({model})" in done.stderr
    data = json.loads(done.stdout)
    assert data["source"] == "live" and len(data["rows"]) == 6
    assert all(r["result"] == {"urgency": 2, "category": "other", "summary": "s"} for r in data["rows"])
    assert seen == {("gemini" if vendor == "Gemini" else "chat", model)}


# --- user errors: one line naming the argument or file and what is wrong, exit 2 (usage) or 1 (invalid input) ---


def as_command(*args: str, prelude: str = "") -> list[str]:
    """The argv of the installed ``guardrail`` console script, run from this checkout: ``-P`` keeps the current
    directory off ``sys.path`` exactly as the console script does (``python -m`` would put it there)."""
    return [sys.executable, "-P", "-c", f"import sys; {prelude}from guardrail.cli import main; sys.exit(main())",
            *args]


def console_script(*args: str, cwd: Path = ROOT, prelude: str = "",
                   env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(as_command(*args, prelude=prelude), capture_output=True, text=True, timeout=120,
                          check=False, cwd=cwd, env={**NO_KEYS, "PYTHONPATH": str(ROOT), **(env or {})})


def one_line(err: str, *words: str) -> str:
    """The single line of ``err``, checked to contain each of ``words`` and no traceback."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from guardrail.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("model", [None, "gemini-3-pro-preview"])
def test_schema_command_lowers_for_gemini(capsys: pytest.CaptureFixture[str], model: str | None) -> None:
    code, out, _ = run_main(capsys, "schema", "guardrail.cli.triage:Ticket", "--vendor", "gemini", "--json",
                            *(("--model", model) if model else ()))
    data = json.loads(out)
    assert code == 0 and data["vendor"] == "gemini"
    assert data["mode"] == "native" and data["report"]["dialect"] == "gemini"  # not the unknown model's prompt mode


def test_the_schema_commands_vendors_are_the_hosted_ones_and_every_server_kind() -> None:
    from guardrail.cli.common import HOSTED_VENDORS
    from guardrail.cli.schema import VENDORS
    from guardrail.vendors.profiles import SERVER_KINDS

    assert (*HOSTED_VENDORS, *SERVER_KINDS) == VENDORS


def test_schema_command_warns_of_a_reasoning_field_after_the_answer(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "late_reasoning_contracts.py").write_text(
        "from pydantic import BaseModel\n"
        "class Late(BaseModel):\n    answer: str\n    reasoning: str\n"
        "class Early(BaseModel):\n    reasoning: str\n    answer: str\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, out, _ = run_main(capsys, "schema", "late_reasoning_contracts:Late", "--json")
    assert code == 0 and json.loads(out)["warnings"] == [
        "/properties/reasoning: 'reasoning' comes after 'answer'; the model writes fields in schema order, so it "
        "would reason after answering: put 'reasoning' first, or drop it and call with reason_first='field' or "
        "'two_stage' (guardrail.call.reasoning)"]
    code, out, _ = run_main(capsys, "schema", "late_reasoning_contracts:Late")
    shown = " ".join(out.split())  # the console folds long lines at its width
    assert code == 0 and "warning: /properties/reasoning: 'reasoning' comes after 'answer'" in shown
    code, out, _ = run_main(capsys, "schema", "late_reasoning_contracts:Early", "--json")
    assert code == 0 and json.loads(out)["warnings"] == []


@pytest.mark.parametrize(("args", "words"), [
    ((), ("guardrail:", "COMMAND")),
    (("bogus",), ("guardrail:", "invalid choice", "'bogus'")),
    (("policy",), ("guardrail policy:", "ACTION")),
    (("schema", "no_colon"), ("guardrail schema:", "MODULE:Type", "'no_colon'")),
    (("schema", "guardrail.cli.triage:Ticket", "--vendor", "nope"), ("--vendor", "'nope'")),
    (("emulator", "--port", "99999"), ("guardrail emulator:", "--port", "99999", "0-65535")),
    (("emulator", "--port", "http"), ("--port", "'http'")),
    (("rules", "check", "--contract", "garbage"), ("guardrail rules check:", "--contract", "NAME=MODULE:Type",
                                                   "'garbage'")),
    (("rules", "check", "--contract", "ticket_triage=no_colon"), ("--contract", "MODULE:Type")),
    (("policy", "check", "--strict-typo"), ("unrecognized arguments", "--strict-typo")),
])
def test_usage_errors_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], args: tuple[str, ...],
                                              words: tuple[str, ...]) -> None:
    code, out, err = run_main(capsys, *args)
    assert code == 2 and out == ""
    one_line(err, *words)


@pytest.mark.parametrize(("args", "words"), [
    (("schema", "guardrail.cli.triage:NotAType"),
     ("guardrail schema:", "'guardrail.cli.triage'", "no attribute 'NotAType'")),
    (("schema", "guardrail.cli.triage:INQUIRIES"), ("'guardrail.cli.triage:INQUIRIES'", "is a tuple, not a type")),
    (("schema", "guardrail.cli.triage:triage"), ("is a function, not a type",)),
    (("schema", "no_such_module_xyz:Thing"), ("cannot import 'no_such_module_xyz'", "no such module")),
    (("policy", "check", "{tmp}/missing"), ("guardrail policy check:", "missing: does not exist")),
    (("rules", "check", "{tmp}/missing"), ("guardrail rules check:", "missing: does not exist")),
    (("policy", "check", "{tmp}"), ("no policy files", "nothing to check")),  # an empty directory passes nothing
    (("rules", "check", "{tmp}"), ("no rule sets", "nothing to check")),
    (("emulator", "--script", "{tmp}/missing.json"), ("guardrail emulator:", "missing.json: does not exist")),
])
def test_invalid_input_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                              args: tuple[str, ...], words: tuple[str, ...]) -> None:
    code, out, err = run_main(capsys, *(arg.replace("{tmp}", str(tmp_path)) for arg in args))
    assert code == 1 and out == ""
    one_line(err, *words)


def test_a_module_that_fails_to_import_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_contracts_cli.py").write_text("import no_such_dependency_xyz\n")
    (tmp_path / "raising_contracts_cli.py").write_text("raise RuntimeError('configuration missing:\\n  DB_URL')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run_main(capsys, "schema", "broken_contracts_cli:Ticket")
    assert code == 1
    one_line(err, "cannot import 'broken_contracts_cli'", "no_such_dependency_xyz")
    code, _, err = run_main(capsys, "schema", "raising_contracts_cli:Ticket")
    assert code == 1
    one_line(err, "RuntimeError: configuration missing: DB_URL")  # a multi-line message folded into one


def test_an_emulator_port_already_in_use_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = run_main(capsys, "emulator", "--port", str(port))
    assert code == 1 and out == ""
    assert "already in use" in one_line(err, "guardrail emulator:", f"127.0.0.1:{port}").lower()


@pytest.mark.parametrize(("vendor", "module"), [("openai", "openai"), ("anthropic", "anthropic"),
                                               ("gemini", "google.genai")])
@pytest.mark.slow
def test_demo_without_the_vendor_sdk_names_the_extra_to_install(vendor: str, module: str) -> None:
    """``sys.modules[name] = None`` makes ``import name`` fail exactly as on an install without the extra."""
    done = console_script("demo", "--vendor", vendor, prelude=f"sys.modules[{module!r}] = None; ")
    assert done.returncode == 1
    one_line(done.stderr, "guardrail demo:", f"pip install 'guardrail-llm[{vendor}]'")


@pytest.mark.slow
def test_demo_with_an_unknown_vendor_in_the_environment_is_one_line() -> None:
    done = console_script("demo", env={"OPENAI_API_KEY": "sk-test", "GUARDRAIL_VENDOR": "mistral"})
    assert done.returncode == 1
    one_line(done.stderr, "guardrail demo:", "GUARDRAIL_VENDOR", "'mistral'")


@pytest.mark.parametrize("args", [("schema", "guardrail.cli.triage:Ticket", "--json"),
                                  ("schema", "guardrail.cli.triage:Ticket")])
@pytest.mark.slow
def test_a_reader_that_goes_away_ends_the_command_quietly(args: tuple[str, ...]) -> None:
    """``guardrail schema ... | head -c 10``, made deterministic: the pipe's read end is closed before the
    command starts, so its first write fails with EPIPE (a real ``head`` may or may not exit in time)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(as_command(*args), stdout=write_end, stderr=subprocess.PIPE, text=True,
                              timeout=120, check=False, cwd=ROOT, env={**NO_KEYS, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(write_end)
    assert done.returncode == 141 and done.stderr == ""  # 128 + SIGPIPE, as a shell reports it; nothing on stderr


def test_ctrl_c_is_one_line_and_exit_130(tmp_path: Path) -> None:
    (tmp_path / "slow_contracts.py").write_text("import sys, time\nprint('importing', flush=True)\ntime.sleep(60)\n")
    process = subprocess.Popen(as_command("schema", "slow_contracts:Ticket"), cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**NO_KEYS, "PYTHONPATH": str(ROOT)})
    try:
        assert process.stdout is not None and process.stdout.readline() == "importing\n"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130
    one_line(err, "interrupted")


@pytest.mark.slow
def test_the_console_script_imports_contracts_from_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "contracts.py").write_text("from pydantic import BaseModel\nfrom guardrail.cli.triage import Ticket\n\n"
                                           "class Other(BaseModel):\n    priority: int\n")
    fallbacks = str(ROOT / "fallbacks")
    ok = console_script("rules", "check", fallbacks, "--contract", "ticket_triage=contracts:Ticket", cwd=tmp_path)
    assert ok.returncode == 0 and ok.stderr == "" and "2 valid rule sets" in ok.stdout
    wrong = console_script("rules", "check", fallbacks, "--contract", "ticket_triage=contracts:Other", cwd=tmp_path)
    assert wrong.returncode == 1 and "Other has no field" in wrong.stderr
    schema = console_script("schema", "contracts:Other", "--json", cwd=tmp_path)
    assert schema.returncode == 0 and json.loads(schema.stdout)["target"] == "contracts:Other"


def test_policy_check_takes_a_single_file_or_a_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_main(capsys, "policy", "check", str(ROOT / "policies" / "refund_order.toml"))
    assert (code, err) == (0, "") and out == "1 valid policy (refund_order); 0 problems\n"
    code, out, _ = run_main(capsys, "policy", "check", str(ROOT / "policies"))
    assert code == 0 and out.startswith("4 valid policies (")
    bad = tmp_path / "bad.policy"  # a single file is checked whatever its name
    bad.write_text('tool = "x"\n[args.q]\nsql = { allow = ["selects"] }\n')
    code, out, err = run_main(capsys, "policy", "check", str(bad))
    assert code == 1 and out == "0 valid policies (none); 1 problem\n"
    one_line(err, str(bad), "args.q")


def test_rules_check_takes_a_single_file_or_a_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_main(capsys, "rules", "check", str(ROOT / "fallbacks" / "ticket_triage.toml"))
    assert (code, err) == (0, "") and out == "1 valid rule set (ticket_triage); 0 problems\n"
    code, out, _ = run_main(capsys, "rules", "check", str(ROOT / "fallbacks"), "--json")
    assert code == 0 and json.loads(out)["rule_sets"] == ["ticket_triage", "video_segments"]
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "b"\nversion = "1"\ninput = "q"\n[[rules]]\nid = "r"\nwhen.pattern = "(?=x)"\n'
                   'set = { a = 1 }\n', encoding="utf-8")
    for path in (bad, tmp_path):
        code, out, err = run_main(capsys, "rules", "check", str(path))
        assert code == 1 and out == "0 valid rule sets (none); 1 problem\n"
        line = one_line(err, "bad.toml:6: rules[0].when.pattern:", "rule set regex '(?=x)'")
        assert "policy regex" not in line


def test_an_unreadable_policy_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "folder.toml").mkdir()  # matches *.toml, cannot be read as a file
    code, _, err = run_main(capsys, "policy", "check", str(tmp_path))
    assert code == 1
    one_line(err, "folder.toml")


COMMANDS = (("demo",), ("schema",), ("emulator",), ("policy",), ("policy", "check"), ("rules",), ("rules", "check"))


def test_help_is_plain_text_and_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, top, _ = run_main(capsys, "--help")
    assert code == 0
    listed = top.split("commands:")[1].split("examples:")[0]
    for command in ("demo", "schema", "emulator", "policy", "rules"):
        assert f"\n    {command} " in listed, command
    for words in COMMANDS:
        code, text, err = run_main(capsys, *words, "--help")
        assert code == 0 and err == "" and f"usage: guardrail {' '.join(words)}" in text
        for markup in ("``", ":mod:", ":class:", ":func:", ".. "):
            assert markup not in text, (words, markup)
    for text in (top, run_main(capsys, "emulator", "--help")[1]):
        assert "`" not in text


def test_version_comes_from_the_distribution_or_the_package() -> None:
    from importlib import metadata

    import guardrail

    try:
        expected = metadata.version("guardrail-llm")
    except metadata.PackageNotFoundError:
        expected = guardrail.__version__
    for command in ([sys.executable, "-m", "guardrail", "--version"],
                    [sys.executable, "-m", "guardrail.cli", "--version"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False, cwd=ROOT, env=NO_KEYS)
        assert (done.returncode, done.stdout, done.stderr) == (0, f"guardrail {expected}\n", "")


def test_python_m_guardrail_testing_is_the_emulator_command() -> None:
    done = subprocess.run([sys.executable, "-m", "guardrail.testing", "--port", "99999"], capture_output=True,
                          text=True, timeout=60, check=False, cwd=ROOT, env=NO_KEYS)
    assert done.returncode == 2
    one_line(done.stderr, "python -m guardrail.testing:", "--port")


@pytest.mark.parametrize("command", ["policy", "rules"])
def test_an_empty_file_fails_the_check(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str) -> None:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    for path in (empty, tmp_path):
        code, out, err = run_main(capsys, command, "check", str(path))
        assert code == 1 and out.startswith("0 valid ")
        assert err and all(line.startswith(f"{empty}: ") for line in err.splitlines())


def test_the_live_demo_without_the_vendor_sdk_names_the_extra_to_install() -> None:
    done = console_script("demo", prelude="sys.modules['openai'] = None; ", env={"OPENAI_API_KEY": "sk-test"})
    assert done.returncode == 1
    one_line(done.stderr, "guardrail demo:", "pip install 'guardrail-llm[openai]'")
