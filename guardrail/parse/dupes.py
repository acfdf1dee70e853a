"""Screening strict JSON text for a key given twice in one object, for the fast paths.

Pydantic (like ``json``) lets the last of two equal keys win without a word, so a fast path that hands
text straight to pydantic must first know that no object repeats a key; where one might, the stages read
the text and decide (an exact repeat collapses with a fix, a conflicting one is ambiguous).

Two screens, the cheap one first:

- counting (plain models only, see :func:`counter_for`): every member of every object in the text is
  one ``:`` outside a string, and every other ``:`` of the text is inside a string, so ``text.count(":")``
  is the number of members plus the colons written in strings; every field a model instance records as
  given (``model_fields_set``) came from at least one distinct key of its object, and every ``str`` value
  of a given field from one distinct string of the text. So the fields given plus the colons of those
  strings never exceed the text's colons, and when the two are equal, no object holds more members than
  distinct keys: no repeat. A string's colons are its text's only when none is written as an escape
  (``\\u003a``): text with a ``\\u`` escape is counted without strings (a timestamp or URL value then sends
  it to jiter). This costs one C count plus a walk over the model instances and their string fields.
- otherwise ``jiter``'s duplicate-key detection, in Rust (a full parse). Text with fewer than two
  colons cannot hold two keys and skips both.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable
from typing import Any, Final

import jiter
from pydantic import BaseModel

#: Counts the fields given (``model_fields_set``) over all model instances in a validated value.
_Counter = Callable[[Any], int]
#: ``None``: the type cannot hold a model (contributes 0); ``_REFUSED``: counting is not sound for it.
_REFUSED: Final = object()
_LEAVES: Final = frozenset({str, int, float, bool, type(None)})
#: Field metadata that only constrains a value (``Field(ge=1)``, ``Strict()``); anything else (a
#: ``BeforeValidator``, say) could build model instances from what is not an object of the text.
_CONSTRAINT_NAMES: Final = frozenset({"Strict", "StringConstraints", "AllowInfNan", "_PydanticGeneralMetadata"})
#: output type -> (counter of fields only, counter of fields and string colons); see :func:`counter_for`.
_COUNTERS: dict[Any, tuple[_Counter | None, _Counter | None]] = {}


def may_repeat_key(payload: str, value: Any = None, output_type: Any = None) -> bool:
    """Whether the strict JSON ``payload`` may give a key twice in one object (false: it surely does not).

    ``value`` is what the exact validator made of ``payload`` for ``output_type``; with both given, plain
    model contracts are screened by counting first.
    """
    colons = payload.count(":")
    if colons < 2:
        return False
    if output_type is not None:
        try:
            counters = _COUNTERS[output_type]
        except KeyError:
            counters = _COUNTERS[output_type] = (counter_for(output_type), counter_for(output_type, strings=True))
        except TypeError:  # unhashable: no cached plan
            counters = (None, None)
        fields, with_strings = counters
        try:
            # the fields alone first (cheapest, and enough when no string holds a colon); then with the strings'
            # colons, unless one may be written as an escape (then the strings' colons are not the text's)
            if fields is not None and (fields(value) == colons or (
                    with_strings is not None and "\\u" not in payload and with_strings(value) == colons)):
                return False
        except Exception:  # pragma: no cover - the value is the validator's own: a plan mismatch only
            pass
    try:
        jiter.from_json(payload.encode("utf-8", "surrogatepass"), catch_duplicate_keys=True, cache_mode="keys")
    except ValueError:  # a repeated key (or text jiter reads differently: let the stages decide)
        return True
    return False


def counter_for(output_type: Any, *, strings: bool = False) -> _Counter | None:
    """The field counter for ``output_type``, or ``None`` where counting is not sound (or not needed); with
    ``strings``, it adds the colons of the ``str`` values of given fields (see the module docstring)."""
    plans: dict[type[BaseModel], Any] = {}
    plan = _plan(output_type, plans, strings)
    if plan is _REFUSED or plan is None or any(p is _REFUSED for p in plans.values()):
        return None
    return plan  # type: ignore[no-any-return]


def _plan(tp: Any, plans: dict[type[BaseModel], Any], strings: bool) -> Any:
    """A counter for values of ``tp``; ``None`` if it holds nothing counted; ``_REFUSED`` if not countable."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        args = typing.get_args(tp)
        if not all(_is_constraint(m) for m in args[1:]):
            return _REFUSED
        return _plan(args[0], plans, strings)
    if tp is str and strings:
        return _colons
    if tp in _LEAVES or origin is typing.Literal:
        return None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        # An enum with its own core schema could be validated into anything: not counted.
        return _REFUSED if hasattr(tp, "__get_pydantic_core_schema__") else None
    if isinstance(tp, type) and issubclass(tp, BaseModel) and origin is None:
        return _model_plan(tp, plans, strings)
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        inner = _plan(item, plans, strings)
        if inner is None or inner is _REFUSED:
            return inner
        return lambda v: sum(map(inner, v))
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) != 1:
            return _REFUSED  # a union of several types: left to jiter
        inner = _plan(members[0], plans, strings)
        if inner is None or inner is _REFUSED:
            return inner
        return lambda v: 0 if v is None else inner(v)
    return _REFUSED


def _model_plan(model: type[BaseModel], plans: dict[type[BaseModel], Any], strings: bool) -> Any:
    """Counter for a plain model: no validators, post-init or own core schema (which could set fields no key
    gave), no ``RootModel``, and every key spelling (name, alias) naming one field only.

    Soundness does not rest on the plan matching the value: whatever it counts is the ``fields_set`` of
    distinct instances the text's distinct objects made, so the count never exceeds the members.
    """
    if model in plans:
        known = plans[model]
        return _REFUSED if known is _REFUSED else (lambda v: plans[model](v))  # recursive: bound late
    plans[model] = lambda v: plans[model](v)  # placeholder while the fields are planned
    decorators = model.__pydantic_decorators__
    if (decorators.validators or decorators.field_validators or decorators.root_validators
            or decorators.model_validators or model.__pydantic_post_init__ is not None
            or getattr(model, "__pydantic_root_model__", False)
            or model.__get_pydantic_core_schema__.__func__  # type: ignore[attr-defined]
            is not BaseModel.__get_pydantic_core_schema__.__func__):  # type: ignore[attr-defined]
        plans[model] = _REFUSED
        return _REFUSED
    spellings: set[str] = set()
    descend: list[tuple[str, Any]] = []
    for name, info in model.model_fields.items():
        names = {name}
        for alias in (info.alias, info.validation_alias):
            if alias is None:
                continue
            if not isinstance(alias, str):  # AliasPath/AliasChoices: one key may feed several fields
                plans[model] = _REFUSED
                return _REFUSED
            names.add(alias)
        if spellings & names or not all(_is_constraint(m) for m in info.metadata):
            plans[model] = _REFUSED
            return _REFUSED
        spellings |= names
        sub = _plan(info.annotation, plans, strings)
        if sub is _REFUSED:
            plans[model] = _REFUSED
            return _REFUSED
        if sub is not None:
            descend.append((name, sub))

    def count(instance: Any) -> int:
        given = instance.__pydantic_fields_set__
        n = len(given)
        for name, sub in descend:  # only fields the text gave: a default's instances hold no key of it
            if name in given:
                n += sub(getattr(instance, name))
        return n

    plans[model] = count
    return count


def _colons(value: str) -> int:
    """The colons of a string value (each one written as is in the text, when the text has no escape)."""
    return value.count(":")


def _is_constraint(meta: Any) -> bool:
    cls = meta.__class__
    return cls.__module__ == "annotated_types" or (cls.__module__.startswith("pydantic.")
                                                     and cls.__name__ in _CONSTRAINT_NAMES)
