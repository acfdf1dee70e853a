"""Few-shot examples where the answer is not the contract itself: a chunked call's chunks are ``{"items": [...],
"done": ...}``, but its examples are values of the caller's contract (an item, or the whole list). They are checked
against that contract, shown with the prompt of every chunk, and never checked against the chunk contract."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from pydantic import BaseModel

import guardrail
from guardrail.call.chunked import Chunking
from guardrail.chain.tiers import Chain, vendor
from guardrail.errors import InvalidExample
from guardrail.store import SQLiteStore
from guardrail.testing import Emulator, reply

FAST = guardrail.RetryPolicy(max_tries=1, initial_wait=0.01, max_wait=0.05, deadline=10)
MESSAGES = [{"role": "user", "content": "List the items."}]
CHUNKING = Chunking(key="k")


class Item(BaseModel):
    k: int
    name: str


def chunk(items: list[dict[str, Any]], done: bool) -> reply.Reply:
    return reply.answer(json.dumps({"items": items, "done": done}))


def client(emu: Emulator, **options: Any) -> Any:
    return guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), retry=FAST, **options)


def user_text(emu: Emulator, index: int) -> str:
    return str(emu.requests[index].body["messages"][-1]["content"])


@pytest.mark.parametrize(("response_model", "examples", "shown"), [
    (Item, [Item(k=7, name='a "quoted"\nline')], '{"k":7,"name":"a \\"quoted\\"\\nline"}'),
    (list[Item], [[{"k": 7, "name": "seven"}, {"k": 8, "name": "eight"}]],
     '[{"k":7,"name":"seven"},{"k":8,"name":"eight"}]'),
])
def test_a_chunked_call_shows_examples_of_the_callers_contract(emu: Emulator, response_model: Any,
                                                               examples: list[Any], shown: str) -> None:
    emu.script(chunk([{"k": 1, "name": "one"}], False), chunk([{"k": 2, "name": "two"}], True))
    result = client(emu).chat.completions.create_chunked(response_model=response_model, chunking=CHUNKING,
                                                         messages=MESSAGES, model="gpt-4o", examples=examples)
    assert [item.k for item in result.value] == [1, 2]
    for index in (0, 1):  # every chunk's prompt shows them, one JSON value a line
        assert f"Example 1:\n{shown}\n" in user_text(emu, index)


def test_an_invalid_example_of_a_chunked_call_fails_before_any_request(emu: Emulator) -> None:
    with pytest.raises(InvalidExample) as caught:
        client(emu).chat.completions.create_chunked(response_model=list[Item], chunking=CHUNKING,
                                                    messages=MESSAGES, model="gpt-4o",
                                                    examples=[[{"k": "7", "name": "lax, not strict"}]])
    assert (caught.value.index, caught.value.path) == (0, "$[0].k")
    assert emu.requests == []


def test_the_decorator_with_chunking_takes_list_examples(emu: Emulator) -> None:
    @guardrail.structured(client=client(emu), model="gpt-4o", chunking=CHUNKING,
                          examples=[[Item(k=9, name="nine")]])
    def listing(topic: str) -> list[Item]:
        """List the items of a topic."""
        raise AssertionError("never run")

    emu.script(chunk([{"k": 1, "name": "one"}], True))
    assert [item.k for item in listing("x")] == [1]
    assert '[{"k":9,"name":"nine"}]' in user_text(emu, 0)


def test_the_decorator_through_a_chain_shows_them_too(emu: Emulator) -> None:
    chain = Chain([vendor(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), "gpt-4o",
                          retry=FAST)])

    @guardrail.structured(chain=chain, chunking=CHUNKING, examples=[[Item(k=9, name="nine")]])
    def listing(topic: str) -> list[Item]:
        """List the items of a topic."""
        raise AssertionError("never run")

    emu.script(chunk([{"k": 1, "name": "one"}], True))
    assert [item.k for item in listing("x")] == [1]
    assert '[{"k":9,"name":"nine"}]' in user_text(emu, 0)


def test_chunked_calls_with_other_examples_do_not_share_a_cached_chunk(emu: Emulator, tmp_path: Any) -> None:
    cache = guardrail.Cache(SQLiteStore(str(tmp_path / "cache.db")))
    wrapped = client(emu, cache=cache)
    emu.script(chunk([{"k": 1, "name": "one"}], True), chunk([{"k": 2, "name": "two"}], True))
    values = [[item.k for item in wrapped.chat.completions.create_chunked(
        response_model=Item, chunking=CHUNKING, messages=MESSAGES, model="gpt-4o", examples=examples).value]
        for examples in ([Item(k=5, name="five")], [Item(k=6, name="six")], [Item(k=5, name="five")])]
    assert values == [[1], [2], [1]] and len(emu.requests) == 2
