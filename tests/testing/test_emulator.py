"""guardrail.testing: the vendor emulator driven by the real openai and anthropic SDK clients.

Every test asserts on what the SDKs parsed from the emulator's answers (objects, exception classes,
headers), so a wrong field name or shape on the wire fails here.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any, Literal

import anthropic
import httpx2
import openai
import pytest
from anthropic.types.file_expired_error import FileExpiredError
from pydantic import BaseModel, Field
from support.waiting import HANG_GUARD_S, finishes, until

from guardrail.testing import (
    EXHAUSTED,
    Emulator,
    FaultProfile,
    RecordedRequest,
    anthropic_strict_problems,
    openai_strict_problems,
    reply,
)
from guardrail.testing.faults import SLIPS, slip
from guardrail.vendors.failures import cut_off

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
GOOD = '{"name": "Ada", "age": 36}'
USER = [{"role": "user", "content": "Give me the person as JSON."}]
CHAT_TOOL = [{"type": "function", "function": {"name": "person", "parameters": SCHEMA, "strict": True}}]
CHAT_FORCE = {"type": "function", "function": {"name": "person"}}
RESP_TOOL = [{"type": "function", "name": "person", "parameters": SCHEMA, "strict": True}]
RESP_FORCE = {"type": "function", "name": "person"}
ANTH_TOOL = [{"name": "person", "input_schema": SCHEMA}]
ANTH_FORCE = {"type": "tool", "name": "person", "disable_parallel_tool_use": True}
TOOL_FN = {"name": "person", "arguments": "{}"}


@pytest.fixture
def oai(emu: Emulator) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0, timeout=5)
    yield client
    client.close()


@pytest.fixture
def ant(emu: Emulator) -> Iterator[anthropic.Anthropic]:
    client = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", max_retries=0, timeout=5)
    yield client
    client.close()


def chat(oai: openai.OpenAI, **kwargs: Any) -> Any:
    return oai.chat.completions.create(model="gpt-test", messages=kwargs.pop("messages", USER), **kwargs)


def resp(oai: openai.OpenAI, **kwargs: Any) -> Any:
    return oai.responses.create(model="gpt-test", input=kwargs.pop("input", "Give me the person as JSON."), **kwargs)


def msg(ant: anthropic.Anthropic, **kwargs: Any) -> Any:
    return ant.messages.create(model="claude-test", max_tokens=kwargs.pop("max_tokens", 100), messages=USER, **kwargs)


# -- plain answers, forced tools, usage ----------------------------------------------------------------


def test_text_answers_in_every_api(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.script(reply.answer(GOOD), reply.answer(GOOD), reply.answer(GOOD))
    completion = chat(oai)
    assert completion.choices[0].message.content == GOOD
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.tool_calls is None
    assert completion.model == "gpt-test"
    assert completion.id.startswith("chatcmpl-")
    response = resp(oai)
    assert response.output_text == GOOD
    assert response.status == "completed"
    assert response.id.startswith("resp_")
    message = msg(ant)
    assert message.content[0].type == "text"
    assert message.content[0].text == GOOD
    assert message.stop_reason == "end_turn"
    assert message.model == "claude-test"
    assert [r.api for r in emu.requests] == ["chat", "responses", "messages"]
    assert emu.pending == 0


def test_forced_tool_answers_in_every_api(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    broken = '{"name": "Ada", "age": 36,}'  # not valid JSON: still sent verbatim
    emu.script(reply.answer(broken), reply.answer(broken), reply.answer(GOOD), reply.answer(broken))
    choice = chat(oai, tools=CHAT_TOOL, tool_choice=CHAT_FORCE, parallel_tool_calls=False).choices[0]
    assert choice.message.content is None
    call = choice.message.tool_calls[0]
    assert (call.type, call.function.name, call.function.arguments) == ("function", "person", broken)
    assert choice.finish_reason == "stop"  # OpenAI reports "stop" for a tool forced by name
    output = resp(oai, tools=RESP_TOOL, tool_choice=RESP_FORCE).output
    assert [(o.type, o.name, o.arguments) for o in output] == [("function_call", "person", broken)]
    assert output[0].call_id.startswith("call_")
    message = msg(ant, tools=ANTH_TOOL, tool_choice=ANTH_FORCE)
    block = message.content[0]
    assert (block.type, block.name, block.input) == ("tool_use", "person", {"name": "Ada", "age": 36})
    assert message.stop_reason == "tool_use"
    # Anthropic documents input as an object; text that is not one arrives as the raw string.
    assert msg(ant, tools=ANTH_TOOL, tool_choice=ANTH_FORCE).content[0].input == broken


def test_text_and_tool_call_override_the_mode(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.script(reply.text("plain"), reply.tool_call({"x": 1}), reply.tool_call("{}", name="other"))
    assert chat(oai, tools=CHAT_TOOL, tool_choice=CHAT_FORCE).choices[0].message.content == "plain"
    choice = chat(oai).choices[0]
    assert (choice.message.tool_calls[0].function.name, choice.message.tool_calls[0].function.arguments) == (
        "output",
        '{"x": 1}',
    )
    assert choice.finish_reason == "tool_calls"  # not forced by name
    assert msg(ant, tools=ANTH_TOOL, tool_choice=ANTH_FORCE).content[0].name == "other"


def test_usage_is_estimated_or_overridden(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.script(reply.answer("12345678"), reply.answer("1234", usage=(11, 7)), reply.answer("123456789"))
    usage = chat(oai, messages=[{"role": "user", "content": "abcdefghijkl"}]).usage  # 12 chars -> 3
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3, 2, 5)
    usage = resp(oai, input="abc").usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (11, 7, 18)
    usage = ant.messages.create(
        model="m", max_tokens=5, system="abcd", messages=[{"role": "user", "content": "efgh"}]
    ).usage
    assert (usage.input_tokens, usage.output_tokens) == (3, 3)  # "abcd\nefgh" = 9 chars; 9 chars out


# -- truncation and refusal ----------------------------------------------------------------------------


def test_truncation_signals(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.script(*[reply.truncated('{"name": "Ad')] * 4)
    choice = chat(oai).choices[0]
    assert (choice.finish_reason, choice.message.content) == ("length", '{"name": "Ad')
    response = resp(oai, tools=RESP_TOOL, tool_choice=RESP_FORCE, max_output_tokens=5)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    assert response.output[0].arguments == '{"name": "Ad'
    message = msg(ant, max_tokens=5)
    assert (message.stop_reason, message.content[0].text) == ("max_tokens", '{"name": "Ad')
    message = msg(ant, tools=ANTH_TOOL, tool_choice=ANTH_FORCE)
    assert (message.stop_reason, message.content[0].input) == ("max_tokens", '{"name": "Ad')


def test_refusals(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.script(reply.refusal("No."), reply.refusal("No."), reply.refusal("No."))
    choice = chat(oai, tools=CHAT_TOOL, tool_choice=CHAT_FORCE).choices[0]
    assert (choice.message.refusal, choice.message.content, choice.finish_reason) == ("No.", None, "stop")
    assert choice.message.tool_calls is None
    item = resp(oai).output[0]
    assert item.type == "message"
    assert [(c.type, c.refusal) for c in item.content] == [("refusal", "No.")]
    message = msg(ant)
    assert (message.stop_reason, message.content[0].text) == ("refusal", "No.")
    assert message.stop_details is not None and message.stop_details.type == "refusal"


def test_sdk_parse_helpers_read_the_answers(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    class Person(BaseModel):
        name: str
        age: int

    emu.script(reply.answer(GOOD), reply.answer(GOOD), reply.answer(GOOD), reply.truncated('{"name"'))
    assert oai.chat.completions.parse(model="m", messages=USER, response_format=Person).choices[0].message.parsed == (
        Person(name="Ada", age=36)
    )
    assert oai.responses.parse(model="m", input="JSON please", text_format=Person).output_parsed == Person(
        name="Ada", age=36
    )
    parsed = ant.messages.parse(model="m", max_tokens=50, messages=USER, output_format=Person)
    assert parsed.parsed_output == Person(name="Ada", age=36)
    assert emu.requests[2].mode_fields["format"] == "json_schema"
    with pytest.raises(openai.LengthFinishReasonError):
        oai.chat.completions.parse(model="m", messages=USER, response_format=Person)


# -- HTTP errors ---------------------------------------------------------------------------------------


def test_schema_rejected(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.script(reply.schema_rejected(), reply.schema_rejected(), reply.schema_rejected("bad schema"))
    with pytest.raises(openai.BadRequestError) as caught:
        chat(oai, response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}})
    assert (caught.value.status_code, caught.value.code, caught.value.type) == (
        400,
        "invalid_json_schema",
        "invalid_request_error",
    )
    with pytest.raises(openai.BadRequestError) as caught:
        chat(oai, tools=CHAT_TOOL, tool_choice=CHAT_FORCE)
    assert caught.value.code == "invalid_function_parameters"
    with pytest.raises(anthropic.BadRequestError) as rejected:
        msg(ant)
    assert rejected.value.type == "invalid_request_error"
    assert rejected.value.api_message == "bad schema"


def test_rate_limits_with_headers(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.script(
        reply.rate_limited(retry_after=2, retry_after_ms=1500),
        reply.rate_limited(retry_after=0.5),
        reply.rate_limited(spend_limit=True),
        reply.rate_limited(spend_limit=True),
    )
    with pytest.raises(openai.RateLimitError) as caught:
        chat(oai)
    headers = caught.value.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("2", "1500")
    assert caught.value.code == "rate_limit_exceeded"
    assert caught.value.response.headers["x-request-id"].startswith("req_")
    with pytest.raises(anthropic.RateLimitError) as limited:
        msg(ant)
    assert limited.value.response.headers["retry-after"] == "0.5"
    assert limited.value.type == "rate_limit_error"
    assert not isinstance(limited.value, anthropic.EnforcedSpendLimitReachedError)
    with pytest.raises(openai.RateLimitError) as caught:
        resp(oai)
    assert (caught.value.code, caught.value.type) == ("insufficient_quota", "insufficient_quota")
    with pytest.raises(anthropic.EnforcedSpendLimitReachedError) as spent:
        msg(ant)
    assert spent.value.error_code == "enforced_spend_limit_reached"
    assert isinstance(spent.value, anthropic.RateLimitError)


def test_server_errors_and_overload(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.script(
        reply.server_error(),
        reply.server_error(502),
        reply.overloaded(),
        reply.overloaded(),
        reply.error(404, code="file_expired", message="gone", headers={"x-extra": "1"}),
    )
    with pytest.raises(openai.InternalServerError) as caught:
        chat(oai)
    assert (caught.value.status_code, caught.value.type) == (500, "server_error")
    with pytest.raises(anthropic.InternalServerError) as failed:
        msg(ant)
    assert (failed.value.status_code, failed.value.type) == (502, "api_error")
    with pytest.raises(anthropic.OverloadedError) as overloaded:
        msg(ant)
    assert (overloaded.value.status_code, overloaded.value.type) == (529, "overloaded_error")
    with pytest.raises(openai.InternalServerError) as caught:
        resp(oai)
    assert caught.value.status_code == 503
    with pytest.raises(FileExpiredError) as expired:  # details.error_code picks the subclass
        msg(ant)
    assert (expired.value.status_code, expired.value.api_message) == (404, "gone")
    assert expired.value.response.headers["x-extra"] == "1"


def test_exhausted_script_fails_loudly(emu: Emulator, oai: openai.OpenAI) -> None:
    with pytest.raises(openai.InternalServerError, match="emulator script exhausted"):
        chat(oai)
    assert EXHAUSTED.startswith("emulator script exhausted")
    assert len(emu.requests) == 1


def test_timeout_drop_and_prompt_stop() -> None:
    emu = Emulator().start()
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0, timeout=0.3)
    emu.script(reply.timeout(30), reply.drop(), reply.timeout(0.05, then=reply.answer("late")))
    with pytest.raises(openai.APITimeoutError):
        chat(client)
    with pytest.raises(openai.APIConnectionError) as dropped:
        chat(client)
    assert not isinstance(dropped.value, openai.APITimeoutError)
    assert chat(client).choices[0].message.content == "late"
    # a stall that would end in an answer after 600 s; the client would give up after 30 s with a timeout
    emu.script(reply.timeout(600, then=reply.answer("too late")))
    slow = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0, timeout=30)
    outcome: list[BaseException] = []
    before = len(emu.requests)

    def call() -> None:
        try:
            chat(slow)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    until(lambda: len(emu.requests) == before + 1, "the stalled request reaching the emulator")
    finishes(emu.stop, "Emulator.stop() with a 600 s stall in flight")  # stop must not wait for the stall
    worker.join(HANG_GUARD_S)
    assert not worker.is_alive()
    # the server closed the connection: neither the stall's answer nor the client's own 30 s timeout ended it
    assert len(outcome) == 1 and isinstance(outcome[0], openai.APIConnectionError)
    assert not isinstance(outcome[0], openai.APITimeoutError)
    client.close()
    slow.close()


def test_latency_and_responder(emu: Emulator, oai: openai.OpenAI) -> None:
    seen: list[str | None] = []

    def responder(request: RecordedRequest) -> reply.Reply:
        seen.append(request.model)
        return reply.answer(f"echo {request.last_user_text}")

    emu.responder = responder
    # latency holds every answer back: 5 s of it outlasts a 0.5 s read timeout, whatever the machine's load
    emu.latency = 5.0
    emu.script(reply.answer("held back"))
    impatient = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0, timeout=0.5)
    with pytest.raises(openai.APITimeoutError):
        chat(impatient)
    impatient.close()
    emu.latency = 0.0
    emu.script(reply.answer("scripted first"))
    assert chat(oai).choices[0].message.content == "scripted first"
    assert chat(oai, messages=[{"role": "user", "content": "ping"}]).choices[0].message.content == "echo ping"
    assert seen == ["gpt-test"]
    emu.responder = lambda request: 1 / 0  # type: ignore[assignment,return-value]
    with pytest.raises(openai.InternalServerError, match="responder raised ZeroDivisionError"):
        chat(oai)
    emu.responder = lambda request: "not a behaviour"  # type: ignore[assignment,return-value]
    with pytest.raises(openai.InternalServerError, match="not a behaviour"):
        chat(oai)
    emu.reset()
    assert (emu.requests, emu.pending, emu.responder) == ([], 0, None)


# -- streaming -----------------------------------------------------------------------------------------


def test_chat_streams(emu: Emulator, oai: openai.OpenAI) -> None:
    long = '{"name": "Ada Lovelace", "age": 36, "note": "first programmer"}'
    emu.script(reply.answer(long), reply.answer(long), reply.truncated('{"name": "Ad'))
    with oai.chat.completions.stream(model="m", messages=USER, stream_options={"include_usage": True}) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_completion()
    assert kinds.count("content.delta") >= 5
    assert final.choices[0].message.content == long
    assert final.choices[0].finish_reason == "stop"
    assert final.usage is not None and final.usage.completion_tokens == 16
    chunks = list(chat(oai, tools=CHAT_TOOL, tool_choice=CHAT_FORCE, stream=True))
    assert all(c.usage is None for c in chunks)  # no include_usage -> no usage chunk
    arguments = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments for c in chunks if c.choices[0].delta.tool_calls
    )
    assert arguments == long
    assert chunks[0].choices[0].delta.tool_calls[0].function.name == "person"
    assert chunks[-1].choices[0].finish_reason == "stop"
    chunks = list(chat(oai, stream=True, stream_options={"include_usage": True}))
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    emu.script(reply.refusal("No, I won't do that."))
    with oai.chat.completions.stream(model="m", messages=USER) as refused:
        kinds = [event.type for event in refused]
        final = refused.get_final_completion()
    assert "refusal.delta" in kinds
    assert (final.choices[0].message.refusal, final.choices[0].message.content) == ("No, I won't do that.", None)


@pytest.mark.slow
def test_responses_streams(emu: Emulator, oai: openai.OpenAI) -> None:
    emu.script(reply.answer(GOOD), reply.truncated('{"name": "Ad'), reply.refusal("No."))
    events = list(resp(oai, stream=True, tools=RESP_TOOL, tool_choice=RESP_FORCE))
    kinds = [e.type for e in events]
    assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    assert kinds[-1] == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta") == GOOD
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].response.output[0].arguments == GOOD
    assert events[-1].response.usage.output_tokens == 7
    events = list(resp(oai, stream=True))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == '{"name": "Ad'
    with oai.responses.stream(model="m", input="hi") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert "response.refusal.delta" in kinds
    assert final.output[0].content[0].refusal == "No."


def test_anthropic_streams(emu: Emulator, ant: anthropic.Anthropic) -> None:
    emu.script(reply.answer(GOOD), reply.answer(GOOD), reply.truncated("Once upon a"))
    with ant.messages.stream(
        model="m", max_tokens=50, messages=USER, tools=ANTH_TOOL, tool_choice=ANTH_FORCE
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert final.content[0].input == {"name": "Ada", "age": 36}
    assert (final.stop_reason, final.usage.output_tokens) == ("tool_use", 7)
    raw = list(msg(ant, stream=True, tools=ANTH_TOOL, tool_choice=ANTH_FORCE))
    partial = "".join(e.delta.partial_json for e in raw if e.type == "content_block_delta")
    assert partial == GOOD
    with ant.messages.stream(model="m", max_tokens=3, messages=USER) as stream:
        assert stream.get_final_text() == "Once upon a"
        assert stream.get_final_message().stop_reason == "max_tokens"


def test_mid_stream_errors(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.script(reply.stream_error("partial text here"), reply.stream_error("partial"), reply.stream_error("half"))
    received: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        ant.messages.stream(model="m", max_tokens=50, messages=USER) as stream,
    ):
        received.extend(stream.text_stream)
    assert "".join(received) == "partial text here"
    assert caught.value.status_code == 200  # the error arrived inside a 200 stream
    assert caught.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(openai.APIError) as failed:
        list(chat(oai, stream=True))
    assert not isinstance(failed.value, openai.APIStatusError)
    assert failed.value.message == "Overloaded" and failed.value.type == "server_error"
    events = list(resp(oai, stream=True))  # Responses reports the failure as events, not an exception
    assert [e.type for e in events][-2:] == ["error", "response.failed"]
    assert events[-2].code == "server_error"
    assert events[-1].response.status == "failed"


def test_stream_error_without_stream_is_overloaded(emu: Emulator, ant: anthropic.Anthropic) -> None:
    emu.script(reply.stream_error("x"))
    with pytest.raises(anthropic.OverloadedError):
        msg(ant)


def test_async_clients(emu: Emulator) -> None:
    async def main() -> tuple[str, str, str, str]:
        oai = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0, timeout=5)
        ant = anthropic.AsyncAnthropic(base_url=emu.anthropic_base_url, api_key="test", max_retries=0, timeout=5)
        try:
            completion = await oai.chat.completions.create(model="m", messages=USER)
            text = ""
            async with oai.chat.completions.stream(model="m", messages=USER) as stream:
                async for event in stream:
                    if event.type == "content.delta":
                        text += event.delta
            output = ""
            async for event in await oai.responses.create(model="m", input="x", stream=True):
                if event.type == "response.output_text.delta":
                    output += event.delta
            async with ant.messages.stream(model="m", max_tokens=9, messages=USER) as astream:
                message = await astream.get_final_message()
            with pytest.raises(anthropic.RateLimitError):
                await ant.messages.create(model="m", max_tokens=9, messages=USER)
            return completion.choices[0].message.content or "", text, output, message.content[0].text
        finally:
            await oai.close()
            await ant.close()

    emu.script(reply.answer("one"), reply.answer("two two two two"), reply.answer("three"), reply.answer("four"))
    emu.script(reply.rate_limited(retry_after=0))
    assert asyncio.run(main()) == ("one", "two two two two", "three", "four")


# -- schema checks at the door -------------------------------------------------------------------------


def test_strict_requests_with_bad_schemas_are_rejected_without_consuming(
    emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic
) -> None:
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}
    emu.script(reply.answer('{"a": "x"}'))
    strict_format = {"type": "json_schema", "json_schema": {"name": "p", "schema": loose, "strict": True}}
    with pytest.raises(openai.BadRequestError) as caught:
        chat(oai, response_format=strict_format)
    assert caught.value.code == "invalid_json_schema" and caught.value.param == "response_format"
    assert "additionalProperties" in caught.value.message
    with pytest.raises(openai.BadRequestError) as caught:
        tool = [{"type": "function", "name": "f", "parameters": loose, "strict": True}]
        resp(oai, tools=tool)
    assert caught.value.code == "invalid_function_parameters"
    with pytest.raises(anthropic.BadRequestError) as rejected:
        bounded = {**SCHEMA, "properties": {"name": {"type": "string", "maxLength": 3}, "age": {"type": "integer"}}}
        msg(ant, output_config={"format": {"type": "json_schema", "schema": bounded}})
    assert "maxLength" in (rejected.value.api_message or "")
    assert emu.pending == 1 and len(emu.requests) == 3
    # Non-strict OpenAI schemas are not checked; the queued answer is still there for them.
    schema_format = {"type": "json_schema", "json_schema": {"name": "p", "schema": loose}}
    assert chat(oai, response_format=schema_format).choices[0].message.content == '{"a": "x"}'


def test_json_mode_needs_the_word_json(emu: Emulator, oai: openai.OpenAI) -> None:
    emu.script(reply.answer("{}"), reply.answer("{}"))
    with pytest.raises(openai.BadRequestError, match="must contain the word 'json'"):
        chat(oai, messages=[{"role": "user", "content": "hi"}], response_format={"type": "json_object"})
    with pytest.raises(openai.BadRequestError) as caught:
        resp(oai, input="hi", text={"format": {"type": "json_object"}})
    assert caught.value.param == "input"
    assert chat(oai, response_format={"type": "json_object"}).choices[0].message.content == "{}"
    assert resp(oai, instructions="Reply in Json.", input="hi", text={"format": {"type": "json_object"}}).output_text
    unchecked = Emulator(check_schemas=False).start()
    try:
        unchecked.script(reply.answer("{}"))
        client = openai.OpenAI(base_url=unchecked.openai_base_url, api_key="t", max_retries=0, timeout=5)
        assert chat(client, messages=[{"role": "user", "content": "hi"}], response_format={"type": "json_object"})
        client.close()
    finally:
        unchecked.stop()


# -- what gets recorded --------------------------------------------------------------------------------


def test_recorded_request_accessors(emu: Emulator, oai: openai.OpenAI, ant: anthropic.Anthropic) -> None:
    emu.responder = lambda request: reply.answer("{}")
    chat_messages: list[Any] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": TOOL_FN}]},
        {"role": "tool", "tool_call_id": "c1", "content": "fix: age is missing"},
    ]
    responses_input: list[Any] = [
        {"role": "user", "content": [{"type": "input_text", "text": "first"}]},
        {"type": "function_call", "call_id": "c1", "name": "person", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "fix: name is missing"},
    ]
    anthropic_messages: list[Any] = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "person", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "fix: both missing"}]},
    ]
    text_format = {"format": {"type": "json_schema", "name": "p", "schema": SCHEMA, "strict": True}}
    chat(
        oai, messages=chat_messages, tools=CHAT_TOOL, tool_choice=CHAT_FORCE, max_completion_tokens=64, temperature=0.5
    )
    resp(oai, input=responses_input, text=text_format, max_output_tokens=99)
    stream = ant.messages.create(
        model="claude-test",
        max_tokens=77,
        messages=anthropic_messages,
        tools=ANTH_TOOL,
        tool_choice=ANTH_FORCE,
        stream=True,
    )
    stream.close()
    first, second, third = emu.requests
    assert (first.api, first.path, first.model, first.stream) == ("chat", "/v1/chat/completions", "gpt-test", False)
    assert (first.max_tokens, first.temperature, first.forced_tool) == (64, 0.5, "person")
    assert first.schema == SCHEMA
    assert first.last_user_text == "fix: age is missing"
    assert first.mode_fields == {
        "format": None,
        "strict": None,
        "tools": ["person"],
        "forced_tool": "person",
        "strict_tools": ["person"],
        "parallel_tool_calls": None,
        "stream": False,
    }
    assert first.headers["authorization"] == "Bearer test"
    assert (second.max_tokens, second.forced_tool, second.schema) == (99, None, SCHEMA)
    assert second.last_user_text == "fix: name is missing"
    assert second.mode_fields["format"] == "json_schema" and second.mode_fields["strict"] is True
    assert len(second.messages) == 3
    assert (third.api, third.stream, third.max_tokens, third.forced_tool) == ("messages", True, 77, "person")
    assert third.last_user_text == "fix: both missing"
    assert third.mode_fields["parallel_tool_calls"] is False
    assert third.headers["authorization"] == "Bearer test" and "anthropic-version" in third.headers
    assert resp_input_as_string(emu, oai).messages == [{"role": "user", "content": "just text"}]


def resp_input_as_string(emu: Emulator, oai: openai.OpenAI) -> RecordedRequest:
    resp(oai, input="just text")
    return emu.requests[-1]


# -- strictness checkers -------------------------------------------------------------------------------


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    age: int
    address: Address
    nickname: str | None = None


class WithDefaults(BaseModel):
    name: str
    retries: int = 3


class Bounded(BaseModel):
    score: int = Field(ge=0, le=10)
    tags: list[str] = Field(min_length=2)


class Cat(BaseModel):
    kind: Literal["cat"]


class Dog(BaseModel):
    kind: Literal["dog"]


class Owner(BaseModel):
    pet: Cat | Dog = Field(discriminator="kind")


class Node(BaseModel):
    value: int
    children: list[Node]


class Tree(BaseModel):
    root: Node


def strictify(schema: dict[str, Any]) -> dict[str, Any]:
    """What a strict-mode compiler does: additionalProperties false and every property required."""
    if isinstance(schema, dict):
        schema = {k: strictify(v) for k, v in schema.items()}
        if "properties" in schema:
            schema["additionalProperties"] = False
            schema["required"] = list(schema["properties"])
    elif isinstance(schema, list):
        return [strictify(v) for v in schema]
    return schema


def test_openai_strictness_checker() -> None:
    assert openai_strict_problems(SCHEMA) == []
    assert openai_strict_problems(strictify(Person.model_json_schema())) == []
    assert openai_strict_problems(strictify(Tree.model_json_schema())) == []  # recursion is fine on OpenAI
    # pydantic writes a recursive root model as a bare $ref: not an object at the root.
    assert openai_strict_problems(strictify(Node.model_json_schema())) == [
        "#: the root schema must have type 'object', not None"
    ]
    raw = openai_strict_problems(Person.model_json_schema())
    assert any(p.startswith("#:") and "additionalProperties" in p for p in raw)
    assert any(p.startswith("#/$defs/Address:") for p in raw)
    assert any("'required' must list every property" in p and "nickname" in p for p in raw)
    defaults = openai_strict_problems(strictify(WithDefaults.model_json_schema()))
    assert defaults == ["#/properties/retries: a non-null 'default' is not permitted"]
    assert any("'oneOf' is not permitted" in p for p in openai_strict_problems(strictify(Owner.model_json_schema())))
    assert openai_strict_problems({"anyOf": [SCHEMA]})[0].startswith("#: the root schema must not be 'anyOf'")
    uri = {**SCHEMA, "properties": {"u": {"type": "string", "format": "uri"}}, "required": ["u"]}
    assert openai_strict_problems(uri) == ["#/properties/u: format 'uri' is not supported"]
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        deep = {"type": "object", "properties": {"x": deep}, "required": ["x"], "additionalProperties": False}
    assert openai_strict_problems(deep) == ["#: nesting depth 11 exceeds the limit of 10"]
    many = {**SCHEMA, "properties": {"e": {"enum": list(range(1001))}}, "required": ["e"]}
    assert any("1001 enum values" in p for p in openai_strict_problems(many))
    bad_ref = {**SCHEMA, "properties": {"r": {"$ref": "other.json#/x"}}, "required": ["r"]}
    assert any("must point to" in p for p in openai_strict_problems(bad_ref))


def test_anthropic_strictness_checker() -> None:
    assert anthropic_strict_problems(SCHEMA) == []
    optional = {
        "type": "object",
        "properties": {"a": {"type": "string", "default": "x"}},
        "additionalProperties": False,
    }
    assert anthropic_strict_problems(optional) == []  # optional properties and defaults are fine
    assert anthropic_strict_problems(strictify(Person.model_json_schema())) == []
    problems = anthropic_strict_problems(strictify(Bounded.model_json_schema()))
    assert "#/properties/score: 'minimum' is not supported" in problems
    assert "#/properties/score: 'maximum' is not supported" in problems
    assert "#/properties/tags: 'minItems' must be 0 or 1, not 2" in problems
    assert anthropic_strict_problems(strictify(Tree.model_json_schema())) == [
        "#/$defs/Node/properties/children/items: recursive schemas are not supported"
    ]
    assert any("additionalProperties" in p for p in anthropic_strict_problems(Person.model_json_schema()))
    uri = {**SCHEMA, "properties": {"u": {"type": "string", "format": "uri"}}}
    assert anthropic_strict_problems(uri) == []
    patterns = {r"^\d{3}-\d{4}$": True, r"(a)\1": False, r"(?=x)": False, r"\bword": False, r"\\b": True}
    for pattern, ok in patterns.items():
        schema = {**SCHEMA, "properties": {"p": {"type": "string", "pattern": pattern}}, "required": ["p"]}
        assert (anthropic_strict_problems(schema) == []) is ok, pattern
    ref_all_of = {**SCHEMA, "$defs": {"A": SCHEMA}, "properties": {"x": {"allOf": [{"$ref": "#/$defs/A"}]}}}
    assert any("'allOf' combined with '$ref'" in p for p in anthropic_strict_problems(ref_all_of))
    props = {f"p{i}": {"type": ["string", "null"]} for i in range(25)}
    wide = {"type": "object", "properties": props, "additionalProperties": False}
    problems = anthropic_strict_problems(wide)
    assert any("25 optional properties" in p for p in problems)
    assert any("25 properties with 'anyOf' or a type array" in p for p in problems)


# -- FaultProfile --------------------------------------------------------------------------------------


def _request(**body: Any) -> RecordedRequest:
    return RecordedRequest(api="chat", path="/v1/chat/completions", headers={}, body={"model": "m", **body})


def test_fault_profile_is_deterministic_and_rates_match() -> None:
    schema = {**SCHEMA, "properties": {**SCHEMA["properties"], "ok": {"type": "boolean"}}, "required": ["name", "ok"]}
    request = _request(messages=USER, response_format={"type": "json_schema", "json_schema": {"schema": schema}})
    first, second, other = FaultProfile(seed=7), FaultProfile(seed=7), FaultProfile(seed=8)
    a = [first(request) for _ in range(1000)]
    b = [second(request) for _ in range(1000)]
    assert a == b and first.history == second.history
    [other(request) for _ in range(1000)]
    assert other.history != first.history
    counts = first.counts
    assert sum(counts.values()) == 1000
    assert 70 <= counts["rate_limit"] <= 130
    assert 25 <= counts["truncation"] <= 80
    assert 5 <= counts["refusal"] <= 40
    answered = counts["slip"] + counts["clean"]
    assert 0.22 <= counts["slip"] / answered <= 0.38
    assert all(first.slip_counts[form] > 10 for form in SLIPS)
    assert all(r.delay == 0.05 for r in a)
    assert {r.kind for r in a} == {"error", "truncated", "refusal", "answer"}
    clean = next(r.text for r, k in zip(a, first.history, strict=True) if k == "clean")
    assert json.loads(clean) == {"name": "example", "ok": False}  # the default answer: a minimal valid instance


def test_fault_profile_serves_through_the_emulator(emu: Emulator, oai: openai.OpenAI) -> None:
    profile = FaultProfile(seed=1, latency=0.0, answer=lambda request: GOOD)
    emu.responder = profile
    kinds = []
    for _ in range(40):
        try:
            chat(oai)
            kinds.append("ok")
        except openai.RateLimitError as exc:
            assert "retry-after" in exc.response.headers or "retry-after-ms" in exc.response.headers
            kinds.append("429")
    assert kinds.count("429") == profile.counts["rate_limit"]
    assert len(emu.requests) == 40


@pytest.mark.parametrize("form", SLIPS)
def test_slips_are_repairable(form: str) -> None:
    value = {"name": "O'Hara", "ok": True, "none": None, "items": [1, 2]}
    text = json.dumps(value)
    slipped = slip(form, text)
    assert slipped is not None and slipped != text
    with pytest.raises(ValueError):
        json.loads(slipped)
    if form == "fence":
        repaired = json.loads(slipped.split("```json\n")[1].split("\n```")[0])
    elif form == "comment":
        repaired = json.loads("\n".join(line for line in slipped.splitlines() if "//" not in line))
    elif form == "single_quotes":
        repaired = ast.literal_eval(slipped.replace("true", "True").replace("null", "None"))
    else:
        python = slipped.replace("true", "True").replace("null", "None") if form == "trailing_comma" else slipped
        repaired = ast.literal_eval(python)
    assert repaired == value
    assert slip("trailing_comma", "not json") is None


# -- plugin fixtures and the command line ---------------------------------------------------------------


def test_plugin_fixtures(guardrail_emulator: Emulator, guardrail_openai: openai.OpenAI,
                         guardrail_anthropic: Any) -> None:
    guardrail_emulator.script(reply.answer("a"), reply.answer("b"))
    assert guardrail_openai.chat.completions.create(model="m", messages=USER).choices[0].message.content == "a"
    assert guardrail_anthropic.messages.create(model="m", max_tokens=5, messages=USER).content[0].text == "b"
    assert guardrail_openai.max_retries == 0 and guardrail_anthropic.max_retries == 0


def test_async_plugin_fixtures(
    guardrail_emulator: Emulator, guardrail_async_openai: openai.AsyncOpenAI, guardrail_async_anthropic: Any
) -> None:
    async def main() -> tuple[str | None, str]:
        try:
            completion = await guardrail_async_openai.chat.completions.create(model="m", messages=USER)
            message = await guardrail_async_anthropic.messages.create(model="m", max_tokens=5, messages=USER)
            return completion.choices[0].message.content, message.content[0].text
        finally:
            await guardrail_async_openai.close()
            await guardrail_async_anthropic.close()

    guardrail_emulator.script(reply.answer("a"), reply.answer("b"))
    assert asyncio.run(main()) == ("a", "b")


def test_command_line_serves_until_interrupted() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "guardrail.testing", "--port", "0", "--answer", "hello"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        base = process.stdout.readline().split(" on ")[1].strip()
        request = urllib.request.Request(
            base + "/v1/messages",
            data=json.dumps({"model": "m", "max_tokens": 5, "messages": USER}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert json.load(answer)["content"][0]["text"] == "hello"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=5) == 0
    finally:
        process.kill()


# -- faults of the wire itself: pages, bodies that are not JSON, malformed events, cut and trickled bodies ----
def post(emu: Emulator, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    """A plain HTTP POST (no SDK), so the test sees exactly the bytes the emulator sent."""
    request = urllib.request.Request(emu.base_url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.headers.get("content-type", ""), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("content-type", ""), error.read()


CHAT_BODY = {"model": "m", "messages": USER}


def test_raw_bodies_are_sent_verbatim_to_plain_and_streaming_requests(emu: Emulator) -> None:
    emu.script(reply.html_page(), reply.raw("upstream hiccup", status=502, content_type="text/plain"),
               reply.not_json(), reply.html_page(status=200))
    status, kind, body = post(emu, "/v1/chat/completions", CHAT_BODY)
    assert (status, kind) == (200, "text/html; charset=utf-8") and body.startswith(b"<!DOCTYPE html>")
    assert post(emu, "/v1/messages", CHAT_BODY) == (502, "text/plain", b"upstream hiccup")
    status, kind, body = post(emu, "/v1/responses", {"model": "m", "input": "x"})
    assert kind == "application/json"
    with pytest.raises(ValueError):
        json.loads(body)
    status, kind, body = post(emu, "/v1/chat/completions", {**CHAT_BODY, "stream": True})
    assert kind.startswith("text/html") and b"<html>" in body


def test_a_malformed_event_sits_in_the_middle_of_a_good_stream(emu: Emulator) -> None:
    emu.script(reply.malformed_event(GOOD), reply.malformed_event(GOOD), reply.malformed_event(GOOD, line="data: ["))
    _, kind, body = post(emu, "/v1/chat/completions", {**CHAT_BODY, "stream": True})
    assert kind.startswith("text/event-stream")
    frames = body.split(b"\n\n")
    bad = frames.index(b"data: {not json")
    assert 0 < bad < len(frames) - 2 and frames[-2] == b"data: [DONE]"
    _, _, body = post(emu, "/v1/messages", {**CHAT_BODY, "max_tokens": 10, "stream": True})
    assert b"event: content_block_delta\ndata: {not json\n\n" in body  # named: the SDK reads it
    assert post(emu, "/v1/chat/completions", CHAT_BODY) == (200, "application/json", b"data: [")


def test_a_cut_body_falls_short_of_its_length_and_the_connection_closes(emu: Emulator, oai: openai.OpenAI) -> None:
    emu.script(reply.cut(GOOD, fraction=0.5), reply.cut(GOOD, fraction=0.3))
    with pytest.raises(openai.APIConnectionError):
        chat(oai)
    # openai lets httpx's error through, or (3.5x and later) raises its own from it
    with pytest.raises((httpx2.RemoteProtocolError, openai.APIConnectionError)) as caught, \
            chat(oai, stream=True) as events:
        list(events)
    assert cut_off(caught.value)


def test_a_trickled_body_arrives_whole_and_unchanged(emu: Emulator, oai: openai.OpenAI) -> None:
    emu.script(reply.answer(GOOD).trickled(0.001, piece=64), reply.answer(GOOD).trickled(0.001, piece=16))
    assert chat(oai).choices[0].message.content == GOOD
    with chat(oai, stream=True) as events:
        assert "".join(e.choices[0].delta.content or "" for e in events if e.choices) == GOOD
    assert emu.closed_early == 0


def test_a_client_that_hangs_up_on_a_trickle_is_counted(emu: Emulator) -> None:
    import socket

    emu.script(reply.answer(GOOD).trickled(0.02))
    host, port = emu.base_url.removeprefix("http://").split(":")
    payload = json.dumps(CHAT_BODY).encode()
    with socket.create_connection((host, int(port)), timeout=5) as connection:
        connection.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                           b"content-length: %d\r\n\r\n%s" % (len(payload), payload))
        assert connection.recv(4096).startswith(b"HTTP/1.1 200")  # headers at once, then a byte at a time
    assert emu.wait_closed_early(1)
    assert emu.closed_early == 1
    emu.reset()
    assert emu.closed_early == 0


def test_scripts_name_the_fault_behaviours_and_trickle() -> None:
    from guardrail.testing.script import parse_script

    parsed = parse_script([{"html_page": {"status": 502}}, {"not_json": {}}, {"cut": {"text": "{}", "fraction": 0.2}},
                           {"malformed_event": {"text": "{}"}}, {"raw": {"body": "x", "content_type": "text/plain"}},
                           {"answer": "{}", "trickle": {"every": 0.1, "piece": 4}}])
    assert [p.kind for p in parsed] == ["raw", "raw", "cut", "malformed_event", "raw", "answer"]
    assert parsed[0].status == 502 and (parsed[-1].every, parsed[-1].piece) == (0.1, 4)
    with pytest.raises(ValueError, match="trickle"):
        parse_script([{"answer": "{}", "trickle": {"every": -1}}])
    with pytest.raises(ValueError):
        reply.cut("{}", fraction=1.0)
