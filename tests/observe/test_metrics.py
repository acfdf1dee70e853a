"""Metrics: the GenAI client metrics per HTTP request and guardrail's own counters, read back through the
OpenTelemetry SDK's in-memory reader (delta temporality: each test counts only what it recorded).

Counting rule under test: ``gen_ai.client.operation.duration`` has one measurement per HTTP request (a 429
retried is one, with ``error.type``); ``gen_ai.client.token.usage`` has an input and an output measurement per
response that reported usage (every billed request once, retries and re-asks included).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel

import guardrail
from guardrail.chain import Chain, safe_default, vendor
from guardrail.gates.semantic import rule
from guardrail.observe import metrics
from guardrail.testing import Emulator, reply
from guardrail.tools.execute import run_tool_call


class Contact(BaseModel):
    name: str


FAST = guardrail.RetryPolicy(initial_wait=0.01, max_wait=0.05)
#: The ``collect`` fixture (tests/observe/conftest.py): the metric points recorded since its previous call.
Collect = Callable[[], Any]


def _openai(emu: Emulator, **settings: Any) -> Any:
    raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10)
    return guardrail.wrap(raw, settings=guardrail.Settings(**settings), retry=FAST)


def _port(emu: Emulator) -> int:
    return int(emu.base_url.rsplit(":", 1)[1])


def test_a_429_retry_and_a_reask_record_three_operations_and_two_billed_requests(collect: Collect) -> None:
    with Emulator() as emu:
        emu.script(reply.rate_limited(retry_after=0), reply.answer('{"name": 1.5}', usage=(10, 3)),
                   reply.answer('{"name": "Ada"}', usage=(20, 5)))
        result = _openai(emu).chat.completions.create_with_result(
            model="gpt-4o", messages=[{"role": "user", "content": "who?"}], response_model=Contact)
        port = _port(emu)
    assert result.value == Contact(name="Ada") and result.vendor_calls == 3
    found = collect()
    # three HTTP requests, three operations; the 429 carries the SDK's error class
    assert found.count("gen_ai.client.operation.duration") == 3
    assert found.count("gen_ai.client.operation.duration", error__type="RateLimitError") == 1
    # two responses reported usage: each counted once, input and output
    assert found.count("gen_ai.client.token.usage", gen_ai__token__type="input") == 2
    assert found.count("gen_ai.client.token.usage", gen_ai__token__type="output") == 2
    assert found.total("gen_ai.client.token.usage", gen_ai__token__type="input") == 30
    assert found.total("gen_ai.client.token.usage", gen_ai__token__type="output") == 8
    for attributes, _ in found["gen_ai.client.token.usage"]:
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "openai"
        assert attributes["gen_ai.request.model"] == "gpt-4o"
        assert attributes["gen_ai.response.model"] == "gpt-4o"
        assert attributes["server.address"] == "127.0.0.1" and attributes["server.port"] == port
        assert "error.type" not in attributes
    # guardrail's own view of the same call: two model attempts, one re-ask, one call
    assert found.count("guardrail.attempts") == 2
    assert found.count("guardrail.attempts", guardrail__attempt__result="schema_violation") == 1
    assert found.count("guardrail.reasks", guardrail__reask__reason="schema_violation") == 1
    assert found.count("guardrail.call.duration") == 1
    assert found.count("guardrail.gave_up") == 0


def test_units_and_bucket_boundaries_follow_the_conventions(collect: Collect) -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": "Ada"}'))
        _openai(emu).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                             response_model=Contact)
    found = collect()
    assert found.units["gen_ai.client.token.usage"] == "{token}"
    assert found.units["gen_ai.client.operation.duration"] == "s"
    assert found.buckets["gen_ai.client.token.usage"] == tuple(float(b) for b in metrics.TOKEN_BUCKETS)
    assert found.buckets["gen_ai.client.operation.duration"] == metrics.DURATION_BUCKETS


def test_anthropic_streamed_and_responses_requests_are_counted_once_each(collect: Collect) -> None:
    with Emulator() as emu:
        emu.script(reply.answer('{"name": "Ada"}', usage=(7, 2)), reply.answer('{"name": "Bo"}', usage=(11, 4)))
        raw = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", timeout=10)
        client = guardrail.wrap(raw, retry=FAST)
        stream = client.messages.create_partial(model="claude-sonnet-4-5", max_tokens=100, response_model=Contact,
                                                messages=[{"role": "user", "content": "x"}])
        assert list(stream)[-1] == Contact(name="Ada")
        _openai(emu).responses.create(model="gpt-4o", input="x", response_model=Contact)
    found = collect()
    assert found.count("gen_ai.client.operation.duration", gen_ai__provider__name="anthropic") == 1
    assert found.total("gen_ai.client.token.usage", gen_ai__provider__name="anthropic",
                       gen_ai__token__type="input") == 7
    assert found.total("gen_ai.client.token.usage", gen_ai__provider__name="anthropic",
                       gen_ai__token__type="output") == 2
    assert found.count("gen_ai.client.operation.duration", gen_ai__provider__name="openai") == 1
    assert found.total("gen_ai.client.token.usage", gen_ai__provider__name="openai", gen_ai__token__type="input") == 11


def test_async_client_records_the_same(collect: Collect) -> None:
    async def run(emu: Emulator) -> Contact:
        raw = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10)
        client = guardrail.wrap(raw, retry=FAST)
        value: Contact = await client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "x"}], response_model=Contact)
        return value

    with Emulator() as emu:
        emu.script(reply.server_error(503), reply.answer('{"name": "Ada"}', usage=(5, 1)))
        assert asyncio.run(run(emu)) == Contact(name="Ada")
    found = collect()
    assert found.count("gen_ai.client.operation.duration") == 2
    assert found.count("gen_ai.client.operation.duration", error__type="InternalServerError") == 1
    assert found.count("gen_ai.client.token.usage") == 2  # one response: input + output


def test_truncation_then_answer_counts_a_truncation_and_a_reask(collect: Collect) -> None:
    with Emulator() as emu:
        emu.script(reply.truncated('{"name": "A'), reply.answer('{"name": "Ada"}'))
        _openai(emu).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                             response_model=Contact, max_tokens=5)
    found = collect()
    assert found.count("guardrail.truncations") == 1
    assert found.count("guardrail.reasks", guardrail__reask__reason="truncated") == 1


def test_refusals_gave_ups_and_semantic_rejections_by_rule(collect: Collect) -> None:
    @rule(name="no_bob")
    def no_bob(value: Contact, context: Any) -> Any:
        return value.name != "Bob" or "the name must not be Bob"

    with Emulator() as emu:
        client = _openai(emu)
        ask = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}], "response_model": Contact}
        emu.script(reply.refusal("no"))
        with pytest.raises(guardrail.Refused):
            client.chat.completions.create(**ask)
        emu.script(reply.answer('{"name": "Bob"}'), reply.answer('{"name": "Bob"}'))
        with pytest.raises(guardrail.GaveUp):
            client.chat.completions.create(**ask, rules=[no_bob], max_attempts=2)
    found = collect()
    assert found.count("guardrail.refusals", guardrail__refusal__source="refusal") == 1
    assert found.count("guardrail.gave_up", guardrail__gave_up__reason="gave_up") == 1
    assert found.count("guardrail.semantic.rejections", guardrail__rule="no_bob") == 2
    assert found.count("guardrail.call.duration", error__type="Refused") == 1
    assert found.count("guardrail.call.duration", error__type="GaveUp") == 1


def test_local_repairs_are_counted_by_fix_kind(collect: Collect) -> None:
    with Emulator() as emu:
        emu.script(reply.answer('```json\n{"name": "Ada",}\n```'))
        result = _openai(emu).chat.completions.create_with_result(
            model="gpt-4o", messages=[{"role": "user", "content": "x"}], response_model=Contact, mode="json")
    kinds = [fix.kind for fix in result.fixes]
    assert kinds  # the parse layer repaired something
    found = collect()
    for kind in set(kinds):
        assert found.count("guardrail.repairs", guardrail__fix__kind=kind) == kinds.count(kind)


def test_empty_but_valid_answers_are_counted(collect: Collect) -> None:
    class Tags(BaseModel):
        tags: list[str]

    with Emulator() as emu:
        client = _openai(emu)
        emu.script(reply.answer('{"tags": []}'), reply.answer('{"tags": ["a"]}'))
        for _ in range(2):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                           response_model=Tags)
    assert collect().count("guardrail.empty_results") == 1


@pytest.mark.parametrize(("value", "empty"), [(None, True), ("", True), ("  ", True), ([], True), ({}, True),
                                              ({"a": None, "b": []}, True), (0, False), (False, False),
                                              ("x", False), ([None], False), (Contact(name=""), True),
                                              (Contact(name="A"), False)])
def test_is_empty(value: Any, empty: bool) -> None:
    assert metrics.is_empty(value) is empty


def test_tool_denials_are_counted_by_rule(collect: Collect) -> None:
    with pytest.raises(guardrail.Denied):
        run_tool_call("no_such_tool_anywhere", {})
    found = collect()
    assert found.count("guardrail.tool.denials", guardrail__rule="unknown-tool") == 1


def test_cache_lookups_count_hits_and_misses(collect: Collect) -> None:
    metrics.cache_lookup(True, store="sqlite")
    metrics.cache_lookup(False, store="sqlite")
    metrics.cache_lookup(False)
    found = collect()
    assert found.count("guardrail.cache.lookups", guardrail__cache__result="hit") == 1
    assert found.count("guardrail.cache.lookups", guardrail__cache__result="miss") == 2
    assert found.count("guardrail.cache.lookups", guardrail__cache__store="sqlite") == 2


def test_chain_results_by_tier_and_degraded(collect: Collect) -> None:
    with Emulator() as emu:
        raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10, max_retries=0)
        primary = vendor(raw, "gpt-4o", name="primary", retry=guardrail.RetryPolicy(max_tries=1))
        chain = Chain([primary, safe_default(Contact(name="nobody"), name="fallback")])
        emu.script(reply.answer('{"name": "Ada"}'))
        assert chain.create(response_model=Contact, messages=[{"role": "user", "content": "x"}]).name == "Ada"
        emu.script(reply.server_error(500))
        assert chain.create(response_model=Contact, messages=[{"role": "user", "content": "x"}]).name == "nobody"
    found = collect()
    assert found.count("guardrail.chain.results", guardrail__chain__tier="primary",
                       guardrail__chain__degraded=False) == 1
    assert found.count("guardrail.chain.results", guardrail__chain__tier="fallback",
                       guardrail__chain__degraded=True) == 1


# -- beside the OpenAI SDK's own OpenTelemetry instrumentation ------------------------------------------------
_ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_beside_openai_v2_instrumentation_every_request_is_counted_once() -> None:
    """opentelemetry-instrumentation-openai-v2 records Chat Completions (plain and streamed); guardrail then
    records only its guardrail.* metrics there, and its own GenAI metrics for the Responses call the
    instrumentation does not wrap. Run in a fresh interpreter (the instrumentation patches the SDK
    process-wide)."""
    if importlib.util.find_spec("opentelemetry.instrumentation.openai_v2") is None:  # it needs httpx to import
        pytest.skip("opentelemetry-instrumentation-openai-v2 is not installed (the test group installs it)")
    env = {**os.environ, "PYTHONPATH": str(_ROOT)}
    worker = pathlib.Path(__file__).with_name("instrumented_worker.py")
    done = subprocess.run([sys.executable, str(worker)], capture_output=True, text=True, env=env, timeout=120,
                          cwd=_ROOT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    points = json.loads(done.stdout.strip().splitlines()[-1])

    def count(ours: bool, name: str, **match: Any) -> int:
        total = 0
        for point in points:
            if (point["scope"] == "guardrail") != ours or point["name"] != name:
                continue
            if all(point["attributes"].get(key.replace("__", ".")) == value for key, value in match.items()):
                total += point["count"] if point["count"] is not None else point["value"]
        return total

    # Chat Completions, twice: the instrumentation's 3 operations each (the 429 among them), 2 billed responses
    assert count(False, "gen_ai.client.operation.duration") == 6
    assert count(False, "gen_ai.client.token.usage", gen_ai__token__type="input") == 4
    # the Responses call, which it does not wrap, is guardrail's: 1 operation, 1 billed response
    assert count(True, "gen_ai.client.operation.duration") == 1
    assert count(True, "gen_ai.client.token.usage", gen_ai__token__type="input") == 1
    token_sums: dict[tuple[bool, str], int] = {}
    for point in points:
        if point["name"] == "gen_ai.client.token.usage":
            key = (point["scope"] == "guardrail", point["attributes"]["gen_ai.token.type"])
            token_sums[key] = token_sums.get(key, 0) + point["sum"]
    assert token_sums == {(False, "input"): 60, (False, "output"): 16, (True, "input"): 7, (True, "output"): 2}
    # guardrail's own counters are there for all three calls
    assert count(True, "guardrail.attempts") == 5
    assert count(True, "guardrail.reasks") == 2
    assert count(True, "guardrail.call.duration") == 3


def test_cache_lookups_are_counted_as_hits_and_misses_by_store(collect: Collect, tmp_path: pathlib.Path) -> None:
    from guardrail.store import SQLiteStore

    with Emulator() as emu:
        raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10)
        client = guardrail.wrap(raw, retry=FAST, cache=guardrail.Cache(SQLiteStore(tmp_path / "cache.db")))
        emu.script(reply.answer('{"name": "Ada"}'))
        ask = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}], "response_model": Contact}
        assert client.chat.completions.create(**ask) == client.chat.completions.create(**ask) == Contact(name="Ada")
        assert len(emu.requests) == 1
    found = collect()
    for result in ("miss", "hit"):
        assert found.count("guardrail.cache.lookups", guardrail__cache__result=result,
                           guardrail__cache__store="sqlite") == 1
