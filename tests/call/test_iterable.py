"""``create_iterable``: a list's items, each yielded as soon as it is complete and validated, on every endpoint
(OpenAI Chat Completions and Responses, Anthropic Messages, Gemini), sync and async, through the real SDKs and the
emulator: items arrive while the answer still streams, a cut-off or invalid item re-asks only for the rest, no
item is ever yielded twice or half; the reader of finished members (``ItemSpans``) as a property."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from google import genai
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from support.calls import api_method, printer_args, wrapped_client

import guardrail
from guardrail.call.iterable import ItemStream, item_type_of, list_contract
from guardrail.errors import BudgetExceeded, OutputTruncated, SemanticRejected, UsageError
from guardrail.gates.semantic import rule
from guardrail.outcome import Usage
from guardrail.parse.items import ItemSpans
from guardrail.testing import Emulator, reply
from guardrail.testing.recording import RecordedRequest

APIS = ["chat", "responses", "messages", "gemini"]
SYNC_ASYNC = [pytest.param(False, id="sync"), pytest.param(True, id="async")]
FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.1, deadline=20)


class Segment(BaseModel):
    """A video segment: the list item of these tests."""

    title: str
    start: float = Field(ge=0)
    end: float = Field(ge=0)


def segments(count: int) -> list[dict[str, Any]]:
    return [{"title": f"segment {i} \u00e9 \\ \"q\"", "start": i * 10.0, "end": i * 10.0 + 9.5} for i in range(count)]


def answer_of(items: list[Any]) -> str:
    return json.dumps({"items": items})


def kept(request: RecordedRequest) -> int:
    """How many items a request says were kept (0 for a first request)."""
    found = re.search(r"The (\d+) items? above (?:are|is) kept", json.dumps(request.body))
    return int(found.group(1)) if found else 0


def continuing(items: list[dict[str, Any]]) -> Callable[[RecordedRequest], Any]:
    """An emulated model that honours a continuation: it answers the items after those the request kept."""
    def respond(request: RecordedRequest) -> Any:
        return reply.answer(answer_of(items[kept(request):]))
    return respond


def open_stream(emu: Emulator, api: str, is_async: bool, **kwargs: Any) -> Any:
    """``create_iterable`` (Gemini: ``generate_content_iterable``) for a list of :class:`Segment`."""
    kwargs.setdefault("response_model", Segment)
    if api == "gemini":
        sdk = genai.Client(api_key="test", http_options=types.HttpOptions(base_url=emu.gemini_base_url, timeout=10000))
        client = guardrail.wrap(sdk, retry=FAST)
        models = client.aio.models if is_async else client.models
        return models.generate_content_iterable(model="gemini-2.5-flash", contents="List the segments.", **kwargs)
    client = wrapped_client(emu, api, is_async=is_async, retry=FAST, timeout=10)
    return api_method(client, api).create_iterable(**printer_args(api, max_tokens=4000) if api == "messages"
                                                   else printer_args(api), **kwargs)


def drain(emu: Emulator, api: str, is_async: bool, seen: list[Any] | None = None, stop_after: int | None = None,
          **kwargs: Any) -> tuple[list[Any], Any]:
    """Iterate a stream to its end (or ``stop_after`` items, then close it); the items and the stream. Items are
    also put in ``seen`` as they come, for a test that expects the stream to raise."""
    seen = [] if seen is None else seen

    def take(item: Any) -> bool:
        seen.append(item)
        return stop_after is not None and len(seen) >= stop_after

    if not is_async:
        stream = open_stream(emu, api, False, **kwargs)
        with stream:
            for item in stream:
                if take(item):
                    break
        return seen, stream

    async def go() -> Any:
        stream = open_stream(emu, api, True, **kwargs)
        async with stream:
            async for item in stream:
                if take(item):
                    break
        return stream

    return seen, asyncio.run(go())


def expected(items: list[dict[str, Any]]) -> list[Segment]:
    return [Segment(**item) for item in items]


# -- the whole list ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", SYNC_ASYNC)
@pytest.mark.parametrize("api", APIS)
def test_items_are_the_list_in_one_streamed_request(emu: Emulator, api: str, is_async: bool) -> None:
    items = segments(6)
    emu.script(reply.answer(answer_of(items), usage=(50, 120)))
    got, stream = drain(emu, api, is_async)
    assert got == expected(items)
    assert all(isinstance(item, Segment) for item in got)
    assert stream.result.value == got and stream.value == got
    assert stream.result.usage == Usage(input_tokens=50, output_tokens=120) == stream.usage
    assert len(emu.requests) == 1 and len(stream.result.attempts) == 1


@pytest.mark.parametrize("is_async", SYNC_ASYNC)
@pytest.mark.parametrize("api", APIS)
def test_the_first_item_comes_while_the_answer_still_streams(emu: Emulator, api: str, is_async: bool) -> None:
    """The server trickles a long answer; the test takes one item and closes the stream. The server sees the
    client hang up before its body was all sent: the item was handed over before the answer ended."""
    items = segments(60)
    emu.script(reply.answer(answer_of(items)).trickled(0.02, piece=512))
    got, stream = drain(emu, api, is_async, stop_after=1)
    assert got == expected(items[:1])
    assert emu.wait_closed_early(1, timeout=10)
    assert stream.result is None


# -- what is missing, and only that ---------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", SYNC_ASYNC)
@pytest.mark.parametrize("api", APIS)
def test_an_answer_cut_mid_item_yields_whole_items_and_asks_for_the_rest(emu: Emulator, api: str,
                                                                          is_async: bool) -> None:
    items = segments(5)
    text = answer_of(items)
    cut_at = text.index('"title": "segment 3') + 12  # inside the fourth item
    emu.script(reply.truncated(text[:cut_at], usage=(40, 30)), reply.answer(answer_of(items[3:]), usage=(70, 25)))
    seen: list[Any] = []
    got, stream = drain(emu, api, is_async, seen)
    assert got == expected(items)
    assert len(emu.requests) == 2 and kept(emu.requests[1]) == 3
    asked = json.dumps(emu.requests[1].body)
    assert "segment 2" in asked and "segment 3" not in asked  # the whole items kept, never the cut one
    assert stream.result.usage == Usage(input_tokens=110, output_tokens=55)
    assert [attempt.number for attempt in stream.result.attempts] == [1, 2]
    assert stream.result.attempts[0].error_kind == "truncated"


@pytest.mark.parametrize("is_async", SYNC_ASYNC)
@pytest.mark.parametrize("api", APIS)
def test_a_connection_lost_mid_answer_continues_after_the_items_yielded(emu: Emulator, api: str,
                                                                        is_async: bool) -> None:
    items = segments(8)
    emu.script(reply.cut(answer_of(items), 0.6))
    emu.responder = continuing(items)
    got, stream = drain(emu, api, is_async)
    assert got == expected(items) == stream.result.value  # each once, in order, whatever the cut left
    continued = [kept(request) for request in emu.requests]
    assert continued[0] == 0 and continued[-1] > 0 and len(emu.requests) == 2


@pytest.mark.parametrize("api", APIS)
def test_a_try_lost_before_any_item_is_sent_again_and_yields_each_item_once(emu: Emulator, api: str) -> None:
    items = segments(4)
    emu.script(reply.cut(answer_of(items), 0.05), reply.answer(answer_of(items)))
    got, stream = drain(emu, api, False)
    assert got == expected(items)
    assert [kept(request) for request in emu.requests] == [0, 0]  # the same request again: nothing was yielded
    assert len(stream.result.attempts) == 1 and stream.result.attempts[0].vendor_calls == 2


@pytest.mark.parametrize("is_async", SYNC_ASYNC)
def test_an_error_event_mid_answer_continues_after_the_items_yielded(emu: Emulator, is_async: bool) -> None:
    items = segments(4)
    text = answer_of(items)
    emu.script(reply.stream_error(text[:text.index("segment 2")]), reply.answer(answer_of(items[2:])))
    got, _ = drain(emu, "messages", is_async)
    assert got == expected(items) and kept(emu.requests[1]) == 2


@pytest.mark.parametrize("is_async", SYNC_ASYNC)
@pytest.mark.parametrize("api", APIS)
def test_an_invalid_item_re_asks_for_the_rest_with_its_problem(emu: Emulator, api: str, is_async: bool) -> None:
    items = segments(5)
    bad = [*items[:2], {"title": "broken", "start": -5, "end": 1}, *items[3:]]
    emu.script(reply.answer(answer_of(bad)), reply.answer(answer_of(items[2:])))
    got, stream = drain(emu, api, is_async)
    assert got == expected(items)
    assert kept(emu.requests[1]) == 2 and stream.result.attempts[0].error is not None
    asked = json.dumps(emu.requests[1].body)
    assert "start" in asked and "greater than or equal to 0" in asked and "segment 3" not in asked


def test_a_first_item_that_fails_asks_for_the_whole_list_with_the_answer_replayed(emu: Emulator) -> None:
    items = segments(3)
    first = answer_of([{"title": "broken", "start": -1, "end": 1}, *items[1:]])
    emu.script(reply.answer(first), reply.answer(answer_of(items)))
    got, _ = drain(emu, "chat", False)
    assert got == expected(items)
    replayed, asked = emu.requests[1].body["messages"][-2:]
    assert replayed == {"role": "assistant", "content": first}
    assert "Item 1 of the list" in asked["content"] and "Reply with the whole list" in asked["content"]


@pytest.mark.parametrize("is_async", SYNC_ASYNC)
@pytest.mark.parametrize("api", ["chat", "gemini"])
def test_an_item_that_breaks_a_rule_re_asks_for_the_rest(emu: Emulator, api: str, is_async: bool) -> None:
    items = segments(4)
    backwards = [*items[:1], {"title": "backwards", "start": 30.0, "end": 2.0}, *items[2:]]
    emu.script(reply.answer(answer_of(backwards)), reply.answer(answer_of(items[1:])))
    ordered = rule(lambda item, _: [] if item.end >= item.start else ["end must not come before start"],
                   name="ordered")
    got, _ = drain(emu, api, is_async, rules=[ordered])
    assert got == expected(items)
    assert kept(emu.requests[1]) == 1 and "end must not come before start" in json.dumps(emu.requests[1].body)


def test_a_rule_that_ends_the_call_ends_the_iteration_after_the_good_items(emu: Emulator) -> None:
    items = segments(4)
    emu.script(reply.answer(answer_of([*items[:2], {"title": "x", "start": 9.0, "end": 1.0}])))
    ordered = rule(lambda item, _: [] if item.end >= item.start else ["backwards"], name="ordered", on_fail="end")
    seen: list[Any] = []
    with pytest.raises(SemanticRejected):
        drain(emu, "chat", False, seen, rules=[ordered])
    assert seen == expected(items[:2])


def test_requests_are_bounded_by_max_attempts(emu: Emulator) -> None:
    items = segments(6)
    text = answer_of(items)
    emu.script(reply.truncated(text[:text.index("segment 1")]), reply.truncated('{"items": [{"title": "segm'),
               reply.truncated('{"items": ['))
    seen: list[Any] = []
    with pytest.raises(OutputTruncated) as raised:
        drain(emu, "responses", False, seen, max_attempts=3)
    assert seen == expected(items[:1])
    assert len(emu.requests) == 3 and len(raised.value.outcome.attempts) == 3


def test_the_budget_holds_across_requests(emu: Emulator) -> None:
    items = segments(4)
    text = answer_of(items)
    emu.script(reply.truncated(text[:text.index("segment 2")], usage=(100, 100)))
    seen: list[Any] = []
    with pytest.raises(BudgetExceeded) as raised:
        drain(emu, "chat", False, seen, budget=guardrail.Budget(max_tokens=250))
    assert seen == expected(items[:2]) and len(emu.requests) == 1  # the rest was never asked for: no room left
    assert raised.value.outcome.usage == Usage(input_tokens=100, output_tokens=100)


def test_the_mode_of_the_first_request_is_kept_and_tool_mode_replays_a_tool_call(emu: Emulator) -> None:
    items = segments(4)
    text = answer_of(items)
    emu.script(reply.truncated(text[:text.index("segment 2")]), reply.answer(answer_of(items[2:])))
    got, stream = drain(emu, "messages", False, mode="tool")
    assert got == expected(items)
    assert [attempt.mode for attempt in stream.result.attempts] == ["tool", "tool"]
    replayed = emu.requests[1].body["messages"][-2]["content"][0]
    assert replayed["type"] == "tool_use" and replayed["input"] == {"items": items[:2]}


def test_an_empty_list_is_an_empty_iteration(emu: Emulator) -> None:
    emu.script(reply.answer('{"items": []}'))
    got, stream = drain(emu, "chat", False)
    assert got == [] and stream.result.value == []


def test_without_response_model_and_on_gemini_names(emu: Emulator) -> None:
    client = wrapped_client(emu, "chat")
    with pytest.raises(UsageError):
        client.chat.completions.create_iterable(model="gpt-4o", messages=[])
    gemini = guardrail.wrap(genai.Client(api_key="test", http_options=types.HttpOptions(base_url=emu.gemini_base_url)))
    with pytest.raises(AttributeError):
        _ = gemini.models.create_iterable
    assert callable(gemini.models.generate_content_iterable)


def test_a_mistake_in_the_arguments_raises_where_the_stream_is_made(emu: Emulator) -> None:
    client = wrapped_client(emu, "chat")
    with pytest.raises(UsageError):
        client.chat.completions.create_iterable(model="gpt-4o", messages=[], response_model=Segment,
                                                response_format={"type": "json_object"})
    assert emu.requests == []


# -- the decorator ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", SYNC_ASYNC)
def test_iterate_on_a_decorated_function(emu: Emulator, is_async: bool) -> None:
    items = segments(3)
    emu.script(reply.answer(answer_of(items)))
    client = wrapped_client(emu, "chat", is_async=is_async, retry=FAST)

    if not is_async:
        @guardrail.structured(client=client, model="gpt-4o")
        def cut(transcript: str) -> list[Segment]:
            """Cut the transcript into segments."""

        stream = cut.iterate("a long talk")
        assert isinstance(stream, ItemStream)
        assert list(stream) == expected(items)
    else:
        @guardrail.structured(async_client=client, model="gpt-4o")
        async def acut(transcript: str) -> list[Segment]:
            """Cut the transcript into segments."""

        async def go() -> list[Any]:
            return [item async for item in acut.iterate("a long talk")]

        assert asyncio.run(go()) == expected(items)
    assert "a long talk" in json.dumps(emu.requests[0].body)


def test_item_type_of_a_contract() -> None:
    assert item_type_of(list[Segment]) is Segment
    assert item_type_of(Segment) is Segment
    assert item_type_of(dict[str, int]) == dict[str, int]
    assert list_contract(Segment) is list_contract(Segment)
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "integer"}}}
    wrapped = list_contract(schema)
    assert wrapped["$defs"] == schema["$defs"] and "$defs" not in wrapped["properties"]["items"]["items"]


# -- properties ------------------------------------------------------------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12)


def pieces_of(text: str, sizes: list[int]) -> list[str]:
    out, at = [], 0
    for size in sizes:
        if at >= len(text):
            break
        out.append(text[at:at + size])
        at += size
    if at < len(text):
        out.append(text[at:])
    return out


@given(st.lists(json_values, max_size=6), st.lists(st.integers(1, 9), max_size=60), st.data())
@settings(max_examples=300, deadline=None)
def test_item_spans_give_exactly_the_finished_members(values: list[Any], sizes: list[int], data: Any) -> None:
    text = json.dumps({"before": ["]", "{"], "items": values, "after": 1}, ensure_ascii=data.draw(st.booleans()))
    spans = ItemSpans()
    found = [member for piece in pieces_of(text, sizes) for member in spans.feed(piece)]
    assert [json.loads(member) for member in found] == values and spans.ended
    cut = data.draw(st.integers(0, len(text)))  # a prefix: only whole members, each as it is in the list
    spans = ItemSpans()
    partial = [member for piece in pieces_of(text[:cut], sizes) for member in spans.feed(piece)]
    assert [json.loads(member) for member in partial] == values[:len(partial)]


titles = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
segment_dicts = st.builds(lambda title, start, length: {"title": title, "start": start, "end": start + length},
                          titles, st.integers(0, 1000).map(float), st.integers(0, 100).map(float))


@given(st.lists(segment_dicts, max_size=8), st.integers(1, 40), st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_yielded_items_are_the_list_however_the_answer_is_cut(emu: Emulator, items: list[dict[str, Any]],
                                                                  chars: int, data: Any) -> None:
    emu.reset()
    text = answer_of(items)
    cut = data.draw(st.integers(0, len(text)))
    emu.script(reply.truncated(text[:cut]).streamed_in(chars))
    emu.responder = lambda request: reply.answer(answer_of(items[kept(request):])).streamed_in(chars)
    got, _ = drain(emu, "chat", False)
    assert got == expected(items)
