"""Few-shot examples: ``examples=[...]``, valid values of the contract shown to the model with the instructions.

Every entry point takes them: a wrapped client's structured methods (``examples=`` keyword), the decorator
(``@structured(examples=...)``), the chain (``chain.run(..., examples=...)``) and a chain's local tier. Each
example is a value of the contract (a model instance, a dataclass, or plain JSON data such as a dict) and is
checked the way an answer is (:func:`checked`): as JSON text, strictly, unknown keys refused, no NaN or infinity.
One that fails is an :class:`~guardrail.errors.InvalidExample` naming its index and the JSON path of the first
problem, raised where the examples are given (the decorator: when it decorates; the chain: when the request is
made, before any tier; a wrapped call: before any request).

The checked JSON texts are then given to the plans of the call (:func:`with_examples`), each in the shape that
plan's answer has (under the wrapping key when a plan wraps a non-object root), and every endpoint shows them
in the instructions: with the schema text in the prompt and JSON modes, appended to the system instructions in
the native and tool modes (:func:`guardrail.vendors.base.examples_instruction`). They are never sent as made-up
assistant turns: the model would read them as answers it already gave. They are part of the response cache's key
(:func:`shown_in_key`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

from guardrail.contract import Contract, compile_contract
from guardrail.errors import InvalidExample, UsageError
from guardrail.parse.report import json_path
from guardrail.vendors.base import examples_text

if TYPE_CHECKING:
    from guardrail.call.options import Prepared
    from guardrail.vendors.plans import Plan

__all__ = ["checked", "examples_prompt", "shown_in_key", "with_examples"]


def checked(contract_or_type: Any, examples: Sequence[Any] | None) -> tuple[str, ...]:
    """The examples as compact JSON texts, each checked to be a valid value of the contract (a
    :class:`~guardrail.contract.Contract` or anything ``response_model=`` takes); :class:`InvalidExample` for
    the first that is not. ``()`` for none."""
    if not examples:
        return ()
    if isinstance(examples, (str, bytes)) or not isinstance(examples, Sequence):
        raise UsageError(f"examples= takes a list of values of the contract, not {type(examples).__name__}")
    contract = contract_or_type if isinstance(contract_or_type, Contract) else compile_contract(contract_or_type)
    return tuple(_check(contract, index, example) for index, example in enumerate(examples))


def _check(contract: Contract[Any], index: int, example: Any) -> str:
    try:  # by alias, as an answer names the fields
        text = to_json(example, by_alias=True).decode("utf-8")
    except (PydanticSerializationError, UnicodeDecodeError, ValueError) as error:
        raise InvalidExample(index, "$", f"it has no JSON form ({error})") from None
    where = _nonfinite_at(example)  # serialised as null (a model's default) or a bare NaN: refused, never changed
    if where is not None:
        raise InvalidExample(index, json_path(where), "NaN and infinity have no JSON form")
    try:
        contract.validate_exact(text)
    except ValueError as error:
        first = _first_error(error)
        if first is None:  # an exact check that says no without details: ask the full validation where
            try:
                contract.validate_json(text, forbid_extra=True)
            except ValueError as detailed:
                first = _first_error(detailed)
        if first is None:
            raise InvalidExample(index, "$", "it is not exactly a value of the contract") from None
        raise InvalidExample(index, json_path(tuple(first.get("loc", ()))), str(first.get("msg", ""))) from None
    return text


def _nonfinite_at(value: Any, path: tuple[str | int, ...] = ()) -> tuple[str | int, ...] | None:
    """The path (by alias, as the JSON names it) of the first NaN or infinite float in an example, or ``None``:
    JSON has no such number, and pydantic would write it as ``null`` or a bare ``NaN``."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        items: Any = ((fields[name].serialization_alias or fields[name].alias or name, getattr(value, name))
                      for name in fields)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = ((field.name, getattr(value, field.name)) for field in dataclasses.fields(value))
    elif isinstance(value, Mapping):
        items = ((str(key), item) for key, item in value.items())
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _nonfinite_at(item, (*path, key))
        if found is not None:
            return found
    return None


def _first_error(error: ValueError) -> dict[str, Any] | None:
    """The first problem a validation error lists (pydantic's ``errors()``), or ``None`` when it lists none."""
    errors = getattr(error, "errors", None)
    listed = errors() if callable(errors) else None
    return dict(listed[0]) if listed else None


def _shaped(plan: Plan, texts: tuple[str, ...]) -> tuple[str, ...]:
    """The example texts in the shape of ``plan``'s answer: under its wrapping key when it wrapped the root."""
    if plan.wrapped is None:
        return texts
    key = json.dumps(plan.wrapped, ensure_ascii=False)
    return tuple(f"{{{key}:{text}}}" for text in texts)


def with_examples(prepared: Prepared, examples: Sequence[Any]) -> Prepared:
    """``prepared`` (shared by every call of its shape) for one call with these examples: the same contract and
    capabilities, its plans each carrying the examples in that plan's shape. :class:`InvalidExample` first when
    one is not a valid value of the contract."""
    texts = checked(prepared.contract, examples)
    if not texts:
        return prepared
    plans = tuple(dataclasses.replace(plan, examples=_shaped(plan, texts)) for plan in prepared.plans)
    return dataclasses.replace(prepared, plans=plans)


def shown_in_key(plan: Plan) -> dict[str, Any]:
    """What the response cache's key takes from a call's plan beyond its schema: its few-shot examples (decoded,
    so the key's canonical encoding orders their keys) and its text constraint, each only when there is one."""
    out: dict[str, Any] = {}
    if plan.examples:
        out["examples"] = [json.loads(text) for text in plan.examples]
    constraint = plan.constraint
    if constraint is not None:
        out["constraint"] = {"regex": constraint.pattern} if hasattr(constraint, "pattern") else \
            {"grammar": constraint.text, "syntax": constraint.syntax}
    return out


def examples_prompt(prompt: str, output_type: Any, examples: Sequence[Any] | None) -> str:
    """A plain prompt (a local model's) with the checked examples after it; ``prompt`` itself without any."""
    texts = checked(output_type, examples)
    return f"{prompt}\n\n{examples_text(texts)}" if texts else prompt
