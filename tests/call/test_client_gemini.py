"""``guardrail.wrap(google.genai.Client(...))``: Gemini natively, through the real google-genai SDK and the emulator.

Sync (``client.models``) and async (``client.aio.models``), on the Gemini API's paths and on Vertex AI's
(``vertexai=True``): the four modes, repairs with feedback in Gemini's ``contents`` turns, truncation, safety
stops and blocked prompts, a schema 400 walking down the modes, transport faults, streams with previews, usage
with cached and thinking tokens, plain calls left to the SDK, and the drop-in standard (isinstance, signatures,
``dir``, context managers, shared attributes).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
from collections.abc import Callable
from typing import Any

import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field, create_model
from support.calls import PRINTER_GOOD, PRINTER_TICKET, RecordingRetry, Ticket

import guardrail
from guardrail.call import WrappedClient
from guardrail.errors import OutputTruncated, Refused, UsageError, VendorError, VendorUnavailable
from guardrail.outcome import Partial
from guardrail.testing import Emulator, reply

MODEL = "gemini-2.5-flash"
CONTENTS = "File a ticket for the burning printer."
MODES = [pytest.param(False, id="sync"), pytest.param(True, id="async")]
FLAVOURS = [pytest.param(False, id="gemini-api"), pytest.param(True, id="vertex")]
FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.2, deadline=10)


def sdk(emu: Emulator, *, vertex: bool = False, timeout_ms: int = 5000) -> genai.Client:
    """The real google-genai client pointed at the emulator (Vertex AI express mode with ``vertex``)."""
    options = types.HttpOptions(base_url=emu.gemini_base_url, timeout=timeout_ms)
    if vertex:
        return genai.Client(vertexai=True, api_key="test", http_options=options)
    return genai.Client(api_key="test", http_options=options)


def wrapped(emu: Emulator, *, vertex: bool = False, retry: guardrail.RetryPolicy = FAST) -> Any:
    return guardrail.wrap(sdk(emu, vertex=vertex), retry=retry)


def run(client: Any, is_async: bool, method: str, **kwargs: Any) -> Any:
    """``client.models.<method>(...)`` or, async, ``await client.aio.models.<method>(...)``."""
    if not is_async:
        return getattr(client.models, method)(**kwargs)

    async def go() -> Any:
        return await getattr(client.aio.models, method)(**kwargs)

    return asyncio.run(go())


def streamed(client: Any, is_async: bool, **kwargs: Any) -> list[Any]:
    """Every item of ``generate_content_stream(..., response_model=...)`` (previews, then the value)."""
    if not is_async:
        return list(client.models.generate_content_stream(**kwargs))

    async def go() -> list[Any]:
        return [item async for item in await client.aio.models.generate_content_stream(**kwargs)]

    return asyncio.run(go())


def ask(client: Any, is_async: bool, contents: Any = CONTENTS, **extra: Any) -> Any:
    """``generate_content_with_result`` for the printer ticket."""
    return run(client, is_async, "generate_content_with_result", model=MODEL, contents=contents,
               response_model=Ticket, **extra)


# -- the modes -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("vertex", FLAVOURS)
@pytest.mark.parametrize("is_async", MODES)
def test_native_mode_sends_the_lowered_schema_and_returns_the_validated_value(emu: Emulator, is_async: bool,
                                                                             vertex: bool) -> None:
    client = wrapped(emu, vertex=vertex)
    emu.script(reply.answer(PRINTER_GOOD))
    result = ask(client, is_async)
    assert result.value == PRINTER_TICKET and result.mode == "native"
    sent = emu.requests[-1]
    assert sent.api == "gemini" and sent.model == MODEL
    assert ("publishers/google/models" in sent.path) is vertex
    config = sent.generation_config
    assert config["responseMimeType"] == "application/json"
    schema = config["responseJsonSchema"]
    assert schema["properties"]["priority"]["minimum"] == 1 and schema["properties"]["priority"]["maximum"] == 5
    assert result.compile_report.dialect == "gemini" and result.compile_report.ok
    assert result.provider == ("gcp.vertex_ai" if vertex else "gcp.gemini")
    emu.script(reply.answer(PRINTER_GOOD))
    assert run(client, is_async, "generate_content", model=MODEL, contents=CONTENTS,
               response_model=Ticket) == PRINTER_TICKET


@pytest.mark.parametrize("is_async", MODES)
def test_tool_json_and_prompt_modes(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.answer(PRINTER_GOOD))
    assert ask(client, is_async, mode="tool").value == PRINTER_TICKET
    sent = emu.requests[-1]
    calling = sent.body["toolConfig"]["functionCallingConfig"]
    assert calling == {"mode": "ANY", "allowedFunctionNames": ["Ticket"]} and sent.forced_tool == "Ticket"
    assert sent.tools[0]["schema"]["properties"]["priority"]["maximum"] == 5

    emu.script(reply.answer(PRINTER_GOOD))
    assert ask(client, is_async, mode="json").value == PRINTER_TICKET
    sent = emu.requests[-1]
    assert sent.output_format == {"type": "json_object"} and "JSON Schema" in sent.system

    emu.script(reply.answer('Sure! {"title": "Printer on fire", "priority": 5, "tags": ["hw"],} Done.'))
    result = ask(client, is_async, mode="prompt")
    assert result.value == PRINTER_TICKET and result.fixes
    sent = emu.requests[-1]
    assert sent.output_format is None and not sent.tools and "JSON Schema" in sent.system


def test_a_vertex_client_with_project_and_location(emu: Emulator) -> None:
    from google.oauth2.credentials import Credentials

    raw = genai.Client(vertexai=True, project="acme", location="europe-west4", credentials=Credentials(token="t"),
                       http_options=types.HttpOptions(base_url=emu.gemini_base_url))
    client = guardrail.wrap(raw)
    emu.script(reply.answer(PRINTER_GOOD))
    result = client.models.generate_content_with_result(model=MODEL, contents=CONTENTS, response_model=Ticket)
    assert result.value == PRINTER_TICKET and result.mode == "native" and result.provider == "gcp.vertex_ai"
    assert "/projects/acme/locations/europe-west4/publishers/google/models/" in emu.requests[-1].path


def test_the_callers_config_is_kept_and_the_system_instruction_extended(emu: Emulator) -> None:
    client = wrapped(emu)
    emu.script(reply.answer(PRINTER_GOOD))
    config = types.GenerateContentConfig(system_instruction="You file tickets.", max_output_tokens=300,
                                         temperature=0.7, stop_sequences=["END"])
    client.models.generate_content(model=MODEL, contents=CONTENTS, config=config, response_model=Ticket,
                                   mode="prompt")
    sent = emu.requests[-1]
    assert sent.system.startswith("You file tickets.") and "JSON Schema" in sent.system
    assert sent.max_tokens == 300 and sent.temperature == 0.7 and sent.generation_config["stopSequences"] == ["END"]
    with pytest.raises(UsageError, match="response_mime_type"):
        client.models.generate_content(model=MODEL, contents=CONTENTS, response_model=Ticket,
                                       config={"response_mime_type": "application/json"})


# -- repairs ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
def test_a_repair_turn_replays_the_answer_as_the_model_and_the_feedback_as_the_user(emu: Emulator,
                                                                                   is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.answer('{"title": "Printer on fire", "priority": 9}'), reply.answer(PRINTER_GOOD))
    result = ask(client, is_async, contents=[CONTENTS, "It is urgent."])
    assert result.value == PRINTER_TICKET and len(result.attempts) == 2
    turns = emu.requests[-1].body["contents"]
    assert [turn["role"] for turn in turns] == ["user", "model", "user"]
    assert [part["text"] for part in turns[0]["parts"]] == [CONTENTS, "It is urgent."]
    assert turns[1]["parts"][0]["text"] == '{"title": "Printer on fire", "priority": 9}'
    assert "priority" in emu.requests[-1].last_user_text and "less than or equal to 5" in result.attempts[0].feedback


def test_a_repair_in_tool_mode_replays_the_function_call_and_its_response(emu: Emulator) -> None:
    client = wrapped(emu)
    emu.script(reply.tool_call({"title": "Printer on fire", "priority": 0}), reply.answer(PRINTER_GOOD))
    result = client.models.generate_content_with_result(model=MODEL, contents=CONTENTS, response_model=Ticket,
                                                        mode="tool")
    assert result.value == PRINTER_TICKET
    turns = emu.requests[-1].body["contents"]
    call = turns[1]["parts"][0]["functionCall"]
    assert turns[1]["role"] == "model" and call == {"name": "Ticket", "args": {"title": "Printer on fire",
                                                                                 "priority": 0}}
    assert turns[1]["parts"][0]["thoughtSignature"] == "skip_thought_signature_validator"  # Gemini 3 needs one
    response = turns[2]["parts"][0]["functionResponse"]
    assert response["name"] == "Ticket" and "greater than or equal to 1" in response["response"]["error"]


def test_gemini_3_refuses_a_replayed_call_without_a_signature_and_guardrail_sends_one(emu: Emulator) -> None:
    raw = sdk(emu)
    turns: list[Any] = [{"role": "user", "parts": [{"text": CONTENTS}]},
                        {"role": "model", "parts": [{"function_call": {"name": "Ticket", "args": {}}}]},
                        {"role": "user", "parts": [{"function_response": {"name": "Ticket", "response": {}}}]}]
    with pytest.raises(genai_errors.ClientError, match="thought_signature"):
        raw.models.generate_content(model="gemini-3-flash-preview", contents=turns)
    emu.script(reply.tool_call({"title": "Printer on fire", "priority": 0}), reply.answer(PRINTER_GOOD))
    client = guardrail.wrap(raw)
    assert client.models.generate_content(model="gemini-3-flash-preview", contents=CONTENTS, response_model=Ticket,
                                          mode="tool") == PRINTER_TICKET


def test_a_malformed_function_call_is_asked_again(emu: Emulator) -> None:
    client = wrapped(emu)
    emu.script(reply.tool_call("{not json"), reply.answer(PRINTER_GOOD))  # the API answers MALFORMED_FUNCTION_CALL
    result = client.models.generate_content_with_result(model=MODEL, contents=CONTENTS, response_model=Ticket,
                                                        mode="tool")
    assert result.value == PRINTER_TICKET
    assert result.attempts[0].finish_reason == "MALFORMED_FUNCTION_CALL" and result.attempts[0].feedback


# -- truncation, refusals ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
def test_max_tokens_raises_the_limit_once_then_ends_as_output_truncated(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.truncated('{"title": "Printer', usage=(50, 100)), reply.answer(PRINTER_GOOD))
    result = ask(client, is_async, config={"max_output_tokens": 100})
    assert result.value == PRINTER_TICKET and result.attempts[0].finish_reason == "MAX_TOKENS"
    assert [request.max_tokens for request in emu.requests] == [100, 200]
    emu.script(reply.truncated('{"title": "Printer', usage=(50, 100)),
               reply.truncated('{"title": "Printer', usage=(50, 200)))
    with pytest.raises(OutputTruncated):
        ask(client, is_async, config={"max_output_tokens": 100})


@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("reason", ["SAFETY", "RECITATION", "PROHIBITED_CONTENT", "SPII"])
def test_a_safety_stop_is_a_refusal_never_retried(emu: Emulator, is_async: bool, reason: str) -> None:
    client = wrapped(emu)
    emu.script(reply.refusal(reason=reason))
    with pytest.raises(Refused, match=reason) as refused:
        ask(client, is_async)
    assert len(emu.requests) == 1 and refused.value.outcome.attempts[0].finish_reason == reason


@pytest.mark.parametrize("is_async", MODES)
def test_a_blocked_prompt_is_a_refusal(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.refusal(reason="PROHIBITED_CONTENT", prompt=True))
    with pytest.raises(Refused, match="prompt was blocked"):
        ask(client, is_async)
    emu.script(reply.refusal(prompt=True))
    with pytest.raises(Refused, match="prompt was blocked"):
        streamed(client, is_async, model=MODEL, contents=CONTENTS, response_model=Ticket)


# -- schema rejection ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
def test_a_schema_400_walks_down_to_the_next_mode(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.schema_rejected(), reply.answer(PRINTER_GOOD))
    result = ask(client, is_async)
    assert result.value == PRINTER_TICKET and result.mode == "tool"
    assert emu.requests[0].output_format is not None and emu.requests[1].forced_tool == "Ticket"


def test_the_emulator_refuses_a_schema_gemini_would_refuse_and_guardrail_never_sends_one(emu: Emulator) -> None:
    raw = sdk(emu)
    with pytest.raises(genai_errors.ClientError) as refused:
        raw.models.generate_content(model=MODEL, contents=CONTENTS, config={
            "response_mime_type": "application/json",
            "response_json_schema": {"type": "object", "properties": {"code": {"type": "string", "pattern": "^A"}}}})
    assert refused.value.code == 400 and "'pattern' is not supported" in str(refused.value.message)

    strict_model: Any = create_model("Coded", code=(str, Field(pattern="^A", min_length=2)),
                                     when=(str, Field(json_schema_extra={"format": "date-time"})))
    client = guardrail.wrap(raw)
    emu.script(reply.answer('{"code": "AB", "when": "2026-01-01T00:00:00Z"}'))
    result = client.models.generate_content_with_result(model=MODEL, contents=CONTENTS, response_model=strict_model)
    assert result.mode == "native" and result.value.code == "AB"
    left = {entry.keyword for entry in result.compile_report.post_validated}
    assert {"pattern", "minLength"} <= left


# -- transport ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
def test_server_errors_and_dropped_connections_are_retried(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.server_error(503), reply.drop(), reply.answer(PRINTER_GOOD))
    result = ask(client, is_async)
    assert result.value == PRINTER_TICKET and result.attempts[0].vendor_calls == 3
    emu.script(reply.drop(), reply.drop(), reply.drop())
    with pytest.raises(VendorUnavailable):
        ask(client, is_async)


FAULTS = [pytest.param(reply.malformed_event(PRINTER_GOOD), id="malformed-event"),
          pytest.param(reply.html_page(502), id="html-502"), pytest.param(reply.html_page(200), id="html-200"),
          pytest.param(reply.not_json(), id="not-json"), pytest.param(reply.cut(PRINTER_GOOD), id="cut"),
          pytest.param(reply.timeout(0.2, reply.answer(PRINTER_GOOD)), id="stall"),
          pytest.param(reply.overloaded(), id="overloaded")]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("fault", FAULTS)
def test_a_spoiled_answer_is_retried(emu: Emulator, fault: Any, stream: bool) -> None:
    client = wrapped(emu)
    emu.script(fault, reply.answer(PRINTER_GOOD))
    if stream:
        *_, value = client.models.generate_content_stream(model=MODEL, contents=CONTENTS, response_model=Ticket)
    else:
        value = client.models.generate_content(model=MODEL, contents=CONTENTS, response_model=Ticket)
    assert value == PRINTER_TICKET


def test_a_rate_limit_waits_what_the_server_asks(emu: Emulator) -> None:
    retry = RecordingRetry(max_tries=2, initial_wait=0.01, max_wait=0.05, deadline=10)
    client = wrapped(emu, retry=retry)
    emu.script(reply.rate_limited(retry_after=0.03), reply.answer(PRINTER_GOOD))
    assert client.models.generate_content(model=MODEL, contents=CONTENTS, response_model=Ticket) == PRINTER_TICKET
    assert retry.waits == [0.03]


@pytest.mark.parametrize("is_async", MODES)
def test_a_client_error_is_a_vendor_error_not_retried(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.error(403, message="Permission denied on the project."))
    with pytest.raises(VendorError, match="Permission denied") as failed:
        ask(client, is_async)
    assert failed.value.status == 403 and len(emu.requests) == 1


def test_the_sdks_own_retries_are_off_for_structured_calls(emu: Emulator) -> None:
    options = types.HttpOptions(base_url=emu.gemini_base_url, retry_options=types.HttpRetryOptions(attempts=5))
    client = guardrail.wrap(genai.Client(api_key="test", http_options=options),
                            retry=guardrail.RetryPolicy(max_tries=1))
    emu.script(reply.server_error(503), reply.answer(PRINTER_GOOD))
    with pytest.raises(VendorUnavailable):
        client.models.generate_content(model=MODEL, contents=CONTENTS, response_model=Ticket)
    assert len(emu.requests) == 1  # the SDK would have tried again: guardrail's policy (one try) decides


# -- streams ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
def test_generate_content_stream_yields_previews_then_the_value(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.answer(PRINTER_GOOD).streamed_in(6))
    items = streamed(client, is_async, model=MODEL, contents=CONTENTS, response_model=Ticket)
    *previews, value = items
    assert value == PRINTER_TICKET and previews and all(isinstance(item, Partial) for item in previews)
    assert previews[-1].data == json.loads(PRINTER_GOOD)
    assert emu.requests[-1].stream and emu.requests[-1].path.endswith(":streamGenerateContent")


@pytest.mark.parametrize("is_async", MODES)
def test_a_stream_cut_or_failing_midway_is_retried(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.stream_error('{"title": "Prin'), reply.cut(PRINTER_GOOD), reply.answer(PRINTER_GOOD))
    *_, value = streamed(client, is_async, model=MODEL, contents=CONTENTS, response_model=Ticket)
    assert value == PRINTER_TICKET and len(emu.requests) == 3


def test_a_stream_cut_off_at_the_token_limit_is_truncated(emu: Emulator) -> None:
    client = wrapped(emu)
    emu.script(reply.truncated('{"title": "Printer on'), reply.answer(PRINTER_GOOD))
    *_, value = streamed(client, False, model=MODEL, contents=CONTENTS, response_model=Ticket)
    assert value == PRINTER_TICKET and emu.requests[1].max_tokens is not None


# -- usage and cost --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True])
def test_usage_counts_cached_and_thinking_tokens(emu: Emulator, stream: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.answer(PRINTER_GOOD, usage=(1000, 60)).with_usage_details(cached=400, reasoning=25))
    if stream:
        items = client.models.generate_content_stream(model=MODEL, contents=CONTENTS, response_model=Ticket)
        list(items)
        result = items.result
    else:
        result = ask(client, False)
    usage = result.usage
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens, usage.reasoning_tokens) == (
        1000, 400, 60, 25)
    assert result.cost_usd is not None and result.cost_usd > 0  # genai-prices knows gemini-2.5-flash


# -- plain calls are the SDK's -------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
def test_calls_without_response_model_are_the_sdks(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu)
    emu.script(reply.text("Hello there"))
    response = run(client, is_async, "generate_content", model=MODEL, contents="Hi")
    assert isinstance(response, types.GenerateContentResponse) and response.text == "Hello there"
    assert emu.requests[-1].output_format is None and "JSON" not in emu.requests[-1].system
    emu.script(reply.text("Hello there, streamed"))
    if is_async:
        async def chunks() -> list[Any]:
            return [chunk async for chunk in await client.aio.models.generate_content_stream(model=MODEL,
                                                                                             contents="Hi")]
        got = asyncio.run(chunks())
    else:
        got = list(client.models.generate_content_stream(model=MODEL, contents="Hi"))
    assert all(isinstance(chunk, types.GenerateContentResponse) for chunk in got)
    assert "".join(chunk.text or "" for chunk in got) == "Hello there, streamed"
    with pytest.raises(TypeError, match="max_attempts"):
        run(client, is_async, "generate_content", model=MODEL, contents="Hi", max_attempts=2)
    with pytest.raises(TypeError, match="response_model"):
        run(client, is_async, "generate_content_with_result", model=MODEL, contents="Hi")


# -- the wrapper is the client ---------------------------------------------------------------------------------
def test_the_wrapped_client_is_an_instance_of_the_sdks_classes(emu: Emulator) -> None:
    raw = sdk(emu)
    client = guardrail.wrap(raw)
    assert isinstance(client, genai.Client) and isinstance(client, WrappedClient) and client.vendor == "google.genai"
    assert isinstance(client.models, genai.models.Models) and isinstance(client.aio, genai.client.AsyncClient)
    assert isinstance(client.aio.models, genai.models.AsyncModels) and isinstance(client.aio, WrappedClient)
    assert not hasattr(client.models, "create") and not hasattr(client.models, "create_partial")
    aio = guardrail.wrap(raw.aio)  # the async client alone wraps too
    assert isinstance(aio, genai.client.AsyncClient)
    emu.script(reply.answer(PRINTER_GOOD))
    assert asyncio.run(aio.models.generate_content(model=MODEL, contents=CONTENTS,
                                                   response_model=Ticket)) == PRINTER_TICKET


def test_signatures_are_the_sdks_with_guardrails_keywords(emu: Emulator) -> None:
    raw, client = sdk(emu), guardrail.wrap(sdk(emu))
    for models, plain in ((client.models, raw.models), (client.aio.models, raw.aio.models)):
        assert inspect.signature(models.generate_content) == inspect.signature(plain.generate_content)
        assert inspect.signature(models.generate_content_stream) == inspect.signature(plain.generate_content_stream)
        with_result = inspect.signature(models.generate_content_with_result)
        assert {"model", "contents", "config", "response_model", "max_attempts", "mode"} <= set(
            with_result.parameters)
        assert "response_model" in (models.generate_content.__doc__ or "")
    assert dir(client) == dir(raw) and dir(client.models) == dir(raw.models)
    assert dir(client.aio.models) == dir(raw.aio.models)


def test_context_managers_close_the_client(emu: Emulator) -> None:
    raw = sdk(emu)
    with guardrail.wrap(raw) as client:
        assert isinstance(client, WrappedClient)
        emu.script(reply.answer(PRINTER_GOOD))
        assert client.models.generate_content(model=MODEL, contents=CONTENTS, response_model=Ticket) == PRINTER_TICKET
    assert raw._api_client._httpx_client.is_closed

    async def go() -> None:
        async with guardrail.wrap(sdk(emu)).aio as aio:
            emu.script(reply.answer(PRINTER_GOOD))
            assert await aio.models.generate_content(model=MODEL, contents=CONTENTS,
                                                     response_model=Ticket) == PRINTER_TICKET

    asyncio.run(go())


def test_attributes_are_shared_and_a_dropped_wrapper_leaves_the_client_open(emu: Emulator) -> None:
    raw = sdk(emu)
    client = guardrail.wrap(raw)
    client.team = "facilities"
    raw.note = "shared"  # type: ignore[attr-defined]
    assert raw.team == "facilities" and client.note == "shared"  # type: ignore[attr-defined]
    assert client.models._api_client is raw.models._api_client  # one API client, one connection pool
    del client
    gc.collect()
    emu.script(reply.text("still open"))
    assert raw.models.generate_content(model=MODEL, contents="Hi").text == "still open"
    assert not raw._api_client._httpx_client.is_closed


def test_wrap_tells_the_sdk_apart_and_refuses_a_server_kind(emu: Emulator) -> None:
    with pytest.raises(guardrail.errors.ConfigError):
        guardrail.wrap(sdk(emu), server="vllm")


# -- model output of any shape round-trips ------------------------------------------------------------------------
_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
TICKETS = st.builds(Ticket, title=_TEXT, priority=st.integers(1, 5), tags=st.lists(_TEXT, max_size=4))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ticket=TICKETS, mode=st.sampled_from(["native", "tool", "json", "prompt"]), stream=st.booleans(),
       chars=st.integers(1, 40))
def test_any_valid_ticket_round_trips_through_the_gemini_wire(ticket: Ticket, mode: str, stream: bool,
                                                              chars: int) -> None:
    with Emulator() as emu:
        client = guardrail.wrap(sdk(emu))
        emu.script(reply.answer(ticket.model_dump_json()).streamed_in(chars))
        call: Callable[..., Any] = (client.models.generate_content_stream if stream
                                    else client.models.generate_content_with_result)
        items = call(model=MODEL, contents=CONTENTS, response_model=Ticket, mode=mode)
        if stream:
            *previews, value = list(items)
            assert all(isinstance(item, Partial) for item in previews)
        else:
            value = items.value
        assert value == ticket


# -- the decorator and the environment -------------------------------------------------------------------------
def test_the_decorator_asks_gemini_through_a_wrapped_client(emu: Emulator) -> None:
    client = wrapped(emu)

    @guardrail.structured(client=client, async_client=client.aio, model=MODEL)
    def triage(report: str) -> Ticket:
        """File a ticket for: {report}"""

    @guardrail.structured(client=client, async_client=client.aio, model=MODEL)
    async def triage_later(report: str) -> Ticket:
        """File a ticket for: {report}"""

    emu.script(reply.answer(PRINTER_GOOD), reply.answer(PRINTER_GOOD))
    assert triage("the printer is on fire") == PRINTER_TICKET
    assert asyncio.run(triage_later("the printer is on fire")) == PRINTER_TICKET
    sent = emu.requests[-1]
    assert "File a ticket" in sent.system and "the printer is on fire" in sent.conversation_text


def test_gemini_from_the_environment(emu: Emulator) -> None:
    from guardrail.call.config import Config

    config = Config.from_env({"GEMINI_API_KEY": "k", "GUARDRAIL_BASE_URL": emu.gemini_base_url})
    assert isinstance(config.client, genai.Client) and isinstance(config.async_client, genai.client.AsyncClient)
    assert config.model == "gemini-2.5-flash"
    emu.script(reply.answer(PRINTER_GOOD))
    client = guardrail.wrap(config.client)
    assert client.models.generate_content(model=config.model, contents=CONTENTS,
                                          response_model=Ticket) == PRINTER_TICKET


@pytest.mark.parametrize("is_async", MODES)
def test_the_deadline_ends_an_answer_that_trickles_in(emu: Emulator, is_async: bool) -> None:
    client = wrapped(emu, retry=guardrail.RetryPolicy(deadline=0.5, initial_wait=0.01))
    emu.script(reply.answer(PRINTER_GOOD).trickled(0.1, 4))
    with pytest.raises(guardrail.errors.DeadlineExceeded):
        ask(client, is_async)


def test_the_response_cache_answers_a_repeated_call(emu: Emulator) -> None:
    from guardrail.call.cache import Cache
    from guardrail.store import MemoryStore

    client = guardrail.wrap(sdk(emu), cache=Cache(MemoryStore()))
    emu.script(reply.answer(PRINTER_GOOD))
    config = types.GenerateContentConfig(temperature=0.2)
    first, again = (client.models.generate_content_with_result(model=MODEL, contents=CONTENTS, config=config,
                                                               response_model=Ticket) for _ in range(2))
    assert (first.cached, again.cached) == (False, True) and again.value == PRINTER_TICKET
    assert len(emu.requests) == 1


def test_the_pytest_plugins_gemini_client(guardrail_emulator: Emulator, guardrail_gemini: genai.Client) -> None:
    client = guardrail.wrap(guardrail_gemini)
    guardrail_emulator.script(reply.answer(PRINTER_GOOD))
    assert client.models.generate_content(model=MODEL, contents=CONTENTS, response_model=Ticket) == PRINTER_TICKET
