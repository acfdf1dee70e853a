"""``guardrail.local.load_local_model``: a LocalModel from a ``save_pretrained`` directory (what
``guardrail eval --local-model`` takes), and a typed error naming a checkpoint that cannot be loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from guardrail.errors import ConfigError
from guardrail.local import load_local_model


class Verdict(BaseModel):
    score: int = Field(ge=1, le=5)
    word: str = Field(max_length=6)


def test_a_saved_model_loads_and_generates_the_same_values(tiny: Any, tmp_path: Path) -> None:
    tiny.model.save_pretrained(tmp_path)
    tiny.tokenizer.save_pretrained(tmp_path)
    loaded = load_local_model(str(tmp_path), device="cpu")
    assert len(loaded.tokenizer) == len(tiny.tokenizer) and loaded.vocab_size == tiny.vocab_size
    prompts = ["Rate: fine.", "Rate: awful."]
    mine = loaded.generate_batch(prompts, Verdict, temperature=0.0, max_new_tokens=48)
    assert mine == tiny.generate_batch(prompts, Verdict, temperature=0.0, max_new_tokens=48)
    assert all(isinstance(value, Verdict) for value in mine)


def test_a_checkpoint_that_cannot_be_loaded_is_a_config_error(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    with pytest.raises(ConfigError, match="cannot load the local model"):
        load_local_model(str(tmp_path / "none"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="cannot load the local model"):
        load_local_model(str(tmp_path / "empty"))
