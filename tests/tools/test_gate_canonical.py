"""The tool receives exactly the value the checker approved, or the call is denied.

Adversarial classes, each through ``guardrail.run_tool_call`` with a recording tool (nothing of guardrail's own
is mocked): percent-encoded and look-alike paths, symlinks and a swap between check and open (TOCTOU), ``~``
forms, relative bases; URLs normalised, nested URLs (open redirect), redirects and addresses at connect time
through the httpx transport hook against real local HTTP servers; SQL functions outside the dialect's
allow-list; ``list[str]`` and nested models element by element; explainable denials, replays and conflicts.
Property tests: any spelling of a path that resolves outside the base is denied; what the tool receives is
what was checked.
"""

from __future__ import annotations

import asyncio
import errno
import os
import string
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from structlog.testing import capture_logs
from support.tool_env import OPEN, ToolEnv, audits

import guardrail
from guardrail.errors import ConnectionDenied, Rejected
from guardrail.store import IdempotencyConflict
from guardrail.store.memory import MemoryStore
from guardrail.tools.execute import ToolRegistry, execute_tool_calls, run_tool_call, tool
from guardrail.tools.policy.kinds import PathArg, SqlArg, UrlArg
from guardrail.tools.policy.loader import parse_policy
from guardrail.tools.policy.paths import open_inside, resolve_path
from guardrail.tools.policy.sql import check_sql
from guardrail.tools.policy.urls import canonical_url, check_url


class Recorder:
    """A private registry and store; each registered tool records exactly what it received."""

    def __init__(self) -> None:
        self.registry = ToolRegistry()
        self.store = MemoryStore()
        self.received: list[Any] = []

    def add(self, fn: Callable[..., Any], policy: str, *, base_dir: Path | None = None) -> None:
        name = fn.__name__
        tool(name=name, policy=parse_policy(f'tool = "{name}"\n{policy}', base_dir=base_dir),
             registry=self.registry)(fn)

    def run(self, name: str, arguments: Any, **kwargs: Any) -> Any:
        with guardrail.identity(user="u"):
            return run_tool_call(name, arguments, registry=self.registry, store=self.store, **kwargs)

    def denied(self, name: str, arguments: Any) -> guardrail.Denied:
        before = len(self.received)
        with pytest.raises(guardrail.Denied) as caught:
            self.run(name, arguments)
        assert len(self.received) == before, "a denied call reached the tool"
        return caught.value


# -- paths ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``root/base`` with files and links, ``root/outside`` with the secret."""
    root = tmp_path_factory.mktemp("canonical").resolve()
    base, outside = root / "base", root / "outside"
    (base / "data").mkdir(parents=True)
    outside.mkdir()
    (base / "data" / "file.txt").write_text("ok")
    (base / "secret").write_text("inside")  # a file really named like the decoded spelling below
    (outside / "secret.txt").write_text("SECRET")
    (base / "link_out").symlink_to(outside)
    (base / "a%2fb").mkdir()  # a directory whose real name contains the escape
    return root


def reader(recorder: Recorder, tree: Path) -> None:
    def read(path: PathArg) -> str:
        recorder.received.append(path)
        with open_inside(path, base=tree / "base") as handle:
            return str(handle.read())

    recorder.add(read, OPEN + '[args.path]\npath = { base = "base" }\n', base_dir=tree)


def test_the_tool_receives_the_resolved_path_inside_the_base(tree: Path) -> None:
    recorder = Recorder()
    reader(recorder, tree)
    done = recorder.run("read", {"path": "data/../data/./file.txt"})
    assert done.value == "ok" and done.ran
    assert recorder.received == [str(tree / "base" / "data" / "file.txt")] == [done.arguments["path"]]


@pytest.mark.parametrize("value", [
    "sec%72et", "a%2fb/../../outside/secret.txt", "%2e%2e/outside/secret.txt", "data%2ffile.txt",
    "%252e%252e/outside", "link_out/secret.txt", "../outside/secret.txt", "~/secret", "~root/x",
    "\uff0e\uff0e/outside/secret.txt", "..\u2215outside\u2215secret.txt", "\u2024\u2024/outside", "..\\outside",
    "data/fi\u0301le.txt", "DATA/../../outside/secret.txt", "/etc/passwd",
])
def test_spellings_that_another_layer_could_read_as_another_path_are_denied(tree: Path, value: str) -> None:
    recorder = Recorder()
    reader(recorder, tree)
    denied = recorder.denied("read", {"path": value})
    assert denied.rule == "args.path" and denied.argument == "path" and denied.reason.startswith("path: ")
    assert str(denied) == "This action is not permitted."


def _encodings() -> st.SearchStrategy[str]:
    """Ways to spell ``../outside/secret.txt`` (and deeper variants) that some layer may decode."""
    dot = st.sampled_from([".", "%2e", "%2E", "%252e", "\uff0e", "\u2024", "\ufe52"])
    slash = st.sampled_from(["/", "%2f", "%2F", "%252f", "\\", "\uff0f", "\u2215", "\u2044", "//", "/./"])
    prefix = st.sampled_from(["", "data/", "./", "~/", "link_out/../", "data/./"])
    target = st.sampled_from(["outside/secret.txt", "outside", "link_out/secret.txt"])

    @st.composite
    def spelled(draw: st.DrawFn) -> str:
        ups = draw(st.integers(1, 3))
        parts = [draw(prefix)]
        for _ in range(ups):
            parts += [draw(dot), draw(dot), draw(slash)]
        text = "".join(parts) + draw(target)
        return text.replace("/", draw(slash), draw(st.integers(0, 1)))

    return spelled()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_encodings())
@pytest.mark.slow
def test_any_encoding_of_a_path_outside_the_base_is_denied(tree: Path, value: str) -> None:
    """Whatever the spelling, the checker either denies or approves a real path inside the base; and an
    approved spelling contains nothing any layer would decode."""
    recorder = Recorder()
    reader(recorder, tree)
    base = tree / "base"
    try:
        resolved = resolve_path(value, base=base)
    except ValueError:
        with pytest.raises(guardrail.Denied):
            recorder.run("read", {"path": value})
        return
    assert resolved == base or base in resolved.parents
    assert "%" not in value and "\\" not in value and value.isascii() and not value.startswith("~")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.lists(st.sampled_from([*"./%2efab~", "\\", "\uff0e", "link_out", "data", "secret", "file.txt"]),
                      min_size=1, max_size=12).map("".join))
def test_what_the_tool_receives_equals_what_was_checked(tree: Path, value: str) -> None:
    recorder = Recorder()

    def touch(path: PathArg) -> str:
        recorder.received.append(path)
        return path

    recorder.add(touch, OPEN + '[args.path]\npath = { base = "base" }\n', base_dir=tree)
    try:
        expected = str(resolve_path(value, base=tree / "base"))
    except ValueError:
        recorder.denied("touch", {"path": value})
        return
    done = recorder.run("touch", {"path": value})
    assert recorder.received == [expected] == [done.value] == [done.arguments["path"]]
    assert expected == os.path.realpath(expected)  # no symlink left in what the tool got


def test_open_inside_refuses_a_symlink_swapped_in_after_the_check(tree: Path, tmp_path: Path) -> None:
    """TOCTOU: the path is checked, then the directory (or the file) becomes a symlink out of the base."""
    base = tmp_path / "base"
    (base / "dir").mkdir(parents=True)
    (base / "dir" / "f.txt").write_text("ok")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "f.txt").write_text("SECRET")
    checked = resolve_path("dir/f.txt", base=base)
    with open_inside(checked, base=base) as handle:
        assert handle.read() == "ok"
    (base / "dir" / "f.txt").unlink()
    (base / "dir").rmdir()
    (base / "dir").symlink_to(tmp_path / "out")  # the swap
    with pytest.raises(OSError) as caught:
        open_inside(checked, base=base)
    assert caught.value.errno in (errno.ELOOP, errno.ENOTDIR)
    (base / "g.txt").symlink_to(tmp_path / "out" / "f.txt")  # a symlink as the last component
    with pytest.raises(OSError) as caught:
        open_inside("g.txt", base=base)
    assert caught.value.errno == errno.ELOOP
    with pytest.raises(PermissionError):
        open_inside(tmp_path / "out" / "f.txt", base=base)
    with pytest.raises(PermissionError):
        open_inside("dir/../../out/f.txt", base=base)


def test_open_inside_can_create_files_below_the_base(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    with open_inside(tmp_path / "sub" / "new.txt", base=tmp_path, mode="w", encoding="utf-8") as handle:
        handle.write("hi")
    assert (tmp_path / "sub" / "new.txt").read_text() == "hi"
    with pytest.raises(IsADirectoryError):
        open_inside("sub", base=tmp_path)


# -- URLs ----------------------------------------------------------------------------------------------------

HOSTS = '["api.example.com", "*.docs.example.com"]'


def fetcher(recorder: Recorder, extra: str = "") -> None:
    def fetch(url: UrlArg) -> str:
        recorder.received.append(url)
        return url

    recorder.add(fetch, OPEN + f"[args.url]\nurl = {{ hosts = {HOSTS}{extra} }}\n")


@pytest.mark.parametrize(("value", "expected"), [
    ("HTTPS://API.Example.COM:443/v1/x?q=1#f", "https://api.example.com/v1/x?q=1#f"),
    ("https://api.example.com./v1", "https://api.example.com/v1"),
    ("https://a.docs.EXAMPLE.com", "https://a.docs.example.com"),
])
def test_the_tool_receives_the_normalised_url(value: str, expected: str) -> None:
    recorder = Recorder()
    fetcher(recorder)
    assert recorder.run("fetch", {"url": value}).value == expected
    assert recorder.received == [expected]


NESTED = [
    "https://api.example.com/redirect?to=http://169.254.169.254/latest/meta-data",
    "https://api.example.com/redirect?to=http%3A%2F%2F169.254.169.254%2F",
    "https://api.example.com/redirect?to=http%253A%252F%252F169.254.169.254%252F",
    "https://api.example.com/r?next=//evil.example/",
    "https://api.example.com/r?next=%2F%2Fevil.example",
    "https://api.example.com/r?u=http:evil.example",
    "https://api.example.com/r?u=javascript:alert(1)",
    "https://api.example.com/r#https://evil.example",
    "https://api.example.com/go/http://evil.example/",
    "https://api.example.com/r?u=gopher://127.0.0.1:6379/_",
]


@pytest.mark.parametrize("value", NESTED)
def test_a_url_inside_the_url_is_denied_by_default(value: str) -> None:
    recorder = Recorder()
    fetcher(recorder)
    denied = recorder.denied("fetch", {"url": value})
    assert denied.argument == "url" and ("URL inside the URL" in denied.reason or "nested" in denied.reason)


def test_nested_urls_can_be_allowed_by_the_policy() -> None:
    recorder = Recorder()
    fetcher(recorder, ", allow_nested_urls = true")
    assert recorder.run("fetch", {"url": NESTED[0]}).value == NESTED[0]
    assert check_url(NESTED[0], hosts=["api.example.com"]) is None  # the plain checker keeps its old default


@given(st.text(alphabet=st.sampled_from([*string.ascii_letters, *"0123456789:/.?#%=&-_~@[]", "\uff0e", "é"]),
               max_size=40))
def test_a_canonical_url_is_stable_and_still_allowed(tail: str) -> None:
    """Whatever is appended to an allowed origin: either denied, or its canonical form is a fixed point that
    the checker allows (so checker and tool agree on it)."""
    value = "HTTPS://api.EXAMPLE.com" + tail
    try:
        canonical = canonical_url(value, hosts=["api.example.com"])
    except Rejected:
        return
    assert canonical_url(canonical, hosts=["api.example.com"]) == canonical
    assert canonical.startswith("https://api.example.com")


# -- SQL -----------------------------------------------------------------------------------------------------

DANGEROUS = [
    ("postgres", "SELECT pg_stat_reset()"),
    ("postgres", "SELECT pg_switch_wal()"),
    ("postgres", "SELECT pg_create_logical_replication_slot('s', 'pgoutput')"),
    ("postgres", "SELECT pg_drop_replication_slot('s')"),
    ("postgres", "SELECT pg_wal_replay_pause()"),
    ("postgres", "SELECT pg_try_advisory_lock(1)"),
    ("postgres", "SELECT pg_advisory_unlock_all()"),
    ("postgres", "SELECT pg_file_write('/tmp/x', 'y', false)"),
    ("postgres", "SELECT pg_file_unlink('/tmp/x')"),
    ("postgres", "SELECT lo_unlink(1)"),
    ("postgres", "SELECT pg_sleep(10)"),
    ("postgres", "SELECT pg_stat_statements_reset()"),
    ("postgres", "SELECT pg_catalog.pg_read_file('/etc/passwd')"),
    ("postgres", "SELECT count(*) FROM t WHERE pg_sleep(1) IS NULL"),
    ("mysql", "SELECT GET_LOCK('a', 10)"),
    ("mysql", "SELECT RELEASE_ALL_LOCKS()"),
    ("mysql", "SELECT SLEEP(5)"),
    ("mysql", "SELECT BENCHMARK(1000000, MD5('x'))"),
    ("mysql", "SELECT MASTER_POS_WAIT('log', 4)"),
    ("sqlite", "SELECT writefile('/tmp/x', 'y')"),
    ("sqlite", "SELECT load_extension('/tmp/evil.so')"),
    ("sqlite", "SELECT my_udf(a) FROM t"),
    ("duckdb", "SELECT glob('/etc/*')"),
    (None, "SELECT random_side_effect()"),
]


@pytest.mark.parametrize(("dialect", "sql"), DANGEROUS)
def test_functions_outside_the_dialect_allow_list_are_denied(dialect: str | None, sql: str) -> None:
    reason = check_sql(sql, allow=["select"], dialect=dialect)
    assert reason is not None and "allow-list" in reason


@pytest.mark.parametrize(("dialect", "sql"), [
    (None, "SELECT count(*), sum(a), avg(a), min(a), max(a), coalesce(a, 0), lower(b), round(a, 2) FROM t"),
    ("sqlite", "SELECT substr(b, 1, 2), length(b), glob('a*', b), strftime('%Y', d), printf('%d', a) FROM t"),
    ("postgres", "SELECT date_trunc('day', d), string_agg(b, ','), row_number() OVER (ORDER BY a) FROM t"),
    ("mysql", "SELECT ifnull(a, 0), concat(b, 'x'), now(), date_format(d, '%Y') FROM t"),
    ("postgres", "SELECT CASE WHEN a > 1 THEN 'x' END, CAST(a AS text), a::int, EXTRACT(year FROM d) FROM t"),
])
def test_pure_scalar_and_aggregate_functions_are_allowed(dialect: str | None, sql: str) -> None:
    assert check_sql(sql, allow=["select"], dialect=dialect) is None


def test_the_policy_can_add_functions_and_the_tool_gets_the_parsed_text() -> None:
    recorder = Recorder()

    def query(sql: SqlArg) -> str:
        recorder.received.append(sql)
        return "rows"

    recorder.add(query, OPEN + '[args.sql]\nsql = { allow = ["select"], dialect = "sqlite", functions = ["my_udf"] }\n')
    text = "SELECT my_udf(a)  FROM t -- as written\n"
    assert recorder.run("query", {"sql": text}).value == "rows"
    assert recorder.received == [text]
    denied = recorder.denied("query", {"sql": "SELECT writefile('/tmp/x', a) FROM t"})
    assert denied.rule == "args.sql" and "writefile" in denied.reason
    assert recorder.denied("query", {"sql": "SELECT 1; SELECT 2"}).reason.startswith("sql: expected exactly one")


# -- lists and nested models ---------------------------------------------------------------------------------


class Hook(BaseModel):
    url: UrlArg
    label: str = ""


def test_list_arguments_are_checked_and_canonicalised_element_by_element() -> None:
    recorder = Recorder()

    def fetch_all(urls: list[UrlArg]) -> int:
        recorder.received.append(urls)
        return len(urls)

    recorder.add(fetch_all, OPEN + f'[args.urls]\nurl = {{ hosts = {HOSTS} }}\nmax_length = 3\n')
    done = recorder.run("fetch_all", {"urls": ["https://API.example.com/a", "https://x.docs.example.com/b"]})
    assert recorder.received == [["https://api.example.com/a", "https://x.docs.example.com/b"]] and done.value == 2
    denied = recorder.denied("fetch_all", {"urls": ["https://api.example.com/a", "https://evil.example/"]})
    assert (denied.rule, denied.argument) == ("args.urls", "urls[1]") and "evil.example" in denied.reason
    assert recorder.denied("fetch_all", {"urls": ["https://api.example.com/"] * 4}).reason == "length out of range"
    assert recorder.run("fetch_all", {"urls": []}).value == 0


def test_nested_models_are_checked_through_argument_paths() -> None:
    recorder = Recorder()

    def notify(hooks: list[Hook], primary: Hook | None = None) -> int:
        recorder.received.append((hooks, primary))
        return len(hooks)

    recorder.add(notify, OPEN + f'[args."hooks.url"]\nurl = {{ hosts = {HOSTS} }}\n'
                                f'[args."primary.url"]\nurl = {{ hosts = {HOSTS} }}\n')
    recorder.run("notify", {"hooks": [{"url": "https://API.example.com/h", "label": "a"}]})
    ((hooks, primary),) = recorder.received
    assert isinstance(hooks[0], Hook) and hooks[0].url == "https://api.example.com/h" and primary is None
    denied = recorder.denied("notify", {"hooks": [{"url": "https://api.example.com/"},
                                                  {"url": "https://api.example.com/r?to=http://10.0.0.1/"}]})
    assert denied.argument == "hooks[1].url"
    denied = recorder.denied("notify", {"hooks": [], "primary": {"url": "http://api.example.com/"}})
    assert denied.argument == "primary.url" and "scheme" in denied.reason


def test_deny_conditions_on_list_elements_match_any_element() -> None:
    recorder = Recorder()

    def tag(tags: list[str]) -> list[str]:
        recorder.received.append(tags)
        return tags

    recorder.add(tag, OPEN + '[[deny]]\nid = "no-admin"\nwhen.tags = { one_of = ["admin"] }\n')
    assert recorder.run("tag", {"tags": ["a", "b"]}).value == ["a", "b"]
    assert recorder.denied("tag", {"tags": ["a", "admin"]}).rule == "deny.no-admin"


# -- explainable denials, replays, conflicts -----------------------------------------------------------------


def test_denied_carries_rule_argument_and_reason() -> None:
    recorder = Recorder()

    def pay(amount: float) -> float:
        recorder.received.append(amount)
        return amount

    recorder.add(pay, '[[allow]]\nid = "staff"\nroles = ["staff"]\n[[allow]]\nid = "anyone"\n'
                      '[[deny]]\nid = "big"\nwhen.amount = { min = 1000 }\n[args.amount]\nmax = 5000\n')
    assert recorder.denied("pay", {"amount": 2000}).rule == "deny.big"
    over = recorder.denied("pay", {"amount": 9000})
    assert (over.rule, over.argument, over.reason) == ("deny.big", "", "a deny rule matched")
    recorder2 = Recorder()
    recorder2.add(pay, OPEN + "[args.amount]\nmax = 5000\n")
    bad = recorder2.denied("pay", {"amount": 9000})
    assert (bad.rule, bad.argument, bad.reason) == ("args.amount", "amount", "out of range")
    with pytest.raises(guardrail.Denied) as unknown:
        run_tool_call("nope", {}, registry=recorder.registry)
    assert unknown.value.rule == "unknown-tool"


def test_the_result_says_whether_the_tool_ran_or_a_replay_answered() -> None:
    recorder = Recorder()

    def charge(amount: int) -> int:
        recorder.received.append(amount)
        return len(recorder.received)

    recorder.add(charge, 'idempotency = "required"\n' + OPEN)
    first = recorder.run("charge", {"amount": 5}, idempotency_key="K")
    again = recorder.run("charge", {"amount": 5}, idempotency_key="K")
    assert (first.ran, first.replayed, again.ran, again.replayed) == (True, False, False, True)
    assert first.value == again.value == 1 and recorder.received == [5]
    with guardrail.identity(user="u"), capture_logs() as logs, pytest.raises(IdempotencyConflict):
        run_tool_call("charge", {"amount": 6}, idempotency_key="K", registry=recorder.registry,
                      store=recorder.store)
    (record,) = [entry for entry in logs if entry.get("event") == "guardrail.audit"]
    assert record["decision"] == "conflict" and record["rule"] == "idempotency"


def test_execute_tool_calls_outcomes_say_ran_or_replayed() -> None:
    from types import SimpleNamespace

    recorder = Recorder()

    def echo(text: str) -> str:
        recorder.received.append(text)
        return text

    recorder.add(echo, 'idempotency = "required"\n' + OPEN)
    call = SimpleNamespace(type="tool_use", name="echo", input={"text": "hi"}, id="c1")
    response = SimpleNamespace(content=[call, call])
    with guardrail.identity(user="u"):
        first, second = execute_tool_calls(response, registry=recorder.registry, store=recorder.store)
    assert (first.ran, first.replayed, second.ran, second.replayed) == (True, False, False, True)
    assert recorder.received == ["hi"]


# -- the HTTP transport hook ---------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    hits: list[str]
    redirects: dict[str, str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        target = self.redirects.get(self.path)
        self.send_response(302 if target else 200)
        if target:
            self.send_header("Location", target)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def servers() -> Iterator[tuple[Any, Any]]:
    """Two local HTTP servers: ``allowed`` (the policy's host) and ``other`` (never to be reached)."""
    made = []
    for _ in range(2):
        handler = type("Handler", (_Handler,), {"hits": [], "redirects": {}})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        made.append(server)
    yield made[0], made[1]
    for server in made:
        server.shutdown()
        server.server_close()


def _rule(port: int, connect_to: str = '"127.0.0.1/32"') -> Any:
    policy = parse_policy(f'tool = "f"\n[args.url]\nurl = {{ hosts = ["localhost:{port}"], schemes = ["http"], '
                          f"connect_to = [{connect_to}] }}\n")
    return policy.args["url"].url


def test_the_transport_applies_the_policy_to_every_redirect_hop(servers: tuple[Any, Any]) -> None:
    from guardrail.tools.policy.http import guarded_client

    allowed, other = servers
    port, other_port = allowed.server_address[1], other.server_address[1]
    allowed.RequestHandlerClass.redirects.update({
        "/in": f"http://localhost:{port}/ok",
        "/out": f"http://localhost:{other_port}/stolen",
        "/meta": "http://169.254.169.254/latest/meta-data",
        "/nested": f"http://localhost:{port}/ok?next=http://localhost:{other_port}/",
    })
    with guarded_client(_rule(port)) as client:
        assert client.get(f"http://localhost:{port}/in").text == "ok"
        for path in ("/out", "/meta", "/nested"):
            with pytest.raises(ConnectionDenied):
                client.get(f"http://localhost:{port}{path}")
    assert other.RequestHandlerClass.hits == []
    assert allowed.RequestHandlerClass.hits == ["/in", "/ok", "/out", "/meta", "/nested"]


def test_the_transport_checks_the_address_it_connects_to(servers: tuple[Any, Any]) -> None:
    """``localhost`` passes the name check (an exact entry) but resolves to loopback: without ``connect_to`` the
    connection is refused before a byte is sent (the DNS-rebinding case: the address is judged at connect)."""
    from guardrail.tools.policy.http import GuardedTransport, guarded_client

    allowed, _ = servers
    port = allowed.server_address[1]
    with guarded_client(_rule(port, connect_to="")) as client, pytest.raises(ConnectionDenied, match="loopback"):
        client.get(f"http://localhost:{port}/ok")
    assert allowed.RequestHandlerClass.hits == []
    with pytest.raises(guardrail.GuardrailError, match="proxy"):
        GuardedTransport(_rule(port), proxy="http://127.0.0.1:1")


_URL_PIECES = ["https://", "HTTPS://", "http://", "api.example.com", "API.EXAMPLE.COM", "x.docs.example.com", ".",
               ":443", ":8443", "/", "?", "#", "a", "=", "%2F", "//", "http:", "@", "evil.example", "\uff0e"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_URL_PIECES), min_size=1, max_size=8).map("".join), min_size=1, max_size=3))
@pytest.mark.slow
def test_every_url_the_tool_receives_is_the_checked_canonical_url(values: list[str]) -> None:
    recorder = Recorder()

    def fetch_all(urls: list[UrlArg]) -> list[str]:
        recorder.received.append(urls)
        return urls

    recorder.add(fetch_all, OPEN + f"[args.urls]\nurl = {{ hosts = {HOSTS} }}\n")
    try:
        expected = [canonical_url(value, hosts=["api.example.com", "*.docs.example.com"]) for value in values]
    except Rejected:
        recorder.denied("fetch_all", {"urls": values})
        return
    done = recorder.run("fetch_all", {"urls": values})
    assert recorder.received == [expected] and done.arguments["urls"] == expected
    assert all(check_url(url, hosts=["api.example.com", "*.docs.example.com"], allow_nested_urls=False) is None
               for url in expected)


def test_the_async_transport_checks_hops_and_addresses_too(servers: tuple[Any, Any]) -> None:

    from guardrail.tools.policy.http import guarded_async_client

    allowed, other = servers
    port, other_port = allowed.server_address[1], other.server_address[1]
    allowed.RequestHandlerClass.redirects.update({"/out": f"http://localhost:{other_port}/stolen"})

    async def main() -> list[str]:
        outcomes = []
        async with guarded_async_client(_rule(port)) as client:
            outcomes.append((await client.get(f"http://localhost:{port}/ok")).text)
            try:
                await client.get(f"http://localhost:{port}/out")
            except ConnectionDenied as refused:
                outcomes.append(refused.reason)
        async with guarded_async_client(_rule(port, connect_to="")) as client:
            try:
                await client.get(f"http://localhost:{port}/ok")
            except ConnectionDenied as refused:
                outcomes.append(refused.reason)
        return outcomes

    ok, hop, address = asyncio.run(main())
    assert ok == "ok" and "not allowed" in hop and "loopback" in address
    assert other.RequestHandlerClass.hits == [] and allowed.RequestHandlerClass.hits == ["/ok", "/out"]


def test_an_optional_url_left_out_passes_and_a_required_one_does_not() -> None:
    recorder = Recorder()

    def notify(text: str, callback: UrlArg | None = None) -> str:
        recorder.received.append(callback)
        return text

    recorder.add(notify, OPEN + f"[args.callback]\nurl = {{ hosts = {HOSTS} }}\n")
    recorder.run("notify", {"text": "hi"})
    recorder.run("notify", {"text": "hi", "callback": "https://API.example.com/cb"})
    assert recorder.received == [None, "https://api.example.com/cb"]
    strict = Recorder()
    strict.add(notify, OPEN + f"[args.callback]\nurl = {{ hosts = {HOSTS} }}\nrequired = true\n")
    for left_out in ({"text": "hi"}, {"text": "hi", "callback": None}):  # null is the default: left out too
        refused = strict.denied("notify", left_out)
        assert (refused.reason, refused.argument) == ("required argument missing", "callback")


# ------------------------------------------------------ complete mediation: what is authorized is exactly what runs


def colliding_strings() -> tuple[str, str]:
    """Two strings whose iteration order in a set depends on insertion order in *this* process (same hash
    bucket of a small set): the canonical form of a ``set`` argument must not depend on that."""
    first = "tag-0"
    for i in range(1, 5000):
        other = f"tag-{i}"
        if list({first, other}) != list({other, first}):
            return first, other
    raise AssertionError("no colliding pair found")  # pragma: no cover


def test_tool_receives_exactly_the_authorized_values_after_coercion(env: ToolEnv) -> None:
    seen: list[Any] = []

    def pay(amount: float, count: int, note: str = "none") -> str:
        seen.append((amount, type(amount), count, type(count), note))
        return "ok"

    env.add(pay, OPEN + '[args.amount]\nmax = 100\n[args.count]\nmax = 3\n')
    with guardrail.identity(user="u"), capture_logs() as logs:
        assert env.call("pay", '{"amount": "1e1", "count": 3.0}') == "ok"
        for bad in ('{"amount": "1e3", "count": 1}', '{"amount": 1, "count": "4"}',
                    '{"amount": 100.0000001, "count": 1}'):
            with pytest.raises(guardrail.Denied):
                env.call("pay", bad)
    assert seen == [(10.0, float, 3, int, "none")]
    executed = [r for r in audits(logs) if r["decision"] == "executed"]
    assert executed[0]["arguments"] == {"amount": 10.0, "count": 3, "note": "none"}  # the default was authorized


def test_a_positive_decision_for_other_arguments_cannot_run_a_call(env: ToolEnv) -> None:
    from guardrail.tools.authz import authorize
    from guardrail.tools.execute import run_sealed

    env.add(lambda x: env.ran("t", x), OPEN, name="t")
    found = env.registry.get("t")
    assert found is not None
    with guardrail.identity(user="u") as who:
        decision = authorize(found.policy(), "t", {"x": 1}, who)
    assert decision.allowed
    one, two = found.arguments.model_validate({"x": 1}), found.arguments.model_validate({"x": 2})
    with pytest.raises(guardrail.Denied):
        run_sealed(found, two, {"x": 2}, decision)
    with pytest.raises(guardrail.Denied):  # the canonical form given does not match the model that would run
        run_sealed(found, two, {"x": 1}, decision)
    with pytest.raises(guardrail.Denied):
        run_sealed(found, one, {"x": 1}, type(decision)(True, "t", "forged", "", "1", None, decision.arguments_hash))
    assert env.calls == []


def test_set_arguments_have_one_canonical_hash(env: ToolEnv) -> None:
    a, b = colliding_strings()

    def tag(tags: set[str]) -> int:
        env.ran("tag", tags)
        return len(env.calls)

    env.add(tag, 'idempotency = "required"\n' + OPEN)
    with guardrail.identity(user="u"):
        first = env.call("tag", {"tags": [a, b]})
        again = env.call("tag", {"tags": [b, a]})  # the same set: a retry must replay, not run again
    assert len(env.calls) == 1 and first == again


def test_audit_records_the_authorized_arguments_even_if_the_tool_mutates_them(env: ToolEnv) -> None:
    def enqueue(items: Any) -> str:
        items.append("injected-by-tool")
        return "ok"

    env.add(enqueue, OPEN)
    with guardrail.identity(user="u"), capture_logs() as logs:
        env.call("enqueue", {"items": [1]})
    (record,) = audits(logs)
    assert record["arguments"] == {"items": [1]}
