"""guardrail.wrap(openai client) end to end: the real openai SDK against the vendor emulator on loopback."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator
from support.calls import RecordingRetry, Ticket, TimeSpan

import guardrail
import guardrail.call.methods
import guardrail.errors
from guardrail.contract import compile_contract
from guardrail.errors import OutputTruncated, VendorUnavailable
from guardrail.testing import Emulator, reply


class WithDefault(BaseModel):
    name: str
    retries: int = 3


GOOD = '{"title": "Printer on fire", "priority": 5, "tags": ["hw"]}'
MESSAGES = [{"role": "user", "content": "File a ticket for the burning printer."}]
FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.5, deadline=10)


def wrapped(emu: Emulator, *, retry: guardrail.RetryPolicy = FAST, **wrap_options: Any) -> Any:
    raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5)
    return guardrail.wrap(raw, retry=retry, **wrap_options)


def test_native_strict_mode_returns_the_validated_object(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    ticket = wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert ticket == Ticket(title="Printer on fire", priority=5, tags=["hw"])
    sent = emu.requests[0].body
    fmt = sent["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["name"] == "Ticket"
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert sorted(schema["required"]) == ["priority", "tags", "title"]  # optional made required (nullable)
    assert sent["messages"] == MESSAGES


def test_without_response_model_the_call_passes_straight_through(emu: Emulator) -> None:
    emu.script(reply.text("hello there"))
    response = wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert isinstance(response, openai.types.chat.ChatCompletion)
    assert response.choices[0].message.content == "hello there"
    assert "response_format" not in emu.requests[0].body
    assert "tools" not in emu.requests[0].body


def test_other_client_attributes_are_the_clients_own(emu: Emulator) -> None:
    raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test")
    client = guardrail.wrap(raw)
    assert client.base_url == raw.base_url
    assert client.chat.completions.with_raw_response is not None
    assert raw.max_retries == 2  # the caller's client is not changed


def test_a_schema_violation_is_sent_back_once_with_every_problem_and_a_lower_temperature(emu: Emulator) -> None:
    emu.script(reply.answer('{"title": 7.5, "priority": 9}'), reply.answer(GOOD))
    result = wrapped(emu).chat.completions.create_with_result(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket, temperature=0.8)
    assert result.value.priority == 5
    assert len(result.attempts) == 2 and result.vendor_calls == 2
    first, second = emu.requests
    assert first.temperature == 0.8 and second.temperature is not None and second.temperature < 0.8
    feedback = second.last_user_text
    assert "$.title" in feedback and "$.priority" in feedback  # both problems, one message
    assert "http" not in feedback
    replayed = second.body["messages"][-2]
    assert replayed["role"] == "assistant" and replayed["content"] == '{"title": 7.5, "priority": 9}'
    assert result.usage.input_tokens == sum(a.usage.input_tokens for a in result.attempts) > 0
    assert result.attempts[0].error is not None and result.attempts[0].error_kind == "schema_violation"


def test_formatting_slips_are_repaired_without_asking_again(emu: Emulator) -> None:
    emu.script(reply.answer("Sure! Here it is:\n```json\n{'title': 'x', 'priority': 2, 'tags': [],}\n```"))
    result = wrapped(emu).chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                               response_model=Ticket)
    assert result.value == Ticket(title="x", priority=2)
    assert len(emu.requests) == 1
    assert {f.kind for f in result.fixes} >= {"trailing_comma"}


def test_gave_up_carries_every_raw_output_the_errors_usage_and_trace_id(emu: Emulator) -> None:
    outputs = ['{"title": 1.5}', "no json here", '{"title": "t", "priority": 99}']
    emu.script(*(reply.answer(o) for o in outputs))
    with pytest.raises(guardrail.GaveUp) as caught:
        wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket,
                                             max_attempts=3)
    error = caught.value
    assert error.raw_outputs == outputs
    assert [e.kind for e in error.errors] == ["schema_violation", "no_json", "schema_violation"]  # type: ignore[attr-defined]
    assert error.outcome.usage.output_tokens > 0 and len(error.trace_id) == 32
    assert len(emu.requests) == 3


def test_truncation_raises_the_token_limit_once_without_feedback(emu: Emulator) -> None:
    emu.script(reply.truncated('{"title": "Printer'), reply.answer(GOOD))
    result = wrapped(emu).chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                               response_model=Ticket, max_completion_tokens=100)
    assert result.value.title == "Printer on fire"
    first, second = emu.requests
    assert first.max_tokens == 100 and second.max_tokens == 200
    assert second.body["messages"] == first.body["messages"]  # same conversation: no feedback for a cut-off


def test_truncated_twice_is_a_truncated_error_not_a_closed_up_object(emu: Emulator) -> None:
    emu.script(reply.truncated('{"title": "Printer on fire", "priority": 5'), reply.truncated('{"title": "P'))
    with pytest.raises(OutputTruncated) as caught:
        wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket,
                                             max_tokens=50)
    assert caught.value.kind == "truncated"
    assert len(emu.requests) == 2
    assert emu.requests[1].max_tokens == 100


def test_truncation_at_the_ceiling_is_not_asked_again(emu: Emulator) -> None:
    emu.script(reply.truncated('{"title": "P'))
    client = wrapped(emu, settings=guardrail.Settings(max_tokens_ceiling=64))
    with pytest.raises(OutputTruncated):
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket, max_tokens=64)
    assert len(emu.requests) == 1


def test_a_refusal_is_final_and_carries_the_vendors_text(emu: Emulator) -> None:
    emu.script(reply.refusal("I can't help with that."))
    with pytest.raises(guardrail.Refused) as caught:
        wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert caught.value.refusal == "I can't help with that."
    assert len(emu.requests) == 1


def test_a_schema_400_degrades_to_the_forced_tool_on_the_same_vendor(emu: Emulator) -> None:
    emu.script(reply.schema_rejected(), reply.answer(GOOD))
    result = wrapped(emu).chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                               response_model=Ticket)
    assert result.value.priority == 5 and result.mode == "tool"
    second = emu.requests[1].body
    assert second["tool_choice"] == {"type": "function", "function": {"name": "Ticket"}}
    assert second["tools"][0]["function"]["strict"] is True
    assert second["parallel_tool_calls"] is False
    assert "response_format" not in second


def test_a_mapping_contract_skips_strict_modes_that_would_force_an_empty_object(emu: Emulator) -> None:
    emu.script(reply.answer('{"a": 1, "b": 2}'))
    result = wrapped(emu).chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                               response_model=dict[str, int])
    assert result.value == {"a": 1, "b": 2}
    sent = emu.requests[0].body
    assert "response_format" not in sent
    tool = sent["tools"][0]["function"]
    assert "strict" not in tool or tool["strict"] is False
    assert result.mode == "tool"


def test_a_list_root_is_wrapped_for_the_vendor_and_unwrapped_for_the_caller(emu: Emulator) -> None:
    emu.script(reply.answer('{"result": [{"start": 0, "end": 1.5}]}'))
    segments = wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                    response_model=list[TimeSpan])
    assert segments == [TimeSpan(start=0, end=1.5)]
    schema = emu.requests[0].schema
    assert schema is not None and schema["type"] == "object" and "result" in schema["properties"]


def test_null_for_an_optional_field_means_absent_so_the_default_applies(emu: Emulator) -> None:
    emu.script(reply.answer('{"name": "job", "retries": null}'))
    result = wrapped(emu).chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                               response_model=WithDefault)
    assert result.value == WithDefault(name="job", retries=3)
    assert [f.kind for f in result.fixes] == ["null_as_absent"]


def test_forced_json_mode_puts_the_schema_in_the_prompt(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket, mode="json")
    sent = emu.requests[0].body
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][0]["role"] == "system" and "JSON Schema" in sent["messages"][0]["content"]


def test_old_models_without_strict_output_use_the_tool_mode(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    result = wrapped(emu).chat.completions.create_with_result(model="gpt-3.5-turbo", messages=MESSAGES,
                                                               response_model=Ticket)
    assert result.mode == "tool"
    assert "strict" not in emu.requests[0].body["tools"][0]["function"]


def test_reasoning_models_get_no_temperature_changes(emu: Emulator) -> None:
    emu.script(reply.answer('{"title": 1.5}'), reply.answer(GOOD))
    wrapped(emu).chat.completions.create(model="o3-mini", messages=MESSAGES, response_model=Ticket)
    assert [r.temperature for r in emu.requests] == [None, None]


# -- transport --------------------------------------------------------------------------------------------


def test_rate_limits_are_retried_honouring_retry_after(emu: Emulator) -> None:
    emu.script(reply.rate_limited(retry_after=0.3), reply.answer(GOOD))
    policy = RecordingRetry(max_tries=2, initial_wait=0.01, max_wait=0.5, deadline=10)
    result = wrapped(emu, retry=policy).chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                                            response_model=Ticket)
    assert policy.waits == [0.3]  # the server's Retry-After, not the 10 ms jitter
    assert result.vendor_calls == 2 and len(result.attempts) == 1 and len(emu.requests) == 2


def test_retry_after_is_capped(emu: Emulator) -> None:
    emu.script(reply.rate_limited(retry_after=30), reply.answer(GOOD))
    policy = RecordingRetry(max_tries=2, initial_wait=0.01, max_wait=0.2, deadline=10)
    wrapped(emu, retry=policy).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert policy.waits == [0.2]  # Retry-After: 30 capped at max_wait
    assert len(emu.requests) == 2


def test_a_spend_limit_429_is_not_retried(emu: Emulator) -> None:
    emu.script(reply.rate_limited(spend_limit=True), reply.answer(GOOD))
    with pytest.raises(guardrail.VendorError) as caught:
        wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert caught.value.status == 429
    assert len(emu.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_errors_are_never_retried(emu: Emulator, status: int) -> None:
    emu.script(reply.error(status, message="nope"), reply.answer(GOOD))
    with pytest.raises(guardrail.VendorError) as caught:
        wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert caught.value.status == status
    assert len(emu.requests) == 1


@pytest.mark.slow
def test_server_errors_timeouts_and_drops_are_retried(emu: Emulator) -> None:
    emu.script(reply.server_error(500), reply.server_error(503), reply.answer(GOOD))
    assert wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    emu.reset()
    emu.script(reply.drop(), reply.timeout(3), reply.answer(GOOD))
    raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=0.5)
    result = guardrail.wrap(raw, retry=FAST).chat.completions.create_with_result(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert result.vendor_calls == 3


def test_retries_stop_at_max_tries_and_the_sdk_does_not_retry_on_its_own(emu: Emulator) -> None:
    emu.script(*(reply.server_error(500) for _ in range(5)))
    policy = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.05, deadline=10)
    with pytest.raises(VendorUnavailable) as caught:
        wrapped(emu, retry=policy).chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                           response_model=Ticket)
    assert caught.value.status == 500
    assert len(emu.requests) == 2  # the SDK's own max_retries=2 would have made it 6


@pytest.mark.slow
def test_the_deadline_bounds_the_whole_call(emu: Emulator) -> None:
    emu.script(*(reply.rate_limited(retry_after=0.4) for _ in range(10)))
    policy = RecordingRetry(max_tries=10, initial_wait=0.01, max_wait=1, deadline=1.0)
    with pytest.raises(VendorUnavailable) as caught:
        wrapped(emu, retry=policy).chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                           response_model=Ticket)
    # 10 tries were allowed, but a wait that would end past the 1 s deadline is never started:
    # the 0.4 s waits asked for fit at most twice, so at most 3 requests went out
    assert caught.value.status == 429
    assert policy.waits and all(w == 0.4 for w in policy.waits) and sum(policy.waits) < 1.0
    assert len(emu.requests) == len(policy.waits) + 1 <= 3


# -- budget ------------------------------------------------------------------------------------------------


def test_the_budget_stops_the_loop_before_it_is_exceeded(emu: Emulator) -> None:
    emu.script(reply.answer('{"title": 1.5}', usage=(300, 40)), reply.answer(GOOD, usage=(400, 40)))
    budget = guardrail.Budget(max_tokens=600)
    with pytest.raises(guardrail.BudgetExceeded) as caught:
        wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket,
                                             budget=budget)
    assert len(emu.requests) == 1
    assert caught.value.outcome.usage.total_tokens == 340


def test_the_budget_caps_the_output_tokens_of_the_request(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD, usage=(100, 20)))
    guardrail_client = wrapped(emu)
    guardrail_client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket,
                                             budget=guardrail.Budget(max_tokens=2000), max_completion_tokens=4000)
    sent = emu.requests[0].max_tokens
    assert sent is not None and sent < 2000


def test_a_cost_budget_needs_a_price() -> None:
    with pytest.raises(ValueError):
        guardrail.Budget(max_cost=1.0)


# -- Responses API -----------------------------------------------------------------------------------------


def test_responses_native_mode_and_result(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    result = wrapped(emu).responses.create_with_result(model="gpt-4o", input="File a ticket.",
                                                       response_model=Ticket)
    assert result.value.title == "Printer on fire" and result.mode == "native"
    fmt = emu.requests[0].body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["strict"] is True and fmt["name"] == "Ticket"


def test_responses_repair_turn_and_incomplete(emu: Emulator) -> None:
    emu.script(reply.truncated('{"title"'), reply.answer('{"title": 3.5}'), reply.answer(GOOD))
    result = wrapped(emu).responses.create_with_result(model="gpt-4o", input="File a ticket.",
                                                       response_model=Ticket, max_output_tokens=30)
    assert result.value.priority == 5
    assert [r.max_tokens for r in emu.requests] == [30, 60, 60]
    assert "$.title" in emu.requests[2].last_user_text


def test_responses_refusal(emu: Emulator) -> None:
    emu.script(reply.refusal("No."))
    with pytest.raises(guardrail.Refused) as caught:
        wrapped(emu).responses.create(model="gpt-4o", input="x", response_model=Ticket)
    assert caught.value.refusal == "No."


def test_responses_tool_mode_replays_the_function_call(emu: Emulator) -> None:
    emu.script(reply.answer('{"title": 3.5, "priority": 1, "tags": []}'), reply.answer(GOOD))
    wrapped(emu).responses.create(model="gpt-4o", input="x", response_model=Ticket, mode="tool")
    second = emu.requests[1].body
    assert second["tool_choice"] == {"type": "function", "name": "Ticket"}
    kinds = [item.get("type") for item in second["input"] if isinstance(item, dict)]
    assert kinds[-2:] == ["function_call", "function_call_output"]


# -- streaming ----------------------------------------------------------------------------------------------


def streamed(client: Any, api: str) -> Any:
    """A streamed structured call for a ``Ticket`` on ``api`` (``chat`` or ``responses``); its result."""
    if api == "chat":
        return client.chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES, stream=True,
                                                          response_model=Ticket)
    return client.responses.create_with_result(model="gpt-4o", input="x", stream=True, response_model=Ticket)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_streamed_answers_are_assembled_then_validated(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(GOOD))
    client = wrapped(emu)
    result = streamed(client, api)
    assert result.value.tags == ["hw"]
    assert result.usage.output_tokens > 0
    assert emu.requests[0].stream


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_mid_stream_error_is_retried(emu: Emulator, api: str) -> None:
    emu.script(reply.stream_error(text_before='{"title": '), reply.answer(GOOD))
    client = wrapped(emu)
    result = streamed(client, api)
    assert result.value.priority == 5 and result.vendor_calls == 2


# -- self-hosted servers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("server", "field_path"), [
    ("vllm", ("structured_outputs", "json")),
    ("sglang", ("response_format", "json_schema", "schema")),
    ("llamacpp", ("json_schema",)),
    ("ollama", ("format",)),
])
def test_self_hosted_servers_get_their_own_constrained_decoding_fields(
        emu: Emulator, server: str, field_path: tuple[str, ...]) -> None:
    emu.script(reply.answer('[{"start": 0, "end": 1}]'))
    client = wrapped(emu, server=server)
    value = client.chat.completions.create(model="local", messages=MESSAGES, response_model=list[TimeSpan])
    assert value == [TimeSpan(start=0, end=1)]
    node: Any = emu.requests[0].body
    for key in field_path:
        node = node[key]
    assert node["type"] == "array"  # grammar engines take a non-object root as it is


def test_unknown_server_kind_is_refused() -> None:
    raw = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="test")
    with pytest.raises(ValueError):
        guardrail.wrap(raw, server="tgi-nope")


def test_wrap_refuses_other_objects() -> None:
    with pytest.raises(TypeError):
        guardrail.wrap(object())


# -- async --------------------------------------------------------------------------------------------------


def test_async_client_gives_awaitables(emu: Emulator) -> None:
    import asyncio

    emu.script(reply.answer('{"title": 1.5}'), reply.answer(GOOD), reply.text("plain"))

    async def main() -> tuple[Any, Any]:
        raw = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5)
        client = guardrail.wrap(raw, retry=FAST)
        result = await client.chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                                  response_model=Ticket)
        plain = await client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        return result, plain

    result, plain = asyncio.run(main())
    assert result.value.priority == 5 and len(result.attempts) == 2
    assert plain.choices[0].message.content == "plain"


def test_result_record_is_json_friendly(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    result = wrapped(emu).chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                              response_model=Ticket)
    assert result.provider == "openai" and result.model == "gpt-4o" and result.mode == "native"
    assert result.compile_report is not None and result.compile_report.ok
    assert json.dumps(result.compile_report.to_dict())
    assert result.schema_hash == compile_contract(Ticket).schema_hash


class Short(BaseModel):
    code: str = Field(max_length=5)
    website: str = Field(json_schema_extra={"format": "uri"})


def test_constraints_removed_for_the_vendor_are_still_checked_after_parsing(emu: Emulator) -> None:
    emu.script(reply.answer('{"code": "TOO-LONG", "website": "x"}'), reply.answer('{"code": "OK", "website": "x"}'))
    result = wrapped(emu).chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                              response_model=Short)
    assert result.value.code == "OK" and len(result.attempts) == 2
    sent = emu.requests[0].schema
    assert sent is not None and "maxLength" not in sent["properties"]["code"]
    assert "format" not in sent["properties"]["website"]
    report = result.compile_report
    assert report is not None
    post = {(e.path, e.keyword) for e in report.post_validated}
    assert ("/properties/code", "maxLength") in post and ("/properties/website", "format") in post
    assert "$.code" in emu.requests[1].last_user_text


def test_feedback_also_names_the_formatting_slips_that_were_repaired(emu: Emulator) -> None:
    emu.script(reply.answer("{'title': 'x', 'priority': 9,}"), reply.answer(GOOD))
    wrapped(emu).chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    feedback = emu.requests[1].last_user_text
    assert "$.priority" in feedback
    assert "trailing comma" in feedback and "formatting slips" in feedback


# -- SDK fidelity: context= reaches pydantic validators; the SDK's other ways in keep the wrapper -------------

class Booking(BaseModel):
    """A contract whose validators read the call's context (``ValidationInfo.context``)."""

    room: str
    guests: int

    @field_validator("room")
    @classmethod
    def room_exists(cls, room: str, info: ValidationInfo) -> str:
        known = (info.context or {}).get("rooms")
        if known is None:
            raise ValueError("no room list in the context")
        if room not in known:
            raise ValueError(f"unknown room {room!r}; known rooms: {', '.join(sorted(known))}")
        return room

    @model_validator(mode="after")
    def fits(self, info: ValidationInfo) -> Booking:
        seats = (info.context or {}).get("seats", {})
        if self.guests > seats.get(self.room, 0):
            raise ValueError(f"room {self.room} seats {seats.get(self.room, 0)}, not {self.guests}")
        return self


ROOMS = {"rooms": {"Ada", "Turing"}, "seats": {"Ada": 4, "Turing": 10}}


def raw_client(emu: Emulator, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0, **options)


@pytest.mark.parametrize("text", [
    '{"room": "Turing", "guests": 8}',                                  # clean JSON: the fast path
    'Booked:\n```json\n{"room": "Turing", "guests": 8,}\n```\nDone.',   # fenced, trailing comma: the stages
    '{"room": "Turing", "guests": "8"}',                                # coerced by the stages
])
def test_context_reaches_pydantic_validators_on_every_parse_path(emu: Emulator, text: str) -> None:
    emu.script(reply.answer(text))
    client = guardrail.wrap(raw_client(emu), retry=FAST)
    booking = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Booking,
                                             context=ROOMS)
    assert booking == Booking.model_validate({"room": "Turing", "guests": 8}, context=ROOMS)
    assert len(emu.requests) == 1


def test_a_validator_failing_on_context_sends_its_message_back_and_the_next_answer_passes(emu: Emulator) -> None:
    emu.script(reply.answer('{"room": "Lovelace", "guests": 2}'), reply.answer('{"room": "Ada", "guests": 2}'))
    client = guardrail.wrap(raw_client(emu), retry=FAST)
    result = client.chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES, response_model=Booking,
                                                        context=ROOMS)
    assert result.value.room == "Ada" and len(result.attempts) == 2
    feedback = json.dumps(emu.requests[1].body["messages"])
    assert "unknown room 'Lovelace'" in feedback and "Ada, Turing" in feedback


def test_without_context_validators_see_none(emu: Emulator) -> None:
    emu.script(reply.answer('{"room": "Ada", "guests": 2}'))
    client = guardrail.wrap(raw_client(emu), retry=FAST)
    with pytest.raises(guardrail.GaveUp) as caught:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Booking, max_attempts=1)
    assert "no room list in the context" in str(caught.value)


def test_context_is_the_callers_object_and_rules_read_the_same_one(emu: Emulator) -> None:
    """Validators may collect into the context (a pydantic idiom); rules see the same mapping."""

    class Noted(BaseModel):
        name: str

        @field_validator("name")
        @classmethod
        def note(cls, name: str, info: ValidationInfo) -> str:
            info.context["seen"].append(name)
            return name

    seen_by_rule: list[Any] = []

    @guardrail.rule
    def remember(value: Noted, context: Any) -> bool:
        seen_by_rule.append(context)
        return True

    emu.script(reply.answer('{"name": "x"}'))
    context: dict[str, Any] = {"seen": []}
    client = guardrail.wrap(raw_client(emu), retry=FAST)
    client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Noted, context=context,
                                   rules=[remember])
    assert context["seen"] == ["x"] and seen_by_rule == [context]


def test_with_options_keeps_the_wrapper_and_the_new_options(emu: Emulator) -> None:
    client = guardrail.wrap(raw_client(emu), retry=FAST)
    tagged = client.with_options(default_headers={"X-Team": "billing"})
    assert tagged.vendor == "openai" and guardrail.wrap(tagged) is tagged
    emu.script(reply.answer(GOOD), reply.answer(GOOD))
    ticket = tagged.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert ticket.priority == 5 and emu.requests[-1].headers["x-team"] == "billing"
    copied = client.copy(default_headers={"X-Team": "sales"})
    assert copied.responses.create(model="gpt-4o", input="x", response_model=Ticket).title == "Printer on fire"
    assert emu.requests[-1].headers["x-team"] == "sales"
    assert "x-team" not in {k.lower() for k in client.with_options().default_headers}  # the original is unchanged


def test_with_options_timeout_bounds_the_structured_call(emu: Emulator) -> None:
    """A client copy with a short timeout gives up on a slow answer as the copy's SDK would (no retry here)."""
    emu.script(reply.timeout(2.0, then=reply.answer(GOOD)))
    client = guardrail.wrap(raw_client(emu, timeout=30),
                            retry=guardrail.RetryPolicy(max_tries=1, initial_wait=0.01, max_wait=0.01, deadline=30))
    with pytest.raises(VendorUnavailable):
        client.with_options(timeout=0.2).chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                                 response_model=Ticket)


@pytest.mark.parametrize("path", ["beta.chat.completions", "beta.responses"])
def test_beta_namespaces_keep_the_wrapper(emu: Emulator, path: str) -> None:
    emu.script(reply.answer('{"title": "x", "priority": 9}'), reply.answer(GOOD))
    method: Any = guardrail.wrap(raw_client(emu), retry=FAST)
    for name in path.split("."):
        method = getattr(method, name)
    request = {"messages": MESSAGES} if path.endswith("completions") else {"input": "File a ticket."}
    result = method.create_with_result(model="gpt-4o", response_model=Ticket, **request)
    assert result.value.priority == 5 and len(result.attempts) == 2  # validated and repaired, not passed through
    assert emu.requests[0].path.endswith("/chat/completions" if path.endswith("completions") else "/responses")


@pytest.mark.parametrize("route", ["client", "namespace", "method"])
def test_with_raw_response_gives_the_value_and_every_http_response(emu: Emulator, route: str) -> None:
    client = guardrail.wrap(raw_client(emu), retry=FAST)
    create = {"client": lambda: client.with_raw_response.chat.completions.create,
              "namespace": lambda: client.chat.with_raw_response.completions.create,
              "method": lambda: client.chat.completions.with_raw_response.create}[route]()
    emu.script(reply.answer('{"title": "x", "priority": 9}'), reply.answer(GOOD))
    raw = create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert isinstance(raw, guardrail.call.methods.RawStructured)
    assert raw.parse() == raw.value == Ticket(title="Printer on fire", priority=5, tags=["hw"])
    assert raw.status_code == 200 and raw.headers["x-request-id"].startswith("req_")
    assert len(raw.responses) == 2 and len(raw.result.attempts) == 2
    ids = [r.headers["x-request-id"] for r in raw.responses]
    assert ids[0] != ids[1] and raw.http_response is raw.responses[-1].http_response


def test_with_raw_response_without_response_model_is_the_sdks_own(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    raw = guardrail.wrap(raw_client(emu)).with_raw_response.chat.completions.create(model="gpt-4o",
                                                                                     messages=MESSAGES)
    assert isinstance(raw, openai._legacy_response.LegacyAPIResponse)
    assert raw.parse().choices[0].message.content == GOOD


def test_with_streaming_response_refuses_response_model_before_sending(emu: Emulator) -> None:
    client = guardrail.wrap(raw_client(emu))
    for method in (client.with_streaming_response.chat.completions,
                   client.chat.completions.with_streaming_response,
                   client.beta.chat.completions.with_streaming_response,
                   client.with_streaming_response.beta.responses):  # the SDK's beta twin has no chat
        with pytest.raises(guardrail.errors.UnsupportedCall, match="with_raw_response"):
            method.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
        with pytest.raises(TypeError):  # also a TypeError, like any misused argument
            method.create_with_result(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    assert emu.requests == []
    emu.script(reply.answer(GOOD))
    with client.with_streaming_response.chat.completions.create(model="gpt-4o", messages=MESSAGES) as response:
        assert json.loads(response.read())["choices"][0]["message"]["content"] == GOOD


def test_async_client_flavors_keep_the_wrapper(emu: Emulator) -> None:
    import asyncio

    client = guardrail.wrap(openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0),
                            retry=FAST)

    async def main() -> tuple[Any, Any, Any]:
        raw = await client.with_raw_response.responses.create(model="gpt-4o", input="x", response_model=Ticket)
        beta = await client.beta.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Booking,
                                                         context=ROOMS)
        other = await client.with_options(timeout=9).chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                                             response_model=Ticket)
        return raw, beta, other

    emu.script(reply.answer(GOOD), reply.answer('{"room": "Ada", "guests": 3}'), reply.answer(GOOD))
    raw, beta, other = asyncio.run(main())
    assert raw.parse().priority == 5 and raw.headers["x-request-id"].startswith("req_")
    assert beta == Booking.model_validate({"room": "Ada", "guests": 3}, context=ROOMS)
    assert other.title == "Printer on fire"
