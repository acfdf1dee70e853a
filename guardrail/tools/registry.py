"""Tools and where they are registered: ``@guardrail.tool``, :class:`Tool`, :class:`ToolRegistry`.

A tool is a plain function with an argument contract (a pydantic model built from its signature, or the JSON
Schema it was declared with) and a policy source. The registry finds tools by exact name only; the gate
(:mod:`guardrail.tools.gate`) looks each model-proposed call up here. :func:`default_store` is the store the gate
uses when the caller names none, and :func:`lists` the allow-lists policies read from it.
"""

from __future__ import annotations

import inspect
import json
import threading
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

from pydantic import BaseModel, ConfigDict, create_model

from guardrail.call.config import get_config
from guardrail.errors import ConfigError, PolicyError, UsageError
from guardrail.gates.semantic import Rule
from guardrail.store.base import Store
from guardrail.store.idempotency import IdempotencyUnknown
from guardrail.store.lists import Lists, lists_of
from guardrail.store.memory import MemoryStore
from guardrail.tools.policy.binding import bind, bind_schema
from guardrail.tools.policy.loader import load_policy
from guardrail.tools.policy.model import Policy
from guardrail.vendors.registry import endpoint_named

__all__ = ["REGISTRY", "Tool", "ToolRegistry", "default_store", "lists", "tool"]

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
    from trusted code; model-proposed calls go through :func:`~guardrail.tools.execute.execute_tool_call`).

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
