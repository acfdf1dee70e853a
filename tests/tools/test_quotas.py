"""Rate, quota and spend counters: several exact (Decimal) counters updated all or nothing, on memory, a real
SQLite file and a real redis-server; then through execute_tool_call, where a call refused by one limit consumes
none of the others and decimal amounts add up exactly.

No ``from __future__ import annotations``: tools defined inside a test annotate with local names."""

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.tool_env import OPEN, ToolEnv
from support.waiting import in_threads

import guardrail
from guardrail.store import Counter, MemoryStore, RedisStore, SQLiteStore, Store
from guardrail.tools.execute import ToolRegistry, execute_tool_call, tool
from guardrail.tools.policy.loader import parse_policy


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    kind = request.param
    if kind == "memory":
        opened: Store = MemoryStore()
    elif kind == "sqlite":
        opened = SQLiteStore(tmp_path / "quotas.sqlite3")
    else:
        opened = RedisStore(request.getfixturevalue("redis_url"), prefix=f"quotas:{uuid.uuid4().hex[:10]}:")
    yield opened
    opened.close()


def counters(rate: int, spend: str, *, calls: int = 3, budget: str = "1.00") -> list[Counter]:
    return [Counter("{t}:rate", Decimal(rate), Decimal(calls), 60), Counter("{t}:spend", Decimal(spend),
                                                                             Decimal(budget), 60)]


def test_all_or_nothing(store: Store) -> None:
    assert store.add_within_limits(counters(1, "0.90")) is None
    assert store.add_within_limits(counters(1, "0.20")) == 1, "the spend counter refused"
    assert store.get("{t}:rate") == "1", "so the rate counter did not move either"
    assert store.add_within_limits(counters(1, "0.10")) is None
    assert store.get("{t}:rate") == "2" and store.get("{t}:spend") == "1.00"
    assert store.add_within_limits(counters(1, "0")) is None
    assert store.add_within_limits(counters(1, "0")) == 0, "now the rate counter refuses first"
    assert store.get("{t}:spend") == "1.00"


def test_decimal_amounts_add_up_exactly(store: Store) -> None:
    for _ in range(3):
        assert store.add_within_limits([Counter("s", Decimal("0.1"), Decimal("0.3"), 60)]) is None
    assert store.get("s") == "0.3"
    assert store.add_within_limits([Counter("s", Decimal("1E-28"), Decimal("0.3"), 60)]) == 0
    big, limit = Decimal("1" + "0" * 30), Decimal("1" + "0" * 29 + "1")
    assert store.add_within_limits([Counter("b", big, limit, 60)]) is None
    assert store.add_within_limits([Counter("b", Decimal(1), limit, 60)]) is None
    assert store.get("b") == str(limit), "no rounding at 31 digits"


def test_counters_are_checked(store: Store) -> None:
    for bad in (Decimal(-1), Decimal("NaN"), Decimal("Infinity"), 1.5):
        with pytest.raises(ValueError):
            store.add_within_limits([Counter("c", bad, Decimal(10), 60)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="twice"):
        store.add_within_limits([Counter("c", Decimal(1), Decimal(9), 60)] * 2)
    store.put_if_absent("text", "not a number", 60)
    with pytest.raises(ValueError, match="not a counter"):
        store.add_within_limits([Counter("text", Decimal(1), Decimal(9), 60)])


def test_fifty_threads_never_pass_either_limit(store: Store) -> None:
    barrier = threading.Barrier(50)
    accepted: list[Decimal] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        amount = Decimal(i % 4) / 10  # 0.0 .. 0.3
        barrier.wait()
        if store.add_within_limits(counters(1, str(amount), calls=20, budget="3.00")) is None:
            with lock:
                accepted.append(amount)

    in_threads(worker, 50)
    assert len(accepted) <= 20 and sum(accepted) <= Decimal("3.00")
    assert store.get("{t}:rate") == str(len(accepted))
    assert Decimal(store.get("{t}:spend") or "0") == sum(accepted)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 2), st.decimals("0", "5", places=2)), max_size=15))
def test_counters_match_a_model(store: Store, steps: list[tuple[int, Decimal]]) -> None:
    prefix = uuid.uuid4().hex
    rate_key, spend_key = f"{{{prefix}}}:rate", f"{{{prefix}}}:spend"
    rate, spend = Decimal(0), Decimal(0)
    for calls, amount in steps:
        wanted = [Counter(rate_key, Decimal(calls), Decimal(6), 60), Counter(spend_key, amount, Decimal(10), 60)]
        over = store.add_within_limits(wanted)
        expected = 0 if rate + calls > 6 else 1 if spend + amount > 10 else None
        assert over == expected
        if over is None:
            rate, spend = rate + calls, spend + amount
        assert Decimal(store.get(rate_key) or "0") == rate and Decimal(store.get(spend_key) or "0") == spend


# -- through execute_tool_call ---------------------------------------------------------------------------------


def pay_tool(store: Store, limits: str) -> tuple[Any, list[Any]]:
    registry, paid = ToolRegistry(), []

    @tool(policy=parse_policy('tool = "pay"\n[[allow]]\nid = "all"\n[limits]\n' + limits), registry=registry)
    def pay(amount: float) -> str:
        paid.append(amount)
        return "paid"

    def call(amount: Any) -> str:
        with guardrail.identity(user="u"):
            return str(execute_tool_call("pay", {"amount": amount}, registry=registry, store=store))

    return call, paid


def test_a_refused_call_consumes_no_limit(store: Store) -> None:
    call, paid = pay_tool(store, 'rate = { calls = 2, per_seconds = 60 }\n'
                                 'spend = { arg = "amount", max = 0.3, per_seconds = 60 }\n')
    assert call(0.1) == "paid"
    with pytest.raises(guardrail.Denied):
        call(0.25)  # over the spend budget: the rate counter is untouched
    assert call(0.2) == "paid"  # exactly 0.3, the second call within the rate
    with pytest.raises(guardrail.Denied):
        call(0)  # now the rate is used up
    assert paid == [0.1, 0.2]


def test_a_call_stopped_by_a_limit_leaves_its_idempotency_key_free() -> None:
    store, registry, ran = MemoryStore(), ToolRegistry(), []

    @tool(policy=parse_policy('tool = "ping"\nidempotency = "required"\n[[allow]]\nid = "all"\n'
                              "[limits]\nrate = { calls = 1, per_seconds = 60 }\n"), registry=registry)
    def ping(n: int) -> int:
        ran.append(n)
        return n

    with guardrail.identity(user="u"):
        assert execute_tool_call("ping", {"n": 1}, idempotency_key="A", registry=registry, store=store) == 1
        for _ in range(2):  # denied by the limit each time: never a recorded failure replayed as one
            with pytest.raises(guardrail.Denied):
                execute_tool_call("ping", {"n": 2}, idempotency_key="B", registry=registry, store=store)
    assert ran == [1]


# --------------------------------------------------------------------------------- limits through execute_tool_call


def test_rate_and_spend_limits_are_exact_under_fifty_threads(store: Store) -> None:
    env = ToolEnv(store)
    env.add(lambda n: env.ran("ping", n), OPEN + "[limits]\nrate = { calls = 10, per_seconds = 60 }\n", name="ping")
    env.add(lambda amount: env.ran("pay", amount),
            OPEN + '[limits]\nspend = { arg = "amount", max = 100, per_seconds = 60 }\n', name="pay")

    def one(i: int) -> tuple[str, str]:
        outcome = []
        with guardrail.identity(tenant="t", user="u"):
            for name, args in (("ping", {"n": i}), ("pay", {"amount": 7.5})):
                try:
                    env.call(name, args)
                    outcome.append("ran")
                except guardrail.Denied:
                    outcome.append("denied")
        return outcome[0], outcome[1]

    with ThreadPoolExecutor(max_workers=50) as pool:
        outcomes = list(pool.map(one, range(50)))
    assert [o[0] for o in outcomes].count("ran") == 10
    assert [o[1] for o in outcomes].count("ran") == 13  # 13 * 7.5 = 97.5 <= 100 < 105
    assert sum(1 for c in env.calls if c[0] == "ping") == 10


def test_spend_refuses_hostile_amounts_and_replays_are_free(env: ToolEnv) -> None:
    from typing import Any as AnyType

    def pay(amount: AnyType) -> str:
        env.ran("pay", amount)
        return "paid"

    env.add(pay, OPEN + '[limits]\nspend = { arg = "amount", max = 100, per_seconds = 60 }\n')
    env.add(lambda n: env.ran("ping", n) or "pong", OPEN + "[limits]\nrate = { calls = 1, per_seconds = 60 }\n",
            name="ping")
    with guardrail.identity(user="u"):
        for bad in (-1, True, "50", None, [50], {"v": 50}):
            with pytest.raises(guardrail.Denied):
                env.call("pay", {"amount": bad})
        for bad_text in ('{"amount": NaN}', '{"amount": Infinity}', '{"amount": -Infinity}', '{"amount": 1e999}'):
            with pytest.raises((guardrail.Denied, guardrail.ParseError)):  # Any: NaN is dumped as null
                env.call("pay", bad_text)
        assert env.call("pay", {"amount": 60}, idempotency_key="K") == "paid"
        for _ in range(5):  # replays cost neither spend nor rate
            assert env.call("pay", {"amount": 60}, idempotency_key="K") == "paid"
            assert env.call("ping", {"n": 1}, idempotency_key="P") == "pong"
        with pytest.raises(guardrail.Denied):  # 60 + 41 > 100
            env.call("pay", {"amount": 41})
        with pytest.raises(guardrail.Denied):  # rate: one call per minute
            env.call("ping", {"n": 2})
    assert env.calls == [("pay", 60), ("ping", 1)]


def test_a_call_denied_by_one_limit_consumes_no_other_limit(env: ToolEnv) -> None:
    env.add(lambda amount: env.ran("pay", amount), OPEN + "[limits]\nrate = { calls = 2, per_seconds = 60 }\n"
            'spend = { arg = "amount", max = 100, per_seconds = 60 }\n', name="pay")
    with guardrail.identity(user="u"):
        env.call("pay", {"amount": 90})
        with pytest.raises(guardrail.Denied):
            env.call("pay", {"amount": 50})  # over the spend budget
        env.call("pay", {"amount": 5})  # the second real execution: within rate (2) and spend (95)
    assert [c[1] for c in env.calls] == [90, 5]


def test_spend_budget_is_exact_for_decimal_amounts(env: ToolEnv) -> None:
    env.add(lambda amount: env.ran("pay", amount),
            OPEN + '[limits]\nspend = { arg = "amount", max = 0.3, per_seconds = 60 }\n', name="pay")
    with guardrail.identity(user="u"):
        for _ in range(3):
            env.call("pay", {"amount": 0.1})
    assert len(env.calls) == 3


def test_huge_integer_spend_is_denied(env: ToolEnv) -> None:
    def pay(amount: int) -> None:
        env.ran("pay", amount)

    env.add(pay, OPEN + '[limits]\nspend = { arg = "amount", max = 100, per_seconds = 60 }\n')
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied):
        env.call("pay", '{"amount": 1' + "0" * 400 + "}")
    assert env.calls == []
