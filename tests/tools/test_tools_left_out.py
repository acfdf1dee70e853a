"""Arguments the model left out: a constraint judges what the model sent; a left-out argument is judged only by
presence (``required``, ``absent``), or by its default where the policy says ``check_default``; the tool receives
exactly what was checked plus the defaults of what was left out.

Every case goes through ``run_tool_call`` with a policy parsed from TOML text and a tool that records what it
received; nothing of guardrail's own is mocked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from structlog.testing import capture_logs
from support.tool_env import OPEN, audits

import guardrail
from guardrail.errors import PolicyError
from guardrail.store.memory import MemoryStore
from guardrail.tools.execute import ToolRegistry, ToolResult, approve, run_tool_call, tool
from guardrail.tools.policy.kinds import PathArg, SqlArg, UrlArg
from guardrail.tools.policy.loader import parse_policy


class Recorder:
    """A private registry and store; each tool records the keyword arguments it received."""

    def __init__(self, base_dir: Path | None = None) -> None:
        self.registry = ToolRegistry()
        self.store = MemoryStore()
        self.received: list[dict[str, Any]] = []
        self.base_dir = base_dir

    def add(self, fn: Callable[..., Any], policy: str, **kwargs: Any) -> None:
        text = f'tool = "{fn.__name__}"\n{OPEN}{policy}'
        tool(name=fn.__name__, policy=parse_policy(text, base_dir=self.base_dir), registry=self.registry,
             **kwargs)(fn)

    def run(self, name: str, arguments: Any, **kwargs: Any) -> ToolResult:
        with guardrail.identity(user="u"):
            return run_tool_call(name, arguments, registry=self.registry, store=self.store, **kwargs)

    def denied(self, name: str, arguments: Any) -> guardrail.Denied:
        before = len(self.received)
        with pytest.raises(guardrail.Denied) as caught:
            self.run(name, arguments)
        assert len(self.received) == before, "a denied call reached the tool"
        return caught.value


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("left_out").resolve()
    (root / "data").mkdir()
    (root / "data" / "file.txt").write_text("ok")
    return root


class Item(BaseModel):
    qty: int
    sku: str = "none"  # a default the pattern would refuse


# -------------------------------------------------------------------------------- every argument kind, one table


@dataclass(frozen=True)
class Kind:
    """One argument kind: a tool ``fn(recorder)`` with one optional parameter ``param``, its constraint, a sent
    value that meets it (and what the tool then receives), one that breaks it, and the default."""

    name: str
    fn: Callable[[Recorder], Callable[..., Any]]
    param: str
    constraint: str
    good: Any
    received: Any
    bad: Any
    default: Any
    path: str = ""  # the argument path of the constraint, when not the parameter itself

    @property
    def key(self) -> str:
        return self.path or self.param


def _pattern(rec: Recorder) -> Callable[..., Any]:
    def send_mail(to: str, cc: list[str] | None = None) -> str:
        rec.received.append({"to": to, "cc": cc})
        return "sent"
    return send_mail


def _one_of(rec: Recorder) -> Callable[..., Any]:
    def book(to: str, region: str = "zz") -> str:
        rec.received.append({"to": to, "region": region})
        return "booked"
    return book


def _bounds(rec: Recorder) -> Callable[..., Any]:
    def search(to: str, limit: int = 1000) -> str:
        rec.received.append({"to": to, "limit": limit})
        return "found"
    return search


def _lengths(rec: Recorder) -> Callable[..., Any]:
    def note(to: str, text: str = "") -> str:
        rec.received.append({"to": to, "text": text})
        return "noted"
    return note


def _list(rec: Recorder) -> Callable[..., Any]:
    def tag(to: str, tags: list[str] = ["DEFAULT"]) -> str:  # noqa: B006  # a default the pattern refuses
        rec.received.append({"to": to, "tags": tags})
        return "tagged"
    return tag


def _path(rec: Recorder) -> Callable[..., Any]:
    def read(to: str, path: PathArg | None = None) -> str:
        rec.received.append({"to": to, "path": path})
        return "read"
    return read


def _url(rec: Recorder) -> Callable[..., Any]:
    def fetch(to: str, callback: UrlArg | None = None) -> str:
        rec.received.append({"to": to, "callback": callback})
        return "fetched"
    return fetch


def _sql(rec: Recorder) -> Callable[..., Any]:
    def query(to: str, sql: SqlArg | None = None) -> str:
        rec.received.append({"to": to, "sql": sql})
        return "queried"
    return query


def _nested(rec: Recorder) -> Callable[..., Any]:
    def order(to: str, items: list[Item] | None = None) -> str:
        rec.received.append({"to": to, "items": None if items is None else [i.model_dump() for i in items]})
        return "ordered"
    return order


KINDS = [
    Kind("pattern", _pattern, "cc", "pattern = '.+@example\\.com'", ["a@example.com"], ["a@example.com"],
         ["eve@evil.test"], None),
    Kind("one_of", _one_of, "region", 'one_of = ["eu", "us"]', "us", "us", "mars", "zz"),
    Kind("bounds", _bounds, "limit", "min = 1\nmax = 100", 5, 5, 500, 1000),
    Kind("lengths", _lengths, "text", "min_length = 1\nmax_length = 10", "hi", "hi", "x" * 50, ""),
    Kind("list", _list, "tags", 'pattern = "[a-z]+"\nmax_length = 3', ["a", "b"], ["a", "b"], ["a", "B"],
         ["DEFAULT"]),
    Kind("path", _path, "path", 'path = { base = "." }', "./data/file.txt", "{base}/data/file.txt", "../x", None),
    Kind("url", _url, "callback", 'url = { hosts = ["api.example.com"] }', "https://API.example.com/cb",
         "https://api.example.com/cb", "https://evil.test/", None),
    Kind("sql", _sql, "sql", 'sql = { allow = ["select"], dialect = "sqlite" }', "SELECT 1", "SELECT 1",
         "DROP TABLE t", None),
    Kind("nested", _nested, "items", 'pattern = "[A-Z]{3}-[0-9]{4}"', [{"qty": 1, "sku": "ABC-1234"}],
         [{"qty": 1, "sku": "ABC-1234"}], [{"qty": 1, "sku": "nope"}], None, path="items.sku"),
]


def _recorder(kind: Kind, extra: str, base: Path) -> tuple[Recorder, str]:
    rec = Recorder(base_dir=base)
    fn = kind.fn(rec)
    rec.add(fn, f'[args."{kind.key}"]\n{kind.constraint}\n{extra}')
    return rec, fn.__name__


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_a_left_out_argument_is_not_judged_by_value_constraints(kind: Kind, base: Path) -> None:
    rec, name = _recorder(kind, "", base)
    done = rec.run(name, {"to": "x"})  # left out: allowed, and the tool gets its own default
    assert done.ran and rec.received[-1] == {"to": "x", kind.param: kind.default}
    assert done.omitted == (kind.param,)
    if kind.default is None:  # null where the default is None is the same call
        assert rec.run(name, {"to": "x", kind.param: None}).omitted == (kind.param,)
    good = rec.run(name, {"to": "x", kind.param: kind.good})  # sent and good: allowed, the checked value received
    received = kind.received.replace("{base}", str(base)) if isinstance(kind.received, str) else kind.received
    assert good.omitted == () and rec.received[-1] == {"to": "x", kind.param: received}
    refused = rec.denied(name, {"to": "x", kind.param: kind.bad})  # sent and bad: refused
    assert refused.rule == f"args.{kind.key}" and refused.argument.startswith(kind.param)


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_required_refuses_a_left_out_argument(kind: Kind, base: Path) -> None:
    rec, name = _recorder(kind, "required = true", base)
    for left_out in ({"to": "x"}, *([{"to": "x", kind.param: None}] if kind.default is None else [])):
        refused = rec.denied(name, left_out)
        assert (refused.rule, refused.reason) == (f"args.{kind.key}", "required argument missing")
    rec.run(name, {"to": "x", kind.param: kind.good})
    assert rec.denied(name, {"to": "x", kind.param: kind.bad}).rule == f"args.{kind.key}"


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.name)
def test_absent_refuses_a_given_argument(kind: Kind, base: Path) -> None:
    # absent with value constraints needs check_default (else the constraints would judge nothing)
    rec = Recorder(base_dir=base)
    fn = kind.fn(rec)
    checker = kind.constraint if kind.name in ("path", "url", "sql") else ""
    rec.add(fn, f'[args."{kind.param}"]\nabsent = true\n' + (f"check_default = true\n{checker}\n" if checker else ""))
    assert rec.run(fn.__name__, {"to": "x"}).ran
    assert rec.received[-1] == {"to": "x", kind.param: kind.default}
    if kind.default is None:  # null where the default is None counts as left out
        assert rec.run(fn.__name__, {"to": "x", kind.param: None}).omitted == (kind.param,)
    for given_value in (kind.good, kind.bad):
        refused = rec.denied(fn.__name__, {"to": "x", kind.param: given_value})
        assert (refused.rule, refused.argument, refused.reason) == (f"args.{kind.param}", kind.param,
                                                                    "must not be given")


def test_check_default_judges_the_default_the_tool_receives(base: Path) -> None:
    rec = Recorder(base_dir=base)
    rec.add(_one_of(rec), '[args.region]\none_of = ["eu", "us"]\ncheck_default = true\n')
    assert rec.denied("book", {"to": "x"}).reason == "not one of the allowed values"  # the default "zz"
    rec.run("book", {"to": "x", "region": "eu"})

    def download(to: str, path: PathArg = "./data/file.txt") -> str:
        rec.received.append({"path": path})
        return "ok"

    rec.add(download, '[args.path]\npath = { base = "." }\ncheck_default = true\n')
    done = rec.run("download", {"to": "x"})  # the default, checked, reaches the tool canonicalised
    assert rec.received[-1] == {"path": str(base / "data" / "file.txt")} == {"path": done.arguments["path"]}


# ------------------------------------------------------------------------ nested fields and lists element by element


def test_nested_fields_left_out_are_judged_element_by_element() -> None:
    rec = Recorder()
    rec.add(_nested(rec), '[args."items.sku"]\npattern = "[A-Z]{3}-[0-9]{4}"\n')
    done = rec.run("order", {"to": "x", "items": [{"qty": 1}, {"qty": 2, "sku": "ABC-1234"}]})
    assert done.omitted == ("items[0].sku",)
    assert rec.received[-1]["items"] == [{"qty": 1, "sku": "none"}, {"qty": 2, "sku": "ABC-1234"}]
    refused = rec.denied("order", {"to": "x", "items": [{"qty": 1}, {"qty": 2, "sku": "bad"}]})
    assert refused.argument == "items[1].sku"
    strict = Recorder()
    strict.add(_nested(strict), '[args."items.sku"]\nrequired = true\n')
    assert strict.denied("order", {"to": "x", "items": [{"qty": 1, "sku": "a"}, {"qty": 2}]}).argument \
        == "items[1].sku"
    assert strict.denied("order", {"to": "x"}).argument == "items"  # the whole list left out: sku missing too
    judged = Recorder()
    judged.add(_nested(judged), '[args."items.sku"]\npattern = "[A-Z]{3}-[0-9]{4}"\ncheck_default = true\n')
    assert judged.denied("order", {"to": "x", "items": [{"qty": 1, "sku": "ABC-1234"}, {"qty": 2}]}).argument \
        == "items[1].sku"  # the default "none" of the second item is judged
    no_sku = Recorder()
    no_sku.add(_nested(no_sku), '[args."items.sku"]\nabsent = true\n')
    no_sku.run("order", {"to": "x", "items": [{"qty": 1}]})
    assert no_sku.denied("order", {"to": "x", "items": [{"qty": 1}, {"qty": 1, "sku": "A"}]}).argument \
        == "items[1].sku"


# ----------------------------------------------------------------------------------------------- when conditions


def test_a_deny_condition_does_not_fire_on_a_left_out_argument() -> None:
    rec = Recorder()

    def pay(to: str, amount: float | None = None, fee: float = 5000) -> str:
        rec.received.append({"amount": amount, "fee": fee})
        return "paid"

    rec.add(pay, '[[deny]]\nid = "big"\nwhen.amount = { min = 1000 }\n')
    rec.run("pay", {"to": "x"})
    rec.run("pay", {"to": "x", "amount": None})  # null is the default: left out
    assert rec.denied("pay", {"to": "x", "amount": 5000}).rule == "deny.big"
    judged = Recorder()

    def fee(to: str, amount: float = 5000) -> str:
        judged.received.append({"amount": amount})
        return "paid"

    judged.add(fee, '[[deny]]\nid = "big"\nwhen.amount = { min = 1000, check_default = true }\n')
    assert judged.denied("fee", {"to": "x"}).rule == "deny.big"  # the default 5000 is judged
    judged.run("fee", {"to": "x", "amount": 10})
    present = Recorder()
    present.add(_pattern(present), '[[deny]]\nid = "no-cc"\nwhen.cc = { required = true }\n')
    present.run("send_mail", {"to": "x"})
    assert present.denied("send_mail", {"to": "x", "cc": []}).rule == "deny.no-cc"
    absent = Recorder()
    absent.add(_pattern(absent), '[[deny]]\nid = "cc-needed"\nwhen.cc = { absent = true }\n')
    assert absent.denied("send_mail", {"to": "x"}).rule == "deny.cc-needed"
    absent.run("send_mail", {"to": "x", "cc": ["a@b.c"]})


def test_an_allow_condition_is_not_met_by_a_left_out_argument_unless_it_says_so() -> None:
    rec = Recorder()

    def convert(to: str, currency: str = "USD") -> str:
        rec.received.append({"currency": currency})
        return currency

    policy = 'tool = "convert"\n[[allow]]\nid = "usd"\nwhen.currency = { one_of = ["USD"] }\n'
    tool(policy=parse_policy(policy), registry=rec.registry)(convert)
    assert rec.denied("convert", {"to": "x"}).rule == "default-deny"  # the default does not count silently
    rec.run("convert", {"to": "x", "currency": "USD"})
    counted = Recorder()
    tool(policy=parse_policy(policy.replace('["USD"] }', '["USD"], check_default = true }')),
         registry=counted.registry)(convert)
    assert counted.run("convert", {"to": "x"}).value == "USD"
    only_without = Recorder()
    text = 'tool = "send_mail"\n[[allow]]\nid = "no-cc"\nwhen.cc = { absent = true }\n'
    tool(policy=parse_policy(text), registry=only_without.registry)(_pattern(only_without))
    only_without.run("send_mail", {"to": "x"})
    assert only_without.denied("send_mail", {"to": "x", "cc": ["a@b.c"]}).rule == "default-deny"


# ----------------------------------------------------------------------------------------- tools by JSON Schema


SCHEMA = {"type": "object", "required": ["to"], "properties": {
    "to": {"type": "string"},
    "cc": {"type": "string", "default": "list@example.com"},
    "amount": {"type": "number"},
}}


def test_a_json_schema_tool_left_out_property_gets_the_function_default() -> None:
    rec = Recorder()

    def mail(to: str, cc: str = "own-default", amount: float = 3) -> str:
        rec.received.append({"to": to, "cc": cc, "amount": amount})
        return "ok"

    rec.add(mail, "[args.cc]\npattern = '.+@example\\.com'\n", schema=SCHEMA)
    done = rec.run("mail", {"to": "x"})
    assert rec.received[-1] == {"to": "x", "cc": "own-default", "amount": 3} and done.omitted == ("amount", "cc")
    assert rec.denied("mail", {"to": "x", "cc": "eve@evil.test"}).rule == "args.cc"
    rec.run("mail", {"to": "x", "cc": "a@example.com"})
    assert rec.received[-1]["cc"] == "a@example.com"
    strict = Recorder()
    strict.add(mail, "[args.cc]\nrequired = true\n[args.amount]\nabsent = true\n", schema=SCHEMA)
    assert strict.denied("mail", {"to": "x"}).reason == "required argument missing"
    assert strict.denied("mail", {"to": "x", "cc": "c", "amount": 1}).reason == "must not be given"


def test_a_json_schema_tool_check_default_judges_and_passes_the_schema_default() -> None:
    rec = Recorder()

    def mail(to: str, cc: str = "own-default") -> str:
        rec.received.append({"cc": cc})
        return "ok"

    rec.add(mail, "[args.cc]\npattern = '.+@example\\.com'\ncheck_default = true\n", schema=SCHEMA)
    assert rec.run("mail", {"to": "x"}).arguments["cc"] == "list@example.com"
    assert rec.received[-1] == {"cc": "list@example.com"}  # the judged schema default, not the function's own
    with pytest.raises(PolicyError) as caught:  # no default to judge: the policy does not load
        rec.add(mail, "[args.amount]\nmax = 10\ncheck_default = true\n", schema={**SCHEMA, "title": "x"})
    assert "declares no default" in str(caught.value) and caught.value.problems[0].line is not None


# --------------------------------------------------------------------------------------- limits, hashes, audits


def test_the_spend_limit_counts_the_default_the_tool_receives() -> None:
    rec = Recorder()

    def pay(to: str, amount: float = 600) -> str:
        rec.received.append({"amount": amount})
        return "paid"

    rec.add(pay, "[limits]\nspend = { arg = \"amount\", max = 1000, per_seconds = 3600 }\n")
    rec.run("pay", {"to": "x"})
    assert rec.denied("pay", {"to": "x"}).rule == "limits.spend"  # 600 + 600 > 1000: the default counted
    rec.run("pay", {"to": "x", "amount": 400})
    by_schema = Recorder()

    def pay_schema(to: str, amount: float = 600) -> str:
        by_schema.received.append({"amount": amount})
        return "paid"

    by_schema.add(pay_schema, "[limits]\nspend = { arg = \"amount\", max = 1000, per_seconds = 3600 }\n",
                  schema=SCHEMA)
    by_schema.run("pay_schema", {"to": "x"})  # left out: the function's own default (600) is counted, not 0
    assert by_schema.denied("pay_schema", {"to": "x"}).rule == "limits.spend"
    no_number = Recorder()

    def pay_none(to: str, amount: Decimal | None = None) -> str:
        return "paid"

    no_number.add(pay_none, "[limits]\nspend = { arg = \"amount\", max = 1000, per_seconds = 3600 }\n")
    assert no_number.denied("pay_none", {"to": "x"}).rule == "limits.spend"  # None is never "spends nothing"


def test_approval_and_idempotency_cover_what_the_tool_receives() -> None:
    rec = Recorder()
    send_mail = _pattern(rec)
    rec.add(send_mail, "[args.cc]\npattern = '.+@example\\.com'\n")
    first = rec.run("send_mail", {"to": "x"}, idempotency_key="k1")
    again = rec.run("send_mail", {"to": "x", "cc": None}, idempotency_key="k1")
    assert first.ran and again.replayed and len(rec.received) == 1
    parked = Recorder()
    tool(policy=parse_policy('tool = "send_mail"\napproval = "required"\n' + OPEN), registry=parked.registry)(
        _pattern(parked))
    with pytest.raises(guardrail.ApprovalRequired) as waiting:
        parked.run("send_mail", {"to": "x"})
    assert approve(waiting.value.token, approver="lead", store=parked.store)
    assert parked.run("send_mail", {"to": "x", "cc": None}, approval_token=waiting.value.token).ran


def test_audit_records_name_what_was_left_out() -> None:
    rec = Recorder()
    rec.add(_nested(rec), '[args."items.sku"]\npattern = "[A-Z]{3}-[0-9]{4}"\n')
    with capture_logs() as logs:
        rec.run("order", {"to": "x", "items": [{"qty": 1}]})
        rec.denied("order", {"to": "x", "items": [{"qty": 1, "sku": "bad"}]})
    executed, denied = audits(logs)
    assert executed["decision"] == "executed" and executed["omitted"] == ["items[0].sku"]
    assert executed["arguments"]["items"] == [{"qty": 1, "sku": "none"}]  # what the tool received
    assert denied["decision"] == "denied" and denied["omitted"] == []


# ------------------------------------------------------------------------------------------- loading the keys


@pytest.mark.parametrize(("body", "words", "line"), [
    ("required = true\nabsent = true", "contradict", 5),  # the table's line: the keys together are wrong
    ("required = true\ncheck_default = true", "keep one", 5),
    ("absent = true\npattern = 'a'", "judge nothing", 5),
    ("absent = 2", "boolean", 6),
])
def test_contradicting_presence_keys_are_load_errors_with_the_line(body: str, words: str, line: int) -> None:
    text = f'tool = "t"\n{OPEN}\n[args.cc]\n{body}\n'
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, "policies/t.toml")
    (problem,) = caught.value.problems
    assert words in problem.message and problem.line == line and problem.key.startswith("args.cc")
    when = f'tool = "t"\n[[allow]]\nid = "a"\nwhen.cc = {{ {body.replace(chr(10), ", ")} }}\n'
    with pytest.raises(PolicyError):
        parse_policy(when)


def test_policy_check_accepts_the_presence_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from guardrail.cli import main

    (tmp_path / "send_mail.toml").write_text(
        'tool = "send_mail"\n[[allow]]\nid = "a"\nwhen.bcc = { absent = true }\n'
        '[[deny]]\nid = "d"\nwhen.amount = { min = 1000, check_default = true }\n'
        "[args.cc]\npattern = 'x'\ncheck_default = true\n[args.to]\nrequired = true\n[args.bcc]\nabsent = true\n")
    assert main(["policy", "check", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "1 valid policy (send_mail); 0 problems\n"


# ------------------------------------------------------------------------------------------------------ property

OPTIONAL = {  # parameter: (a good value to send, the default, which breaks the constraint)
    "cc": (["a@example.com"], None), "region": ("eu", "zz"), "limit": (5, 1000), "text": ("hi", ""),
    "tags": (["a"], ["DEFAULT"]), "sku": ("ABC-1234", "none"),
}
PROPERTY_POLICY = """
[args.cc]
pattern = '.+@example\\.com'
[args.region]
one_of = ["eu", "us"]
[args.limit]
max = 100
[args.text]
min_length = 1
[args.tags]
pattern = "[a-z]+"
[args.sku]
pattern = "[A-Z]{3}-[0-9]{4}"
[args."items.sku"]
pattern = "[A-Z]{3}-[0-9]{4}"
"""


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=st.sets(st.sampled_from(sorted(OPTIONAL))), item_skus=st.lists(st.booleans(), max_size=3),
       null=st.booleans())
def test_leaving_out_optional_arguments_never_causes_a_constraint_refusal(sent: set[str], item_skus: list[bool],
                                                                          null: bool) -> None:
    rec = Recorder()

    def act(cc: list[str] | None = None, region: str = "zz", limit: int = 1000, text: str = "",
            tags: list[str] = ["DEFAULT"], sku: str = "none", items: list[Item] | None = None) -> str:  # noqa: B006
        rec.received.append({"cc": cc, "region": region, "limit": limit, "text": text, "tags": tags, "sku": sku,
                             "items": None if items is None else [item.model_dump() for item in items]})
        return "ok"

    rec.add(act, PROPERTY_POLICY)
    arguments: dict[str, Any] = {name: OPTIONAL[name][0] for name in sent}
    if null and "cc" not in sent:
        arguments["cc"] = None  # null where the default is None counts as left out
    items = [{"qty": 1, "sku": "ABC-1234"} if has_sku else {"qty": 1} for has_sku in item_skus]
    if item_skus:
        arguments["items"] = items
    done = rec.run("act", arguments)
    received = rec.received[-1]
    for name, (good, default) in OPTIONAL.items():
        assert received[name] == (good if name in sent else default), name
    expected_items = [{"qty": 1, "sku": "ABC-1234" if has else "none"} for has in item_skus] or None
    assert received["items"] == expected_items
    left_out = {name for name in OPTIONAL if name not in sent} | ({"items"} if not item_skus else set())
    left_out |= {f"items[{i}].sku" for i, has in enumerate(item_skus) if not has}
    assert set(done.omitted) == left_out


PROPERTY_SCHEMA = {"type": "object", "required": ["to"], "properties": {
    "to": {"type": "string"}, "region": {"type": "string"}, "limit": {"type": "integer"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "items": {"type": "array", "items": {"type": "object", "required": ["qty"], "properties": {
        "qty": {"type": "integer"}, "sku": {"type": "string"}}}},
}}


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sent=st.sets(st.sampled_from(["region", "limit", "tags"])), item_skus=st.lists(st.booleans(), max_size=3))
def test_leaving_out_properties_of_a_json_schema_tool_never_causes_a_constraint_refusal(
        sent: set[str], item_skus: list[bool]) -> None:
    rec = Recorder()
    defaults = {"region": "zz", "limit": 1000, "tags": ("DEFAULT",)}

    def act_schema(to: str, region: str = "zz", limit: int = 1000, tags: tuple[str, ...] = ("DEFAULT",),
                   items: list[dict[str, Any]] | None = None) -> str:
        rec.received.append({"region": region, "limit": limit, "tags": tags, "items": items})
        return "ok"

    rec.add(act_schema, '[args.region]\none_of = ["eu"]\n[args.limit]\nmax = 100\n[args.tags]\npattern = "[a-z]+"\n'
                        '[args."items.sku"]\npattern = "[A-Z]{3}-[0-9]{4}"\n', schema=PROPERTY_SCHEMA)
    good = {"region": "eu", "limit": 5, "tags": ["a"]}
    arguments: dict[str, Any] = {"to": "x", **{name: good[name] for name in sent}}
    if item_skus:
        arguments["items"] = [{"qty": 1, "sku": "ABC-1234"} if has else {"qty": 1} for has in item_skus]
    done = rec.run("act_schema", arguments)
    received = rec.received[-1]
    for name, default in defaults.items():
        assert received[name] == (good[name] if name in sent else default), name
    assert received["items"] == arguments.get("items")  # a left-out nested property stays left out
    left_out = {name for name in defaults if name not in sent} | ({"items"} if not item_skus else set())
    left_out |= {f"items[{i}].sku" for i, has in enumerate(item_skus) if not has}
    assert set(done.omitted) == left_out
