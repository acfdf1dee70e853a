"""Checked by mypy in CI (not run): ``guardrail.wrap`` keeps the types of structured calls, per client class.

Every line here must type-check as written (no ``type: ignore``): the annotations say what a user's type
checker infers. test_wrap_types_checked.py (next to it) checks the other half, that mistakes are reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, Optional

import anthropic
import google.genai
import openai
from pydantic import BaseModel, Field

import guardrail
import guardrail.call.client_types
from guardrail.call.iterable import AsyncItemStream, ItemStream
from guardrail.call.methods import RawStructured
from guardrail.call.streaming import AsyncStructuredStream, StructuredStream


class Ticket(BaseModel):
    title: str
    priority: int


MESSAGES: list[dict[str, str]] = [{"role": "user", "content": "File a ticket."}]


def check_openai(raw: openai.OpenAI) -> None:
    client = guardrail.wrap(raw)
    ticket: Ticket = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    many: list[Ticket] = client.chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                        response_model=list[Ticket])
    result: guardrail.Result[Ticket] = client.chat.completions.create_with_result(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket, max_attempts=2, mode="json")
    stream: StructuredStream[Ticket] = client.chat.completions.create_partial(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    for item in client.chat.completions.create_iterable(model="gpt-4o", messages=MESSAGES, response_model=Ticket):
        one: Ticket = item
        print(one)
    from_responses: Ticket = client.responses.create(model="gpt-4o", input="x", response_model=Ticket)
    beta: Ticket = client.beta.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    beta_responses: Ticket = client.beta.responses.create(model="gpt-4o", input="x", response_model=Ticket)
    faster: Ticket = client.with_options(timeout=5).chat.completions.create(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    copied: Ticket = client.copy(max_retries=1).responses.create(model="gpt-4o", input="x", response_model=Ticket)
    raw_call: RawStructured[Ticket] = client.with_raw_response.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    parsed: Ticket = raw_call.parse()
    headers: Mapping[str, str] = raw_call.headers
    status: int = raw_call.status_code
    method_raw: RawStructured[Ticket] = client.chat.completions.with_raw_response.create(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    passthrough: Any = client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    streamed: Any = client.with_streaming_response.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    models: Any = client.models.list()  # everything else is the SDK's own
    vendor: str = client.vendor
    again: guardrail.call.client_types.OpenAIClient = guardrail.wrap(client.with_options(timeout=1))
    print(ticket, many, result, stream, from_responses, beta, beta_responses, faster, copied, parsed, headers,
          status, method_raw, passthrough, streamed, models, vendor, again)


async def check_async_openai(raw: openai.AsyncOpenAI) -> None:
    client = guardrail.wrap(raw)
    ticket: Ticket = await client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    result: guardrail.Result[Ticket] = await client.responses.create_with_result(
        model="gpt-4o", input="x", response_model=Ticket)
    stream: AsyncStructuredStream[Ticket] = client.chat.completions.create_partial(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    items: AsyncItemStream[Ticket] = client.responses.create_iterable(model="gpt-4o", input="x", response_model=Ticket)
    async for item in items:
        one: Ticket = item
        print(one)
    raw_call: RawStructured[Ticket] = await client.with_raw_response.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    beta: Ticket = await client.with_options(max_retries=0).beta.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket)
    print(ticket, result, stream, raw_call, beta)


def check_anthropic(raw: anthropic.Anthropic) -> None:
    client = guardrail.wrap(raw)
    ticket: Ticket = client.messages.create(model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES,
                                            response_model=Ticket)
    result: guardrail.Result[Ticket] = client.messages.create_with_result(
        model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES, response_model=Ticket)
    beta: Ticket = client.beta.messages.create(model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES,
                                               response_model=Ticket)
    raw_call: RawStructured[Ticket] = client.with_raw_response.messages.create(
        model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES, response_model=Ticket)
    again: Ticket = client.with_options(timeout=30).messages.create(
        model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES, response_model=Ticket)
    print(ticket, result, beta, raw_call, again)


async def check_async_anthropic(raw: anthropic.AsyncAnthropic) -> None:
    client = guardrail.wrap(raw)
    ticket: Ticket = await client.messages.create(model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES,
                                                  response_model=Ticket)
    result: guardrail.Result[Ticket] = await client.beta.messages.create_with_result(
        model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES, response_model=Ticket)
    raw_call: RawStructured[Ticket] = await client.messages.with_raw_response.create(
        model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES, response_model=Ticket)
    print(ticket, result, raw_call)


def check_platforms(bedrock: anthropic.AnthropicBedrock, vertex: anthropic.AnthropicVertex) -> None:
    for client in (guardrail.wrap(bedrock), guardrail.wrap(vertex)):
        ticket: Ticket = client.messages.create(model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES,
                                                response_model=Ticket)
        raw_call: RawStructured[Ticket] = client.messages.with_raw_response.create(
            model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES, response_model=Ticket)
        again: Ticket = client.with_options(timeout=30).messages.create(
            model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES, response_model=Ticket)
        print(ticket, raw_call, again)


async def check_async_platforms(bedrock: anthropic.AsyncAnthropicBedrock) -> None:
    client = guardrail.wrap(bedrock)
    result: guardrail.Result[Ticket] = await client.messages.create_with_result(
        model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES, response_model=Ticket)
    print(result)


def check_type_expressions(raw: openai.OpenAI) -> None:
    """Type expressions that are not classes are accepted; what they give is typed as far as mypy can."""
    client = guardrail.wrap(raw)
    label: Any = client.chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                response_model=Literal["bug", "feature"])
    maybe: Ticket | None = client.chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                          response_model=Ticket | None)
    optional: Ticket | None = client.chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                             response_model=Optional[Ticket])  # noqa: UP045
    bounded: int = client.chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                  response_model=Annotated[int, Field(ge=1)])
    pairs: dict[str, int] = client.chat.completions.create(model="gpt-4o", messages=MESSAGES,
                                                           response_model=dict[str, int])
    schema: dict[str, Any] = {"type": "object", "properties": {"title": {"type": "string"}}}
    data: Any = client.chat.completions.create(model="gpt-4o", messages=MESSAGES, response_model=schema)
    print(label, maybe, optional, bounded, pairs, data)


def check_fallback(unknown: Any) -> None:
    client = guardrail.wrap(unknown)  # not an SDK client the checker knows: Any, as before
    value: int = client.anything()
    print(value)


def check_gemini(raw: google.genai.Client) -> None:
    client = guardrail.wrap(raw)
    ticket: Ticket = client.models.generate_content(model="gemini-2.5-flash", contents="x", response_model=Ticket)
    result: guardrail.Result[Ticket] = client.models.generate_content_with_result(
        model="gemini-2.5-flash", contents="x", response_model=Ticket, mode="tool")
    stream: StructuredStream[Ticket] = client.models.generate_content_stream(
        model="gemini-2.5-flash", contents="x", response_model=Ticket)
    plain: Any = client.models.generate_content(model="gemini-2.5-flash", contents="x")
    items: ItemStream[Ticket] = client.models.generate_content_iterable(
        model="gemini-2.5-flash", contents="x", response_model=Ticket)
    print(items)
    same: guardrail.call.client_types.GeminiClient = guardrail.wrap(client)
    assert ticket and result and stream and plain and same and client.vendor


async def check_gemini_async(raw: google.genai.Client) -> None:
    client = guardrail.wrap(raw).aio
    ticket: Ticket = await client.models.generate_content(model="gemini-2.5-flash", contents="x",
                                                          response_model=Ticket)
    result: guardrail.Result[Ticket] = await client.models.generate_content_with_result(
        model="gemini-2.5-flash", contents="x", response_model=Ticket)
    stream: AsyncStructuredStream[Ticket] = client.models.generate_content_stream(
        model="gemini-2.5-flash", contents="x", response_model=Ticket)
    alone = guardrail.wrap(raw.aio)
    other: Ticket = await alone.models.generate_content(model="gemini-2.5-flash", contents="x", response_model=Ticket)
    assert ticket and result and stream and other


def check_chunked(raw: openai.OpenAI, araw: anthropic.AsyncAnthropic) -> None:
    from guardrail.call import ChunkedResult, Chunking

    client = guardrail.wrap(raw)
    chunking = Chunking(key="title")
    items: ChunkedResult[Ticket] = client.chat.completions.create_chunked(
        model="gpt-4o", messages=MESSAGES, response_model=Ticket, chunking=chunking)
    listed: list[Ticket] = client.chat.completions.create_chunked(
        model="gpt-4o", messages=MESSAGES, response_model=list[Ticket], chunking=chunking).value
    print(items, listed)
    aclient = guardrail.wrap(araw)

    async def run() -> list[Ticket]:
        done = await aclient.messages.create_chunked(model="claude-sonnet-4-5", max_tokens=500, messages=MESSAGES,
                                                     response_model=Ticket, chunking=chunking)
        return done.value

    print(run)


def check_text_constraint_and_examples(raw: openai.OpenAI) -> None:
    from guardrail.local import Grammar, Regex

    client = guardrail.wrap(raw, server="vllm")
    code: str = client.chat.completions.create(model="m", messages=[], response_model=Regex(r"[A-Z]{3}"))
    yes_no: guardrail.Result[Any] = client.chat.completions.create_with_result(
        model="m", messages=[], response_model=Grammar('root ::= "yes" | "no"'))
    ticket: Ticket = client.chat.completions.create(model="m", messages=[], response_model=Ticket,
                                                    examples=[Ticket(title="t", priority=1)])
    assert code and yes_no and ticket
