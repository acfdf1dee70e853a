"""Allow-lists read at call time: named, versioned lists in a real store (memory, a SQLite file, a real
redis-server), kept by the application (``guardrail.tools.lists``) and by approved calls (``[[after_approval]]``),
read by policies (``list``, ``not_list``) when a call is judged, with the version read in the audit record.

Policies are the files in ``tests/tools/policies/``; calls go through ``execute_tool_call``."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs
from support.tool_env import ToolEnv, audits
from support.waiting import in_threads

import guardrail
from guardrail.errors import StoreError, StoreUnavailable
from guardrail.store import Lists, ListSnapshot, MemoryStore, RedisStore, SQLiteStore, Store
from guardrail.tools.execute import tool
from guardrail.tools.policy.facts import list_name

POLICIES = Path(__file__).parent / "policies"


@pytest.fixture(params=["memory", "sqlite", "redis"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def opener(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Opens stores on one backend's data: each call a new store object (a new connection) on the same data."""
    opened: list[Store] = []
    memory = MemoryStore()
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    url = str(request.getfixturevalue("redis_url")) if kind == "redis" else ""

    def open_store() -> Store:
        store: Store = memory if kind == "memory" else (
            SQLiteStore(tmp_path / "lists.sqlite3") if kind == "sqlite" else RedisStore(url, prefix=prefix))
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        if store is not memory:
            store.close()


def test_a_list_changes_by_versions(opener: Any) -> None:
    lists = Lists(opener())
    assert lists.read("payees:acme") == ListSnapshot("payees:acme", 0, frozenset())
    assert lists.add("payees:acme", "A", "B").version == 1
    assert lists.add("payees:acme", "A").version == 1  # nothing new: no new version
    assert lists.remove("payees:acme", "A", "Z") == ListSnapshot("payees:acme", 2, frozenset({"B"}))
    assert lists.replace("payees:acme", ["C", "D"]).members == {"C", "D"}
    other = Lists(opener())  # another connection reads the same list
    assert other.read("payees:acme") == ListSnapshot("payees:acme", 3, frozenset({"C", "D"}))
    assert "C" in other.read("payees:acme") and 3 not in other.read("payees:acme")
    assert other.read("payees:other").version == 0


def test_concurrent_changes_all_land(opener: Any) -> None:
    threads, each = 6, 8
    barrier = threading.Barrier(threads)

    def worker(index: int) -> None:
        lists = Lists(opener())  # one store object (connection) per thread: a real race on the backend
        barrier.wait()
        for n in range(each):
            lists.add("members:acme", f"user-{index}-{n}")

    in_threads(worker, threads)
    final = Lists(opener()).read("members:acme")
    assert final.members == {f"user-{i}-{n}" for i in range(threads) for n in range(each)}
    assert final.version == threads * each  # every add made its own version, none was lost


def test_bad_names_members_and_stored_values_are_typed_errors() -> None:
    store = MemoryStore()
    lists = Lists(store)
    for bad_name in ("", "x" * 300):
        with pytest.raises(guardrail.GuardrailError):
            lists.read(bad_name)
    for bad in ("", "x" * 2000):
        with pytest.raises(guardrail.GuardrailError):
            lists.add("l", bad)
    with pytest.raises(TypeError):
        lists.replace("l", "abc")  # one string is not a collection of members
    store.put_if_absent("list:broken", "not json", 60)
    with pytest.raises(StoreError):
        lists.read("broken")


@given(tenant=st.text(min_size=1, max_size=8), user=st.text(min_size=1, max_size=8),
       other_tenant=st.text(min_size=1, max_size=8), other_user=st.text(min_size=1, max_size=8))
@settings(max_examples=200)
def test_list_names_of_two_identities_never_collide(tenant: str, user: str, other_tenant: str,
                                                    other_user: str) -> None:
    template = "l:{tenant}:{user}"
    one = list_name(template, guardrail.Identity(tenant, user))
    two = list_name(template, guardrail.Identity(other_tenant, other_user))
    assert (one == two) == ((tenant, user) == (other_tenant, other_user))
    assert list_name(template, None) is None and list_name(template, guardrail.Identity(None, user)) is None


# ------------------------------------------------------------------------------------------------ read by policies


def share_env(store: Store) -> ToolEnv:
    env = ToolEnv(store)

    def share_file(path: str, with_users: list[str]) -> str:
        env.ran("share", with_users)
        return "shared"

    tool(policy=POLICIES / "share_file.toml", registry=env.registry)(share_file)
    return env


def test_a_member_added_a_moment_ago_is_admitted_and_the_audit_has_the_version(opener: Any) -> None:
    env = share_env(opener())
    app = guardrail.tools.lists(opener())  # the application's own connection to the same store
    with guardrail.identity(tenant="acme", user="u"), capture_logs() as logs:
        with pytest.raises(guardrail.Denied) as caught:
            env.call("share_file", {"path": "q3.pdf", "with_users": ["ann"]})
        assert (caught.value.rule, caught.value.argument) == ("args.with_users", "with_users[0]")
        app.add("members:acme", "ann", "bob")
        env.call("share_file", {"path": "q3.pdf", "with_users": ["ann", "bob"]})
        app.remove("members:acme", "bob")
        with pytest.raises(guardrail.Denied):
            env.call("share_file", {"path": "q3.pdf", "with_users": ["ann", "bob"]})
    with guardrail.identity(tenant="other", user="u"), pytest.raises(guardrail.Denied):
        env.call("share_file", {"path": "q3.pdf", "with_users": ["ann"]})  # another tenant, another list
    assert env.calls == [("share", ["ann", "bob"])]
    read = [record["lists"] for record in audits(logs)]
    assert read == [[{"list": "members:acme", "version": 0}], [{"list": "members:acme", "version": 1}],
                    [{"list": "members:acme", "version": 2}]]


def test_an_approved_invite_adds_the_member(opener: Any) -> None:
    store = opener()
    env = share_env(store)

    def invite_member(email: str) -> str:
        env.ran("invite", email)
        return "invited"

    tool(policy=POLICIES / "invite_member.toml", registry=env.registry)(invite_member)
    with guardrail.identity(tenant="acme", user="admin", roles=["admin"]), capture_logs() as logs:
        with pytest.raises(guardrail.ApprovalRequired) as waiting:
            env.call("invite_member", {"email": "new@acme.com"})
        assert guardrail.approve(waiting.value.token, approver="owner", store=store)
        env.call("invite_member", {"email": "new@acme.com"}, approval_token=waiting.value.token)
        env.call("invite_member", {"email": "new@acme.com"})  # a member now: no approval asked
        env.call("share_file", {"path": "q3.pdf", "with_users": ["new@acme.com"]})
    assert env.calls == [("invite", "new@acme.com"), ("invite", "new@acme.com"), ("share", ["new@acme.com"])]
    executed = next(record for record in audits(logs) if record["decision"] == "executed")
    assert executed["lists"] == [{"list": "members:acme", "version": 0},
                                 {"list": "members:acme", "version": 1, "added": 1}]


def test_a_refused_or_failed_call_adds_nothing(env: ToolEnv) -> None:

    def invite_member(email: str) -> str:
        raise RuntimeError("mail server down")

    tool(policy=POLICIES / "invite_member.toml", registry=env.registry)(invite_member)
    with guardrail.identity(tenant="acme", user="admin", roles=["admin"]):
        with pytest.raises(guardrail.ApprovalRequired) as waiting:
            env.call("invite_member", {"email": "x@acme.com"})
        guardrail.approve(waiting.value.token, approver="owner", store=env.store)
        with pytest.raises(RuntimeError):
            env.call("invite_member", {"email": "x@acme.com"}, approval_token=waiting.value.token)
    assert guardrail.tools.lists(env.store).read("members:acme").version == 0


def test_a_store_that_cannot_be_read_stops_the_call(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "gone.sqlite3")
    env = share_env(store)
    (tmp_path / "gone.sqlite3").unlink()  # the file is gone: the list cannot be read
    with guardrail.identity(tenant="acme", user="u"), capture_logs() as logs, pytest.raises(StoreUnavailable):
        env.call("share_file", {"path": "q3.pdf", "with_users": ["ann"]})
    assert env.calls == [] and [r["decision"] for r in audits(logs)] == ["failed"]
    store.close()


def test_a_list_name_too_long_for_the_store_cannot_judge() -> None:
    env = share_env(MemoryStore())
    with guardrail.identity(tenant="ü" * 200, user="u"), pytest.raises(guardrail.Denied) as caught:
        env.call("share_file", {"path": "q3.pdf", "with_users": ["ann"]})
    assert caught.value.reason.startswith("cannot be judged") and env.calls == []
