"""Tests of ``guardrail.local``: grammar-constrained decoding with a tiny random model, batching, the llguidance
compile report, MaskBench coverage, and ``guardrail.choose`` (local and over an API's logprobs).

Shared here: ``tiny``, a tiny local model (session-wide), and ``tok``, a freshly trained byte-level BPE tokenizer
(per module); ``spans`` and ``collect`` read the in-memory OpenTelemetry SDK (``support.otel``, which installs it
as the global providers when this file is loaded, as tests/observe does). Nothing is downloaded; without torch,
transformers or llguidance the tests that need them skip.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.otel import collect, spans

__all__ = ["collect", "spans", "tiny", "tok"]


@pytest.fixture(scope="session")
def tiny() -> Any:
    """A LocalModel over a freshly trained byte-level BPE tokenizer and a random tiny GPT-2 (session-wide)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("llguidance")
    from guardrail.testing.tiny import tiny_local_model

    return tiny_local_model()


@pytest.fixture(scope="module")
def tok() -> Any:
    """A freshly trained byte-level BPE tokenizer (per module: each module feeds it its own way)."""
    from guardrail.testing.tiny import train_tokenizer

    return train_tokenizer()
