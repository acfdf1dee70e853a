"""Structured calls the way a user makes them: SDK clients pointed at an emulator, wrapped, on any endpoint
(OpenAI Chat Completions and Responses, Anthropic Messages), sync or async, streamed or not; the printer ticket
most wrapper tests ask for; a retry policy that records its waits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

import guardrail
from guardrail.call.options import RetryPolicy
from guardrail.testing import Emulator


@dataclass(frozen=True)
class RecordingRetry(RetryPolicy):
    """A :class:`~guardrail.RetryPolicy` that records every wait the attempt loop was told to make before a retry.

    The waits are still computed by the real policy (``Retry-After``, its cap, full jitter, the deadline stop)
    and still slept: :meth:`wait` only writes each wait it returns into :attr:`waits` (a stop, ``None``, is not a
    wait). Tests assert those numbers ("the server's Retry-After was honoured", "capped at max_wait", "no wait
    at all") instead of measuring elapsed time.
    """

    waits: list[float] = field(default_factory=list, compare=False)

    def wait(self, tries: int, failure: Any, deadline: float | None) -> float | None:
        seconds = super().wait(tries, failure, deadline)
        if seconds is not None:
            self.waits.append(seconds)
        return seconds


#: Anthropic's Messages API on the cloud platforms (anthropic's AnthropicBedrock and AnthropicVertex clients), with
#: a model each one serves structured outputs for: "APIs" of the fault matrix beside the three endpoints.
PLATFORM_MODELS = {"bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "vertex": "claude-opus-4-6"}


def endpoint_client(emu: Emulator, api: str, is_async: bool, timeout: float = 10.0) -> Any:
    """The SDK client for ``api`` (``chat``/``responses``: OpenAI, ``messages``: Anthropic, ``bedrock``/``vertex``:
    Anthropic's platform clients, with made-up credentials) pointed at ``emu``."""
    import anthropic
    import openai

    if api == "bedrock":
        bedrock: Any = anthropic.AsyncAnthropicBedrock if is_async else anthropic.AnthropicBedrock
        return bedrock(base_url=emu.base_url, aws_access_key="x", aws_secret_key="y", aws_region="us-east-1",
                       timeout=timeout)
    if api == "vertex":
        vertex: Any = anthropic.AsyncAnthropicVertex if is_async else anthropic.AnthropicVertex
        return vertex(base_url=emu.base_url + "/v1", region="us-east5", project_id="proj", access_token="x",
                      timeout=timeout)
    if api == "messages":
        cls: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return cls(base_url=emu.anthropic_base_url, api_key="test", timeout=timeout)
    cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    return cls(base_url=emu.openai_base_url, api_key="test", timeout=timeout)


def endpoint_method(client: Any, api: str) -> tuple[Any, dict[str, Any]]:
    """The wrapped ``client``'s method for ``api`` and the SDK arguments of a small triage request."""
    if api in ("messages", *PLATFORM_MODELS):
        return client.messages, {"model": PLATFORM_MODELS.get(api, "claude-haiku-4-5"), "max_tokens": 200,
                                 "messages": [{"role": "user", "content": "triage"}]}
    if api == "responses":
        return client.responses, {"model": "gpt-4o", "input": "triage"}
    return client.chat.completions, {"model": "gpt-4o", "messages": [{"role": "user", "content": "triage"}]}


def structured_call(emu: Emulator, api: str, is_async: bool, stream: bool, response_model: Any, *,
                    retry: RetryPolicy, timeout: float = 10.0) -> Any:
    """One structured call the way a user makes it, on any endpoint, sync or async, streamed or not; returns
    the value (or raises what the call raises)."""
    import asyncio

    client = guardrail.wrap(endpoint_client(emu, api, is_async, timeout), retry=retry)
    method, kwargs = endpoint_method(client, api)
    if not is_async:
        if stream:
            with method.create_partial(response_model=response_model, **kwargs) as items:
                return list(items)[-1]
        return method.create(response_model=response_model, **kwargs)

    async def go() -> Any:
        if stream:
            async with method.create_partial(response_model=response_model, **kwargs) as items:
                return [item async for item in items][-1]
        return await method.create(response_model=response_model, **kwargs)

    return asyncio.run(go())


# ------------------------------------------------------------------------------------- contracts shared by modules


class LooseTicket(BaseModel):
    """A triage ticket with no bounds on its fields (any integer urgency): fault tests, where only the transport
    may fail."""

    urgency: int
    summary: str


# ----------------------------------------------------------------------- a printer ticket, asked for on any endpoint


class Ticket(BaseModel):
    """The printer ticket of the wrapper's tests (its name, ``Ticket``, is the schema and tool name sent)."""

    title: str
    priority: int = Field(ge=1, le=5)
    tags: list[str] = []


class TimeSpan(BaseModel):
    """A list item with a start and an end (a list root is wrapped as ``{"result": [...]}`` for the vendor)."""

    start: float
    end: float


PRINTER_GOOD = '{"title": "Printer on fire", "priority": 5, "tags": ["hw"]}'
PRINTER_TICKET = Ticket(title="Printer on fire", priority=5, tags=["hw"])
PRINTER_BAD = '{"title": 7.5, "priority": 9}'  # a float is no lossless string (an int is)
PRINTER_MESSAGES = [{"role": "user", "content": "File a ticket for the burning printer."}]
PRINTER_RETRY = guardrail.RetryPolicy(max_tries=3, initial_wait=0.01, max_wait=0.2, deadline=10)
CLAUDE = "claude-sonnet-5-5"
#: The three endpoints: OpenAI Chat Completions and Responses, Anthropic Messages.
APIS = ["chat", "responses", "messages"]


def sdk_client(emu: Emulator, api: str, *, is_async: bool = False, timeout: float = 5, max_retries: int = 2) -> Any:
    """The real SDK client for ``api`` pointed at ``emu`` (the SDK's own retries as given)."""
    import anthropic
    import openai

    if api == "messages":
        cls: Any = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return cls(base_url=emu.anthropic_base_url, api_key="test", timeout=timeout, max_retries=max_retries)
    cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    return cls(base_url=emu.openai_base_url, api_key="test", timeout=timeout, max_retries=max_retries)


def wrapped_client(emu: Emulator, api: str, *, is_async: bool = False, retry: RetryPolicy = PRINTER_RETRY,
                   timeout: float = 5, **options: Any) -> Any:
    """``guardrail.wrap`` over :func:`sdk_client`."""
    return guardrail.wrap(sdk_client(emu, api, is_async=is_async, timeout=timeout), retry=retry, **options)


def api_method(wrapped: Any, api: str) -> Any:
    """The wrapped client's create-method namespace for ``api``."""
    return {"chat": lambda: wrapped.chat.completions, "responses": lambda: wrapped.responses,
            "messages": lambda: wrapped.messages}[api]()


def printer_args(api: str, **kwargs: Any) -> dict[str, Any]:
    """The SDK arguments of a minimal call on ``api`` (overridable)."""
    if api == "chat":
        base: dict[str, Any] = {"model": "gpt-4o", "messages": PRINTER_MESSAGES}
    elif api == "responses":
        base = {"model": "gpt-4o", "input": "File a ticket for the burning printer."}
    else:
        base = {"model": CLAUDE, "max_tokens": 256, "messages": PRINTER_MESSAGES}
    base.update(kwargs)
    return base


def printer_call(emu: Emulator, api: str, *, result: bool = True, **kwargs: Any) -> Any:
    """One structured call on ``api`` (a :class:`Ticket` unless ``response_model`` says otherwise): the result
    record (``create_with_result``) or, with ``result=False``, the value; ``wrap_options`` go to ``wrap``."""
    kwargs.setdefault("response_model", Ticket)
    wrap_options = kwargs.pop("wrap_options", {})
    target = api_method(wrapped_client(emu, api, **wrap_options), api)
    fn = target.create_with_result if result else target.create
    return fn(**printer_args(api, **kwargs))


def printer_acall(emu: Emulator, api: str, *, result: bool = True, **kwargs: Any) -> Any:
    """:func:`printer_call` through the async client (in a fresh event loop)."""
    import asyncio

    kwargs.setdefault("response_model", Ticket)

    async def main() -> Any:
        target = api_method(wrapped_client(emu, api, is_async=True), api)
        fn = target.create_with_result if result else target.create
        return await fn(**printer_args(api, **kwargs))

    return asyncio.run(main())


def conversation(api: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation a request sent: Responses' ``input`` items, or the ``messages``."""
    return list(body["input"] if api == "responses" else body["messages"])
