"""A reasoning-first call (``reason_first="two_stage"``) in the trace: one call span, and under it one
``guardrail.reasoning.stage`` span per stage with that stage's usage; the call span counts both stages; a stage
that ended the call is marked failed; each stage logs its end."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel
from structlog.testing import capture_logs

import guardrail
from guardrail.errors import ReasoningFailed
from guardrail.testing import Emulator, reply


class Verdict(BaseModel):
    ok: bool


MESSAGES = [{"role": "user", "content": "Is 7 prime?"}]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_each_stage_is_a_child_span_of_the_call_with_its_usage(spans: InMemorySpanExporter, is_async: bool) -> None:
    with Emulator() as emu:
        emu.script(reply.text("7 has no divisors but 1 and 7.", usage=(11, 7)),
                   reply.answer(json.dumps({"ok": "maybe"}), usage=(30, 4)),
                   reply.answer('{"ok": true}', usage=(31, 3)))
        if is_async:
            aclient = guardrail.wrap(openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
            result = asyncio.run(aclient.chat.completions.create_with_result(
                model="gpt-4o", messages=MESSAGES, response_model=Verdict, reason_first="two_stage"))
        else:
            client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
            result = client.chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                                response_model=Verdict, reason_first="two_stage")
    assert result.value == Verdict(ok=True)
    finished = spans.get_finished_spans()
    (call,) = [span for span in finished if span.name == "chat gpt-4o"]
    stages = [span for span in finished if span.name == "guardrail.reasoning.stage"]
    assert [dict(span.attributes or {})["guardrail.reasoning.stage"] for span in stages] == ["reasoning", "answer"]
    assert all(span.parent is not None and span.parent.span_id == call.context.span_id for span in stages)
    usage = [(dict(span.attributes or {})["gen_ai.usage.input_tokens"],
              dict(span.attributes or {})["gen_ai.usage.output_tokens"]) for span in stages]
    assert usage == [(11, 7), (61, 7)]  # the answer stage: its two attempts
    attributes = dict(call.attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == 72 and attributes["gen_ai.usage.output_tokens"] == 14
    assert attributes["guardrail.attempts"] == 3


def test_a_stage_that_ends_the_call_is_marked_failed_and_logged(spans: InMemorySpanExporter) -> None:
    with Emulator() as emu, capture_logs() as logs:
        emu.script(reply.text(""))
        client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
        with pytest.raises(ReasoningFailed):
            client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Verdict,
                                           reason_first="two_stage")
    (stage,) = [span for span in spans.get_finished_spans() if span.name == "guardrail.reasoning.stage"]
    assert dict(stage.attributes or {})["error.type"] == "ReasoningFailed"
    (ended,) = [event for event in logs if event["event"] == "guardrail.reasoning.stage"]
    assert ended["stage"] == "reasoning" and ended["error"] == "ReasoningFailed"
