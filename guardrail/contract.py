"""The contract: the output type a model must produce, compiled once for validation and schema walking.

A contract is any type ``pydantic.TypeAdapter`` accepts: a ``BaseModel`` subclass, a dataclass, a
``TypedDict``, ``list[Segment]``, ``Literal[...]``, ``int``; or a JSON Schema document (a ``dict``),
which compiles to a :class:`~guardrail.schema.jsonschema_contract.JsonSchemaContract` (same interface).
Compiling builds the validator, the JSON Schema the repair stages walk, and a stable hash of that schema
(what caches and audit records key on).
Compiled contracts are cached per type, so calling ``guardrail.parse`` in a loop pays this once.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Protocol, TypeVar

from pydantic import PydanticUserError, TypeAdapter
from pydantic_core import SchemaValidator

from guardrail.schema.view import Schema, SchemaView

__all__ = [
    "VALIDATION_CONTEXT",
    "Contract",
    "ExactValidator",
    "compile_contract",
    "validation_context",
]

T = TypeVar("T")

#: What pydantic validators see as ``ValidationInfo.context`` while guardrail validates: the ``context=`` of
#: the call whose answer is being parsed (set by the attempt loop with :func:`validation_context`), else
#: ``None``. Every strict validation (these methods, the parse fast paths, the stages) passes it on.
VALIDATION_CONTEXT: ContextVar[Any] = ContextVar("guardrail_validation_context", default=None)


class validation_context:
    """Within the block, pydantic validators run by guardrail see ``context`` as ``info.context``.

    A class rather than a generator context manager: every answer the attempt loop reads enters one."""

    __slots__ = ("_context", "_token")

    def __init__(self, context: Any) -> None:
        self._context = context

    def __enter__(self) -> None:
        self._token = VALIDATION_CONTEXT.set(self._context)

    def __exit__(self, *exc: object) -> None:
        VALIDATION_CONTEXT.reset(self._token)


class ExactValidator(Protocol):
    """What the fast paths call for an exact check: pydantic's ``SchemaValidator``, or a JSON Schema
    contract's validator. Both raise a ``ValueError`` for anything not exactly valid."""

    def validate_json(self, input: str | bytes, *, strict: bool | None = ..., extra: Any = ...,
                      context: Any = ...) -> Any: ...

    def validate_python(self, input: Any, *, strict: bool | None = ..., extra: Any = ...,
                        context: Any = ...) -> Any: ...


class _NotExact:
    """The type of :data:`NOT_EXACT`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_EXACT"


#: What :attr:`Contract.text_check` returns for text that is not exactly valid (the stages decide it).
NOT_EXACT: Final[Any] = _NotExact()


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
    #: A copy of the adapter's validator whose float slots refuse NaN and infinity (built by
    #: :func:`_finite_variant` where every other slot is known to refuse them too), or ``None``. With it
    #: no text needs screening for ``NaN``/``Infinity``/``1e400`` before an exact check: pydantic itself
    #: refuses them there, and the stages judge them against the contract.
    finite_validator: SchemaValidator | None = None
    #: What JSON the root accepts: ``"{"`` (objects only: a model, a dict...), ``"["`` (arrays only), ``"{["``
    #: (either), or ``""`` when it may accept a scalar. With a non-empty value no scalar found alone in a
    #: prose segment can satisfy the contract.
    root_shapes: str = ""
    #: The deepest nesting of objects and arrays a value of the contract can have (``{"a": [1]}`` is 2);
    #: ``None`` when unbounded (``Any``, recursive models, validator functions that see raw values).
    max_nesting: int | None = None
    #: Derived in ``__post_init__``, read on every fast-path call: the validator for exact checks
    #: (:attr:`finite_validator`, else the adapter's) and whether text must be screened for NaN/infinity
    #: before one (a contract that holds floats but has no finite validator).
    exact_validator: ExactValidator = field(init=False, repr=False)
    screen_nonfinite: bool = field(init=False, repr=False)
    #: :attr:`max_nesting`, with ``sys.maxsize`` for unbounded: one comparison on the fast path.
    nesting_bound: int = field(init=False, repr=False)
    #: Whether the root accepts only objects and arrays (:attr:`root_shapes` is not empty).
    container_root: bool = field(init=False, repr=False)
    #: Whether :attr:`exact_validator` itself refuses JSON text that gives a key twice in one object, so the
    #: fast paths need no separate duplicate-key screen (``parse.dupes``). False here; a subclass may say so.
    exact_unique_keys: bool = field(init=False, repr=False)
    #: The whole exact check of JSON text in one call, where a contract has one: text in, the value or
    #: :data:`NOT_EXACT` out, with repeated keys, non-finite numbers and anything not strict JSON refused
    #: by the check itself (so no separate screen runs). ``None`` here; a subclass may provide it.
    text_check: Callable[[str], Any] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        exact = self.finite_validator or self.adapter.validator
        object.__setattr__(self, "exact_validator", exact)
        object.__setattr__(self, "screen_nonfinite", self.holds_floats and self.finite_validator is None)
        object.__setattr__(self, "nesting_bound", sys.maxsize if self.max_nesting is None else self.max_nesting)
        object.__setattr__(self, "container_root", bool(self.root_shapes))
        object.__setattr__(self, "exact_unique_keys", False)
        object.__setattr__(self, "text_check", None)

    def validate_exact(self, payload: str) -> T:
        """Strict JSON validation with unknown keys forbidden and, with a finite validator, NaN and infinity
        refused in float slots. Raises ``ValidationError`` (a ``ValueError``) when the text is not exact."""
        result: T = self.exact_validator.validate_json(payload, strict=True, extra="forbid",
                                                       context=VALIDATION_CONTEXT.get())
        return result

    def validate_json(self, payload: str, *, forbid_extra: bool = False) -> T:
        """Validate JSON text strictly: only JSON's own types, no lax conversions (those are ours to make).

        ``forbid_extra`` rejects unknown keys regardless of the model's config, which the fast path uses
        to be sure no drifted field name was silently dropped.
        """
        # The core validator directly: TypeAdapter.validate_json adds call overhead that shows on the fast path.
        validator = self.adapter.validator
        if forbid_extra:
            result: T = validator.validate_json(payload, strict=True, extra="forbid",
                                                context=VALIDATION_CONTEXT.get())
        else:
            result = validator.validate_json(payload, strict=True, context=VALIDATION_CONTEXT.get())
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
        result: T = self.adapter.validator.validate_python(data, strict=True, extra="forbid",
                                                           context=VALIDATION_CONTEXT.get())
        return result


#: Compiled contracts by output type (``compile_contract``'s cache); read inline by the parse fast path.
CONTRACTS_BY_TYPE: dict[Any, Contract[Any]] = {}
_CACHE_SIZE = 512
#: ``guardrail.schema.jsonschema_contract.contract_for_schema``, bound on first use (that module imports this one).
_for_schema: Callable[[Any], Contract[Any]] | None = None
#: JSON Schema dicts by identity -> (the dict, its contract), filled by ``contract_for_schema``; read inline
#: here (the clean fast path). The dict is kept so its id cannot be reused while cached.
SCHEMAS_BY_IDENTITY: dict[int, tuple[Any, Contract[Any]]] = {}


def compile_contract(output_type: Any) -> Contract[Any]:
    """Compile (or fetch from the cache) the contract for ``output_type``.

    A plain dict, not ``lru_cache``: the lookup sits on the clean-JSON fast path. When it holds
    ``_CACHE_SIZE`` types the oldest entry is dropped.
    """
    if output_type.__class__ is dict:  # a JSON Schema document: unhashable, cached by identity
        entry = SCHEMAS_BY_IDENTITY.get(id(output_type))
        if entry is not None and entry[0] is output_type:
            return entry[1]
        return _json_schema_contract(output_type)
    try:
        return CONTRACTS_BY_TYPE[output_type]
    except KeyError:
        contract = _compile(output_type)
        if len(CONTRACTS_BY_TYPE) >= _CACHE_SIZE:
            CONTRACTS_BY_TYPE.pop(next(iter(CONTRACTS_BY_TYPE), None), None)  # another thread may have evicted it
        CONTRACTS_BY_TYPE[output_type] = contract
        return contract
    except TypeError:  # unhashable: another mapping given as a JSON Schema, or a type expression (not cached)
        if isinstance(output_type, Mapping):
            return _json_schema_contract(output_type)
        return _compile(output_type)


def _json_schema_contract(schema: Mapping[str, Any]) -> Contract[Any]:
    global _for_schema
    if _for_schema is None:
        from guardrail._optional import require

        require("jsonschema_rs", "jsonschema", "JSON Schema contracts")  # MissingExtra names the extra
        from guardrail.schema.jsonschema_contract import contract_for_schema
        _for_schema = contract_for_schema
    return _for_schema(schema)


def _compile(output_type: Any) -> Contract[Any]:
    # An output type that compiles itself (guardrail.schema.jsonschema_contract.JsonSchema) says so here.
    compile_self = getattr(output_type, "__guardrail_contract__", None)
    if compile_self is not None and not isinstance(output_type, type):
        compiled: Contract[Any] = compile_self()
        return compiled
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
    except (PydanticUserError, TypeError, AttributeError) as error:  # not a type pydantic can validate
        from guardrail.errors import UsageError

        raise UsageError(f"response_model must be a type pydantic validates (a model, a dataclass, list[...], "
                         f"a Literal...) or a JSON Schema dict, not {output_type!r}: {error}") from None
    try:
        schema: Schema = adapter.json_schema()
    except Exception:  # pydantic cannot express some types (callables, arbitrary classes) as JSON Schema
        schema = {}
    canonical = json.dumps(schema, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    float_keys = _float_keys(adapter.core_schema)
    holds_floats = _holds_floats(schema) or float_keys
    return Contract(output_type, adapter, schema, digest, SchemaView(schema), holds_floats,
                    _python_equivalent(adapter.core_schema), float_keys,
                    _finite_variant(adapter) if holds_floats and not float_keys else None,
                    _root_shapes(adapter.core_schema), _max_nesting(adapter.core_schema))


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


#: Core-schema node types known to refuse a NaN or infinite float from JSON, once every ``float`` node
#: refuses them (``allow_inf_nan=False``): containers and models pass values down, scalars other than
#: floats refuse a float in strict mode, ``function-after`` runs only on what its inner schema accepted.
#: Not here (so the text is screened instead): ``any``, before/wrap/plain validator functions (they see
#: the raw value), decimals, dates and times, and anything else.
_FINITE_SAFE = frozenset({
    "none", "bool", "int", "float", "str", "list", "set", "frozenset", "tuple", "dict", "nullable", "default",
    "union", "tagged-union", "model", "model-fields", "model-field", "typed-dict", "typed-dict-field",
    "computed-field", "definitions", "definition-ref", "function-after", "literal", "enum",
})


def _finite_variant(adapter: TypeAdapter[Any]) -> SchemaValidator | None:
    """A validator for the same schema whose ``float`` nodes refuse NaN and infinity, or ``None``.

    ``None`` when some node could accept a non-finite float some other way (see ``_FINITE_SAFE``), or
    when the adapter's validator is not a plain ``SchemaValidator`` (a pydantic plugin wraps it).
    """
    validator = adapter.validator
    if type(validator) is not SchemaValidator:
        return None
    try:
        reduced: Any = validator.__reduce__()
        schema, config = reduced[1][0], reduced[1][1]  # (schema, config, ...): how the validator was built
    except Exception:  # pragma: no cover - a pydantic-core without this pickling support
        return None
    try:
        finite = _finite_copy(schema)
    except RecursionError:  # pragma: no cover - a schema nested deeper than Python's stack
        return None
    if finite is _UNSAFE:
        return None
    try:
        # Without the prebuilt validators of nested models, which would keep their own float checks.
        return SchemaValidator(finite, config, _use_prebuilt=False)
    except Exception:  # pragma: no cover - a schema pydantic-core will not rebuild: keep screening
        return None


class _Unsafe:
    """Marker: a core-schema node that could accept a non-finite float without a ``float`` node deciding."""


_UNSAFE: Final = _Unsafe()
#: Keys of a schema node that hold no schema (functions, classes, default values, members, settings).
_OPAQUE: Final = frozenset({"serialization", "metadata", "cls", "members", "expected", "default", "function",
                            "config", "ref", "missing", "default_factory", "post_init"})


def _finite_copy(node: Any) -> Any:
    """A copy of a core schema with ``allow_inf_nan=False`` on every float node, or ``_UNSAFE``.

    A dict with a string ``type`` is a schema node and must be in ``_FINITE_SAFE``; other dicts (field
    maps, tagged-union choices) and lists are walked. Only dicts, lists and tuples are copied; classes,
    functions and default values are shared, as pydantic itself does.
    """
    if isinstance(node, (list, tuple)):
        items = [_finite_copy(item) for item in node]
        return _UNSAFE if any(item is _UNSAFE for item in items) else type(node)(items)
    if not isinstance(node, dict):
        return node
    kind = node.get("type")
    is_schema = isinstance(kind, str)
    if is_schema:
        if kind not in _FINITE_SAFE:
            return _UNSAFE
        if kind == "enum" and node.get("sub_type") not in ("str", "int"):
            return _UNSAFE  # a plain Enum may have float members (infinity among them)
        if kind == "literal" and not all(v is None or type(v) in (str, int, bool) for v in node.get("expected", ())):
            return _UNSAFE
    copy: dict[str, Any] = {}
    for key, value in node.items():
        new = value if is_schema and key in _OPAQUE else _finite_copy(value)
        if new is _UNSAFE:
            return _UNSAFE
        copy[key] = new
    if kind == "float":
        copy["allow_inf_nan"] = False
    return copy


def _root_shapes(core_schema: Any) -> str:
    """What JSON the root accepts: ``"{"`` (objects only), ``"["`` (arrays only), ``"{["`` (either), or
    ``""`` when it may accept a scalar (conservative: anything unknown says so)."""
    definitions: dict[Any, Any] = {}
    if isinstance(core_schema, dict) and core_schema.get("type") == "definitions":
        definitions = {d.get("ref"): d for d in core_schema.get("definitions", ()) if isinstance(d, dict)}
        core_schema = core_schema.get("schema")
    pending, seen, shapes = [core_schema], 0, set()
    while pending:
        node = pending.pop()
        seen += 1
        if not isinstance(node, dict) or seen > 1000:
            return ""
        kind = node.get("type")
        if kind == "definition-ref":
            pending.append(definitions.get(node.get("schema_ref")))
        elif kind == "model":
            inner = node.get("schema")
            if node.get("root_model") or not isinstance(inner, dict) or inner.get("type") != "model-fields":
                return ""
            shapes.add("{")
        elif kind in ("function-after", "default"):
            pending.append(node.get("schema"))
        elif kind == "union":
            pending.extend(c[0] if isinstance(c, tuple) else c for c in node.get("choices", ()))
        elif kind == "tagged-union":
            pending.extend((node.get("choices") or {}).values())
        elif kind in ("dict", "typed-dict"):
            shapes.add("{")
        elif kind in ("list", "set", "frozenset", "tuple"):
            shapes.add("[")
        else:
            return ""
    return "".join(sorted(shapes, reverse=True))  # "{", "[" or "{["


#: Core-schema node types that accept no JSON object or array in strict JSON validation (enums and
#: literals only with plain values: an enum member's value could itself be a list).
_FLAT: Final = frozenset({"none", "bool", "int", "float", "str", "decimal", "date", "datetime", "time", "timedelta",
                          "uuid", "url", "multi-host-url", "bytes"})
#: Node types that pass their ``schema`` through; and containers, with the keys of their children.
_THROUGH: Final = frozenset({"nullable", "default", "function-after", "model-field", "typed-dict-field",
                             "dataclass-field", "model", "definitions"})
_CONTAINERS: Final = {"list": ("items_schema",), "set": ("items_schema",), "frozenset": ("items_schema",),
                      "dict": ("values_schema",), "generator": ("items_schema",)}


def _max_nesting(core_schema: Any) -> int | None:
    """The deepest object/array nesting a value of the schema can have, or ``None`` if unbounded/unknown."""
    definitions: dict[Any, Any] = {}
    if isinstance(core_schema, dict) and core_schema.get("type") == "definitions":
        definitions = {d.get("ref"): d for d in core_schema.get("definitions", ()) if isinstance(d, dict)}

    def depth(node: Any, refs: tuple[Any, ...]) -> int | None:
        if len(refs) > 64 or not isinstance(node, dict):
            return None
        kind = node.get("type")
        if kind in _FLAT:
            return 0
        if kind == "enum":
            return 0 if node.get("sub_type") in ("str", "int", "float") else None
        if kind == "literal":
            plain = all(v is None or type(v) in (str, int, bool) for v in node.get("expected", ()))
            return 0 if plain else None
        if kind == "definition-ref":
            ref = node.get("schema_ref")
            return None if ref in refs else depth(definitions.get(ref), (*refs, ref))
        if kind == "model" and not node.get("root_model") and node.get("schema", {}).get("type") != "model-fields":
            return None  # a model validator that sees the raw value
        if kind in _THROUGH:
            return depth(node.get("schema"), refs)
        children: list[Any]
        if kind in _CONTAINERS:
            children = [node.get(key) for key in _CONTAINERS[kind]]
        elif kind in ("model-fields", "typed-dict"):
            children = [f for f in (node.get("fields") or {}).values()]
            if not children:
                return 1
        elif kind == "tuple":
            children = list(node.get("items_schema") or ())
            if not children:
                return 1
        elif kind == "union":
            children = [c[0] if isinstance(c, tuple) else c for c in node.get("choices", ())]
        elif kind == "tagged-union":
            children = list((node.get("choices") or {}).values())
        else:
            return None
        depths = [depth(child, refs) for child in children]
        if any(d is None for d in depths):
            return None
        deepest = max((d for d in depths if d is not None), default=0)
        return deepest if kind in ("union", "tagged-union") else deepest + 1

    try:
        return depth(core_schema, ())
    except RecursionError:  # pragma: no cover - a schema nested deeper than Python's stack
        return None
