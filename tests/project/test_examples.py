"""Every runnable example is run here, so examples never rot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_parse_outputs_example_shows_values_fixes_and_errors() -> None:
    out = run_example("parse_outputs.py")
    blocks = {block.split("\n", 1)[0]: block for block in out.split("== ")[1:]}
    assert "Category.billing" in blocks["fenced, chatty, trailing comma"]
    assert "trailing_comma" in blocks["fenced, chatty, trailing comma"]
    korean = blocks["Korean prose, drifted names, string number"]
    assert "urgency=5" in korean and "coerce_integer" in korean and "case_drift" in korean
    assert "Thanks the team." in blocks["format example and the real answer"]
    assert "error: schema_violation" in blocks["meaning-changing value (refused)"]
    assert "$.urgency" in blocks["meaning-changing value (refused)"]
    assert "error: truncated" in blocks["cut off by max_tokens"]
    assert "error: no_json" in blocks["no JSON at all"]


@pytest.mark.slow
def test_wrapped_openai_example_shows_modes_repairs_retries_and_typed_errors() -> None:
    out = run_example("wrapped_openai.py")
    blocks = {block.split("\n", 1)[0]: block for block in out.split("== ")[1:]}
    assert len(blocks) == 4
    first = next(b for title, b in blocks.items() if title.startswith("OpenAI chat, native"))
    assert "mode=native attempts=1 vendor_calls=1" in first and "trailing_comma" in first
    second = next(b for title, b in blocks.items() if "feedback turn" in title)
    assert "attempts=2" in second and "$.urgency" in second and "$.summary" in second
    third = next(b for title, b in blocks.items() if title.startswith("OpenAI Responses"))
    assert "vendor_calls=3" in third and "[40, 40, 80]" in third
    assert "GaveUp after 3 attempts" in out and "'no_json'" in out
    assert "guardrail.attempt" not in out


@pytest.mark.slow
def test_wrapped_anthropic_example() -> None:
    out = run_example("wrapped_anthropic.py")
    assert "output_config.format.type=json_schema" in out
    assert "mode=tool attempts=2 vendor_calls=3" in out and "type=tool_result is_error=True" in out
    assert "Topic(name='billing'" in out and "strict tool sent: False" in out
    assert "Refused: \"I can't help with that request.\" after 1 call" in out


@pytest.mark.slow
def test_triage_decorator_example() -> None:
    out = run_example("triage_decorator.py")
    assert "Ticket(urgency=5, category=<Category.account: 'account'>" in out
    assert 'customer_tier = "gold"' in out and "`triage`" in out
    assert "Ticket(urgency=2, category=<Category.billing: 'billing'>" in out
    assert "coerce_integer" in out and "strip_fence" in out


@pytest.mark.slow
def test_streaming_preview_example() -> None:
    out = run_example("streaming_preview.py")
    previews = [line for line in out.splitlines() if "preview (attempt" in line]
    assert len(previews) >= 3 and any("attempt 1" in p for p in previews) and "attempt 2" in previews[-1]
    assert "== final, validated: Summary(title='Q3 planning'" in out
    assert "attempts=2 vendor_calls=2" in out
