"""The gate's steps over the proposed arguments: validated, put in canonical form, what was left out, the rules.

``validate_arguments`` turns the model's arguments (a dict, or raw JSON text through the parse layer's repairs)
into the tool's validated argument model and its canonical JSON-like form (:func:`canonical`): the one value
every later step judges and the hashes cover. ``note_left_out`` finds what the model left out (judged by presence
only). ``check_rules`` runs the tool's semantic rules. :func:`checked_model` puts the policy's checked values
(the resolved path, the normalised URL) back into the argument model for ``seal_checked``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from guardrail.errors import GuardrailError, InputLimitError, ParseError, SemanticViolation
from guardrail.gates.semantic import evaluate
from guardrail.parse.feedback import semantic_feedback
from guardrail.parse.pipeline import parse
from guardrail.tools.policy.arguments import location_text
from guardrail.tools.presence import model_left_out, schema_left_out
from guardrail.tools.state import Deny, Fail, GateState, Verdict

if TYPE_CHECKING:
    from guardrail.tools.registry import Tool

__all__ = ["canonical", "check_rules", "checked_model", "keywords", "note_left_out", "validate_arguments"]


def validate_arguments(state: GateState) -> Verdict | None:
    """The validated argument model and its canonical form; a parse error (its ``.feedback`` can go back to the
    model) is audited ``invalid`` (rule ``arguments``)."""
    proposed = state.proposed
    try:
        text = proposed if isinstance(proposed, str) else json.dumps(dict(proposed), default=str)
    except (RecursionError, ValueError, TypeError):
        return _invalid(InputLimitError("The arguments are nested too deeply or are not JSON values.",
                                        limit="max_depth", value=0))
    try:
        model = parse(text, state.found().arguments)
        state.arguments = canonical(model)
    except ParseError as error:
        return _invalid(error)
    state.model = model
    return None


def _invalid(error: ParseError) -> Fail:
    return Fail("invalid", error, rule="arguments", reason=error.feedback)


def note_left_out(state: GateState) -> Verdict | None:
    """The locations of what the model left out (:mod:`guardrail.tools.presence`); for a tool declared by JSON
    Schema, the schema's defaults filled in where a rule of the policy says ``check_default`` (the tool then
    receives the default that was judged)."""
    found = state.found()
    policy, model, _ = state.judged()
    if isinstance(found.arguments, dict):
        assert isinstance(model, dict)
        filled, state.left_out = schema_left_out(model, found.arguments, policy.default_checked_paths())
        if filled is not model:
            state.model, state.arguments = filled, canonical(filled)
    else:
        assert isinstance(model, BaseModel)
        state.left_out = model_left_out(model)
    state.omitted = sorted(location_text(place) for place in state.left_out)
    return None


def check_rules(state: GateState) -> Verdict | None:
    """The tool's semantic rules over the canonical arguments and the caller's ``context``: a violation is audited
    ``invalid`` (its ``.feedback`` can go back to the model); a rule that cannot run denies (fail closed)."""
    rules = state.found().rules
    if not rules:
        return None
    _, _, arguments = state.judged()
    try:
        verdict = evaluate(rules, arguments, state.context)
    except Exception as error:  # a rule that cannot run (missing context...) fails closed
        return Deny("semantic", f"a rule could not run: {type(error).__name__}",
                    detail=f"a rule could not run: {type(error).__name__}: {error}")
    if verdict.ok:
        return None
    violation = SemanticViolation(semantic_feedback(list(verdict.violations)), verdict.violations)
    return Fail("invalid", violation, rule="semantic", reason=violation.feedback)


def canonical(value: Any, depth: int = 0) -> Any:
    """JSON-like form with sets sorted (by their items' JSON), models as dicts of their fields."""
    if depth > 200:
        raise InputLimitError("The arguments are nested too deeply.", limit="max_depth", value=200)
    if isinstance(value, BaseModel):
        return {name: canonical(getattr(value, name), depth + 1) for name in type(value).model_fields}
    if isinstance(value, dict):
        return {str(k): canonical(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [canonical(v, depth + 1) for v in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))
    return to_jsonable_python(value, fallback=str)


def keywords(model: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """The validated arguments by name: a model's fields, or the JSON values of a tool declared by JSON Schema."""
    if isinstance(model, dict):
        return dict(model)
    return {name: getattr(model, name) for name in type(model).model_fields}


def checked_model(found: Tool, model: BaseModel | dict[str, Any], args: dict[str, Any],
                  checked: dict[str, Any]) -> BaseModel | dict[str, Any] | None:
    """The argument model holding the checked values (the resolved path, the normalised URL), or ``None`` when
    the parameter types would turn them into something else than what was checked. Unchanged parameters keep
    their validated objects (a ``SecretStr`` stays unmasked)."""
    if checked == args:
        return model
    declared = found.arguments
    if isinstance(model, dict) or isinstance(declared, dict):  # declared by JSON Schema: checked values must fit it
        from guardrail.contract import compile_contract

        try:
            compile_contract(declared).validate_decoded(checked)
        except GuardrailError:
            return None
        return dict(checked)
    values = {name: getattr(model, name) for name in type(model).model_fields}
    values.update({name: checked[name] for name in values if checked.get(name) != args.get(name)})
    try:
        rebuilt = declared.model_validate(values)
    except ValidationError:
        return None
    return rebuilt if canonical(rebuilt) == checked else None
