"""Fault matrix against the emulator, through the real SDKs.

Every combination of endpoint (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, and Anthropic's API
on Amazon Bedrock and Vertex AI through the SDK's platform clients), client (sync, async) and request (streamed,
not) meets:

- answers that are not in the API's shape: an HTML page with status 200 (and 502), a JSON content type over a
  body that is not JSON, JSON without the API's fields, a malformed SSE data line, a body cut off mid-way.
  Each ends as a typed VendorUnavailable carrying the status and a redacted snippet (never AttributeError,
  JSONDecodeError or a pydantic error), is retried, and a retry that meets a good answer returns its value;
- a body that trickles in, every read well within the per-read timeout: the call's deadline (set, or by
  default the client's own timeout) and the chain's deadline end it with DeadlineExceeded, and the emulator
  saw the connection closed before the body was finished;
- chains: the chain leaves a tier on any of these faults and moves on; ``await chain.arun`` awaits async
  tiers and runs sync ones in a thread; ``chain.run`` refuses an async tier before sending anything.

No assertion here is about elapsed time: a deadline is proven by how the call ended (typed, deadline) and by
the server's view (the connection closed early; a trickled body takes minutes to finish).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import warnings
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.calls import PLATFORM_MODELS, LooseTicket, endpoint_client, structured_call

import guardrail
from guardrail.call.options import RetryPolicy, timeout_seconds
from guardrail.chain.tiers import Chain, Tier, safe_default, vendor
from guardrail.errors import (
    ChainExhausted,
    DeadlineExceeded,
    OutputTruncated,
    SyncAsyncMismatch,
    VendorError,
    VendorUnavailable,
)
from guardrail.testing import Emulator, reply
from guardrail.testing.behaviours import Reply

GOOD = '{"urgency": 3, "summary": "late parcel"}'
SECRET = "sk-" + "Z" * 40
FAST = RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.02, deadline=30)
APIS = ("chat", "responses", "messages")

#: name -> (the fault, the status the error must carry)
SHAPES: dict[str, tuple[Callable[[], Reply], int]] = {
    "html page with 200": (lambda: reply.raw(f"<html><body><h1>Proxy</h1><p>key {SECRET}</p></body></html>"), 200),
    "html page with 502": (lambda: reply.html_page(status=502), 502),
    "json content type, body not json": (lambda: reply.not_json(), 200),
    "json without the API's fields": (lambda: reply.raw('{"status": "ok"}', content_type="application/json"), 200),
    "malformed sse data line": (lambda: reply.malformed_event(GOOD), 200),
    "body cut off": (lambda: reply.cut(GOOD), 200),
}
#: A body that would take minutes to arrive: 1 byte every 50 ms.
TRICKLE = lambda: reply.answer(GOOD + " " * 4000).trickled(0.05)  # noqa: E731


def client_for(emu: Emulator, api: str, is_async: bool, timeout: float = 10.0) -> Any:
    return endpoint_client(emu, api, is_async, timeout)


def call(emu: Emulator, api: str, is_async: bool, stream: bool, retry: RetryPolicy = FAST,
         timeout: float = 10.0) -> Any:
    """One structured call the way a user makes it; returns the value (or raises what the call raises)."""
    return structured_call(emu, api, is_async, stream, LooseTicket, retry=retry, timeout=timeout)


#: The per-call faults also meet Anthropic's API on Amazon Bedrock (AWS event stream) and Vertex AI.
CALL_APIS = (*APIS, *PLATFORM_MODELS)
COMBOS = list(itertools.product(CALL_APIS, (False, True), (False, True)))
IDS = [f"{api}-{'async' if a else 'sync'}-{'stream' if s else 'plain'}" for api, a, s in COMBOS]


# --------------------------------------------------------------------------------- 6: answers not in the API's shape
@pytest.mark.parametrize("fault", list(SHAPES))
@pytest.mark.parametrize(("api", "is_async", "stream"), COMBOS, ids=IDS)
@pytest.mark.slow
def test_an_answer_not_in_the_apis_shape_is_typed_with_status_and_snippet(
        emu: Emulator, api: str, is_async: bool, stream: bool, fault: str) -> None:
    make, status = SHAPES[fault]
    emu.script(make(), make())
    with pytest.raises(VendorUnavailable) as caught:
        call(emu, api, is_async, stream)
    error = caught.value
    assert not isinstance(error, DeadlineExceeded)
    assert error.status == status
    assert len(emu.requests) == 2  # retried: a proxy or network that spoiled one answer may not spoil the next
    if fault != "body cut off":  # a cut-off body leaves nothing to show
        assert error.snippet
        assert SECRET not in error.snippet and SECRET not in str(error)
    if fault == "html page with 200":
        assert error.snippet is not None and "[REDACTED]" in error.snippet and "<h1>Proxy</h1>" in error.snippet


@pytest.mark.parametrize("fault", list(SHAPES))
@pytest.mark.parametrize(("api", "is_async", "stream"), COMBOS, ids=IDS)
@pytest.mark.slow
def test_a_retry_after_a_spoiled_answer_gets_the_value(emu: Emulator, api: str, is_async: bool, stream: bool,
                                                       fault: str) -> None:
    make, _ = SHAPES[fault]
    emu.script(make(), reply.answer(GOOD))
    assert call(emu, api, is_async, stream) == LooseTicket(urgency=3, summary="late parcel")
    assert len(emu.requests) == 2


@pytest.mark.parametrize("api", CALL_APIS)
def test_a_404_html_page_is_a_vendor_error_with_its_snippet_and_no_retry(emu: Emulator, api: str) -> None:
    emu.script(reply.raw("<html><title>Not Found</title><body>wrong base_url</body></html>", status=404))
    with pytest.raises(VendorError) as caught:
        call(emu, api, False, False)
    assert caught.value.status == 404
    assert caught.value.snippet is not None and "wrong base_url" in caught.value.snippet
    assert len(emu.requests) == 1


def test_an_event_stream_with_no_events_is_not_taken_for_a_truncated_answer(emu: Emulator) -> None:
    emu.script(reply.raw("", content_type="text/event-stream"), reply.raw("", content_type="text/event-stream"))
    with pytest.raises(VendorUnavailable) as caught:
        call(emu, "chat", False, True)
    assert caught.value.code == "shape"
    assert not isinstance(caught.value, OutputTruncated)


# ------------------------------------------------------------------------------------- 7: wall-clock deadlines
@pytest.mark.slow
@pytest.mark.parametrize(("api", "is_async", "stream"), COMBOS, ids=IDS)
def test_the_call_deadline_cuts_a_trickling_body(emu: Emulator, api: str, is_async: bool, stream: bool) -> None:
    emu.script(TRICKLE())
    with pytest.raises(DeadlineExceeded) as caught:
        call(emu, api, is_async, stream, retry=RetryPolicy(max_tries=3, initial_wait=0.01, deadline=1.0))
    assert caught.value.code == "deadline"
    assert len(emu.requests) == 1  # no retry once the deadline has passed
    assert emu.wait_closed_early(1), "the server never saw the connection closed before the body was finished"


@pytest.mark.slow
@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_by_default_the_deadline_is_the_clients_own_timeout(emu: Emulator, is_async: bool) -> None:
    # each read returns within 50 ms, so the SDK's 1 s read timeout never fires: only the deadline can end it
    emu.script(TRICKLE())
    with pytest.raises(DeadlineExceeded):
        call(emu, "chat", is_async, False, retry=RetryPolicy(max_tries=1), timeout=1.0)
    assert emu.wait_closed_early(1)


def test_the_default_deadline_follows_the_wrapped_clients_timeout() -> None:
    policy = RetryPolicy()
    assert policy.deadline == "client"
    assert timeout_seconds(openai.OpenAI(api_key="t").timeout) == 600.0
    assert timeout_seconds(anthropic.Anthropic(api_key="t").timeout) == 600.0
    assert policy.deadline_seconds(timeout_seconds(openai.OpenAI(api_key="t", timeout=42).timeout)) == 42.0
    assert policy.deadline_seconds(None) is None  # a client without a timeout: no deadline either
    assert RetryPolicy(deadline=5).deadline_seconds(600.0) == 5.0
    assert RetryPolicy(deadline=None).deadline_seconds(600.0) is None
    with pytest.raises(ValueError, match="deadline"):
        RetryPolicy(deadline="soon")  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize(("api", "is_async"), list(itertools.product(APIS, (False, True))),
                         ids=[f"{a}-{'async' if s else 'sync'}" for a, s in itertools.product(APIS, (False, True))])
def test_the_chain_deadline_cuts_a_trickling_tier_and_the_chain_moves_on(emu: Emulator, api: str,
                                                                          is_async: bool) -> None:
    emu.script(TRICKLE())
    patient = RetryPolicy(max_tries=3, initial_wait=0.01, deadline=None)  # only the chain's deadline is left
    tier = vendor(client_for(emu, api, is_async, timeout=60), "gpt-4o" if api != "messages" else "claude-haiku-4-5",
                  api=api, retry=patient, name="primary")
    chain = Chain([tier, safe_default({"urgency": 1, "summary": ""})], deadline=1.0)
    result = asyncio.run(chain.arun(LooseTicket, system="s", user="u")) if is_async else \
        chain.run(LooseTicket, system="s", user="u")
    assert result.tier == "safe-default" and result.degraded
    assert isinstance(result.departures[0].error, DeadlineExceeded)
    assert emu.wait_closed_early(1)


# --------------------------------------------------------------------------- 6 + 8: chains move on, sync and async
@pytest.mark.parametrize("fault", list(SHAPES))
@pytest.mark.parametrize(("api", "is_async"), list(itertools.product(APIS, (False, True))),
                         ids=[f"{a}-{'async' if s else 'sync'}" for a, s in itertools.product(APIS, (False, True))])
@pytest.mark.slow
def test_the_chain_leaves_a_tier_that_answers_out_of_shape(api: str, is_async: bool, fault: str) -> None:
    make, status = SHAPES[fault]
    with Emulator() as primary, Emulator() as backup:
        primary.responder = lambda request: make()
        backup.script(reply.answer(GOOD))
        first = vendor(client_for(primary, api, is_async), "gpt-4o" if api != "messages" else "claude-haiku-4-5",
                       api=api, retry=FAST, name="primary")
        second = vendor(client_for(backup, "chat", is_async), "gpt-4o", retry=FAST, name="backup")
        chain = Chain([first, second])
        result = asyncio.run(chain.arun(LooseTicket, system="s", user="u")) if is_async else \
            chain.run(LooseTicket, system="s", user="u")
    assert result.tier == "backup"
    assert result.value == LooseTicket(urgency=3, summary="late parcel")
    error = result.departures[0].error
    assert isinstance(error, VendorUnavailable) and error.status == status


def test_arun_awaits_async_tiers_and_returns_values_not_coroutines(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    chain = Chain([vendor(client_for(emu, "chat", True), "gpt-4o", retry=FAST, name="async")])
    result = asyncio.run(chain.arun(LooseTicket, system="s", user="u"))
    assert result.value == LooseTicket(urgency=3, summary="late parcel")
    assert isinstance(result.detail, guardrail.Result) and result.tier == "async"
    assert len(emu.requests) == 1


def test_arun_mixes_async_and_sync_tiers(emu: Emulator) -> None:
    emu.script(reply.server_error(500), reply.server_error(500), reply.answer(GOOD))
    chain = Chain([vendor(client_for(emu, "messages", True), "claude-haiku-4-5", retry=FAST, name="async"),
                   vendor(client_for(emu, "chat", False), "gpt-4o", retry=FAST, name="sync")])
    result = asyncio.run(chain.arun(LooseTicket, system="s", user="u"))
    assert result.tier == "sync" and result.value.urgency == 3
    assert [d.tier for d in result.departures] == ["async"]
    assert isinstance(result.departures[0].error, VendorUnavailable)


def test_acreate_has_the_wrappers_call_shape(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    chain = Chain([vendor(client_for(emu, "responses", True), "gpt-4o", api="responses", retry=FAST)])
    value = asyncio.run(chain.acreate(response_model=LooseTicket, messages=[{"role": "user", "content": "triage"}]))
    assert value == LooseTicket(urgency=3, summary="late parcel")


@pytest.mark.parametrize("api", APIS)
def test_run_refuses_an_async_tier_before_sending_anything(emu: Emulator, api: str) -> None:
    chain = Chain([vendor(client_for(emu, "chat", False), "gpt-4o", retry=FAST, name="sync"),
                   vendor(client_for(emu, api, True), "m", api=api, retry=FAST, name="async-tier")])
    with pytest.raises(SyncAsyncMismatch, match="arun") as caught:
        chain.run(LooseTicket, system="s", user="u")
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, guardrail.GuardrailError)
    assert "async-tier" in str(caught.value)
    assert emu.requests == []


@pytest.mark.slow
def test_a_sync_tier_that_returns_a_coroutine_is_refused_and_the_coroutine_closed() -> None:
    async def later(request: Any, left: Any) -> LooseTicket:
        return LooseTicket(urgency=1, summary="")

    chain = Chain([Tier("sneaky", "custom", lambda request, left: later(request, left)),
                   safe_default({"urgency": 1, "summary": ""})])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for runner in (lambda: chain.run(LooseTicket, system="", user=""),
                       lambda: asyncio.run(chain.arun(LooseTicket, system="", user=""))):
            with pytest.raises(SyncAsyncMismatch, match="awaitable"):
                runner()
        gc.collect()
    assert not [w for w in seen if "never awaited" in str(w.message)]


def test_a_tier_given_an_async_function_serves_arun_only() -> None:
    async def produce(request: Any, left: Any) -> LooseTicket:
        return LooseTicket(urgency=2, summary="async")

    chain = Chain([Tier("custom", "custom", produce)])
    assert asyncio.run(chain.arun(LooseTicket, system="", user="")).value == LooseTicket(urgency=2, summary="async")
    with pytest.raises(SyncAsyncMismatch):
        chain.run(LooseTicket, system="", user="")


def test_the_decorator_awaits_an_async_chain(emu: Emulator) -> None:
    emu.script(reply.answer(GOOD))
    chain = Chain([vendor(client_for(emu, "messages", True), "claude-haiku-4-5", retry=FAST)])

    @guardrail.structured(chain=chain)
    async def triage(inquiry: str) -> LooseTicket:
        """Triage the inquiry."""
        raise NotImplementedError

    assert asyncio.run(triage("late parcel")) == LooseTicket(urgency=3, summary="late parcel")


def test_chain_exhausted_when_every_tier_is_out_of_shape(emu: Emulator) -> None:
    emu.responder = lambda request: reply.html_page()
    chain = Chain([vendor(client_for(emu, "chat", False), "gpt-4o", retry=FAST, name="a"),
                   vendor(client_for(emu, "messages", False), "claude-haiku-4-5", retry=FAST, name="b")])
    with pytest.raises(ChainExhausted) as caught:
        chain.run(LooseTicket, system="s", user="u")
    assert [type(e) for e in caught.value.exceptions] == [VendorUnavailable, VendorUnavailable]


def test_a_sync_decorated_function_with_an_async_chain_is_refused(emu: Emulator) -> None:
    chain = Chain([vendor(client_for(emu, "chat", True), "gpt-4o", retry=FAST)])

    @guardrail.structured(chain=chain)
    def triage(inquiry: str) -> LooseTicket:
        """Triage the inquiry."""
        raise NotImplementedError

    with pytest.raises(SyncAsyncMismatch):
        triage("late parcel")
    assert emu.requests == []


BODIES = st.one_of(
    st.text(max_size=200),
    st.sampled_from(['{"choices": null}', '{"choices": [{}]}', '{"choices": [{"message": 3}]}', '{"content": "x"}',
                     '{"output": [{"type": "message", "content": null}]}', '{"content": [{"type": "text"}]}',
                     "data: {}\n\n", "data: [DONE]\n\n", 'event: message_start\ndata: {"message": 1}\n\n',
                     'data: {"choices": [{"delta": null, "index": 0}]}\n\n', "[]", "null", '"text"']),
)


@pytest.mark.slow
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=BODIES, content_type=st.sampled_from(["application/json", "text/event-stream", "text/html", ""]),
       api=st.sampled_from(APIS), stream=st.booleans())
def test_any_body_ends_as_a_value_or_a_typed_error(emu: Emulator, body: str, content_type: str, api: str,
                                                   stream: bool) -> None:
    emu.reset()
    emu.responder = lambda request: reply.raw(body, content_type=content_type)
    try:
        value = call(emu, api, False, stream, retry=RetryPolicy(max_tries=1, deadline=10))
    except guardrail.GuardrailError:
        return
    assert isinstance(value, LooseTicket)
