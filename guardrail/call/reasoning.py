"""Reasoning first: let the model think before it answers in the contract, and keep the thinking beside the value.

A contract that needs reasoning (a diagnosis, a classification with a judgement call) is answered worse when the
model must emit the answer fields at once: constrained decoding leaves it no room to think. ``reason_first=`` on a
structured call (every wrapped method's ``create``/``create_with_result``, ``@guardrail.structured(reason_first=...)``,
a :class:`~guardrail.chain.tiers.Chain` and a :class:`guardrail.local.LocalModel` through
:mod:`guardrail.local.reasoning`) gives it that room, in one of two ways:

``"two_stage"``
    Stage one is a free-text request: the caller's conversation, then one user turn asking the model to reason
    step by step (:attr:`Reasoning.prompt`), with no mode's fields (no schema, no tool) and at most
    :attr:`Reasoning.max_tokens` output tokens. Stage two is the ordinary structured call (the attempt loop of
    :mod:`guardrail.call.engine`, its modes, repairs and rules) over the same conversation continued by that
    turn, the model's reasoning as its own turn, and a user turn asking for the answer
    (:attr:`Reasoning.follow_up`). A repair in stage two re-asks stage two only: stage one runs once. An empty
    reasoning is :class:`~guardrail.errors.ReasoningFailed`; a transport failure, the deadline, the budget or a
    refusal in stage one end the call with the same typed errors as any attempt.

``"field"``
    One request: the contract with a leading ``reasoning`` string field (:func:`reasoned_contract`; models write
    fields in schema order, so the reasoning comes before the answer fields, which is what ``guardrail schema``
    checks, :func:`guardrail.schema.order.late_reasoning`). The value returned is the caller's contract type
    without that field (:func:`split`); for pydantic model contracts only.

Either way :attr:`Result.reasoning <guardrail.Result.reasoning>` holds the text and the value never comes from
it: stage one's text is never parsed as the answer, and the field is taken out of the value. Usage and cost add
up both stages (the stage-one request is the first :class:`~guardrail.Attempt`, its mode ``"reasoning"``); the
call's deadline covers both; a budget covers both (stage two gets what stage one left). Each stage is a span
(``guardrail.reasoning.stage``, stage ``reasoning``/``answer``, a child of the call's span) and an event.

Two-stage calls skip the response cache (its key is the request without the reasoning turns); streamed previews
(``create_partial``) and ``with_raw_response`` do not take ``reason_first=`` (:class:`~guardrail.errors.UsageError`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

import pydantic
from opentelemetry import trace

from guardrail.call.engine import Ask, Call, Loop, Retry, Run, Send, attempt_loop, http_tries, run_async, run_sync
from guardrail.call.examples import checked
from guardrail.errors import CallError, ConfigError, ReasoningFailed, Refused, UsageError, VendorError
from guardrail.observe import cost
from guardrail.observe.telemetry import get_logger, mark_failed
from guardrail.outcome import Budget, Outcome, Result, Usage

if TYPE_CHECKING:
    from guardrail.call.methods import AsyncStructuredMethod, StructuredMethod
    from guardrail.call.options import CallOptions
    from guardrail.vendors.base import Role

__all__ = ["ANSWER_PROMPT", "REASONING_MODE", "REASON_PROMPT", "Reasoning", "ReasoningMode", "reasoned",
           "reasoned_async", "reasoned_contract", "reasoned_loop", "reasoning_of", "refuse", "split"]

log = get_logger("guardrail")
_tracer = trace.get_tracer("guardrail")

#: The two ways of reasoning first (see the module docstring).
ReasoningMode = Literal["two_stage", "field"]
_MODES: Final = frozenset(get_args(ReasoningMode))

#: The :attr:`Attempt.mode <guardrail.Attempt.mode>` of a two-stage call's first request.
REASONING_MODE: Final = "reasoning"

#: The user turn that asks for the reasoning (stage one).
REASON_PROMPT: Final = ("Before you answer, think the question through step by step in plain text: what is given, "
                        "what follows from it, and what the answer must be. Do not write the final answer in the "
                        "required format yet.")
#: The user turn after the reasoning that asks for the answer (stage two).
ANSWER_PROMPT: Final = "Now give your final answer, as your reasoning above concluded, in the required format."

#: The description of the leading field in ``"field"`` mode.
_FIELD_DESCRIPTION: Final = ("Your step-by-step reasoning, written before the answer fields; the answer fields "
                             "must follow from it.")


@dataclasses.dataclass(frozen=True, slots=True)
class Reasoning:
    """How a call reasons first; ``reason_first="two_stage"`` (or ``"field"``) is ``Reasoning(mode)``.

    Attributes:
        mode: ``"two_stage"`` (a free-text request, then the answer) or ``"field"`` (a leading field).
        max_tokens: the output-token limit of the reasoning request (two-stage; a budget may lower it).
        prompt: the user turn asking for the reasoning (two-stage).
        follow_up: the user turn asking for the answer after the reasoning (two-stage).
        field: the name of the leading field (``"field"`` mode).
    """

    mode: ReasoningMode = "two_stage"
    max_tokens: int = 1024
    prompt: str = REASON_PROMPT
    follow_up: str = ANSWER_PROMPT
    field: str = "reasoning"

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ConfigError(f"reasoning mode must be 'two_stage' or 'field', not {self.mode!r}")
        if self.max_tokens < 1:
            raise ConfigError("Reasoning(max_tokens=...) must be at least 1")


def reasoning_of(given: Reasoning | str | None) -> Reasoning | None:
    """``reason_first=`` as a :class:`Reasoning` (a mode's name stands for its defaults); ``None`` for none."""
    if given is None or isinstance(given, Reasoning):
        return given
    if isinstance(given, str) and given in _MODES:
        return Reasoning(given)  # type: ignore[arg-type]
    raise UsageError(f"reason_first= takes 'two_stage', 'field' or a guardrail.call.reasoning.Reasoning, not {given!r}")


def refuse(options: CallOptions, method: str) -> None:
    """:class:`UsageError` when a call that cannot reason first (a preview stream, an item stream, a raw response)
    was asked to."""
    if options.reason_first is not None:
        raise UsageError(f"{method}() does not take reason_first=: call create() or create_with_result() (the "
                         "reasoning is then on Result.reasoning)")


# -- "field": a leading reasoning field --------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def reasoned_contract(output_type: Any, field: str = "reasoning") -> Any:
    """``output_type`` with a leading string field ``field``: a subclass, so its validators and the rules still
    apply, of the same name (the schema and tool name sent are the contract's own), with the field first in
    schema order. Only for pydantic model contracts (:class:`UsageError` otherwise)."""
    if not (isinstance(output_type, type) and issubclass(output_type, pydantic.BaseModel)) \
            or issubclass(output_type, pydantic.RootModel):
        raise UsageError(f"reason_first='field' needs a pydantic model contract (an object with fields), not "
                         f"{output_type!r}: use reason_first='two_stage'")
    if field in output_type.model_fields:
        raise UsageError(f"{output_type.__name__} already has a field {field!r}: name another with "
                         f"Reasoning(mode='field', field=...)")
    fields: dict[str, Any] = {field: (str, pydantic.Field(description=_FIELD_DESCRIPTION))}
    leading: Any = pydantic.create_model(f"{output_type.__name__}Reasoning", **fields)
    # fields are collected along the reversed MRO: the leading model's come before the contract's
    return type(output_type.__name__, (output_type, leading), {
        "__module__": output_type.__module__, "__qualname__": output_type.__qualname__,
        "__doc__": output_type.__doc__})


def split(value: Any, output_type: Any, field: str = "reasoning") -> tuple[Any, str]:
    """A value of :func:`reasoned_contract` as the contract's own value (the same validated fields, no
    re-validation) and its reasoning."""
    names = output_type.model_fields
    plain = output_type.model_construct(_fields_set=value.model_fields_set - {field},
                                        **{name: getattr(value, name) for name in names})
    if value.__pydantic_extra__:  # a contract that allows extra keys keeps them
        plain.__pydantic_extra__ = dict(value.__pydantic_extra__)
    return plain, str(getattr(value, field))


#: The reasoning shown in a few-shot example of the ``"field"`` mode: the caller's examples are answers without it.
EXAMPLE_REASONING: Final = "(the reasoning that leads to the answer below)"


def _field_options(options: CallOptions, spec: Reasoning) -> CallOptions:
    """The options of a ``"field"`` call: the contract with its leading field; the caller's examples, checked as
    values of the caller's contract (so an error names them as given), shown with that field first."""
    shown = tuple({spec.field: EXAMPLE_REASONING, **json.loads(text)}
                  for text in checked(options.response_model, options.examples))
    return dataclasses.replace(options, response_model=reasoned_contract(options.response_model, spec.field),
                               reason_first=None, examples=shown)


def _field_result(result: Result[Any], output_type: Any, spec: Reasoning) -> Result[Any]:
    value, text = split(result.value, output_type, spec.field)
    return dataclasses.replace(result, value=value, reasoning=text)


# -- the entry points the structured methods call ----------------------------------------------------------------
def reasoned(resource: StructuredMethod, options: CallOptions, kwargs: dict[str, Any]) -> Result[Any]:
    """A structured call of a sync resource with ``reason_first=`` (see the module docstring)."""
    spec = reasoning_of(options.reason_first)
    assert spec is not None
    if spec.mode == "field":
        return _field_result(resource._guardrail_run(_field_options(options, spec), kwargs), options.response_model,
                             spec)
    call = resource._guardrail_call(dataclasses.replace(options, reason_first=spec), kwargs)
    return run_sync(call, resource._guardrail_send(), steps=reasoned_loop)


def reasoned_async(resource: AsyncStructuredMethod, options: CallOptions, kwargs: dict[str, Any]
                   ) -> Coroutine[Any, Any, Result[Any]]:
    """The async :func:`reasoned`: the call is made now (a mistake raises here), the coroutine runs it."""
    spec = reasoning_of(options.reason_first)
    assert spec is not None
    if spec.mode == "field":
        running = resource._guardrail_run(_field_options(options, spec), kwargs)
        return _split_when_done(running, options.response_model, spec)
    call = resource._guardrail_call(dataclasses.replace(options, reason_first=spec), kwargs)
    return run_async(call, resource._guardrail_send(), steps=reasoned_loop)


async def _split_when_done(running: Coroutine[Any, Any, Result[Any]], output_type: Any, spec: Reasoning
                           ) -> Result[Any]:
    return _field_result(await running, output_type, spec)


# -- "two_stage": the loop -------------------------------------------------------------------------------------------
def reasoned_loop(call: Call, *, trace_id: str = "", provider: str = "") -> Loop:
    """The two-stage call as one I/O-free loop (the drivers of :mod:`guardrail.call.engine` step it like
    :func:`~guardrail.call.engine.attempt_loop`): the reasoning request and its tries, then the attempt loop of
    the answer over the conversation that holds the reasoning. Returns the :class:`Result` with both stages'
    attempts and usage and the reasoning; raises a :class:`CallError` whose outcome holds both stages too."""
    spec = reasoning_of(call.options.reason_first)
    assert spec is not None and spec.mode == "two_stage"
    provider = provider or call.endpoint.provider
    run = Run(call, trace_id, provider)  # stage one's record: its budget room, typed ends and outcome
    stage = _Stage(REASONING_MODE, spec)
    ask = Ask(0, None, [], spec.max_tokens, call.endpoint.temperature(call.kwargs))
    try:
        limit = spec.max_tokens
        kwargs = call.endpoint.continued(call.kwargs, [("user", spec.prompt)], max_tokens=limit)
        if call.options.budget is not None:
            limit = min(limit, run.room(ask, call.options.budget, kwargs))
            kwargs = call.endpoint.continued(call.kwargs, [("user", spec.prompt)], max_tokens=limit)
        tried = yield from http_tries(call, Send(kwargs, False))
        attempt = dataclasses.replace(run.attempt(ask, tried, limit), mode=REASONING_MODE)
        if tried.failure is not None:
            verdict = run.failed(ask, tried.failure, attempt)  # raises its typed end, but for a 400 "for the schema"
            assert isinstance(verdict, Retry)
            raise VendorError(f"the reasoning request was refused: {tried.failure.message}",
                              status=tried.failure.status, code=tried.failure.code, outcome=run.outcome(ask),
                              snippet=tried.failure.snippet)
        done = tried.completion
        assert done is not None
        if done.blocked:
            said = done.refusal or f"blocked by the vendor's content filter ({done.finish_reason})"
            raise run.ended(ask, attempt, Refused(said, outcome=run.outcome(ask)))
        text = (done.text or "").strip()
        if not text:
            raise run.ended(ask, attempt, ReasoningFailed(
                f"the reasoning stage answered no text ({done.finish_reason})", outcome=run.outcome(ask)))
        run.record(attempt)
    except CallError as error:
        stage.end(error.outcome.usage, error)
        raise
    first = run.outcome(ask)
    stage.end(first.usage, None)

    answer = _Stage("answer", spec)
    turns: list[tuple[Role, str]] = [("user", spec.prompt), ("assistant", text), ("user", spec.follow_up)]
    second = dataclasses.replace(
        call, kwargs=call.endpoint.continued(call.kwargs, turns, max_tokens=None),
        options=dataclasses.replace(call.options, budget=_left(call.options.budget, first, provider)))
    try:
        result = yield from attempt_loop(second, trace_id=trace_id, provider=provider)
    except CallError as error:
        answer.end(error.outcome.usage, error)
        error.outcome = _joined(first, error.outcome, run.started)
        raise
    answer.end(result.usage, None)
    return dataclasses.replace(_joined(first, result, run.started), reasoning=text)


def _joined(first: Outcome, second: Outcome, started: float) -> Any:
    """``second`` (the answer stage's outcome or result) with the reasoning stage's attempts before its own
    (numbered on from them), both stages' usage, and the time since the call started."""
    shifted = tuple(dataclasses.replace(attempt, number=attempt.number + len(first.attempts))
                    for attempt in second.attempts)
    return dataclasses.replace(second, attempts=(*first.attempts, *shifted), usage=first.usage + second.usage,
                               seconds=time.monotonic() - started)


def _left(budget: Budget | None, spent: Outcome, provider: str) -> Budget | None:
    """What ``budget`` leaves the answer stage after the reasoning stage (never negative: a cap used up stops the
    answer stage before it sends, :class:`~guardrail.errors.BudgetExceeded`)."""
    if budget is None:
        return None
    used = spent.usage
    tokens = None if budget.max_tokens is None else max(0, budget.max_tokens - used.total_tokens)
    money = None if budget.max_cost is None or budget.price is None else \
        max(0.0, budget.max_cost - used.cost(budget.price))
    dollars = None
    if budget.max_usd is not None:  # priced as the loop prices its attempts; unknown: nothing left
        paid = cost.usd(used, provider, spent.attempts[-1].response_model or spent.model) if spent.attempts else 0.0
        dollars = 0.0 if paid is None else max(0.0, budget.max_usd - paid)
    return Budget(tokens, money, budget.price, dollars)


class _Stage:
    """One stage's span (``guardrail.reasoning.stage``, a child of the call's span; started now, ended by
    :meth:`end`) and its end event. Not made current: the loop is a generator, stepped across the driver's
    ``with`` blocks, so a current span would leak into them."""

    def __init__(self, name: str, spec: Reasoning) -> None:
        self.name = name
        self.started = time.monotonic()
        self.span = _tracer.start_span("guardrail.reasoning.stage", attributes={
            "guardrail.reasoning.stage": name, "guardrail.reasoning.mode": spec.mode,
            "guardrail.reasoning.max_tokens": spec.max_tokens})

    def end(self, usage: Usage, error: CallError | None) -> None:
        span = self.span
        if span.is_recording():
            span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
            if error is not None:
                mark_failed(span, error)
        span.end()
        log.info("guardrail.reasoning.stage", stage=self.name, input_tokens=usage.input_tokens,
                 output_tokens=usage.output_tokens, seconds=round(time.monotonic() - self.started, 4),
                 error=type(error).__name__ if error else None)

