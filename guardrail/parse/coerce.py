"""Lossless coercion toward the contract: only where the contract asks for it and nothing can change meaning.

Made (each recorded as a :class:`Fix`):

- ``"4.2"`` -> 4.2 where a number is expected; ``"5"`` -> 5 and ``4.0`` -> 4 where an integer is;
- ``"true"``/``"false"`` -> booleans;
- a single object where a list of such objects is expected -> a one-element list;
- ``"sub-1,sub-2"`` -> ``["sub-1", "sub-2"]`` where a list of strings is expected (never padded);
- a JSON array or object encoded inside a string, where that array or object is expected;
- enum case, accent and surrounding-space folding (``"Billing "`` -> ``"billing"``, ``"cafe"`` -> ``"café"``)
  when exactly one member matches;
- ``NaN``/``Infinity`` -> null, only where the contract allows null (otherwise a violation).

Refused, left for validation to report: ``"4/5"``, ``"high (4)"``, ``"3-4"``, ``"1,234"``, ``"N/A"``, 4.5
for an integer, ``true`` for an integer, and a label in another language for an enum.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from guardrail.parse.aliases import normalize
from guardrail.parse.lexicon import INTEGER_RE, NUMBER_RE
from guardrail.parse.report import Fix, Violation, json_path
from guardrail.parse.scalars import fold
from guardrail.parse.scanner import scan
from guardrail.parse.tokens import BareWord, NonFinite
from guardrail.schema.view import Schema, SchemaView

_INTEGER: Final = INTEGER_RE
_NUMBER: Final = NUMBER_RE


@dataclass(slots=True)
class CoerceContext:
    """What a coercion walk records: fixes made, violations found, and the depth budget it has."""

    view: SchemaView
    max_depth: int
    aliases: Mapping[str, str]
    fixes: list[Fix] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    #: The text may hold numbers beyond float range (``may_hold_nonfinite``): integers are checked too.
    big_numbers: bool = False
    #: The contract has mappings keyed by floats or Decimals: their keys are checked too.
    float_keys: bool = False
    #: Unquoted member values (``BareWord``) no single string reading explains: the value broke there.
    unresolved: list[BareWord] = field(default_factory=list)
    #: The text the value was read from (for what the decoded value no longer shows: a ``-0``).
    source: str = ""


def coerce(value: Any, schema: Schema, ctx: CoerceContext, path: list[str | int]) -> Any:
    """Return ``value`` coerced toward ``schema`` where that is lossless; record what changed."""
    view = ctx.view
    if value.__class__ is BareWord:
        return _bare_word(value, schema, ctx, path)
    if isinstance(value, NonFinite):
        if view.allows_null(schema):
            ctx.fixes.append(Fix("nonfinite_to_null", tuple(path), value.literal, None))
        else:
            ctx.violations.append(Violation(
                json_path(path), f"{value.literal} is not a valid JSON number; a finite number is expected"))
        return None
    node = view.pick(schema, value)
    if node is None:
        return _descend(value, None, ctx, path)
    if not view.admits(node, value):
        converted = _convert(value, node, ctx, path)
        if converted is _REFUSED:
            return _descend(value, None, ctx, path)
        if isinstance(converted, (dict, list)):  # new containers (wrapped, decoded) need their names fixed too
            converted = normalize(converted, node, view, ctx.aliases, ctx.fixes, path)
        value = converted
    elif isinstance(value, str) and ("enum" in node or "const" in node):
        value = _fold_enum(value, node, ctx, path)
    elif value.__class__ is int and ctx.big_numbers and _beyond_float(value, view.types(node)):
        ctx.violations.append(Violation(
            json_path(path), "the number is too large for a floating-point number; a finite number is expected"))
    return _descend(value, node, ctx, path)


def _bare_word(value: BareWord, schema: Schema, ctx: CoerceContext, path: list[str | int]) -> Any:
    """An unquoted member value: the one of its readings (:class:`BareWord`) this slot admits. ``{"name": Kim}``
    is the string ``"Kim"`` where every alternative is a plain string (no enum, no const), recorded as
    ``bare_string``; ``{"n": 1_234}`` is the number 1234 where every alternative is a number (an integer for
    1234, a float for ``1_234.5``), recorded as ``digit_separator``. Anywhere else it stays unread
    (``ctx.unresolved``): where another type is admitted (``str | None``, ``str | int``, ``Any``) the word may
    stand for a value of that type, and an enum member is never guessed."""
    view = ctx.view
    branches = view.branches(schema)
    plain = bool(branches) and not any("enum" in node or "const" in node for node in branches)
    kinds = [view.types(node) for node in branches]
    if plain and value.text and all(types == _STRING_ONLY for types in kinds):
        ctx.fixes.append(Fix("bare_string", tuple(path), value.word, value.word))
        return value.word
    number = value.number
    if plain and number is not None and all(
            types and types <= _NUMERIC and (number.__class__ is int or "number" in types)
            and not (number.__class__ is int and _beyond_float(number, types)) for types in kinds):
        ctx.fixes.append(Fix("digit_separator", tuple(path), value.word, number))
        return number
    ctx.unresolved.append(value)
    return None


_STRING_ONLY: Final = frozenset({"string"})
#: A ``-0`` token, perhaps (a false hit inside a string only refuses a coercion).
_NEGATIVE_ZERO: Final = re.compile(r"-0(?![.0-9eE])").search


def _beyond_float(value: int, types: frozenset[str]) -> bool:
    """An integer in a slot that only takes floats, too large for one (pydantic would make it infinity)."""
    return "integer" not in types and "number" in types and abs(value) > sys.float_info.max


def _descend(value: Any, node: Schema | None, ctx: CoerceContext, path: list[str | int]) -> Any:
    view = ctx.view
    if isinstance(value, dict):
        if ctx.float_keys and not view.properties(node or {}):
            _check_number_keys(value, ctx, path)
        for key, child in value.items():
            if isinstance(child, _WALKED):
                path.append(key)
                value[key] = coerce(child, view.member(node, key) if node else {}, ctx, path)
                path.pop()
    elif isinstance(value, list):
        for index, child in enumerate(value):
            if isinstance(child, _WALKED):
                path.append(index)
                value[index] = coerce(child, view.item(node, index) if node else {}, ctx, path)
                path.pop()
    return value


def _check_number_keys(mapping: dict[str, Any], ctx: CoerceContext, path: list[str | int]) -> None:
    """Keys of a float- or Decimal-keyed mapping that would become NaN or infinity (``"NaN"``, ``"1e400"``)."""
    for key in mapping:
        try:
            number = float(key)
        except ValueError:
            continue
        if not math.isfinite(number):
            ctx.violations.append(Violation(json_path([*path, key]),
                                            "this key is not a finite number; a finite number is expected"))


#: Child values the walk visits (bools need nothing; ints may stand where only a string fits).
_WALKED: Final = (dict, list, str, int, float, NonFinite, BareWord)
_NUMERIC: Final = frozenset({"integer", "number"})


class _Refused:
    """Marker: no lossless coercion exists."""


_REFUSED: Final = _Refused()


def _convert(value: Any, node: Schema, ctx: CoerceContext, path: list[str | int]) -> Any:
    types = ctx.view.types(node)
    where = tuple(path)
    if isinstance(value, str):
        text = value.strip()
        if "integer" in types:
            number = _to_integer(text)
            if number is not None:
                ctx.fixes.append(Fix("coerce_integer", where, value, number))
                return number
        if "number" in types and _NUMBER.fullmatch(text):
            real = _to_number(text)
            if real is None or not math.isfinite(real):
                return _REFUSED  # "1e400" would become infinity: not lossless
            ctx.fixes.append(Fix("coerce_number", where, value, real))
            return real
        if "boolean" in types and text.lower() in ("true", "false"):
            ctx.fixes.append(Fix("coerce_bool", where, value, text.lower() == "true"))
            return text.lower() == "true"
        if ("array" in types and text.startswith("[")) or ("object" in types and text.startswith("{")):
            return _decode_embedded(value, text, types, ctx, path)
        if "array" in types and _is_string_list(node, ctx.view):
            parts = [p.strip() for p in text.split(",")]
            parts = [p for p in parts if p]
            if parts:
                ctx.fixes.append(Fix("split_list", where, value, parts))
                return parts
        return _REFUSED
    if value.__class__ is int and "string" in types and not types & _NUMERIC:
        if value == 0 and _NEGATIVE_ZERO(ctx.source) is not None:
            return _REFUSED  # ``-0`` was written: "0" is not the digits as written, "-0" not the number's string
        ctx.fixes.append(Fix("coerce_string", where, value, str(value)))  # 1 -> "1": the digits as written
        return str(value)
    if isinstance(value, float) and "integer" in types and value.is_integer():
        ctx.fixes.append(Fix("coerce_integer", where, value, int(value)))
        return int(value)
    if isinstance(value, dict) and "array" in types:
        item = ctx.view.item(node, 0)
        if any(ctx.view.admits(b, value) for b in ctx.view.branches(item)):
            ctx.fixes.append(Fix("wrap_list", where, "{...}", "[{...}]"))
            return [value]
    return _REFUSED


def _is_string_list(node: Schema, view: SchemaView) -> bool:
    item_types = view.types(view.resolve(view.item(node, 0)))
    return bool(item_types) and item_types <= {"string"}


def _to_number(text: str) -> int | float | None:
    """A JSON number written as a string; ``None`` for an integer longer than ``int()`` accepts here."""
    if _INTEGER.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # more digits than sys.get_int_max_str_digits() allows
            return None
    return float(text)


def _to_integer(text: str) -> int | None:
    """An integer written as a string, exactly: ``"5"``, ``"-12"``, ``"5.0"``; not ``"05"`` or ``"5.5"``."""
    if _INTEGER.fullmatch(text):
        try:
            return int(text)
        except ValueError:  # more digits than sys.get_int_max_str_digits() allows
            return None
    if _NUMBER.fullmatch(text) and len(text) <= 400:
        try:
            exact = Decimal(text)
        except InvalidOperation:  # pragma: no cover - the pattern admits only valid decimals
            return None
        if exact == exact.to_integral_value() and abs(exact.adjusted()) < 4000:
            return int(exact)
    return None


def _decode_embedded(raw: str, text: str, types: frozenset[str], ctx: CoerceContext,
                     path: list[str | int]) -> Any:
    result = scan(text, 0, max_depth=ctx.max_depth, depth=len(path))
    if result.status != "complete" or text[result.end :].strip() or result.bare_words:
        return _REFUSED
    decoded = result.value
    is_array, is_object = isinstance(decoded, list), isinstance(decoded, dict)
    if not ((is_array and "array" in types) or (is_object and "object" in types)):
        return _REFUSED
    ctx.fixes.append(Fix("decode_embedded_json", tuple(path), raw[:80], "[...]" if is_array else "{...}"))
    return decoded


def _fold_enum(value: str, node: Schema, ctx: CoerceContext, path: list[str | int]) -> str:
    members = node.get("enum") if "enum" in node else [node.get("const")]
    if not isinstance(members, list) or value in members:
        return value
    folded = fold(value)
    matches = [m for m in members if isinstance(m, str) and fold(m) == folded]
    if len(matches) == 1:
        ctx.fixes.append(Fix("enum_fold", tuple(path), value, matches[0]))
        return str(matches[0])
    return value
