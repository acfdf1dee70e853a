"""The phases the trickled-body tests of ``test_fault_matrix`` leave out: the call's deadline
and the chain's bound the whole vendor call, whatever part of the answer is slow.

- an error status (4xx/5xx) whose body trickles in: the SDK reads it itself before handing anything over;
- a status line and headers that trickle in (each read within the per-read timeout);
- a server that accepts the request and sends nothing at all;

for sync and async clients, the three endpoints, streamed or not, under the call's deadline and a chain's.

No assertion is about elapsed time. A deadline is proven by how the call ended (``DeadlineExceeded``) and by
the server's view: the client closed the connection before the answer was finished (each slow answer here
would take minutes to arrive). A call that hung instead is turned into a failure by a generous join timeout.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import openai
import pytest
from support.calls import LooseTicket, endpoint_client, endpoint_method, structured_call
from support.waiting import HANG_GUARD_S, finishes

import guardrail
from guardrail.call.options import RetryPolicy
from guardrail.chain.tiers import Chain, safe_default, vendor
from guardrail.errors import DeadlineExceeded
from guardrail.testing import Emulator, reply
from guardrail.testing.behaviours import Reply

pytestmark = pytest.mark.slow

APIS = ("chat", "responses", "messages")
COMBOS = list(itertools.product(APIS, (False, True), (False, True)))
IDS = [f"{api}-{'async' if a else 'sync'}-{'stream' if s else 'plain'}" for api, a, s in COMBOS]
LONG = "x" * 3000

#: name -> (the slow answer, whether the server sees the client hang up before the answer was finished)
SLOW: dict[str, tuple[Callable[[], Reply], bool]] = {
    # bodies of 3 kB, one byte every 50 ms: minutes each, every read well within the per-read timeout
    "4xx body trickles": (lambda: reply.error(400, message=LONG).trickled(0.05), True),
    "5xx body trickles": (lambda: reply.server_error(500, message=LONG).trickled(0.05), True),
    # a 3 kB header block, one byte every 50 ms: the status line and headers alone take minutes
    "headers trickle": (lambda: reply.raw("{}", content_type="application/json", headers={"x-pad": LONG})
                        .trickled(0.05, headers=True), True),
    "error headers trickle": (lambda: reply.error(429, headers={"x-pad": LONG}).trickled(0.05, headers=True),
                              True),
    "nothing is sent": (lambda: reply.timeout(HANG_GUARD_S), False),
}


def client_for(emu: Emulator, api: str, is_async: bool) -> Any:
    return endpoint_client(emu, api, is_async, 30.0)


def call(emu: Emulator, api: str, is_async: bool, stream: bool, deadline: float) -> Any:
    return structured_call(emu, api, is_async, stream, LooseTicket, timeout=30.0,
                           retry=RetryPolicy(max_tries=3, initial_wait=0.01, deadline=deadline))


@pytest.mark.parametrize("slow", list(SLOW))
@pytest.mark.parametrize(("api", "is_async", "stream"), COMBOS, ids=IDS)
def test_the_call_deadline_bounds_every_slow_phase(emu: Emulator, api: str, is_async: bool, stream: bool,
                                                   slow: str) -> None:
    make, hung_up_early = SLOW[slow]
    emu.script(make(), make(), make())
    with pytest.raises(DeadlineExceeded) as caught:
        finishes(lambda: call(emu, api, is_async, stream, deadline=0.5), "a call past its deadline")
    assert caught.value.code == "deadline"
    if hung_up_early:
        assert emu.wait_closed_early(1, 10), "the server never saw the connection closed before the answer was done"


@pytest.mark.parametrize("slow", ["5xx body trickles", "headers trickle", "nothing is sent"])
@pytest.mark.parametrize(("api", "is_async"), list(itertools.product(APIS, (False, True))),
                         ids=[f"{a}-{'async' if s else 'sync'}" for a, s in itertools.product(APIS, (False, True))])
def test_the_chain_deadline_bounds_every_slow_phase_and_the_chain_moves_on(emu: Emulator, api: str,
                                                                            is_async: bool, slow: str) -> None:
    make, hung_up_early = SLOW[slow]
    emu.script(make(), make(), make(), make())
    patient = RetryPolicy(max_tries=3, initial_wait=0.01, deadline=None)  # only the chain's deadline is left
    model = "claude-haiku-4-5" if api == "messages" else "gpt-4o"
    first = vendor(client_for(emu, api, is_async), model, api=api, retry=patient, name="first")
    second = vendor(client_for(emu, api, is_async), model, api=api, retry=patient, name="second")
    chain = Chain([first, second, safe_default({"urgency": 1, "summary": ""})], deadline=1.0)

    def run() -> Any:
        return asyncio.run(chain.arun(LooseTicket, system="s", user="u")) if is_async else \
            chain.run(LooseTicket, system="s", user="u")

    result = finishes(run, "a chain past its deadline")
    assert result.tier == "safe-default" and result.degraded
    assert result.departures[0].tier == "first"
    assert isinstance(result.departures[0].error, DeadlineExceeded)  # cut off, typed
    assert all(d.reason == "deadline" for d in result.departures[1:])  # the rest: no time left
    if hung_up_early:
        assert emu.wait_closed_early(1, 10)


def test_an_error_status_trickles_in_the_emulator_and_arrives_whole_when_waited_for(emu: Emulator) -> None:
    """The emulator ability the tests above rely on: a trickled error body is the error, just slow."""
    emu.script(reply.error(400, message="slow").trickled(0.001, 8))
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="slow"):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert emu.closed_early == 0


def test_trickled_headers_in_the_emulator_still_make_a_whole_answer(emu: Emulator) -> None:
    emu.script(reply.answer('{"urgency": 2, "summary": "s"}').trickled(0.001, 16, headers=True))
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0)
    answer = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert answer.choices[0].message.content == '{"urgency": 2, "summary": "s"}'
    assert emu.closed_early == 0


@pytest.mark.parametrize("slow", ["headers trickle", "4xx body trickles"])
@pytest.mark.parametrize("api", APIS)
def test_a_kept_alive_connection_is_cut_too(emu: Emulator, api: str, slow: str) -> None:
    """The second call of a client goes out on the first call's kept-alive connection, which httpcore names
    no stream for before the response exists; its deadline still cuts it."""
    make, _ = SLOW[slow]
    emu.script(reply.answer('{"urgency": 3, "summary": "s"}'), make(), make(), make())
    client = guardrail.wrap(client_for(emu, api, False),
                            retry=RetryPolicy(max_tries=3, initial_wait=0.01, deadline=0.5))
    method, kwargs = endpoint_method(client, api)
    assert method.create(response_model=LooseTicket, **kwargs).urgency == 3
    with pytest.raises(DeadlineExceeded):
        finishes(lambda: method.create(response_model=LooseTicket, **kwargs), "a second call past its deadline")
    assert emu.wait_closed_early(1, 10)
