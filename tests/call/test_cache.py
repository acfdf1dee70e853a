"""The response cache: real SDK clients against the emulator (requests counted there), real
MemoryStore / SQLite files / redis-server; hits, misses, what is never cached, tampering, expiry, single flight
across threads, asyncio tasks and processes, and the key's properties."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, field_serializer

import guardrail
from guardrail.call.cache import Cache
from guardrail.call.cache_key import TRANSPORT_ONLY, request_key
from guardrail.chain.tiers import Chain, safe_default, vendor
from guardrail.errors import Declined, GaveUp, Refused, VendorError
from guardrail.gates.semantic import exit_status, member_of, relation, rule
from guardrail.store import MemoryStore, RedisStore, SQLiteStore, Store
from guardrail.testing import Emulator, reply
from guardrail.testing.recording import RecordedRequest

ROOT = Path(__file__).resolve().parents[2]
GOOD = '{"urgency": 4, "summary": "Late parcel"}'
OTHER = '{"urgency": 2, "summary": "Lost parcel"}'
MESSAGES = [{"role": "user", "content": "My parcel is two weeks late"}]
FAST = guardrail.RetryPolicy(max_tries=1, deadline=30)
#: Time for callers that would send their own request (if single flight failed) to send it; not asserted on.
SETTLE = 0.4


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


class TicketV2(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str
    category: str = "other"


# -- fixtures --------------------------------------------------------------------------------------------------------


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator() as server:
        yield server


pytestmark = pytest.mark.usefixtures("clean_config")


@pytest.fixture(params=["memory", "sqlite", "redis"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def location(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if kind == "redis":
        return str(request.getfixturevalue("redis_url"))
    return str(tmp_path / "cache.sqlite3") if kind == "sqlite" else ""


@pytest.fixture
def prefix() -> str:
    return f"test:{uuid.uuid4().hex[:12]}:"


def open_store(kind: str, location: str, prefix: str) -> Store:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(location)
    return RedisStore(location, prefix=prefix, check_persistence=False)


@pytest.fixture
def store(kind: str, location: str, prefix: str) -> Iterator[Store]:
    opened = open_store(kind, location, prefix)
    yield opened
    opened.close()


def chat(emu: Emulator, cache: Cache | None, **options: Any) -> Any:
    return guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=30), retry=FAST,
                          cache=cache, **options).chat.completions


def ask(method: Any, **kwargs: Any) -> Any:
    return method.create_with_result(**{"model": "gpt-4o", "messages": MESSAGES, "response_model": Ticket, **kwargs})


def answering(text: str) -> Callable[[RecordedRequest], Any]:
    return lambda request: reply.answer(text)


# -- hits and misses -------------------------------------------------------------------------------------------------


def test_a_repeated_call_is_answered_from_the_cache(emu: Emulator, store: Store) -> None:
    emu.responder = answering(GOOD)
    method = chat(emu, Cache(store))
    first, second = ask(method), ask(method)
    assert (first.cached, first.vendor_calls) == (False, 1)
    assert (second.cached, second.vendor_calls, second.attempts, second.usage.total_tokens) == (True, 0, (), 0)
    assert second.value == first.value == Ticket(urgency=4, summary="Late parcel")
    assert len(emu.requests) == 1


def test_anthropic_and_responses_endpoints_cache_too(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    cache = Cache(MemoryStore())
    messages = guardrail.wrap(anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test"), retry=FAST,
                              cache=cache).messages
    responses = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), retry=FAST,
                               cache=cache).responses
    for _ in range(2):
        messages.create_with_result(model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES,
                                    response_model=Ticket)
        responses.create_with_result(model="gpt-4o", input="My parcel is two weeks late", response_model=Ticket)
    assert [r.api for r in emu.requests] == ["messages", "responses"]
    assert messages.create(model="claude-haiku-4-5", max_tokens=512, messages=MESSAGES,
                           response_model=Ticket) == Ticket(urgency=4, summary="Late parcel")
    assert len(emu.requests) == 2


def test_an_async_client_uses_the_cache(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    method = guardrail.wrap(openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test"), retry=FAST,
                            cache=Cache(MemoryStore())).chat.completions

    async def main() -> tuple[Any, Any, Any]:
        first = await ask(method)
        second = await ask(method)
        value = await method.create(model="gpt-4o", messages=MESSAGES, response_model=Ticket)
        return first, second, value

    first, second, value = asyncio.run(main())
    assert (first.cached, second.cached, second.vendor_calls) == (False, True, 0)
    assert value == first.value
    assert len(emu.requests) == 1


def test_cache_false_skips_the_cache_both_ways(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    method = chat(emu, Cache(MemoryStore()))
    assert ask(method, cache=False).cached is False
    assert ask(method).cached is False, "a cache=False call stored nothing"
    assert ask(method, cache=False).cached is False, "and does not read either"
    assert ask(method).cached is True
    assert len(emu.requests) == 3


def test_a_wrapped_client_rewrapped_with_a_cache_gets_it(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    plain = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), retry=FAST)
    cached = guardrail.wrap(plain, cache=Cache(MemoryStore()))
    assert guardrail.wrap(plain) is plain
    ask(cached.chat.completions)
    assert ask(cached.chat.completions).cached is True
    assert ask(plain.chat.completions).cached is False
    assert len(emu.requests) == 2


@pytest.mark.parametrize(("change", "same"), [
    ({"temperature": 0.2}, False),
    ({"prompt_version": "v2"}, False),
    ({"response_model": TicketV2}, False),
    ({"rules": [relation("urgency", ">=", "urgency")]}, False),
    ({"messages": [{"role": "user", "content": "Where is my parcel?"}]}, False),
    ({"model": "gpt-4o-mini"}, False),
    ({"mode": "tool"}, False),
    ({"aliases": {"priority": "urgency"}}, False),
    ({"max_completion_tokens": 300}, False),
    ({"timeout": 12.0}, True),
    ({"temperature": 1}, True),
])
def test_what_changes_the_key(emu: Emulator, change: dict[str, Any], same: bool) -> None:
    emu.responder = answering(GOOD)
    method = chat(emu, Cache(MemoryStore()))
    ask(method, temperature=1.0)
    result = ask(method, **{"temperature": 1.0, **change})
    assert result.cached is same
    assert len(emu.requests) == (1 if same else 2)


def test_changing_a_rules_code_changes_the_key(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    method = chat(emu, Cache(MemoryStore()))

    @rule(name="short")
    def short(value: Any, context: Any) -> bool:
        return len(value.summary) < 80

    @rule(name="short")
    def shorter(value: Any, context: Any) -> bool:
        return len(value.summary) < 40

    ask(method, rules=[short])
    assert ask(method, rules=[short]).cached is True
    assert ask(method, rules=[shorter]).cached is False, "same name, other code"
    assert len(emu.requests) == 2


def test_a_request_without_a_canonical_form_is_not_cached(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    method = chat(emu, Cache(MemoryStore()))
    for _ in range(2):
        assert ask(method, extra_body={"logit_bias": {50256: -100}}).cached is False
    assert len(emu.requests) == 2


# -- never cached ----------------------------------------------------------------------------------------------------


def test_failures_are_not_cached(emu: Emulator) -> None:
    method = chat(emu, Cache(MemoryStore()))
    emu.script(reply.error(400, message="bad request"), reply.answer(GOOD))
    with pytest.raises(VendorError):
        ask(method)
    assert ask(method).cached is False
    assert len(emu.requests) == 2


def test_refusals_are_not_cached(emu: Emulator) -> None:
    method = chat(emu, Cache(MemoryStore()))
    emu.script(reply.refusal(), reply.refusal())
    for _ in range(2):
        with pytest.raises(Refused):
            ask(method)
    assert len(emu.requests) == 2


def test_give_ups_and_typed_non_answers_are_not_cached(emu: Emulator) -> None:
    class Answer(BaseModel):
        status: str
        text: str

    method = chat(emu, Cache(MemoryStore()))
    emu.script(*[reply.answer('{"urgency": 9, "summary": "x"}')] * 2)
    with pytest.raises(GaveUp):
        ask(method, max_attempts=2)
    emu.script(reply.answer('{"status": "refused", "text": ""}'), reply.answer('{"status": "refused", "text": ""}'))
    for _ in range(2):
        with pytest.raises(Declined):
            ask(method, response_model=Answer, rules=[exit_status()])
    assert len(emu.requests) == 4


def test_streamed_previews_do_not_fill_the_cache(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    method = chat(emu, Cache(MemoryStore()))
    stream = method.create_partial(model="gpt-4o", messages=MESSAGES, response_model=Ticket, prompt_version="v1")
    items = list(stream)
    assert items[-1] == Ticket(urgency=4, summary="Late parcel")
    assert ask(method, prompt_version="v1").cached is False
    assert len(emu.requests) == 2


def test_a_degraded_chain_result_is_not_cached(emu: Emulator) -> None:
    cache = Cache(MemoryStore())
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test")
    chain = Chain([vendor(client, "gpt-4o", retry=FAST, max_attempts=1, cache=cache),
                   safe_default(Ticket(urgency=1, summary="pending"))])
    emu.script(reply.error(400))
    emu.responder = answering(GOOD)
    first = chain.run(Ticket, system="triage", user="late parcel")
    assert first.degraded is True
    second = chain.run(Ticket, system="triage", user="late parcel")
    assert (second.degraded, second.detail.cached) == (False, False), "the vendor was asked again"
    third = chain.run(Ticket, system="triage", user="late parcel")
    assert (third.tier, third.detail.cached, third.detail.vendor_calls) == (second.tier, True, 0)
    assert chain.run(Ticket, system="triage", user="late parcel", cache=False).detail.cached is False
    assert len(emu.requests) == 3


@pytest.mark.parametrize("deadline", [60.0, None])
def test_a_chains_cache_serves_its_vendor_tiers(emu: Emulator, deadline: float | None) -> None:
    emu.responder = answering(GOOD)
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test")
    own = Cache(MemoryStore())
    chain = Chain([vendor(client, "gpt-4o", retry=FAST), vendor(client, "gpt-4o-mini", retry=FAST, cache=own)],
                  deadline=deadline, cache=Cache(MemoryStore()))
    first = chain.run(Ticket, system="triage", user="late parcel", prompt_version="v1")
    second = chain.run(Ticket, system="triage", user="late parcel", prompt_version="v1")
    assert (first.detail.cached, second.detail.cached, second.detail.vendor_calls) == (False, True, 0)
    assert chain.run(Ticket, system="triage", user="late parcel", prompt_version="v2").detail.cached is False
    assert len(emu.requests) == 2


# -- re-validation, tampering, expiry --------------------------------------------------------------------------------


def stored_records(kind: str, location: str, prefix: str) -> list[tuple[str, str]]:
    """Every (key, value) the store holds, read behind the store's back (as an attacker with access would)."""
    if kind == "sqlite":
        with sqlite3.connect(location) as conn:
            return list(conn.execute("SELECT key, value FROM guardrail_store"))
    import redis

    client = redis.Redis.from_url(location, decode_responses=True)
    return [(key, client.get(key)) for key in client.keys(prefix + "*")]


def overwrite(kind: str, location: str, key: str, value: str) -> None:
    if kind == "sqlite":
        with sqlite3.connect(location) as conn:
            conn.execute("UPDATE guardrail_store SET value = ? WHERE key = ?", (value, key))
        return
    import redis

    redis.Redis.from_url(location).set(key, value, keepttl=True)


def entry_of(kind: str, location: str, prefix: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The one cache record: its store key, the idempotency record and the cache entry inside it."""
    (key, text), = [(k, v) for k, v in stored_records(kind, location, prefix) if not k.endswith("\x1flease")]
    record = json.loads(text)
    return key, record, json.loads(record["result"])


def signed(entry: dict[str, Any], cache_key: str, payload: str, secret: bytes = b"guardrail-cache") -> str:
    digest = hmac.new(secret, f"{cache_key}\n{payload}".encode(), hashlib.sha256).hexdigest()
    return json.dumps({**entry, "value": payload, "digest": digest})


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
@pytest.mark.parametrize("tamper", ["edited value", "garbage", "forged invalid value", "other record state"])
def test_a_tampered_entry_is_a_miss_and_is_replaced(emu: Emulator, store: Store, kind: str, location: str,
                                                    prefix: str, tamper: str) -> None:
    emu.script(reply.answer(GOOD), reply.answer(OTHER))
    method = chat(emu, Cache(store))
    ask(method)
    key, record, entry = entry_of(kind, location, prefix)
    cache_key = record["fingerprint"]
    if tamper == "edited value":  # still valid for the contract, but the digest no longer matches
        forged = json.dumps({**entry, "value": entry["value"].replace('"urgency":4', '"urgency":5')})
        assert forged != json.dumps(entry)
    elif tamper == "garbage":
        forged = "not json at all"
    elif tamper == "forged invalid value":  # a correct digest (the default secret), a value the contract refuses
        forged = signed(entry, cache_key, '{"urgency":9,"summary":"Late parcel"}')
    else:
        forged = None
        overwrite(kind, location, key, json.dumps({"state": "failed", "fingerprint": cache_key, "error_type": "X"}))
    if forged is not None:
        overwrite(kind, location, key, forged if tamper == "garbage" else json.dumps({**record, "result": forged}))
    result = ask(method)
    assert (result.cached, result.value) == (False, Ticket(urgency=2, summary="Lost parcel"))
    again = ask(method)
    assert (again.cached, again.value) == (True, Ticket(urgency=2, summary="Lost parcel")), "the entry was replaced"
    assert len(emu.requests) == 2


def test_a_secret_signs_entries(emu: Emulator, tmp_path: Path) -> None:
    location = str(tmp_path / "c.sqlite3")
    emu.script(reply.answer(GOOD), reply.answer(OTHER))
    method = chat(emu, Cache(SQLiteStore(location), secret="s3cret"))
    ask(method)
    key, record, entry = entry_of("sqlite", location, "")
    forged = signed(entry, record["fingerprint"], '{"urgency":1,"summary":"Forged"}')  # without the secret
    overwrite("sqlite", location, key, json.dumps({**record, "result": forged}))
    assert ask(method).value == Ticket(urgency=2, summary="Lost parcel")
    assert len(emu.requests) == 2


def test_a_hit_that_breaks_this_calls_rules_is_a_miss(emu: Emulator) -> None:
    class Cited(BaseModel):
        evidence: list[str]

    emu.script(reply.answer('{"evidence": ["d1"]}'), reply.answer('{"evidence": ["d2"]}'))
    method = chat(emu, Cache(MemoryStore()))
    rules = [member_of("evidence[*]", "retrieved")]
    first = ask(method, response_model=Cited, rules=rules, context={"retrieved": ["d1"]})
    stale = ask(method, response_model=Cited, rules=rules, context={"retrieved": ["d2"]})
    assert (first.value.evidence, stale.cached, stale.value.evidence) == (["d1"], False, ["d2"])
    assert ask(method, response_model=Cited, rules=rules, context={"retrieved": ["d2"]}).cached is True
    assert len(emu.requests) == 2


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_after_ttl(emu: Emulator) -> None:
    clock = Clock()
    emu.responder = answering(GOOD)
    method = chat(emu, Cache(MemoryStore(clock=clock), ttl=60))
    ask(method)
    clock.now += 59
    assert ask(method).cached is True
    clock.now += 2
    assert ask(method).cached is False
    assert len(emu.requests) == 2


@pytest.mark.slow
def test_entries_expire_after_ttl_in_a_sqlite_file(emu: Emulator, tmp_path: Path) -> None:
    emu.responder = answering(GOOD)
    method = chat(emu, Cache(SQLiteStore(tmp_path / "c.sqlite3"), ttl=0.5))
    ask(method)
    assert ask(method).cached is True
    time.sleep(0.7)
    assert ask(method).cached is False
    assert len(emu.requests) == 2


def test_a_store_that_is_down_never_fails_the_call(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    down = RedisStore("redis://127.0.0.1:9/0", timeout=0.5, check_persistence=False)  # the discard port
    method = chat(emu, Cache(down))
    assert [ask(method).cached for _ in range(2)] == [False, False]
    assert len(emu.requests) == 2


# -- the decorator ---------------------------------------------------------------------------------------------------


def test_the_decorator_takes_a_cache_and_a_version(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    cache = Cache(MemoryStore())
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test")

    def make(version: str, use: Any = None) -> Any:
        @guardrail.structured(client=client, model="gpt-4o", cache=use if use is not None else cache,
                              version=version)
        def triage(inquiry: str) -> Ticket:
            """Triage a customer inquiry."""
            raise AssertionError

        return triage

    v1 = make("v1")
    assert v1.with_result("late").cached is False
    assert v1.with_result("late").cached is True
    assert make("v2").with_result("late").cached is False
    assert make("v1", use=False).with_result("late").cached is False
    guardrail.configure(cache=cache)

    @guardrail.structured(client=client, model="gpt-4o", version="v1")
    def triage(inquiry: str) -> Ticket:
        """Triage a customer inquiry."""
        raise AssertionError

    assert triage.with_result("late").cached is True, "the configured cache, same prompt and version"
    assert len(emu.requests) == 3


# -- single flight ---------------------------------------------------------------------------------------------------


class Gate:
    """A responder that holds every answer until released, counting what arrived."""

    def __init__(self, emu: Emulator, first: Any = None, then: str = GOOD) -> None:
        self.release = threading.Event()
        self.first, self.then = first, then
        self.emu = emu
        emu.responder = self

    def __call__(self, request: RecordedRequest) -> Any:
        index = len(self.emu.requests)
        if index == 1:
            self.release.wait(20)
            return self.first if self.first is not None else reply.answer(self.then)
        return reply.answer(self.then)

    def wait_for_first(self) -> None:
        for _ in range(2000):
            if self.emu.requests:
                return
            time.sleep(0.01)
        raise AssertionError("no request arrived")


def race_threads(method: Any, count: int, **kwargs: Any) -> list[Any]:
    results: list[Any] = [None] * count
    barrier = threading.Barrier(count)

    def one(i: int) -> None:
        barrier.wait()
        try:
            results[i] = ask(method, **kwargs)
        except Exception as error:
            results[i] = error

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def test_concurrent_identical_calls_in_threads_send_one_request(emu: Emulator, store: Store) -> None:
    gate = Gate(emu)
    method = chat(emu, Cache(store, poll=0.01))
    outcome: list[list[Any]] = []
    runner = threading.Thread(target=lambda: outcome.append(race_threads(method, 6)))
    runner.start()
    gate.wait_for_first()
    time.sleep(SETTLE)
    assert len(emu.requests) == 1, "the others wait for the one in flight"
    gate.release.set()
    runner.join(60)
    results = outcome[0]
    assert all(r.value == Ticket(urgency=4, summary="Late parcel") for r in results), results
    assert sorted(r.cached for r in results) == [False] + [True] * 5
    assert len(emu.requests) == 1


def test_concurrent_identical_calls_in_asyncio_tasks_send_one_request(emu: Emulator) -> None:
    gate = Gate(emu)
    method = guardrail.wrap(openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", timeout=30),
                            retry=FAST, cache=Cache(MemoryStore(), poll=0.01)).chat.completions

    async def main() -> list[Any]:
        tasks = [asyncio.create_task(ask(method)) for _ in range(6)]
        await asyncio.to_thread(gate.wait_for_first)
        await asyncio.sleep(SETTLE)
        assert len(emu.requests) == 1
        gate.release.set()
        return await asyncio.gather(*tasks)

    results = asyncio.run(main())
    assert sorted(r.cached for r in results) == [False] + [True] * 5
    assert len(emu.requests) == 1


def test_waiters_make_their_own_call_when_the_leader_fails(emu: Emulator) -> None:
    gate = Gate(emu, first=reply.error(400, message="the leader's request failed"))
    method = chat(emu, Cache(MemoryStore(), poll=0.01))
    outcome: list[list[Any]] = []
    runner = threading.Thread(target=lambda: outcome.append(race_threads(method, 4)))
    runner.start()
    gate.wait_for_first()
    time.sleep(SETTLE)
    assert len(emu.requests) == 1
    gate.release.set()
    runner.join(60)
    results = outcome[0]
    failed = [r for r in results if isinstance(r, Exception)]
    assert len(failed) == 1 and isinstance(failed[0], VendorError), results
    values = [r for r in results if not isinstance(r, Exception)]
    assert all(r.value == Ticket(urgency=4, summary="Late parcel") for r in values)
    assert sorted(r.cached for r in values) == [False, True, True], "one waiter led the second flight"
    assert len(emu.requests) == 2


class Shouted(BaseModel):
    """A value whose JSON dump does not read back as itself: it cannot be cached."""

    urgency: int
    summary: str

    @field_serializer("summary")
    def shout(self, summary: str) -> str:
        return summary.upper()


def test_an_answer_that_cannot_be_cached_is_returned_but_not_stored(emu: Emulator) -> None:
    emu.responder = answering(GOOD)
    method = chat(emu, Cache(MemoryStore()))
    first, second = ask(method, response_model=Shouted), ask(method, response_model=Shouted)
    assert (first.cached, second.cached) == (False, False)
    assert second.value == Shouted(urgency=4, summary="Late parcel")
    big = chat(emu, Cache(MemoryStore(), max_entry_bytes=64))
    assert [ask(big).cached for _ in range(2)] == [False, False]
    assert len(emu.requests) == 4


def test_waiters_call_side_by_side_when_the_leaders_answer_cannot_be_cached(emu: Emulator) -> None:
    """After the leader, the other three requests are all in flight at once (each held until all three
    arrived): queued behind one another, the first of them would have been held alone until its wait ran out."""
    release = threading.Event()
    together: list[bool] = []

    def responder(request: RecordedRequest) -> Any:
        if len(emu.requests) == 1:
            release.wait(20)
        else:
            for _ in range(1000):
                if len(emu.requests) == 4:
                    break
                time.sleep(0.01)
            together.append(len(emu.requests) == 4)
        return reply.answer(GOOD)

    emu.responder = responder
    method = chat(emu, Cache(MemoryStore(), poll=0.01))
    outcome: list[list[Any]] = []
    runner = threading.Thread(target=lambda: outcome.append(race_threads(method, 4, response_model=Shouted)))
    runner.start()
    for _ in range(2000):
        if emu.requests:
            break
        time.sleep(0.01)
    time.sleep(SETTLE)
    assert len(emu.requests) == 1
    release.set()
    runner.join(60)
    assert [r.cached for r in outcome[0]] == [False] * 4
    assert together == [True, True, True]


WORKER = textwrap.dedent("""
    import json, logging, sys
    import structlog
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    import openai, guardrail
    from pydantic import BaseModel, Field, field_serializer
    from guardrail.call.cache import Cache
    from guardrail.store import RedisStore, SQLiteStore

    class Ticket(BaseModel):
        urgency: int = Field(ge=1, le=5)
        summary: str

    kind, where, prefix, base_url, lease = sys.argv[1:6]
    store = RedisStore(where, prefix=prefix, check_persistence=False) if kind == "redis" else SQLiteStore(where)
    client = guardrail.wrap(openai.OpenAI(base_url=base_url, api_key="test", timeout=30),
                            retry=guardrail.RetryPolicy(max_tries=1, deadline=30),
                            cache=Cache(store, poll=0.01, lease=float(lease)))
    print("ready", flush=True)
    sys.stdin.readline()
    result = client.chat.completions.create_with_result(
        model="gpt-4o", messages=[{"role": "user", "content": "My parcel is two weeks late"}], response_model=Ticket)
    print(json.dumps({"cached": result.cached, "value": result.value.model_dump()}), flush=True)
""")


def start_workers(count: int, kind: str, where: str, prefix: str, emu: Emulator,
                  lease: float = 30.0) -> list[subprocess.Popen[str]]:
    processes = [subprocess.Popen([sys.executable, "-c", WORKER, kind, where, prefix, emu.openai_base_url, str(lease)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  cwd=ROOT) for _ in range(count)]
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", process.stderr.read() if process.stderr else ""
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    return processes


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_concurrent_identical_calls_in_processes_send_one_request(emu: Emulator, kind: str, location: str,
                                                                  prefix: str) -> None:
    """Two worker processes and this one (three callers, three processes) share one SQLite file / Redis."""
    gate = Gate(emu)
    processes = start_workers(2, kind, location, prefix, emu)
    here: list[Any] = []
    local = threading.Thread(target=lambda: here.append(ask(chat(emu, Cache(open_store(kind, location, prefix),
                                                                            poll=0.01)))))
    local.start()
    gate.wait_for_first()
    time.sleep(2 * SETTLE)
    assert len(emu.requests) == 1, "the other processes wait for the one in flight"
    gate.release.set()
    local.join(60)
    outputs = [{"cached": here[0].cached, "value": here[0].value.model_dump()}]
    for process in processes:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err[-2000:]
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    assert all(o["value"] == {"urgency": 4, "summary": "Late parcel"} for o in outputs)
    assert sorted(o["cached"] for o in outputs) == [False, True, True]
    assert len(emu.requests) == 1


@pytest.mark.slow
def test_a_waiter_takes_over_when_the_leader_process_dies(emu: Emulator, tmp_path: Path) -> None:
    location = str(tmp_path / "cache.sqlite3")
    gate = Gate(emu)
    leader, = start_workers(1, "sqlite", location, "", emu, lease=0.5)
    gate.wait_for_first()
    os.kill(leader.pid, signal.SIGKILL)  # mid-request: its claim stays until the lease lapses
    leader.communicate(timeout=30)
    method = chat(emu, Cache(SQLiteStore(location), poll=0.01, lease=0.5))
    result = ask(method)  # waits out the dead leader's lease, then calls itself
    gate.release.set()
    assert (result.cached, result.value) == (False, Ticket(urgency=4, summary="Late parcel"))
    assert len(emu.requests) == 2
    assert ask(method).cached is True


def test_discard_removes_only_what_the_caller_cannot_use() -> None:
    from guardrail.store import Idempotency

    store = MemoryStore()
    flight = Idempotency(store, rerun_safe=True, prefix="c:")
    flight.run("k", "k", lambda: "entry")
    assert flight.discard("k", "k", result="another entry") is False, "a newer entry stays"
    assert flight.discard("k", "k", result="entry") is True
    assert store.get("c:k") is None
    store.put_if_absent("c:k", json.dumps({"state": "started", "fingerprint": "k", "owner": "o"}), 60)
    assert flight.discard("k", "k") is False, "a run in progress is never removed"
    store.compare_and_set("c:k", store.get("c:k") or "", "garbage", 60)
    assert flight.discard("k", "k") is True
    assert flight.discard("k", "k") is False, "nothing left"


# -- the key ---------------------------------------------------------------------------------------------------------

JSON_SCALARS = (st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8)
                | st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer()))
JSON = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
FIELDS = st.sampled_from(["model", "messages", "input", "temperature", "top_p", "tools", "seed", "max_tokens",
                          "system", "extra_body", "reasoning_effort", "stop"])
REQUESTS = st.dictionaries(FIELDS, JSON, min_size=1, max_size=6)


def key_of(kwargs: dict[str, Any], **overrides: Any) -> str:
    parts: dict[str, Any] = {"provider": "openai", "api": "chat", "server": None, "kwargs": kwargs,
                             "schema_hash": "s" * 64, "rules": (), "aliases": None, "modes": ("native",),
                             "prompt_version": None}
    parts.update(overrides)
    return request_key(**parts)


def reordered(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return tuple(reordered(item) for item in value)  # a tuple sends the same JSON
    return value


@given(REQUESTS)
def test_equal_requests_give_equal_keys(kwargs: dict[str, Any]) -> None:
    assert key_of(kwargs) == key_of(copy.deepcopy(kwargs)) == key_of(reordered(kwargs))
    assert key_of(kwargs) == key_of({**kwargs, "timeout": 3, "extra_headers": {"x": "y"}, "stream": False})


@given(REQUESTS, FIELDS, JSON)
def test_any_differing_field_gives_another_key(kwargs: dict[str, Any], field: str, value: Any) -> None:
    changed = {**kwargs, field: value}
    if json.dumps(changed, sort_keys=True) == json.dumps(kwargs, sort_keys=True):
        return  # the same request
    assert key_of(changed) != key_of(kwargs)


@given(REQUESTS, st.text(max_size=10), st.text(max_size=10))
def test_prompt_version_schema_and_rules_are_in_the_key(kwargs: dict[str, Any], one: str, other: str) -> None:
    base = key_of(kwargs, prompt_version=one)
    assert (key_of(kwargs, prompt_version=other) == base) == (one == other)
    assert key_of(kwargs, prompt_version=one, schema_hash="t" * 64) != base
    assert key_of(kwargs, prompt_version=one, rules=(relation("a", "<", "b"),)) != base
    assert key_of(kwargs, prompt_version=one, rules=(relation("a", "<=", "b"),)) != key_of(
        kwargs, prompt_version=one, rules=(relation("a", "<", "b"),))


def test_sdk_sentinels_mean_absent_and_models_are_their_json() -> None:
    class Tool(BaseModel):
        name: str
        strict: bool = True

    base = {"model": "m", "tools": [{"name": "lookup", "strict": True}]}
    assert key_of(base) == key_of({**base, "temperature": openai.NOT_GIVEN, "top_k": anthropic.NOT_GIVEN})
    assert key_of(base) == key_of({"model": "m", "tools": [Tool(name="lookup", strict=True)]})
    assert key_of(base) != key_of({"model": "m", "tools": [Tool(name="lookup", strict=False)]})
    assert key_of({"input": "\ud800"}) != key_of({"input": "\ud801"}), "lone surrogates are request text too"


def test_transport_only_fields_are_the_documented_ones() -> None:
    assert {"timeout", "extra_headers", "stream"} <= TRANSPORT_ONLY
    assert not {"temperature", "tools", "messages", "model", "max_tokens", "extra_body"} & TRANSPORT_ONLY
