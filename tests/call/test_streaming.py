"""Streaming partial objects: previews while the vendor streams, then the validated value; never a partial result.
Streamed structured calls on every endpoint, sync and async: repairs, truncation, refusals, mid-stream errors."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel
from support.calls import (
    APIS,
    PRINTER_BAD,
    PRINTER_GOOD,
    PRINTER_TICKET,
    Ticket,
    TimeSpan,
    api_method,
    printer_acall,
    printer_args,
    printer_call,
    wrapped_client,
)
from support.equality import same

import guardrail
from guardrail.call.streaming import PREVIEW_OVERHEAD, PREVIEW_PER_CHAR, PREVIEW_PER_PIECE, PREVIEW_START, Previewer
from guardrail.errors import OutputTruncated
from guardrail.outcome import Partial
from guardrail.parse.incremental import GrowingJSON
from guardrail.parse.partial import MAX_PREVIEW_DEPTH, preview
from guardrail.testing import Emulator, reply
from guardrail.vendors.base import Pieces
from guardrail.vendors.registry import endpoint_named


class TaggedTicket(BaseModel):
    urgency: int
    summary: str
    tags: list[str]


GOOD = '{"urgency": 4, "summary": "The parcel is two weeks late and the customer wants a refund", "tags": ["a", "b"]}'
FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.2, deadline=10)


def clients(emu: Emulator) -> dict[str, Any]:
    oai = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5), retry=FAST)
    claude = guardrail.wrap(anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5),
                            retry=FAST)
    return {
        "chat": lambda **kw: oai.chat.completions.create_partial(
            model="gpt-4o", messages=[{"role": "user", "content": "go"}], response_model=TaggedTicket, **kw),
        "responses": lambda **kw: oai.responses.create_partial(model="gpt-4o", input="go", response_model=TaggedTicket,
                                                               **kw),
        "messages": lambda **kw: claude.messages.create_partial(
            model="claude-sonnet-5-5", messages=[{"role": "user", "content": "go"}], response_model=TaggedTicket,
            **{"max_tokens": 500, **kw}),
    }


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("mode", ["native", "tool"])
def test_previews_grow_then_the_last_item_is_the_validated_value(emu: Emulator, api: str, mode: str) -> None:
    emu.script(reply.answer(GOOD))
    stream = clients(emu)[api](mode=mode)
    items = list(stream)
    *previews, final = items
    assert final == TaggedTicket.model_validate_json(GOOD)
    assert previews and all(isinstance(p, Partial) and p.partial for p in previews)
    assert all(not isinstance(p, TaggedTicket) for p in previews)
    summaries = [p.data.get("summary", "") for p in previews if isinstance(p.data, dict)]
    assert any(0 < len(s) < len(final.summary) for s in summaries)  # a string value shown while being written
    assert all(GOOD.startswith(p.text) for p in previews)
    assert stream.result is not None and stream.result.value == final and stream.value == final
    assert emu.requests[0].stream


def test_a_repair_attempt_starts_a_new_preview(emu: Emulator) -> None:
    emu.script(reply.answer('{"urgency": "high", "summary": "x", "tags": []}'), reply.answer(GOOD))
    items = list(clients(emu)["chat"]())
    attempts = [p.attempt for p in items if isinstance(p, Partial)]
    assert attempts[0] == 1 and attempts[-1] == 2 and attempts == sorted(attempts)
    assert items[-1] == TaggedTicket.model_validate_json(GOOD)


def test_a_stream_cut_off_ends_as_truncated_not_as_its_last_preview(emu: Emulator) -> None:
    emu.script(reply.truncated(GOOD[:40]), reply.truncated(GOOD[:60]))
    stream = clients(emu)["messages"](max_tokens=50)
    seen: list[Any] = []
    with pytest.raises(OutputTruncated):
        for item in stream:
            seen.append(item)
    assert seen and all(isinstance(p, Partial) for p in seen)
    assert stream.result is None
    with pytest.raises(RuntimeError):
        _ = stream.value


def test_refusal_while_streaming_is_refused(emu: Emulator) -> None:
    emu.script(reply.refusal("no"))
    with pytest.raises(guardrail.Refused):
        list(clients(emu)["responses"]())


def test_async_streams(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD), reply.answer(GOOD))

    async def main() -> tuple[list[Any], list[Any]]:
        oai = guardrail.wrap(openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5), retry=FAST)
        claude = guardrail.wrap(anthropic.AsyncAnthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5),
                                retry=FAST)
        first = [item async for item in oai.chat.completions.create_partial(
            model="gpt-4o", messages=[{"role": "user", "content": "go"}], response_model=TaggedTicket)]
        second = [item async for item in claude.messages.create_partial(
            model="claude-sonnet-5-5", max_tokens=300, messages=[{"role": "user", "content": "go"}],
            response_model=TaggedTicket)]
        return first, second

    first, second = asyncio.run(main())
    for items in (first, second):
        assert items[-1] == TaggedTicket.model_validate_json(GOOD)
        assert any(isinstance(p, Partial) for p in items[:-1])


# -- the preview function itself ---------------------------------------------------------------------------

values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                      lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=4),
                      max_leaves=20)


@given(st.dictionaries(st.text(max_size=5), values, max_size=5), st.data())
@pytest.mark.slow
def test_every_prefix_previews_to_something_consistent_with_the_whole(value: dict[str, Any], data: Any) -> None:
    text = json.dumps(value)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    shown = preview(text[:cut])
    assert shown is None or isinstance(shown, dict)
    if cut == len(text):
        assert shown == value
    elif isinstance(shown, dict):
        assert set(shown) <= set(value)  # never a key that is not in the answer


@given(st.text(max_size=300))
def test_preview_never_raises(text: str) -> None:
    preview(text)


def test_preview_of_deep_or_hostile_text_is_bounded() -> None:
    assert preview("[" * 100_000) is None
    assert preview('{"a": "' + "x" * 100_000) == {"a": "x" * 100_000}


# ---------------------------------------------------------------------- streamed structured calls on every endpoint


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("mode", ["native", "tool"])
def test_streamed_repair_truncation_and_result(emu: Emulator, api: str, is_async: bool, mode: str) -> None:
    emu.script(reply.truncated('{"title": "Pri'), reply.answer(PRINTER_BAD), reply.answer(PRINTER_GOOD))
    run = printer_acall if is_async else printer_call
    limit: dict[str, Any] = {"max_output_tokens": 40} if api == "responses" else {"max_tokens": 40}
    result = run(emu, api, stream=True, mode=mode, max_attempts=3, **limit)
    assert result.value == PRINTER_TICKET and result.mode == mode
    assert [r.stream for r in emu.requests] == [True, True, True]
    assert [r.max_tokens for r in emu.requests] == [40, 80, 80]
    assert [a.finish_reason is not None for a in result.attempts] == [True, True, True]
    assert result.attempts[0].error_kind == "truncated"
    assert result.usage.output_tokens == sum(a.usage.output_tokens for a in result.attempts) > 0
    assert "$.priority" in emu.requests[2].last_user_text


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_streamed_refusal_is_final(emu: Emulator, api: str, is_async: bool) -> None:
    emu.script(reply.refusal("Nope, not that."), reply.answer(PRINTER_GOOD))
    run = printer_acall if is_async else printer_call
    with pytest.raises(guardrail.Refused) as caught:
        run(emu, api, stream=True)
    assert caught.value.refusal == "Nope, not that."
    assert len(emu.requests) == 1


@pytest.mark.parametrize("api", APIS)
def test_async_mid_stream_error_is_retried(emu: Emulator, api: str) -> None:
    emu.script(reply.stream_error(text_before='{"title": '), reply.answer(PRINTER_GOOD))
    result = printer_acall(emu, api, stream=True)
    assert result.value == PRINTER_TICKET and result.vendor_calls == 2 and len(result.attempts) == 1


@pytest.mark.parametrize("api", APIS)
def test_a_fatal_stream_error_event_is_a_vendor_error_not_retried(emu: Emulator, api: str) -> None:
    emu.script(reply.stream_error(text_before='{"ti', type="invalid_request_error", message="bad"),
               reply.answer(PRINTER_GOOD))
    with pytest.raises(guardrail.VendorError):
        printer_call(emu, api, stream=True)
    assert len(emu.requests) == 1


@pytest.mark.parametrize("api", APIS)
def test_previews_of_a_wrapped_root_have_the_contracts_shape(emu: Emulator, api: str) -> None:
    emu.script(reply.answer('{"result": [{"start": 0, "end": 1.5}, {"start": 2, "end": 3}]}'))
    target = api_method(wrapped_client(emu, api), api)
    items = list(target.create_partial(response_model=list[TimeSpan], **printer_args(api)))
    assert items[-1] == [TimeSpan(start=0, end=1.5), TimeSpan(start=2, end=3)]
    previews = [item.data for item in items[:-1]]
    assert previews and all(isinstance(data, list) for data in previews)


@pytest.mark.parametrize("api", APIS)
def test_previews_then_a_validated_value(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_BAD), reply.answer(PRINTER_GOOD))
    target = api_method(wrapped_client(emu, api), api)
    stream = target.create_partial(response_model=Ticket, **printer_args(api))
    items = list(stream)
    assert items[-1] == PRINTER_TICKET and stream.result is not None and len(stream.result.attempts) == 2
    previews = items[:-1]
    assert all(p.partial for p in previews) and {p.attempt for p in previews} == {1, 2}
    assert all(r.stream for r in emu.requests)


# ------------------------------------------------------ previews in linear time: the reading carried across pieces

#: What models put inside string values: fences, braces, quotes, backslashes, comments, think tags, prose markers.
MARKERS = ["```json\n", "```", "{", "}", "[", "]", '"', "\\", "\\n", "//", "#", "<think>", "</think>",
           "Here is the JSON:", "\n", "\t", ",", ":", "é", "한국어", "😀", "\u2028", "\x00"]
content = st.lists(st.sampled_from(MARKERS) | st.text(max_size=6), max_size=6).map("".join)
scalar_values = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                 | content)
json_values = st.recursive(scalar_values, lambda inner: st.lists(inner, max_size=5)
                           | st.dictionaries(content, inner, max_size=5), max_leaves=25)
roots = st.lists(json_values, max_size=5) | st.dictionaries(content, json_values, max_size=5)
dumps = st.sampled_from([{}, {"ensure_ascii": False}, {"indent": 2}, {"separators": (",", ":")},
                         {"indent": 0, "ensure_ascii": False}])
chunk_sizes = st.lists(st.integers(min_value=1, max_value=16), min_size=1, max_size=40)


def cut(text: str, sizes: list[int]) -> list[str]:
    """``text`` in pieces of the given sizes, taken in turn."""
    pieces, at, turn = [], 0, 0
    while at < len(text):
        size = sizes[turn % len(sizes)]
        pieces.append(text[at:at + size])
        at, turn = at + size, turn + 1
    return pieces


def on_the_way(shown: Any, final: Any) -> bool:
    """Whether a preview is on the way to ``final``: every member but the last finished and equal, the last
    on its way, strings a prefix, nothing that is not in the answer."""
    if isinstance(shown, str) and isinstance(final, str):
        return final.startswith(shown)
    if isinstance(shown, list) and isinstance(final, list):
        return len(shown) <= len(final) and all(same(a, b) for a, b in zip(shown[:-1], final, strict=False)) and (
            not shown or on_the_way(shown[-1], final[len(shown) - 1]))
    if isinstance(shown, dict) and isinstance(final, dict):
        keys = list(final)[:len(shown)]
        return list(shown) == keys and all(same(shown[k], final[k]) for k in keys[:-1]) and (
            not keys or on_the_way(shown[keys[-1]], final[keys[-1]]))
    return same(shown, final)


def raw_newlines(text: str) -> str:
    """JSON text with the ``\\n``/``\\t`` escapes in its strings written as the raw characters (as models do)."""
    return re.sub(r"(?<!\\)((?:\\\\)*)\\([nt])", lambda m: m.group(1) + ("\n" if m.group(2) == "n" else "\t"), text)


def previews_while_growing(pieces: list[str]) -> tuple[GrowingJSON, list[tuple[str, Any]]]:
    """Feed ``pieces`` in turn; (text so far, preview) at every point where the reading is settled."""
    growing, text, seen = GrowingJSON(), "", []
    for piece in pieces:
        growing.feed(piece)
        text += piece
        if growing.settled:
            seen.append((text, growing.value()))
    return growing, seen


@given(roots, dumps, chunk_sizes)
def test_incremental_previews_are_the_whole_text_preview_and_on_the_way(value: Any, options: dict[str, Any],
                                                                        sizes: list[int]) -> None:
    text = json.dumps(value, **options)
    growing, seen = previews_while_growing(cut(text, sizes))
    for prefix, shown in seen:
        assert same(shown, preview(prefix)), prefix
        assert shown is None or on_the_way(shown, value), prefix
    assert growing.done and same(growing.value(), value)


@given(roots, chunk_sizes)
def test_raw_newlines_in_strings_are_kept_in_previews(value: Any, sizes: list[int]) -> None:
    text = raw_newlines(json.dumps(value, ensure_ascii=False))
    growing, seen = previews_while_growing(cut(text, sizes))
    for prefix, shown in seen:
        assert same(shown, preview(prefix)), prefix
        assert shown is None or on_the_way(shown, value), prefix
    assert growing.done and same(growing.value(), value)


@given(roots, st.sampled_from(["", "Here is the JSON:\n```json\n", "<think>no braces here</think>\n"]),
       st.sampled_from(["", "\n```", "\nDone. {not: json}"]), chunk_sizes)
def test_text_around_the_value_is_skipped(value: Any, before: str, after: str, sizes: list[int]) -> None:
    growing, seen = previews_while_growing(cut(before + json.dumps(value) + after, sizes))
    assert all(shown is None or on_the_way(shown, value) for _, shown in seen)
    assert growing.done and same(growing.value(), value)


@given(st.lists(st.sampled_from(MARKERS) | st.text(max_size=8) | st.sampled_from(['"', ":", "1", "-", "e", "tru"]),
                max_size=30), chunk_sizes)
def test_growing_json_never_raises_on_any_text(parts: list[str], sizes: list[int]) -> None:
    _, seen = previews_while_growing(cut("[" + "".join(parts), sizes))
    assert all(shown is None or isinstance(shown, list) for _, shown in seen)


def test_a_half_number_literal_or_escape_is_not_settled() -> None:
    for text in ('{"a": 12', '{"a": tr', '[1, -', '{"a": "x\\', '{"a": "x\\u00', '{"a": "\\ud83d'):
        growing = GrowingJSON()
        growing.feed(text)
        assert not growing.settled, text
    growing = GrowingJSON()
    growing.feed('{"a": "\\ud83d')
    growing.feed('\\ude00", "b": 12')
    assert growing.value() == {"a": "😀"}  # the pair made one character; 12 may go on
    growing.feed("3}")
    assert growing.done and growing.value() == {"a": "😀", "b": 123}


def test_what_is_not_json_stops_the_previews_and_deep_nesting_has_none() -> None:
    trailing = GrowingJSON()
    trailing.feed('{"a": [1, 2,], "b": {"c": 3,},}')
    assert trailing.done and trailing.value() == {"a": [1, 2], "b": {"c": 3}}  # a trailing comma is passed over
    for text in ('[1,,2]', '{,}', '[,1]', '{"a": }', '{"a" 1}', "{'a': 1}", '[1 2]', '{"a": 1]'):
        broken = GrowingJSON()
        broken.feed(text)
        assert broken.failed and broken.value() is None, text
    growing = GrowingJSON()
    growing.feed('{"a": 1 "b": 2, "c": 3}')
    assert growing.failed and not growing.settled and growing.value() is None
    deep = GrowingJSON()
    deep.feed("[" * (MAX_PREVIEW_DEPTH + 1))
    assert deep.failed and deep.value() is None


def test_previews_share_finished_members_but_never_change() -> None:
    growing = GrowingJSON()
    growing.feed('{"done": [1, 2], "open": [3, ')
    first = growing.value()
    growing.feed('4, 5], "s": "ab')
    second = growing.value()
    growing.feed('cd"}')
    assert first == {"done": [1, 2], "open": [3]} and second == {"done": [1, 2], "open": [3, 4, 5], "s": "ab"}
    assert growing.value() == {"done": [1, 2], "open": [3, 4, 5], "s": "abcd"}


@given(st.lists(st.lists(st.text(max_size=5), max_size=4), max_size=10))
def test_pieces_read_whole_after_any_appends(batches: list[list[str]]) -> None:
    pieces, expected = Pieces(), ""
    for batch in batches:
        for piece in batch:
            pieces.append(piece)
            expected += piece
        assert pieces.text() == expected and pieces.size == len(expected)


def _messages_events(text: str, sizes: list[int], tool: str | None) -> list[Any]:
    """The Anthropic SDK's own stream events for ``text`` (as the output tool's arguments when ``tool``)."""
    from anthropic.types import (
        InputJSONDelta,
        RawContentBlockDeltaEvent,
        RawContentBlockStartEvent,
        TextBlock,
        TextDelta,
        ToolUseBlock,
    )

    start = RawContentBlockStartEvent(type="content_block_start", index=0, content_block=(
        ToolUseBlock(type="tool_use", id="toolu_1", name=tool, input={}) if tool else TextBlock(type="text", text="")))
    deltas = [RawContentBlockDeltaEvent(type="content_block_delta", index=0, delta=(
        InputJSONDelta(type="input_json_delta", partial_json=piece) if tool
        else TextDelta(type="text_delta", text=piece))) for piece in cut(text, sizes)]
    return [start, *deltas]


def shown_while_streaming(events: list[Any], api: str, tool: str | None, wrapped: str | None = None) -> list[Partial]:
    """The previews the previewer makes of a stream of SDK events, read by the endpoint's accumulator."""
    accumulator = endpoint_named(api).accumulator(tool)
    show = Previewer(attempt=1, wrapped=wrapped)
    shown = []
    for event in events:
        accumulator.feed(event)
        if (item := show(accumulator)) is not None:
            shown.append(item)
    return shown


@given(roots, chunk_sizes, st.sampled_from([None, "answer"]))
def test_previews_of_a_stream_match_the_whole_text_preview_of_their_text(value: Any, sizes: list[int],
                                                                         tool: str | None) -> None:
    text = json.dumps(value, ensure_ascii=False)
    shown = shown_while_streaming(_messages_events(text, sizes, tool), "messages", tool)
    for item in shown:
        assert text.startswith(item.text) and item.attempt == 1
        assert same(item.data, preview(item.text)) and on_the_way(item.data, value)
    versions = [item.data for item in shown]
    assert all(not same(a, b) for a, b in itertools.pairwise(versions))  # each preview shows news


def test_previews_of_a_long_answer_come_at_a_bounded_rate() -> None:
    value = {"items": [{"n": i, "text": "word " * (i % 40)} for i in range(3000)]}
    text = json.dumps(value)
    shown = shown_while_streaming(_messages_events(text, [12], None), "messages", None)
    assert len(text) > 256 * 1024
    copied = sum(PREVIEW_OVERHEAD + len(item.text) for item in shown)
    pieces = -(-len(text) // 12)
    assert copied <= PREVIEW_START + PREVIEW_PER_PIECE * pieces + PREVIEW_PER_CHAR * len(text)  # linear in the answer
    gaps = [len(b.text) - len(a.text) for a, b in itertools.pairwise(shown)]
    assert len(shown[0].text) <= 12 and max(gaps) <= 1024  # and they keep coming to the end
    assert len(text) - len(shown[-1].text) <= 1024 and all(on_the_way(item.data, value) for item in shown[::50])


def test_a_tool_call_after_some_text_starts_the_preview_again() -> None:
    from openai.types.chat import ChatCompletionChunk

    def chunk(delta: dict[str, Any]) -> ChatCompletionChunk:
        return ChatCompletionChunk.model_validate({"id": "c", "object": "chat.completion.chunk", "created": 0,
                                                   "model": "m", "choices": [{"index": 0, "delta": delta}]})

    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "answer", "arguments": ""}}
    events = [chunk({"content": '{"note": "thinking'}), chunk({"tool_calls": [call]}),
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"urgency": 4, "su'}}]}),
              chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'mmary": "late"}'}}]})]
    shown = shown_while_streaming(events, "chat", "answer")
    assert [item.data for item in shown] == [{"note": "thinking"}, {"urgency": 4}, {"urgency": 4, "summary": "late"}]
    assert shown[-1].text == '{"urgency": 4, "summary": "late"}'


def test_previews_of_a_wrapped_root_show_the_wrapped_value() -> None:
    text = '{"result": [{"start": 0, "end": 1.5}, {"start": 2, "end": 3}]}'
    shown = shown_while_streaming(_messages_events(text, [5], None), "messages", None, wrapped="result")
    assert shown and all(isinstance(item.data, list) for item in shown)
    assert shown[-1].data == [{"start": 0, "end": 1.5}, {"start": 2, "end": 3}]


TRICKY = json.dumps({"urgency": 4, "summary": 'He said "late" \\ twice\n```json\n{"a": [1]}\n``` é 😀',
                     "tags": ["a,b", "}", "<think>"]})


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("mode", ["native", "tool"])
@pytest.mark.parametrize("size", [1, 5, 12])
def test_streamed_previews_over_the_wire_are_on_the_way_to_the_value(emu: Emulator, api: str, mode: str,
                                                                     size: int) -> None:
    emu.script(reply.answer(TRICKY).streamed_in(size))
    *previews, final = list(clients(emu)[api](mode=mode))
    answer = json.loads(TRICKY)
    assert final == TaggedTicket.model_validate(answer)
    assert len(previews) > len(TRICKY) // (4 * size)
    for item in previews:
        assert TRICKY.startswith(item.text) and same(item.data, preview(item.text)) and on_the_way(item.data, answer)
