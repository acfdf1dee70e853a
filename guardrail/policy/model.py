"""The policy for one tool: who may call it, with which arguments, how often, and with whose approval.

A policy file (TOML, one per tool, in ``policies/``) reads::

    tool = "refund_order"            # the tool's exact name
    version = "2026-11-30.1"         # recorded in every audit record
    approval = "required"            # park each call until a person approves that exact call
    idempotency = "required"         # side effects run once per idempotency key

    [[allow]]                        # default deny: a call runs only if an allow rule matches
    id = "support-refunds"
    roles = ["support"]              # the caller (guardrail.identity) has any of these roles
    tenants = ["acme"]               # ...and belongs to one of these tenants

    [[deny]]                         # any matching deny rule wins over every allow rule
    id = "no-large-refunds"
    when.amount = { min = 1000 }     # matches when the argument satisfies the constraint

    [args.amount]                    # constraints every call must meet
    min = 0.01
    max = 5000
    [args.callback]
    url = { hosts = ["hooks.example.com"] }
    [args.card_number]
    secret = true                    # redacted from logs, spans and audit records

    [limits]
    rate = { calls = 10, per_seconds = 60 }          # per identity
    spend = { arg = "amount", max = 2000, per_seconds = 86400 }

Argument constraints: ``one_of``, ``min``/``max`` (numbers), ``min_length``/``max_length``, ``pattern`` (RE2:
linear time), ``url`` (hosts, schemes), ``path`` (a base directory), ``sql`` (allowed statement kinds, tables).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from guardrail.identity import Identity
from guardrail.policy.paths import check_path
from guardrail.policy.regex import compile_pattern
from guardrail.policy.sql import check_sql
from guardrail.policy.urls import check_url

_STRICT = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class UrlRule(BaseModel):
    """A URL argument: only these hosts (``*.example.com`` for subdomains) and schemes."""

    model_config = _STRICT
    hosts: tuple[str, ...]
    schemes: tuple[str, ...] = ("https",)
    allow_ip_literals: bool = False


class PathRule(BaseModel):
    """A file path argument: must resolve inside ``base`` (symlinks followed)."""

    model_config = _STRICT
    base: str
    allow_absolute: bool = False
    must_exist: bool = False


class SqlRule(BaseModel):
    """A SQL argument: one statement, of the listed kinds only, on the listed tables (if given)."""

    model_config = _STRICT
    allow: tuple[str, ...]
    dialect: str | None = None
    tables: tuple[str, ...] | None = None


class ArgRule(BaseModel):
    """Constraints on one argument; :meth:`check` says why a value breaks them (``None`` if it does not)."""

    model_config = _STRICT
    one_of: tuple[str | int | float | bool, ...] | None = None
    min: float | None = None
    max: float | None = None
    min_length: int | None = Field(default=None, ge=0)
    max_length: int | None = Field(default=None, ge=0)
    pattern: str | None = None
    url: UrlRule | None = None
    path: PathRule | None = None
    sql: SqlRule | None = None
    required: bool = False
    secret: bool = False

    @field_validator("pattern")
    @classmethod
    def _linear(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            compile_pattern(pattern)  # ValueError when RE2 cannot run it in linear time
        return pattern

    @model_validator(mode="after")
    def _checkers_accept_the_configuration(self) -> ArgRule:
        """Run the URL and SQL checkers once on a dummy value: they raise ValueError for a bad configuration
        (a typo in ``allow``, an unknown dialect, a malformed host entry), which belongs at load time. Path
        bases are checked when a call comes (the directory may be created after the policy is loaded)."""
        if self.url is not None:
            check_url("https://example.invalid/", hosts=self.url.hosts, schemes=self.url.schemes,
                      allow_ip_literals=self.url.allow_ip_literals)
        if self.sql is not None:
            check_sql("", allow=self.sql.allow, dialect=self.sql.dialect, tables=self.sql.tables)
        return self

    def check(self, value: Any) -> str | None:
        """``None`` when ``value`` meets every constraint, else the first reason it does not (internal).

        A checker that finds its own configuration unusable at call time (a path base that does not exist)
        denies the call; it never raises.
        """
        try:
            return self._check(value)
        except ValueError as error:
            return f"policy cannot be applied: {error}"

    def _check(self, value: Any) -> str | None:
        if self.one_of is not None and not any(_same(value, x) for x in self.one_of):
            return "not one of the allowed values"
        if self.min is not None or self.max is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return "not a number"
            if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
                return "out of range"
        if self.min_length is not None or self.max_length is not None:
            if not isinstance(value, (str, list, tuple)):
                return "has no length"
            if (self.min_length is not None and len(value) < self.min_length) or \
                    (self.max_length is not None and len(value) > self.max_length):
                return "length out of range"
        matches = self.pattern is None or (isinstance(value, str) and compile_pattern(self.pattern).fullmatch(value))
        if not matches:
            return "does not match the pattern"
        if self.url is not None:
            reason = check_url(value, hosts=self.url.hosts, schemes=self.url.schemes,
                               allow_ip_literals=self.url.allow_ip_literals)
            if reason:
                return f"url: {reason}"
        if self.path is not None:
            reason = check_path(value, base=self.path.base, allow_absolute=self.path.allow_absolute,
                                must_exist=self.path.must_exist)
            if reason:
                return f"path: {reason}"
        if self.sql is not None:
            reason = check_sql(value, allow=self.sql.allow, dialect=self.sql.dialect, tables=self.sql.tables)
            if reason:
                return f"sql: {reason}"
        return None


#: Reasons that mean "this constraint cannot judge this value" rather than "the value fails it".
_UNJUDGED = ("not a number", "has no length", "policy cannot be applied")


def _same(value: Any, allowed: Any) -> bool:
    """Equality for ``one_of``: numbers compare by value (5 == 5.0), but a bool is never a number."""
    if isinstance(value, bool) or isinstance(allowed, bool):
        return type(value) is type(allowed) and value == allowed
    if isinstance(value, (int, float)) and isinstance(allowed, (int, float)):
        return value == allowed
    return type(value) is type(allowed) and bool(value == allowed)


class Match(BaseModel):
    """An allow or deny rule: conditions on the caller (from the trusted runtime) and on the arguments.

    Every condition given must hold: the caller has one of ``roles``, is in one of ``tenants``, is one of
    ``users``; each ``when`` argument meets its constraint. A rule with no identity condition matches any
    *identified* caller; an anonymous caller (no ``guardrail.identity``) matches only ``anonymous = true``.
    """

    model_config = _STRICT
    id: str = Field(min_length=1)
    roles: tuple[str, ...] = ()
    tenants: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    anonymous: bool = False
    when: dict[str, ArgRule] = Field(default_factory=dict)

    def matches(self, who: Identity | None, arguments: dict[str, Any], *, deny: bool = False) -> bool:
        """Whether the rule applies. A deny rule fails closed: it applies to anonymous callers unless it names
        roles/tenants/users, and a ``when`` constraint that cannot judge a value (wrong type, missing) counts as
        met; an allow rule needs every condition positively met."""
        if deny:
            if who is None and (self.roles or self.tenants or self.users):
                return False
            if who is not None and not self._identity_matches(who):
                return False
            return all(name not in arguments or _met_or_unjudged(rule.check(arguments[name]))
                       for name, rule in self.when.items())
        if who is None:
            if not self.anonymous:
                return False
        else:
            if self.roles and not (who.roles & set(self.roles)):
                return False
            if self.tenants and who.tenant not in self.tenants:
                return False
            if self.users and who.user not in self.users:
                return False
        return all(name in arguments and rule.check(arguments[name]) is None for name, rule in self.when.items())

    def may_match(self, who: Identity | None) -> bool:
        """Whether the rule's identity conditions admit this caller (its ``when`` conditions aside)."""
        return self.anonymous if who is None else self._identity_matches(who)

    def _identity_matches(self, who: Identity) -> bool:
        return (not self.roles or bool(who.roles & set(self.roles))) and \
            (not self.tenants or who.tenant in self.tenants) and (not self.users or who.user in self.users)


def _met_or_unjudged(reason: str | None) -> bool:
    return reason is None or reason.startswith(_UNJUDGED)


class Rate(BaseModel):
    """At most ``calls`` calls per ``per_seconds``, per identity."""

    model_config = _STRICT
    calls: int = Field(ge=0)
    per_seconds: float = Field(gt=0)


class Spend(BaseModel):
    """At most ``max`` in total of the numeric argument ``arg`` per ``per_seconds``, per identity."""

    model_config = _STRICT
    arg: str
    max: float = Field(ge=0)
    per_seconds: float = Field(gt=0)


class Limits(BaseModel):
    """Rate limit, quota (a longer-window rate) and spend budget, each per identity and tool."""

    model_config = _STRICT
    rate: Rate | None = None
    quota: Rate | None = None
    spend: Spend | None = None


class Policy(BaseModel):
    """One tool's policy (see the module docstring for the file format)."""

    model_config = _STRICT
    tool: str = Field(min_length=1)
    version: str = "1"
    description: str = ""
    approval: Literal["none", "required"] = "none"
    approval_ttl: float = Field(default=3600.0, gt=0)
    idempotency: Literal["none", "optional", "required"] = "optional"
    idempotency_ttl: float = Field(default=86400.0, gt=0)
    allow: tuple[Match, ...] = ()
    deny: tuple[Match, ...] = ()
    args: dict[str, ArgRule] = Field(default_factory=dict)
    limits: Limits = Field(default_factory=Limits)

    def argument_names(self) -> set[str]:
        """Every argument name the policy refers to (constraints, ``when`` conditions, the spend argument)."""
        names = set(self.args)
        for rule in (*self.allow, *self.deny):
            names.update(rule.when)
        if self.limits.spend is not None:
            names.add(self.limits.spend.arg)
        return names

    @property
    def secret_args(self) -> frozenset[str]:
        """Argument names whose values never appear in logs, spans or audit records."""
        return frozenset(name for name, rule in self.args.items() if rule.secret)
