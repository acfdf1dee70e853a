"""Modes (how output format is enforced) and their choice from a vendor's capabilities.

Vendor and mode are separate axes: an adapter knows a wire format, a mode is a strategy. From strongest to
weakest:

=========  =====================================================================================
native     the vendor's own strict JSON-schema output (OpenAI ``response_format``/``text.format``,
           Anthropic ``output_config.format``; on self-hosted servers their constrained decoding)
tool       one tool whose input schema is the contract, forced with ``tool_choice``; ``strict`` where
           the vendor offers it and the schema can be expressed, else advisory
json       the vendor's JSON mode plus the schema in the prompt
prompt     the schema in the prompt; the parse layer does the rest
=========  =====================================================================================

:func:`plans` lowers the contract's schema for each mode the capability profile allows and drops a mode
whose lowering is rejected (a construct the mode cannot express), so the first plan is the strongest one
that can carry the contract. A 400 for the schema at run time moves the call to the next plan.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal, get_args

from guardrail.errors import ConfigError
from guardrail.schema.lower import CompileReport, Dialect, Lowered, lower

Mode = Literal["native", "tool", "json", "prompt"]
MODES: tuple[Mode, ...] = get_args(Mode)
ServerKind = Literal["vllm", "sglang", "llamacpp", "ollama"]
SERVER_KINDS: tuple[ServerKind, ...] = get_args(ServerKind)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What one vendor's model family supports, strongest mode first.

    ``native_dialect`` is the schema subset its native mode accepts; ``strict_tool`` whether tools take
    ``strict: true`` (same subset); ``temperature`` whether the model accepts a temperature at all
    (reasoning models do not, so repair attempts cannot lower it).
    """

    native: bool
    tool: bool
    strict_tool: bool
    json_mode: bool
    native_dialect: Dialect
    temperature: bool = True


#: (provider, model-name pattern, capabilities): the first pattern that matches the model wins.
PROFILES: tuple[tuple[str, str, Capabilities], ...] = (
    ("openai", r"(gpt-3\.5|gpt-4-|gpt-4$|gpt-4-turbo)", Capabilities(False, True, False, True, "openai_strict")),
    ("openai", r"(o1|o3|o4|gpt-5)", Capabilities(True, True, True, True, "openai_strict", temperature=False)),
    ("openai", r".*", Capabilities(True, True, True, True, "openai_strict")),
    # anthropic 2.x's messages.create takes no sampling parameters, so repairs cannot lower a temperature.
    ("anthropic", r"claude-(instant|2|3)", Capabilities(False, True, False, False, "anthropic_strict",
                                                       temperature=False)),
    ("anthropic", r".*", Capabilities(True, True, True, False, "anthropic_strict", temperature=False)),
    # Self-hosted servers: constrained decoding compiled from (nearly) full JSON Schema.
    ("vllm", r".*", Capabilities(True, True, False, True, "grammar")),
    ("sglang", r".*", Capabilities(True, True, False, True, "grammar")),
    ("llamacpp", r".*", Capabilities(True, False, False, True, "grammar")),
    ("ollama", r".*", Capabilities(True, True, False, True, "grammar")),
)


@functools.lru_cache(maxsize=1024)
def capabilities(provider: str, model: str) -> Capabilities:
    """The capability profile for ``model`` at ``provider`` (unknown models get the provider's newest).

    Cached: it matches the model name against every profile's pattern, and a program uses a few models."""
    for name, pattern, caps in PROFILES:
        if name == provider and re.match(pattern, model or ""):
            return caps
    return Capabilities(False, False, False, False, "advisory")


@dataclass(frozen=True, slots=True)
class Plan:
    """One way to ask for the contract: the mode, the schema to send and what it leaves to guardrail.

    ``wrapped`` is the key a non-object root was wrapped under (the answer is unwrapped before parsing);
    ``absent_as_null`` means optional fields were sent as required-and-nullable, so a null for a field that
    does not admit null means "absent". ``name`` is the schema/tool name sent to the vendor.
    """

    mode: Mode
    strict: bool
    schema: dict[str, Any]
    report: CompileReport
    wrapped: str | None
    absent_as_null: bool
    name: str


def plans(schema: dict[str, Any], name: str, caps: Capabilities, *, forced: Mode | None = None,
          thinking: bool = False) -> list[Plan]:
    """The plans to try, strongest first; ``forced`` keeps only that mode (and raises if it cannot be used).

    Plans depend only on the arguments, and lowering a large schema costs milliseconds, so they are cached
    (see :class:`_PlanCache`): a call with the same contract, vendor profile and mode pays a dictionary lookup.
    """
    if forced is not None and forced not in MODES:
        raise ConfigError(f"unknown mode {forced!r}; expected one of {', '.join(MODES)}")
    key = (id(schema), name, caps, forced, thinking)
    cached = _PLANS.get(key, schema)
    if cached is None:
        out: list[Plan] = []
        for mode in (forced,) if forced else MODES:
            plan = _plan(mode, schema, name, caps, thinking)
            if plan is not None:
                out.append(plan)
        cached = tuple(out)
        _PLANS.put(key, schema, cached)
    if not cached:
        raise ConfigError(f"mode {forced!r} is not available for this vendor/model and contract")
    return list(cached)


class _PlanCache:
    """A bounded LRU of plans keyed by the schema's identity (plus the other arguments).

    Keying by identity avoids serialising the schema on every call. It is safe because each entry holds the
    schema itself, so its ``id`` cannot be reused by another object while the entry lives, and the schemas
    passed here are a compiled contract's, which are never mutated. The plans' schemas are shared between
    calls and must not be mutated either (the vendor adapters only read them).
    """

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[Any, ...], tuple[dict[str, Any], tuple[Plan, ...]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], schema: dict[str, Any]) -> tuple[Plan, ...] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] is not schema:
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: tuple[Any, ...], schema: dict[str, Any], value: tuple[Plan, ...]) -> None:
        with self._lock:
            self._entries[key] = (schema, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


_PLANS = _PlanCache()


def _plan(mode: Mode, schema: dict[str, Any], name: str, caps: Capabilities, thinking: bool) -> Plan | None:
    if mode == "native":
        return _make(mode, True, lower(schema, caps.native_dialect), name) if caps.native else None
    if mode == "tool":
        if not caps.tool or thinking:
            return None  # Anthropic rejects a forced tool with extended thinking
        if caps.strict_tool:
            strict = lower(schema, caps.native_dialect)
            if strict.report.ok:
                return _make(mode, True, strict, name)
        return _make(mode, False, lower(schema, "advisory", wrap_root=True), name)
    if mode == "json":
        return _make(mode, False, lower(schema, "advisory", wrap_root=True), name) if caps.json_mode else None
    return _make(mode, False, lower(schema, "advisory"), name)


def _make(mode: Mode, strict: bool, lowered: Lowered, name: str) -> Plan | None:
    if not lowered.report.ok:
        return None
    return Plan(mode, strict, lowered.schema, lowered.report, lowered.wrapped, lowered.absent_as_null, name)


_NAME_BAD = re.compile(r"[^a-zA-Z0-9_-]+")


def schema_name(output_type: Any) -> str:
    """A vendor-safe schema/tool name (``[a-zA-Z0-9_-]{1,64}``) for the output type."""
    raw = getattr(output_type, "__name__", None) or str(output_type)
    cleaned = _NAME_BAD.sub("_", raw).strip("_")[:64]
    return cleaned or "output"
