"""Field re-asks: when only a few fields of an answer fail, ask for those fields only and merge them back.

A full re-ask makes the model write the whole object again, paying output tokens for every field that was already
right (and risking new slips in them). When the answer was read as an object and every problem lies in a few
top-level fields, the next attempt instead asks for exactly those fields, with a schema of just them, and the
reply is merged into the rest of the previous answer. A reply holding other keys too is not cut down to the
fields: it is read as a whole answer, and refused if it is not one. The merged object is then validated *as a
whole* against the contract (and the semantic rules), so nothing is accepted that a full answer would not be; when
the merge still fails, the loop goes on as usual.

Used only where the merge is unambiguous: a pydantic model contract without field aliases, an object answer,
problems in at most half of its fields and none at the object's own level (a model validator's), and no stream
(previews would show the partial reply). The plans for the fields are the same mode and tool name as the
call's, so a replayed tool call still matches its tool.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Annotated, Any

import pydantic
from pydantic import BaseModel

from guardrail.errors import InputLimitError, SchemaViolationError
from guardrail.parse.report import ParseReport

#: A reply that holds keys besides the asked fields is not a field reply (nothing it says may be dropped).
_FORBID = pydantic.ConfigDict(extra="forbid")

_TOP = re.compile(r'\$(?:\.([^\W\d]\w*)|\["((?:[^"\\]|\\.)*)"\])', re.DOTALL)
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class FieldReask:
    """The fields to ask for again (``fields``, as a model of just them: ``model``) and the rest (``base``)."""

    base: dict[str, Any]
    fields: tuple[str, ...]
    model: type[BaseModel]


def field_reask(output_type: Any, report: ParseReport[Any]) -> FieldReask | None:
    """The field re-ask for a failed parse of ``output_type``, or ``None`` when a full re-ask is the safe one."""
    error = report.error
    if not isinstance(error, SchemaViolationError) or isinstance(error, InputLimitError):
        return None
    if not _eligible(output_type):
        return None
    invalid = [candidate for candidate in report.candidates if candidate.status == "invalid"]
    if len(invalid) != 1 or not isinstance(invalid[0].data, dict) or not invalid[0].violations:
        return None
    names = output_type.model_fields
    failing: list[str] = []
    for violation in invalid[0].violations:
        top = top_field(violation.path)
        if top is None or top not in names:
            return None  # a problem of the whole object (or of a key the contract does not know)
        if top not in failing:
            failing.append(top)
    if 2 * len(failing) > len(names):
        return None
    fields = tuple(sorted(failing))
    base = {key: value for key, value in invalid[0].data.items() if key not in fields}
    return FieldReask(base, fields, fields_model(output_type, fields))


def merged_text(reask: FieldReask, reply: BaseModel) -> str:
    """The previous answer with the re-asked fields replaced by the reply's, as JSON for whole validation."""
    return json.dumps({**reask.base, **reply.model_dump(mode="json")}, ensure_ascii=False)


def fields_instruction(fields: tuple[str, ...]) -> str:
    """The line added to the feedback of a field re-ask."""
    listed = ", ".join(f"`{name}`" for name in fields)
    return (f"Reply with a JSON object holding only these fields, corrected: {listed}. "
            "The rest of your answer is kept.")


def top_field(path: str) -> str | None:
    """The top-level field a JSON path (``$.items[2].sku``, ``$["a b"]``) lies in; ``None`` for ``$``."""
    match = _TOP.match(path)
    if match is None:
        return None
    if match.group(1) is not None:
        return match.group(1)
    return _ESCAPED.sub(r"\1", match.group(2))  # the inverse of json_path's quoting (``\\`` and ``\"``)


def _eligible(output_type: Any) -> bool:
    if not (isinstance(output_type, type) and issubclass(output_type, BaseModel)):
        return False
    if output_type.model_config.get("alias_generator") is not None:
        return False
    fields = output_type.model_fields
    return len(fields) >= 2 and all(info.alias is None and info.validation_alias is None for info in fields.values())


@functools.lru_cache(maxsize=256)
def fields_model(output_type: type[BaseModel], fields: tuple[str, ...]) -> type[BaseModel]:
    """A model of just ``fields`` of ``output_type``, each required, with its type and constraints, and no other
    key (a reply with more keys is read as a whole answer instead, never cut down to the fields).

    Cached, so its compiled contract and plans are reused by every re-ask for the same fields.
    """
    definitions: dict[str, Any] = {}
    for name in fields:
        info = output_type.model_fields[name]
        annotation = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        definitions[name] = (annotation, pydantic.Field(..., description=info.description))
    model: type[BaseModel] = pydantic.create_model(output_type.__name__, __config__=_FORBID, **definitions)
    return model
