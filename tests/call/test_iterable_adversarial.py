"""``create_iterable`` fed adversarial answers: what the model writes outside plain JSON (comments, single-,
smart- or backtick-quoted strings) or around it (an example list in the prose before the answer) never makes an
item that the model did not write; the items yielded are always the list the whole answer holds."""

from __future__ import annotations

from typing import Any

import pytest
from support.calls import wrapped_client

import guardrail
from guardrail.errors import CallError
from guardrail.parse.items import ItemSpans
from guardrail.testing import Emulator, reply

FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.1, deadline=20)


def iterate(emu: Emulator, item_type: Any, chars: int = 3) -> tuple[list[Any], Any]:
    """The items yielded (and the stream) for the scripted answers, streamed ``chars`` characters a delta."""
    client = wrapped_client(emu, "chat", retry=FAST, timeout=10)
    stream = client.chat.completions.create_iterable(model="gpt-4o", messages=[{"role": "user", "content": "List."}],
                                                     response_model=item_type, max_attempts=2)
    seen: list[Any] = []
    try:
        for item in stream:
            seen.append(item)
    except CallError:
        pass
    return seen, stream


@pytest.mark.parametrize(("text", "whole"), [
    ('{"items": ["a", /* x, y */ "b"]}', ["a", "b"]),
    ('{"items": ["a", // note, see\n "b"]}', ["a", "b"]),
    ("{\"items\": ['a, b', 'c']}", ["a, b", "c"]),
    ('{"items": ["a", \u201cb, c\u201d]}', ["a", "b, c"]),
    ('{"items": ["a", `b, c`]}', ["a", "b, c"]),
])
def test_a_repaired_lexical_slip_never_splits_an_item(emu: Emulator, text: str, whole: list[str]) -> None:
    """The parse layer reads these (a comment dropped, a quoted string): the items are the list it reads, never
    a piece of a comment or of a string cut at its comma."""
    for chars in (1, 3, 64):
        emu.reset()
        emu.script(reply.answer(text).streamed_in(chars))
        got, stream = iterate(emu, str, chars)
        assert got == whole and stream.result.value == whole and len(emu.requests) == 1


@pytest.mark.parametrize("text", [
    'The shape is {"items": ["<title>"]}. Here it is:\n{"items": ["Intro", "Outro"]}',
    'For example {"items": ["<title>"]}, then:\n```json\n{"items": ["Intro", "Outro"]}\n```',
])
def test_an_example_list_in_the_prose_before_the_answer_is_never_yielded(emu: Emulator, text: str) -> None:
    """The first object in the text is an example the model gave in its prose: the whole answer holds two lists
    (the parse layer says so), so no item of the example is yielded while it streams."""
    emu.script(reply.answer(text), reply.answer('{"items": ["Intro", "Outro"]}'))
    got, _ = iterate(emu, str)
    assert "<title>" not in got
    assert got == ["Intro", "Outro"]


@pytest.mark.parametrize("text", [
    '{"items": ["Intro", "Outro"]}',
    '\n  {"items": ["Intro", "Outro"]}',
    'Here is the list:\n```json\n{"items": ["Intro", "Outro"]}\n```',
    '```\n{"items": ["Intro", "Outro"]}\n```',
])
def test_an_answer_that_starts_the_text_or_a_fence_streams(text: str) -> None:
    spans = ItemSpans()
    assert [member for ch in text for member in spans.feed(ch)] == ['"Intro"', '"Outro"'] and spans.ended
