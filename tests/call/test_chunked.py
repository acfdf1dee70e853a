"""Chunked generation (guardrail.call.chunked): a long list asked for in chunks through the real SDKs against the
emulator, each chunk's answer scripted: the end signal, overlapping duplicates dropped, conflicts and gaps re-asked
alone, a failing chunk re-asked alone, the maximum reached as a typed error, usage summed; through the decorator and a
chain; and a property: any list, split into any chunks with any overlaps, comes back exactly."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import guardrail
from guardrail.call.chunked import ChunkedResult, Chunking
from guardrail.chain.tiers import Chain, vendor
from guardrail.errors import ChunkingFailed, ChunkRejected, ChunksExhausted, Refused, UsageError
from guardrail.outcome import Usage
from guardrail.testing import Emulator, reply

FAST = guardrail.RetryPolicy(max_tries=1, initial_wait=0.01, max_wait=0.05, deadline=10)
MESSAGES = [{"role": "system", "content": "You segment videos."},
            {"role": "user", "content": "List the segments of the talk, with timings."}]


class Segment(BaseModel):
    index: int
    start: float
    end: float
    title: str


def segments(count: int, first: int = 0) -> list[Segment]:
    return [Segment(index=i, start=10.0 * i, end=10.0 * i + 9.5, title=f"part {i}") for i in range(first, count)]


def chunk(items: Sequence[Segment], done: bool, usage: tuple[int, int] = (100, 50)) -> reply.Reply:
    return reply.answer(json.dumps({"items": [s.model_dump() for s in items], "done": done}), usage=usage)


def consecutive(previous: Segment, item: Segment) -> bool:
    """The gap check: an index skipped."""
    return item.index != previous.index + 1


CHUNKING = Chunking(key="index", max_items=4, gap=consecutive)


def client(emu: Emulator) -> Any:
    return guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), retry=FAST)


def create(emu: Emulator, chunking: Chunking = CHUNKING, **extra: Any) -> ChunkedResult[Segment]:
    return client(emu).chat.completions.create_chunked(response_model=list[Segment], chunking=chunking,
                                                       messages=MESSAGES, model="gpt-4o", **extra)


def user_text(emu: Emulator, index: int) -> str:
    body = emu.requests[index].body
    return str(body["messages"][-1]["content"])


def test_the_list_comes_in_chunks_until_the_model_says_done(emu: Emulator) -> None:
    whole = segments(10)
    emu.script(chunk(whole[:4], False, (100, 40)), chunk(whole[4:8], False, (130, 41)),
               chunk(whole[8:], True, (160, 22)))
    result = create(emu)
    assert result.value == whole and result.complete
    assert result.usage == Usage(100 + 130 + 160, 40 + 41 + 22)
    assert (result.asks, len(result.chunks), result.dropped, len(result.attempts)) == (3, 3, 0, 3)
    assert result.usage == sum((c.usage for c in result.chunks), Usage())
    first, second = user_text(emu, 0), user_text(emu, 1)
    assert "List the segments" in first and "No items so far" in first and "at most 4 items" in first
    assert json.dumps(whole[3].model_dump(), separators=(",", ":")) in second  # the items so far travel on
    schema = emu.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["items"]["maxItems"] == 4 and "done" in schema["required"]


def test_overlapping_equal_items_are_dropped(emu: Emulator) -> None:
    whole = segments(7)
    emu.script(chunk(whole[:4], False), chunk(whole[2:7], True))  # 2 and 3 again, equal
    result = create(emu, Chunking(key="index", max_items=5, gap=consecutive))
    assert result.value == whole and result.dropped == 2 and result.asks == 2


def test_a_conflicting_duplicate_re_asks_that_chunk_alone(emu: Emulator) -> None:
    whole = segments(6)
    wrong = whole[3].model_copy(update={"title": "another title"})
    emu.script(chunk(whole[:4], False, (10, 1)), chunk([wrong, *whole[4:6]], True, (20, 2)),
               chunk(whole[4:6], True, (30, 3)))
    result = create(emu)
    assert result.value == whole and result.asks == 3 and len(result.chunks) == 2
    assert result.usage == Usage(60, 6)  # the rejected chunk's tokens count too
    reask = user_text(emu, 2)
    assert "could not be used" in reask and "index 3" in reask and "part 2" in reask


def test_a_conflict_that_persists_is_a_typed_error_with_the_items_kept(emu: Emulator) -> None:
    whole = segments(6)
    wrong = whole[3].model_copy(update={"title": "x"})
    emu.script(chunk(whole[:4], False), chunk([wrong], False), chunk([wrong], False))
    with pytest.raises(ChunkRejected) as caught:
        create(emu)
    assert caught.value.items == whole[:4] and len(caught.value.chunks) == 1
    assert caught.value.outcome.usage == Usage(300, 150)
    assert "differs" in caught.value.problems[0]


def test_a_gap_re_asks_the_chunk(emu: Emulator) -> None:
    whole = segments(8)
    emu.script(chunk(whole[:4], False), chunk(whole[5:8], True), chunk(whole[4:8], True))  # 4 left out first
    result = create(emu)
    assert result.value == whole and result.asks == 3
    assert "missing between the item with index 3 and the one with 5" in user_text(emu, 2)


def test_no_new_item_without_done_is_re_asked(emu: Emulator) -> None:
    whole = segments(5)
    emu.script(chunk(whole[:4], False), chunk(whole[2:4], False), chunk(whole[4:], True))
    result = create(emu)
    assert result.value == whole and result.asks == 3
    assert "no new item" in user_text(emu, 2)


def test_a_failing_chunk_is_re_asked_alone_and_the_earlier_chunks_are_kept(emu: Emulator) -> None:
    whole = segments(6)
    emu.script(chunk(whole[:4], False, (10, 10)),
               reply.answer('{"items": [{"index": "four"}], "done": false}', usage=(20, 20)),  # fails the contract
               chunk(whole[4:], True, (30, 30)))
    result = create(emu, max_attempts=1)
    assert result.value == whole and result.asks == 3
    assert result.usage == Usage(60, 60) and len(result.attempts) == 3
    assert "part 2" in user_text(emu, 2) and json.dumps(whole[3].model_dump(), separators=(",", ":")) in \
        user_text(emu, 2)


def test_a_chunk_that_keeps_failing_ends_with_its_cause(emu: Emulator) -> None:
    whole = segments(6)
    emu.script(chunk(whole[:4], False), reply.server_error(500), reply.server_error(500))
    with pytest.raises(ChunkingFailed) as caught:
        create(emu)
    assert caught.value.items == whole[:4]
    assert isinstance(caught.value.__cause__, guardrail.VendorUnavailable)


def test_the_maximum_reached_is_a_typed_error_never_a_short_list(emu: Emulator) -> None:
    whole = segments(12)
    emu.script(chunk(whole[:4], False), chunk(whole[4:8], False), chunk(whole[8:12], False))
    with pytest.raises(ChunksExhausted) as caught:
        create(emu, Chunking(key="index", max_items=4, max_chunks=3))
    assert caught.value.items == whole and caught.value.outcome.usage == Usage(300, 150)


def test_the_budget_covers_all_the_chunks(emu: Emulator) -> None:
    whole = segments(8)
    emu.script(chunk(whole[:4], False, (300, 400)), chunk(whole[4:], True, (300, 400)))
    with pytest.raises(ChunkingFailed) as caught:
        create(emu, budget=guardrail.Budget(max_tokens=900))  # the first chunk leaves 200: too few for another
    assert isinstance(caught.value.__cause__, guardrail.BudgetExceeded)
    assert caught.value.items == whole[:4] and len(emu.requests) == 1  # not asked again: the budget is spent


def test_a_refusal_ends_the_call_as_it_is(emu: Emulator) -> None:
    emu.script(chunk(segments(4), False), reply.refusal("no"))
    with pytest.raises(Refused):
        create(emu)
    assert len(emu.requests) == 2


def test_long_context_sends_the_keys_and_the_last_items(emu: Emulator) -> None:
    whole = segments(6)
    emu.script(chunk(whole[:4], False), chunk(whole[4:], True))
    result = create(emu, Chunking(key="index", max_items=4, context="keys", keep_last=1))
    assert result.value == whole
    second = user_text(emu, 1)
    assert "index values, in order:\n[0,1,2,3]" in second
    assert '"part 3"' in second and '"part 0"' not in second


def test_a_key_the_items_lack_is_a_config_error(emu: Emulator) -> None:
    emu.script(chunk(segments(2), True))
    with pytest.raises(guardrail.errors.ConfigError, match="no field 'id'"):
        create(emu, Chunking(key="id"))


def test_rules_cannot_be_combined_with_chunking(emu: Emulator) -> None:
    with pytest.raises(UsageError):
        create(emu, rules=[guardrail.rule(lambda value, context: True, name="any")])
    assert emu.requests == []


def test_anthropic_messages_async(emu: Emulator) -> None:
    whole = segments(5)
    emu.script(chunk(whole[:4], False, (7, 3)), chunk(whole[4:], True, (9, 4)))
    wrapped: Any = guardrail.wrap(anthropic.AsyncAnthropic(base_url=emu.anthropic_base_url, api_key="t", timeout=5),
                                  retry=FAST)
    result = asyncio.run(wrapped.messages.create_chunked(response_model=Segment, chunking=CHUNKING,
                                                         messages=MESSAGES, model="claude-sonnet-4-5",
                                                         max_tokens=500))
    assert result.value == whole and result.usage == Usage(16, 7)
    body = emu.requests[1].body
    assert body["system"].startswith("You segment videos.") and body["max_tokens"] == 500


def test_gemini_keeps_the_callers_config(emu: Emulator) -> None:
    from google import genai
    from google.genai import types

    whole = segments(5)
    emu.script(chunk(whole[:4], False, (7, 3)), chunk(whole[4:], True, (9, 4)))
    raw = genai.Client(api_key="t", http_options=types.HttpOptions(base_url=emu.gemini_base_url, timeout=5000))
    wrapped: Any = guardrail.wrap(raw, retry=FAST)
    result = wrapped.models.create_chunked(model="gemini-2.5-flash", response_model=Segment, chunking=CHUNKING,
                                           contents="List the segments.",
                                           config={"temperature": 0.25, "max_output_tokens": 700})
    assert result.value == whole and result.usage == Usage(16, 7)
    config = emu.requests[1].body["generationConfig"]
    assert config["temperature"] == 0.25 and config["maxOutputTokens"] == 700


@pytest.mark.usefixtures("clean_config")
def test_the_decorator_sync_and_async(emu: Emulator) -> None:
    whole = segments(6)

    @guardrail.structured(client=client(emu), model="gpt-4o", chunking=CHUNKING)
    def outline(talk: str) -> list[Segment]:
        """The segments of a talk, with timings."""
        raise AssertionError("never run")

    emu.script(chunk(whole[:4], False, (5, 5)), chunk(whole[4:], True, (6, 6)))
    assert outline("keynote") == whole
    assert 'talk = "keynote"' in user_text(emu, 0)
    with pytest.raises(UsageError):
        outline.stream("keynote")

    @guardrail.structured(async_client=openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5),
                          model="gpt-4o", chunking=CHUNKING)
    async def aoutline(talk: str) -> list[Segment]:
        """The segments of a talk, with timings."""
        raise AssertionError("never run")

    emu.script(chunk(whole[:4], False, (5, 5)), chunk(whole[4:], True, (6, 6)))
    result = asyncio.run(aoutline.with_result("keynote"))
    assert isinstance(result, ChunkedResult) and result.value == whole and result.usage == Usage(11, 11)


def test_a_chain_walks_each_chunk(emulators: tuple[Emulator, Emulator]) -> None:
    primary, backup = emulators
    whole = segments(6)
    chain = Chain([vendor(openai.OpenAI(base_url=primary.openai_base_url, api_key="t", timeout=5), "gpt-4o",
                          name="primary", max_attempts=1, retry=FAST),
                   vendor(anthropic.Anthropic(base_url=backup.anthropic_base_url, api_key="t", timeout=5),
                          "claude-sonnet-4-5", name="backup", retry=FAST)])
    primary.script(chunk(whole[:4], False, (10, 1)), reply.answer("not json", usage=(20, 2)))
    backup.script(chunk(whole[4:], True, (30, 3)))
    result = chain.run_chunked(list[Segment], chunking=CHUNKING, system="You segment videos.", user="The talk.")
    assert result.value == whole and result.asks == 2
    assert [c.tier for c in result.chunks] == ["primary", "backup"]
    assert result.usage == Usage(60, 6)  # the primary's failed answer is paid for too
    assert [p.provider for p in result.parts] == ["openai", "openai", "anthropic"]
    costs = [p.cost_usd for p in result.parts]  # each at its own vendor's price (the cost extra's table)
    assert None not in costs and result.cost_usd == pytest.approx(sum(c for c in costs if c is not None))
    assert result.cost_usd is not None and result.cost_usd > 0


def test_an_async_chain(emu: Emulator) -> None:
    whole = segments(5)
    chain = Chain([vendor(openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), "gpt-4o",
                          retry=FAST)])
    emu.script(chunk(whole[:4], False, (1, 2)), chunk(whole[4:], True, (3, 4)))
    result = asyncio.run(chain.arun_chunked(Segment, chunking=CHUNKING, system="s", user="u"))
    assert result.value == whole and result.usage == Usage(4, 6)


def test_auto_context_turns_to_keys_past_its_size(emu: Emulator) -> None:
    whole = segments(6)
    emu.script(chunk(whole[:4], False), chunk(whole[4:], True))
    result = create(emu, Chunking(key="index", max_items=4, context="auto", context_chars=100))
    assert result.value == whole and "index values, in order" in user_text(emu, 1)


@pytest.mark.usefixtures("clean_config")
def test_the_decorator_with_a_chain(emu: Emulator) -> None:
    whole = segments(3)
    chain = Chain([vendor(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), "gpt-4o",
                          retry=FAST)])

    @guardrail.structured(chain=chain, chunking=Chunking(key="index", max_items=2))
    def outline(talk: str) -> list[Segment]:
        """The segments of a talk."""
        raise AssertionError("never run")

    emu.script(chunk(whole[:2], False), chunk(whole[2:], True))
    assert outline("keynote") == whole


# -- the property: any list, any chunks, any overlaps ------------------------------------------------------------
@pytest.fixture(scope="module")
def shared_emu() -> Iterator[Emulator]:
    with Emulator() as emulator:
        yield emulator


@st.composite
def split(draw: st.DrawFn) -> tuple[list[Segment], list[tuple[list[Segment], bool]]]:
    """A list and the chunks a model might give for it: each starts anywhere from a few items back (overlap, equal
    duplicates) to where the last ended, holds 1..4 items, and the last says done."""
    size = draw(st.integers(0, 14))
    titles = draw(st.lists(st.text(max_size=6), min_size=size, max_size=size))
    whole = [Segment(index=i, start=i * 1.5, end=i * 1.5 + 1, title=t) for i, t in enumerate(titles)]
    chunks: list[tuple[list[Segment], bool]] = []
    end = 0
    while end < size:
        back = draw(st.integers(0, min(end, 3)))
        count = draw(st.integers(1, 4))
        start = end - back
        stop = min(size, max(end + 1, start + count))
        chunks.append((whole[start:stop], stop == size and draw(st.booleans())))
        end = stop
    if not chunks or not chunks[-1][1]:
        chunks.append((whole[max(0, size - draw(st.integers(0, 2))):], True))  # done, with an overlap or nothing
    return whole, chunks


@given(split())
def test_any_split_with_overlaps_assembles_the_original_exactly(
        shared_emu: Emulator, case: tuple[list[Segment], list[tuple[list[Segment], bool]]]) -> None:
    whole, chunks = case
    shared_emu.reset()
    shared_emu.script(*(chunk(items, done, (3, len(items) + 1)) for items, done in chunks))
    result = create(shared_emu, Chunking(key="index", max_items=7, max_chunks=len(chunks), gap=consecutive))
    assert result.value == whole
    assert result.asks == len(chunks) and shared_emu.pending == 0
    assert result.usage == Usage(3 * len(chunks), sum(len(items) + 1 for items, _ in chunks))


@given(st.lists(st.tuples(st.integers(0, 20), st.text(max_size=3)), max_size=12),
       st.lists(st.tuples(st.integers(0, 20), st.text(max_size=3)), max_size=12))
def test_merge_never_keeps_a_second_item_for_a_key(earlier: list[tuple[int, str]],
                                                   new: list[tuple[int, str]]) -> None:
    """Whatever a chunk holds: an item whose key came before is dropped when equal and reported when not, never
    kept twice; every other item is kept in order."""
    from guardrail.call.chunked import merge

    chunking = Chunking(key="index")
    kept = list({i: Segment(index=i, start=0, end=1, title=t) for i, t in earlier}.values())
    seen = {s.index: s for s in kept}
    items = [Segment(index=i, start=0, end=1, title=t) for i, t in new]
    fresh, dropped, problems = merge(chunking, kept, seen, items)
    first: dict[int, Segment] = {}
    for item in items:
        first.setdefault(item.index, item)
    expected = [item for index, item in first.items() if index not in seen]
    assert fresh == expected
    conflicts = sum(1 for item in items if (seen.get(item.index) or first[item.index]) != item)
    assert len(problems) == conflicts and dropped == len(items) - len(fresh) - conflicts
