"""guardrail.wrap on every endpoint (OpenAI Chat Completions and Responses, Anthropic Messages), sync and async:
passthrough calls untouched, the caller's own SDK arguments kept, content that round-trips, failures that are not
the model's, and the result record. The real openai/anthropic SDKs against the emulator, no mocks."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel, model_validator
from support.calls import (
    APIS,
    PRINTER_BAD,
    PRINTER_GOOD,
    PRINTER_RETRY,
    PRINTER_TICKET,
    Ticket,
    api_method,
    conversation,
    printer_acall,
    printer_args,
    printer_call,
    sdk_client,
    wrapped_client,
)

import guardrail
from guardrail.errors import CallError, DeadlineExceeded, VendorUnavailable
from guardrail.testing import Emulator, reply

# -------------------------------------------------------------------------------------- async calls and passthrough


@pytest.mark.parametrize("api", APIS)
def test_async_repair_then_value_and_result(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_BAD), reply.answer(PRINTER_GOOD), reply.answer(PRINTER_GOOD))
    result = printer_acall(emu, api)
    assert result.value == PRINTER_TICKET and len(result.attempts) == 2
    assert "$.title" in emu.requests[1].last_user_text
    assert printer_acall(emu, api, result=False) == PRINTER_TICKET


def test_async_passthrough_returns_the_sdks_own_objects(emu: Emulator) -> None:
    emu.script(reply.text("a"), reply.text("b"), reply.text("c"), reply.text("d"))

    async def main() -> list[Any]:
        oai = guardrail.wrap(sdk_client(emu, "chat", is_async=True))
        claude = guardrail.wrap(sdk_client(emu, "messages", is_async=True))
        chat = await oai.chat.completions.create(**printer_args("chat"))
        resp = await oai.responses.create(**printer_args("responses"))
        msg = await claude.messages.create(**printer_args("messages"))
        stream = await oai.chat.completions.create(**printer_args("chat"), stream=True)
        parts = [chunk.choices[0].delta.content async for chunk in stream if chunk.choices]
        return [chat, resp, msg, stream, parts]

    chat, resp, msg, stream, parts = asyncio.run(main())
    assert isinstance(chat, openai.types.chat.ChatCompletion) and chat.choices[0].message.content == "a"
    assert isinstance(resp, openai.types.responses.Response) and resp.output_text == "b"
    assert isinstance(msg, anthropic.types.Message) and msg.content[0].text == "c"  # type: ignore[union-attr]
    assert isinstance(stream, openai.AsyncStream) and "".join(p or "" for p in parts) == "d"
    for request in emu.requests:
        assert "response_format" not in request.body and "tools" not in request.body
        assert "output_config" not in request.body and "text" not in request.body


def test_wrapping_never_changes_the_callers_client(emu: Emulator) -> None:
    for api in ("chat", "messages"):
        for is_async in (False, True):
            raw = sdk_client(emu, api, is_async=is_async, max_retries=5)
            before = (raw.max_retries, raw.timeout, raw.base_url)
            guardrail.wrap(raw)
            assert (raw.max_retries, raw.timeout, raw.base_url) == before


@pytest.mark.parametrize("api", ["messages"])
def test_passthrough_keeps_the_callers_sdk_retries_but_structured_calls_do_not_double_retry(
        emu: Emulator, api: str) -> None:
    emu.script(reply.server_error(500), reply.text("ok"))
    raw = sdk_client(emu, api, max_retries=1)
    wrapped = guardrail.wrap(raw, retry=guardrail.RetryPolicy(max_tries=1))
    api_method(wrapped, api).create(**printer_args(api))  # the SDK's own single retry recovers the passthrough call
    assert len(emu.requests) == 2
    emu.reset()
    emu.script(reply.server_error(500), reply.answer(PRINTER_GOOD))
    with pytest.raises(VendorUnavailable):
        api_method(wrapped, api).create(**printer_args(api), response_model=Ticket)
    assert len(emu.requests) == 1


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_cancelling_an_async_call_is_not_retried_or_swallowed(emu: Emulator, api: str) -> None:
    emu.script(reply.timeout(1), reply.answer(PRINTER_GOOD))

    async def main() -> None:
        target = api_method(wrapped_client(emu, api, is_async=True), api)
        await asyncio.wait_for(target.create(response_model=Ticket, **printer_args(api)), timeout=0.15)

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(main())
    time.sleep(0.05)
    assert len(emu.requests) == 1


def test_concurrent_async_calls_keep_their_own_records(emu: Emulator) -> None:
    def answer(request: Any) -> Any:
        asked = request.messages[0]["content"]
        repaired = "Your previous answer" in request.last_user_text
        return reply.answer(PRINTER_GOOD.replace("Printer on fire", asked) if repaired or asked.endswith("0")
                            else PRINTER_BAD)

    emu.responder = answer

    async def main() -> list[Any]:
        target = api_method(wrapped_client(emu, "chat", is_async=True), "chat")
        calls = [target.create_with_result(response_model=Ticket, **printer_args(
            "chat", messages=[{"role": "user", "content": f"ticket {i}"}])) for i in range(4)]
        return list(await asyncio.gather(*calls))

    results = asyncio.run(main())
    assert [r.value.title for r in results] == [f"ticket {i}" for i in range(4)]
    assert [len(r.attempts) for r in results] == [1, 2, 2, 2]
    assert len({r.trace_id for r in results}) == 4


# ----------------------------------------------------------------------------------- the caller's own SDK arguments


def test_chat_max_tokens_key_is_preserved(emu: Emulator) -> None:
    emu.script(reply.truncated('{"t'), reply.answer(PRINTER_GOOD), reply.truncated('{"t'), reply.answer(PRINTER_GOOD))
    printer_call(emu, "chat", max_tokens=30)
    assert [("max_tokens" in r.body, "max_completion_tokens" in r.body) for r in emu.requests] == \
        [(True, False), (True, False)]
    assert [r.body["max_tokens"] for r in emu.requests] == [30, 60]
    emu.reset()
    emu.script(reply.truncated('{"t'), reply.answer(PRINTER_GOOD))
    printer_call(emu, "chat", max_completion_tokens=30)
    assert [("max_tokens" in r.body, r.body.get("max_completion_tokens")) for r in emu.requests] == \
        [(False, 30), (False, 60)]


def test_responses_text_param_is_merged_not_replaced(emu: Emulator) -> None:
    emu.script(reply.answer(PRINTER_GOOD), reply.answer(PRINTER_GOOD))
    printer_call(emu, "responses", text={"verbosity": "low"})
    text = emu.requests[0].body["text"]
    assert text["verbosity"] == "low" and text["format"]["type"] == "json_schema"
    printer_call(emu, "responses", text={"verbosity": "low"}, mode="tool")
    assert emu.requests[1].body["text"] == {"verbosity": "low"}


@pytest.mark.parametrize("api", APIS)
def test_the_callers_own_tools_are_kept_and_the_contract_tool_is_forced(emu: Emulator, api: str) -> None:
    own: dict[str, Any]
    if api == "chat":
        own = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    elif api == "responses":
        own = {"type": "function", "name": "lookup", "parameters": {"type": "object"}, "strict": False}
    else:
        own = {"name": "lookup", "input_schema": {"type": "object"}}
    emu.script(reply.answer(PRINTER_GOOD))
    result = printer_call(emu, api, mode="tool", tools=[own])
    assert result.value == PRINTER_TICKET
    fields = emu.requests[0].mode_fields
    assert fields["tools"] == ["lookup", "Ticket"] and fields["forced_tool"] == "Ticket"
    with pytest.raises(TypeError, match="tool_choice"):  # guardrail forces the tool; a caller's choice conflicts
        printer_call(emu, api, mode="tool", tools=[own], tool_choice="auto" if api != "messages" else {"type": "auto"})


@pytest.mark.parametrize("api", APIS)
def test_the_callers_messages_and_kwargs_are_not_mutated(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_BAD), reply.answer(PRINTER_GOOD))
    kwargs = printer_args(api, response_model=Ticket, mode="tool", tools=[])
    snapshot = json.dumps({k: v for k, v in kwargs.items() if k != "response_model"})
    api_method(wrapped_client(emu, api), api).create(**kwargs)
    assert json.dumps({k: v for k, v in kwargs.items() if k != "response_model"}) == snapshot


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("mode", ["native", "tool", "prompt"])
def test_aliases_are_passed_through(emu: Emulator, api: str, mode: str) -> None:
    emu.script(reply.answer('{"headline": "Printer on fire", "prio": 5, "tags": ["hw"]}'))
    value = printer_call(emu, api, result=False, mode=mode, aliases={"headline": "title", "prio": "priority"})
    assert value == PRINTER_TICKET


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_the_callers_client_timeout_still_applies_under_a_longer_deadline(emu: Emulator, api: str) -> None:
    emu.script(reply.timeout(0.5, then=reply.answer(PRINTER_GOOD)), reply.answer(PRINTER_GOOD))
    policy = guardrail.RetryPolicy(max_tries=1, deadline=30)
    # the answer comes after 0.5 s: only the caller's 0.15 s client timeout can end the call before it
    with pytest.raises(VendorUnavailable) as caught:
        api_method(wrapped_client(emu, api, retry=policy, timeout=0.15), api).create(response_model=Ticket,
                                                                                     **printer_args(api))
    assert not isinstance(caught.value, DeadlineExceeded)  # the timeout ended it, not the deadline
    assert caught.value.status is None and len(emu.requests) == 1


def own_tool(api: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"title": {"type": "string"}, "priority": {"type": "integer"}}}
    if api == "chat":
        return {"type": "function", "function": {"name": "lookup", "parameters": schema}}
    if api == "responses":
        return {"type": "function", "name": "lookup", "parameters": schema, "strict": False}
    return {"name": "lookup", "input_schema": schema}


@pytest.mark.parametrize("api", APIS)
def test_a_call_of_the_callers_own_tool_is_not_returned_as_the_answer(emu: Emulator, api: str) -> None:
    emu.script(reply.tool_call({"title": "args of lookup", "priority": 1}, name="lookup"))
    with pytest.raises(CallError):
        printer_call(emu, api, result=False, tools=[own_tool(api)], max_attempts=1)


# ---------------------------------------------------------------------------------- content, limits and odd outputs


class Memo(BaseModel):
    제목: str
    body: str


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.slow
def test_korean_and_emoji_content_round_trips(emu: Emulator, api: str, stream: bool) -> None:
    text = '{"제목": "프린터 화재 🔥", "body": "3층 복사실에서 연기가 납니다 — 긴급"}'
    emu.script(reply.answer('{"제목": 1.5, "body": "연기"}'), reply.answer(text))  # 1.5 is no string
    ask = "티켓을 만들어 주세요"
    prompt = {"input": ask} if api == "responses" else {"messages": [{"role": "user", "content": ask}]}
    result = printer_call(emu, api, response_model=Memo, stream=stream, **prompt)
    assert result.value == Memo(제목="프린터 화재 🔥", body="3층 복사실에서 연기가 납니다 — 긴급")
    assert "$.제목" in emu.requests[1].last_user_text
    assert "연기" in json.dumps(conversation(api, emu.requests[1].body), ensure_ascii=False)


@pytest.mark.parametrize(("api", "what"), [(api, what) for api in APIS for what in ("depth", "candidates")]
                         + [("chat", "bytes")])
def test_outputs_past_the_parse_limits_become_a_gave_up(emu: Emulator, api: str, what: str) -> None:
    if what == "depth":
        huge = '{"title": "x", "priority": 1, "tags": ' + "[" * 300 + "]" * 300 + "}"
    elif what == "bytes":
        huge = '{"title": "' + "x" * (2 * 1024 * 1024 + 10) + '", "priority": 1}'
    else:
        huge = " ".join(["{}"] * 1200)
    emu.script(reply.text(huge), reply.answer(PRINTER_GOOD))
    with pytest.raises(guardrail.GaveUp) as caught:
        printer_call(emu, api, max_attempts=1, mode="native")
    assert caught.value.raw_outputs == [huge]
    assert [type(e).__name__ for e in caught.value.errors] == ["InputLimitError"]
    emu.reset()
    emu.script(reply.text(huge), reply.answer(PRINTER_GOOD))
    assert printer_call(emu, api, mode="native").value == PRINTER_TICKET


# -------------------------------------------------------------------------------- failures that are not the model's


@pytest.mark.parametrize("api", APIS)
def test_a_raising_responder_is_a_server_error_that_runs_out_of_tries(emu: Emulator, api: str) -> None:
    def broken(request: Any) -> Any:
        raise RuntimeError("responder bug")

    emu.responder = broken
    with pytest.raises(VendorUnavailable) as caught:
        printer_call(emu, api)
    assert caught.value.status == 500 and "responder bug" in str(caught.value)
    assert len(emu.requests) == PRINTER_RETRY.max_tries == caught.value.outcome.vendor_calls


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_unknown_sdk_keyword_propagates_unchanged(emu: Emulator, api: str, is_async: bool) -> None:
    run = printer_acall if is_async else printer_call
    with pytest.raises(TypeError, match="no_such_option"):
        run(emu, api, no_such_option=1)
    assert emu.requests == []


class Exploding(BaseModel):
    title: str

    @model_validator(mode="after")
    def boom(self) -> Exploding:
        if self.title == "boom":
            raise LookupError("not a validation error")
        return self


@pytest.mark.parametrize("api", APIS)
@pytest.mark.slow
def test_a_non_validation_exception_from_the_contract_propagates_unchanged(emu: Emulator, api: str) -> None:
    emu.script(reply.answer('{"title": "boom"}'))
    with pytest.raises(LookupError, match="not a validation error"):
        printer_call(emu, api, response_model=Exploding)


# ------------------------------------------------------------------------------------------------ the result record


@pytest.mark.parametrize("api", APIS)
def test_the_result_record_is_complete(emu: Emulator, api: str) -> None:
    emu.script(reply.rate_limited(retry_after_ms=10), reply.answer(PRINTER_BAD, usage=(100, 10)),
               reply.server_error(503), reply.truncated('{"title"', usage=(110, 20)),
               reply.answer("```json\n" + PRINTER_GOOD + "\n```", usage=(120, 30)))
    kw: dict[str, Any] = {"max_output_tokens": 50} if api == "responses" else {"max_tokens": 50}
    result = printer_call(emu, api, **kw)
    assert result.value == PRINTER_TICKET
    assert [a.number for a in result.attempts] == [1, 2, 3]
    assert [a.vendor_calls for a in result.attempts] == [2, 2, 1]
    assert result.vendor_calls == 5 == len(emu.requests)
    assert [a.error_kind for a in result.attempts] == ["schema_violation", "truncated", None]
    assert result.attempts[0].feedback and "$.title" in result.attempts[0].feedback
    assert result.attempts[0].raw == PRINTER_BAD and result.attempts[1].raw == '{"title"'
    assert result.usage == guardrail.Usage(330, 60) == guardrail.Usage(*emu.tokens_served)
    assert result.seconds >= sum(a.seconds for a in result.attempts) > 0
    assert {f.kind for f in result.fixes} >= {"code_fence"} or result.fixes
    assert result.raw is not None and PRINTER_GOOD in result.raw
    assert len(result.trace_id) == 32 and result.schema_hash and result.compile_report is not None
    assert result.provider == ("anthropic" if api == "messages" else "openai")


@pytest.mark.parametrize("api", APIS)
def test_failures_carry_the_same_record(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_BAD, usage=(10, 1)), reply.server_error(500), reply.server_error(500),
               reply.server_error(500))
    with pytest.raises(VendorUnavailable) as caught:
        printer_call(emu, api)
    outcome = caught.value.outcome
    assert [a.number for a in outcome.attempts] == [1, 2]
    assert [a.vendor_calls for a in outcome.attempts] == [1, 3]
    assert outcome.attempts[1].raw is None and outcome.usage == guardrail.Usage(10, 1)
    assert caught.value.raw_outputs == [PRINTER_BAD]
