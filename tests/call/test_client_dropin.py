"""``guardrail.wrap(client)`` is the SDK client in every way code can observe.

Each test runs on the three APIs (OpenAI Chat Completions and Responses, Anthropic Messages), with the sync and
the async client, through the real SDKs against the emulator. A scenario is written once as a generator that
yields each SDK call's return value; :func:`play` runs it, awaiting what the async client returns. The SDKs' own
test suites run against a wrapped client too (tests/call/test_sdk_suites.py).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Generator
from typing import Any

import anthropic
import openai
import pytest
from support.calls import APIS, PRINTER_RETRY, Ticket, api_method, printer_args, sdk_client

import guardrail
from guardrail.call import WrappedClient
from guardrail.errors import UsageError
from guardrail.testing import Emulator, reply

GOOD = '{"title": "Printer on fire", "priority": 5, "tags": ["hw"]}'
MODES = [pytest.param(False, id="sync"), pytest.param(True, id="async")]
Scenario = Generator[Any, Any, None]


def play(is_async: bool, scenario: Callable[[], Scenario]) -> None:
    """Run a scenario: each value it yields is sent back, awaited first when it is awaitable (async client).
    The whole scenario runs in one event loop, where the async client lives."""
    if not is_async:
        steps = scenario()
        value = None
        try:
            while True:
                value = steps.send(value)
        except StopIteration:
            return

    async def main() -> None:
        steps = scenario()
        step = steps.send
        value: Any = None
        try:
            while True:
                value = step(value)
                step = steps.send
                if inspect.isawaitable(value):
                    try:
                        value = await value
                    except Exception as error:  # raised where the scenario yielded it (inside its pytest.raises)
                        step, value = steps.throw, error
        except StopIteration:
            return

    asyncio.run(main())


def sdk_class(api: str, is_async: bool) -> type:
    if api == "messages":
        return anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
    return openai.AsyncOpenAI if is_async else openai.OpenAI


def resources(client: Any, api: str) -> dict[str, Any]:
    """Every way the SDK offers to reach the structured ``create`` of ``api`` (and the twins on the way)."""
    if api == "messages":
        paths = ["messages", "beta", "beta.messages", "with_raw_response", "with_raw_response.messages",
                 "messages.with_raw_response", "with_streaming_response.messages", "messages.with_streaming_response",
                 "with_raw_response.beta.messages"]
    elif api == "chat":
        paths = ["chat", "chat.completions", "beta.chat.completions", "with_raw_response.chat.completions",
                 "chat.with_raw_response.completions", "chat.completions.with_raw_response",
                 "with_streaming_response.chat.completions", "chat.completions.with_streaming_response"]
    else:
        paths = ["responses", "beta.responses", "with_raw_response.responses", "responses.with_raw_response",
                 "with_raw_response.beta.responses", "with_streaming_response.responses"]
    found = {}
    for path in paths:
        node = client
        for name in path.split("."):
            node = getattr(node, name)
        found[path] = node
    return found


# -- 1. isinstance ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_the_wrapped_client_and_its_resources_are_instances_of_the_sdks_classes(emu: Emulator, api: str,
                                                                               is_async: bool) -> None:
    def scenario() -> Scenario:
        raw = sdk_client(emu, api, is_async=is_async)
        client = guardrail.wrap(raw)
        assert isinstance(client, sdk_class(api, is_async)) and isinstance(client, WrappedClient)
        assert not isinstance(raw, WrappedClient)
        plain, ours = resources(raw, api), resources(client, api)
        for path, resource in plain.items():
            assert isinstance(ours[path], type(resource)), path
        emu.script(reply.answer(GOOD))
        ticket = yield api_method(client, api).create(**printer_args(api), response_model=Ticket)
        assert ticket == Ticket(title="Printer on fire", priority=5, tags=["hw"])

    play(is_async, scenario)


@pytest.mark.parametrize("is_async", MODES)
def test_an_azure_client_stays_azure(emu: Emulator, is_async: bool) -> None:
    cls: Any = openai.AsyncAzureOpenAI if is_async else openai.AzureOpenAI
    raw = cls(api_key="test", api_version="2024-10-21", azure_endpoint=emu.openai_base_url.removesuffix("/v1"))
    client = guardrail.wrap(raw)
    assert isinstance(client, cls) and isinstance(client, openai.AzureOpenAI if not is_async else openai.AsyncOpenAI)
    assert isinstance(client.with_options(timeout=3), cls)


def test_a_subclass_of_an_sdk_client_stays_that_subclass(emu: Emulator) -> None:
    class Mine(openai.OpenAI):
        def ping(self) -> str:
            return "pong"

    client = guardrail.wrap(Mine(base_url=emu.openai_base_url, api_key="test"))
    assert isinstance(client, Mine) and client.ping() == "pong"


# -- 2. with / async with --------------------------------------------------------------------------------------
@pytest.mark.parametrize("api", APIS)
def test_with_gives_the_wrapped_client_and_closes_the_client(emu: Emulator, api: str) -> None:
    raw = sdk_client(emu, api)
    emu.script(reply.answer(GOOD))
    with guardrail.wrap(raw, retry=PRINTER_RETRY) as client:
        assert isinstance(client, WrappedClient)
        assert api_method(client, api).create(**printer_args(api), response_model=Ticket).priority == 5
    assert raw.is_closed()  # one client: closing the wrapper closes it


@pytest.mark.parametrize("api", APIS)
def test_async_with_gives_the_wrapped_client_and_closes_the_client(emu: Emulator, api: str) -> None:
    async def main() -> None:
        raw = sdk_client(emu, api, is_async=True)
        emu.script(reply.answer(GOOD))
        async with guardrail.wrap(raw, retry=PRINTER_RETRY) as client:
            assert isinstance(client, WrappedClient)
            ticket = await api_method(client, api).create(**printer_args(api), response_model=Ticket)
            assert ticket.priority == 5
        assert raw.is_closed()

    asyncio.run(main())


# -- 3. attribute assignment -----------------------------------------------------------------------------------
def base_url(emu: Emulator, api: str) -> str:
    return emu.anthropic_base_url if api == "messages" else emu.openai_base_url


@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_assigned_base_url_and_timeout_are_used_by_plain_and_structured_calls(
        emulators: tuple[Emulator, Emulator], api: str, is_async: bool) -> None:
    first, second = emulators

    def scenario() -> Scenario:
        client = guardrail.wrap(sdk_client(first, api, is_async=is_async), retry=PRINTER_RETRY)
        client.base_url = base_url(second, api)
        client.timeout = 7.5
        assert str(client.base_url).rstrip("/") == base_url(second, api) and client.timeout == 7.5
        second.script(reply.text("plain"), reply.answer(GOOD))
        yield api_method(client, api).create(**printer_args(api))
        ticket = yield api_method(client, api).create(**printer_args(api), response_model=Ticket)
        assert ticket.priority == 5
        assert first.requests == [] and len(second.requests) == 2
        # the SDK tells the server the read timeout it uses: the one just assigned, for both calls
        assert [request.headers["x-stainless-read-timeout"] for request in second.requests] == ["7.5", "7.5"]

    play(is_async, scenario)


@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_assigned_max_retries_is_the_sdks_for_plain_calls_and_never_doubles_guardrails(
        emu: Emulator, api: str, is_async: bool) -> None:
    def scenario() -> Scenario:
        client = guardrail.wrap(sdk_client(emu, api, is_async=is_async, max_retries=0), retry=PRINTER_RETRY)
        client.max_retries = 1
        assert client.max_retries == 1
        emu.script(*[reply.error(500)] * 2)
        with pytest.raises(openai.InternalServerError if api != "messages" else anthropic.InternalServerError):
            yield api_method(client, api).create(**printer_args(api))
        assert len(emu.requests) == 2  # the SDK's try and its one retry
        emu.script(*[reply.error(500)] * PRINTER_RETRY.max_tries)
        with pytest.raises(guardrail.errors.VendorUnavailable):
            yield api_method(client, api).create(**printer_args(api), response_model=Ticket)
        assert len(emu.requests) == 2 + PRINTER_RETRY.max_tries  # guardrail's tries only, none of the SDK's
        assert client.max_retries == 1

    play(is_async, scenario)


@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_a_monkeypatched_client_method_is_used_by_plain_and_structured_calls(
        emu: Emulator, api: str, is_async: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    def scenario() -> Scenario:
        client = guardrail.wrap(sdk_client(emu, api, is_async=is_async), retry=PRINTER_RETRY)
        seen: list[str] = []
        original = client.post

        def post(path: str, **kwargs: Any) -> Any:
            seen.append(path)
            return original(path, **kwargs)

        monkeypatch.setattr(client, "post", post)
        emu.script(reply.text("plain"), reply.answer(GOOD))
        yield api_method(client, api).create(**printer_args(api))
        yield api_method(client, api).create(**printer_args(api), response_model=Ticket)
        assert len(seen) == 2 and len(emu.requests) == 2

    play(is_async, scenario)


# -- 4. one live client, no copy taken at wrap time --------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_reconfiguring_the_sdk_client_after_wrapping_moves_both_kinds_of_call(
        emulators: tuple[Emulator, Emulator], api: str, is_async: bool) -> None:
    first, second = emulators

    def scenario() -> Scenario:
        raw = sdk_client(first, api, is_async=is_async)
        client = guardrail.wrap(raw, retry=PRINTER_RETRY)
        first.script(reply.answer(GOOD))
        yield api_method(client, api).create(**printer_args(api), response_model=Ticket)
        raw.base_url = base_url(second, api)  # the client the application still holds
        raw.timeout = 6.0
        second.script(reply.text("plain"), reply.answer(GOOD))
        yield api_method(client, api).create(**printer_args(api))
        ticket = yield api_method(client, api).create(**printer_args(api), response_model=Ticket)
        assert ticket.priority == 5 and len(first.requests) == 1 and len(second.requests) == 2
        assert {request.headers["x-stainless-read-timeout"] for request in second.requests} == {"6.0"}

    play(is_async, scenario)


@pytest.mark.parametrize("is_async", MODES)
def test_a_client_the_sdk_accepted_wraps_and_calls_without_running_its_checks_again(
        emu: Emulator, is_async: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_ADMIN_KEY", raising=False)
    cls: Any = openai.AsyncOpenAI if is_async else openai.OpenAI
    # a gateway that authenticates with a header of its own: the SDK accepts the client, and its requests
    accepted = {"base_url": emu.openai_base_url, "default_headers": {"Authorization": "Bearer gateway"},
                "_enforce_credentials": False}
    with pytest.raises(openai.OpenAIError, match="Missing credentials"):
        cls(**accepted).copy()  # what re-running the constructor does: the SDK's own check

    def scenario() -> Scenario:
        raw = cls(**accepted)
        client = guardrail.wrap(raw, retry=PRINTER_RETRY)
        emu.script(reply.answer(GOOD))
        ticket = yield client.chat.completions.create(**printer_args("chat"), response_model=Ticket)
        assert ticket.priority == 5

    play(is_async, scenario)


# -- copy() / with_options() keep the wrapper and its options ---------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_copy_and_with_options_give_a_wrapped_client_with_the_same_options(
        emu: Emulator, api: str, is_async: bool) -> None:
    def scenario() -> Scenario:
        client = guardrail.wrap(sdk_client(emu, api, is_async=is_async),
                                retry=guardrail.RetryPolicy(max_tries=1, initial_wait=0.01, deadline=10))
        for other in (client.copy(timeout=4.0), client.with_options(timeout=4.0, max_retries=0)):
            assert isinstance(other, type(client)) and other is not client and other.timeout == 4.0
            assert client.timeout == 5  # a copy is another client, as the SDK's is
            emu.script(reply.error(500))
            with pytest.raises(guardrail.errors.VendorUnavailable):  # the same retry policy: one try
                yield api_method(other, api).create(**printer_args(api), response_model=Ticket)
            emu.script(reply.answer(GOOD))
            yield api_method(other, api).create(**printer_args(api), response_model=Ticket)

    play(is_async, scenario)


# -- 5. signatures and docstrings ------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_signatures_and_docstrings_are_the_sdks(emu: Emulator, api: str, is_async: bool) -> None:
    raw = sdk_client(emu, api, is_async=is_async)
    client = guardrail.wrap(raw)
    plain, ours = resources(raw, api), resources(client, api)
    for path, resource in plain.items():
        if hasattr(resource, "create"):
            assert inspect.signature(ours[path].create) == inspect.signature(resource.create), path
    resource, mine = api_method(raw, api), api_method(client, api)
    sdk_parameters = set(inspect.signature(resource.create).parameters)
    assert len(sdk_parameters) > 20
    assert "response_model" in (inspect.getdoc(mine.create) or "")  # guardrail's keywords documented there
    for name in ("create_with_result", "create_partial"):
        parameters = inspect.signature(getattr(mine, name)).parameters
        assert sdk_parameters | {"response_model", "max_attempts", "mode", "budget", "rules"} <= set(parameters)
        assert parameters["response_model"].default is inspect.Parameter.empty
    for name in ("copy", "with_options"):
        assert inspect.signature(getattr(client, name)) == inspect.signature(getattr(raw, name))
        assert inspect.getdoc(getattr(client, name)) == inspect.getdoc(getattr(raw, name))
    assert inspect.signature(type(client)) == inspect.signature(type(raw))


# -- 6. dir() ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_dir_lists_every_member_of_the_sdks_client_and_resources(emu: Emulator, api: str, is_async: bool) -> None:
    raw = sdk_client(emu, api, is_async=is_async)
    client = guardrail.wrap(raw)
    assert dir(client) == dir(raw)
    plain, ours = resources(raw, api), resources(client, api)
    for path, resource in plain.items():
        assert dir(ours[path]) == dir(resource), path
    named = {"chat": {"parse", "stream", "list", "retrieve"}, "responses": {"parse", "stream", "retrieve"},
             "messages": {"batches", "count_tokens", "stream"}}[api]
    assert named <= set(dir(api_method(client, api)))
    # guardrail's own members work, and are left out of dir() (code comparing member lists sees the SDK's)
    assert callable(api_method(client, api).create_with_result) and client.vendor in ("openai", "anthropic")


# -- 7. guardrail's keywords without response_model are a TypeError --------------------------------------------
KEYWORDS = {"aliases": {"a": "b"}, "max_attempts": 2, "mode": "json", "budget": guardrail.Budget(max_tokens=10),
            "rules": (), "context": {}, "cache": False, "prompt_version": "v1", "examples": (),
            "reason_first": "two_stage"}


def test_every_keyword_of_guardrail_is_tested_here() -> None:
    from guardrail.call.options import KEYWORDS as TAKEN

    assert set(TAKEN) - {"response_model"} == set(KEYWORDS)


def test_no_keyword_of_guardrail_is_a_keyword_of_an_sdk_method_it_adds_to() -> None:
    """A guardrail keyword that an SDK's own method also takes would take the SDK's argument away from plain
    calls (the Responses API takes ``reasoning``, so reasoning first is ``reason_first``): none may be one."""
    import google.genai.models
    from anthropic.resources.beta.messages import AsyncMessages as AsyncBetaMessages
    from anthropic.resources.beta.messages import Messages as BetaMessages
    from anthropic.resources.messages import AsyncMessages, Messages
    from openai.resources.chat.completions import AsyncCompletions, Completions
    from openai.resources.responses import AsyncResponses, Responses

    from guardrail.call.options import KEYWORDS as TAKEN

    methods = [Completions.create, AsyncCompletions.create, Responses.create, AsyncResponses.create, Messages.create,
               AsyncMessages.create, BetaMessages.create, AsyncBetaMessages.create,
               google.genai.models.Models.generate_content, google.genai.models.AsyncModels.generate_content,
               google.genai.models.Models.generate_content_stream]
    for method in methods:
        shared = set(TAKEN) & set(inspect.signature(method).parameters)
        assert shared == set(), f"{method.__qualname__} takes {sorted(shared)} too"


@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_guardrails_keywords_without_response_model_are_a_type_error(emu: Emulator, api: str,
                                                                     is_async: bool) -> None:
    client = guardrail.wrap(sdk_client(emu, api, is_async=is_async))
    for create in (api_method(client, api).create, api_method(client, api).with_raw_response.create):
        for name, value in KEYWORDS.items():
            for extra in ({}, {"response_model": None}):
                with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'") as caught:
                    create(**printer_args(api), **extra, **{name: value})
                assert isinstance(caught.value, UsageError)
    with pytest.raises(UsageError, match="response_model"):
        api_method(client, api).create_with_result(**printer_args(api))
    assert emu.requests == []  # refused before anything was sent


# -- the rest passes through untouched ---------------------------------------------------------------------------
@pytest.mark.parametrize("is_async", MODES)
@pytest.mark.parametrize("api", APIS)
def test_plain_calls_are_the_sdks_own(emu: Emulator, api: str, is_async: bool) -> None:
    def scenario() -> Scenario:
        raw = sdk_client(emu, api, is_async=is_async)
        client = guardrail.wrap(raw)
        emu.script(reply.text("one"), reply.text("one"))
        mine = yield api_method(client, api).create(**printer_args(api))
        theirs = yield api_method(raw, api).create(**printer_args(api))
        assert type(mine) is type(theirs)
        first, second = emu.requests
        assert first.body == second.body and first.path == second.path

    play(is_async, scenario)


# -- frameworks that take a client -------------------------------------------------------------------------------
def test_pydantic_ai_drives_a_wrapped_client_and_still_sees_azure(emu: Emulator) -> None:
    pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim[openai,anthropic] is in the test group")
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    azure = openai.AsyncAzureOpenAI(api_key="test", api_version="2024-10-21",
                                    azure_endpoint=emu.openai_base_url.removesuffix("/v1"))
    plain_view, wrapped_view = OpenAIProvider(openai_client=azure), OpenAIProvider(openai_client=guardrail.wrap(azure))
    assert (wrapped_view.name, wrapped_view.base_url) == (plain_view.name, plain_view.base_url)  # as the SDK's own
    client = guardrail.wrap(openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test"))
    agent = Agent(OpenAIChatModel("gpt-4o", provider=OpenAIProvider(openai_client=client)))
    emu.script(reply.text("The printer is on fire."))
    assert agent.run_sync("What is on fire?").output == "The printer is on fire."
    assert emu.requests[0].body["messages"][-1]["content"] == "What is on fire?"
