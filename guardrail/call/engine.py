"""The attempt loop: one I/O-free generator shared by the sync and async drivers.

The loop yields a :class:`Send` (the SDK keywords for one request) and receives a :class:`Received` (a
completion, or a classified failure once transport retries are spent). Everything else happens here, with
no I/O: choosing the plan, the output-token limit and temperature, reading truncation and refusals,
running the parse layer, building the feedback turn, keeping the budget, and recording every attempt.

Per attempt::

    build request for the plan ── send ── read completion
      refusal / content filter  -> Refused (never retried)
      truncated                 -> raise the token limit once within the ceiling, else OutputTruncated
      parse + validate fails    -> one feedback turn listing every problem, lower temperature, next attempt
      400 for the schema        -> next plan (mode) on the same vendor; not counted as an attempt
      the deadline passed       -> DeadlineExceeded
      other vendor error        -> VendorError / VendorUnavailable (an answer not in the API's shape included)
"""

from __future__ import annotations

import functools
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic

from guardrail.call.reask import FieldReask, field_reask, instruction, merged_text
from guardrail.contract import Contract, compile_contract, validation_context
from guardrail.errors import (
    BudgetExceeded,
    CallError,
    ConfigError,
    DeadlineExceeded,
    Declined,
    GaveUp,
    GuardrailError,
    NoJSONError,
    OutputTruncated,
    PriceUnknown,
    Refused,
    SemanticRejected,
    SemanticViolation,
    TruncatedError,
    VendorError,
    VendorUnavailable,
)
from guardrail.gates.semantic import Rule, evaluate
from guardrail.observe import cost
from guardrail.observe.logs import get_logger
from guardrail.outcome import Attempt, Budget, Outcome, Result, Usage, result_from
from guardrail.parse.absent import ABSENT_AS_NULL_STAGES
from guardrail.parse.feedback import semantic_feedback
from guardrail.parse.pipeline import parse_report
from guardrail.parse.report import Fix, ParseReport
from guardrail.vendors.base import Completion, Endpoint, Exchange
from guardrail.vendors.failures import Failure
from guardrail.vendors.plans import Plan, plans
from guardrail.vendors.profiles import Capabilities

log = get_logger("guardrail")


@dataclass(frozen=True, slots=True)
class Settings:
    """Knobs of the attempt loop.

    Attributes:
        max_attempts: model attempts per call (a re-ask after truncation counts; a schema 400 does not).
        max_tokens_ceiling: the highest output-token limit a truncated answer may be retried with.
        repair_temperature_factor: each repair attempt multiplies the temperature by this (from 1.0 when
            the caller set none), so the model explores less while fixing.
        capture_content: put raw model outputs on the trace span as events.
    """

    max_attempts: int = 3
    max_tokens_ceiling: int = 16384
    repair_temperature_factor: float = 0.5
    #: Record raw model outputs on the OpenTelemetry span (off by default: outputs may hold personal data).
    capture_content: bool = False

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError("max_attempts must be at least 1")


@dataclass(slots=True)  # not frozen: built on every call, and a frozen init costs 4x; never mutated
class Call:
    """Everything one structured call needs; built by the client wrapper, read by the loop."""

    endpoint: Endpoint
    kwargs: Mapping[str, Any]
    contract: Contract[Any]
    plans: list[Plan]
    caps: Capabilities
    aliases: Mapping[str, str] | None = None
    budget: Budget | None = None
    settings: Settings = field(default_factory=Settings)
    #: The SDK client's own request timeout in seconds, if it has one (the deadline only ever shortens it).
    timeout: float | None = None
    #: Semantic rules run on every validated answer, with the call's runtime ``context``.
    rules: tuple[Rule, ...] = ()
    context: Mapping[str, Any] = field(default_factory=dict)

    @property
    def model(self) -> str:
        return str(self.kwargs.get("model", ""))


@dataclass(slots=True)  # not frozen: built on every call, and a frozen init costs 4x; never mutated
class Send:
    """Effect: send one request with these SDK keywords (``stream`` tells the driver to read events)."""

    kwargs: dict[str, Any]
    stream: bool
    attempt: int = 1
    #: The forced output tool's name in tool mode (only its call is the answer), else ``None``.
    tool: str | None = None
    #: The key a non-object root was wrapped under (previews unwrap it), else ``None``.
    wrapped: str | None = None


@dataclass(slots=True)  # not frozen: built on every call, and a frozen init costs 4x; never mutated
class Received:
    """What the driver sends back: a completion, or the failure left after transport retries."""

    completion: Completion | None
    failure: Failure | None
    calls: int
    seconds: float


Loop = Generator[Send, Received, Result[Any]]

#: The :attr:`Failure.code` of a failure that is the call's deadline passing (it becomes DeadlineExceeded).
DEADLINE = "deadline"


def attempt_loop(call: Call, *, trace_id: str = "", provider: str = "") -> Loop:
    """The attempt loop (see module docstring); returns the :class:`Result` or raises a :class:`CallError`.

    ``trace_id`` is the call's (its span's) and ``provider`` its ``gen_ai.provider.name`` as telemetry and
    pricing see it (``azure.ai.openai`` for an Azure OpenAI client); the driver knows both once the span is
    open. An empty ``provider`` means the endpoint's own.
    """
    state = _State(call, trace_id, provider or call.endpoint.provider)
    while True:
        plan = state.plan()
        max_tokens = state.output_limit()
        kwargs = call.endpoint.build(call.kwargs, plan, state.history, max_tokens=max_tokens,
                                     temperature=state.temperature)
        fitted = state.fit_budget(kwargs, max_tokens)
        if fitted is not None:
            max_tokens = fitted
            kwargs = call.endpoint.build(call.kwargs, plan, state.history, max_tokens=max_tokens,
                                         temperature=state.temperature)
        received = yield Send(kwargs, call.endpoint.streams(kwargs), len(state.attempts) + 1,
                              plan.name if plan.mode == "tool" else None, plan.wrapped)
        attempt = state.new_attempt(plan, received, max_tokens)
        if received.failure is not None:
            state.on_failure(received.failure, attempt)
            continue
        assert received.completion is not None
        value = state.on_completion(received.completion, attempt)
        if value is not _NONE:
            return result_from(state.outcome(), value)


_NONE: Any = object()


class _State:
    """The mutable state of one call's loop; each method is one decision."""

    def __init__(self, call: Call, trace_id: str, provider: str) -> None:
        self.call, self.trace_id, self.provider = call, trace_id, provider
        self.started = time.monotonic()
        self.plan_index = 0
        self.history: list[Exchange] = []
        #: Set while the next attempt asks for a few fields only (see :mod:`guardrail.call.reask`).
        self.fields: tuple[FieldReask, Plan] | None = None
        self.attempts: list[Attempt] = []
        self.usage = Usage()
        self.model_attempts = 0
        self.max_tokens = call.endpoint.max_tokens(call.kwargs)
        self.raised_limit = False
        self.temperature: float | None = call.endpoint.temperature(call.kwargs)
        self.may_lower_temperature = call.caps.temperature and not call.endpoint.thinking(call.kwargs)

    # -- before sending ---------------------------------------------------------------------------------
    def plan(self) -> Plan:
        """The plan of the next attempt: the call's current one, or its field re-ask twin."""
        return self.fields[1] if self.fields is not None else self.call.plans[self.plan_index]

    def output_limit(self) -> int | None:
        return self.max_tokens

    def fit_budget(self, kwargs: Mapping[str, Any], max_tokens: int | None) -> int | None:
        """Stop before an attempt that could pass the budget; else cap the output tokens to what is left."""
        budget = self.call.budget
        if budget is None:
            return None
        left = min(budget.tokens_left(self.usage), self.usd_tokens_left(budget))
        estimate = self.call.endpoint.estimate_input_tokens(kwargs)
        last_output = self.attempts[-1].usage.output_tokens if self.attempts else 1
        if left < estimate + max(last_output, 1):
            raise BudgetExceeded(
                f"stopped before attempt {self.model_attempts + 1}: the budget leaves {max(0, int(left))} tokens, "
                f"the next request needs about {estimate} input tokens plus the answer", outcome=self.outcome())
        room = min(int(left - estimate), self.call.settings.max_tokens_ceiling)
        return room if max_tokens is None or room < max_tokens else None

    def usd_tokens_left(self, budget: Budget) -> float:
        """The tokens a dollar cap still allows: the dollars left (attempts so far priced at the model that
        answered each) at the model's dearer per-token rate; unlimited without ``max_usd``."""
        if budget.max_usd is None:
            return float("inf")
        provider = self.provider
        rate = cost.usd_per_token(provider, self.call.model)  # PriceUnknown / MissingExtra before any request
        spent = self.outcome().cost_usd
        if spent is None:  # an answering model the table does not price: the cap cannot be kept
            raise PriceUnknown(f"the answers so far came from a model genai-prices does not price, so "
                               f"Budget(max_usd={budget.max_usd}) cannot be kept", provider=provider,
                               model=self.call.model)
        return (budget.max_usd - spent) / rate if rate else float("inf")

    # -- after receiving --------------------------------------------------------------------------------
    def new_attempt(self, plan: Plan, received: Received, max_tokens: int | None) -> Attempt:
        done = received.completion
        self.model_attempts += 1 if done is not None else 0
        return Attempt(number=len(self.attempts) + 1, mode=plan.mode, raw=done.text if done else None,
                       finish_reason=done.finish_reason if done else None,
                       usage=done.usage if done else Usage(), vendor_calls=received.calls,
                       seconds=received.seconds, max_tokens=max_tokens, temperature=self.temperature,
                       response_model=done.model if done else None, response_id=done.response_id if done else None)

    def record(self, attempt: Attempt, **changes: Any) -> None:
        attempt = _replace(attempt, **changes)
        self.attempts.append(attempt)
        self.usage = self.usage + attempt.usage
        log.info("guardrail.attempt", trace_id=self.trace_id, attempt=attempt.number, mode=attempt.mode,
                 finish_reason=attempt.finish_reason, error=attempt.error_kind, fixes=len(attempt.fixes),
                 input_tokens=attempt.usage.input_tokens, output_tokens=attempt.usage.output_tokens,
                 vendor_calls=attempt.vendor_calls)

    def on_failure(self, failure: Failure, attempt: Attempt) -> None:
        """A vendor error after transport retries: next plan for a schema 400, else the matching error."""
        if failure.kind == "schema_rejected":
            self.record(attempt, error=VendorError(failure.message, status=failure.status, code=failure.code,
                                                   outcome=self.outcome(), snippet=failure.snippet))
            if self.fields is not None:  # the fields' schema was refused: ask for the whole answer instead
                self.fields = None
                return
            if self.plan_index + 1 < len(self.call.plans):
                self.plan_index += 1
                self.history.clear()  # replies in the old mode cannot be replayed in the new one
                log.info("guardrail.mode_fallback", trace_id=self.trace_id,
                         to=self.call.plans[self.plan_index].mode, reason=failure.message)
                return
        error: CallError
        if failure.code == DEADLINE:
            error = DeadlineExceeded(f"deadline exceeded ({attempt.vendor_calls} HTTP tries): {failure.message}",
                                     status=failure.status, outcome=self.outcome(),
                                     code=failure.code, snippet=failure.snippet)
        elif failure.kind == "retryable":
            error = VendorUnavailable(f"vendor unavailable after {attempt.vendor_calls} tries: {failure.message}",
                                      status=failure.status, outcome=self.outcome(), code=failure.code,
                                      snippet=failure.snippet)
        else:
            error = VendorError(f"vendor error {failure.status}: {failure.message}", status=failure.status,
                                code=failure.code, outcome=self.outcome(), snippet=failure.snippet)
        if failure.kind != "schema_rejected":
            self.record(attempt, error=error)
        error.outcome = self.outcome()
        raise error from failure.error

    def on_completion(self, done: Completion, attempt: Attempt) -> Any:
        """Judge one completion: the value, or ``_NONE`` after setting up the next attempt (or raising)."""
        if done.blocked:
            said = done.refusal or f"blocked by the vendor's content filter ({done.finish_reason})"
            self.record(attempt, error=Refused(said, outcome=self.outcome()))
            raise Refused(said, outcome=self.outcome())
        if done.finish == "length":
            return self.on_truncated(done, attempt)
        plan = self.plan()
        asking, self.fields = self.fields, None
        fixes: tuple[Fix, ...] = ()
        with validation_context(self.call.context or None):  # pydantic validators see it as info.context
            if asking is not None:  # a field re-ask: read the fields, then validate the merged whole
                asked, plan = asking[0], self.call.plans[self.plan_index]
                part = self.read(done.text, asked.model, asking[1])
                if part.error is None:
                    fixes = tuple(part.fixes)
                    report = self.read(merged_text(asked, part.unwrap()), self.call.contract.output_type, plan)
                else:  # not the fields alone: maybe the whole answer again, else ask for the fields again
                    report = self.read(done.text, self.call.contract.output_type, plan)
                    if report.error is not None:
                        self.fields = asking
                        return self.on_invalid(done, attempt, part, asking[1], asked.fields)
            else:
                report = self.read(done.text, _parse_type(self.call.contract.output_type, plan.wrapped), plan)
        if report.error is None:
            value = getattr(report.value, plan.wrapped) if plan.wrapped else report.value
            return self.judge(value, done, attempt, (*fixes, *report.fixes))
        return self.on_invalid(done, attempt, report, plan, None)

    def read(self, text: str | None, output_type: Any, plan: Plan) -> ParseReport[Any]:
        return parse_report(text or "", output_type, aliases=self.call.aliases,
                            stages=ABSENT_AS_NULL_STAGES if plan.absent_as_null else None)

    def on_invalid(self, done: Completion, attempt: Attempt, report: ParseReport[Any], plan: Plan,
                   asking: tuple[str, ...] | None) -> Any:
        """An answer that did not parse or validate: one feedback round, for a few fields where that suffices."""
        assert report.error is not None
        error = report.error if done.text else NoJSONError("The reply was empty; reply with the JSON value.")
        feedback = _feedback(error.feedback, report.fixes)
        if asking is None:
            self.fields = self.field_reask(report, plan)
            asking = self.fields[0].fields if self.fields is not None else None
        if asking is not None:
            feedback = f"{feedback}\n{instruction(asking)}"
        self.record(attempt, error=error, fixes=tuple(report.fixes), feedback=feedback)
        self.next_or_give_up(f"no valid output after {self.model_attempts} attempts: {error}")
        self.reask(done, feedback)
        self.lower_temperature()
        return _NONE

    def field_reask(self, report: ParseReport[Any], plan: Plan) -> tuple[FieldReask, Plan] | None:
        """The fields to ask for next and their plan (same mode and name), when a field re-ask is safe."""
        if plan.wrapped or self.call.endpoint.streams(self.call.kwargs):
            return None
        asked = field_reask(self.call.contract.output_type, report)
        if asked is None:
            return None
        try:
            found = plans(compile_contract(asked.model).schema, plan.name, self.call.caps, forced=plan.mode,
                          thinking=self.call.endpoint.thinking(self.call.kwargs))
        except (ValueError, GuardrailError):  # the fields cannot be asked for in this mode: ask for the whole
            return None
        return asked, found[0]

    def reask(self, done: Completion, feedback: str) -> None:
        """Set up the next attempt's re-ask: the latest answer once and its problems once.

        Only the latest exchange is replayed, never the whole run of failed answers: the feedback already lists
        every problem of the latest answer, so older answers add tokens (growing with each attempt) and no
        information the model needs.
        """
        self.history[:] = [Exchange(done, feedback)]

    def judge(self, value: Any, done: Completion, attempt: Attempt, fixes: tuple[Fix, ...]) -> Any:
        """The semantic gate on a validated value: the value, a feedback round (``_NONE``), or a typed end."""
        verdict = evaluate(self.call.rules, value, self.call.context) if self.call.rules else None
        if verdict is None or verdict.ok:
            self.record(attempt, fixes=fixes)
            return value
        if verdict.declined is not None:
            self.record(attempt, fixes=fixes)
            raise Declined(verdict.declined, value=value, outcome=self.outcome())
        feedback = semantic_feedback(list(verdict.violations))
        error = SemanticViolation(feedback, verdict.violations, verdict.failed)
        self.record(attempt, error=error, fixes=fixes, feedback=feedback)
        if verdict.end:
            raise SemanticRejected(f"the answer broke a rule that ends the call: {feedback}", outcome=self.outcome())
        self.next_or_give_up(f"no answer met the rules after {self.model_attempts} attempts: {feedback}")
        self.reask(done, feedback)
        self.lower_temperature()
        return _NONE

    def lower_temperature(self) -> None:
        if self.may_lower_temperature:
            base = 1.0 if self.temperature is None else self.temperature
            self.temperature = round(base * self.call.settings.repair_temperature_factor, 3)

    def on_truncated(self, done: Completion, attempt: Attempt) -> Any:
        """Raise the output-token limit once within the ceiling; a second cut-off is final."""
        error = TruncatedError(f"The reply was cut off at the output-token limit ({done.finish_reason}).",
                               text=done.text or "")
        self.record(attempt, error=error)
        ceiling = self.call.settings.max_tokens_ceiling
        current = max(self.max_tokens or 0, done.usage.output_tokens)
        raised = min(ceiling, 2 * current) if current else ceiling
        if self.raised_limit or raised <= current:
            raise OutputTruncated(f"output truncated at {current} tokens; the limit was already raised once "
                                  f"or is at its ceiling ({ceiling})", outcome=self.outcome())
        self.next_or_give_up(f"output truncated and no attempts left ({self.model_attempts})", OutputTruncated)
        self.raised_limit = True
        self.max_tokens = raised
        return _NONE

    def next_or_give_up(self, message: str, error: type[GaveUp] = GaveUp) -> None:
        """Raise ``error`` when the attempts are spent."""
        if self.model_attempts >= self.call.settings.max_attempts:
            raise error(message, outcome=self.outcome())

    def outcome(self) -> Outcome:
        plan = self.call.plans[self.plan_index]
        return Outcome(self.provider, self.call.model, plan.mode, tuple(self.attempts), self.usage, self.trace_id,
                       time.monotonic() - self.started, self.call.contract.schema_hash, plan.report)


def _feedback(problems: str, fixes: list[Fix]) -> str:
    """The one feedback message: the contract problems, then the syntax slips guardrail had to repair."""
    slips = [fix for fix in fixes if fix.kind != "null_as_absent"][:_MAX_SLIPS]
    if not slips:
        return problems
    lines = "\n".join(f"- {fix.path}: {fix.kind.replace('_', ' ')}" for fix in slips)
    return f"{problems}\nAlso avoid these formatting slips (repaired this time):\n{lines}"


_MAX_SLIPS = 10


def _replace(attempt: Attempt, **changes: Any) -> Attempt:
    if all(getattr(attempt, name) is value for name, value in changes.items()):
        return attempt  # the common case: a clean answer recorded with no fixes
    fields = {name: getattr(attempt, name) for name in Attempt.__dataclass_fields__}
    fields.update(changes)
    return Attempt(**fields)


@functools.lru_cache(maxsize=256)
def _parse_type(output_type: Any, wrapped: str | None) -> Any:
    """The type the answer is parsed as: the contract, or ``{wrapped: contract}`` for a wrapped root."""
    if wrapped is None:
        return output_type
    fields: dict[str, Any] = {wrapped: (output_type, ...)}
    return pydantic.create_model("Wrapped", **fields)

