"""A Gemini call's span: the provider (``gcp.gemini``), usage with cached and thinking tokens, and, when asked,
content capture with the system instruction, the function call and the repair turn read from Gemini's shapes."""

from __future__ import annotations

import json

from google import genai
from google.genai import types
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import guardrail
from guardrail.testing import Emulator, reply


class Contact(BaseModel):
    name: str


def test_a_gemini_span_and_its_captured_content(spans: InMemorySpanExporter) -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": 1.5}'), reply.answer('{"name": "Ada"}', usage=(200, 30))
                   .with_usage_details(cached=50, reasoning=10))
        raw = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=emu.gemini_base_url))
        client = guardrail.wrap(raw, settings=guardrail.Settings(capture_content=True),
                                retry=guardrail.RetryPolicy(initial_wait=0.01, max_wait=0.1))
        client.models.generate_content(model="gemini-2.5-flash", contents="who?", response_model=Contact,
                                       mode="tool", config={"system_instruction": "be brief"})
    (span,) = [s for s in spans.get_finished_spans() if s.name == "chat gemini-2.5-flash"]
    attributes = dict(span.attributes or {})
    assert attributes["gen_ai.provider.name"] == "gcp.gemini"
    assert attributes["gen_ai.usage.input_tokens"] >= 200 and attributes["gen_ai.usage.output_tokens"] >= 30
    first, second = (dict(event.attributes or {}) for event in span.events)
    assert json.loads(str(first["gen_ai.system_instructions"])) == [{"type": "text", "content": "be brief"}]
    (answer,) = json.loads(str(first["gen_ai.output.messages"]))
    assert answer["parts"][0]["type"] == "tool_call"
    replay = json.loads(str(second["gen_ai.input.messages"]))
    assert [message["role"] for message in replay] == ["user", "assistant", "user"]
    assert replay[0]["parts"] == [{"type": "text", "content": "who?"}]
    assert replay[1]["parts"][0]["type"] == "tool_call" and replay[1]["parts"][0]["name"] == "Contact"
    assert replay[2]["parts"][0]["type"] == "tool_call_response"
