"""Policies and tools agree or fail loudly: a policy naming an argument the tool lacks, or a path/URL/SQL
argument without its checker, is a load error with file:line and the reason; the README's and the
docs' tool examples load with the shipped policies; a relative path base is relative to the policy file. A policy
that cannot load (unparsable, non-finite numbers, two files for one tool) is refused, and the tool denies."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, HttpUrl
from structlog.testing import capture_logs
from support.tool_env import OPEN, ToolEnv

import guardrail
from guardrail.call.config import configure, get_config
from guardrail.errors import PolicyError
from guardrail.store.memory import MemoryStore
from guardrail.tools.execute import ToolRegistry, execute_tool_call, tool
from guardrail.tools.policy.kinds import PathArg, SqlArg, UrlArg
from guardrail.tools.policy.loader import check_policies, load_policies, load_policy, parse_policy

ROOT = Path(__file__).resolve().parents[2]
POLICIES = ROOT / "policies"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def test_a_policy_naming_a_missing_parameter_is_a_load_error_with_file_line_and_reason(tmp_path: Path) -> None:
    path = write(tmp_path, "refund_order", 'tool = "refund_order"\n' + OPEN + "\n[args.card_token]\nsecret = true\n")

    def refund_order(order_id: str, amount: float) -> None: ...

    with pytest.raises(PolicyError) as caught:
        tool(policy=path, registry=ToolRegistry())(refund_order)
    (problem,) = caught.value.problems
    assert problem.file == str(path) and problem.line == 5 and problem.key == "args.card_token"
    assert "refund_order has no parameter card_token" in problem.message
    assert f"{path}:5" in str(caught.value)
    assert "test_policy_load.py" in problem.message  # where the tool is defined


class Target(BaseModel):
    host: str


@pytest.mark.parametrize(("policy", "key", "line", "message"), [
    (OPEN + '[[deny]]\nid = "big"\nwhen.ammount = { min = 1 }\n', "deny.0.when.ammount", 6, "no parameter ammount"),
    ('[[allow]]\nid = "a"\nwhen."target.hots" = { one_of = ["x"] }\n', "allow.0.when.target.hots", 4,
     "parameter target has no field hots"),
    (OPEN + '[limits]\nspend = { arg = "total", max = 1, per_seconds = 1 }\n', "limits.spend.arg", 5,
     "no parameter total"),
    (OPEN + '[args."amount.cents"]\nmax = 1\n', "args.amount.cents", 4, "parameter amount has no field cents"),
    (OPEN + "[args.amount]\nurl = { hosts = ['a.example'] }\n", "args.amount", 4, "url constraint on pay.amount"),
])
def test_every_way_of_naming_an_argument_is_checked(policy: str, key: str, line: int, message: str) -> None:
    def pay(amount: float, target: Target | None = None) -> None: ...

    with pytest.raises(PolicyError) as caught:
        tool(name="pay", policy=parse_policy('tool = "pay"\n' + policy), registry=ToolRegistry())(pay)
    (problem,) = caught.value.problems
    assert (problem.key, problem.line) == (key, line) and message in problem.message


class Hook(BaseModel):
    url: UrlArg
    name: str = ""


@pytest.mark.parametrize(("signature", "kind", "path"), [
    ("path: PathArg", "path", "path"),
    ("location: Path", "path", "location"),
    ("url: UrlArg", "url", "url"),
    ("link: HttpUrl", "url", "link"),
    ("query: SqlArg", "sql", "query"),
    ("paths: list[PathArg]", "path", "paths"),
    ("maybe: UrlArg | None = None", "url", "maybe"),
    ("hooks: list[Hook]", "url", "hooks.url"),
])
def test_a_path_url_or_sql_argument_without_its_checker_is_a_load_error(signature: str, kind: str, path: str) -> None:
    namespace: dict[str, Any] = {"PathArg": PathArg, "UrlArg": UrlArg, "SqlArg": SqlArg, "Path": Path,
                                 "HttpUrl": HttpUrl, "Hook": Hook}
    exec(f"def act({signature}) -> None: ...", namespace)
    policy = parse_policy('tool = "act"\n' + OPEN)
    with pytest.raises(PolicyError) as caught:
        tool(policy=policy, registry=ToolRegistry())(namespace["act"])
    (problem,) = caught.value.problems
    assert f"act.{path} is a {kind} argument" in problem.message and f"[args.{path}] {kind}" in problem.message
    assert problem.line == 1  # the policy's `tool =` line: where the missing table belongs


def test_the_matching_checker_satisfies_the_declaration(tmp_path: Path) -> None:
    def act(paths: list[PathArg], hooks: list[Hook], query: SqlArg, plain: str = "") -> None: ...

    policy = parse_policy('tool = "act"\n' + OPEN + '[args.paths]\npath = { base = "." }\n'
                          '[args."hooks.url"]\nurl = { hosts = ["a.example"] }\n'
                          '[args.query]\nsql = { allow = ["select"] }\n', base_dir=tmp_path)
    tool(policy=policy, registry=ToolRegistry())(act)  # no error


def test_the_wrong_checker_for_a_declared_kind_is_named(tmp_path: Path) -> None:
    def act(query: SqlArg) -> None: ...

    policy = parse_policy('tool = "act"\n' + OPEN + '[args.query]\nmax_length = 100\n')
    with pytest.raises(PolicyError, match=r"act\.query is a sql argument.*\[args\.query\] sql constraint") as caught:
        tool(policy=policy, registry=ToolRegistry())(act)
    assert caught.value.problems[0].line == 4


def test_a_default_directory_policy_that_disagrees_raises_at_the_call_and_is_audited(
        tmp_path: Path) -> None:
    """With no explicit policy the file is found at the first call; a disagreement is then a PolicyError on
    every call (typed, audited as policy-error), never a silent default-deny."""
    write(tmp_path, "ship", 'tool = "ship"\n' + OPEN + "[args.weight]\nmax = 10\n")
    registry = ToolRegistry()

    @tool(registry=registry)
    def ship(parcel: str) -> str:
        return parcel

    saved = get_config()
    configure(policies=str(tmp_path))
    try:
        with guardrail.identity(user="u"), capture_logs() as logs:
            for _ in range(2):
                with pytest.raises(PolicyError, match="ship has no parameter weight"):
                    execute_tool_call("ship", {"parcel": "p"}, registry=registry, store=MemoryStore())
    finally:
        configure(saved)
    records = [entry for entry in logs if entry.get("event") == "guardrail.audit"]
    assert [r["rule"] for r in records] == ["policy-error", "policy-error"]


def test_a_relative_base_is_relative_to_the_policy_file_and_need_not_exist_at_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    policies = tmp_path / "conf" / "policies"
    policies.mkdir(parents=True)
    path = write(policies, "read", 'tool = "read"\n' + OPEN + '[args.name]\npath = { base = "../data" }\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    policy = load_policy(path)  # ../data does not exist yet: fine at load time
    assert policy.args["name"].path is not None
    assert policy.args["name"].path.base == str(tmp_path / "conf" / "data")
    registry = ToolRegistry()
    got: list[str] = []
    tool(name="read", policy=path, registry=registry)(lambda name: got.append(name))
    with guardrail.identity(user="u"):
        with pytest.raises(guardrail.Denied) as denied:  # the base does not exist yet: denied, with the reason
            execute_tool_call("read", {"name": "a.txt"}, registry=registry)
        assert "policy cannot be applied" in denied.value.reason
        (tmp_path / "conf" / "data").mkdir()
        execute_tool_call("read", {"name": "a.txt"}, registry=registry)
    assert got == [str(tmp_path / "conf" / "data" / "a.txt")]


def test_argument_paths_must_be_dotted_identifiers() -> None:
    with pytest.raises(PolicyError, match="not an argument path"):
        parse_policy('tool = "t"\n[args."a..b"]\nmax = 1\n')
    with pytest.raises(PolicyError, match="not an argument path"):
        parse_policy('tool = "t"\n[[deny]]\nid = "x"\nwhen."a[0]" = { max = 1 }\n')


# -- the README / docs examples with the shipped policies ---------------------------------------------------


def _tool_examples() -> list[tuple[str, str, str]]:
    """(document, tool name, ``def`` source) for every function in a README/docs python block that is named
    after a shipped policy's tool."""
    names = set(load_policies(POLICIES))
    found = []
    for document in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = document.read_text(encoding="utf-8")
        for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
            for match in re.finditer(r"^def (\w+)\(.*?\)(?: -> [^:]+)?:", block, flags=re.M | re.S):
                if match.group(1) in names:
                    found.append((document.name, match.group(1), match.group(0) + " ..."))
    return found


def test_the_documented_tool_examples_load_with_the_shipped_policies() -> None:
    examples = _tool_examples()
    assert {name for _, name, _ in examples} >= {"refund_order"}, examples
    for document, name, source in examples:
        namespace: dict[str, Any] = {}
        exec("from pathlib import Path\nfrom typing import Any\nfrom guardrail.tools.policy.kinds import *\n" + source,
             namespace)
        try:
            tool(policy=POLICIES / f"{name}.toml", registry=ToolRegistry())(namespace[name])
        except PolicyError as error:
            pytest.fail(f"{document}: {name} disagrees with policies/{name}.toml: {error}")


def test_every_shipped_policy_loads_and_binds_to_its_reference_tool() -> None:
    def refund_order(order_id: str, amount: float, currency: str = "USD") -> dict[str, Any]: ...
    def fetch_url(url: UrlArg) -> str: ...
    def read_file(path: PathArg) -> str: ...
    def run_query(sql: SqlArg) -> list[Any]: ...

    registry = ToolRegistry()
    for fn in (refund_order, fetch_url, read_file, run_query):
        tool(policy=POLICIES / f"{fn.__name__}.toml", registry=registry)(fn)
    assert registry.names() == sorted(load_policies(POLICIES))


FETCH_SCHEMA = {"type": "object", "properties": {
    "url": {"type": "string", "format": "uri"},
    "headers": {"type": "object", "properties": {"accept": {"type": "string"}}},
    "retries": {"type": "integer"}}, "required": ["url"]}


@pytest.mark.parametrize(("policy", "message"), [
    (OPEN + "[args.url]\nurl = { hosts = ['a.example'] }\n[args.timeout]\nmax = 5\n", "fetch has no parameter timeout"),
    (OPEN + "[args.url]\nurl = { hosts = ['a.example'] }\n[args.\"headers.acept\"]\nmax_length = 5\n",
     "parameter headers has no field acept"),
    (OPEN + "[args.url]\nurl = { hosts = ['a.example'] }\n[args.retries]\nurl = { hosts = ['a.example'] }\n",
     "url constraint on fetch.retries, which is not text"),
    (OPEN, "fetch.url is a URL (format uri) but the policy has no url checker"),
])
def test_a_tool_declared_by_json_schema_is_bound_to_its_policy_like_any_tool(tmp_path: Path, policy: str,
                                                                            message: str) -> None:
    path = write(tmp_path, "fetch", 'tool = "fetch"\n' + policy)

    def fetch(**arguments: Any) -> Any:
        return arguments

    with pytest.raises(PolicyError, match=re.escape(message)):
        tool(name="fetch", policy=path, schema=FETCH_SCHEMA, registry=ToolRegistry())(fetch)


def test_a_json_schema_tool_receives_the_checked_url(tmp_path: Path) -> None:
    path = write(tmp_path, "fetch", 'tool = "fetch"\n' + OPEN + "[args.url]\nurl = { hosts = ['a.example'] }\n")
    registry = ToolRegistry()
    received: list[dict[str, Any]] = []

    def fetch(**arguments: Any) -> str:
        received.append(arguments)
        return "ok"

    tool(name="fetch", policy=path, schema=FETCH_SCHEMA, registry=registry)(fetch)
    with guardrail.identity(user="u"):
        result = guardrail.run_tool_call("fetch", {"url": "HTTPS://A.EXAMPLE/x"}, registry=registry,
                                         store=MemoryStore())
        with pytest.raises(guardrail.Denied):
            execute_tool_call("fetch", {"url": "https://b.example/x"}, registry=registry, store=MemoryStore())
    assert received == [result.arguments]  # exactly what the gate checked
    assert received[0]["url"] != "HTTPS://A.EXAMPLE/x" and received[0]["url"].startswith("https://a.example")


# ---------------------------------------------------------------------------------------- policies that cannot load


def test_two_policy_files_for_one_tool_are_a_problem(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text('tool = "refund"\n' + OPEN)
    (tmp_path / "b.toml").write_text('tool = "refund"\n[[allow]]\nid = "y"\n')
    found, problems = check_policies(tmp_path)
    assert list(found) == ["refund"] and len(problems) == 1 and problems[0].key == "tool"


@pytest.mark.parametrize("policy", [
    OPEN + "[args.ammount]\nmax = 100\n",
    OPEN + '[[deny]]\nid = "big"\nwhen.ammount = { min = 100 }\n',
    OPEN + '[limits]\nspend = { arg = "ammount", max = 100, per_seconds = 60 }\n',
], ids=["args", "deny-when", "spend-arg"])
def test_policy_naming_an_argument_the_tool_does_not_have_denies(env: ToolEnv, policy: str) -> None:
    # issue 13: a load error naming the argument, at registration (the tool is never registered)
    with pytest.raises(PolicyError, match="pay has no parameter ammount"):
        env.add(lambda amount: env.ran("pay", amount), policy, name="pay")
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied):
        env.call("pay", {"amount": 5000})
    assert env.calls == []


@pytest.mark.parametrize("extra", ["idempotency_ttl = inf", "approval_ttl = inf", "[args.x]\nmax = nan",
                                   "[args.x]\nmin = nan",
                                   '[limits]\nspend = { arg = "x", max = inf, per_seconds = 60 }',
                                   "[limits]\nrate = { calls = 1, per_seconds = inf }"])
def test_policy_with_non_finite_numbers_is_refused_at_load(extra: str) -> None:
    with pytest.raises(PolicyError):
        parse_policy(f'tool = "t"\n{extra}\n')


def test_nan_bound_does_not_allow_everything(env: ToolEnv) -> None:
    with pytest.raises(PolicyError, match="finite"):  # refused when the policy is loaded
        env.add(lambda amount: env.ran("pay", amount), OPEN + "[args.amount]\nmin = 0\nmax = nan\n", name="pay")
    assert env.calls == []


def test_policy_file_that_cannot_be_parsed_denies_instead_of_crashing(env: ToolEnv, tmp_path: Path) -> None:
    (tmp_path / "deep.toml").write_text('tool = "deep"\n' + OPEN + "x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(PolicyError, match=r"deep\.toml"):  # issue 13: a load error, not a crash or a silent drop
        tool(name="deep", policy=tmp_path / "deep.toml", registry=env.registry)(lambda: env.ran("deep", 1))
    with guardrail.identity(user="u"), pytest.raises(guardrail.Denied):
        env.call("deep", {})
    _, problems = check_policies(tmp_path)
    assert problems


def test_the_documented_list_of_every_key_is_a_policy_that_loads() -> None:
    text = (ROOT / "docs" / "tools-and-policies.md").read_text(encoding="utf-8")
    keys = re.search(r"Every key:\n\n```toml\n(.*?)```", text, re.S)
    assert keys is not None
    policy = parse_policy(keys.group(1), "docs/tools-and-policies.md")
    documented = {name for rule in policy.args.values() for name in rule.model_fields_set}
    documented |= {name for match in policy.rules() for rule in match.when.values() for name in rule.model_fields_set}
    assert documented == set(type(next(iter(policy.args.values()))).model_fields)  # no key left undocumented
    assert policy.allow and policy.deny and policy.approve and policy.after_approval and policy.limits.spend
