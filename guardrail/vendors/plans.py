"""Plans: one way to ask a vendor for the contract, for each mode its capability profile allows.

Vendor and mode are separate axes: an endpoint knows a wire format, a mode is a strategy. From strongest to
weakest:

=========  =====================================================================================
native     the vendor's own strict JSON-schema output (OpenAI ``response_format``/``text.format``,
           Anthropic ``output_config.format``; on self-hosted servers their constrained decoding)
tool       one tool whose input schema is the contract, forced with ``tool_choice``; ``strict`` where
           the vendor offers it and the schema can be expressed, else advisory
json       the vendor's JSON mode plus the schema in the prompt
prompt     the schema in the prompt; the parse layer does the rest
=========  =====================================================================================

:func:`plans` lowers the contract's schema for each mode the capabilities allow and drops a mode whose
lowering is rejected (a construct the mode cannot express), so the first plan is the strongest one that can
carry the contract. A 400 for the schema at run time moves the call to the next plan.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from guardrail.errors import ConfigError
from guardrail.schema.lower import CompileReport, Lowered, lower
from guardrail.vendors.profiles import MODES, Capabilities, Mode

__all__ = ["Plan", "plans", "schema_name"]


@dataclass(frozen=True, slots=True)
class Plan:
    """One way to ask for the contract: the mode, the schema to send and what it leaves to guardrail.

    ``wrapped`` is the key a non-object root was wrapped under (the answer is unwrapped before parsing);
    ``absent_as_null`` means optional fields were sent as required-and-nullable, so a null for a field that
    does not admit null means "absent". ``name`` is the schema/tool name sent to the vendor. ``examples`` are the
    call's few-shot examples as JSON texts in this plan's shape (wrapped like the answer; :mod:`guardrail.call.examples`
    sets them per call), shown to the model with the instructions. ``constraint`` is a text constraint
    (:class:`guardrail.local.Regex`/``Grammar``) a self-hosted server decodes under instead of a schema
    (:mod:`guardrail.vendors.self_hosted_constraints`), else ``None``.
    """

    mode: Mode
    strict: bool
    schema: dict[str, Any]
    report: CompileReport
    wrapped: str | None
    absent_as_null: bool
    name: str
    examples: tuple[str, ...] = ()
    constraint: Any = None


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
