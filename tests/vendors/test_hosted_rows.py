"""Hosted OpenAI-compatible providers picked by the base URL's host: each row's first mode is the one used, and a
400 for it walks down to the next. The real openai SDK sends to the provider's real base URL; the HTTP client's
transport delivers the request to the emulator (tests/support/hosted.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel
from support.hosted import hosted_client

import guardrail
from guardrail.errors import ConfigError
from guardrail.testing import Emulator, RecordedRequest, reply
from guardrail.vendors.profiles import OPENAI_COMPATIBLE, PROFILES, capabilities, provider_for_host

GOOD = '{"city": "Lyon", "people": 3}'
MESSAGES = [{"role": "user", "content": "Where and how many?"}]


class Trip(BaseModel):
    city: str
    people: int


#: (provider, base URL as the provider documents it, a model, the mode used first, the mode after a 400 for it)
CASES = [
    ("openai", "https://api.openai.com/v1", "gpt-4o", "native", "tool"),
    ("azure.ai.openai", "https://my-resource.openai.azure.com/openai/v1", "my-gpt-4o-deployment", "native", "tool"),
    ("groq", "https://api.groq.com/openai/v1", "openai/gpt-oss-120b", "native", "tool"),
    ("groq", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile", "tool", "json"),
    ("together", "https://api.together.xyz/v1", "meta-llama/Llama-3.3-70B-Instruct-Turbo", "tool", "json"),
    ("fireworks", "https://api.fireworks.ai/inference/v1", "accounts/fireworks/models/deepseek-v3p1", "native",
     "tool"),
    ("deepseek", "https://api.deepseek.com", "deepseek-chat", "tool", "json"),
    ("mistral_ai", "https://api.mistral.ai/v1", "mistral-large-latest", "native", "tool"),
    ("openrouter", "https://openrouter.ai/api/v1", "openai/gpt-4o", "native", "tool"),
    ("openrouter", "https://openrouter.ai/api/v1", "meta-llama/llama-3.3-70b-instruct", "tool", "json"),
    ("x_ai", "https://api.x.ai/v1", "grok-4", "native", "tool"),
    (OPENAI_COMPATIBLE, "https://llm.internal.example.com/v1", "some-model", "json", "prompt"),
]


def mode_of(request: RecordedRequest) -> str:
    """The mode a Chat Completions request asks for, read off its fields."""
    fields = request.mode_fields
    if fields["format"] == "json_schema":
        return "native"
    if fields["forced_tool"]:
        return "tool"
    return "json" if fields["format"] == "json_object" else "prompt"


def ask(emu: Emulator, base_url: str, model: str) -> Any:
    client = guardrail.wrap(hosted_client(emu, base_url))
    return client.chat.completions.create_with_result(model=model, messages=MESSAGES, response_model=Trip)


@pytest.mark.parametrize(("provider", "base_url", "model", "first", "second"), CASES)
def test_the_rows_first_mode_is_used(emu: Emulator, provider: str, base_url: str, model: str, first: str,
                                     second: str) -> None:
    emu.script(reply.answer(GOOD))
    result = ask(emu, base_url, model)
    assert result.value == Trip(city="Lyon", people=3)
    assert result.provider == provider and result.mode == first == mode_of(emu.requests[0])
    assert emu.requests[0].path.endswith("/chat/completions")


@pytest.mark.parametrize(("provider", "base_url", "model", "first", "second"), CASES)
def test_a_400_for_the_mode_walks_down(emu: Emulator, provider: str, base_url: str, model: str, first: str,
                                       second: str) -> None:
    refusal = (reply.error(400, message="response_format type json_object is not supported for this model")
               if first == "json" else reply.schema_rejected())
    emu.script(refusal, reply.answer(GOOD))
    result = ask(emu, base_url, model)
    assert result.value.people == 3 and result.mode == second
    assert [mode_of(r) for r in emu.requests] == [first, second]
    assert result.attempts[0].error is not None


def test_async_client_presenting_as_a_provider(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))

    async def main() -> Any:
        client = guardrail.wrap(hosted_client(emu, "https://api.mistral.ai/v1", is_async=True))
        return await client.chat.completions.create_with_result(model="mistral-small-latest", messages=MESSAGES,
                                                                response_model=Trip)

    result = asyncio.run(main())
    assert result.provider == "mistral_ai" and result.mode == "native"


@pytest.mark.parametrize(("host", "provider"), [
    ("api.groq.com", "groq"), ("API.GROQ.COM.", "groq"), ("eastus.openai.azure.com", "azure.ai.openai"),
    ("openai.azure.com.evil.example", OPENAI_COMPATIBLE), ("groq.com", OPENAI_COMPATIBLE),
    ("127.0.0.1", None), ("localhost", None), ("::1", None), ("[::1]", None), ("10.0.0.5", OPENAI_COMPATIBLE),
])
def test_hosts(host: str, provider: str | None) -> None:
    """Hosts match exactly, or by a suffix the row writes with a leading dot; loopback is read as before."""
    assert provider_for_host(host) == provider


def test_an_azure_deployment_named_like_a_reasoning_model_gets_its_row() -> None:
    assert not capabilities("azure.ai.openai", "o3-mini").temperature
    assert capabilities("azure.ai.openai", "my-deployment").native


def test_every_hosted_row_says_where_its_facts_came_from() -> None:
    assert all(row.source for row in PROFILES)
    hosted = {row.provider for row in PROFILES if row.hosts}
    assert hosted >= {"openai", "azure.ai.openai", "groq", "together", "fireworks", "deepseek", "mistral_ai",
                      "openrouter", "x_ai"}


# -- provider=: a client behind a proxy or gateway on a host no row names ----------------------------------------
PROXY = "https://llm-gateway.internal.example.com/v1"


@pytest.mark.parametrize(("provider", "model", "first"), [("openai", "gpt-4o", "native"),
                                                          ("groq", "openai/gpt-oss-120b", "native"),
                                                          ("deepseek", "deepseek-chat", "tool")])
def test_provider_names_the_rows_of_a_client_on_an_unknown_host(emu: Emulator, provider: str, model: str,
                                                                first: str) -> None:
    client = guardrail.wrap(hosted_client(emu, PROXY), provider=provider)
    emu.script(reply.answer(GOOD))
    result = client.chat.completions.create_with_result(model=model, messages=MESSAGES, response_model=Trip)
    assert result.provider == provider and result.mode == first == mode_of(emu.requests[-1])
    # the same client without it: no row names the host, so JSON mode
    emu.script(reply.answer(GOOD))
    plain = guardrail.wrap(hosted_client(emu, PROXY)).chat.completions.create_with_result(
        model=model, messages=MESSAGES, response_model=Trip)
    assert plain.provider == OPENAI_COMPATIBLE and mode_of(emu.requests[-1]) == "json"


def test_provider_on_an_already_wrapped_client_rewraps_it_and_its_async_twin_keeps_it(emu: Emulator) -> None:
    wrapped = guardrail.wrap(hosted_client(emu, PROXY))
    again = guardrail.wrap(wrapped, provider="openai")
    assert again is not wrapped and guardrail.wrap(again, provider="openai") is again
    emu.script(reply.answer(GOOD))
    assert again.chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                     response_model=Trip).mode == "native"
    async_client = guardrail.wrap(hosted_client(emu, PROXY, is_async=True), provider="openai")
    emu.script(reply.answer(GOOD))
    result = asyncio.run(async_client.chat.completions.create_with_result(model="gpt-4o", messages=MESSAGES,
                                                                          response_model=Trip))
    assert result.provider == "openai" and mode_of(emu.requests[-1]) == "native"


@pytest.mark.parametrize(("kwargs", "message"), [({"provider": "no-such-vendor"}, "unknown provider"),
                                                 ({"provider": "vllm"}, "unknown provider"),
                                                 ({"provider": "openai", "server": "vllm"}, "not both")])
def test_a_provider_no_row_names_or_beside_a_server_is_a_config_error(emu: Emulator, kwargs: dict[str, Any],
                                                                      message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        guardrail.wrap(hosted_client(emu, PROXY), **kwargs)
