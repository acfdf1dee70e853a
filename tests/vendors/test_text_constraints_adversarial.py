"""Adversarial answers to a Regex/Grammar constraint: a reply without text (a tool call, a null content) is not the
empty text, and no text outside the language is ever returned, whatever the reply is."""

from __future__ import annotations

import re
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import guardrail
from guardrail.errors import GaveUp
from guardrail.local import Grammar, Regex
from guardrail.testing import Emulator, reply

FAST = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.1, deadline=10)
MESSAGES = [{"role": "user", "content": "Give me a code."}]


def ask(emu: Emulator, server: str | None, constraint: Any) -> Any:
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), server=server,
                            retry=FAST)
    return client.chat.completions.create_with_result(model="m", messages=MESSAGES, response_model=constraint)


@pytest.mark.parametrize("server", ["vllm", None])
@pytest.mark.parametrize("constraint", [Regex(r"[a-z]*"), Grammar('root ::= "" | "yes"')])
def test_a_tool_call_is_not_the_empty_text(emu: Emulator, server: str | None, constraint: Any) -> None:
    """A tool call's message has no content: the empty text would match, but no text was given."""
    emu.script(*[reply.tool_call({"a": 1}, name="lookup")] * 3)
    with pytest.raises(GaveUp) as caught:
        ask(emu, server, constraint)
    assert "no text" in str(caught.value)


def test_a_tool_call_then_the_text_returns_the_text(emu: Emulator) -> None:
    emu.script(reply.tool_call({"a": 1}, name="lookup"), reply.answer("abc"))
    assert ask(emu, "vllm", Regex(r"[a-z]*")).value == "abc"


def test_an_empty_text_where_the_language_holds_it_is_the_answer(emu: Emulator) -> None:
    emu.script(reply.answer(""))
    assert ask(emu, "vllm", Regex(r"[a-z]*")).value == ""


PATTERN = r"^[a-c]{0,3}$"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="abcd\n\r é", max_size=5))
def test_a_returned_text_fullmatches(emu: Emulator, text: str) -> None:
    """Whatever the model says (a trailing newline against ``$`` included), a value fullmatches the pattern."""
    emu.script(reply.answer(text), reply.answer(text), reply.answer(text))
    try:
        value = ask(emu, "sglang", Regex(PATTERN)).value
    except GaveUp:
        assert re.fullmatch(PATTERN, text) is None
    else:
        assert value == text and re.fullmatch(PATTERN, value) is not None
    emu.reset()


def test_an_anthropic_tool_use_is_not_the_empty_text(emu: Emulator) -> None:
    client = guardrail.wrap(anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="t"), retry=FAST)
    emu.script(*[reply.tool_call({"a": 1}, name="lookup")] * 3)
    with pytest.raises(GaveUp, match="no text"):
        client.messages.create(model="claude-3-5-haiku-latest", max_tokens=100, messages=MESSAGES,
                               response_model=Regex(r"[a-z]*"))
