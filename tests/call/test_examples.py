"""Few-shot examples (``examples=[...]``) on every entry point: checked against the contract where they are given
(an invalid one is InvalidExample naming its index and path, before any request), shown to the model in the
instructions of every mode on every endpoint (never as made-up assistant turns), in the shape the answer has,
and part of the response cache's key."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from support.calls import PRINTER_GOOD, PRINTER_RETRY, Ticket, TimeSpan, api_method, printer_args, wrapped_client

import guardrail
from guardrail.call.examples import checked
from guardrail.chain.tiers import Chain, vendor
from guardrail.errors import InvalidExample, UsageError
from guardrail.store import SQLiteStore
from guardrail.testing import Emulator, reply
from guardrail.testing.recording import RecordedRequest

pytestmark = pytest.mark.usefixtures("clean_config")

GOOD = [Ticket(title="Paper jam on floor 2", priority=2, tags=["hw"]), {"title": "Toner low", "priority": 1}]
#: What each example is as the answer's JSON (the model dumps by alias, the dict as given).
SHOWN = [{"title": "Paper jam on floor 2", "priority": 2, "tags": ["hw"]}, {"title": "Toner low", "priority": 1}]
_EXAMPLE = re.compile(r"^Example (\d+):\n(.+)$", re.MULTILINE)


def shown(request: RecordedRequest) -> list[Any]:
    """The examples the request shows the model, decoded, in order (read from the system instructions)."""
    found = _EXAMPLE.findall(request.system)
    assert [int(number) for number, _ in found] == list(range(1, len(found) + 1))
    return [json.loads(text) for _, text in found]


def no_made_up_turns(request: RecordedRequest) -> None:
    """The conversation is the caller's: one user turn, no assistant turn carrying an example."""
    assert [m.get("role") for m in request.messages if m.get("role") != "system"] == ["user"]


# -- every endpoint, every mode ------------------------------------------------------------------------------------
MODES = {"chat": ["native", "tool", "json", "prompt"], "responses": ["native", "tool", "json", "prompt"],
         "messages": ["native", "tool", "prompt"]}


@pytest.mark.parametrize(("api", "mode"), [(api, mode) for api, modes in MODES.items() for mode in modes])
def test_examples_are_shown_in_the_instructions_of_every_mode(emu: Emulator, api: str, mode: str) -> None:
    emu.script(reply.answer(PRINTER_GOOD))
    method = api_method(wrapped_client(emu, api), api)
    ticket = method.create(**printer_args(api), response_model=Ticket, mode=mode, examples=GOOD)
    assert ticket.priority == 5
    (request,) = emu.requests
    assert shown(request) == SHOWN
    no_made_up_turns(request)
    if mode in ("json", "prompt"):  # after the schema text, in the same instruction
        assert "JSON Schema" in request.system and request.system.index("JSON Schema") < request.system.index(
            "Example 1:")
    if mode == "tool":
        assert request.forced_tool == "Ticket" and "arguments of the Ticket tool" in request.system


@pytest.mark.parametrize("mode", ["native", "tool", "json", "prompt"])
def test_examples_on_gemini(emu: Emulator, mode: str) -> None:
    emu.script(reply.answer(PRINTER_GOOD))
    client = guardrail.wrap(genai.Client(api_key="test", http_options=types.HttpOptions(
        base_url=emu.gemini_base_url, timeout=5000)), retry=PRINTER_RETRY)
    ticket = client.models.generate_content(model="gemini-2.5-flash", contents="File a ticket.", response_model=Ticket,
                                            mode=mode, examples=GOOD)
    assert ticket.priority == 5
    (request,) = emu.requests
    assert shown(request) == SHOWN


@pytest.mark.parametrize("server", ["vllm", "sglang", "llamacpp", "ollama"])
def test_examples_on_a_self_hosted_server_are_shown_once(emu: Emulator, server: str) -> None:
    emu.script(reply.answer(PRINTER_GOOD))
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), server=server,
                            retry=PRINTER_RETRY)
    client.chat.completions.create(**printer_args("chat"), response_model=Ticket, examples=GOOD)
    (request,) = emu.requests
    assert shown(request) == SHOWN  # with the schema in the prompt, not a second time after it


def test_a_wrapped_root_shows_the_examples_wrapped_like_the_answer(emu: Emulator) -> None:
    emu.script(reply.answer('{"result": [{"start": 0, "end": 1.5}]}'))
    spans = [TimeSpan(start=0, end=2.5), TimeSpan(start=3, end=4)]
    method = api_method(wrapped_client(emu, "chat"), "chat")
    value = method.create(**printer_args("chat"), response_model=list[TimeSpan], mode="tool", examples=[spans])
    assert value == [TimeSpan(start=0, end=1.5)]
    (request,) = emu.requests
    assert shown(request) == [{"result": [{"start": 0, "end": 2.5}, {"start": 3, "end": 4}]}]


def test_the_caller_system_message_comes_first(emu: Emulator) -> None:
    emu.script(reply.answer(PRINTER_GOOD))
    method = api_method(wrapped_client(emu, "chat"), "chat")
    messages = [{"role": "system", "content": "You triage office tickets."},
                {"role": "user", "content": "The printer is on fire."}]
    method.create(model="gpt-4o", messages=messages, response_model=Ticket, examples=GOOD[:1])
    (request,) = emu.requests
    assert request.messages[0] == messages[0] and request.messages[-1] == messages[1]
    assert shown(request) == SHOWN[:1]


def test_without_examples_the_request_is_unchanged(emu: Emulator) -> None:
    emu.script(reply.answer(PRINTER_GOOD), reply.answer(PRINTER_GOOD))
    method = api_method(wrapped_client(emu, "chat"), "chat")
    method.create(**printer_args("chat"), response_model=Ticket)
    method.create(**printer_args("chat"), response_model=Ticket, examples=[])
    first, second = emu.requests
    assert first.body == second.body and "Example 1:" not in first.system


def test_async_client_shows_examples(emu: Emulator) -> None:
    emu.script(reply.answer(PRINTER_GOOD))
    client = guardrail.wrap(anthropic.AsyncAnthropic(base_url=emu.anthropic_base_url, api_key="t", timeout=5),
                            retry=PRINTER_RETRY)

    async def go() -> Any:
        return await client.messages.create(**printer_args("messages"), response_model=Ticket, examples=GOOD)

    assert asyncio.run(go()).priority == 5
    assert shown(emu.requests[0]) == SHOWN


# -- invalid examples ----------------------------------------------------------------------------------------------
INVALID = [
    ([{"title": "ok", "priority": 9}], 0, "$.priority"),  # out of bounds
    ([GOOD[0], {"title": "ok", "priority": "2"}], 1, "$.priority"),  # a string is no integer (strict)
    ([{"title": "ok", "priority": 1, "extra": True}], 0, "$.extra"),  # unknown key
    ([{"priority": 1}], 0, "$.title"),  # missing field
    ([{"title": "x", "priority": 1, "tags": ["a", 3]}], 0, "$.tags[1]"),
]


@pytest.mark.parametrize(("examples", "index", "path"), INVALID)
def test_an_invalid_example_fails_before_any_request(emu: Emulator, examples: list[Any], index: int,
                                                     path: str) -> None:
    method = api_method(wrapped_client(emu, "chat"), "chat")
    with pytest.raises(InvalidExample) as caught:
        method.create(**printer_args("chat"), response_model=Ticket, examples=examples)
    assert (caught.value.index, caught.value.path) == (index, path)
    assert f"examples[{index}]" in str(caught.value) and path in str(caught.value)
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, TypeError)
    assert emu.requests == []


def test_an_example_of_another_type_or_without_json_is_invalid() -> None:
    class Other(BaseModel):
        name: str

    with pytest.raises(InvalidExample, match=r"examples\[0\]"):
        checked(Ticket, [Other(name="x")])
    with pytest.raises(InvalidExample, match=r"examples\[0\].*\$"):
        checked(Ticket, [object()])
    with pytest.raises(InvalidExample, match=r"\$\.start"):  # no NaN/infinity: JSON has none
        checked(TimeSpan, [{"start": float("nan"), "end": 1.0}])
    with pytest.raises(UsageError, match="list of values"):
        checked(Ticket, "not a list")  # type: ignore[arg-type]


def test_a_json_schema_contract_takes_plain_examples(emu: Emulator) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}, "required": ["n"],
              "additionalProperties": False}
    assert checked(schema, [{"n": 2}]) == ('{"n":2}',)
    with pytest.raises(InvalidExample) as caught:
        checked(schema, [{"n": 2}, {"n": 7}])
    assert (caught.value.index, caught.value.path) == (1, "$.n")


# -- the decorator and the chain -----------------------------------------------------------------------------------
def test_the_decorator_checks_examples_when_it_decorates(emu: Emulator) -> None:
    with pytest.raises(InvalidExample) as caught:
        @guardrail.structured(client=openai.OpenAI(base_url=emu.openai_base_url, api_key="t"), model="gpt-4o",
                              examples=[GOOD[0], {"title": "t"}])
        def triage(text: str) -> Ticket:
            """Triage an office ticket."""

    assert (caught.value.index, caught.value.path) == (1, "$.priority")
    assert emu.requests == []


@pytest.mark.parametrize("api", ["chat", "messages"])
def test_the_decorator_shows_its_examples(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_GOOD))
    client: Any = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="t", timeout=5) if api == "messages" \
        else openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5)

    @guardrail.structured(client=client, model="claude-haiku-4-5" if api == "messages" else "gpt-4o",
                          examples=GOOD, max_tokens=300)
    def triage(text: str) -> Ticket:
        """Triage an office ticket."""

    assert triage("the printer is on fire").priority == 5
    (request,) = emu.requests
    assert shown(request) == SHOWN
    no_made_up_turns(request)


def test_a_method_decorated_with_examples_keeps_them(emu: Emulator) -> None:
    emu.script(reply.answer(PRINTER_GOOD))

    class Desk:
        @guardrail.structured(client=openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5),
                              model="gpt-4o", examples=GOOD[:1])
        def triage(self, text: str) -> Ticket:
            """Triage an office ticket."""

    Desk().triage("fire")
    assert shown(emu.requests[0]) == SHOWN[:1]


def test_the_chain_checks_examples_before_any_tier(emu: Emulator) -> None:
    chain = Chain([vendor(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), "gpt-4o")])
    with pytest.raises(InvalidExample) as caught:
        chain.run(Ticket, system="Triage.", user="fire", examples=[{"title": "t", "priority": 0}])
    assert (caught.value.index, caught.value.path) == (0, "$.priority")
    assert emu.requests == []


def test_the_chain_shows_examples_to_its_vendor_tiers(emu: Emulator) -> None:
    emu.script(reply.answer(PRINTER_GOOD), reply.answer(PRINTER_GOOD))
    chain = Chain([vendor(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), "gpt-4o")])
    assert chain.run(Ticket, system="Triage.", user="fire", examples=GOOD).value.priority == 5
    value = chain.create(response_model=Ticket, messages=[{"role": "user", "content": "fire"}], examples=GOOD[1:])
    assert value.priority == 5
    first, second = emu.requests
    assert shown(first) == SHOWN and shown(second) == SHOWN[1:]


def test_the_chain_local_tier_prompt_holds_the_examples() -> None:
    from guardrail.call.examples import examples_prompt

    prompt = examples_prompt("Triage: fire", Ticket, GOOD)
    assert prompt.startswith("Triage: fire\n\n")
    assert [json.loads(text) for _, text in _EXAMPLE.findall(prompt)] == SHOWN
    assert examples_prompt("Triage: fire", Ticket, ()) == "Triage: fire"


# -- the response cache ------------------------------------------------------------------------------------------
def test_examples_are_part_of_the_cache_key(emu: Emulator, tmp_path: Any) -> None:
    emu.script(reply.answer(PRINTER_GOOD), reply.answer(PRINTER_GOOD), reply.answer(PRINTER_GOOD))
    cache = guardrail.Cache(SQLiteStore(str(tmp_path / "cache.db")))
    method = api_method(wrapped_client(emu, "chat", cache=cache), "chat")
    results = [method.create_with_result(**printer_args("chat"), response_model=Ticket, examples=examples)
               for examples in (GOOD, GOOD, GOOD[:1], [dict(SHOWN[0]), SHOWN[1]])]
    assert [r.cached for r in results] == [False, True, False, True]  # the same examples as dicts: the same key
    assert len(emu.requests) == 2


# -- property: any valid value round-trips into the prompt -------------------------------------------------------
class Item(BaseModel):
    name: str = Field(alias="Name")
    score: float = Field(ge=-1e6, le=1e6)
    counts: dict[str, int] = {}
    note: str | None = None


items = st.builds(Item, Name=st.text(), score=st.floats(-1e6, 1e6, allow_nan=False),
                  counts=st.dictionaries(st.text(max_size=5), st.integers(-2**53, 2**53), max_size=3),
                  note=st.none() | st.text())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(items, min_size=1, max_size=3), st.sampled_from(["tool", "json", "prompt"]))  # dict: no strict
def test_any_valid_example_round_trips_into_the_prompt(emu: Emulator, examples: list[Item], mode: str) -> None:
    emu.reset()
    emu.script(reply.answer('{"Name": "n", "score": 0}'))
    method = api_method(wrapped_client(emu, "chat"), "chat")
    method.create(**printer_args("chat"), response_model=Item, mode=mode, examples=examples)
    (request,) = emu.requests
    assert [Item.model_validate(value) for value in shown(request)] == examples


# -- a LocalModel ----------------------------------------------------------------------------------------------------
def test_local_model_generation_takes_examples() -> None:
    from guardrail.call.examples import examples_prompt
    from guardrail.local import Regex
    from guardrail.testing.tiny import tiny_local_model

    local = tiny_local_model()
    with pytest.raises(InvalidExample) as caught:
        local.generate("Ticket:", Ticket, examples=[{"title": "t", "priority": 6}], seed=0)
    assert (caught.value.index, caught.value.path) == (0, "$.priority")
    with pytest.raises(UsageError, match="examples"):
        local.generate("Code:", Regex("[a-z]+"), examples=["abc"], seed=0)

    class Small(BaseModel):
        ok: bool
        n: int = Field(ge=0, le=9)

    few = [Small(ok=True, n=3), {"ok": False, "n": 0}]
    shown_after, trace = local.generate_with_trace("Answer:", Small, examples=few, seed=3)
    same, same_trace = local.generate_with_trace(examples_prompt("Answer:", Small, few), Small, seed=3)
    assert shown_after == same and trace.tokens == same_trace.tokens  # the examples follow the prompt


def test_a_chain_local_tier_takes_the_chain_examples() -> None:
    from guardrail.testing.tiny import tiny_local_model

    class Small(BaseModel):
        ok: bool
        n: int = Field(ge=0, le=9)

    chain = Chain([tiny_local_model()])
    with pytest.raises(InvalidExample):
        chain.run(Small, system="Judge.", user="late?", examples=[{"ok": True, "n": 10}])
    result = chain.run(Small, system="Judge.", user="late?", examples=[Small(ok=True, n=1)])
    assert isinstance(result.value, Small) and result.tier == "local"


def test_examples_are_part_of_the_recorded_request_hash(emu: Emulator, tmp_path: Any) -> None:
    path = tmp_path / "calls.jsonl"
    emu.script(*(reply.answer(PRINTER_GOOD) for _ in range(3)))
    method = api_method(wrapped_client(emu, "chat", record=str(path)), "chat")
    for examples in ((), GOOD, [dict(SHOWN[0]), SHOWN[1]]):
        method.create(**printer_args("chat"), response_model=Ticket, examples=examples)
    hashes = [json.loads(line)["request_hash"] for line in path.read_text().splitlines()]
    assert len(hashes) == 3 and hashes[0] != hashes[1] == hashes[2]


def test_a_non_finite_number_is_never_turned_into_another_value() -> None:
    class Reading(BaseModel):
        values: list[float | None]
        label: float | str

    with pytest.raises(InvalidExample) as caught:  # null would be valid there: the example is refused, not changed
        checked(Reading, [Reading(values=[1.0, float("inf")], label=1.0)])
    assert (caught.value.index, caught.value.path) == (0, "$.values[1]")
    with pytest.raises(InvalidExample, match=r"\$\.label"):
        checked(Reading, [Reading(values=[], label=float("nan"))])
    assert checked(Reading, [Reading(values=[None], label="NaN")]) == ('{"values":[null],"label":"NaN"}',)


# -- items as they arrive: the examples are items, shown as one list ---------------------------------------------
LISTED = json.dumps({"items": [{"title": "Printer on fire", "priority": 5}]})


@pytest.mark.parametrize("mode", ["native", "json"])
def test_create_iterable_shows_its_item_examples_as_one_list(emu: Emulator, mode: str) -> None:
    emu.script(reply.answer(LISTED))
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
    items = list(client.chat.completions.create_iterable(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                                         response_model=Ticket, examples=GOOD, mode=mode))
    assert [item.priority for item in items] == [5]
    (request,) = emu.requests
    assert shown(request) == [{"items": SHOWN}]


def test_create_iterable_names_the_invalid_item_example_before_any_request(emu: Emulator) -> None:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
    with pytest.raises(InvalidExample) as caught:
        client.chat.completions.create_iterable(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                                response_model=Ticket, examples=[GOOD[0], {"title": "t"}])
    assert (caught.value.index, caught.value.path) == (1, "$.priority")
    assert emu.requests == []


def test_iterate_on_a_list_function_shows_the_items_of_its_list_examples(emu: Emulator) -> None:
    emu.script(reply.answer(LISTED))

    @guardrail.structured(client=openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5),
                          model="gpt-4o", examples=[[GOOD[0]], [GOOD[1]]])
    def tickets(text: str) -> list[Ticket]:
        """The office tickets in a text."""

    assert [item.title for item in tickets.iterate("the printer is on fire")] == ["Printer on fire"]
    (request,) = emu.requests
    assert shown(request) == [{"items": SHOWN}]


# -- chunked generation: the examples are values of the caller's contract, shown with the prompt ---------------
def test_create_chunked_shows_its_list_examples_with_the_prompt(emu: Emulator) -> None:
    from guardrail.call import Chunking

    emu.script(reply.answer(json.dumps({"items": [{"title": "Printer on fire", "priority": 5}], "done": True})))
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
    done = client.chat.completions.create_chunked(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                                  response_model=list[Ticket], examples=[GOOD[:1], GOOD[1:]],
                                                  chunking=Chunking(key="title", max_items=1))
    assert [item.priority for item in done.value] == [5]
    (request,) = emu.requests
    user = "".join(str(m.get("content")) for m in request.messages if m.get("role") == "user")
    assert [json.loads(text) for _, text in _EXAMPLE.findall(user)] == [SHOWN[:1], SHOWN[1:]]


def test_create_chunked_names_the_invalid_item_example_before_any_request(emu: Emulator) -> None:
    from guardrail.call import Chunking

    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
    with pytest.raises(InvalidExample) as caught:
        client.chat.completions.create_chunked(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                               response_model=Ticket, examples=[GOOD[0], {"title": "t"}],
                                               chunking=Chunking(key="title"))
    assert (caught.value.index, caught.value.path) == (1, "$.priority")
    assert emu.requests == []


# -- reasoning first: the examples are answers, shown with the reasoning field first in "field" mode -------------
def test_reason_first_field_shows_the_examples_with_the_reasoning_field_first(emu: Emulator) -> None:
    from guardrail.call.reasoning import EXAMPLE_REASONING

    emu.script(reply.answer(json.dumps({"reasoning": "it burns", "title": "Printer on fire", "priority": 5})))
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
    done = client.chat.completions.create_with_result(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                                      response_model=Ticket, examples=GOOD, reason_first="field")
    assert (done.value.priority, done.reasoning) == (5, "it burns")
    (request,) = emu.requests
    assert shown(request) == [{"reasoning": EXAMPLE_REASONING, **item} for item in SHOWN]
    assert [next(iter(item)) for item in shown(request)] == ["reasoning", "reasoning"]  # the field comes first


def test_reason_first_field_names_the_invalid_example_as_given(emu: Emulator) -> None:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
    with pytest.raises(InvalidExample) as caught:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                       response_model=Ticket, examples=[GOOD[0], {"title": "t"}],
                                       reason_first="field")
    assert (caught.value.index, caught.value.path) == (1, "$.priority")
    assert emu.requests == []
