"""Tests of ``guardrail.evals`` and ``guardrail eval``: the experiment matrix run end to end through the real openai
SDK against the vendor emulator, whose answers are scripted per case so every count in the report is known in
advance.

Shared here: ``scripted`` (an emulator whose responder answers each case's n-th request of each run as
``tests/support/eval_cases.py`` says), ``cases_file`` (those cases as a CASES.jsonl file) and ``tiny_dir`` (a
tiny local model saved as a checkpoint directory, for the local mode).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.eval_cases import CASES, Script

from guardrail.testing import Emulator


@pytest.fixture
def scripted(emu: Emulator) -> Emulator:
    """The test's emulator, answering each case by its script (any order, any concurrency)."""
    emu.responder = Script()
    return emu


@pytest.fixture
def cases_file(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(case + "\n" for case in CASES), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random causal LM and its tokenizer saved with ``save_pretrained`` (what ``--local-model`` loads);
    nothing is downloaded. Skips without the ``local`` extra."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("llguidance")
    from guardrail.testing.tiny import tiny_model, train_tokenizer

    folder = tmp_path_factory.mktemp("tiny-model")
    tokenizer = train_tokenizer()
    tiny_model(tokenizer).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
