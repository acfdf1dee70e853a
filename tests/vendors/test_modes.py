"""Output modes on every endpoint: repair turns replay a conversation each vendor accepts (tool calls answered,
roles alternating, the model's own output shown back), schema 400s walk down the modes, forced and unknown modes
are refused before any request, and non-object roots and optional fields round-trip in every mode."""

from __future__ import annotations

import itertools
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from support.calls import (
    APIS,
    PRINTER_BAD,
    PRINTER_GOOD,
    PRINTER_MESSAGES,
    PRINTER_TICKET,
    Ticket,
    TimeSpan,
    conversation,
    printer_call,
)

import guardrail
from guardrail.testing import Emulator, reply

# ------------------------------------------------------------------------- repair turns replay a valid conversation


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
    emu.script(reply.answer(PRINTER_BAD), reply.answer('{"title": "x", "priority": 0}'), reply.answer(PRINTER_GOOD))
    result = printer_call(emu, api, mode="tool")
    assert result.value == PRINTER_TICKET and len(result.attempts) == 3
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
    emu.script(reply.text("I think the title is 7."), reply.answer(PRINTER_GOOD))
    result = printer_call(emu, api, mode="tool")
    assert result.value == PRINTER_TICKET
    items = conversation(api, emu.requests[1].body)
    CHECKS[api](items)
    assistant = items[-2]
    assert assistant["role"] == "assistant" and "title is 7" in json.dumps(assistant)


@pytest.mark.parametrize("api", APIS)
def test_tool_mode_replay_in_a_stream_keeps_ids_consistent(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_BAD), reply.answer(PRINTER_GOOD))
    printer_call(emu, api, mode="tool", stream=True)
    CHECKS[api](conversation(api, emu.requests[1].body))


def test_anthropic_tool_replay_keeps_the_models_own_arguments(emu: Emulator) -> None:
    emu.script(reply.answer('{"title": "x", "priority": 9, "tags": ["a"]}'), reply.answer(PRINTER_GOOD))
    printer_call(emu, "messages", mode="tool")
    assistant = emu.requests[1].body["messages"][-2]
    assert assistant["content"][0]["input"] == {"title": "x", "priority": 9, "tags": ["a"]}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_anthropic_tool_replay_of_slipped_arguments_keeps_the_models_output(emu: Emulator, stream: bool) -> None:
    emu.script(reply.answer("{'title': 'x', 'priority': 9, 'tags': []}"), reply.answer(PRINTER_GOOD))
    printer_call(emu, "messages", mode="tool", stream=stream)
    assistant, tool_result = emu.requests[1].body["messages"][-2:]
    assert assistant["content"][0]["type"] == "tool_use"  # the API takes only an object as tool input,
    assert "'priority': 9" in json.dumps(tool_result)      # so the model's own text is shown in the tool result


@pytest.mark.parametrize("api", APIS)
def test_an_empty_answer_is_asked_again(emu: Emulator, api: str) -> None:
    emu.script(reply.text(""), reply.answer(PRINTER_GOOD))
    result = printer_call(emu, api)
    assert result.value == PRINTER_TICKET and result.attempts[0].error_kind == "no_json"
    CHECKS[api](conversation(api, emu.requests[1].body))


# -------------------------------------------------------------------------------- mode choice, fallback and forcing


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("mode", ["native", "tool", "prompt"])
def test_a_schema_400_on_the_last_plan_is_a_vendor_error(emu: Emulator, api: str, mode: str) -> None:
    emu.script(reply.schema_rejected(), reply.answer(PRINTER_GOOD))
    with pytest.raises(guardrail.VendorError) as caught:
        printer_call(emu, api, mode=mode)
    assert caught.value.status == 400
    assert len(emu.requests) == 1
    assert len(caught.value.outcome.attempts) == 1


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_schema_400s_walk_every_openai_mode_down_to_prompt(emu: Emulator, api: str) -> None:
    emu.script(reply.schema_rejected(), reply.schema_rejected(), reply.schema_rejected(), reply.answer(PRINTER_GOOD))
    result = printer_call(emu, api, max_attempts=1)
    assert result.value == PRINTER_TICKET and result.mode == "prompt"
    fields = [r.mode_fields for r in emu.requests]
    assert [f["format"] for f in fields] == ["json_schema", None, "json_object", None]
    assert fields[1]["forced_tool"] == "Ticket"
    assert [a.mode for a in result.attempts] == ["native", "tool", "json", "prompt"]


def test_schema_400_after_a_repair_drops_the_old_mode_history(emu: Emulator) -> None:
    emu.script(reply.answer(PRINTER_BAD), reply.schema_rejected(), reply.answer(PRINTER_GOOD))
    result = printer_call(emu, "chat")
    assert result.mode == "tool"
    assert emu.requests[2].body["messages"] == PRINTER_MESSAGES


@pytest.mark.parametrize(("api", "mode", "extra"), [
    ("messages", "json", {}),
    ("messages", "tool", {"thinking": {"type": "enabled", "budget_tokens": 1024}}),
    ("chat", "native", {"model": "gpt-3.5-turbo"}),
    ("chat", "tool", {"wrap_options": {"server": "llamacpp"}}),
])
def test_forcing_an_unavailable_mode_is_refused_before_any_request(emu: Emulator, api: str, mode: str,
                                                                   extra: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not available"):
        printer_call(emu, api, mode=mode, **extra)
    assert emu.requests == []


@pytest.mark.parametrize("mode", ["Native", "strict", "json_schema"])
def test_an_unknown_mode_name_is_refused(emu: Emulator, mode: str) -> None:
    emu.script(reply.answer(PRINTER_GOOD))
    with pytest.raises(ValueError):
        printer_call(emu, "chat", mode=mode)
    assert emu.requests == []


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
    result = printer_call(emu, "messages", response_model=ManyOptional)
    assert result.value.f00 == 1 and len(emu.requests) == 1
    assert result.mode == "tool" and emu.requests[0].body["tools"][0].get("strict") is not True


# ------------------------------------------------------ non-object roots and optional fields, every mode and vendor


class WithDefault(BaseModel):
    name: str
    retries: int = 3
    note: str | None = "n/a"


class Outer(BaseModel):
    items: list[WithDefault]


MODES_BY_API = {"chat": ["native", "tool", "json", "prompt"], "responses": ["native", "tool", "json", "prompt"],
                "messages": ["native", "tool", "prompt"]}


COMBOS = [(api, mode) for api, modes in MODES_BY_API.items() for mode in modes]


ROOTS: list[tuple[str, Any, Any, Any]] = [
    ("list", list[TimeSpan], [{"start": 0, "end": 1.5}], [TimeSpan(start=0, end=1.5)]),
    ("int", int, 42, 42),
    ("literal", Literal["low", "high"], "high", "high"),
    ("optional-model", Ticket | None, json.loads(PRINTER_GOOD), PRINTER_TICKET),
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
    result = printer_call(emu, api, response_model=contract, mode=mode, max_attempts=1)
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
    result = printer_call(emu, api, response_model=Outer, mode=mode)
    item = result.value.items[0]
    assert item.name == "job" and item.retries == 3
    if mode in ("native", "tool") and api != "messages":  # lowered for OpenAI strict: null reads as absent
        assert len(result.attempts) == 1 and item.note is None  # a nullable field's explicit null stays null
        assert [(f.kind, f.path) for f in result.fixes] == [("null_as_absent", "$.items[0].retries")]
    else:  # the schema sent keeps the field optional and non-null, so a null there is asked again
        assert len(result.attempts) == 2 and item.note == "n/a"


def test_anthropic_tool_mode_keeps_optional_fields_optional(emu: Emulator) -> None:
    emu.script(reply.answer('{"items": [{"name": "job"}]}'))
    result = printer_call(emu, "messages", response_model=Outer, mode="tool")
    assert result.value.items[0].retries == 3 and result.value.items[0].note == "n/a"
    schema = emu.requests[0].schema
    assert schema is not None
    item = schema["$defs"]["WithDefault"] if "$defs" in schema else schema["properties"]["items"]["items"]
    assert item["required"] == ["name"]
