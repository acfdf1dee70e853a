"""The local tier's span and metrics, read from the OpenTelemetry SDK's in-memory exporter and reader (the
``spans`` and ``collect`` fixtures of ``support.otel``, re-exported by this folder's conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel, Field

pytest.importorskip("torch")
pytest.importorskip("transformers")
llguidance = pytest.importorskip("llguidance")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from support.otel import Points  # noqa: E402

from guardrail.errors import DeadEnd, GrammarError  # noqa: E402
from guardrail.local import LocalModel, Regex  # noqa: E402
from guardrail.local.grammar import tokenizer_key  # noqa: E402
from guardrail.testing.tiny import tiny_local_model  # noqa: E402


@pytest.fixture(scope="module")
def fresh() -> LocalModel:
    """A model of its own, so the grammar cache state this module sees is its own."""
    return tiny_local_model()


class Note(BaseModel):
    title: str = Field(max_length=6)
    stars: int = Field(ge=1, le=5)


def test_a_generation_has_a_span_with_versions_timings_and_counts(fresh: LocalModel, spans: InMemorySpanExporter,
                                                                  collect: Callable[[], Points]) -> None:
    from guardrail.local.grammar import clear_caches

    clear_caches()
    _, one = fresh.generate_with_trace("a", Note, seed=0)  # a miss
    _, two = fresh.generate_with_trace("b", Note, seed=1)  # a hit
    first, second = spans.get_finished_spans()
    assert first.name == "guardrail.local.generate"
    attributes: dict[str, Any] = dict(first.attributes or {})
    assert attributes["guardrail.local.engine"] == "llguidance"
    assert attributes["guardrail.local.engine.version"] == llguidance.__version__
    assert attributes["guardrail.local.tokenizer"] == tokenizer_key(fresh.tokenizer)
    assert attributes["guardrail.local.tokenizers.version"] not in ("", "unknown")
    assert attributes["gen_ai.request.model"] == "GPT2LMHeadModel"
    assert attributes["guardrail.local.grammar.cache_hit"] is False and dict(second.attributes or {})[
        "guardrail.local.grammar.cache_hit"] is True
    assert attributes["guardrail.local.grammar.compile_seconds"] > 0
    assert attributes["guardrail.local.grammar.matcher_seconds"] > 0
    assert attributes["guardrail.local.mask.seconds"] > 0 and attributes["guardrail.local.mask.seconds_per_token"] > 0
    assert attributes["guardrail.local.time_to_first_token"] > 0
    assert attributes["guardrail.local.inter_token_latency"] > 0
    assert attributes["guardrail.local.tokens.sampled"] + attributes["guardrail.local.tokens.forced"] > 3
    assert attributes["guardrail.local.dead_ends"] == 0 and "error.type" not in attributes
    points = collect()
    assert points.count("guardrail.local.grammar.lookups", guardrail__cache__result="miss") == 1
    assert points.count("guardrail.local.grammar.lookups", guardrail__cache__result="hit") == 1
    assert points.count("guardrail.local.grammar.compile") == 1
    assert points.count("guardrail.local.generations", guardrail__local__outcome="ok") == 2
    assert points.count("guardrail.local.time_to_first_token") == 2
    assert points.count("guardrail.local.inter_token_latency") == 2
    steps = len(one.step_mask_seconds) + len(two.step_mask_seconds)  # one mask per decoding step
    assert points.count("guardrail.local.mask.duration") == steps > 2
    assert points.units["guardrail.local.mask.duration"] == "s"
    assert points.count("guardrail.local.dead_ends") == 0


def test_a_dead_end_is_counted_and_marks_the_span(spans: InMemorySpanExporter, collect: Callable[[], Points]) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from guardrail.testing.tiny import tiny_model

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(["abc xyz 123"] * 20, trainers.BpeTrainer(vocab_size=100, special_tokens=["<eos>"],
                                                                     show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>")  # type: ignore[no-untyped-call]
    model = LocalModel(tiny_model(tokenizer), tokenizer, device="cpu")
    results = model.generate_batch(["x", "y", "z"], Regex("abé"), seed=0, return_exceptions=True)
    assert all(isinstance(r, DeadEnd) for r in results)
    (span,) = spans.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["guardrail.local.dead_ends"] == 3 and attributes["error.type"] == "DeadEnd"
    assert attributes["guardrail.local.batch_size"] == 3
    assert not span.status.is_ok
    points = collect()
    assert points.count("guardrail.local.dead_ends") == 3
    assert points.count("guardrail.local.generations", guardrail__local__outcome="DeadEnd") == 3


def test_a_compile_error_ends_the_span_failed(tiny: LocalModel, spans: InMemorySpanExporter) -> None:
    with pytest.raises(GrammarError):
        tiny.generate("x", Regex("(unclosed"))
    (span,) = spans.get_finished_spans()
    assert dict(span.attributes or {})["error.type"] == "GrammarError" and not span.status.is_ok
