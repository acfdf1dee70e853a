"""Transport failure classification and Retry-After reading, on real SDK exception objects; then the same retries
through the wrapper on every endpoint against the emulator (other retryable statuses, HTTP-date Retry-After, a wait
that would pass the deadline)."""

from __future__ import annotations

import email.utils
import time

import anthropic
import httpx2
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.calls import (
    APIS,
    PRINTER_GOOD,
    PRINTER_TICKET,
    LooseTicket,
    RecordingRetry,
    Ticket,
    api_method,
    printer_args,
    printer_call,
    wrapped_client,
)

import guardrail
from guardrail.call.options import RetryPolicy
from guardrail.errors import ConfigError, VendorUnavailable
from guardrail.testing import Emulator, reply
from guardrail.vendors.failures import (
    SNIPPET_CHARS,
    BadResponse,
    StreamError,
    classify,
    cut_off,
    retry_after,
    snippet,
)


def response(status: int, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, headers=headers or {}, request=httpx2.Request("POST", "http://127.0.0.1/v1/x"))


def openai_error(status: int, body: dict[str, object], headers: dict[str, str] | None = None) -> Exception:
    client = openai.OpenAI(api_key="test", base_url="http://127.0.0.1:9/v1")
    return client._make_status_error("boom", body=body, response=response(status, headers))


def anthropic_error(status: int, body: dict[str, object]) -> Exception:
    client = anthropic.Anthropic(api_key="test", base_url="http://127.0.0.1:9")
    return client._make_status_error("boom", body=body, response=response(status))


def test_retry_after_in_seconds_milliseconds_and_http_dates() -> None:
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= (retry_after({"retry-after": when}) or 0) <= 30
    assert retry_after({"retry-after": email.utils.formatdate(time.time() - 60, usegmt=True)}) == 0.0
    assert retry_after({"retry-after": "soon"}) is None
    assert retry_after({}) is None


@pytest.mark.parametrize(("status", "kind"), [(408, "retryable"), (409, "retryable"), (429, "retryable"),
                                              (500, "retryable"), (503, "retryable"), (400, "fatal"),
                                              (401, "fatal"), (403, "fatal"), (404, "fatal"), (422, "fatal")])
def test_status_codes(status: int, kind: str) -> None:
    failure = classify(openai_error(status, {"error": {"message": "x", "type": "t", "code": None}}))
    assert failure is not None and failure.kind == kind and failure.status == status


def test_quota_429s_are_fatal_and_rate_limits_carry_their_wait() -> None:
    quota = classify(openai_error(429, {"error": {"message": "quota", "type": "insufficient_quota",
                                                  "code": "insufficient_quota"}}))
    assert quota is not None and quota.kind == "fatal"
    limited = classify(openai_error(429, {"error": {"message": "slow down", "type": "requests",
                                                    "code": "rate_limit_exceeded"}}, {"retry-after-ms": "1500"}))
    assert limited is not None and limited.kind == "retryable" and limited.retry_after == 1.5
    spend = classify(anthropic_error(429, {"type": "error", "error": {
        "type": "rate_limit_error", "message": "spend", "details": {"error_code": "enforced_spend_limit_reached"}}}))
    assert spend is not None and spend.kind == "fatal"


def test_schema_rejections_are_their_own_kind() -> None:
    rejected = classify(openai_error(400, {"error": {"message": "Invalid schema for response_format 'T'",
                                                     "type": "invalid_request_error",
                                                     "code": "invalid_json_schema"}}))
    assert rejected is not None and rejected.kind == "schema_rejected"
    too_complex = classify(anthropic_error(400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "Schema is too complex for compilation"}}))
    assert too_complex is not None and too_complex.kind == "schema_rejected"
    other = classify(openai_error(400, {"error": {"message": "context_length_exceeded", "type": "x",
                                                  "code": "context_length_exceeded"}}))
    assert other is not None and other.kind == "fatal"


def test_overloads_retry_even_as_a_200_mid_stream_error() -> None:
    overloaded = classify(anthropic_error(529, {"type": "error", "error": {"type": "overloaded_error",
                                                                           "message": "Overloaded"}}))
    assert overloaded is not None and overloaded.kind == "retryable"
    mid_stream = anthropic.APIStatusError("Overloaded", response=response(200), body={
        "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    failure = classify(mid_stream)
    assert failure is not None and failure.kind == "retryable"
    assert classify(StreamError({"type": "server_error", "message": "boom"})).kind == "retryable"  # type: ignore[union-attr]
    assert classify(StreamError({"type": "invalid_prompt", "message": "no"})).kind == "fatal"  # type: ignore[union-attr]


def test_connection_errors_and_timeouts_retry_and_other_exceptions_are_not_vendor_errors() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/x")
    assert classify(openai.APITimeoutError(request=request)).kind == "retryable"  # type: ignore[union-attr]
    assert classify(anthropic.APIConnectionError(request=request)).kind == "retryable"  # type: ignore[union-attr]
    assert classify(httpx2.ReadTimeout("slow", request=request)).kind == "retryable"  # type: ignore[union-attr]
    assert classify(httpx2.RemoteProtocolError("peer closed")).kind == "retryable"  # type: ignore[union-attr]
    assert classify(ValueError("bug")) is None

    class APIConnectionError(Exception):  # a name alone proves nothing: only the SDKs' classes are theirs
        pass

    assert classify(APIConnectionError("not an SDK's")) is None


def test_a_body_cut_off_is_known_through_the_errors_it_was_raised_from() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    cut = httpx2.RemoteProtocolError("peer closed connection without sending complete message body")
    try:  # what anthropic's stream reader does with it
        raise anthropic.APIConnectionError(message="Connection failed", request=request) from cut
    except anthropic.APIConnectionError as wrapped:
        assert cut_off(wrapped) and cut_off(cut)
    assert not cut_off(anthropic.APIConnectionError(request=request))  # refused before any body: not a cut
    assert not cut_off(ValueError("x"))


# ------------------------------------------------------------------ answers not in the API's shape (issue 15 item 6)
SECRET = "sk-" + "q" * 32


def test_a_bad_response_is_retryable_and_keeps_status_code_and_a_redacted_snippet() -> None:
    error = BadResponse("not the API's", status=200, content_type="text/html", code="content_type",
                        body=f"<html>\n\n  <p>key {SECRET}</p></html>")
    failure = classify(error)
    assert failure is not None and failure.kind == "retryable"
    assert (failure.status, failure.code) == (200, "content_type")
    assert failure.snippet == "<html> <p>key [REDACTED]</p></html>"


@pytest.mark.parametrize(("status", "kind"), [(200, "retryable"), (502, "retryable"), (404, "fatal"),
                                              (403, "fatal"), (429, "retryable")])
def test_an_error_status_with_a_page_instead_of_the_apis_error_json(status: int, kind: str) -> None:
    page = f"<html><title>{status}</title><body>proxy says no; token {SECRET}</body></html>"
    client = openai.OpenAI(api_key="test", base_url="http://127.0.0.1:9/v1")
    http = httpx2.Response(status, headers={"content-type": "text/html"}, text=page,
                           request=httpx2.Request("POST", "http://127.0.0.1/v1/x"))
    failure = classify(client._make_status_error_from_response(http))
    assert failure is not None and failure.kind == kind and failure.status == status
    assert failure.snippet is not None and "proxy says no" in failure.snippet
    assert SECRET not in failure.snippet and SECRET not in failure.message
    assert "<html>" not in failure.message  # the page is in the snippet, not pasted whole into the message


@given(st.text(max_size=300), st.text(max_size=300), st.sampled_from(["sk-", "Bearer ", "AKIA"]))
def test_a_snippet_never_shows_a_secret_and_stays_short(before: str, after: str, kind: str) -> None:
    secret = {"sk-": "sk-" + "A1b2" * 8, "Bearer ": "Bearer " + "x" * 24, "AKIA": "AKIA" + "Q" * 16}[kind]
    shown = snippet(before + secret + after)
    assert shown is not None
    assert len(shown) <= SNIPPET_CHARS
    assert secret not in shown
    assert secret[:12] not in shown.replace("[REDACTED]", "")  # not even half of it, whatever the cut


def test_snippet_of_nothing_and_of_bytes() -> None:
    assert snippet(None) is None
    assert snippet(b"\xff<p>ok</p>") == "\ufffd<p>ok</p>"


# ---------------------------------------------------------------------------- transport retries through the wrapper


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [408, 409, 502, 504])
def test_other_retryable_statuses(emu: Emulator, api: str, status: int) -> None:
    emu.script(reply.error(status, message="try again"), reply.answer(PRINTER_GOOD))
    result = printer_call(emu, api)
    assert result.value == PRINTER_TICKET and result.vendor_calls == 2 and len(result.attempts) == 1


@pytest.mark.parametrize("api", ["messages"])
def test_retry_after_as_an_http_date(emu: Emulator, api: str) -> None:
    from email.utils import formatdate

    emu.script(reply.error(429, headers={"retry-after": formatdate(time.time() + 30, usegmt=True)}),
               reply.answer(PRINTER_GOOD))
    policy = RecordingRetry(max_tries=3, initial_wait=0.001, max_wait=0.2, deadline=10)
    result = printer_call(emu, api, wrap_options={"retry": policy})
    assert result.vendor_calls == 2
    assert policy.waits == [0.2]  # the date, 30 s away, was read as a wait (not 1 ms jitter), capped at max_wait


@pytest.mark.parametrize("api", APIS)
def test_a_retry_after_past_the_deadline_gives_up_at_once(emu: Emulator, api: str) -> None:
    emu.script(reply.rate_limited(retry_after=5), reply.answer(PRINTER_GOOD))
    policy = RecordingRetry(max_tries=3, initial_wait=0.01, max_wait=20, deadline=1.0)
    with pytest.raises(VendorUnavailable) as caught:
        api_method(wrapped_client(emu, api, retry=policy), api).create(response_model=Ticket, **printer_args(api))
    assert caught.value.status == 429
    assert policy.waits == [] and len(emu.requests) == 1  # the 5 s wait was never started


@pytest.mark.parametrize("deadline", [0, -1.5, float("nan")])
def test_a_deadline_must_be_a_positive_number_of_seconds(deadline: float) -> None:
    with pytest.raises(ConfigError, match="positive number of seconds"):
        RetryPolicy(deadline=deadline)


def test_an_infinite_deadline_or_timeout_sets_none() -> None:
    """An infinite deadline could only be armed as an alarm that never rings; it is no deadline instead."""
    assert RetryPolicy(deadline=float("inf")).deadline_seconds(30.0) is None
    assert RetryPolicy().deadline_seconds(float("inf")) is None
    assert RetryPolicy().deadline_seconds(30.0) == 30.0
    assert RetryPolicy(deadline=5).deadline_seconds(None) == 5.0


def test_the_first_try_is_judged_like_every_other(emu: Emulator) -> None:
    """A failed first HTTP try counts as the first of the policy's tries, so the waits and the count of tries are
    exactly those of the policy."""
    emu.script(reply.server_error(503), reply.server_error(503), reply.answer('{"urgency": 1, "summary": "s"}'))
    policy = RecordingRetry(max_tries=3, initial_wait=0.001, max_wait=0.01, deadline=10)
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0), retry=policy)
    result = client.chat.completions.create_with_result(model="gpt-4o", messages=[{"role": "user", "content": "u"}],
                                                        response_model=LooseTicket)
    assert result.value.urgency == 1
    assert result.vendor_calls == 3 and len(emu.requests) == 3
    assert len(policy.waits) == 2  # a wait before the second try and before the third, none after the answer
    emu.script(reply.server_error(503), reply.server_error(503), reply.server_error(503), reply.answer("{}"))
    with pytest.raises(VendorUnavailable, match="after 3 tries"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "u"}],
                                       response_model=LooseTicket)
    assert len(emu.requests) == 6  # the fourth reply was never asked for
