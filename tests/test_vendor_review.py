"""Review of the vendor layer (issue 3): the real openai/anthropic SDKs against the emulator, no mocks.

Tests for behaviour that works are plain tests. A test marked ``xfail(strict=True, reason="BUG: ...")``
states the correct behaviour for a bug found in review; it starts to XPASS (and so fails the suite) once
the bug is fixed, which is the signal to drop the marker.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterator
from typing import Any, Literal

import anthropic
import openai
import pytest
from helpers import RecordingRetry
from pydantic import BaseModel, Field, model_validator

import guardrail
from guardrail.errors import CallError, DeadlineExceeded, OutputTruncated, VendorUnavailable
from guardrail.outcome import Price
from guardrail.testing import Emulator, reply

# -- contracts and helpers ---------------------------------------------------------------------------------


class Ticket(BaseModel):
    title: str
    priority: int = Field(ge=1, le=5)
    tags: list[str] = []


class Segment(BaseModel):
    start: float
    end: float


class WithDefault(BaseModel):
    name: str
    retries: int = 3
    note: str | None = "n/a"


class Outer(BaseModel):
    items: list[WithDefault]


GOOD = '{"title": "Printer on fire", "priority": 5, "tags": ["hw"]}'
GOOD_TICKET = Ticket(title="Printer on fire", priority=5, tags=["hw"])
BAD = '{"title": 7, "priority": 9}'
MESSAGES = [{"role": "user", "content": "File a ticket for the burning printer."}]
FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.2, deadline=10)
CLAUDE = "claude-sonnet-5-5"
APIS = ["chat", "responses", "messages"]


@pytest.fixture(scope="module")
def server() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


@pytest.fixture
def emu(server: Emulator) -> Emulator:
    server.reset()
    return server


def sdk(emu: Emulator, api: str, *, is_async: bool = False, timeout: float = 5, max_retries: int = 2) -> Any:
    if api == "messages":
        cls: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return cls(base_url=emu.anthropic_base_url, api_key="test", timeout=timeout, max_retries=max_retries)
    cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    return cls(base_url=emu.openai_base_url, api_key="test", timeout=timeout, max_retries=max_retries)


def client(emu: Emulator, api: str, *, is_async: bool = False, retry: guardrail.RetryPolicy = FAST,
           timeout: float = 5, **options: Any) -> Any:
    return guardrail.wrap(sdk(emu, api, is_async=is_async, timeout=timeout), retry=retry, **options)


def method(wrapped: Any, api: str) -> Any:
    return {"chat": lambda: wrapped.chat.completions, "responses": lambda: wrapped.responses,
            "messages": lambda: wrapped.messages}[api]()


def args(api: str, **kwargs: Any) -> dict[str, Any]:
    """The SDK arguments of a minimal call on ``api`` (overridable)."""
    if api == "chat":
        base: dict[str, Any] = {"model": "gpt-4o", "messages": MESSAGES}
    elif api == "responses":
        base = {"model": "gpt-4o", "input": "File a ticket for the burning printer."}
    else:
        base = {"model": CLAUDE, "max_tokens": 256, "messages": MESSAGES}
    base.update(kwargs)
    return base


def call(emu: Emulator, api: str, *, result: bool = True, **kwargs: Any) -> Any:
    kwargs.setdefault("response_model", Ticket)
    wrap_options = kwargs.pop("wrap_options", {})
    target = method(client(emu, api, **wrap_options), api)
    fn = target.create_with_result if result else target.create
    return fn(**args(api, **kwargs))


def acall(emu: Emulator, api: str, *, result: bool = True, **kwargs: Any) -> Any:
    kwargs.setdefault("response_model", Ticket)

    async def main() -> Any:
        target = method(client(emu, api, is_async=True), api)
        fn = target.create_with_result if result else target.create
        return await fn(**args(api, **kwargs))

    return asyncio.run(main())


def conversation(api: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body["input"] if api == "responses" else body["messages"])


# -- async paths --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_async_repair_then_value_and_result(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(BAD), reply.answer(GOOD), reply.answer(GOOD))
    result = acall(emu, api)
    assert result.value == GOOD_TICKET and len(result.attempts) == 2
    assert "$.title" in emu.requests[1].last_user_text
    assert acall(emu, api, result=False) == GOOD_TICKET


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("mode", ["native", "tool"])
def test_streamed_repair_truncation_and_result(emu: Emulator, api: str, is_async: bool, mode: str) -> None:
    emu.script(reply.truncated('{"title": "Pri'), reply.answer(BAD), reply.answer(GOOD))
    run = acall if is_async else call
    limit: dict[str, Any] = {"max_output_tokens": 40} if api == "responses" else {"max_tokens": 40}
    result = run(emu, api, stream=True, mode=mode, max_attempts=3, **limit)
    assert result.value == GOOD_TICKET and result.mode == mode
    assert [r.stream for r in emu.requests] == [True, True, True]
    assert [r.max_tokens for r in emu.requests] == [40, 80, 80]
    assert [a.finish_reason is not None for a in result.attempts] == [True, True, True]
    assert result.attempts[0].error_kind == "truncated"
    assert result.usage.output_tokens == sum(a.usage.output_tokens for a in result.attempts) > 0
    assert "$.priority" in emu.requests[2].last_user_text


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_streamed_refusal_is_final(emu: Emulator, api: str, is_async: bool) -> None:
    emu.script(reply.refusal("Nope, not that."), reply.answer(GOOD))
    run = acall if is_async else call
    with pytest.raises(guardrail.Refused) as caught:
        run(emu, api, stream=True)
    assert caught.value.refusal == "Nope, not that."
    assert len(emu.requests) == 1


@pytest.mark.parametrize("api", APIS)
def test_async_mid_stream_error_is_retried(emu: Emulator, api: str) -> None:
    emu.script(reply.stream_error(text_before='{"title": '), reply.answer(GOOD))
    result = acall(emu, api, stream=True)
    assert result.value == GOOD_TICKET and result.vendor_calls == 2 and len(result.attempts) == 1


@pytest.mark.parametrize("api", APIS)
def test_a_fatal_stream_error_event_is_a_vendor_error_not_retried(emu: Emulator, api: str) -> None:
    emu.script(reply.stream_error(text_before='{"ti', type="invalid_request_error", message="bad"),
               reply.answer(GOOD))
    with pytest.raises(guardrail.VendorError):
        call(emu, api, stream=True)
    assert len(emu.requests) == 1


def test_async_passthrough_returns_the_sdks_own_objects(emu: Emulator) -> None:
    emu.script(reply.text("a"), reply.text("b"), reply.text("c"), reply.text("d"))

    async def main() -> list[Any]:
        oai = guardrail.wrap(sdk(emu, "chat", is_async=True))
        claude = guardrail.wrap(sdk(emu, "messages", is_async=True))
        chat = await oai.chat.completions.create(**args("chat"))
        resp = await oai.responses.create(**args("responses"))
        msg = await claude.messages.create(**args("messages"))
        stream = await oai.chat.completions.create(**args("chat"), stream=True)
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
            raw = sdk(emu, api, is_async=is_async, max_retries=5)
            before = (raw.max_retries, raw.timeout, raw.base_url)
            guardrail.wrap(raw)
            assert (raw.max_retries, raw.timeout, raw.base_url) == before


@pytest.mark.parametrize("api", ["messages"])
def test_passthrough_keeps_the_callers_sdk_retries_but_structured_calls_do_not_double_retry(
        emu: Emulator, api: str) -> None:
    emu.script(reply.server_error(500), reply.text("ok"))
    raw = sdk(emu, api, max_retries=1)
    wrapped = guardrail.wrap(raw, retry=guardrail.RetryPolicy(max_tries=1))
    method(wrapped, api).create(**args(api))  # the SDK's own single retry recovers the passthrough call
    assert len(emu.requests) == 2
    emu.reset()
    emu.script(reply.server_error(500), reply.answer(GOOD))
    with pytest.raises(VendorUnavailable):
        method(wrapped, api).create(**args(api), response_model=Ticket)
    assert len(emu.requests) == 1


# -- tool-mode repair turns: the replayed conversation follows each vendor's rules -------------------------


def check_chat_conversation(messages: list[dict[str, Any]]) -> None:
    """OpenAI: an assistant message with tool_calls is followed by one tool message per call id."""
    for at, message in enumerate(messages):
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        following = messages[at + 1: at + 1 + len(calls)]
        assert [m.get("role") for m in following] == ["tool"] * len(calls)
        assert {m["tool_call_id"] for m in following} == {c["id"] for c in calls}
        for c in calls:
            assert isinstance(c["function"]["arguments"], str)


def check_anthropic_conversation(messages: list[dict[str, Any]]) -> None:
    """Anthropic: roles alternate; a tool_use is answered by a tool_result first thing in the next user turn."""
    roles = [m["role"] for m in messages]
    assert roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))
    for at, message in enumerate(messages):
        blocks = message["content"] if isinstance(message["content"], list) else []
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        if message["role"] == "assistant":
            assert message["content"], "assistant content must not be empty"
        if not uses:
            continue
        assert all(isinstance(b["input"], dict) for b in uses)
        reply_blocks = messages[at + 1]["content"]
        results = [b for b in reply_blocks if b.get("type") == "tool_result"]
        assert reply_blocks[: len(results)] == results  # tool_result blocks come first
        assert {b["tool_use_id"] for b in results} == {b["id"] for b in uses}


def check_responses_conversation(items: list[dict[str, Any]]) -> None:
    """Responses: each function_call item has a function_call_output with the same call_id after it."""
    for at, item in enumerate(items):
        if item.get("type") == "function_call":
            later = [i for i in items[at + 1:] if i.get("type") == "function_call_output"]
            assert any(i["call_id"] == item["call_id"] for i in later)
            assert isinstance(item["arguments"], str)


CHECKS = {"chat": check_chat_conversation, "messages": check_anthropic_conversation,
          "responses": check_responses_conversation}


@pytest.mark.parametrize("api", APIS)
def test_two_tool_mode_repairs_replay_a_valid_conversation(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(BAD), reply.answer('{"title": "x", "priority": 0}'), reply.answer(GOOD))
    result = call(emu, api, mode="tool")
    assert result.value == GOOD_TICKET and len(result.attempts) == 3
    third = emu.requests[2]
    items = conversation(api, third.body)
    CHECKS[api](items)
    assert len(items) == 1 + 2  # the caller's message, then the latest (answer, feedback) pair only (issue 18)
    replayed = [own_output(api, item) for item in items[1:] if item.get("role") == "assistant"
                or item.get("type") == "function_call"]
    assert replayed == [json.loads(result.attempts[1].raw)]  # the model sees its own latest output
    assert "$.priority" in third.last_user_text
    assert "$.title" not in json.dumps(items)  # the first exchange is not replayed again


def own_output(api: str, item: dict[str, Any]) -> Any:
    """The model output an assistant turn replays (tool arguments or text), as JSON."""
    if api == "responses":
        return json.loads(item["arguments"])
    if api == "chat":
        return json.loads(item["tool_calls"][0]["function"]["arguments"])
    return item["content"][0]["input"]


@pytest.mark.parametrize("api", APIS)
def test_tool_mode_answer_given_as_text_is_replayed_as_text(emu: Emulator, api: str) -> None:
    emu.script(reply.text("I think the title is 7."), reply.answer(GOOD))
    result = call(emu, api, mode="tool")
    assert result.value == GOOD_TICKET
    items = conversation(api, emu.requests[1].body)
    CHECKS[api](items)
    assistant = items[-2]
    assert assistant["role"] == "assistant" and "title is 7" in json.dumps(assistant)


@pytest.mark.parametrize("api", APIS)
def test_tool_mode_replay_in_a_stream_keeps_ids_consistent(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(BAD), reply.answer(GOOD))
    call(emu, api, mode="tool", stream=True)
    CHECKS[api](conversation(api, emu.requests[1].body))


def test_anthropic_tool_replay_keeps_the_models_own_arguments(emu: Emulator) -> None:
    emu.script(reply.answer('{"title": "x", "priority": 9, "tags": ["a"]}'), reply.answer(GOOD))
    call(emu, "messages", mode="tool")
    assistant = emu.requests[1].body["messages"][-2]
    assert assistant["content"][0]["input"] == {"title": "x", "priority": 9, "tags": ["a"]}


# -- mode choice, fallback and forcing ---------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("mode", ["native", "tool", "prompt"])
def test_a_schema_400_on_the_last_plan_is_a_vendor_error(emu: Emulator, api: str, mode: str) -> None:
    emu.script(reply.schema_rejected(), reply.answer(GOOD))
    with pytest.raises(guardrail.VendorError) as caught:
        call(emu, api, mode=mode)
    assert caught.value.status == 400
    assert len(emu.requests) == 1
    assert len(caught.value.outcome.attempts) == 1


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_schema_400s_walk_every_openai_mode_down_to_prompt(emu: Emulator, api: str) -> None:
    emu.script(reply.schema_rejected(), reply.schema_rejected(), reply.schema_rejected(), reply.answer(GOOD))
    result = call(emu, api, max_attempts=1)
    assert result.value == GOOD_TICKET and result.mode == "prompt"
    fields = [r.mode_fields for r in emu.requests]
    assert [f["format"] for f in fields] == ["json_schema", None, "json_object", None]
    assert fields[1]["forced_tool"] == "Ticket"
    assert [a.mode for a in result.attempts] == ["native", "tool", "json", "prompt"]


def test_schema_400_after_a_repair_drops_the_old_mode_history(emu: Emulator) -> None:
    emu.script(reply.answer(BAD), reply.schema_rejected(), reply.answer(GOOD))
    result = call(emu, "chat")
    assert result.mode == "tool"
    assert emu.requests[2].body["messages"] == MESSAGES


@pytest.mark.parametrize(("api", "mode", "extra"), [
    ("messages", "json", {}),
    ("messages", "tool", {"thinking": {"type": "enabled", "budget_tokens": 1024}}),
    ("chat", "native", {"model": "gpt-3.5-turbo"}),
    ("chat", "tool", {"wrap_options": {"server": "llamacpp"}}),
])
def test_forcing_an_unavailable_mode_is_refused_before_any_request(emu: Emulator, api: str, mode: str,
                                                                   extra: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not available"):
        call(emu, api, mode=mode, **extra)
    assert emu.requests == []


@pytest.mark.parametrize("mode", ["Native", "strict", "json_schema"])
def test_an_unknown_mode_name_is_refused(emu: Emulator, mode: str) -> None:
    emu.script(reply.answer(GOOD))
    with pytest.raises(ValueError):
        call(emu, "chat", mode=mode)
    assert emu.requests == []


# -- budgets ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_a_cost_budget_stops_before_the_attempt_that_could_pass_it(emu: Emulator, api: str) -> None:
    price = Price(input_per_mtok=1.0, output_per_mtok=4.0)
    emu.script(reply.answer(BAD, usage=(2000, 500)), reply.answer(GOOD, usage=(150, 40)))
    budget = guardrail.Budget(max_cost=0.005, price=price)  # the first answer costs 0.002 + 0.002
    with pytest.raises(guardrail.BudgetExceeded) as caught:
        call(emu, api, budget=budget)
    assert len(emu.requests) == 1
    outcome = caught.value.outcome
    assert outcome.usage.cost(price) == pytest.approx(0.004)
    assert len(outcome.attempts) == 1 and outcome.attempts[0].error_kind == "schema_violation"


@pytest.mark.parametrize("api", APIS)
def test_a_budget_too_small_for_the_first_request_sends_nothing(emu: Emulator, api: str) -> None:
    with pytest.raises(guardrail.BudgetExceeded) as caught:
        call(emu, api, budget=guardrail.Budget(max_tokens=10))
    assert emu.requests == [] and caught.value.outcome.attempts == ()


@pytest.mark.parametrize("api", APIS)
def test_a_token_and_cost_budget_caps_the_requests_output_limit(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(GOOD, usage=(50, 20)))
    price = Price(input_per_mtok=1.0, output_per_mtok=2.0)
    budget = guardrail.Budget(max_tokens=100_000, max_cost=0.002, price=price)  # cost allows 1000 tokens
    call(emu, api, budget=budget)
    sent = emu.requests[0].max_tokens
    assert sent is not None and sent < 1000


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_generous_budget_never_raises_the_output_limit_above_the_ceiling(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(GOOD))
    price = Price(input_per_mtok=2.5, output_per_mtok=10.0)
    call(emu, api, budget=guardrail.Budget(max_cost=5.0, price=price))  # 500k tokens' worth
    sent = emu.requests[0].max_tokens
    assert sent is None or sent <= guardrail.Settings().max_tokens_ceiling, sent


# -- attempts, truncation, deadline, temperature -----------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_max_attempts_one(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(BAD), reply.answer(GOOD))
    with pytest.raises(guardrail.GaveUp) as caught:
        call(emu, api, max_attempts=1)
    assert type(caught.value) is guardrail.GaveUp and len(emu.requests) == 1
    assert caught.value.raw_outputs == [BAD]
    emu.reset()
    emu.script(reply.truncated('{"title"'), reply.answer(GOOD))
    with pytest.raises(OutputTruncated):
        call(emu, api, max_attempts=1)
    assert len(emu.requests) == 1


def test_max_attempts_zero_is_refused() -> None:
    with pytest.raises(ValueError):
        guardrail.Settings(max_attempts=0)


@pytest.mark.parametrize("api", APIS)
def test_truncation_without_a_caller_limit_raises_a_limit_within_the_ceiling(emu: Emulator, api: str) -> None:
    emu.script(reply.truncated('{"title": "Printer', usage=(10, 3000)), reply.answer(GOOD))
    kwargs = args(api)
    kwargs.pop("max_tokens", None)
    if api == "messages":
        kwargs["max_tokens"] = 3000
    result = method(client(emu, api, settings=guardrail.Settings(max_tokens_ceiling=4000)), api
                    ).create_with_result(response_model=Ticket, **kwargs)
    assert result.value == GOOD_TICKET
    assert emu.requests[1].max_tokens == 4000


@pytest.mark.parametrize("api", ["chat", "messages"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_the_deadline_cuts_a_stalled_vendor_short(emu: Emulator, api: str, is_async: bool) -> None:
    # each stall ends in a good answer after 3 s, well within the SDK's 5 s timeout: only the deadline can cut it
    emu.script(*(reply.timeout(3, then=reply.answer(GOOD)) for _ in range(4)))
    policy = guardrail.RetryPolicy(max_tries=4, initial_wait=0.01, max_wait=0.05, deadline=0.25)

    async def run_async() -> Any:
        target = method(client(emu, api, is_async=True, retry=policy), api)
        return await target.create(response_model=Ticket, **args(api))

    with pytest.raises(DeadlineExceeded) as caught:
        if is_async:
            asyncio.run(run_async())
        else:
            method(client(emu, api, retry=policy), api).create(response_model=Ticket, **args(api))
    assert caught.value.code == "deadline"
    # one HTTP try, cut in flight (its good answer would have come at 3 s) and never retried past the deadline;
    # the emulator may not even have read it when a loaded machine spends the 0.25 s before it is sent
    assert caught.value.outcome.vendor_calls == 1 and len(emu.requests) <= 1


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_repairs_lower_the_temperature_from_one_when_the_caller_set_none(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(BAD), reply.answer(BAD), reply.answer(GOOD))
    result = call(emu, api)
    assert [r.temperature for r in emu.requests] == [None, 0.5, 0.25]
    assert [a.temperature for a in result.attempts] == [None, 0.5, 0.25]


def test_truncation_keeps_the_temperature_and_conversation(emu: Emulator) -> None:
    emu.script(reply.truncated('{"t'), reply.answer(GOOD))
    call(emu, "chat", temperature=0.7, max_tokens=30)
    first, second = emu.requests
    assert first.temperature == second.temperature == 0.7
    assert first.body["messages"] == second.body["messages"]


def test_anthropic_requests_never_carry_a_temperature(emu: Emulator) -> None:
    emu.script(reply.answer(BAD), reply.answer(GOOD))
    call(emu, "messages")
    assert all("temperature" not in r.body for r in emu.requests)


# -- the caller's own SDK arguments ------------------------------------------------------------------------


def test_chat_max_tokens_key_is_preserved(emu: Emulator) -> None:
    emu.script(reply.truncated('{"t'), reply.answer(GOOD), reply.truncated('{"t'), reply.answer(GOOD))
    call(emu, "chat", max_tokens=30)
    assert [("max_tokens" in r.body, "max_completion_tokens" in r.body) for r in emu.requests] == \
        [(True, False), (True, False)]
    assert [r.body["max_tokens"] for r in emu.requests] == [30, 60]
    emu.reset()
    emu.script(reply.truncated('{"t'), reply.answer(GOOD))
    call(emu, "chat", max_completion_tokens=30)
    assert [("max_tokens" in r.body, r.body.get("max_completion_tokens")) for r in emu.requests] == \
        [(False, 30), (False, 60)]


def test_responses_text_param_is_merged_not_replaced(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD), reply.answer(GOOD))
    call(emu, "responses", text={"verbosity": "low"})
    text = emu.requests[0].body["text"]
    assert text["verbosity"] == "low" and text["format"]["type"] == "json_schema"
    call(emu, "responses", text={"verbosity": "low"}, mode="tool")
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
    emu.script(reply.answer(GOOD))
    result = call(emu, api, mode="tool", tools=[own])
    assert result.value == GOOD_TICKET
    fields = emu.requests[0].mode_fields
    assert fields["tools"] == ["lookup", "Ticket"] and fields["forced_tool"] == "Ticket"
    with pytest.raises(TypeError, match="tool_choice"):  # guardrail forces the tool; a caller's choice conflicts
        call(emu, api, mode="tool", tools=[own], tool_choice="auto" if api != "messages" else {"type": "auto"})


@pytest.mark.parametrize("api", APIS)
def test_the_callers_messages_and_kwargs_are_not_mutated(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(BAD), reply.answer(GOOD))
    kwargs = args(api, response_model=Ticket, mode="tool", tools=[])
    snapshot = json.dumps({k: v for k, v in kwargs.items() if k != "response_model"})
    method(client(emu, api), api).create(**kwargs)
    assert json.dumps({k: v for k, v in kwargs.items() if k != "response_model"}) == snapshot


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("mode", ["native", "tool", "prompt"])
def test_aliases_are_passed_through(emu: Emulator, api: str, mode: str) -> None:
    emu.script(reply.answer('{"headline": "Printer on fire", "prio": 5, "tags": ["hw"]}'))
    value = call(emu, api, result=False, mode=mode, aliases={"headline": "title", "prio": "priority"})
    assert value == GOOD_TICKET


# -- non-object roots and optional fields, every mode and vendor -------------------------------------------

MODES_BY_API = {"chat": ["native", "tool", "json", "prompt"], "responses": ["native", "tool", "json", "prompt"],
                "messages": ["native", "tool", "prompt"]}
COMBOS = [(api, mode) for api, modes in MODES_BY_API.items() for mode in modes]
ROOTS: list[tuple[str, Any, Any, Any]] = [
    ("list", list[Segment], [{"start": 0, "end": 1.5}], [Segment(start=0, end=1.5)]),
    ("int", int, 42, 42),
    ("literal", Literal["low", "high"], "high", "high"),
    ("optional-model", Ticket | None, json.loads(GOOD), GOOD_TICKET),
    ("optional-null", Ticket | None, None, None),
]


@pytest.mark.parametrize(("api", "mode"), COMBOS)
@pytest.mark.parametrize(("name", "contract", "wire", "expected"), ROOTS, ids=[r[0] for r in ROOTS])
def test_non_object_roots_round_trip(emu: Emulator, api: str, mode: str, name: str, contract: Any, wire: Any,
                                     expected: Any) -> None:
    # Every mode but prompt asks for an object root, so the root is wrapped as {"result": ...} there.
    wrapped_for_vendor = mode != "prompt"
    text = json.dumps({"result": wire} if wrapped_for_vendor else wire)
    emu.script(reply.answer(text))
    result = call(emu, api, response_model=contract, mode=mode, max_attempts=1)
    assert result.value == expected and result.mode == mode
    request = emu.requests[0]
    schema = request.schema
    if mode in ("native", "tool"):
        assert schema is not None and schema["type"] == "object" and "result" in schema["properties"]
    else:
        assert "JSON Schema" in request.system


@pytest.mark.parametrize(("api", "mode"), [c for c in COMBOS if c != ("messages", "native")])
def test_null_for_an_optional_field_with_a_default_in_every_mode(emu: Emulator, api: str, mode: str) -> None:
    # Under OpenAI strict lowering, optional fields are sent required-and-nullable; null means "absent".
    emu.script(reply.answer('{"items": [{"name": "job", "retries": null, "note": null}]}'),
               reply.answer('{"items": [{"name": "job"}]}'))
    result = call(emu, api, response_model=Outer, mode=mode)
    item = result.value.items[0]
    assert item.name == "job" and item.retries == 3
    if mode in ("native", "tool") and api != "messages":  # lowered for OpenAI strict: null reads as absent
        assert len(result.attempts) == 1 and item.note is None  # a nullable field's explicit null stays null
        assert [(f.kind, f.path) for f in result.fixes] == [("null_as_absent", "$.items[0].retries")]
    else:  # the schema sent keeps the field optional and non-null, so a null there is asked again
        assert len(result.attempts) == 2 and item.note == "n/a"


def test_anthropic_tool_mode_keeps_optional_fields_optional(emu: Emulator) -> None:
    emu.script(reply.answer('{"items": [{"name": "job"}]}'))
    result = call(emu, "messages", response_model=Outer, mode="tool")
    assert result.value.items[0].retries == 3 and result.value.items[0].note == "n/a"
    schema = emu.requests[0].schema
    assert schema is not None
    item = schema["$defs"]["WithDefault"] if "$defs" in schema else schema["properties"]["items"]["items"]
    assert item["required"] == ["name"]


# -- content, limits and odd outputs -----------------------------------------------------------------------


class Memo(BaseModel):
    제목: str
    body: str


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.slow
def test_korean_and_emoji_content_round_trips(emu: Emulator, api: str, stream: bool) -> None:
    text = '{"제목": "프린터 화재 🔥", "body": "3층 복사실에서 연기가 납니다 — 긴급"}'
    emu.script(reply.answer('{"제목": 1, "body": "연기"}'), reply.answer(text))
    ask = "티켓을 만들어 주세요"
    prompt = {"input": ask} if api == "responses" else {"messages": [{"role": "user", "content": ask}]}
    result = call(emu, api, response_model=Memo, stream=stream, **prompt)
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
    emu.script(reply.text(huge), reply.answer(GOOD))
    with pytest.raises(guardrail.GaveUp) as caught:
        call(emu, api, max_attempts=1, mode="native")
    assert caught.value.raw_outputs == [huge]
    assert [type(e).__name__ for e in caught.value.errors] == ["InputLimitError"]
    emu.reset()
    emu.script(reply.text(huge), reply.answer(GOOD))
    assert call(emu, api, mode="native").value == GOOD_TICKET


@pytest.mark.parametrize("api", APIS)
def test_an_empty_answer_is_asked_again(emu: Emulator, api: str) -> None:
    emu.script(reply.text(""), reply.answer(GOOD))
    result = call(emu, api)
    assert result.value == GOOD_TICKET and result.attempts[0].error_kind == "no_json"
    CHECKS[api](conversation(api, emu.requests[1].body))


# -- failures that are not the model's ---------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_a_raising_responder_is_a_server_error_that_runs_out_of_tries(emu: Emulator, api: str) -> None:
    def broken(request: Any) -> Any:
        raise RuntimeError("responder bug")

    emu.responder = broken
    with pytest.raises(VendorUnavailable) as caught:
        call(emu, api)
    assert caught.value.status == 500 and "responder bug" in str(caught.value)
    assert len(emu.requests) == FAST.max_tries == caught.value.outcome.vendor_calls


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_an_unknown_sdk_keyword_propagates_unchanged(emu: Emulator, api: str, is_async: bool) -> None:
    run = acall if is_async else call
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
        call(emu, api, response_model=Exploding)


# -- the result record -------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_the_result_record_is_complete(emu: Emulator, api: str) -> None:
    emu.script(reply.rate_limited(retry_after_ms=10), reply.answer(BAD, usage=(100, 10)),
               reply.server_error(503), reply.truncated('{"title"', usage=(110, 20)),
               reply.answer("```json\n" + GOOD + "\n```", usage=(120, 30)))
    kw: dict[str, Any] = {"max_output_tokens": 50} if api == "responses" else {"max_tokens": 50}
    result = call(emu, api, **kw)
    assert result.value == GOOD_TICKET
    assert [a.number for a in result.attempts] == [1, 2, 3]
    assert [a.vendor_calls for a in result.attempts] == [2, 2, 1]
    assert result.vendor_calls == 5 == len(emu.requests)
    assert [a.error_kind for a in result.attempts] == ["schema_violation", "truncated", None]
    assert result.attempts[0].feedback and "$.title" in result.attempts[0].feedback
    assert result.attempts[0].raw == BAD and result.attempts[1].raw == '{"title"'
    assert result.usage == guardrail.Usage(330, 60) == guardrail.Usage(*emu.tokens_served)
    assert result.seconds >= sum(a.seconds for a in result.attempts) > 0
    assert {f.kind for f in result.fixes} >= {"code_fence"} or result.fixes
    assert result.raw is not None and GOOD in result.raw
    assert len(result.trace_id) == 32 and result.schema_hash and result.compile_report is not None
    assert result.provider == ("anthropic" if api == "messages" else "openai")


@pytest.mark.parametrize("api", APIS)
def test_failures_carry_the_same_record(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(BAD, usage=(10, 1)), reply.server_error(500), reply.server_error(500),
               reply.server_error(500))
    with pytest.raises(VendorUnavailable) as caught:
        call(emu, api)
    outcome = caught.value.outcome
    assert [a.number for a in outcome.attempts] == [1, 2]
    assert [a.vendor_calls for a in outcome.attempts] == [1, 3]
    assert outcome.attempts[1].raw is None and outcome.usage == guardrail.Usage(10, 1)
    assert caught.value.raw_outputs == [BAD]


@pytest.mark.parametrize("api", APIS)
def test_each_attempt_records_the_output_limit_it_was_sent_with(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(BAD), reply.truncated('{"title"'), reply.answer(GOOD))
    kw: dict[str, Any] = {"max_output_tokens": 50} if api == "responses" else {"max_tokens": 50}
    result = call(emu, api, **kw)
    assert [r.max_tokens for r in emu.requests] == [50, 50, 100]
    assert [a.max_tokens for a in result.attempts] == [50, 50, 100]


# -- telemetry on async calls ------------------------------------------------------------------------------


@pytest.fixture
def spans() -> Iterator[Any]:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # set once per process; tests/test_telemetry.py may have
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()


def ours(exporter: Any) -> list[str]:
    """Names of guardrail's finished spans (the anthropic SDK adds spans of its own)."""
    return [s.name for s in exporter.get_finished_spans() if s.name.startswith("chat ")]


@pytest.mark.parametrize("api", APIS)
def test_async_calls_end_their_span_before_returning(emu: Emulator, api: str, spans: Any) -> None:
    from opentelemetry import trace

    emu.script(reply.answer(GOOD))
    seen: dict[str, Any] = {}

    async def main() -> None:
        target = method(client(emu, api, is_async=True), api)
        await target.create(response_model=Ticket, **args(api))
        seen["finished"] = ours(spans)
        seen["current"] = trace.get_current_span().get_span_context().is_valid

    asyncio.run(main())
    assert seen == {"finished": [f"chat {args(api)['model']}"], "current": False}


@pytest.mark.parametrize("api", APIS)
def test_sync_calls_end_their_span_before_returning(emu: Emulator, api: str, spans: Any) -> None:
    from opentelemetry import trace

    emu.script(reply.answer(GOOD), reply.answer(BAD))
    call(emu, api)
    assert ours(spans) == [f"chat {args(api)['model']}"]
    assert not trace.get_current_span().get_span_context().is_valid
    with pytest.raises(guardrail.GaveUp):
        call(emu, api, max_attempts=1)
    assert len(ours(spans)) == 2


# -- transport ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [408, 409, 502, 504])
def test_other_retryable_statuses(emu: Emulator, api: str, status: int) -> None:
    emu.script(reply.error(status, message="try again"), reply.answer(GOOD))
    result = call(emu, api)
    assert result.value == GOOD_TICKET and result.vendor_calls == 2 and len(result.attempts) == 1


@pytest.mark.parametrize("api", ["messages"])
def test_retry_after_as_an_http_date(emu: Emulator, api: str) -> None:
    from email.utils import formatdate

    emu.script(reply.error(429, headers={"retry-after": formatdate(time.time() + 30, usegmt=True)}),
               reply.answer(GOOD))
    policy = RecordingRetry(max_tries=3, initial_wait=0.001, max_wait=0.2, deadline=10)
    result = call(emu, api, wrap_options={"retry": policy})
    assert result.vendor_calls == 2
    assert policy.waits == [0.2]  # the date, 30 s away, was read as a wait (not 1 ms jitter), capped at max_wait


@pytest.mark.parametrize("api", APIS)
def test_a_retry_after_past_the_deadline_gives_up_at_once(emu: Emulator, api: str) -> None:
    emu.script(reply.rate_limited(retry_after=5), reply.answer(GOOD))
    policy = RecordingRetry(max_tries=3, initial_wait=0.01, max_wait=20, deadline=1.0)
    with pytest.raises(VendorUnavailable) as caught:
        method(client(emu, api, retry=policy), api).create(response_model=Ticket, **args(api))
    assert caught.value.status == 429
    assert policy.waits == [] and len(emu.requests) == 1  # the 5 s wait was never started


# -- create_partial (streamed previews) --------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_previews_of_a_wrapped_root_have_the_contracts_shape(emu: Emulator, api: str) -> None:
    emu.script(reply.answer('{"result": [{"start": 0, "end": 1.5}, {"start": 2, "end": 3}]}'))
    target = method(client(emu, api), api)
    items = list(target.create_partial(response_model=list[Segment], **args(api)))
    assert items[-1] == [Segment(start=0, end=1.5), Segment(start=2, end=3)]
    previews = [item.data for item in items[:-1]]
    assert previews and all(isinstance(data, list) for data in previews)


@pytest.mark.parametrize("api", APIS)
def test_previews_then_a_validated_value(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(BAD), reply.answer(GOOD))
    target = method(client(emu, api), api)
    stream = target.create_partial(response_model=Ticket, **args(api))
    items = list(stream)
    assert items[-1] == GOOD_TICKET and stream.result is not None and len(stream.result.attempts) == 2
    previews = items[:-1]
    assert all(p.partial for p in previews) and {p.attempt for p in previews} == {1, 2}
    assert all(r.stream for r in emu.requests)


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_cancelling_an_async_call_is_not_retried_or_swallowed(emu: Emulator, api: str) -> None:
    emu.script(reply.timeout(1), reply.answer(GOOD))

    async def main() -> None:
        target = method(client(emu, api, is_async=True), api)
        await asyncio.wait_for(target.create(response_model=Ticket, **args(api)), timeout=0.15)

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(main())
    time.sleep(0.05)
    assert len(emu.requests) == 1


def test_a_budget_keeps_the_callers_chat_max_tokens_key(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD, usage=(50, 20)))
    call(emu, "chat", max_tokens=4000, budget=guardrail.Budget(max_tokens=1000))
    body = emu.requests[0].body
    assert "max_completion_tokens" not in body and body["max_tokens"] < 1000


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_anthropic_tool_replay_of_slipped_arguments_keeps_the_models_output(emu: Emulator, stream: bool) -> None:
    emu.script(reply.answer("{'title': 'x', 'priority': 9, 'tags': []}"), reply.answer(GOOD))
    call(emu, "messages", mode="tool", stream=stream)
    assistant, tool_result = emu.requests[1].body["messages"][-2:]
    assert assistant["content"][0]["type"] == "tool_use"  # the API takes only an object as tool input,
    assert "'priority': 9" in json.dumps(tool_result)      # so the model's own text is shown in the tool result


class ManyOptional(BaseModel):
    model_config = {"title": "ManyOptional"}

    f00: int = 0
    f01: int = 0
    f02: int = 0
    f03: int = 0
    f04: int = 0
    f05: int = 0
    f06: int = 0
    f07: int = 0
    f08: int = 0
    f09: int = 0
    f10: int = 0
    f11: int = 0
    f12: int = 0
    f13: int = 0
    f14: int = 0
    f15: int = 0
    f16: int = 0
    f17: int = 0
    f18: int = 0
    f19: int = 0
    f20: int = 0
    f21: int = 0
    f22: int = 0
    f23: int = 0
    f24: int = 0
    f25: int = 0


def test_anthropic_optional_parameter_limit_picks_a_mode_up_front(emu: Emulator) -> None:
    emu.script(reply.answer('{"f00": 1}'))
    result = call(emu, "messages", response_model=ManyOptional)
    assert result.value.f00 == 1 and len(emu.requests) == 1
    assert result.mode == "tool" and emu.requests[0].body["tools"][0].get("strict") is not True


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_the_callers_client_timeout_still_applies_under_a_longer_deadline(emu: Emulator, api: str) -> None:
    emu.script(reply.timeout(0.5, then=reply.answer(GOOD)), reply.answer(GOOD))
    policy = guardrail.RetryPolicy(max_tries=1, deadline=30)
    # the answer comes after 0.5 s: only the caller's 0.15 s client timeout can end the call before it
    with pytest.raises(VendorUnavailable) as caught:
        method(client(emu, api, retry=policy, timeout=0.15), api).create(response_model=Ticket, **args(api))
    assert not isinstance(caught.value, DeadlineExceeded)  # the timeout ended it, not the deadline
    assert caught.value.status is None and len(emu.requests) == 1


def test_a_partial_stream_left_early_can_be_closed(emu: Emulator, spans: Any) -> None:
    from opentelemetry import trace

    emu.script(reply.answer('{"title": "Printer on fire, third floor copy room", "priority": 5, "tags": ["hw"]}'))
    stream = method(client(emu, "chat"), "chat").create_partial(response_model=Ticket, **args("chat"))
    with stream:
        for _ in stream:
            break
    assert ours(spans) == ["chat gpt-4o"]
    assert not trace.get_current_span().get_span_context().is_valid


def test_concurrent_async_calls_keep_their_own_records(emu: Emulator) -> None:
    def answer(request: Any) -> Any:
        asked = request.messages[0]["content"]
        repaired = "Your previous answer" in request.last_user_text
        return reply.answer(GOOD.replace("Printer on fire", asked) if repaired or asked.endswith("0") else BAD)

    emu.responder = answer

    async def main() -> list[Any]:
        target = method(client(emu, "chat", is_async=True), "chat")
        calls = [target.create_with_result(response_model=Ticket, **args(
            "chat", messages=[{"role": "user", "content": f"ticket {i}"}])) for i in range(4)]
        return list(await asyncio.gather(*calls))

    results = asyncio.run(main())
    assert [r.value.title for r in results] == [f"ticket {i}" for i in range(4)]
    assert [len(r.attempts) for r in results] == [1, 2, 2, 2]
    assert len({r.trace_id for r in results}) == 4


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
        call(emu, api, result=False, tools=[own_tool(api)], max_attempts=1)
