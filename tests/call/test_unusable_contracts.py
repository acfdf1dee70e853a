"""A ``response_model`` guardrail cannot build a contract from is a typed :class:`UsageError` before any request,
whichever entry point is given it: never pydantic's own schema error or an ``AttributeError`` from inside it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

import guardrail
from guardrail.call import Chunking
from guardrail.errors import UsageError
from guardrail.local import Grammar, Regex
from guardrail.testing import Emulator


class NotAContract:
    """A plain class pydantic has no schema for."""


MESSAGES = [{"role": "user", "content": "x"}]
CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "create": lambda client, model: client.chat.completions.create(model="m", messages=MESSAGES,
                                                                     response_model=model),
    "create_iterable": lambda client, model: client.chat.completions.create_iterable(
        model="m", messages=MESSAGES, response_model=model),
    "create_chunked": lambda client, model: client.chat.completions.create_chunked(
        model="m", messages=MESSAGES, response_model=model, chunking=Chunking(key="id")),
    "parse": lambda client, model: guardrail.parse('{"a": 1}', model),
}


@pytest.mark.parametrize("call", sorted(CALLS))
@pytest.mark.parametrize("model", [NotAContract, list[NotAContract]], ids=["class", "list"])
def test_a_type_pydantic_cannot_validate_is_a_usage_error(emu: Emulator, call: str, model: Any) -> None:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5))
    with pytest.raises(UsageError, match="NotAContract"):
        CALLS[call](client, model)
    assert emu.requests == []


@pytest.mark.parametrize("call", ["create_iterable", "create_chunked"])
@pytest.mark.parametrize("constraint", [Regex(r"[A-Z]+"), Grammar('root ::= "yes" | "no"')], ids=["regex", "grammar"])
def test_a_text_constraint_has_no_items(emu: Emulator, call: str, constraint: Any) -> None:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), server="vllm")
    with pytest.raises(UsageError, match="create\\(\\)"):
        CALLS[call](client, constraint)
    assert emu.requests == []
