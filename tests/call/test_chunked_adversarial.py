"""Chunked generation against adversarial answers and contracts: the assembled list is held to the caller's whole
list contract (an ``Annotated`` list's ``min_length``, a validator of the whole list), a fixed tuple is not a list,
a NaN key still finds its duplicate, and the caller's ``key``/``gap`` functions raising are typed errors."""

from __future__ import annotations

import json
from typing import Annotated, Any

import openai
import pytest
from pydantic import AfterValidator, BaseModel, Field

import guardrail
from guardrail.call.chunked import ChunkedResult, Chunking, merge
from guardrail.errors import ChunkRejected, ConfigError, Refused, UsageError
from guardrail.outcome import Usage
from guardrail.testing import Emulator, reply

FAST = guardrail.RetryPolicy(max_tries=1, initial_wait=0.01, max_wait=0.05, deadline=10)
MESSAGES = [{"role": "user", "content": "List the items."}]


class Item(BaseModel):
    k: int
    v: int


class Loose(BaseModel):
    k: float
    v: int


def chunk(items: list[dict[str, Any]], done: bool) -> reply.Reply:
    return reply.answer(json.dumps({"items": items, "done": done}))


def create(emu: Emulator, response_model: Any, chunking: Chunking) -> ChunkedResult[Any]:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), retry=FAST)
    return client.chat.completions.create_chunked(response_model=response_model, chunking=chunking,
                                                  messages=MESSAGES, model="gpt-4o")


def test_an_annotated_list_is_chunked_by_its_item_and_its_min_length_holds(emu: Emulator) -> None:
    """``Annotated[list[Item], Field(min_length=3)]``: the chunks hold items (not lists), and a list that ends
    short of the contract's minimum is an error, never a value."""
    emu.script(chunk([{"k": 1, "v": 1}], False), chunk([{"k": 2, "v": 2}], True))
    with pytest.raises(ChunkRejected) as caught:
        create(emu, Annotated[list[Item], Field(min_length=3)], Chunking(key="k"))
    assert [item.k for item in caught.value.items] == [1, 2]
    assert "at least 3" in str(caught.value)


def test_an_annotated_list_long_enough_is_the_value(emu: Emulator) -> None:
    emu.script(chunk([{"k": 1, "v": 1}, {"k": 2, "v": 2}], False), chunk([{"k": 3, "v": 3}], True))
    result = create(emu, Annotated[list[Item], Field(min_length=3)], Chunking(key="k"))
    assert [item.k for item in result.value] == [1, 2, 3] and result.complete


def _distinct_values(items: list[Item]) -> list[Item]:
    if len({item.v for item in items}) != len(items):
        raise ValueError("two items share a value")
    return items


def test_a_validator_of_the_whole_list_sees_the_assembled_list(emu: Emulator) -> None:
    """Each chunk alone passes the list validator; the whole list does not."""
    emu.script(chunk([{"k": 1, "v": 7}], False), chunk([{"k": 2, "v": 7}], True))
    with pytest.raises(ChunkRejected, match="two items share a value"):
        create(emu, Annotated[list[Item], AfterValidator(_distinct_values)], Chunking(key="k"))


def test_a_fixed_tuple_is_not_a_list_of_its_first_type(emu: Emulator) -> None:
    with pytest.raises(UsageError, match="fixed tuple"):
        create(emu, tuple[Item, Loose], Chunking(key="k"))
    assert emu.requests == []


def test_a_variadic_tuple_is_a_list(emu: Emulator) -> None:
    emu.script(chunk([{"k": 1, "v": 1}], True))
    assert [item.k for item in create(emu, tuple[Item, ...], Chunking(key="k")).value] == [1]


def test_a_key_function_raising_is_a_typed_error(emu: Emulator) -> None:
    emu.script(chunk([{"k": 2, "v": 1}], True))
    names = {1: "one"}
    with pytest.raises(ConfigError, match="key=") as caught:
        create(emu, list[Item], Chunking(key=lambda item: names[item.k]))
    assert isinstance(caught.value.__cause__, KeyError)


def test_a_gap_function_raising_is_a_typed_error(emu: Emulator) -> None:
    emu.script(chunk([{"k": 1, "v": 1}, {"k": 2, "v": 2}], True))
    with pytest.raises(ConfigError, match="gap=") as caught:
        create(emu, list[Item], Chunking(key="k", gap=lambda a, b: 1 // (b.k - b.k)))
    assert isinstance(caught.value.__cause__, ZeroDivisionError)


def test_a_nan_key_finds_its_duplicate() -> None:
    """NaN is not equal to itself, so a dict would never find an earlier item under it: a repeated item would
    be kept twice. Under one key it is a duplicate (here not equal, NaN being in the value too: a conflict)."""
    chunking = Chunking(key="k")
    first, again = Loose(k=float("nan"), v=1), Loose(k=float("nan"), v=1)
    fresh, dropped, problems = merge(chunking, [first], {chunking.key_of(first): first}, [again])
    assert fresh == [] and dropped == 0 and len(problems) == 1


def test_two_nan_keys_in_one_chunk_are_not_two_items() -> None:
    chunking = Chunking(key="k")
    fresh, _, problems = merge(chunking, [], {}, [Loose(k=float("nan"), v=1), Loose(k=float("nan"), v=2)])
    assert len(fresh) == 1 and problems


def test_a_refusal_after_chunks_carries_every_chunks_usage(emu: Emulator) -> None:
    """The earlier chunks were paid for: the refusal that ends the call reports them too."""
    emu.script(reply.answer(json.dumps({"items": [{"k": 1, "v": 1}], "done": False}), usage=(100, 40)),
               reply.refusal("no", usage=(30, 5)))
    with pytest.raises(Refused) as caught:
        create(emu, list[Item], Chunking(key="k"))
    assert caught.value.outcome.usage == Usage(130, 45)
    assert len(caught.value.outcome.attempts) == 2


def _by_key(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda item: item["k"])  # written for JSON data: raises TypeError on models


def test_a_list_validator_raising_a_builtin_is_a_typed_error(emu: Emulator) -> None:
    emu.script(chunk([{"k": 2, "v": 1}, {"k": 1, "v": 1}], True))
    with pytest.raises(ChunkRejected, match="TypeError"):
        create(emu, Annotated[list[Item], AfterValidator(_by_key)], Chunking(key="k"))
