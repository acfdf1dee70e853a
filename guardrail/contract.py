"""The contract: the output type a model must produce, compiled once for validation and schema walking.

A contract is any type ``pydantic.TypeAdapter`` accepts: a ``BaseModel`` subclass, a dataclass, a
``TypedDict``, ``list[Segment]``, ``Literal[...]``, ``int``. Compiling builds the validator, the JSON
Schema the repair stages walk, and a stable hash of that schema (what caches and audit records key on).
Compiled contracts are cached per type, so calling ``guardrail.parse`` in a loop pays this once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import TypeAdapter

from guardrail.schema.view import Schema, SchemaView

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Contract(Generic[T]):
    """A compiled output type.

    Attributes:
        output_type: the type given by the caller.
        adapter: the pydantic ``TypeAdapter`` that validates it.
        schema: its JSON Schema (validation mode); empty when pydantic cannot express the type.
        schema_hash: SHA-256 of the canonical JSON of ``schema``.
    """

    output_type: Any
    adapter: TypeAdapter[T]
    schema: Schema
    schema_hash: str
    view: SchemaView
    #: Whether a float can appear anywhere in a value (a ``number`` or unconstrained schema). Only then can
    #: pydantic accept ``NaN``, ``Infinity`` or ``1e400`` as a float, so only then is text screened for them.
    holds_floats: bool = True
    #: Whether strict validation of Python values decoded from JSON gives exactly what strict validation
    #: of the JSON text gives (only JSON-native types: no enums, dates, UUIDs, tuples, dataclasses...).
    #: Then an already-decoded value can be validated without encoding it back to JSON.
    python_equivalent: bool = False
    #: Whether some mapping in the contract is keyed by floats or Decimals, where a key like ``"NaN"``
    #: would become a non-finite number (the JSON Schema cannot say this; the core schema can).
    float_keys: bool = False

    def validate_json(self, payload: str, *, forbid_extra: bool = False) -> T:
        """Validate JSON text strictly: only JSON's own types, no lax conversions (those are ours to make).

        ``forbid_extra`` rejects unknown keys regardless of the model's config, which the fast path uses
        to be sure no drifted field name was silently dropped.
        """
        # The core validator directly: TypeAdapter.validate_json adds call overhead that shows on the fast path.
        validator = self.adapter.validator
        if forbid_extra:
            result: T = validator.validate_json(payload, strict=True, extra="forbid")
        else:
            result = validator.validate_json(payload, strict=True)
        return result

    def validate_decoded(self, data: Any) -> T:
        """Validate a value decoded from JSON as :meth:`validate_json` would validate its JSON text.

        Strict, with unknown keys forbidden. Where :attr:`python_equivalent` holds it validates the
        Python value directly (no re-encoding); otherwise it encodes to JSON first. The direct route
        assumes what JSON text cannot carry is absent - lone surrogates, numbers beyond float range,
        NaN/Infinity markers - which the parse stages check with ``lexicon.may_hold_*`` before using it.
        """
        if not self.python_equivalent:
            return self.validate_json(json.dumps(data, ensure_ascii=True, allow_nan=False), forbid_extra=True)
        result: T = self.adapter.validator.validate_python(data, strict=True, extra="forbid")
        return result


_CACHE: dict[Any, Contract[Any]] = {}
_CACHE_SIZE = 512


def compile_contract(output_type: Any) -> Contract[Any]:
    """Compile (or fetch from the cache) the contract for ``output_type``.

    A plain dict, not ``lru_cache``: the lookup sits on the clean-JSON fast path. When it holds
    ``_CACHE_SIZE`` types the oldest entry is dropped.
    """
    try:
        return _CACHE[output_type]
    except KeyError:
        contract = _compile(output_type)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE), None), None)  # another thread may have evicted it already
        _CACHE[output_type] = contract
        return contract
    except TypeError:  # unhashable type expression: compile without caching
        return _compile(output_type)


def _compile(output_type: Any) -> Contract[Any]:
    adapter: TypeAdapter[Any] = TypeAdapter(output_type)
    try:
        schema: Schema = adapter.json_schema()
    except Exception:  # pydantic cannot express some types (callables, arbitrary classes) as JSON Schema
        schema = {}
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    float_keys = _float_keys(adapter.core_schema)
    return Contract(output_type, adapter, schema, digest, SchemaView(schema), _holds_floats(schema) or float_keys,
                    _python_equivalent(adapter.core_schema), float_keys)


def _float_keys(core_schema: Any) -> bool:
    pending: list[Any] = [core_schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if node.get("type") == "dict" and node.get("keys_schema", {}).get("type") in ("float", "decimal"):
                return True
            pending.extend(v for k, v in node.items() if k not in ("serialization", "metadata"))
        elif isinstance(node, (list, tuple)):
            pending.extend(node)
    return False


#: Core-schema node types whose strict Python validation of JSON-decoded values matches strict JSON
#: validation. Anything else (enum, datetime, uuid, decimal, tuple, set, bytes, dataclass, url, ...)
#: accepts a string or list in JSON but wants a real instance in strict Python mode.
_JSON_NATIVE = frozenset({
    "any", "none", "bool", "int", "float", "str", "list", "dict", "nullable", "default", "union", "tagged-union",
    "model", "model-fields", "model-field", "typed-dict", "typed-dict-field", "computed-field", "definitions",
    "definition-ref", "function-after", "function-before", "function-wrap", "function-plain", "literal",
})


def _python_equivalent(core_schema: Any) -> bool:
    pending: list[Any] = [core_schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            kind = node.get("type")
            if isinstance(kind, str):
                if kind not in _JSON_NATIVE:
                    return False
                if kind == "dict" and node.get("keys_schema", {}).get("type", "str") not in ("str", "any"):
                    return False  # JSON keys are strings; strict Python validation will not convert them
                if kind == "literal" and not all(
                        v is None or type(v) in (str, int, bool)
                        for v in node.get("expected", ())):
                    return False
            pending.extend(v for k, v in node.items() if k not in ("serialization", "metadata"))
        elif isinstance(node, (list, tuple)):
            pending.extend(node)
    return True


def _holds_floats(schema: Schema) -> bool:
    """True if any subschema admits numbers or anything at all (conservative: unknown means yes)."""
    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if node is True or node == {}:
            return True  # an unconstrained value (Any) may hold a float
        if not isinstance(node, dict):
            continue
        declared = node.get("type")
        types = {declared} if isinstance(declared, str) else set(declared or ())
        if "number" in types:
            return True
        if not types and not any(key in node for key in _SHAPING_KEYS):
            return True
        for key in ("items", "additionalProperties", "contains"):
            if isinstance(node.get(key), (dict, bool)):
                pending.append(node[key])
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            pending.extend(node.get(key) or ())
        for key in ("properties", "$defs", "definitions", "patternProperties"):
            pending.extend((node.get(key) or {}).values())
    return False


_SHAPING_KEYS = ("$ref", "anyOf", "oneOf", "allOf", "enum", "const", "properties", "items", "prefixItems")
