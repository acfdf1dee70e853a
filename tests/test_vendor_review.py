"""Review of the vendor layer (issue 3): the real openai/anthropic SDKs against the emulator, no mocks.

Tests for behaviour that works are plain tests. A test marked ``xfail(strict=True, reason="BUG: ...")``
states the correct behaviour for a bug found in review; it starts to XPASS (and so fails the suite) once
the bug is fixed, which is the signal to drop the marker.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any, Literal

import anthropic
import openai
import pytest
from pydantic import BaseModel, Field, model_validator

import guardrail
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
    result = run(emu, api, stream=True, mode=mode, max_attempts=3,
                 **({"max_output_tokens": 40} if api == "responses" else {"max_tokens": 40}))
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


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_passthrough_keeps_the_callers_sdk_retries_but_structured_calls_do_not_double_retry(
        emu: Emulator, api: str) -> None:
    emu.script(reply.server_error(500), reply.text("ok"))
    raw = sdk(emu, api, max_retries=1)
    wrapped = guardrail.wrap(raw, retry=guardrail.RetryPolicy(max_tries=1))
    method(wrapped, api).create(**args(api))  # the SDK's own single retry recovers the passthrough call
    assert len(emu.requests) == 2
    emu.reset()
    emu.script(reply.server_error(500), reply.answer(GOOD))
    with pytest.raises(guardrail.VendorUnavailable):
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
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:], strict=False))
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
    assert len(items) == 1 + 4  # the caller's message, then two (answer, feedback) pairs
    replayed = [own_output(api, item) for item in items[1:] if item.get("role") == "assistant"
                or item.get("type") == "function_call"]
    assert replayed == [json.loads(a.raw) for a in result.attempts[:2]]  # the model sees its own outputs
    assert "$.priority" in third.last_user_text
    assert "$.title" in json.dumps(items)  # the first exchange's feedback is still there


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
])
def test_forcing_an_unavailable_mode_is_refused_before_any_request(emu: Emulator, api: str, mode: str,
                                                                   extra: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not available"):
        call(emu, api, mode=mode, **extra)
    assert emu.requests == []


@pytest.mark.xfail(strict=True, reason="BUG: an unknown mode= (typo, wrong case) is silently run as prompt mode: "
                   "modes.plans() does not check `forced` against MODES and _plan() falls through to prompt")
@pytest.mark.parametrize("mode", ["Native", "strict", "json_schema"])
def test_an_unknown_mode_name_is_refused(emu: Emulator, mode: str) -> None:
    emu.script(reply.answer(GOOD))
    with pytest.raises(ValueError):
        call(emu, "chat", mode=mode)
    assert emu.requests == []


# -- budgets ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_a_cost_budget_stops_before_the_attempt_that_could_pass_it(emu: Emulator, api: str) -> None:
    price = guardrail.Price(input_per_mtok=1.0, output_per_mtok=4.0)
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
    price = guardrail.Price(input_per_mtok=1.0, output_per_mtok=2.0)
    budget = guardrail.Budget(max_tokens=100_000, max_cost=0.002, price=price)  # cost allows 1000 tokens
    call(emu, api, budget=budget)
    sent = emu.requests[0].max_tokens
    assert sent is not None and sent < 1000


@pytest.mark.xfail(strict=True, reason="BUG: a generous budget sets the request's output-token limit to all the "
                   "tokens the budget leaves (_State.fit_budget, _engine.py:176-177), far above "
                   "Settings.max_tokens_ceiling and any model's output limit, so a real vendor answers 400")
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_generous_budget_never_raises_the_output_limit_above_the_ceiling(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(GOOD))
    price = guardrail.Price(input_per_mtok=2.5, output_per_mtok=10.0)
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
    with pytest.raises(guardrail.OutputTruncated):
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


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_the_deadline_cuts_a_stalled_vendor_short(emu: Emulator, api: str, is_async: bool) -> None:
    emu.script(*(reply.timeout(3) for _ in range(4)))
    policy = guardrail.RetryPolicy(max_tries=4, initial_wait=0.01, max_wait=0.05, deadline=0.6)

    async def run_async() -> Any:
        target = method(client(emu, api, is_async=True, retry=policy), api)
        return await target.create(response_model=Ticket, **args(api))

    started = time.monotonic()
    with pytest.raises(guardrail.VendorUnavailable) as caught:
        if is_async:
            asyncio.run(run_async())
        else:
            method(client(emu, api, retry=policy), api).create(response_model=Ticket, **args(api))
    assert time.monotonic() - started < 1.5
    assert caught.value.outcome.vendor_calls >= 1


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
    if api == "chat":
        own = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    elif api == "responses":
        own = {"type": "function", "name": "lookup", "parameters": {"type": "object"}, "strict": False}
    else:
        own = {"name": "lookup", "input_schema": {"type": "object"}}
    emu.script(reply.answer(GOOD))
    result = call(emu, api, mode="tool", tools=[own], tool_choice="auto" if api != "messages" else {"type": "auto"})
    assert result.value == GOOD_TICKET
    fields = emu.requests[0].mode_fields
    assert fields["tools"] == ["lookup", "Ticket"] and fields["forced_tool"] == "Ticket"


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
