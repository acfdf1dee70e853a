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

    [[approve]]                      # an allowed call it matches waits for a person (matched like deny rules)
    id = "new-customer"
    when.email = { not_list = "customers:{tenant}" }

    [[after_approval]]               # once an approved call ran, its email joins the list
    add = "email"
    list = "customers:{tenant}"

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

Argument constraints: ``one_of``/``not_one_of``, ``min``/``max`` (numbers), ``min_length``/``max_length``,
``pattern``/``not_pattern`` (RE2: linear time), ``list``/``not_list`` (membership of a list in the store, read at
call time: :mod:`guardrail.store.lists`), ``source``/``not_source``/``untrusted_only`` with ``find`` (where the
value, or each URL/e-mail/IBAN in it, was seen: :mod:`guardrail.tools.provenance`), ``changed`` (against the
current values the tool's ``current`` hook gives), ``url`` (hosts, schemes, ``allow_ip_literals``,
``allow_nested_urls``, ``connect_to``), ``path`` (a base directory relative to the policy file,
``allow_absolute``, ``must_exist``), ``sql`` (allowed statement kinds, ``dialect``, ``tables``, extra
``functions``), ``required`` (the model must give it), ``absent`` (it must not), ``check_default`` (a left-out
argument's default is judged too), ``secret``. Each works as a ``when`` condition too (met when the value meets
it); what the list, provenance and ``changed`` keys read is in :mod:`guardrail.tools.policy.facts`. The value
constraints judge what the model sent; an argument it left out is judged by ``required``/``absent`` only, unless
``check_default`` (see :mod:`guardrail.tools.policy.arguments`). ``[args.NAME]`` names a
parameter of the tool; ``[args."NAME.FIELD"]`` a field of a nested model; lists on the way are walked element
by element (``[args.urls]`` on ``urls: list[str]`` checks every URL).

The ``url`` and ``path`` checkers produce the *canonical* value (the normalised URL, the resolved path inside
the base) and that value, not the model's spelling, is what the tool receives (see docs/tools-and-policies.md).
Which arguments a policy may name, and which it must constrain, is checked against the tool's parameters by
:mod:`guardrail.tools.policy.binding`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from guardrail.errors import ConfigError, Rejected
from guardrail.tools.identity import Identity
from guardrail.tools.policy.arguments import NOTHING, Location, elements, leaves, location_text
from guardrail.tools.policy.facts import UNJUDGED, Facts, check_list_template, loose_keys
from guardrail.tools.policy.paths import resolve_path
from guardrail.tools.policy.regex import compile_pattern
from guardrail.tools.policy.sql import check_sql
from guardrail.tools.policy.urls import address_reason, canonical_url
from guardrail.tools.provenance import Piece

_STRICT = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class UrlRule(BaseModel):
    """A URL argument: only these hosts (``*.example.com`` for subdomains) and schemes; no URL nested in the
    path, query or fragment unless ``allow_nested_urls``; ``connect_to`` lists the non-public networks the
    HTTP transport hook (:mod:`guardrail.tools.policy.http`) may still connect to."""

    model_config = _STRICT
    hosts: tuple[str, ...]
    schemes: tuple[str, ...] = ("https",)
    allow_ip_literals: bool = False
    allow_nested_urls: bool = False
    connect_to: tuple[str, ...] = ()

    def canonical(self, value: object) -> str:
        """The normalised URL (:func:`~guardrail.tools.policy.urls.canonical_url`), or :class:`Rejected`."""
        return canonical_url(value, hosts=self.hosts, schemes=self.schemes, allow_ip_literals=self.allow_ip_literals,
                             allow_nested_urls=self.allow_nested_urls)

    def address_reason(self, address: str) -> str | None:
        """Why the transport must not connect to ``address`` (a resolved IP), else ``None``."""
        return address_reason(address, self.connect_to)


class PathRule(BaseModel):
    """A file path argument: must resolve inside ``base`` (symlinks followed).

    A relative ``base`` is relative to the policy file's directory (to ``base_dir`` for policies parsed from
    text), fixed when the policy is loaded; it need not exist until a call comes.
    """

    model_config = _STRICT
    base: str
    allow_absolute: bool = False
    must_exist: bool = False

    @field_validator("base")
    @classmethod
    def _anchored(cls, base: str, info: ValidationInfo) -> str:
        if not base or "\x00" in base:
            raise ConfigError("base must be a non-empty path")
        anchor = (info.context or {}).get("policy_dir")
        expanded = os.path.expanduser(base) if base.startswith("~") else base
        if os.path.isabs(expanded) or anchor is None:
            return os.path.abspath(expanded)
        return os.path.abspath(os.path.join(os.fspath(anchor), expanded))

    def canonical(self, value: object) -> str:
        """The resolved path inside the base (a str), or :class:`Rejected`; ``ValueError`` when the base is
        unusable (it does not exist yet)."""
        if not isinstance(value, str):
            raise Rejected(f"path must be a str, not {type(value).__name__}")
        try:
            return str(resolve_path(value, base=self.base, allow_absolute=self.allow_absolute,
                                    must_exist=self.must_exist))
        except ValueError as error:
            if str(error).startswith("path policy"):
                raise  # the policy's own problem: judged "cannot be applied" by the caller
            raise Rejected(str(error)) from None


class SqlRule(BaseModel):
    """A SQL argument: one statement, of the listed kinds only, on the listed tables (if given), calling only
    the dialect's pure functions plus ``functions``."""

    model_config = _STRICT
    allow: tuple[str, ...]
    dialect: str | None = None
    tables: tuple[str, ...] | None = None
    functions: tuple[str, ...] = ()

    def canonical(self, value: object) -> str:
        """The statement itself, unchanged (what was parsed is what runs), or :class:`Rejected`."""
        reason = check_sql(value, allow=self.allow, dialect=self.dialect, tables=self.tables,
                           functions=self.functions)
        if reason is not None:
            raise Rejected(reason)
        assert isinstance(value, str)  # check_sql denies anything else
        return value


class ArgRule(BaseModel):
    """Constraints on one argument; :meth:`check` says why a value breaks them (``None`` if it does not)."""

    model_config = _STRICT
    one_of: tuple[str | int | float | bool, ...] | None = None
    not_one_of: tuple[str | int | float | bool, ...] | None = None
    min: float | None = None
    max: float | None = None
    min_length: int | None = Field(default=None, ge=0)
    max_length: int | None = Field(default=None, ge=0)
    pattern: str | None = None
    not_pattern: str | None = None
    in_list: str | None = Field(default=None, alias="list")
    not_list: str | None = None
    source: tuple[str, ...] | None = None
    not_source: tuple[str, ...] | None = None
    untrusted_only: bool | None = None
    find: tuple[Literal["url", "email", "iban"], ...] = ()
    changed: bool | None = None
    url: UrlRule | None = None
    path: PathRule | None = None
    sql: SqlRule | None = None
    required: bool = False
    absent: bool = False
    check_default: bool = False
    secret: bool = False

    @field_validator("pattern", "not_pattern")
    @classmethod
    def _linear(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            compile_pattern(pattern)  # ValueError when RE2 cannot run it in linear time
        return pattern

    @field_validator("in_list", "not_list")
    @classmethod
    def _list_name(cls, template: str | None) -> str | None:
        return None if template is None else check_list_template(template)

    @field_validator("source", "not_source", mode="before")
    @classmethod
    def _sources(cls, names: object) -> object:
        """One source name or a list of them; none empty."""
        listed = (names,) if isinstance(names, str) else names
        if isinstance(listed, (list, tuple)) and (not listed or not all(isinstance(n, str) and n for n in listed)):
            raise ConfigError("name one source or a non-empty list of them (\"user\", \"system\", \"trusted\", "
                              "\"tool:NAME\", a source the application records)")
        return listed

    @model_validator(mode="after")
    def _provenance_is_coherent(self) -> ArgRule:
        """``find`` says what of a text the provenance keys judge: alone it would judge nothing."""
        if self.find and not self.judges_provenance:
            raise ConfigError("find = [...] picks what source, not_source or untrusted_only judge inside a text: "
                              "add one of them")
        return self

    @model_validator(mode="after")
    def _presence_is_coherent(self) -> ArgRule:
        """``required``, ``absent`` and ``check_default`` that contradict each other, or constraints that could
        never judge anything, are load errors rather than rules that silently do nothing."""
        if self.required and self.absent:
            raise ConfigError("required = true and absent = true contradict each other")
        if self.required and self.check_default:
            raise ConfigError("check_default = true judges the default of a left-out argument, and "
                              "required = true refuses leaving it out: keep one")
        if self.absent and not self.check_default and self.has_value_constraints:
            raise ConfigError("with absent = true the argument is never given, so its value constraints would "
                              "judge nothing: remove them, or add check_default = true to judge the default")
        return self

    @model_validator(mode="after")
    def _checkers_accept_the_configuration(self) -> ArgRule:
        """Run the URL and SQL checkers once on a dummy value: they raise ConfigError for a bad configuration
        (a typo in ``allow``, an unknown dialect, a malformed host entry), which belongs at load time. Path
        bases are checked when a call comes (the directory may be created after the policy is loaded)."""
        if self.url is not None:
            with contextlib.suppress(Rejected):
                self.url.canonical("https://example.invalid/")
            address_reason("192.0.2.1", self.url.connect_to)
        if self.sql is not None:
            check_sql("", allow=self.sql.allow, dialect=self.sql.dialect, tables=self.sql.tables,
                      functions=self.sql.functions)
        return self

    @property
    def has_value_constraints(self) -> bool:
        """Whether the rule judges values (``one_of``, bounds, lengths, patterns, lists, provenance, ``changed``,
        a typed checker)."""
        return self.changed is not None or self._judges_elements

    @property
    def _judges_elements(self) -> bool:
        """Whether the rule judges each value (or each element of a list) on its own: every value key but
        ``changed``, which judges the value at the path as a whole."""
        return any(getattr(self, name) is not None for name in _VALUE_KEYS)

    @property
    def judges_provenance(self) -> bool:
        """Whether the rule asks where a value came from (``source``, ``not_source``, ``untrusted_only``)."""
        return self.source is not None or self.not_source is not None or self.untrusted_only is not None

    def condition_met(self, value: Any, left_out: bool, *, deny: bool, facts: Facts | None = None,
                      at: Location = ()) -> bool:
        """Whether one value meets this rule as a ``when`` condition (internal). A value the model left out
        meets ``absent`` and nothing else, unless ``check_default`` (its default is judged as if sent); a
        sent value never meets ``absent``. A deny (or approve) condition that cannot judge a value counts as
        met. ``at`` is where the value stands in the arguments (for ``changed`` and the audit)."""
        if left_out and not self.check_default:
            return self.absent
        if self.absent and not left_out:
            return False
        if value is NOTHING:
            return deny
        where = location_text(at)
        reason = self.whole_reason(value, facts, at)
        if reason is not None:
            return deny and reason.startswith(_UNJUDGED)
        if not isinstance(value, list):
            return self._value_met(value, deny, facts, where)
        if not self._judges_elements:
            return True  # a list given: presence (and change) is all that is asked (even of an empty one)
        judge = any if deny else all  # a deny condition holds when any element meets it, an allow when all do
        return judge(self._value_met(item, deny, facts, f"{where}[{index}]")
                     for index, item in enumerate(elements(value)))

    def _value_met(self, value: Any, deny: bool, facts: Facts | None, where: str) -> bool:
        reason = self.check(value, facts, where, deny=deny)
        return reason is None or (deny and reason.startswith(_UNJUDGED))

    def whole_reason(self, value: Any, facts: Facts | None, at: Location) -> str | None:
        """Why the value at ``at`` as a whole (a list as one value) breaks ``changed``, else ``None``: it differs
        from the current value there (``changed = false``), or does not (``changed = true``)."""
        if self.changed is None:
            return None
        current = facts.current_at(at) if facts is not None else f"{UNJUDGED}: no current values"
        if isinstance(current, str):
            return current
        found, old = current
        differs = not found or not _same_json(old, value)
        if differs == self.changed:
            return None
        return "unchanged" if self.changed else "changed"

    @property
    def kinds(self) -> frozenset[str]:
        """The typed checkers this rule applies: a subset of ``{"path", "url", "sql"}``."""
        return frozenset(kind for kind in ("path", "url", "sql") if getattr(self, kind) is not None)

    def check(self, value: Any, facts: Facts | None = None, where: str = "", *, deny: bool = False) -> str | None:
        """``None`` when ``value`` meets every constraint, else the first reason it does not (internal).

        A checker that finds its own configuration unusable at call time (a path base that does not exist)
        denies the call; it never raises. ``facts`` serve the list and provenance keys, ``where`` names the
        value in their audit entries; ``deny``: the rule is a deny or approve condition (a list it names refuses
        what is on it, so membership is judged under every spelling of the value).
        """
        try:
            self.canonical(value, facts, where, deny=deny)
        except Rejected as rejected:
            return rejected.reason
        return None

    def canonical(self, value: Any, facts: Facts | None = None, where: str = "", *, deny: bool = False) -> Any:
        """The value the tool must receive for ``value`` (the resolved path, the normalised URL; any other
        value unchanged), or :class:`Rejected` with the reason. ``one_of``, ``not_one_of``, the bounds, the
        lengths, the patterns, the lists and the provenance keys judge the value as written; the
        ``url``/``path``/``sql`` checkers then produce the canonical value from it (no decoding on either side).
        A ``null`` that reaches them (sent where the default is not ``None``, or judged by ``check_default``)
        passes unless the rule is ``required``: there is nothing to fetch, open or run. (Arguments left out
        never get here: the walk in :mod:`~guardrail.tools.policy.arguments` judges them by presence.)"""
        try:
            reason = self._plain_reason(value, deny) or self._fact_reason(value, facts, where, deny)
            if reason is not None:
                raise Rejected(reason)
            if value is None and not self.required:
                return value
            written = value
            if self.url is not None:
                value = self._typed("url", self.url.canonical, value)
            if self.path is not None:
                value = self._typed("path", self.path.canonical, value)
            if self.sql is not None:
                value = self._typed("sql", self.sql.canonical, value)
            negated = self.negations()
            if value != written and negated is not None:  # what the tool receives is never a refused value
                reason = negated._plain_reason(value, deny) or negated._fact_reason(value, facts, where, deny)
                if reason is not None:
                    raise Rejected(reason)
        except ValueError as error:
            raise Rejected(f"policy cannot be applied: {error}") from None
        return value

    def negations(self) -> ArgRule | None:
        """This rule's negated value keys alone (``not_one_of``, ``not_pattern``, ``not_list``, with the presence
        keys), or ``None`` when it has none: what the checked value (the canonical URL or path) must meet as
        well as the value as written, since the tool receives it."""
        if self.not_one_of is None and self.not_pattern is None and self.not_list is None:
            return None
        return self.model_copy(update={name: None for name in _VALUE_KEYS if name not in _NEGATED_KEYS}
                               | {"find": (), "changed": None})

    @staticmethod
    def _typed(kind: str, checker: Any, value: Any) -> Any:
        try:
            return checker(value)
        except Rejected as rejected:
            raise Rejected(f"{kind}: {rejected.reason}") from None

    def _plain_reason(self, value: Any, deny: bool = False) -> str | None:
        """Why ``value`` breaks the keys that need nothing but the value, else ``None``. Values a key refuses
        (``not_one_of`` here, ``one_of`` in a deny or approve condition: ``deny``) are refused however a string
        is spelt (:func:`~guardrail.tools.policy.facts.loose_keys`); values a key admits, exactly."""
        if self.one_of is not None and not _among(value, self.one_of, loose=deny):
            return "not one of the allowed values"
        if self.not_one_of is not None and _among(value, self.not_one_of, loose=not deny):
            return "one of the refused values"
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
        if self.not_pattern is not None and (not isinstance(value, str)
                                             or compile_pattern(self.not_pattern).fullmatch(value)):
            return "matches the refused pattern" if isinstance(value, str) else "not text"
        return None

    def _fact_reason(self, value: Any, facts: Facts | None, where: str, deny: bool = False) -> str | None:
        """Why ``value`` breaks the list or provenance keys (which read the store and the run), else ``None``.
        A list that refuses what is on it (``not_list`` here, ``list`` in a deny or approve condition: ``deny``)
        holds every spelling of a member (:func:`~guardrail.tools.policy.facts.loose_keys`); a list that admits,
        exact members only."""
        for template, member in ((self.in_list, True), (self.not_list, False)):
            if template is None:
                continue
            snapshot = facts.members(template) if facts is not None else f"{UNJUDGED}: no store to read lists from"
            if isinstance(snapshot, str):
                return snapshot
            if Facts.holds(snapshot, value, loose=member is deny) is not member:
                return "not in the list" if member else "in the refused list"
        if self.judges_provenance:
            return self._provenance_reason(value, facts, where)
        return None

    def _provenance_reason(self, value: Any, facts: Facts | None, where: str) -> str | None:
        """Where the value (or each item ``find`` picks in it) was seen, judged: ``source`` holds when every item
        was seen in one of those sources; ``not_source`` is its negation (some item was not); ``untrusted_only =
        true`` holds when some item was seen in untrusted content and in no trusted content, ``false`` when none
        was. A value with nothing to judge (empty, or no item of the kinds asked) meets ``source`` and
        ``untrusted_only = false``. Each item judged is recorded in ``facts`` for the audit."""
        text = _as_text(value)
        if text is None:
            return f"{UNJUDGED}: not text"
        found = facts.sightings(text, self.find) if facts is not None else f"{UNJUDGED}: no run context"
        if isinstance(found, str):
            return found
        assert facts is not None  # sightings came from it
        keys = [(key, names) for key, names in (("source", self.source), ("not_source", self.not_source))
                if names is not None]
        verdicts: dict[str, list[bool]] = {}
        for kind, normal, seen in found:
            for key, names in keys:
                holds = any(_from(piece, names) for piece in seen) is (key == "source")
                verdicts.setdefault(key, []).append(holds)
                facts.record(where, f"{key}={','.join(names)}", kind, normal, seen, holds)
            if self.untrusted_only is not None:
                planted = bool(seen) and not any(piece.trusted for piece in seen)
                verdicts.setdefault("untrusted_only", []).append(planted is self.untrusted_only)
                facts.record(where, f"untrusted_only={str(self.untrusted_only).lower()}", kind, normal, seen,
                             planted is self.untrusted_only)
        if self.source is not None and not all(verdicts.get("source", [])):
            return "not seen in the required source"
        if self.not_source is not None and not any(verdicts.get("not_source", [])):
            return "seen in the refused source" if found else "nothing outside the named sources to judge"
        if self.untrusted_only is not None:
            met = verdicts.get("untrusted_only", [])
            if not (any(met) if self.untrusted_only else all(met)):
                return "not seen only in untrusted content" if self.untrusted_only else "seen only in untrusted content"
        return None

    def length_reason(self, value: list[Any]) -> str | None:
        """The length constraints on a list argument itself (the other constraints judge its elements)."""
        if (self.min_length is not None and len(value) < self.min_length) or \
                (self.max_length is not None and len(value) > self.max_length):
            return "length out of range"
        return None

    def for_elements(self) -> ArgRule:
        """This rule without its length constraints: what each element of a list argument must meet."""
        if self.min_length is None and self.max_length is None:
            return self
        return self.model_copy(update={"min_length": None, "max_length": None})


#: The keys of :class:`ArgRule` that judge each value (rather than its presence or how it is logged; ``changed``
#: judges the value as a whole).
_VALUE_KEYS = ("one_of", "not_one_of", "min", "max", "min_length", "max_length", "pattern", "not_pattern", "in_list",
               "not_list", "source", "not_source", "untrusted_only", "url", "path", "sql")

#: The keys that name values an argument must not have: they judge the checked value too (:meth:`ArgRule.negations`).
_NEGATED_KEYS = ("not_one_of", "not_pattern", "not_list")

#: Reasons that mean "this constraint cannot judge this value" rather than "the value fails it".
_UNJUDGED = ("not a number", "has no length", "not text", "policy cannot be applied", UNJUDGED)


def _as_text(value: Any) -> str | None:
    """A value as the text provenance looks for: a string as it is, an integer or a float in its shortest
    spelling (``100.0`` as ``100``); anything else (a bool, ``null``, an object) is not text."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def _from(piece: Piece, names: tuple[str, ...]) -> bool:
    """Whether a piece of content came from one of ``names`` (a source name, or the groups ``trusted`` and
    ``untrusted``)."""
    return piece.source in names or ("trusted" if piece.trusted else "untrusted") in names


def _same_json(a: Any, b: Any) -> bool:
    """Type-aware equality of two JSON-like values (``changed``): numbers by value, a bool never a number."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return False
    return _same(a, b)


def _among(value: Any, options: tuple[Any, ...], *, loose: bool) -> bool:
    """Whether ``value`` is one of ``options`` (:func:`_same`); ``loose``: a string also when it spells one of
    them another way (:func:`~guardrail.tools.policy.facts.loose_keys`)."""
    if any(_same(value, option) for option in options):
        return True
    if not loose or not isinstance(value, str):
        return False
    keys = loose_keys(value)
    return any(isinstance(option, str) and not keys.isdisjoint(loose_keys(option)) for option in options)


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

    @field_validator("when")
    @classmethod
    def _argument_paths(cls, when: dict[str, ArgRule]) -> dict[str, ArgRule]:
        for path in when:
            if not all(part.isidentifier() for part in path.split(".")):
                raise ConfigError(f"{path!r} is not an argument path (parameter or parameter.field.field)")
        return when

    def matches(self, who: Identity | None, arguments: dict[str, Any], *, deny: bool = False,
                omitted: Collection[Location] = frozenset(), facts: Facts | None = None,
                negations: bool = False) -> bool:
        """Whether the rule applies. A deny rule fails closed: it applies to anonymous callers unless it names
        roles/tenants/users, and a ``when`` constraint that cannot judge a value (wrong type, unreachable)
        counts as met; an allow rule needs every condition positively met. A ``when`` path that reaches a list
        judges each element: a deny condition holds when any element meets it, an allow condition when all do.

        An argument the model left out (``omitted``: see :mod:`~guardrail.tools.policy.arguments`) meets only
        ``absent = true``, in allow and deny rules alike: a deny ``when.amount = { min = 1000 }`` does not fire
        on an omitted amount, and an allow ``when.currency = { one_of = [...] }`` does not hold for an omitted
        currency, unless the condition says ``check_default = true`` (then the default is judged).

        ``deny=True`` is also how ``[[approve]]`` rules match (fail closed: a condition that cannot judge asks for
        a person). ``facts`` serve the list, provenance and ``changed`` keys. ``negations=True`` judges only the
        negated keys of each condition (:meth:`ArgRule.negations`): how an allow rule is held to the checked
        arguments as well."""
        if deny:
            if who is None and (self.roles or self.tenants or self.users):
                return False
            if who is not None and not self._identity_matches(who):
                return False
        elif who is None:
            if not self.anonymous:
                return False
        elif not self._identity_matches(who):
            return False
        judge = any if deny else all
        for name, condition in self.when.items():
            rule = condition.negations() if negations else condition
            if rule is None:
                continue
            found = leaves(arguments, name, omitted, into_defaults=rule.check_default)
            if not judge(rule.condition_met(value, left_out, deny=deny, facts=facts, at=at)
                         for value, left_out, at in found):
                return False
        return True

    def may_match(self, who: Identity | None) -> bool:
        """Whether the rule's identity conditions admit this caller (its ``when`` conditions aside)."""
        return self.anonymous if who is None else self._identity_matches(who)

    def _identity_matches(self, who: Identity) -> bool:
        return (not self.roles or bool(who.roles & set(self.roles))) and \
            (not self.tenants or who.tenant in self.tenants) and (not self.users or who.user in self.users)


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


class PolicyLimits(BaseModel):
    """Rate limit, quota (a longer-window rate) and spend budget, each per identity and tool."""

    model_config = _STRICT
    rate: Rate | None = None
    quota: Rate | None = None
    spend: Spend | None = None


class ListAdd(BaseModel):
    """``[[after_approval]]``: once a call a person approved has run, the values of the argument ``add`` (each
    element of a list) join the list ``list`` (a name with ``{tenant}``/``{user}`` placeholders)."""

    model_config = _STRICT
    add: str = Field(min_length=1)
    list_name: str = Field(alias="list")

    @field_validator("add")
    @classmethod
    def _argument_path(cls, path: str) -> str:
        if not all(part.isidentifier() for part in path.split(".")):
            raise ConfigError(f"{path!r} is not an argument path (parameter or parameter.field.field)")
        return path

    @field_validator("list_name")
    @classmethod
    def _template(cls, template: str) -> str:
        return check_list_template(template)


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
    approve: tuple[Match, ...] = ()
    after_approval: tuple[ListAdd, ...] = ()
    args: dict[str, ArgRule] = Field(default_factory=dict)
    limits: PolicyLimits = Field(default_factory=PolicyLimits)
    _source: str = PrivateAttr(default="<policy>")
    _text: str = PrivateAttr(default="")

    @field_validator("args")
    @classmethod
    def _argument_paths(cls, args: dict[str, ArgRule]) -> dict[str, ArgRule]:
        for path in args:
            if not all(part.isidentifier() for part in path.split(".")):
                raise ConfigError(f"{path!r} is not an argument path (parameter or parameter.field.field)")
        return args

    @model_validator(mode="after")
    def _adds_need_approval(self) -> Policy:
        if self.after_approval and self.approval != "required" and not self.approve:
            raise ConfigError("after_approval adds what a person approved: it needs approval = \"required\" or "
                              "an [[approve]] rule")
        return self

    @property
    def source(self) -> tuple[str, str]:
        """Where the policy came from (its file, or ``<policy>``) and its TOML text, for error messages."""
        return self._source, self._text

    def located(self, source: str, text: str) -> Policy:
        """Remember the file and text this policy was read from (the loader calls this)."""
        self._source, self._text = source, text
        return self

    def argument_names(self) -> set[str]:
        """Every argument name the policy refers to (constraints, ``when`` conditions, the spend argument)."""
        names = set(self.args)
        for rule in self.rules():
            names.update(rule.when)
        names.update(add.add for add in self.after_approval)
        if self.limits.spend is not None:
            names.add(self.limits.spend.arg)
        return names

    def rules(self) -> tuple[Match, ...]:
        """Every allow, deny and approve rule."""
        return (*self.allow, *self.deny, *self.approve)

    def conditions(self) -> list[tuple[str, ArgRule]]:
        """Every ``[args.PATH]`` constraint and every ``when`` condition, with its argument path."""
        return [*self.args.items(), *((name, rule) for match in self.rules() for name, rule in match.when.items())]

    @property
    def compares_current(self) -> bool:
        """Whether a constraint or condition says ``changed`` (the tool must give current values to compare)."""
        return any(rule.changed is not None for _, rule in self.conditions())

    def default_checked_paths(self) -> frozenset[str]:
        """The argument paths of every constraint and ``when`` condition that says ``check_default``."""
        return frozenset(name for name, rule in self.conditions() if rule.check_default)

    @property
    def secret_args(self) -> frozenset[str]:
        """Argument names whose values never appear in logs, spans or audit records (for a nested path such
        as ``card.number``, the whole path and its last field name)."""
        return frozenset(name for path, rule in self.args.items() if rule.secret
                         for name in {path, path.rsplit(".", 1)[-1]})
