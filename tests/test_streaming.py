"""Streaming partial objects: previews while the vendor streams, then the validated value; never a partial result."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import guardrail
from guardrail.errors import OutputTruncated
from guardrail.outcome import Partial
from guardrail.parse.partial import preview
from guardrail.testing import Emulator, reply


class Ticket(BaseModel):
    urgency: int
    summary: str
    tags: list[str]


GOOD = '{"urgency": 4, "summary": "The parcel is two weeks late and the customer wants a refund", "tags": ["a", "b"]}'
FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.2, deadline=10)


@pytest.fixture
def emu() -> Any:
    with Emulator() as server:
        yield server


def clients(emu: Emulator) -> dict[str, Any]:
    oai = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5), retry=FAST)
    claude = guardrail.wrap(anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5),
                            retry=FAST)
    return {
        "chat": lambda **kw: oai.chat.completions.create_partial(
            model="gpt-4o", messages=[{"role": "user", "content": "go"}], response_model=Ticket, **kw),
        "responses": lambda **kw: oai.responses.create_partial(model="gpt-4o", input="go", response_model=Ticket,
                                                               **kw),
        "messages": lambda **kw: claude.messages.create_partial(
            model="claude-sonnet-5-5", messages=[{"role": "user", "content": "go"}], response_model=Ticket,
            **{"max_tokens": 500, **kw}),
    }


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
@pytest.mark.parametrize("mode", ["native", "tool"])
def test_previews_grow_then_the_last_item_is_the_validated_value(emu: Emulator, api: str, mode: str) -> None:
    emu.script(reply.answer(GOOD))
    stream = clients(emu)[api](mode=mode)
    items = list(stream)
    *previews, final = items
    assert final == Ticket.model_validate_json(GOOD)
    assert previews and all(isinstance(p, Partial) and p.partial for p in previews)
    assert all(not isinstance(p, Ticket) for p in previews)
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
    assert items[-1] == Ticket.model_validate_json(GOOD)


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
            model="gpt-4o", messages=[{"role": "user", "content": "go"}], response_model=Ticket)]
        second = [item async for item in claude.messages.create_partial(
            model="claude-sonnet-5-5", max_tokens=300, messages=[{"role": "user", "content": "go"}],
            response_model=Ticket)]
        return first, second

    first, second = asyncio.run(main())
    for items in (first, second):
        assert items[-1] == Ticket.model_validate_json(GOOD)
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
