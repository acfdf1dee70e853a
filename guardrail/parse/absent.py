"""Reading ``null`` as "absent" for optional fields, for answers produced under a lowered strict schema.

OpenAI's strict mode makes every property required, so an optional field ``x: int = 5`` is sent as
required-and-nullable and the model writes ``"x": null`` when it has nothing to say. For the contract that
null is not a value (``x`` does not admit null), it is the absence of one: this stage removes such members
so the contract's default applies, and records each removal as a ``Fix`` (kind ``"null_as_absent"``). It
touches only fields that are optional *and* do not admit null; a null anywhere else stays and is judged
by validation. It is not in ``DEFAULT_STAGES``: the attempt loop adds it (``ABSENT_AS_NULL_STAGES``) only
when the schema it sent was lowered that way.
"""

from __future__ import annotations

from typing import Any, Final

from guardrail.parse.report import Fix
from guardrail.parse.stages import DEFAULT_STAGES, normalize_fields
from guardrail.parse.state import ParseState, Stage
from guardrail.schema.view import Schema, SchemaView


def drop_absent_nulls(state: ParseState) -> ParseState:
    """Remove ``"field": null`` where the field is optional and does not admit null (see module docstring)."""
    view = state.contract.view
    for cand in state.candidates:
        if cand.status == "invalid" and isinstance(cand.data, (dict, list)):
            _walk(cand.data, state.contract.schema, view, cand.fixes)
    return state


def _walk(root: Any, schema: Schema, view: SchemaView, fixes: list[Fix]) -> None:
    stack: list[tuple[Any, Schema, tuple[str | int, ...]]] = [(root, schema, ())]
    while stack:
        value, node_schema, path = stack.pop()
        node = view.pick(node_schema, value)
        if node is None:
            continue
        if isinstance(value, dict):
            props = view.properties(node)
            required = set(node.get("required") or ())
            for key in [k for k, v in value.items() if v is None]:
                if key in props and key not in required and not view.allows_null(props[key]):
                    del value[key]
                    fixes.append(Fix("null_as_absent", (*path, key), None, "(absent: default applies)"))
            stack.extend((child, view.member(node, key), (*path, key)) for key, child in value.items()
                         if isinstance(child, (dict, list)))
        elif isinstance(value, list):
            stack.extend((child, view.item(node, i), (*path, i)) for i, child in enumerate(value)
                         if isinstance(child, (dict, list)))


def _with_absent(stages: tuple[Stage, ...]) -> tuple[Stage, ...]:
    at = stages.index(normalize_fields) + 1
    return (*stages[:at], drop_absent_nulls, *stages[at:])


#: ``DEFAULT_STAGES`` with :func:`drop_absent_nulls` right after field-name normalization.
ABSENT_AS_NULL_STAGES: Final[tuple[Stage, ...]] = _with_absent(DEFAULT_STAGES)
