"""guardrail.wrap(anthropic.AnthropicBedrock / AnthropicVertex) end to end: the real SDK platform clients (their
URL rewriting, SigV4 signing or bearer token, Bedrock's AWS event-stream decoding) against the emulator's
platform routes, sync and async, streamed or not, with the platform's capability rows."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
from pydantic import BaseModel

import guardrail
from guardrail.call.client import WrappedClient, unwrap
from guardrail.testing import Emulator, reply

PLATFORMS = ["bedrock", "vertex"]
#: A model each platform's row serves structured outputs for, and one it does not.
NATIVE = {"bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "vertex": "claude-opus-4-6"}
OLDER = {"bedrock": "anthropic.claude-3-5-haiku-20241022-v1:0", "vertex": "claude-3-5-haiku@20241022"}
PROVIDER = {"bedrock": "aws.bedrock", "vertex": "gcp.vertex_ai"}
FAST = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.2, deadline=10)
MESSAGES = [{"role": "user", "content": "Read the invoice."}]
GOOD = '{"number": "INV-7", "total": 12.5, "paid": true}'


class Invoice(BaseModel):
    number: str
    total: float
    paid: bool = False


def raw_client(emu: Emulator, platform: str, *, is_async: bool = False) -> Any:
    """The SDK's platform client pointed at the emulator, with made-up credentials (nothing leaves loopback)."""
    if platform == "bedrock":
        bedrock: Any = anthropic.AsyncAnthropicBedrock if is_async else anthropic.AnthropicBedrock
        return bedrock(base_url=emu.base_url, aws_access_key="x", aws_secret_key="y", aws_region="us-east-1",
                       timeout=5)
    vertex: Any = anthropic.AsyncAnthropicVertex if is_async else anthropic.AnthropicVertex
    return vertex(base_url=emu.base_url + "/v1", region="us-east5", project_id="proj", access_token="x", timeout=5)


def create(emu: Emulator, platform: str, **kwargs: Any) -> Any:
    kwargs.setdefault("model", NATIVE[platform])
    kwargs.setdefault("max_tokens", 256)
    kwargs.setdefault("messages", MESSAGES)
    client = guardrail.wrap(raw_client(emu, platform), retry=FAST)
    return client.messages.create_with_result(response_model=Invoice, **kwargs)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_wrapped_platform_client_is_the_sdk_client(emu: Emulator, platform: str) -> None:
    raw = raw_client(emu, platform)
    client = guardrail.wrap(raw)
    assert isinstance(client, type(raw)) and isinstance(client, WrappedClient)
    assert unwrap(client) is raw
    emu.script(reply.text("hi"))
    message = client.messages.create(model=NATIVE[platform], max_tokens=10, messages=MESSAGES)
    assert message.content[0].text == "hi"
    assert "output_config" not in emu.requests[0].body
    assert isinstance(client.with_options(timeout=3), WrappedClient)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_native_mode_on_the_platform_wire(emu: Emulator, platform: str) -> None:
    emu.script(reply.answer(GOOD))
    result = create(emu, platform)
    assert result.value == Invoice(number="INV-7", total=12.5, paid=True)
    assert result.mode == "native" and result.provider == PROVIDER[platform]
    sent = emu.requests[0]
    assert sent.platform == platform and sent.model == NATIVE[platform]
    assert "model" not in sent.body and isinstance(sent.body["anthropic_version"], str)
    assert sent.body["output_config"]["format"]["type"] == "json_schema"
    if platform == "bedrock":
        assert sent.path.endswith("/invoke") and sent.headers["authorization"].startswith("AWS4-HMAC-SHA256")
    else:
        assert sent.path.endswith(":rawPredict") and "/locations/us-east5/" in sent.path
        assert sent.headers["authorization"] == "Bearer x"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_platforms_price_is_the_cost(emu: Emulator, platform: str) -> None:
    """genai-prices prices Claude at each platform (Bedrock's model ids under "aws", Vertex's under "google")."""
    emu.script(reply.answer(GOOD, usage=(1000, 100)))
    result = create(emu, platform)
    assert result.cost_usd is not None and result.cost_usd > 0


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_model_without_structured_outputs_starts_at_a_forced_tool(emu: Emulator, platform: str) -> None:
    emu.script(reply.answer(GOOD))
    result = create(emu, platform, model=OLDER[platform])
    assert result.mode == "tool" and result.value.total == 12.5
    body = emu.requests[0].body
    assert "output_config" not in body and "strict" not in body["tools"][0]
    assert body["tool_choice"] == {"type": "tool", "name": "Invoice", "disable_parallel_tool_use": True}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_schema_rejection_walks_down_the_modes(emu: Emulator, platform: str) -> None:
    emu.script(reply.schema_rejected(), reply.answer(GOOD))
    result = create(emu, platform)
    assert result.mode == "tool" and result.value.number == "INV-7"
    assert result.attempts[0].error is not None and "output_config" not in emu.requests[1].body


def test_vertex_without_the_structured_outputs_policy_walks_down_to_the_prompt(emu: Emulator) -> None:
    """Vertex AI refuses both fields with Anthropic's validation message until the organization allows
    structured outputs; each refusal moves the call to the next mode."""
    emu.script(reply.error(400, message="output_config.format: Extra inputs are not permitted"),
               reply.error(400, message="tools.0.custom.strict: Extra inputs are not permitted"),
               reply.answer(GOOD))
    result = create(emu, "vertex")
    assert result.mode == "prompt" and result.value.total == 12.5
    assert [r.mode_fields["format"] for r in emu.requests] == ["json_schema", None, None]
    assert emu.requests[1].mode_fields["strict_tools"] == ["Invoice"] and not emu.requests[2].tools


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_truncation_raises_the_limit_once(emu: Emulator, platform: str, stream: bool) -> None:
    emu.script(reply.truncated('{"number": "IN'), reply.answer(GOOD))
    result = create(emu, platform, max_tokens=40, stream=stream)
    assert result.value.number == "INV-7"
    assert [r.max_tokens for r in emu.requests] == [40, 80] and emu.requests[0].stream == stream


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_refusal_is_an_answer(emu: Emulator, platform: str, stream: bool) -> None:
    emu.script(reply.refusal("I won't read that."))
    with pytest.raises(guardrail.Refused) as caught:
        create(emu, platform, stream=stream)
    assert "won't" in caught.value.refusal and len(emu.requests) == 1


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("fault", ["overloaded", "rate_limited", "server_error", "drop", "cut"])
def test_transport_faults_are_retried(emu: Emulator, platform: str, fault: str) -> None:
    first = {"overloaded": reply.overloaded(), "rate_limited": reply.rate_limited(),
             "server_error": reply.server_error(), "drop": reply.drop(), "cut": reply.cut(GOOD)}[fault]
    emu.script(first, reply.answer(GOOD))
    result = create(emu, platform)
    assert result.value.paid and result.vendor_calls == 2


def test_bedrock_errors_come_in_bedrocks_shape(emu: Emulator) -> None:
    emu.script(reply.overloaded(), reply.rate_limited(), reply.answer(GOOD))
    create(emu, "bedrock")
    assert emu.requests[0].platform == "bedrock"
    # the SDK saw Bedrock's answers: a 503 and a 429 with {"message"} (the attempts record what it raised)
    raw = raw_client(emu, "bedrock")
    emu.script(reply.overloaded())
    with pytest.raises(anthropic.APIStatusError) as caught:
        raw.with_options(max_retries=0).messages.create(model="m", max_tokens=5, messages=MESSAGES)
    assert caught.value.status_code == 503 and caught.value.body == {
        "message": "Bedrock is unable to process your request."}
    assert caught.value.response.headers["x-amzn-errortype"].startswith("ServiceUnavailableException")


def test_vertex_rate_limits_come_in_googles_shape(emu: Emulator) -> None:
    emu.script(reply.rate_limited())
    with pytest.raises(anthropic.RateLimitError) as caught:
        raw_client(emu, "vertex").with_options(max_retries=0).messages.create(
            model="claude-opus-4-6", max_tokens=5, messages=MESSAGES)
    assert caught.value.body["error"]["status"] == "RESOURCE_EXHAUSTED"  # type: ignore[index]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_failure_mid_stream_is_retried(emu: Emulator, platform: str) -> None:
    """Bedrock sends it as an event-stream ``exception`` message, Vertex AI as Anthropic's ``error`` event."""
    emu.script(reply.stream_error(text_before='{"number": '), reply.answer(GOOD))
    result = create(emu, platform, stream=True)
    assert result.value.number == "INV-7" and result.vendor_calls == 2
    assert emu.requests[0].stream and ("stream" in emu.requests[0].body) == (platform == "vertex")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_streamed_previews(emu: Emulator, platform: str) -> None:
    emu.script(reply.answer(GOOD).streamed_in(4))
    client = guardrail.wrap(raw_client(emu, platform), retry=FAST)
    with client.messages.create_partial(model=NATIVE[platform], max_tokens=256, messages=MESSAGES,
                                        response_model=Invoice) as previews:
        seen = list(previews)
    assert len(seen) > 2 and seen[-1] == Invoice(number="INV-7", total=12.5, paid=True)
    sent = emu.requests[0]
    assert sent.path.endswith("invoke-with-response-stream" if platform == "bedrock" else ":streamRawPredict")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_async_platform_clients(emu: Emulator, platform: str) -> None:
    emu.script(reply.answer(GOOD), reply.stream_error(), reply.answer(GOOD), reply.answer(GOOD).streamed_in(5))

    async def main() -> tuple[Any, Any, list[Any]]:
        client = guardrail.wrap(raw_client(emu, platform, is_async=True), retry=FAST)
        kwargs: dict[str, Any] = {"model": NATIVE[platform], "max_tokens": 256, "messages": MESSAGES,
                                  "response_model": Invoice}
        first = await client.messages.create(**kwargs)
        second = await client.messages.create_with_result(stream=True, **kwargs)
        async with client.messages.create_partial(**kwargs) as previews:
            seen = [item async for item in previews]
        return first, second, seen

    first, second, seen = asyncio.run(main())
    assert first == second.value == seen[-1] == Invoice(number="INV-7", total=12.5, paid=True)
    assert second.vendor_calls == 2 and second.provider == PROVIDER[platform]


def test_the_emulator_refuses_a_body_not_in_the_platforms_shape(emu: Emulator) -> None:
    """What the SDK moves into the URL must not also be in the body (Bedrock's own 400)."""
    raw = raw_client(emu, "bedrock").with_options(max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        raw.post("/model/m/invoke", body={"model": "m", "max_tokens": 5, "messages": MESSAGES,
                                          "anthropic_version": "bedrock-2023-05-31"}, cast_to=object)
    assert "extraneous key [model]" in str(caught.value) and len(emu.requests) == 1


@pytest.mark.parametrize("platform", PLATFORMS)
def test_beta_messages_and_raw_responses_on_a_platform(emu: Emulator, platform: str) -> None:
    """``beta.messages`` (betas travel as the ``anthropic_beta`` body field on Bedrock), and the raw flavor."""
    client = guardrail.wrap(raw_client(emu, platform), retry=FAST)
    emu.script(reply.answer(GOOD), reply.answer(GOOD))
    result = client.beta.messages.create_with_result(model=NATIVE[platform], max_tokens=256, messages=MESSAGES,
                                                     response_model=Invoice, betas=["context-1m-2025-08-07"])
    assert result.value.number == "INV-7" and result.provider == PROVIDER[platform]
    if platform == "bedrock":
        assert emu.requests[0].body["anthropic_beta"] == ["context-1m-2025-08-07"]
    raw = client.messages.with_raw_response.create(model=NATIVE[platform], max_tokens=256, messages=MESSAGES,
                                                   response_model=Invoice)
    assert raw.parse() == result.value
