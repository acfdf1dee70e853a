"""Reasoning first on the local tier (:mod:`guardrail.local.reasoning`), with the tiny random model: free text for
at most the reasoning's token cap, then the answer under the contract's grammar with the reasoning in the prompt;
or one generation of the contract with a leading reasoning field. Through the chain and the decorator too."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("llguidance")

import guardrail
from guardrail.call.reasoning import Reasoning
from guardrail.chain.tiers import Chain, local
from guardrail.local import LocalModel
from guardrail.local.reasoning import generate_reasoned


class Pick(BaseModel):
    """A shirt: the size, and whether it is the red one."""

    size: Literal["S", "M", "L"]
    red: bool


PROMPT = "Pick a colour and a size for a small red shirt."
SHORT = Reasoning(max_tokens=12)


def test_two_stages_generate_free_text_then_the_answer_conditioned_on_it(tiny: LocalModel) -> None:
    result = generate_reasoned(tiny, PROMPT, Pick, reason_first=SHORT, max_new_tokens=64, seed=3)
    assert isinstance(result.value, Pick) and result.reasoning
    first, second = result.attempts
    assert (first.mode, second.mode) == ("reasoning", "grammar")
    assert 0 < first.usage.output_tokens <= SHORT.max_tokens  # the cap holds
    assert result.usage == first.usage + second.usage and result.provider == "local"
    # the answer stage saw the reasoning: the same seeded generation over that prompt gives the same value
    asked = f"{PROMPT}\n\n{SHORT.prompt}\n\n{result.reasoning}\n\n{SHORT.follow_up}\n\n"
    assert tiny.generate(asked, Pick, max_new_tokens=64, seed=3) == result.value
    assert first.raw is not None and result.reasoning == first.raw.strip()


def test_field_mode_writes_the_reasoning_first_and_returns_the_contract_without_it(tiny: LocalModel) -> None:
    result = generate_reasoned(tiny, PROMPT, Pick, reason_first=Reasoning("field", max_tokens=8), max_new_tokens=200,
                               seed=1)
    assert type(result.value) is Pick and "reasoning" not in result.value.model_dump()
    assert result.attempts[0].raw is not None and result.attempts[0].raw.startswith('{"reasoning":')
    assert isinstance(result.reasoning, str) and len(result.attempts) == 1


def test_each_stage_is_a_span_around_its_generation(tiny: LocalModel, spans: InMemorySpanExporter) -> None:
    generate_reasoned(tiny, PROMPT, Pick, reason_first=SHORT, max_new_tokens=64, seed=3)
    finished = spans.get_finished_spans()
    stages = [span for span in finished if span.name == "guardrail.reasoning.stage"]
    assert [span.attributes["guardrail.reasoning.stage"] for span in stages if span.attributes] == \
        ["reasoning", "answer"]
    ids = {stage.context.span_id for stage in stages}
    generations = [span for span in finished if span.parent is not None and span.parent.span_id in ids]
    assert len(generations) == 2  # one generation inside each stage


@pytest.mark.parametrize("mode", ["two_stage", "field"])
def test_the_chain_and_the_decorator_reason_first_on_a_local_tier(tiny: LocalModel, mode: str) -> None:
    chain = Chain([local(tiny, max_new_tokens=200)], reason_first=Reasoning(mode, max_tokens=8))  # type: ignore[arg-type]
    done = chain.run(Pick, system="Pick a colour and a size.", user="a small red shirt")
    assert done.tier == "local" and isinstance(done.value, Pick) and isinstance(done.reasoning, str)

    @guardrail.structured(client=tiny, max_tokens=200, reason_first=Reasoning(mode, max_tokens=8))  # type: ignore[arg-type]
    def pick(description: str) -> Pick:
        """Pick a colour and a size."""
        raise NotImplementedError

    result: Any = pick.with_result("a small red shirt")
    assert type(result.value) is Pick and isinstance(result.reasoning, str)
