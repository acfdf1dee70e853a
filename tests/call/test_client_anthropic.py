"""guardrail.wrap(anthropic client) end to end: the real anthropic SDK against the vendor emulator."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
from pydantic import BaseModel, ValidationInfo, field_validator

import guardrail
import guardrail.errors
from guardrail.testing import Emulator, reply


class Invoice(BaseModel):
    number: str
    total: float
    paid: bool = False


class Node(BaseModel):
    name: str
    children: list[Node] = []


GOOD = '{"number": "INV-7", "total": 12.5, "paid": true}'
MESSAGES = [{"role": "user", "content": "Read the invoice."}]
FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.5, deadline=10)


def wrapped(emu: Emulator, **options: Any) -> Any:
    raw = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5)
    return guardrail.wrap(raw, retry=FAST, **options)


def create(client: Any, **kwargs: Any) -> Any:
    kwargs.setdefault("model", "claude-sonnet-5-5")
    kwargs.setdefault("max_tokens", 256)
    kwargs.setdefault("messages", MESSAGES)
    return client.messages.create_with_result(response_model=Invoice, **kwargs)


def test_native_json_output_via_output_config(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    result = create(wrapped(emu))
    assert result.value == Invoice(number="INV-7", total=12.5, paid=True)
    assert result.mode == "native" and result.provider == "anthropic"
    fmt = emu.requests[0].body["output_config"]["format"]
    assert fmt["type"] == "json_schema" and fmt["schema"]["additionalProperties"] is False
    assert "paid" not in fmt["schema"].get("required", [])  # Anthropic keeps optional fields optional


def test_passthrough_without_response_model(emu: Emulator) -> None:
    emu.script(reply.text("hi"))
    message = wrapped(emu).messages.create(model="claude-sonnet-5-5", max_tokens=10, messages=MESSAGES)
    assert isinstance(message, anthropic.types.Message) and message.content[0].text == "hi"  # type: ignore[union-attr]
    assert "output_config" not in emu.requests[0].body


def test_repair_turn_in_tool_mode_uses_tool_result_with_is_error(emu: Emulator) -> None:
    emu.script(reply.answer('{"number": 7.5, "total": "lots"}'), reply.answer(GOOD))
    result = create(wrapped(emu), mode="tool")
    assert result.value.total == 12.5
    second = emu.requests[1].body
    assert second["tool_choice"] == {"type": "tool", "name": "Invoice", "disable_parallel_tool_use": True}
    assistant, user = second["messages"][-2:]
    assert assistant["content"][0]["type"] == "tool_use"
    block = user["content"][0]
    assert block["type"] == "tool_result" and block["is_error"] is True
    assert "$.number" in block["content"] and "$.total" in block["content"]


def test_recursive_contract_skips_anthropic_strict_modes(emu: Emulator) -> None:
    emu.script(reply.answer('{"name": "root", "children": [{"name": "leaf"}]}'))
    raw = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5)
    result = guardrail.wrap(raw, retry=FAST).messages.create_with_result(
        model="claude-sonnet-5-5", max_tokens=256, messages=MESSAGES, response_model=Node)
    assert result.value.children[0].name == "leaf"
    assert result.mode == "tool"
    assert "strict" not in emu.requests[0].body["tools"][0]


def test_extended_thinking_never_forces_a_tool(emu: Emulator) -> None:
    emu.script(reply.answer('{"name": "root"}'))
    raw = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5)
    result = guardrail.wrap(raw, retry=FAST).messages.create_with_result(
        model="claude-sonnet-5-5", max_tokens=2048, messages=MESSAGES, response_model=Node,
        thinking={"type": "enabled", "budget_tokens": 1024})
    assert result.mode == "prompt"
    assert "tool_choice" not in emu.requests[0].body
    assert "JSON Schema" in emu.requests[0].body["system"]


def test_max_tokens_stop_raises_the_limit_once(emu: Emulator) -> None:
    emu.script(reply.truncated('{"number": "IN'), reply.answer(GOOD))
    result = create(wrapped(emu), max_tokens=40)
    assert result.value.number == "INV-7"
    assert [r.max_tokens for r in emu.requests] == [40, 80]


def test_refusal_stop_reason(emu: Emulator) -> None:
    emu.script(reply.refusal("I won't read that."))
    with pytest.raises(guardrail.Refused) as caught:
        create(wrapped(emu))
    assert "won't" in caught.value.refusal
    assert len(emu.requests) == 1


def test_overloaded_529_is_retried(emu: Emulator) -> None:
    emu.script(reply.overloaded(), reply.answer(GOOD))
    result = create(wrapped(emu))
    assert result.vendor_calls == 2 and result.value.paid


def test_an_overload_event_mid_stream_is_retried(emu: Emulator) -> None:
    emu.script(reply.stream_error(text_before='{"number": '), reply.answer(GOOD))
    result = create(wrapped(emu), stream=True)
    assert result.value.number == "INV-7" and result.vendor_calls == 2
    assert result.usage.output_tokens > 0


def test_a_spend_limit_is_not_retried(emu: Emulator) -> None:
    emu.script(reply.rate_limited(spend_limit=True), reply.answer(GOOD))
    with pytest.raises(guardrail.VendorError):
        create(wrapped(emu))
    assert len(emu.requests) == 1


def test_schema_rejection_degrades_to_the_next_mode(emu: Emulator) -> None:
    emu.script(reply.schema_rejected("Schema is too complex"), reply.answer(GOOD))
    result = create(wrapped(emu))
    assert result.mode == "tool" and result.value.total == 12.5
    assert result.attempts[0].error is not None
    assert "output_config" not in emu.requests[1].body


def test_old_claude_models_have_no_native_mode(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    result = create(wrapped(emu), model="claude-3-haiku-20240307")
    assert result.mode == "tool"
    assert "strict" not in emu.requests[0].body["tools"][0]


def test_system_prompt_is_kept_in_prompt_mode(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    create(wrapped(emu), mode="prompt", system="You read invoices.")
    system = emu.requests[0].body["system"]
    assert system.startswith("You read invoices.") and "JSON Schema" in system


def test_async_anthropic(emu: Emulator) -> None:
    emu.script(reply.answer("```json\n" + GOOD + "\n```"), reply.answer(GOOD))

    async def main() -> Any:
        raw = anthropic.AsyncAnthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=5)
        client = guardrail.wrap(raw, retry=FAST)
        first = await client.messages.create(model="claude-sonnet-5-5", max_tokens=100, messages=MESSAGES,
                                             response_model=Invoice)
        second = await client.messages.create_with_result(model="claude-sonnet-5-5", max_tokens=100,
                                                          messages=MESSAGES, response_model=Invoice, stream=True)
        return first, second

    first, second = asyncio.run(main())
    assert first == second.value == Invoice(number="INV-7", total=12.5, paid=True)


# -- SDK fidelity: context= reaches validators; with_options, beta and raw responses keep the wrapper -------

class Payment(BaseModel):
    """Its validator reads the call's context (``ValidationInfo.context``)."""

    invoice: str

    @field_validator("invoice")
    @classmethod
    def open_invoice(cls, invoice: str, info: ValidationInfo) -> str:
        if invoice not in (info.context or {}).get("open", ()):
            raise ValueError(f"{invoice} is not an open invoice")
        return invoice


def raw_client(emu: Emulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", max_retries=0)


def test_context_reaches_pydantic_validators(emu: Emulator) -> None:
    emu.script(reply.answer('{"invoice": "INV-1"}'), reply.answer('{"invoice": "INV-7"}'))
    result = create_payment(guardrail.wrap(raw_client(emu), retry=FAST).messages, context={"open": {"INV-7"}})
    assert result.value.invoice == "INV-7" and len(result.attempts) == 2
    assert "INV-1 is not an open invoice" in str(emu.requests[1].body["messages"])


def create_payment(method: Any, **kwargs: Any) -> Any:
    return method.create_with_result(model="claude-sonnet-5-5", max_tokens=256, messages=MESSAGES,
                                     response_model=Payment, **kwargs)


def test_beta_messages_keep_the_wrapper(emu: Emulator) -> None:
    emu.script(reply.answer('{"invoice": "INV-7"}'))
    result = create_payment(guardrail.wrap(raw_client(emu), retry=FAST).beta.messages, context={"open": {"INV-7"}})
    assert result.value.invoice == "INV-7"
    assert emu.requests[0].body["output_config"]["format"]["type"] == "json_schema"  # guardrail built the request


def test_with_options_keeps_the_wrapper(emu: Emulator) -> None:
    client = guardrail.wrap(raw_client(emu), retry=FAST)
    emu.script(reply.answer(GOOD))
    other = client.with_options(default_headers={"X-Team": "finance"})
    invoice = other.messages.create(model="claude-sonnet-5-5", max_tokens=256, messages=MESSAGES,
                                    response_model=Invoice)
    assert invoice.number == "INV-7" and emu.requests[0].headers["x-team"] == "finance"
    assert other.vendor == "anthropic"


@pytest.mark.parametrize("route", ["client", "method", "beta"])
def test_with_raw_response_gives_the_value_and_the_http_responses(emu: Emulator, route: str) -> None:
    client = guardrail.wrap(raw_client(emu), retry=FAST)
    method = {"client": lambda: client.with_raw_response.messages,
              "method": lambda: client.messages.with_raw_response,
              "beta": lambda: client.with_raw_response.beta.messages}[route]()
    emu.script(reply.answer('{"number": 7.5}'), reply.answer(GOOD))
    raw = method.create(model="claude-sonnet-5-5", max_tokens=256, messages=MESSAGES, response_model=Invoice)
    assert raw.parse() == Invoice(number="INV-7", total=12.5, paid=True)
    assert raw.status_code == 200 and raw.headers["request-id"].startswith("req_")
    assert len(raw.responses) == 2 and len(raw.result.attempts) == 2


def test_with_streaming_response_refuses_response_model(emu: Emulator) -> None:
    client = guardrail.wrap(raw_client(emu))
    with pytest.raises(guardrail.errors.UnsupportedCall):
        client.with_streaming_response.messages.create(model="claude-sonnet-5-5", max_tokens=256,
                                                       messages=MESSAGES, response_model=Invoice)
    with pytest.raises(guardrail.GuardrailError):
        client.beta.messages.with_streaming_response.create_partial(model="claude-sonnet-5-5", max_tokens=256,
                                                                    messages=MESSAGES, response_model=Invoice)
    assert emu.requests == []


def test_async_raw_response_awaits_the_sdks_parse(emu: Emulator) -> None:
    """anthropic's async raw response parses with ``await``; the wrapper does that, the caller gets a value."""
    client = guardrail.wrap(anthropic.AsyncAnthropic(base_url=emu.anthropic_base_url, api_key="test",
                                                     max_retries=0), retry=FAST)
    emu.script(reply.answer(GOOD), reply.answer('{"invoice": "INV-7"}'))

    async def main() -> tuple[Any, Any]:
        raw = await client.with_raw_response.messages.create(model="claude-sonnet-5-5", max_tokens=256,
                                                             messages=MESSAGES, response_model=Invoice)
        beta = await client.beta.messages.create(model="claude-sonnet-5-5", max_tokens=256, messages=MESSAGES,
                                                 response_model=Payment, context={"open": {"INV-7"}})
        return raw, beta

    raw, beta = asyncio.run(main())
    assert raw.parse() == Invoice(number="INV-7", total=12.5, paid=True) and beta.invoice == "INV-7"
