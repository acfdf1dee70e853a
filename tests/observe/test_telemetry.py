"""Spans follow the OpenTelemetry GenAI conventions; structlog events per attempt; no content unless asked; every
call (sync, async, a partial stream left early) ends its span before it returns."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel
from structlog.testing import capture_logs
from support.calls import (
    APIS,
    PRINTER_BAD,
    PRINTER_GOOD,
    Ticket,
    api_method,
    printer_args,
    printer_call,
    wrapped_client,
)

import guardrail
from guardrail.call.cache import Cache
from guardrail.store import MemoryStore
from guardrail.testing import Emulator, reply

SECRET = "Kim Min-jun, 010-1234-5678"


class Contact(BaseModel):
    name: str


def call(emu: Emulator, **settings: Any) -> Any:
    raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5)
    client = guardrail.wrap(raw, settings=guardrail.Settings(**settings),
                            retry=guardrail.RetryPolicy(initial_wait=0.01, max_wait=0.1))
    return client.chat.completions.create_with_result(
        model="gpt-4o", messages=[{"role": "user", "content": SECRET}], response_model=Contact, temperature=0.5)


def test_span_has_genai_and_guardrail_attributes(spans: InMemorySpanExporter) -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": 1.5}', usage=(10, 3)), reply.answer(f'{{"name": "{SECRET}"}}', usage=(20, 5)))
        result = call(emu)
    (span,) = spans.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert span.name == "chat gpt-4o"
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.provider.name"] == "openai"
    assert attrs["gen_ai.request.model"] == "gpt-4o"
    assert attrs["gen_ai.request.temperature"] == 0.5
    assert attrs["gen_ai.usage.input_tokens"] == 30 and attrs["gen_ai.usage.output_tokens"] == 8
    assert list(attrs["gen_ai.response.finish_reasons"]) == ["stop", "stop"]  # type: ignore[arg-type]
    assert attrs["guardrail.mode"] == "native" and attrs["guardrail.attempts"] == 2
    assert attrs["guardrail.schema_hash"] == result.schema_hash
    assert "error.type" not in attrs
    assert result.trace_id == format(span.context.trace_id, "032x")


def test_message_content_is_not_recorded_unless_asked(spans: InMemorySpanExporter) -> None:
    with Emulator() as emu:
        emu.script(reply.answer(f'{{"name": "{SECRET}"}}'))
        with capture_logs() as logs:
            call(emu)
        emu.script(reply.answer(f'{{"name": "{SECRET}"}}'))
        call(emu, capture_content=True)
    quiet, loud = spans.get_finished_spans()
    assert SECRET not in repr(dict(quiet.attributes or {})) and not quiet.events
    assert SECRET not in repr(logs)
    # Opt-in capture follows the GenAI conventions: one inference-details event per attempt, messages as JSON.
    (event,) = loud.events
    assert event.name == "gen_ai.client.inference.operation.details"
    attrs = dict(event.attributes or {})
    output = json.loads(str(attrs["gen_ai.output.messages"]))
    assert output == [{"role": "assistant", "parts": [{"type": "text", "content": f'{{"name": "{SECRET}"}}'}],
                       "finish_reason": "stop"}]
    assert json.loads(str(attrs["gen_ai.input.messages"])) == [{"role": "user",
                                                                "parts": [{"type": "text", "content": SECRET}]}]


def test_errors_set_error_type_and_logs_name_each_attempt(spans: InMemorySpanExporter) -> None:
    with Emulator() as emu:
        emu.script(reply.refusal("no"))
        with capture_logs() as logs, pytest.raises(guardrail.Refused) as caught:
            call(emu)
    (span,) = spans.get_finished_spans()
    assert dict(span.attributes or {})["error.type"] == "Refused"
    assert span.status.status_code == trace.StatusCode.ERROR
    events = [entry["event"] for entry in logs]
    assert events == ["guardrail.call.start", "guardrail.attempt", "guardrail.call.end"]
    assert all(entry["trace_id"] == caught.value.trace_id for entry in logs)


def test_captured_content_and_error_messages_on_spans_are_redacted(spans: InMemorySpanExporter) -> None:
    canary = "sk-canaryCANARYcanary0123456789"
    with Emulator() as emu:
        emu.script(reply.answer(f'{{"name": "key {canary}"}}'))
        call(emu, capture_content=True)
        emu.script(reply.refusal(f"no, and your key is {canary}"))
        with pytest.raises(guardrail.Refused):
            call(emu, capture_content=True)
    text = repr([(dict(s.attributes or {}), [dict(e.attributes or {}) for e in s.events], s.status.description)
                 for s in spans.get_finished_spans()])
    assert "[REDACTED]" in text and canary not in text


def test_span_names_the_response_the_server_and_the_usage_details(spans: InMemorySpanExporter) -> None:
    with Emulator() as emu:
        emu.script(reply.answer(f'{{"name": "{SECRET}"}}', usage=(100, 20)).with_usage_details(cached=60, reasoning=9))
        result = call(emu)
        port = int(emu.base_url.rsplit(":", 1)[1])
    (span,) = spans.get_finished_spans()
    attrs = dict(span.attributes or {})
    assert attrs["gen_ai.response.model"] == "gpt-4o"
    assert attrs["gen_ai.response.id"] == result.attempts[-1].response_id
    assert str(attrs["gen_ai.response.id"]).startswith("chatcmpl-")
    assert attrs["server.address"] == "127.0.0.1" and attrs["server.port"] == port
    assert attrs["gen_ai.usage.input_tokens"] == 100 and attrs["gen_ai.usage.cache_read.input_tokens"] == 60
    assert attrs["gen_ai.usage.reasoning.output_tokens"] == 9
    assert attrs["gen_ai.usage.cache_creation.input_tokens"] == 0


def test_content_capture_has_system_instructions_tool_calls_and_repair_turns(spans: InMemorySpanExporter) -> None:
    import anthropic

    canary = "sk-canaryCANARYcanary0123456789"
    with Emulator() as emu:
        emu.script(reply.answer('{"name": 1.5}'), reply.answer('{"name": "Ada"}'))
        raw = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5)
        client = guardrail.wrap(raw, settings=guardrail.Settings(capture_content=True),
                                retry=guardrail.RetryPolicy(initial_wait=0.01, max_wait=0.1))
        client.messages.create(model="claude-sonnet-4-5", max_tokens=200, system=f"be brief {canary}",
                               messages=[{"role": "user", "content": "who?"}], response_model=Contact, mode="tool")
    # the anthropic SDK traces each of its API calls itself (child spans, no metrics); guardrail's is the call's
    (span,) = [s for s in spans.get_finished_spans() if s.name == "chat claude-sonnet-4-5"]
    first, second = (dict(event.attributes or {}) for event in span.events)
    assert json.loads(str(first["gen_ai.system_instructions"])) == [{"type": "text",
                                                                     "content": "be brief [REDACTED]"}]
    (answer,) = json.loads(str(first["gen_ai.output.messages"]))
    assert answer["parts"][0]["type"] == "tool_call" and answer["finish_reason"] == "tool_use"
    # the second attempt's input replays the first answer as a tool call and the feedback as its result
    replay = json.loads(str(second["gen_ai.input.messages"]))
    assert [message["role"] for message in replay] == ["user", "assistant", "user"]
    assert replay[1]["parts"][0]["type"] == "tool_call"
    assert replay[2]["parts"][0]["type"] == "tool_call_response"
    assert canary not in repr(span.events)


def test_each_chain_tier_gets_a_span_with_the_vendor_call_inside(spans: InMemorySpanExporter) -> None:
    from guardrail.chain import Chain, safe_default, vendor

    with Emulator() as emu:
        raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5, max_retries=0)
        chain = Chain([vendor(raw, "gpt-4o", name="primary", retry=guardrail.RetryPolicy(max_tries=1)),
                       safe_default(Contact(name="nobody"), name="fallback")])
        emu.script(reply.server_error(500))
        result = chain.create_with_result(response_model=Contact, messages=[{"role": "user", "content": "x"}])
    assert result.tier == "fallback" and result.degraded
    by_name = {span.name: span for span in spans.get_finished_spans()}
    primary, fallback = by_name["guardrail.chain.tier primary"], by_name["guardrail.chain.tier fallback"]
    assert dict(primary.attributes or {})["guardrail.chain.kind"] == "vendor"
    assert dict(primary.attributes or {})["error.type"] == "VendorUnavailable"
    assert dict(fallback.attributes or {})["guardrail.chain.kind"] == "default"
    assert "error.type" not in dict(fallback.attributes or {})
    vendor_call = by_name["chat gpt-4o"]
    assert vendor_call.parent is not None and vendor_call.parent.span_id == primary.context.span_id



# -------------------------------------------------------------------------------- spans end before the call returns


def ours(exporter: Any) -> list[str]:
    """Names of guardrail's finished spans (the anthropic SDK adds spans of its own)."""
    return [s.name for s in exporter.get_finished_spans() if s.name.startswith("chat ")]


@pytest.mark.parametrize("api", APIS)
def test_async_calls_end_their_span_before_returning(emu: Emulator, api: str, spans: Any) -> None:
    from opentelemetry import trace

    emu.script(reply.answer(PRINTER_GOOD))
    seen: dict[str, Any] = {}

    async def main() -> None:
        target = api_method(wrapped_client(emu, api, is_async=True), api)
        await target.create(response_model=Ticket, **printer_args(api))
        seen["finished"] = ours(spans)
        seen["current"] = trace.get_current_span().get_span_context().is_valid

    asyncio.run(main())
    assert seen == {"finished": [f"chat {printer_args(api)['model']}"], "current": False}


@pytest.mark.parametrize("api", APIS)
def test_sync_calls_end_their_span_before_returning(emu: Emulator, api: str, spans: Any) -> None:
    from opentelemetry import trace

    emu.script(reply.answer(PRINTER_GOOD), reply.answer(PRINTER_BAD))
    printer_call(emu, api)
    assert ours(spans) == [f"chat {printer_args(api)['model']}"]
    assert not trace.get_current_span().get_span_context().is_valid
    with pytest.raises(guardrail.GaveUp):
        printer_call(emu, api, max_attempts=1)
    assert len(ours(spans)) == 2


def test_a_partial_stream_left_early_can_be_closed(emu: Emulator, spans: Any) -> None:
    from opentelemetry import trace

    emu.script(reply.answer('{"title": "Printer on fire, third floor copy room", "priority": 5, "tags": ["hw"]}'))
    stream = api_method(wrapped_client(emu, "chat"), "chat").create_partial(response_model=Ticket,
                                                                            **printer_args("chat"))
    with stream:
        for _ in stream:
            break
    assert ours(spans) == ["chat gpt-4o"]
    assert not trace.get_current_span().get_span_context().is_valid


def test_before_any_provider_is_set_no_span_or_metric_is_made_and_the_trace_id_still_joins() -> None:
    """Without a configured tracer or meter provider, a call opens no span and records nothing (both would be
    no-ops); its trace id is the propagated parent's when there is one, else a fresh random one. Setting the
    providers later takes effect at the next call. Run in a fresh interpreter: the providers can be set once."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "tests")])}
    worker = Path(__file__).with_name("late_provider_worker.py")
    done = subprocess.run([sys.executable, str(worker)], capture_output=True, text=True, env=env, timeout=120,
                          cwd=root, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    first, second = out["unset"]
    assert re.fullmatch("[0-9a-f]{32}", first) and re.fullmatch("[0-9a-f]{32}", second) and first != second
    assert out["propagated"] == out["parent"]
    assert [name for name, _ in out["spans"]] == ["chat gpt-4o-mini"]  # only the call after the providers were set
    assert out["spans"][0][1] == out["set"]
    counted = dict((name, value) for name, value in out["points"])
    assert counted["gen_ai.client.operation.duration"] == 1  # one request recorded, not the three before
    assert counted["guardrail.call.duration"] == 1


def test_a_cache_hit_has_its_own_span_and_joins_its_trace(emu: Emulator, spans: InMemorySpanExporter) -> None:
    """A call answered from the response cache sends nothing, but still shows in the trace: a ``chat MODEL``
    span marked ``guardrail.cached`` with no vendor calls, whose trace id the result carries."""
    emu.script(reply.answer('{"name": "Kim"}'))
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0),
                            cache=Cache(MemoryStore()))
    ask = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "x"}], "response_model": Contact}
    first = client.chat.completions.create_with_result(**ask)
    with trace.get_tracer("test").start_as_current_span("request handler") as parent:
        hit = client.chat.completions.create_with_result(**ask)
    assert (first.cached, hit.cached, hit.vendor_calls) == (False, True, 0)
    assert len(emu.requests) == 1
    finished = spans.get_finished_spans()
    cached = [span for span in finished if (span.attributes or {}).get("guardrail.cached")]
    assert len(cached) == 1
    span = cached[0]
    assert span.name == "chat gpt-4o-mini"
    assert span.attributes is not None and span.attributes["guardrail.vendor_calls"] == 0
    assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
    assert hit.trace_id == format(span.context.trace_id, "032x") == format(parent.get_span_context().trace_id, "032x")
