"""@guardrail.structured: docstring + arguments make the prompt; the wrapper's loop runs; typed errors come out."""

from __future__ import annotations

import asyncio
import inspect
from enum import StrEnum
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel, Field, ValidationInfo, field_validator

import guardrail
from guardrail.outcome import Partial
from guardrail.testing import Emulator, reply


class Category(StrEnum):
    billing = "billing"
    shipping = "shipping"


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    category: Category
    summary: str


GOOD = '{"urgency": 4, "category": "shipping", "summary": "Late parcel"}'
FAST = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.1, deadline=10)


pytestmark = pytest.mark.usefixtures("clean_config")


def openai_client(emu: Emulator) -> Any:
    return guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=5), retry=FAST)


def test_docstring_and_arguments_make_the_prompt_and_the_value_comes_back(emu: Emulator) -> None:
    @guardrail.structured(client=openai_client(emu), model="gpt-4o")
    def triage(inquiry: str, tier: str = "gold") -> Ticket:
        """Triage a customer inquiry: urgency 1-5, a category, a one-line summary."""
        raise AssertionError("the body is never run")

    emu.script(reply.answer(GOOD))
    ticket = triage("배송이 2주째 안 와요")
    assert ticket == Ticket(urgency=4, category=Category.shipping, summary="Late parcel")
    body = emu.requests[0].body
    system, user = body["messages"]
    assert system["role"] == "system" and "`triage`" in system["content"]
    assert "Triage a customer inquiry" in system["content"]
    assert user["content"] == 'inquiry = "배송이 2주째 안 와요"\ntier = "gold"'
    assert body["model"] == "gpt-4o"
    assert body["response_format"]["json_schema"]["name"] == "Ticket"


def test_it_is_a_well_behaved_decorator() -> None:
    @guardrail.structured
    def triage(inquiry: str) -> Ticket:
        """Docs."""
        raise AssertionError

    assert triage.__name__ == "triage" and triage.__doc__ == "Docs."
    assert triage.__wrapped__ is not None  # type: ignore[attr-defined]
    assert str(inspect.signature(triage)) == "(inquiry: str) -> tests.test_decorator.Ticket" or \
        list(inspect.signature(triage).parameters) == ["inquiry"]
    assert triage.output_type is Ticket


def test_a_return_annotation_is_required() -> None:
    with pytest.raises(TypeError, match="return annotation"):
        @guardrail.structured
        def nothing(x: int):  # type: ignore[no-untyped-def]
            """No contract."""


def test_configure_once_override_per_function(emu: Emulator) -> None:
    guardrail.configure(client=openai_client(emu), model="gpt-4o-mini", max_attempts=1)

    @guardrail.structured
    def default(inquiry: str) -> Ticket:
        """Triage."""
        raise AssertionError

    @guardrail.structured(model="gpt-4o", max_attempts=2)
    def stronger(inquiry: str) -> Ticket:
        """Triage."""
        raise AssertionError

    emu.script(reply.answer('{"urgency": 9}'))
    with pytest.raises(guardrail.GaveUp):
        default("x")
    emu.script(reply.answer('{"urgency": 9}'), reply.answer(GOOD))
    assert stronger("x").urgency == 4
    assert [r.model for r in emu.requests] == ["gpt-4o-mini", "gpt-4o", "gpt-4o"]


def test_prompt_callable_replaces_the_user_message_and_aliases_apply(emu: Emulator) -> None:
    @guardrail.structured(client=openai_client(emu), model="gpt-4o", aliases={"short": "summary"},
                          prompt=lambda inquiry: f"Inquiry:\n{inquiry}")
    def triage(inquiry: str) -> Ticket:
        """Triage."""
        raise AssertionError

    emu.script(reply.answer('{"urgency": 2, "category": "Billing", "short": "Double charge"}'))
    result = triage.with_result("I was charged twice")
    assert result.value.summary == "Double charge" and result.value.category is Category.billing
    assert emu.requests[0].body["messages"][1]["content"] == "Inquiry:\nI was charged twice"


def test_methods_bind_self_and_leave_it_out_of_the_prompt(emu: Emulator) -> None:
    client = openai_client(emu)

    class Desk:
        team = "support"

        @guardrail.structured(client=client, model="gpt-4o")
        def triage(self, inquiry: str) -> Ticket:
            """Triage for the desk."""
            raise AssertionError

    emu.script(reply.answer(GOOD))
    assert Desk().triage("late").urgency == 4
    assert emu.requests[0].body["messages"][1]["content"] == 'inquiry = "late"'


def test_anthropic_clients_and_async_functions(emu: Emulator) -> None:
    sync_client = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5)
    async_client = anthropic.AsyncAnthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5)

    @guardrail.structured(async_client=async_client, client=sync_client, model="claude-haiku-4-5", max_tokens=300)
    async def triage(inquiry: str) -> Ticket:
        """Triage a customer inquiry."""
        raise AssertionError

    emu.script(reply.answer(GOOD))
    ticket = asyncio.run(triage("late"))
    assert ticket.category is Category.shipping
    body = emu.requests[0].body
    assert "Triage a customer inquiry." in body["system"] and body["max_tokens"] == 300
    assert body["messages"] == [{"role": "user", "content": 'inquiry = "late"'}]


def test_streaming_from_a_decorated_function(emu: Emulator) -> None:
    @guardrail.structured(client=openai_client(emu), model="gpt-4o")
    def triage(inquiry: str) -> Ticket:
        """Triage."""
        raise AssertionError

    emu.script(reply.answer(GOOD))
    items = list(triage.stream("late"))
    assert isinstance(items[-1], Ticket) and items[-1].urgency == 4
    assert all(isinstance(i, Partial) for i in items[:-1]) and len(items) > 1


def test_responses_api_by_configuration(emu: Emulator) -> None:
    @guardrail.structured(client=openai_client(emu), model="gpt-4o", api="responses", max_tokens=200)
    def triage(inquiry: str) -> Ticket:
        """Triage."""
        raise AssertionError

    emu.script(reply.answer(GOOD))
    assert triage("late").urgency == 4
    body = emu.requests[0].body
    assert body["input"] == [{"role": "user", "content": 'inquiry = "late"'}] or body["input"] == 'inquiry = "late"'
    assert "Triage." in body["instructions"] and body["max_output_tokens"] == 200


def test_no_client_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GUARDRAIL_VENDOR"):
        monkeypatch.delenv(name, raising=False)

    @guardrail.structured
    def triage(inquiry: str) -> Ticket:
        """Triage."""
        raise AssertionError

    with pytest.raises(TypeError, match="no client configured"):
        triage("x")


def test_config_from_the_environment() -> None:
    config = guardrail.Config.from_env({"GUARDRAIL_VENDOR": "anthropic", "ANTHROPIC_API_KEY": "k",
                                        "GUARDRAIL_MAX_ATTEMPTS": "5"})
    assert isinstance(config.client, anthropic.Anthropic) and isinstance(config.async_client, anthropic.AsyncAnthropic)
    assert config.model == "claude-haiku-4-5" and config.max_attempts == 5
    openai_config = guardrail.Config.from_env({"OPENAI_API_KEY": "k", "GUARDRAIL_MODEL": "gpt-4.1"})
    assert isinstance(openai_config.client, openai.OpenAI) and openai_config.model == "gpt-4.1"
    assert guardrail.Config.from_env({}).client is None
    with pytest.raises(ValueError):
        guardrail.Config.from_env({"GUARDRAIL_VENDOR": "gemini"})
    with pytest.raises(ValueError):
        guardrail.Config.from_env({"GUARDRAIL_MAX_ATTEMPTS": "many"})


class Assignment(BaseModel):
    """Its validator reads the call's context (``ValidationInfo.context``)."""

    agent: str

    @field_validator("agent")
    @classmethod
    def on_shift(cls, agent: str, info: ValidationInfo) -> str:
        if agent not in (info.context or {}).get("on_shift", ()):
            raise ValueError(f"{agent} is not on shift")
        return agent


def test_decorator_context_reaches_validators_and_rules_alike(emu: Emulator) -> None:
    on_shift = {"ana"}
    seen: list[Any] = []

    @guardrail.rule
    def still_on_shift(value: Assignment, context: Any) -> bool:
        seen.append(sorted(context["on_shift"]))
        return value.agent in context["on_shift"]

    @guardrail.structured(client=openai_client(emu), model="gpt-4o", rules=[still_on_shift],
                          context=lambda: {"on_shift": set(on_shift)})
    def assign(ticket: str) -> Assignment:
        """Pick an agent on shift."""
        raise AssertionError

    emu.script(reply.answer('{"agent": "bo"}'), reply.answer('{"agent": "ana"}'))
    result = assign.with_result("late parcel")
    assert result.value.agent == "ana" and len(result.attempts) == 2  # the validator refused "bo"
    assert "bo is not on shift" in str(emu.requests[1].body["messages"])
    assert seen == [["ana"]]  # the rule ran once, on the value the validator let through, with the same context
    on_shift.add("bo")  # the callable is read per call
    emu.script(reply.answer('{"agent": "bo"}'))
    assert assign("late parcel").agent == "bo"


def test_decorator_context_reaches_validators_in_async_functions_and_streams(emu: Emulator) -> None:
    client = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0)

    @guardrail.structured(async_client=client, client=openai_client(emu), model="gpt-4o",
                          context={"on_shift": {"cy"}})
    async def assign(ticket: str) -> Assignment:
        """Pick an agent on shift."""
        raise AssertionError

    emu.script(reply.answer('{"agent": "cy"}'))
    assert asyncio.run(assign("x")).agent == "cy"

    @guardrail.structured(client=openai_client(emu), model="gpt-4o", context={"on_shift": {"di"}})
    def assign_sync(ticket: str) -> Assignment:
        """Pick an agent on shift."""
        raise AssertionError

    emu.script(reply.answer('{"agent": "di"}'))
    assert list(assign_sync.stream("x"))[-1].agent == "di"
