"""JSON Schema utilities: walking a contract's schema (view) and lowering it to each vendor's subset (lower).

Public here: JSON Schema documents as contracts (:class:`JsonSchema`), the result of lowering a schema to a
vendor's subset (:class:`Lowered`) and what lowering did (:class:`CompileReport`, :class:`CompileEntry`). The
function itself is ``guardrail.schema.lower.lower``: a package attribute named ``lower`` would be shadowed by the
submodule of that name. Names load on first use; the other modules are the machinery behind them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.schema.jsonschema_contract import JsonSchema
    from guardrail.schema.lower import Lowered
    from guardrail.schema.report import CompileEntry, CompileReport

_NAMES: dict[str, str] = {
    "CompileEntry": "guardrail.schema.report",
    "CompileReport": "guardrail.schema.report",
    "JsonSchema": "guardrail.schema.jsonschema_contract",
    "Lowered": "guardrail.schema.lower",
}

__all__ = [
    "CompileEntry",
    "CompileReport",
    "JsonSchema",
    "Lowered",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
