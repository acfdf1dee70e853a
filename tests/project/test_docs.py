"""Every Python code block in README.md and docs/*.md runs, as a reader would paste it.

The blocks of one file run in order in one namespace, in a fresh Python process (so a snippet that configures
logging or guardrail cannot leak into other tests), in an empty temporary directory, with the vendor SDKs
pointed at a running :class:`~guardrail.testing.Emulator` through their own environment variables
(``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, keys ``"test"``). Requests a snippet does not script itself are
answered with a minimal valid instance of the requested schema. A block that cannot run offline is preceded by
``<!-- skip: reason -->`` and is reported here as a skipped test with that reason, so skips are explicit.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from guardrail.testing import Emulator, reply
from guardrail.testing.faults import default_answer
from guardrail.testing.recording import RecordedRequest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
SKIP = re.compile(r"^<!--\s*skip:\s*(.+?)\s*-->\s*$")

RUNNER = r'''
import sys, traceback
blocks = __BLOCKS__
namespace = {"__name__": "__main__"}
for line, source in blocks:
    try:
        exec(compile(source, f"{__FILE__}:{line}", "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        print(f"\nblock at {__FILE__}:{line} failed", file=sys.stderr)
        sys.exit(1)
'''


@dataclass(frozen=True)
class Block:
    document: Path
    line: int  # 1-based line of the opening fence
    language: str
    source: str
    skip: str | None


def blocks_of(document: Path) -> list[Block]:
    """The fenced code blocks of a Markdown file, with the skip reason written just above each."""
    lines = document.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        start = i
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        previous = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        skip = SKIP.match(previous.strip())
        found.append(Block(document, start + 1, opening.group(1).lower(), "\n".join(body) + "\n",
                           skip.group(1) if skip else None))
        i += 1
    return found


def _name(document: Path) -> str:
    return str(document.relative_to(ROOT))


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


def _answer_schema(request: RecordedRequest) -> reply.Reply:
    return reply.answer(default_answer(request))


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS, ids=_name)
def test_python_blocks_run(document: Path, emulator: Emulator, tmp_path: Path) -> None:
    runnable = [b for b in blocks_of(document) if b.language in ("python", "py") and b.skip is None]
    if not runnable:
        pytest.skip(f"{_name(document)} has no runnable Python block")
    emulator.reset()
    emulator.responder = _answer_schema
    script = RUNNER.replace("__BLOCKS__", repr([(b.line, b.source) for b in runnable])).replace(
        "__FILE__", repr(_name(document)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "GUARDRAIL_"))}
    env.update(OPENAI_BASE_URL=emulator.openai_base_url, ANTHROPIC_BASE_URL=emulator.anthropic_base_url,
               OPENAI_API_KEY="test", ANTHROPIC_API_KEY="test", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]


SKIPPED = [b for d in DOCUMENTS for b in blocks_of(d) if b.language in ("python", "py") and b.skip is not None]


@pytest.mark.parametrize("block", SKIPPED, ids=lambda b: f"{_name(b.document)}:{b.line}")
def test_skipped_blocks_say_why(block: Block) -> None:
    pytest.skip(f"{_name(block.document)}:{block.line}: {block.skip}")


def test_every_code_block_names_its_language() -> None:
    """A bare ``` fence would hide a Python block from the run above: every block says what it is."""
    unnamed = [f"{_name(b.document)}:{b.line}" for d in DOCUMENTS for b in blocks_of(d) if not b.language]
    assert unnamed == []


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 160
    first = next(b for b in blocks_of(ROOT / "README.md"))
    assert "guardrail demo" in first.source and "pytest" in first.source


def test_docs_links_resolve() -> None:
    """Every relative link in README.md and docs/ points at a file that exists."""
    missing = []
    for document in DOCUMENTS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", document.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (document.parent / target).exists():
                missing.append(f"{_name(document)} -> {target}")
    assert missing == []
