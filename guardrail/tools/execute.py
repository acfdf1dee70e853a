"""Guarded tools: ``@guardrail.tool`` and ``guardrail.execute_tool_call``.

A model proposes a call; nothing runs until it has passed, in order::

    exact name → parse + validate arguments → semantic rules → authorization (policy + identity, and the
      facts it reads: the store's lists, the run's content, the tool's current values) → approval (the
      policy's, or an [[approve]] rule's) → rate limit / quota / spend → idempotent execution → audit
      (→ [[after_approval]] list adds; the result recorded in the current run, if any)

Each step that stops the call writes an audit record and raises a typed error: the parse layer's
``ParseError`` (its ``.feedback`` can go back to the model), :class:`~guardrail.Denied` (a generic message;
``.rule``, ``.argument`` and ``.reason`` for the application), :class:`~guardrail.ApprovalRequired` (with the
token and the rule that asked), ``IdempotencyConflict`` (audited as ``conflict``), ``PolicyError`` (the policy and
the tool disagree), ``StoreError`` (a list could not be read: nothing ran).
The tool function is only ever called with a sealed positive :class:`~guardrail.tools.authz.Decision` for
exactly those arguments, and with the *checked* values: the resolved path, the normalised URL, the SQL that
was parsed. :func:`run_tool_call` returns a :class:`ToolResult` that also says whether the tool ran or an
idempotent replay answered.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import threading
import typing
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from pydantic_core import to_jsonable_python

from guardrail.call.config import get_config
from guardrail.errors import (
    ApprovalRequired,
    ConfigError,
    Denied,
    GuardrailError,
    IdempotencyConflict,
    InputLimitError,
    NothingHappened,
    ParseError,
    SemanticViolation,
    StoreError,
    UsageError,
)
from guardrail.gates.semantic import Rule, evaluate
from guardrail.parse.feedback import semantic_feedback
from guardrail.parse.pipeline import parse
from guardrail.store.base import Counter, Store
from guardrail.store.idempotency import DEFAULT_LEASE, NOT_EXECUTED, Idempotency, IdempotencyUnknown
from guardrail.store.lists import Lists, lists_of
from guardrail.store.memory import MemoryStore
from guardrail.tools import approvals, audit
from guardrail.tools.authz import GENERIC_DENIAL, Decision, authorize
from guardrail.tools.identity import Identity, current_identity, key_of
from guardrail.tools.policy.arguments import Location, elements, leaves, location_text
from guardrail.tools.policy.binding import bind, bind_schema
from guardrail.tools.policy.facts import Facts, list_name
from guardrail.tools.policy.loader import PolicyError, load_policy
from guardrail.tools.policy.model import Policy
from guardrail.tools.presence import model_left_out, schema_left_out
from guardrail.tools.provenance import content_text, current_run
from guardrail.vendors.registry import endpoint_named, tool_calls_of

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Tool:
    """A registered tool: the function, its argument contract and its policy source.

    ``arguments`` is a pydantic model built from the signature, or the JSON Schema (an object schema) the
    tool was declared with; then the function is called with the validated JSON values as keywords.
    """

    name: str
    fn: Callable[..., Any]
    arguments: type[BaseModel] | dict[str, Any]
    policy_source: Policy | Path | None
    description: str = ""
    rules: tuple[Rule, ...] = ()
    rerun_safe: bool = False
    reconcile: Callable[[IdempotencyUnknown, dict[str, Any]], Any] | None = None
    current: Callable[[dict[str, Any]], Mapping[str, Any] | None] | None = None
    trusted_results: bool = False
    _policy: Policy | None = field(default=None, repr=False)
    _error: PolicyError | None = field(default=None, repr=False)
    _loaded: bool = field(default=False, repr=False)

    def policy(self) -> Policy | None:
        """The policy, loaded and checked against the tool's parameters on first use; ``None`` when there is no
        policy file (every call is then denied). An invalid file, or a policy that disagrees with the tool (an
        argument the tool lacks, a path/URL/SQL argument without its checker), raises :class:`PolicyError`
        naming the file, the line and the reason, on every call: never a silent drop."""
        if not self._loaded:
            try:
                self._policy = self._load()
            except PolicyError as error:
                self._error = error
            self._loaded = True
        if self._error is not None:
            raise self._error
        return self._policy

    def _load(self) -> Policy | None:
        source = self.policy_source
        if isinstance(source, Policy):
            policy = source
        else:
            path = source or Path(get_config().policies or "policies") / f"{self.name}.toml"
            if not path.exists():
                return None
            policy = load_policy(path)
        if isinstance(self.arguments, dict):
            bind_schema(policy, self.arguments, self.name, where=_where(self.fn), current=self.current is not None)
        else:
            bind(policy, self.arguments, self.name, where=_where(self.fn), current=self.current is not None)
        return policy

    def argument_names(self) -> set[str]:
        """The names of the arguments the tool declares."""
        if isinstance(self.arguments, dict):
            return set(self.arguments.get("properties") or ())
        return set(self.arguments.model_fields)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (what a vendor gets as the tool's parameters)."""
        if isinstance(self.arguments, dict):
            copied: dict[str, Any] = json.loads(json.dumps(self.arguments))  # as declared; callers may edit theirs
            return copied
        return self.arguments.model_json_schema()


class ToolRegistry:
    """Tools by exact name (no case folding, no Unicode normalisation: a homoglyph is another, unknown name)."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._lock = threading.Lock()

    def add(self, tool: Tool) -> None:
        with self._lock:
            if tool.name in self._tools:
                raise ConfigError(f"a tool named {tool.name!r} is already registered")
            self._tools[tool.name] = tool

    def get(self, name: object) -> Tool | None:
        return self._tools.get(name) if isinstance(name, str) else None

    def names(self) -> list[str]:
        return sorted(self._tools)

    def remove(self, name: str) -> None:
        with self._lock:
            self._tools.pop(name, None)

    def definitions(self, api: str, names: list[str] | None = None) -> list[dict[str, Any]]:
        """The ``tools=`` list for a vendor request: ``api`` is ``"chat"``, ``"responses"`` or ``"messages"``
        (the endpoint of that API writes each definition)."""
        endpoint = endpoint_named(api)
        out: list[dict[str, Any]] = []
        for name in names or self.names():
            found = self._tools[name]
            out.append(endpoint.tool_definition(name, found.description or name, found.schema()))
        return out


REGISTRY = ToolRegistry()
IDEMPOTENCY_PREFIX = "idempotency:"
_default_store: Store | None = None


def default_store() -> Store:
    """The configured store (``guardrail.configure(store=...)``), else one in-memory store per process."""
    global _default_store
    configured = get_config().store
    if configured is not None:
        return configured  # type: ignore[no-any-return]
    if _default_store is None:
        _default_store = MemoryStore()
    return _default_store


def lists(store: Store | None = None) -> Lists:
    """The allow-lists policies read (``list = "payees:{tenant}"``), in ``store`` or the configured store: add,
    remove, replace and read them (see :mod:`guardrail.store.lists`)."""
    return lists_of(store or default_store())


def _where(fn: Callable[..., Any]) -> str:
    """``file:line`` of a function's definition, for error messages (empty when unknown)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else ""


def _arguments_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's JSON Schema, checked now (an object schema the validator can honour); kept as declared."""
    from guardrail.contract import compile_contract
    from guardrail.errors import ContractError

    contract = compile_contract(dict(schema))
    if contract.root_shapes != "{":
        raise ContractError('a tool\'s arguments must be declared by an object schema ("type": "object")',
                            keyword="type", path="")
    return contract.schema


def _arguments_model(fn: Callable[..., Any], name: str) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    hints = typing.get_type_hints(fn, include_extras=True)  # resolves `from __future__ import annotations`
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(f"tool {name!r}: *args/**kwargs cannot be described to a model")
        annotation = hints.get(param.name, Any)
        fields[param.name] = (annotation, ... if param.default is param.empty else param.default)
    model: type[BaseModel] = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    return model


@overload
def tool(fn: F, /) -> F: ...
@overload
def tool(*, name: str | None = None, policy: Policy | str | Path | None = None,
         registry: ToolRegistry | None = None, rules: Sequence[Rule] = (), rerun_safe: bool = False,
         reconcile: Callable[[IdempotencyUnknown, dict[str, Any]], Any] | None = None,
         schema: Mapping[str, Any] | None = None,
         current: Callable[[dict[str, Any]], Mapping[str, Any] | None] | None = None,
         trusted_results: bool = False) -> Callable[[F], F]: ...
def tool(fn: Any = None, /, *, name: str | None = None, policy: Policy | str | Path | None = None,
         registry: ToolRegistry | None = None, rules: Sequence[Rule] = (), rerun_safe: bool = False,
         reconcile: Callable[[IdempotencyUnknown, dict[str, Any]], Any] | None = None,
         schema: Mapping[str, Any] | None = None,
         current: Callable[[dict[str, Any]], Mapping[str, Any] | None] | None = None,
         trusted_results: bool = False) -> Any:
    """Register a function as a guarded tool; the function itself is returned unchanged (call it directly
    from trusted code; model-proposed calls go through :func:`execute_tool_call`).

    ``policy`` is a :class:`Policy`, a path to its TOML file, or ``None`` for ``<policies dir>/<name>.toml``.
    A given policy (object or existing file) is loaded and checked against the function's parameters here:
    :class:`PolicyError` (file, line, reason) when they disagree. ``rules`` are semantic rules over the
    validated arguments (a failure raises ``SemanticViolation``, whose ``.feedback`` can go back to the model;
    it is checked before authorization).

    Idempotent runs (see ``docs/idempotency.md``): ``rerun_safe=True`` says the tool may run again when an earlier
    run's outcome is unknown or it failed (no side effects worth guarding); ``reconcile(unknown, arguments)`` is
    asked when an earlier run vanished mid-call and returns the result it had (replayed from then on),
    ``guardrail.store.NOT_EXECUTED`` (run it now) or ``None`` (still unknown: the caller gets
    :class:`~guardrail.errors.IdempotencyUnknown`).

    ``schema`` declares the arguments by JSON Schema (an object schema, e.g. an MCP ``inputSchema``) instead
    of the signature; the function then gets the validated JSON values as keywords. An unusable schema
    raises :class:`~guardrail.errors.ContractError` here, at registration.

    ``current(arguments)`` gives the current values of the object a call changes (a standing order looked up by
    the id in the arguments, from the application's own data), or ``None`` when there is no such object: what
    the policy's ``changed`` conditions compare with (a policy that says ``changed`` needs it). Its keys are
    the argument paths' fields. It runs before authorization, only for policies that say ``changed``; if it
    raises, the call is denied (rule ``current``). ``trusted_results=True`` records the tool's results in the
    run context (:mod:`guardrail.tools.provenance`) as trusted content, for a tool that reads what the user
    owns (their address book); by default results are untrusted.
    """
    def register(function: F) -> F:
        if inspect.iscoroutinefunction(function):
            raise UsageError(f"{function.__name__} is async: guarded tools run synchronously (wrap it, e.g. with "
                            "asyncio.run inside a sync function, or run execute_tool_call in a thread)")
        tool_name = name or function.__name__
        source = Path(policy) if isinstance(policy, (str, Path)) else policy
        arguments = _arguments_model(function, tool_name) if schema is None else _arguments_schema(schema)
        found = Tool(tool_name, function, arguments, source, inspect.getdoc(function) or "", tuple(rules),
                     rerun_safe, reconcile, current, trusted_results)
        if isinstance(source, Policy) or (source is not None and source.exists()):
            found.policy()  # fail loudly now, at registration, when policy and tool disagree
        (registry or REGISTRY).add(found)
        return function

    return register(fn) if fn is not None else register


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What :func:`run_tool_call` returns: the tool's result and how it came about.

    ``replayed`` is true when an idempotent replay answered (the stored result of an earlier run with the same
    key and arguments) and the tool did not run; ``ran`` is its opposite. ``arguments`` are the checked
    arguments the tool received (canonical paths and URLs in place, the defaults of what the model left out);
    ``rule`` is the allow rule that admitted the call; ``omitted`` names the arguments the model left out
    (``cc``, ``items[1].sku``), which the policy judged by presence only (see docs/tools-and-policies.md).
    """

    value: Any
    replayed: bool
    request_id: str
    rule: str
    arguments: dict[str, Any]
    omitted: tuple[str, ...] = ()

    @property
    def ran(self) -> bool:
        """Whether the tool function ran for this call."""
        return not self.replayed


def execute_tool_call(name: str, arguments: Mapping[str, Any] | str, *, idempotency_key: str | None = None,
                      approval_token: str | None = None, request_id: str | None = None,
                      registry: ToolRegistry | None = None, store: Store | None = None,
                      context: Mapping[str, Any] | None = None, lease: float = DEFAULT_LEASE,
                      wait: float = 30.0) -> Any:
    """Run one model-proposed call through every gate and return the tool's result (:func:`run_tool_call`
    says more: whether the tool ran or a replay answered, and with which checked arguments)."""
    return run_tool_call(name, arguments, idempotency_key=idempotency_key, approval_token=approval_token,
                         request_id=request_id, registry=registry, store=store, context=context, lease=lease,
                         wait=wait).value


def run_tool_call(name: str, arguments: Mapping[str, Any] | str, *, idempotency_key: str | None = None,
                  approval_token: str | None = None, request_id: str | None = None,
                  registry: ToolRegistry | None = None, store: Store | None = None,
                  context: Mapping[str, Any] | None = None, lease: float = DEFAULT_LEASE,
                  wait: float = 30.0) -> ToolResult:
    """Run one model-proposed call through every gate (see the module docstring): a :class:`ToolResult`.

    ``arguments`` is a dict or the raw JSON text the model produced. ``idempotency_key`` makes a
    side-effecting call run once (required by ``idempotency = "required"`` policies; derived from the call
    when not given). ``approval_token`` is the token from an earlier :class:`ApprovalRequired`, after
    ``guardrail.approve``; it comes from the application, never from the model. ``context`` holds runtime
    facts for the tool's semantic rules (ids that must exist...). ``lease`` (seconds a claim lives without a
    heartbeat) and ``wait`` (seconds to wait for a concurrent run of the same key) tune idempotent runs; results
    are kept for the policy's ``idempotency_ttl``. What a retry may see is in ``docs/idempotency.md``.
    """
    request_id = request_id or uuid.uuid4().hex
    who = current_identity()
    found = (registry or REGISTRY).get(name)
    if found is None:
        audit.record(request_id=request_id, tool=str(name)[:200], decision="denied", rule="unknown-tool",
                     reason="no tool registered under this exact name", identity=who)
        raise Denied(GENERIC_DENIAL, tool=str(name)[:200], request_id=request_id, rule="unknown-tool",
                     reason="no tool registered under this exact name")
    try:
        policy = found.policy()
    except PolicyError as error:
        audit.record(request_id=request_id, tool=found.name, decision="denied", rule="policy-error",
                     reason=str(error), identity=who, idempotency_key=idempotency_key)
        raise
    secret = policy.secret_args if policy else frozenset()
    version = policy.version if policy else ""
    if policy is None or not any(rule.may_match(who) for rule in policy.allow):
        # A caller no allow rule could ever admit learns nothing, not even the tool's argument schema: the
        # answer is the same generic denial as for a tool that does not exist.
        audit.record(request_id=request_id, tool=found.name, decision="denied", identity=who, secret_args=secret,
                     rule="no-policy" if policy is None else "default-deny", policy_version=version,
                     reason="no allow rule can admit this caller", idempotency_key=idempotency_key)
        raise Denied(GENERIC_DENIAL, tool=found.name, request_id=request_id,
                     rule="no-policy" if policy is None else "default-deny",
                     reason="no allow rule can admit this caller")
    model, args = _validated(found, arguments, request_id, who, secret, version, idempotency_key)
    model, args, omitted = _left_out(found, policy, model, args)
    left_out = sorted(location_text(place) for place in omitted)
    if found.rules:
        try:
            verdict = evaluate(found.rules, args, context or {})
        except Exception as error:  # a rule that cannot run (missing context...) fails closed
            audit.record(request_id=request_id, tool=found.name, decision="denied", rule="semantic",
                         reason=f"a rule could not run: {type(error).__name__}: {error}", arguments=args,
                         identity=who, secret_args=secret, policy_version=version, idempotency_key=idempotency_key,
                         omitted=left_out)
            raise Denied(GENERIC_DENIAL, tool=found.name, request_id=request_id, rule="semantic",
                         reason=f"a rule could not run: {type(error).__name__}") from None
        if not verdict.ok:
            violation = SemanticViolation(semantic_feedback(list(verdict.violations)), verdict.violations)
            audit.record(request_id=request_id, tool=found.name, decision="invalid", rule="semantic",
                         reason=violation.feedback, arguments=args, identity=who, secret_args=secret,
                         policy_version=version, idempotency_key=idempotency_key, omitted=left_out)
            raise violation
    store = store or default_store()
    facts = _facts(found, policy, model, who, store, secret, request_id, args, version, idempotency_key, left_out)
    try:
        decision = authorize(policy, found.name, args, who, omitted, facts)
    except StoreError as error:  # a list could not be read: nothing was decided, nothing runs
        audit.record(request_id=request_id, tool=found.name, decision="failed", rule="lists", arguments=args,
                     identity=who, secret_args=secret, policy_version=version, idempotency_key=idempotency_key,
                     error=error, omitted=left_out)
        raise
    _record = _recorder(request_id, found.name, json.loads(json.dumps(decision.arguments)), who, decision, secret,
                        idempotency_key, left_out)
    if not decision.allowed:
        _record("denied")
        raise Denied(GENERIC_DENIAL, tool=found.name, request_id=request_id, rule=decision.rule,
                     argument=decision.argument, reason=decision.reason)
    assert policy is not None  # an allowed decision always has a policy
    checked_model = _checked_model(found, model, args, decision.arguments)
    if checked_model is None:
        _record("denied", rule="canonical", reason="the checked value does not fit the parameter's type")
        raise Denied(GENERIC_DENIAL, tool=found.name, request_id=request_id, rule="canonical",
                     reason="the checked value does not fit the parameter's type")
    model, args = checked_model, decision.arguments
    key = idempotency_key
    if key is None and policy.idempotency == "required":
        key = "derived:" + decision.arguments_hash
    scoped = None if key is None else _scoped_key(found.name, who, key)
    idempotency = _idempotency(found, store, policy, lease, wait, model) if scoped else None
    if idempotency is not None and scoped is not None and key is not None:
        try:  # this exact call already ran (approved, if approval was required): replay its outcome
            stored = idempotency.replay(scoped, decision.arguments_hash, label=key)
        except IdempotencyConflict:
            _record("conflict", rule="idempotency", reason="the key was already used with other arguments", key=key)
            raise
        except Exception as error:  # a replayed failure or unstorable result, or the store is down
            _record("failed", error=error, key=key)
            raise
        if stored is not None:
            result = json.loads(stored)
            _record("replayed", result=result, key=key)
            _remember(found, result)
            return ToolResult(result, True, request_id, decision.rule, args, tuple(left_out))
    if decision.approval:
        if approval_token is None:
            token, expires_at = approvals.park(store, found.name, decision.arguments_hash, who, policy.approval_ttl)
            _record("pending_approval", rule=decision.approval)
            raise ApprovalRequired("This action needs approval before it runs.", tool=found.name,
                                   request_id=request_id, token=token, expires_at=expires_at, rule=decision.approval)
        problem = approvals.redeem(store, approval_token, found.name, decision.arguments_hash, who)
        if problem is not None:
            _record("denied", rule="approval", reason=problem)
            raise Denied(GENERIC_DENIAL, tool=found.name, request_id=request_id, rule="approval", reason=problem)

    def execute() -> Any:
        # Limits count executions: a replayed result costs nothing.
        limited = _over_limits(policy, store, found.name, args, who, found.fn)
        if limited is not None:
            raise _LimitReached(limited)
        return run_sealed(found, model, args, decision)

    try:
        if idempotency is None or scoped is None:
            result, replayed = execute(), False
        else:
            text, replayed = idempotency.run(scoped, decision.arguments_hash, execute, _result_text, label=key)
            result = json.loads(text)
    except _LimitReached as limit:
        _record("denied", rule=limit.rule, reason="limit reached", key=key)
        raise Denied(GENERIC_DENIAL, tool=found.name, request_id=request_id, rule=limit.rule,
                     reason="limit reached") from None
    except IdempotencyConflict as error:
        _record("conflict", rule="idempotency", reason="the key was already used with other arguments", key=key)
        raise error from None
    except Exception as error:
        _record("failed", error=error, key=key)
        raise
    added = _add_approved(policy, store, args, who) if decision.approval and not replayed else []
    _record("replayed" if replayed else "executed", result=result, key=key, added=added)
    _remember(found, result)
    return ToolResult(result, replayed, request_id, decision.rule, args, tuple(left_out))


def _facts(found: Tool, policy: Policy, model: BaseModel | dict[str, Any], who: Identity | None, store: Store,
           secret: frozenset[str], request_id: str, args: dict[str, Any], version: str, key: str | None,
           left_out: list[str]) -> Facts:
    """What the gate may consult for this call besides its arguments: the store's lists, the run's content, and
    the current values of the object it changes (the tool's ``current`` hook, asked only when the policy says
    ``changed``; a hook that raises or answers something else than a mapping or ``None`` denies the call)."""
    extra: dict[str, Any] = {}
    if policy.compares_current and found.current is not None:
        try:
            current = found.current(_keywords(model))
            if current is not None and not isinstance(current, Mapping):
                raise UsageError(f"current() returned {type(current).__name__}, not a mapping or None")
            extra["current"] = None if current is None else _canonical(dict(current))
        except Exception as error:  # the application's hook: fail closed, whatever it raised
            reason = f"the current-values hook failed: {type(error).__name__}"
            audit.record(request_id=request_id, tool=found.name, decision="denied", rule="current", reason=reason,
                         arguments=args, identity=who, secret_args=secret, policy_version=version,
                         idempotency_key=key, omitted=left_out, error=error)
            raise Denied(GENERIC_DENIAL, tool=found.name, request_id=request_id, rule="current",
                         reason=reason) from None
    return Facts(who, lists=lists_of(store), run=current_run(), secret=secret, **extra)


def _add_approved(policy: Policy, store: Store, args: dict[str, Any], who: Identity | None) -> list[dict[str, Any]]:
    """``[[after_approval]]``: the values of each ``add`` argument join their list, once the approved call ran;
    what was added (list, version, count), or the error (the tool has run: a failed add is recorded, not
    raised, and leaves the list as it was: a later call with that value is judged as before)."""
    done: list[dict[str, Any]] = []
    for add in policy.after_approval:
        name = list_name(add.list_name, who)
        values = [item for value, left_out, _ in leaves(args, add.add) if not left_out
                  for item in elements(value) if isinstance(item, str) and item]
        if name is None or not values:
            why = "the list name needs an identity with that field" if name is None else "nothing to add"
            done.append({"list": add.list_name if name is None else name, "added": 0, "error": why})
            continue
        try:
            snapshot = lists_of(store).add(name, *values)
        except GuardrailError as error:
            done.append({"list": name, "added": 0, "error": f"{type(error).__name__}: {error}"})
            continue
        done.append({"list": name, "version": snapshot.version, "added": len(values)})
    return done


def _remember(found: Tool, result: Any) -> None:
    """Record a tool's result in the current run (if any) as content the model read: source ``tool:<name>``,
    untrusted unless the tool says its results are trusted. A result that cannot be recorded (the application
    recorded that source with the other trust) makes the run incomplete: provenance is not judged any more."""
    run = current_run()
    if run is not None:
        try:
            run.add(content_text(to_jsonable_python(result, fallback=str)), source=f"tool:{found.name}",
                    trusted=found.trusted_results)
        except GuardrailError:  # the source was recorded with the other trust: the tool ran, so do not raise
            run.mark_incomplete()


def _scoped_key(tool: str, who: Identity | None, key: str) -> str:
    """Keys are scoped to the tool and the caller, and hashed (any length, no collisions across tenants)."""
    return tool[:64] + ":" + hashlib.sha256(json.dumps([tool, key_of(who), key]).encode()).hexdigest()


def _result_text(result: Any) -> str:
    """A tool result as the JSON text that is stored and replayed (what the model gets back)."""
    return json.dumps(to_jsonable_python(result, fallback=str), ensure_ascii=False, allow_nan=False)


def _idempotency(found: Tool, store: Store, policy: Policy, lease: float, wait: float,
                 model: BaseModel | dict[str, Any] | None) -> Idempotency:
    """The at-most-once runner for one call of ``found`` (its reconcile hook sees the call's arguments)."""
    hook = found.reconcile

    def reconcile(unknown: IdempotencyUnknown) -> str | object | None:
        assert hook is not None and model is not None
        verdict = hook(unknown, _keywords(model))
        return verdict if verdict is None or verdict is NOT_EXECUTED else _result_text(verdict)

    return Idempotency(store, ttl=policy.idempotency_ttl, prefix=IDEMPOTENCY_PREFIX, lease=lease, wait=wait,
                       rerun_safe=found.rerun_safe, reconcile=None if hook is None else reconcile)  # type: ignore[arg-type]


def resolve(name: str, idempotency_key: str, *, result: Any = None, failed: bool = False,
            registry: ToolRegistry | None = None, store: Store | None = None) -> bool:
    """Settle a call whose outcome is unknown (:class:`~guardrail.errors.IdempotencyUnknown`) for the current
    identity: ``result=`` it took effect with this result (replayed from now on), or ``failed=True`` it took no
    effect (the next call with the key runs the tool). ``False`` if there was nothing unknown to settle."""
    found = (registry or REGISTRY).get(name)
    policy = found.policy() if found else None
    if found is None or policy is None:
        raise ConfigError(f"no tool with a policy is registered as {name!r}")
    idempotency = _idempotency(found, store or default_store(), policy, DEFAULT_LEASE, 0.0, None)
    scoped = _scoped_key(found.name, current_identity(), idempotency_key)
    return idempotency.resolve(scoped, result=None if failed else _result_text(result), failed=failed,
                               label=idempotency_key)


class _LimitReached(NothingHappened):
    """Internal: a rate limit, quota or spend budget stopped the execution (``rule`` names it). The tool did not
    run, so the idempotency key is released (a later call with it may run once the limit allows)."""

    def __init__(self, rule: str) -> None:
        super().__init__(rule)
        self.rule = rule


def _validated(found: Tool, arguments: Mapping[str, Any] | str, request_id: str, who: Identity | None,
               secret: frozenset[str], version: str,
               key: str | None) -> tuple[BaseModel | dict[str, Any], dict[str, Any]]:
    """The validated argument model, and its canonical JSON-like form that policies judge and hashes cover
    (raw text goes through the parse layer's repairs; sets are sorted so equal sets hash equally)."""
    try:
        text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments), default=str)
    except (RecursionError, ValueError, TypeError):
        error: ParseError = InputLimitError("The arguments are nested too deeply or are not JSON values.",
                                            limit="max_depth", value=0)
    else:
        try:
            model = parse(text, found.arguments)
        except ParseError as failed:
            error = failed
        else:
            return model, _canonical(model)
    audit.record(request_id=request_id, tool=found.name, decision="invalid", rule="arguments",
                 reason=error.feedback, identity=who, secret_args=secret, policy_version=version,
                 idempotency_key=key)
    raise error


def _left_out(found: Tool, policy: Policy, model: BaseModel | dict[str, Any], args: dict[str, Any]
              ) -> tuple[BaseModel | dict[str, Any], dict[str, Any], frozenset[Location]]:
    """The locations of what the model left out (:mod:`guardrail.tools.presence`), with the model and its
    canonical form; for a tool declared by JSON Schema, the schema's defaults filled in where a rule of the
    policy says ``check_default`` (the tool then receives the default that was judged)."""
    if not isinstance(found.arguments, dict):
        assert isinstance(model, BaseModel)
        return model, args, model_left_out(model)
    assert isinstance(model, dict)
    filled, omitted = schema_left_out(model, found.arguments, policy.default_checked_paths())
    return (model, args, omitted) if filled is model else (filled, _canonical(filled), omitted)


def _checked_model(found: Tool, model: BaseModel | dict[str, Any], args: dict[str, Any],
                   checked: dict[str, Any]) -> BaseModel | dict[str, Any] | None:
    """The argument model holding the checked values (the resolved path, the normalised URL), or ``None`` when
    the parameter types would turn them into something else than what was checked. Unchanged parameters keep
    their validated objects (a ``SecretStr`` stays unmasked)."""
    if checked == args:
        return model
    declared = found.arguments
    if isinstance(model, dict) or isinstance(declared, dict):  # declared by JSON Schema: checked values must fit it
        from guardrail.contract import compile_contract

        try:
            compile_contract(declared).validate_decoded(checked)
        except GuardrailError:
            return None
        return dict(checked)
    values = {name: getattr(model, name) for name in type(model).model_fields}
    values.update({name: checked[name] for name in values if checked.get(name) != args.get(name)})
    try:
        rebuilt = declared.model_validate(values)
    except ValidationError:
        return None
    return rebuilt if _canonical(rebuilt) == checked else None


def _canonical(value: Any, depth: int = 0) -> Any:
    """JSON-like form with sets sorted (by their items' JSON), models as dicts of their fields."""
    if depth > 200:
        raise InputLimitError("The arguments are nested too deeply.", limit="max_depth", value=200)
    if isinstance(value, BaseModel):
        return {name: _canonical(getattr(value, name), depth + 1) for name in type(value).model_fields}
    if isinstance(value, dict):
        return {str(k): _canonical(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [_canonical(v, depth + 1) for v in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))
    return to_jsonable_python(value, fallback=str)


def _recorder(request_id: str, tool: str, args: dict[str, Any], who: Identity | None, decision: Decision,
              secret: frozenset[str], given_key: str | None, omitted: list[str]) -> Callable[..., None]:
    def write(outcome: str, *, rule: str | None = None, reason: str | None = None, result: Any = None,
              error: BaseException | None = None, key: str | None = None,
              added: list[dict[str, Any]] | None = None) -> None:
        audit.record(request_id=request_id, tool=tool, decision=outcome, rule=rule or decision.rule,
                     reason=reason or decision.reason, arguments=args, identity=who,
                     policy_version=decision.policy_version, idempotency_key=key or given_key, result=result,
                     error=error, secret_args=secret, omitted=omitted,
                     lists=[*decision.lists, *(added or [])], provenance=list(decision.provenance))
    return write


def _over_limits(policy: Policy, store: Store, tool: str, args: dict[str, Any], who: Identity | None,
                 fn: Callable[..., Any]) -> str | None:
    """The limit a call would pass (``limits.rate``/``quota``/``spend``), else ``None`` (counting the call).

    The spend counts what the tool receives: the amount sent, or the default of an amount the model left out
    (for a tool declared by JSON Schema, the function's own default); a default that is not a number (``None``)
    or no default at all is refused, never counted as nothing.

    Every counter of the call is updated in one atomic step (:meth:`Store.add_within_limits`): a call refused by
    one limit consumes none of the others. Spend is exact: amounts and budgets are :class:`~decimal.Decimal` (a
    float amount by its shortest repr, so ``0.1`` counts as exactly one tenth). The keys share one Redis hash tag.
    """
    tag = "{" + hashlib.sha256(json.dumps([tool, key_of(who)]).encode()).hexdigest()[:32] + "}"
    limits = policy.limits
    counters: list[tuple[str, Counter]] = []
    for label, rate in (("rate", limits.rate), ("quota", limits.quota)):
        if rate is not None:
            counters.append((f"limits.{label}", Counter(f"limits:{tag}:{label}", Decimal(1), Decimal(rate.calls),
                                                        rate.per_seconds)))
    if limits.spend is not None:
        name = limits.spend.arg
        amount = args[name] if name in args else _signature_default(fn, name)
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or amount < 0 \
                or (isinstance(amount, float) and not math.isfinite(amount)):
            return "limits.spend"
        exact = Decimal(amount) if isinstance(amount, int) else Decimal(repr(amount))
        counters.append(("limits.spend", Counter(f"limits:{tag}:spend", exact,
                                                 Decimal(repr(limits.spend.max)), limits.spend.per_seconds)))
    if not counters:
        return None
    over = store.add_within_limits([counter for _, counter in counters])
    return None if over is None else counters[over][0]


def _signature_default(fn: Callable[..., Any], name: str) -> Any:
    """The default ``fn`` gives its parameter ``name`` when it is not passed, else ``None``."""
    try:
        parameter = inspect.signature(fn).parameters.get(name)
    except (TypeError, ValueError):  # a callable without a signature
        return None
    return None if parameter is None or parameter.default is parameter.empty else parameter.default


def run_sealed(found: Tool, model: BaseModel | dict[str, Any], args: dict[str, Any],
               decision: Decision) -> Any:
    """Call the tool function with the validated values; only with a sealed positive decision made for exactly
    these arguments (``args`` is the canonical form of ``model`` that the policy judged)."""
    if not decision.permits(found.name, args) or _canonical(model) != args:
        raise Denied(GENERIC_DENIAL, tool=found.name, request_id="", rule="unsealed",
                     reason="no positive decision for exactly these arguments")
    return found.fn(**_keywords(model))


def _keywords(model: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """The validated arguments by name: a model's fields, or the JSON values of a tool declared by JSON Schema."""
    if isinstance(model, dict):
        return dict(model)
    return {name: getattr(model, name) for name in type(model).model_fields}


def approve(token: str, *, approver: str, store: Store | None = None) -> bool:
    """Approve a parked call (the person's decision, made outside the model); False if not pending/expired."""
    return approvals.decide(store or default_store(), token, approver=approver)


def reject(token: str, *, approver: str, store: Store | None = None) -> bool:
    """Reject a parked call; the token can then never run anything."""
    return approvals.decide(store or default_store(), token, approver=approver, reject=True)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call from a vendor response, after :func:`execute_tool_calls`: its result or its error, and
    whether the tool ran (``replayed``: an idempotent replay answered instead)."""

    name: str
    call_id: str | None
    arguments: str
    result: Any = None
    error: BaseException | None = None
    replayed: bool = False

    @property
    def ran(self) -> bool:
        """Whether the tool function ran for this call (not on an error, not on a replay)."""
        return self.error is None and not self.replayed


def execute_tool_calls(response: Any, *, registry: ToolRegistry | None = None, store: Store | None = None,
                       request_id: str | None = None) -> list[ToolOutcome]:
    """Run every tool call in a vendor response through :func:`execute_tool_call` (each call on its own: one
    denial does not stop the others). Errors are returned, not raised, so the application can answer the model
    for each call (a denial's message is generic and fit to send back)."""
    outcomes = []
    for call in tool_calls_of(response):
        name, arguments, call_id = call.name, call.arguments, call.id
        try:
            done = run_tool_call(name, arguments, registry=registry, store=store, request_id=request_id)
        except Exception as error:  # one call's failure never stops the others; the caller sees each
            outcomes.append(ToolOutcome(name, call_id, arguments, error=error))
            continue
        outcomes.append(ToolOutcome(name, call_id, arguments, result=done.value, replayed=done.replayed))
    return outcomes
