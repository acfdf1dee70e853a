"""JSON Schema documents as contracts: ``guardrail.parse(text, {"type": "object", ...})``.

Users hold contracts as JSON Schema too (MCP ``inputSchema``, OpenAPI components, schemas shared with other
languages). A schema ``dict`` is accepted wherever an output type is; values come back as plain JSON data.

- Validation is ``jsonschema-rs`` (chosen by measured speed: about 20x the pure-Python ``jsonschema`` on the
  MaskBench corpus, agreeing with it on 99.9% of instances; ``bench/bench_jsonschema.py``): Draft 2020-12 by
  default, the draft named by ``$schema`` otherwise, ``format`` asserted, no network (a ``$ref`` that leaves
  the document is refused). guardrail never judges a value itself.
- The lenient stages (fences, repairs, aliases, lossless coercion) walk the schema through
  :class:`~guardrail.schema.jsonschema_view.JsonSchemaView`, exactly as they walk a pydantic type's schema.
- A schema that cannot be honoured raises :class:`~guardrail.errors.ContractError` (keyword and JSON Pointer)
  when the contract is compiled, so before any vendor call; no ``jsonschema_rs`` exception escapes.
- :class:`JsonSchema` is the hashable form of a schema (caches, ``functools.lru_cache``) and a pydantic-
  compatible type, so a schema can also sit inside a pydantic type (a vendor-wrapped root, a rule set's
  contract): validation there goes through the same validator.

A schema ``dict`` is read when it is first used and its contract cached by the dict's identity: the hot path
never re-reads the schema. Change a schema by passing a new dict (or a new :class:`JsonSchema`), not by
mutating one already used.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any, Final, NoReturn

import jiter
from pydantic import TypeAdapter
from pydantic_core import PydanticCustomError, ValidationError, core_schema, from_json

from guardrail._optional import require
from guardrail.contract import NOT_EXACT, Contract, compile_contract
from guardrail.contract import SCHEMAS_BY_IDENTITY as _BY_IDENTITY
from guardrail.errors import ContractError
from guardrail.parse.report import json_path
from guardrail.parse.state import MAX_DEPTH
from guardrail.schema.finite import FINITE_DEF, finite_screen
from guardrail.schema.jsonschema_view import JsonSchemaView, holds_floats, root_shapes, subschemas
from guardrail.schema.view import Schema

if TYPE_CHECKING:
    import jsonschema_rs
else:  # the [jsonschema] extra: this module is imported only when a JSON Schema contract is compiled
    jsonschema_rs = require("jsonschema_rs", "jsonschema", "JSON Schema contracts")

#: At most this many violations are gathered for one value's feedback (the feedback shows 12).
_MAX_VIOLATIONS: Final = 20
_NAME_BAD: Final = re.compile(r"[^a-zA-Z0-9_-]+")


class JsonSchema:
    """A JSON Schema document as an output type: a frozen copy, hashable by its JSON.

    The copy keeps the document's key order (property order is what a vendor sees, and models answer in it),
    so the hash does too: two schemas listing the same properties in another order are different contracts.

    ``JsonSchema(schema)`` raises :class:`ContractError` for a document that is not JSON (a set, ``NaN``) or
    a schema the validator cannot honour. It can be used as a pydantic type (``TypeAdapter(JsonSchema(s))``,
    a model field): values are validated by the schema and returned as plain JSON data.
    """

    __slots__ = ("digest", "schema", "validator")

    def __init__(self, schema: Mapping[str, Any]) -> None:
        try:
            canonical = json.dumps(schema, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError, RecursionError) as error:
            raise ContractError(f"the schema is not a JSON document ({error})", keyword="", path="") from None
        self.schema: Schema = json.loads(canonical)
        self.digest = hashlib.sha256(canonical.encode()).hexdigest()
        self.validator: Any = _compile_validator(self.schema)

    @property
    def __name__(self) -> str:  # what guardrail.vendors.plans.schema_name reads for a vendor-safe schema/tool name
        title = self.schema.get("title")
        cleaned = _NAME_BAD.sub("_", title).strip("_")[:64] if isinstance(title, str) else ""
        return cleaned or "output"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonSchema) and other.digest == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"JsonSchema({self.__name__}, sha256={self.digest[:12]})"

    def __guardrail_contract__(self) -> JsonSchemaContract:
        """Called by ``compile_contract`` (which caches the result by this object's hash)."""
        return compile_json_schema(self)

    def validate(self, value: Any) -> Any:
        """``value`` as plain JSON data if the schema accepts it; else a pydantic ``ValidationError``."""
        try:
            data = _as_json(value)
        except PydanticCustomError as error:
            raise ValidationError.from_exception_data("JSON Schema", [
                {"type": error, "loc": (), "input": repr(value)[:200]}]) from None
        if _is_valid(self.validator, data):
            return data
        raise _validation_error(self.validator, data)

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(self._check,
                                                            json_schema_input_schema=core_schema.any_schema())

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        copied: dict[str, Any] = json.loads(json.dumps(self.schema))  # pydantic adds titles to what it gets
        return copied

    def _check(self, value: Any) -> Any:
        """The pydantic validator function: one custom error naming the first violation."""
        data = _as_json(value)
        if _is_valid(self.validator, data):
            return data
        first = next(iter(_violations(self.validator, data)), None)
        where = json_path(list(first["loc"]))[1:] if first else ""  # relative to this value: "[1].name"
        message = first["ctx"]["message"] if first else "does not match the JSON Schema"
        raise PydanticCustomError("json_schema", "{message}",
                                  {"message": f"at {where.lstrip('.')}: {message}" if where else message})


def _as_json(value: Any) -> Any:
    """``value`` as JSON would carry it (tuples as lists...); a pydantic error for anything JSON cannot hold."""
    try:
        return from_json(json.dumps(value, allow_nan=False), allow_inf_nan=False)
    except (TypeError, ValueError, RecursionError) as error:
        raise PydanticCustomError("json_invalid", "not a JSON value: {error}", {"error": str(error)}) from None


def _is_valid(validator: Any, data: Any) -> bool:
    try:
        return bool(validator.is_valid(data))
    except Exception:  # a value the validator cannot represent (an integer beyond its range): refused
        return False


def _screened(screen: Callable[[Any], bool] | None, data: Any) -> bool:
    """Whether ``data`` passes the finite screen (``None``: the schema needs none)."""
    try:
        return screen is None or bool(screen(data))
    except Exception:  # a value the validator cannot represent
        return False


def _violations(validator: Any, data: Any) -> list[dict[str, Any]]:
    """The validator's errors as pydantic line errors (path, message, offending value)."""
    out: list[dict[str, Any]] = []
    try:
        errors = list(islice(validator.iter_errors(data), _MAX_VIOLATIONS))
    except Exception as error:  # the validator cannot represent the value
        return [{"type": PydanticCustomError("json_schema", "{message}", {"message": str(error)}), "loc": (),
                 "input": data, "ctx": {"message": str(error)}}]
    for item in errors:
        loc = tuple(part for part in item.instance_path if isinstance(part, (str, int)))
        out.append({"type": PydanticCustomError("json_schema", "{message}", {"message": item.message}),
                    "loc": loc, "input": item.instance, "ctx": {"message": item.message}})
    return out


def _validation_error(validator: Any, data: Any) -> ValidationError:
    lines = _violations(validator, data) or [
        {"type": PydanticCustomError("json_schema", "does not match the JSON Schema"), "loc": (), "input": data}]
    return ValidationError.from_exception_data("JSON Schema", [
        {"type": line["type"], "loc": line["loc"], "input": line["input"]} for line in lines])


def _json_invalid(error: Exception) -> ValidationError:
    return ValidationError.from_exception_data("JSON Schema", [
        {"type": "json_invalid", "loc": (), "input": "", "ctx": {"error": str(error)}}])


class _Invalid(ValueError):
    """The cheap refusal of the exact check (the fast paths only need to know it failed)."""


class ExactJsonSchemaValidator:
    """What the fast paths call as ``contract.exact_validator``: strict JSON text in, plain data or ValueError.

    :attr:`check` (also the contract's ``text_check``) is the whole exact check in one closure, built once
    per contract, because on the clean path every Python call shows (the target is the validator alone fed
    by ``json.loads``):

    1. jiter (pydantic-core's JSON parser) reads the text: strict JSON only (no ``NaN``, a lone surrogate
       refused), and a key given twice in one object refused (``json`` would let the last one win
       silently). One Rust pass, so no second duplicate-key screen is needed.
    2. The schema validator's ``is_valid``; its errors are gathered only on failure, by the stages.
    3. Only for a schema with untyped slots: the finite screen (:mod:`guardrail.schema.finite`). A number
       beyond float range (``1e400``) is read as infinity; where ``type`` judges a slot the validator
       refuses it (infinity is no JSON type), elsewhere the screen does, walking only those slots. The check
       is on the value, not the text, so a valid instance is never sent to the stages (and their key
       renaming) because of how its strings look (``"123e4567"``).

    ``strict``/``extra`` are accepted for the shared call signature; JSON Schema says itself which members
    are allowed, and the value is returned whole, so nothing is dropped.
    """

    __slots__ = ("check", "screen")

    def __init__(self, validator: Any, screen: Any) -> None:
        #: The finite screen's ``is_valid`` for a schema with untyped slots, else ``None``.
        self.screen = screen
        self.check: Callable[[str], Any] = _text_check(validator.is_valid, screen)

    def validate_json(self, payload: str | bytes, *, strict: bool | None = None, extra: Any = None,
                      context: Any = None) -> Any:
        if isinstance(payload, bytes):
            payload = payload.decode("utf-8", "surrogatepass")
        value = self.check(payload)
        if value is NOT_EXACT:
            raise _Invalid
        return value

    def validate_python(self, data: Any, *, strict: bool | None = None, extra: Any = None,
                        context: Any = None) -> Any:
        try:
            payload = json.dumps(data, allow_nan=False)  # refuses infinity itself
        except (TypeError, ValueError, RecursionError):
            raise _Invalid from None
        return self.validate_json(payload)


def _text_check(is_valid: Callable[[Any], bool], screen: Callable[[Any], bool] | None) -> Callable[[str], Any]:
    """The exact check as one closure (see :class:`ExactJsonSchemaValidator`): the value or ``NOT_EXACT``."""
    loads = jiter.from_json
    if screen is None:
        def check(text: str) -> Any:
            try:  # a lone surrogate encodes to invalid UTF-8, which jiter refuses
                data = loads(text.encode("utf-8", "surrogatepass"), allow_inf_nan=False, catch_duplicate_keys=True,
                             cache_mode="keys")
                if is_valid(data):
                    return data
            except Exception:  # ValueError: not strict JSON, or a repeated key; from the validator: a value it
                pass  # cannot represent (an integer beyond its range). Either way not exact: the stages decide.
            return NOT_EXACT
        return check

    def screened(text: str) -> Any:
        try:
            data = loads(text.encode("utf-8", "surrogatepass"), allow_inf_nan=False, catch_duplicate_keys=True,
                         cache_mode="keys")
            if is_valid(data) and screen(data):
                return data
        except Exception:  # as in check() above
            pass
        return NOT_EXACT
    return screened


#: Any JSON value, with every number finite (the screen of a schema made only of untyped slots, and the
#: building block of every other screen): ``type`` refuses an infinite float, which is no JSON type.
FINITE_VALIDATOR: Final = jsonschema_rs.validator_for({"$defs": {"finite": FINITE_DEF}, "$ref": "#/$defs/finite"})


def screen_for(schema: Schema) -> Callable[[Any], bool] | None:
    """The finite screen's ``is_valid`` for the schema, or ``None`` when every slot is typed."""
    document = finite_screen(schema).document
    if document is None:
        return None
    try:
        return jsonschema_rs.validator_for(document).is_valid
    except Exception:  # pragma: no cover - a screen the validator will not compile: walk everything
        return FINITE_VALIDATOR.is_valid


@dataclass(frozen=True, eq=False)
class JsonSchemaContract(Contract[Any]):
    """A contract compiled from a JSON Schema document; ``output_type`` is its :class:`JsonSchema`.

    Every check is the schema validator's: :meth:`validate_json` raises a pydantic ``ValidationError`` whose
    errors are the validator's (path and message), so the stages report them as they report pydantic's.
    """

    validator: Any = None
    exact: ExactJsonSchemaValidator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        exact = ExactJsonSchemaValidator(self.validator, screen_for(self.schema))
        object.__setattr__(self, "exact", exact)
        object.__setattr__(self, "exact_validator", exact)
        object.__setattr__(self, "text_check", exact.check)
        object.__setattr__(self, "screen_nonfinite", False)  # the exact validator checks the value itself
        object.__setattr__(self, "exact_unique_keys", True)  # and refuses a repeated key while parsing

    def validate_exact(self, payload: str) -> Any:
        return self.exact.validate_json(payload)

    def validate_json(self, payload: str, *, forbid_extra: bool = False) -> Any:
        try:
            data = from_json(payload, allow_inf_nan=False)
        except ValueError as error:
            raise _json_invalid(error) from None
        if _is_valid(self.validator, data) and _screened(self.exact.screen, data):
            return data
        raise _validation_error(self.validator, data)

    def validate_decoded(self, data: Any) -> Any:
        try:
            payload = json.dumps(data, ensure_ascii=True, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as error:
            raise _json_invalid(error) from None
        return self.validate_json(payload)


def _compile_validator(schema: Schema) -> Any:
    """The ``jsonschema-rs`` validator for the schema's draft, ``format`` asserted, offline."""
    try:
        return jsonschema_rs.validator_for(schema, validate_formats=True, offline=True)
    except jsonschema_rs.ValidationError as error:
        _raise_contract_error(schema, list(error.instance_path), error.message)
    except Exception as error:  # ReferencingError and anything else the validator raises for a schema
        _raise_contract_error(schema, [], str(error).splitlines()[0] if str(error) else type(error).__name__)


def _raise_contract_error(schema: Schema, where: list[Any], message: str) -> NoReturn:
    """A :class:`ContractError` naming the keyword and the schema node that holds it."""
    if not where and ("meta-schema" in message or "$schema" in message):
        raise ContractError(message, keyword="$schema", path="")
    if not where:  # a reference that did not resolve: find which one the message names
        for path, ref in _refs(schema):
            if ref in message or ref.rsplit("#", 1)[-1].lstrip("/") in message:
                raise ContractError(message, keyword="$ref", path=_pointer(path))
        raise ContractError(message, keyword="$ref" if "$ref" in json.dumps(schema) else "", path="")
    node_path, keyword = _split_keyword(schema, where)
    raise ContractError(message, keyword=keyword, path=_pointer(node_path))


def _split_keyword(schema: Schema, where: list[Any]) -> tuple[list[Any], str]:
    """Walk a path into the schema document: the deepest schema node on it, and the keyword under it."""
    node: Any = schema
    node_path: list[Any] = []
    index = 0
    while index < len(where) and isinstance(node, dict):
        keyword = where[index]
        rest = where[index + 1 :]
        child_paths = {path: child for path, child in subschemas(node)}
        step = next((path for path in child_paths if list(path) == [keyword, *rest[: len(path) - 1]]), None)
        if step is None or (len(where) == index + len(step) and not isinstance(child_paths[step], dict)):
            return node_path, str(keyword)
        node = child_paths[step]
        node_path += list(step)
        index += len(step)
    return node_path[:-1] if node_path else [], str(node_path[-1]) if node_path else ""


def _refs(schema: Schema) -> list[tuple[list[Any], str]]:
    found: list[tuple[list[Any], str]] = []
    pending: list[tuple[Any, list[Any]]] = [(schema, [])]
    while pending:
        node, path = pending.pop()
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                found.append((path, node["$ref"]))
            pending.extend((child, [*path, *step]) for step, child in subschemas(node))
    return sorted(found, key=lambda item: len(item[0]))


def _pointer(path: list[Any]) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def compile_json_schema(source: JsonSchema) -> JsonSchemaContract:
    """Compile the contract for a :class:`JsonSchema` (``compile_contract`` calls this and caches it)."""
    view = JsonSchemaView(source.schema)
    floats = holds_floats(source.schema)
    adapter: TypeAdapter[Any] = TypeAdapter(source)  # type: ignore[arg-type]  # a pydantic-compatible instance
    # The screen also bounds nesting where it can (guardrail.schema.finite): then no bracket count is needed.
    bounded = finite_screen(source.schema).bounded
    return JsonSchemaContract(source, adapter, source.schema, source.digest, view, floats, False, False, None,
                              root_shapes(view), MAX_DEPTH if bounded else None, validator=source.validator)


_IDENTITY_CACHE_SIZE: Final = 512


def contract_for_schema(schema: Mapping[str, Any]) -> Contract[Any]:
    """The contract for a schema mapping, cached by the mapping's identity (see the module docstring)."""
    entry = _BY_IDENTITY.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1]
    contract = compile_contract(JsonSchema(schema))
    if len(_BY_IDENTITY) >= _IDENTITY_CACHE_SIZE:
        _BY_IDENTITY.pop(next(iter(_BY_IDENTITY), 0), None)
    _BY_IDENTITY[id(schema)] = (schema, contract)
    return contract


def as_output_type(output_type: Any) -> Any:
    """A schema mapping as its hashable :class:`JsonSchema`; any other output type unchanged."""
    if isinstance(output_type, Mapping):
        return contract_for_schema(output_type).output_type
    return output_type
