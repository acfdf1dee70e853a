"""mypy itself, run on ``wrap_types.py`` (must pass) and on a file of deliberate mistakes (each must be reported).

``wrap_types.py`` alone can only show that correct code passes, which an ``Any`` return would also do; the
mistakes below show that ``guardrail.wrap`` is really typed: each names the line and the mypy error code
expected there, and nothing else may be reported.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Each mistake is one line ending in ``# expect: CODE``; the header is shared.
MISTAKES = '''\
import anthropic
import google.genai
import openai
from pydantic import BaseModel

import guardrail


class Ticket(BaseModel):
    title: str


M = [{"role": "user", "content": "x"}]


def sync_mistakes(raw: openai.OpenAI) -> None:
    client = guardrail.wrap(raw)
    text: str = client.chat.completions.create(model="m", messages=M, response_model=Ticket)  # expect: assignment
    client.with_streaming_response.chat.completions.create(model="m", response_model=Ticket)  # expect: arg-type
    wrong: guardrail.Result[str] = client.responses.create_with_result(response_model=Ticket)  # expect: arg-type
    beta = client.with_options(timeout=1).beta.chat.completions
    beta.create(model="m", response_model=Ticket).nope  # expect: attr-defined
    flavored = client.with_raw_response.chat.completions
    number: int = flavored.create(model="m", response_model=Ticket).parse()  # expect: assignment
    for item in client.chat.completions.create_iterable(model="m", messages=M, response_model=Ticket):
        item.nope  # expect: attr-defined
    print(text, wrong, number)


async def async_mistakes(raw: openai.AsyncOpenAI, other: anthropic.AsyncAnthropic) -> None:
    ticket: Ticket = guardrail.wrap(raw).chat.completions.create(model="m", response_model=Ticket)  # expect: assignment
    made = await guardrail.wrap(other).messages.create(model="m", max_tokens=9, response_model=Ticket)
    title: int = made.title  # expect: assignment
    print(ticket, title)


def anthropic_mistakes(raw: anthropic.Anthropic) -> None:
    client = guardrail.wrap(raw)
    count: int = client.beta.messages.create(model="m", max_tokens=9, response_model=Ticket)  # expect: assignment
    print(count)


async def gemini_mistakes(raw: google.genai.Client) -> None:
    client = guardrail.wrap(raw)
    name: int = client.models.generate_content(model="m", contents="x", response_model=Ticket)  # expect: assignment
    later: Ticket = client.aio.models.generate_content(model="m", response_model=Ticket)  # expect: assignment
    print(name, later)
'''


@pytest.mark.slow
def test_mypy_accepts_wrap_types_and_reports_each_deliberate_mistake(tmp_path: Path) -> None:
    mistakes = tmp_path / "wrap_mistakes.py"
    mistakes.write_text(MISTAKES)
    expected = {(number, match.group(1)) for number, line in enumerate(MISTAKES.splitlines(), start=1)
                if (match := re.search(r"# expect: ([a-z-]+)$", line))}
    good = ROOT / "tests" / "typecheck" / "wrap_types.py"
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--hide-error-context",
                          "--show-error-codes", "--cache-dir", str(ROOT / ".mypy_cache"), str(good), str(mistakes)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in run.stdout.splitlines() if ": error: " in line]
    assert not [line for line in errors if "wrap_types.py" in line], run.stdout  # correct code passes
    reported = set()
    for line in errors:
        found = re.match(r".*wrap_mistakes\.py:(\d+): error: .*\[([a-z-]+)\]$", line)
        assert found, f"unexpected mypy output: {line}"
        reported.add((int(found.group(1)), found.group(2)))
    assert reported == expected, run.stdout
    assert run.returncode == 1
