"""The attempt loop: how one structured call is attempted, as one I/O-free generator, and its two drivers.

:func:`attempt_loop` decides everything about a call without I/O: the plan (mode) of each attempt, its
output-token limit and temperature, the budget, the transport retries and their waits, what an answer means
(refusal, truncation, the parse layer, the semantic rules), the feedback turn, and the record of every attempt.
It yields two effects, :class:`Send` (one HTTP try with these SDK keywords) and :class:`Sleep` (the wait before
a transport retry), and is sent back what came of each: the try's :class:`~guardrail.vendors.base.Completion`,
or the exception it ended with (``None`` after a sleep). A recorded call (``wrap(client, record=...)``) yields
one :class:`Record` more when it ends, value or typed end: the call, every attempt and the answers it read, for
its recorder (:mod:`guardrail.replay`). It returns the :class:`~guardrail.Result` or raises a
:class:`~guardrail.errors.CallError`.

Per attempt (an :class:`Ask` says what it asks)::

    the request: the plan's fields, the turns replayed, the output limit (the budget may lower it), temperature
    the HTTP tries: Send; a retryable failure -> Sleep (Retry-After, else jitter) and Send again, within
        RetryPolicy.max_tries and the deadline (guardrail.call.options.RetryPolicy.wait)
    the verdict on what came back:
        Accept(value)    it parsed, validated and met the rules: the result
        Retry(ask)       ask again: one feedback turn listing every problem (only the failing fields, where that
                         suffices) at a lower temperature; a raised token limit after a cut-off; the next plan
                         after a 400 for the schema (not counted as an attempt). No attempts left: GaveUp.
        or a typed end   Refused (never retried), Declined, OutputTruncated (cut off twice), SemanticRejected,
                         BudgetExceeded, VendorError, VendorUnavailable, DeadlineExceeded

The drivers, :func:`iterate_sync` and :func:`iterate_async` (:func:`run_sync`/:func:`run_async` when only the
result is wanted), step the loop inside the call's :class:`~guardrail.observe.telemetry.CallReport`: they send
each try with :mod:`guardrail.call.http` and sleep with ``time.sleep``/``asyncio.sleep``. They differ only in
``await``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping, Sequence
from contextlib import aclosing, closing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from guardrail.call.http import Show, send_async, send_sync
from guardrail.call.options import CallOptions, Prepared, RetryPolicy, Settings
from guardrail.call.reask import FieldReask, field_reask, fields_instruction, merged_text
from guardrail.call.streaming import Previewer
from guardrail.call.text_constraints import constraint_report
from guardrail.contract import validation_context
from guardrail.errors import (
    BudgetExceeded,
    CallError,
    DeadlineExceeded,
    Declined,
    GaveUp,
    NoJSONError,
    OutputTruncated,
    PriceUnknown,
    Refused,
    SemanticRejected,
    SemanticViolation,
    TruncatedJSONError,
    VendorError,
    VendorUnavailable,
)
from guardrail.gates.semantic import evaluate
from guardrail.observe import cost
from guardrail.observe.telemetry import CallReport, get_logger
from guardrail.outcome import Attempt, Budget, Outcome, Partial, Result, Usage, result_from
from guardrail.parse.absent import ABSENT_AS_NULL_STAGES
from guardrail.parse.feedback import semantic_feedback
from guardrail.parse.pipeline import parse_report
from guardrail.parse.report import Fix, ParseReport
from guardrail.vendors.base import Completion, Endpoint, Exchange
from guardrail.vendors.failures import Failure, classify
from guardrail.vendors.plans import Plan

if TYPE_CHECKING:
    from guardrail.replay.record import Recorder

__all__ = ["DEADLINE", "Accept", "Answer", "Ask", "Call", "Record", "Retry", "Run", "Send", "Sleep", "Tried",
           "attempt_loop", "http_tries", "iterate_async", "iterate_sync", "replayed", "run_async", "run_sync"]

log = get_logger("guardrail")

#: The :attr:`Failure.code` of a failure that is the call's deadline passing (it becomes DeadlineExceeded).
DEADLINE = "deadline"


@dataclass(slots=True)  # not frozen: built on every call, and a frozen init costs 4x; never mutated
class Call:
    """Everything one structured call needs; built by the structured methods (:mod:`guardrail.call.methods`),
    read by the loop, the response cache and the drivers."""

    endpoint: Endpoint
    #: The caller's SDK keywords (guardrail's own taken out).
    kwargs: Mapping[str, Any]
    prepared: Prepared
    options: CallOptions
    settings: Settings
    retry: RetryPolicy
    #: When the call must end, a ``time.monotonic()`` value (:func:`guardrail.call.options.deadline_at`), or None.
    deadline: float | None
    #: The SDK client's own request timeout in seconds, if it has one (the deadline only ever shortens it).
    timeout: float | None = None
    #: Turns replayed before the first attempt (a list continued after the items it already gave:
    #: :mod:`guardrail.call.iterable`); none for a plain call.
    history: tuple[Exchange, ...] = ()

    @property
    def model(self) -> str:
        return str(self.kwargs.get("model", ""))


# -- what the loop asks of its driver, and what it is told ---------------------------------------------------------
@dataclass(slots=True)  # not frozen: built on every try, and a frozen init costs 4x; never mutated
class Send:
    """Effect: one HTTP try with these SDK keywords (``stream``: read the answer as events)."""

    kwargs: dict[str, Any]
    stream: bool
    #: The model attempt this try belongs to, and the try's number within it (1: the attempt's first).
    attempt: int = 1
    tries: int = 1
    #: The forced output tool's name in tool mode (only its call is the answer), else ``None``.
    tool: str | None = None
    #: The key a non-object root was wrapped under (previews unwrap it), else ``None``.
    wrapped: str | None = None


@dataclass(slots=True)
class Sleep:
    """Effect: wait this many seconds before the next HTTP try (a transport retry)."""

    seconds: float


@dataclass(slots=True)
class Record:
    """Effect: hand the finished call (its outcome, its typed end if any, the answers read as a whole) to its
    recorder (:mod:`guardrail.replay`); made only for a recorded call. Recording writes, so the driver does it:
    the sync one in its thread, the async one in a worker thread (:meth:`perform`, which never raises)."""

    recorder: Recorder
    call: Call
    outcome: Outcome
    error: CallError | None
    answers: Mapping[int, Answer]

    def perform(self) -> None:
        self.recorder.record_call(self.call, self.outcome, self.error, self.answers)


Effect = Send | Sleep | Record
#: What a driver sends back: a :class:`Send`'s completion or the exception its try ended with; ``None`` after a
#: sleep or a record.
Reply = Completion | Exception | None
Loop = Generator[Effect, Reply, Result[Any]]


@dataclass(slots=True)
class Tried:
    """What one attempt's HTTP tries came to: a completion, or the failure left once they were spent."""

    completion: Completion | None
    failure: Failure | None
    calls: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer the loop read as a whole, as a recorder keeps it for replay: the text validated (a field
    re-ask's reply merged into the previous answer), the key a non-object root was wrapped under, and whether
    absent optional fields were read as null (the plan's ``absent_as_null``)."""

    text: str
    wrapped: str | None
    absent_as_null: bool


# -- what an attempt asks, and the verdict on its answer ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FieldsAsked:
    """A field re-ask in progress: the fields asked for again (:class:`~guardrail.call.reask.FieldReask`) and the
    plan asking for them (the call's mode and tool name, a schema of just those fields)."""

    reask: FieldReask
    plan: Plan


@dataclass(slots=True)  # not frozen: one per attempt; never mutated (a Retry verdict carries a new one)
class Ask:
    """What the next attempt asks: the call's plan (``plan_index`` into the prepared plans) or the field re-ask
    in progress, the turns it replays (the latest answer and the feedback on it), its output-token limit (raised
    once after a cut-off: ``raised_limit``) and its temperature."""

    plan_index: int
    fields: FieldsAsked | None
    history: list[Exchange]
    max_tokens: int | None
    temperature: float | None
    raised_limit: bool = False


@dataclass(slots=True)
class Accept:
    """Verdict: the answer parsed, validated and met the rules; ``value`` is the call's value."""

    value: Any


@dataclass(slots=True)
class Retry:
    """Verdict: ask again, as ``ask`` says. A ``counted`` attempt (the model answered) is one of the call's
    ``max_attempts``: with none left the call ends as ``gave_up(reason)``. A 400 for the schema is not counted."""

    ask: Ask
    reason: str = ""
    gave_up: type[GaveUp] = GaveUp
    counted: bool = True


# -- the loop ------------------------------------------------------------------------------------------------------
def attempt_loop(call: Call, *, trace_id: str = "", provider: str = "") -> Loop:
    """The attempt loop (see the module docstring); returns the :class:`Result` or raises a :class:`CallError`.

    ``trace_id`` is the call's (its span's) and ``provider`` its ``gen_ai.provider.name`` as telemetry and
    pricing see it (``azure.ai.openai`` for an Azure OpenAI client); the driver knows both once the span is
    open. An empty ``provider`` means the endpoint's own.
    """
    run = Run(call, trace_id, provider or call.endpoint.provider)
    endpoint = call.endpoint
    ask = Ask(0, None, list(call.history), endpoint.max_tokens(call.kwargs), endpoint.temperature(call.kwargs))
    try:
        while True:
            send, max_tokens = run.request(ask)
            tried = yield from http_tries(call, send)
            verdict = run.judge(ask, tried, max_tokens)
            if isinstance(verdict, Accept):
                result = result_from(run.outcome(ask), verdict.value)
                break
            if verdict.counted and run.model_attempts >= call.settings.max_attempts:
                raise verdict.gave_up(verdict.reason, outcome=run.outcome(ask))
            ask = verdict.ask
    except CallError as error:  # every typed end: recorded (when recording) with the attempts that led to it
        if run.answers is not None:
            yield run.recording(error.outcome, error)
        raise
    if run.answers is not None:
        yield run.recording(result, None)
    return result


def replayed(loop: Loop, replies: Sequence[Completion | Exception]) -> Loop:
    """``loop`` with its first tries answered by ``replies`` (what earlier tries came to, in order): it yields only
    the effects after them. The loop decides only from what it is sent, so the same replies bring it back to the
    same point, with the same record: how a batch job (:mod:`guardrail.batch`) carries a call across rounds and
    processes without keeping the loop itself. A :class:`Sleep` met while replies remain is skipped (its wait
    was waited, or a batch round stood for it)."""
    pending = deque(replies)
    reply: Reply = None
    while True:
        try:
            effect = loop.send(reply)
        except StopIteration as end:
            result: Result[Any] = end.value
            return result
        if isinstance(effect, Sleep) and pending:
            reply = None
        elif isinstance(effect, Send) and pending:
            reply = pending.popleft()
        else:
            reply = yield effect


def http_tries(call: Call, send: Send) -> Generator[Effect, Reply, Tried]:
    """The HTTP tries of one attempt: each :class:`Send` cut to the time the deadline leaves, a retryable failure
    retried after the policy's wait (:meth:`RetryPolicy.wait <guardrail.call.options.RetryPolicy.wait>`)."""
    started = time.monotonic()
    tries = 0
    while True:
        kwargs = _within_deadline(send.kwargs, call.deadline, call.timeout)
        if kwargs is None:
            return Tried(None, _out_of_time(), tries, time.monotonic() - started)
        tries += 1
        reply = yield Send(kwargs, send.stream, send.attempt, tries, send.tool, send.wrapped)
        if isinstance(reply, Completion):
            return Tried(reply, None, tries, time.monotonic() - started)
        assert reply is not None, "a Send is answered with its completion or the exception its try ended with"
        failure = classify(reply)
        if failure is None:  # not a vendor's failure (a bug, a caller's own code that raised): as it is
            raise reply
        if failure.kind == "retryable":
            wait = call.retry.wait(tries, failure, call.deadline)
            if wait is not None:
                yield Sleep(wait)
                continue
            if call.deadline is not None and time.monotonic() >= call.deadline:  # ran into the deadline
                said = failure.message if "deadline" in failure.message else f"{failure.message} (the deadline passed)"
                failure = dataclasses.replace(failure, code=DEADLINE, message=said)
        return Tried(None, failure, tries, time.monotonic() - started)


def _within_deadline(kwargs: dict[str, Any], deadline: float | None, client_timeout: float | None
                     ) -> dict[str, Any] | None:
    """The request keywords with the SDK timeout cut to the time left; ``None`` when no time is left.

    The deadline only shortens a timeout: the call's own ``timeout=``, else the client's, still applies.
    """
    if deadline is None:
        return kwargs
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    given = kwargs.get("timeout", client_timeout)
    if isinstance(given, (int, float)) and given <= left:
        return kwargs if "timeout" in kwargs else {**kwargs, "timeout": given}
    return {**kwargs, "timeout": left}


def _out_of_time() -> Failure:
    error = TimeoutError("the call's deadline passed")
    return Failure("retryable", None, DEADLINE, str(error), None, error)


class Run:
    """One call's record so far (its attempts, their usage) and the judgement of each answer.

    Every decision about what to ask next is returned as a verdict (:class:`Accept`, :class:`Retry`) built from
    the :class:`Ask` it judged; a typed end is raised, carrying the record as its ``outcome``.
    """

    def __init__(self, call: Call, trace_id: str, provider: str) -> None:
        self.call, self.trace_id, self.provider = call, trace_id, provider
        self.plans = call.prepared.plans
        self.contract = call.prepared.contract
        self.started = time.monotonic()
        self.attempts: list[Attempt] = []
        self.usage = Usage()
        self.model_attempts = 0
        self.may_lower_temperature = call.prepared.caps.temperature and not call.prepared.thinking
        #: The answers read as a whole, by attempt number, kept only when the call is recorded (a replay corpus,
        #: :mod:`guardrail.replay`): a field re-ask's answer is the merged whole that was validated.
        self.answers: dict[int, Answer] | None = {} if call.options.recorder is not None else None

    def plan(self, ask: Ask) -> Plan:
        """The plan an attempt sends: the field re-ask's, else the call's current one."""
        return ask.fields.plan if ask.fields is not None else self.plans[ask.plan_index]

    # -- before sending ----------------------------------------------------------------------------------------
    def request(self, ask: Ask) -> tuple[Send, int | None]:
        """The attempt's first try and its output-token limit. Under a budget the limit is what the budget leaves
        once the request's own input is counted, which is known only once it is built: then it is built again
        with that limit, or the call stops before sending (:class:`BudgetExceeded`)."""
        call, plan, max_tokens = self.call, self.plan(ask), ask.max_tokens
        kwargs = call.endpoint.build(call.kwargs, plan, ask.history, max_tokens=max_tokens,
                                     temperature=ask.temperature)
        budget = call.options.budget
        if budget is not None:
            room = self.room(ask, budget, kwargs)
            if max_tokens is None or room < max_tokens:
                max_tokens = room
                kwargs = call.endpoint.build(call.kwargs, plan, ask.history, max_tokens=max_tokens,
                                             temperature=ask.temperature)
        return Send(kwargs, call.endpoint.streams(kwargs), len(self.attempts) + 1, 1,
                    plan.name if plan.mode == "tool" else None, plan.wrapped), max_tokens

    def room(self, ask: Ask, budget: Budget, kwargs: Mapping[str, Any]) -> int:
        """The output tokens the budget leaves for a request with these keywords (at most the ceiling), or
        :class:`BudgetExceeded` when it leaves too few for the request and an answer."""
        left = min(budget.tokens_left(self.usage), self.usd_tokens_left(ask, budget))
        estimate = self.call.endpoint.estimate_input_tokens(kwargs)
        last_output = self.attempts[-1].usage.output_tokens if self.attempts else 1
        if left < estimate + max(last_output, 1):
            raise BudgetExceeded(
                f"stopped before attempt {self.model_attempts + 1}: the budget leaves {max(0, int(left))} tokens, "
                f"the next request needs about {estimate} input tokens plus the answer",
                outcome=self.outcome(ask))
        return min(int(left - estimate), self.call.settings.max_tokens_ceiling)

    def usd_tokens_left(self, ask: Ask, budget: Budget) -> float:
        """The tokens a dollar cap still allows: the dollars left (attempts so far priced at the model that
        answered each) at the model's dearer per-token rate; unlimited without ``max_usd``."""
        if budget.max_usd is None:
            return float("inf")
        provider = self.provider
        rate = cost.usd_per_token(provider, self.call.model)  # PriceUnknown / MissingExtra before any request
        spent = self.outcome(ask).cost_usd
        if spent is None:  # an answering model the table does not price: the cap cannot be kept
            raise PriceUnknown(f"the answers so far came from a model genai-prices does not price, so "
                               f"Budget(max_usd={budget.max_usd}) cannot be kept", provider=provider,
                               model=self.call.model)
        return (budget.max_usd - spent) / rate if rate else float("inf")

    # -- after receiving ---------------------------------------------------------------------------------------
    def judge(self, ask: Ask, tried: Tried, max_tokens: int | None) -> Accept | Retry:
        """The verdict on one attempt: what came back of its tries (sent with this output-token limit)."""
        attempt = self.attempt(ask, tried, max_tokens)
        if tried.failure is not None:
            return self.failed(ask, tried.failure, attempt)
        done = tried.completion
        assert done is not None
        if done.blocked:
            said = done.refusal or f"blocked by the vendor's content filter ({done.finish_reason})"
            raise self.ended(ask, attempt, Refused(said, outcome=self.outcome(ask)))
        if done.finish == "length":
            return self.truncated(ask, done, attempt)
        return self.answered(ask, done, attempt)

    def attempt(self, ask: Ask, tried: Tried, max_tokens: int | None) -> Attempt:
        """The record of one attempt as it came back (its error, fixes and feedback are added when judged)."""
        done = tried.completion
        self.model_attempts += 1 if done is not None else 0
        return Attempt(number=len(self.attempts) + 1, mode=self.plan(ask).mode, raw=done.text if done else None,
                       finish_reason=done.finish_reason if done else None,
                       usage=done.usage if done else Usage(), vendor_calls=tried.calls,
                       seconds=tried.seconds, max_tokens=max_tokens, temperature=ask.temperature,
                       response_model=done.model if done else None, response_id=done.response_id if done else None)

    def failed(self, ask: Ask, failure: Failure, attempt: Attempt) -> Retry:
        """A vendor error left after the transport tries: the next plan for a 400 for the schema, else the
        matching typed end."""
        error: CallError
        if failure.kind == "schema_rejected":
            self.record(attempt, error=VendorError(failure.message, status=failure.status, code=failure.code,
                                                   outcome=self.outcome(ask), snippet=failure.snippet))
            if ask.fields is not None:  # the fields' schema was refused: ask for the whole answer instead
                return Retry(Ask(ask.plan_index, None, ask.history, ask.max_tokens, ask.temperature,
                                 ask.raised_limit), counted=False)
            if ask.plan_index + 1 < len(self.plans):  # replies in the old mode cannot be replayed in the new one
                log.info("guardrail.mode_fallback", trace_id=self.trace_id, to=self.plans[ask.plan_index + 1].mode,
                         reason=failure.message)
                return Retry(Ask(ask.plan_index + 1, None, [], ask.max_tokens, ask.temperature, ask.raised_limit),
                             counted=False)
            raise VendorError(f"vendor error {failure.status}: {failure.message}", status=failure.status,
                              code=failure.code, outcome=self.outcome(ask), snippet=failure.snippet) from failure.error
        if failure.code == DEADLINE:
            error = DeadlineExceeded(f"deadline exceeded ({attempt.vendor_calls} HTTP tries): {failure.message}",
                                     status=failure.status, outcome=self.outcome(ask), code=failure.code,
                                     snippet=failure.snippet)
        elif failure.kind == "retryable":
            error = VendorUnavailable(f"vendor unavailable after {attempt.vendor_calls} tries: {failure.message}",
                                      status=failure.status, outcome=self.outcome(ask), code=failure.code,
                                      snippet=failure.snippet)
        else:
            error = VendorError(f"vendor error {failure.status}: {failure.message}", status=failure.status,
                                code=failure.code, outcome=self.outcome(ask), snippet=failure.snippet)
        raise self.ended(ask, attempt, error) from failure.error

    def truncated(self, ask: Ask, done: Completion, attempt: Attempt) -> Retry:
        """An answer cut off at the output-token limit: once, the limit is raised (within the ceiling); a second
        cut-off, or one at the ceiling, is final."""
        self.record(attempt, error=TruncatedJSONError(
            f"The reply was cut off at the output-token limit ({done.finish_reason}).", text=done.text or ""))
        ceiling = self.call.settings.max_tokens_ceiling
        current = max(ask.max_tokens or 0, done.usage.output_tokens)
        raised = min(ceiling, 2 * current) if current else ceiling
        if ask.raised_limit or raised <= current:
            raise OutputTruncated(f"output truncated at {current} tokens; the limit was already raised once "
                                  f"or is at its ceiling ({ceiling})", outcome=self.outcome(ask))
        return Retry(Ask(ask.plan_index, ask.fields, ask.history, raised, ask.temperature, raised_limit=True),
                     f"output truncated and no attempts left ({self.model_attempts})", OutputTruncated)

    def answered(self, ask: Ask, done: Completion, attempt: Attempt) -> Accept | Retry:
        """An answer that ended on its own: read it (a field re-ask's reply is merged into the previous answer
        and read as a whole), then hold the value to the rules."""
        plan, output_type = self.plan(ask), self.contract.output_type
        fixes: tuple[Fix, ...] = ()
        with validation_context(self.call.options.context or None):  # validators see it as info.context
            if ask.fields is not None:  # a field re-ask: read the fields, then validate the merged whole
                asked, plan = ask.fields, self.plans[ask.plan_index]
                part = self.read(done.text, asked.reask.model, asked.plan)
                if part.error is None:
                    fixes = tuple(part.fixes)
                    merged = merged_text(asked.reask, part.unwrap())
                    self.keep(attempt, merged, plan)
                    report = self.read(merged, output_type, plan)
                else:  # not the fields alone: maybe the whole answer again, else ask for the fields again
                    self.keep(attempt, done.text, plan)
                    report = self.read(done.text, output_type, plan)
                    if report.error is not None:
                        return self.invalid(ask, done, attempt, part, asked.plan, asked)
            else:
                self.keep(attempt, done.text, plan)
                report = self.read(done.text, self.call.prepared.answer_type(plan), plan)
        if report.error is not None:
            return self.invalid(ask, done, attempt, report, plan, None)
        value = getattr(report.value, plan.wrapped) if plan.wrapped else report.value
        return self.ruled(ask, value, done, attempt, (*fixes, *report.fixes))

    def read(self, text: str | None, output_type: Any, plan: Plan) -> ParseReport[Any]:
        if plan.constraint is not None:  # a Regex/Grammar: the text itself, checked (guardrail.call.text_constraints)
            return constraint_report(plan.constraint, text)
        return parse_report(text or "", output_type, aliases=self.call.options.aliases,
                            stages=ABSENT_AS_NULL_STAGES if plan.absent_as_null else None)

    def invalid(self, ask: Ask, done: Completion, attempt: Attempt, report: ParseReport[Any], plan: Plan,
                fields: FieldsAsked | None) -> Retry:
        """An answer that did not parse or validate: one feedback turn listing every problem, asking for a few
        fields only where that suffices (``fields``: the field re-ask being answered, asked again)."""
        assert report.error is not None
        error = report.error if done.text or plan.constraint is not None else \
            NoJSONError("The reply was empty; reply with the JSON value.")
        feedback = _feedback(error.feedback, report.fixes)
        if fields is None:
            fields = self.fields_to_ask(report, plan)
        if fields is not None:
            feedback = f"{feedback}\n{fields_instruction(fields.reask.fields)}"
        self.record(attempt, error=error, fixes=tuple(report.fixes), feedback=feedback)
        return Retry(self.reask(ask, done, feedback, fields),
                     f"no valid output after {self.model_attempts} attempts: {error}")

    def fields_to_ask(self, report: ParseReport[Any], plan: Plan) -> FieldsAsked | None:
        """The fields to ask for next and their plan (prepared by the caller, :class:`Prepared`), when a field
        re-ask is safe (see :mod:`guardrail.call.reask`)."""
        if plan.wrapped or self.call.endpoint.streams(self.call.kwargs):
            return None
        asked = field_reask(self.contract.output_type, report)
        if asked is None:
            return None
        found = self.call.prepared.fields_plan(asked.model, plan)
        return None if found is None else FieldsAsked(asked, found)

    def ruled(self, ask: Ask, value: Any, done: Completion, attempt: Attempt, fixes: tuple[Fix, ...]
              ) -> Accept | Retry:
        """The semantic gate on a validated value: the value, a feedback round, or a typed end."""
        rules, context = self.call.options.rules, self.call.options.context or {}
        verdict = evaluate(rules, value, context) if rules else None
        if verdict is None or verdict.ok:
            self.record(attempt, fixes=fixes)
            return Accept(value)
        if verdict.declined is not None:
            self.record(attempt, fixes=fixes)
            raise Declined(verdict.declined, value=value, outcome=self.outcome(ask))
        feedback = semantic_feedback(list(verdict.violations))
        error = SemanticViolation(feedback, verdict.violations, verdict.failed)
        self.record(attempt, error=error, fixes=fixes, feedback=feedback)
        if verdict.end:
            raise SemanticRejected(f"the answer broke a rule that ends the call: {feedback}", outcome=self.outcome(ask))
        return Retry(self.reask(ask, done, feedback, None),
                     f"no answer met the rules after {self.model_attempts} attempts: {feedback}")

    def reask(self, ask: Ask, done: Completion, feedback: str, fields: FieldsAsked | None) -> Ask:
        """The next attempt after a failed answer: the same plan (or ``fields``), the latest answer and its
        problems replayed once, at a lower temperature.

        Only the latest exchange is replayed, never the whole run of failed answers: the feedback already lists
        every problem of the latest answer, so older answers add tokens (growing with each attempt) and no
        information the model needs.
        """
        temperature = ask.temperature
        if self.may_lower_temperature:
            temperature = round((1.0 if temperature is None else temperature)
                                * self.call.settings.repair_temperature_factor, 3)
        return Ask(ask.plan_index, fields, [Exchange(done, feedback)], ask.max_tokens, temperature, ask.raised_limit)

    # -- the record ----------------------------------------------------------------------------------------------
    def keep(self, attempt: Attempt, text: str | None, plan: Plan) -> None:
        """Keep the text read as the attempt's whole answer, when the call is recorded."""
        if self.answers is not None:
            self.answers[attempt.number] = Answer(text or "", plan.wrapped, plan.absent_as_null)

    def recording(self, outcome: Outcome, error: CallError | None) -> Record:
        """The effect that hands the finished call to its recorder (only made when the call is recorded)."""
        assert self.answers is not None and self.call.options.recorder is not None
        return Record(self.call.options.recorder, self.call, outcome, error, self.answers)

    def record(self, attempt: Attempt, **changes: Any) -> None:
        attempt = _replace(attempt, **changes)
        self.attempts.append(attempt)
        self.usage = self.usage + attempt.usage
        log.info("guardrail.attempt", trace_id=self.trace_id, attempt=attempt.number, mode=attempt.mode,
                 finish_reason=attempt.finish_reason, error=attempt.error_kind, fixes=len(attempt.fixes),
                 input_tokens=attempt.usage.input_tokens, output_tokens=attempt.usage.output_tokens,
                 vendor_calls=attempt.vendor_calls)

    def ended(self, ask: Ask, attempt: Attempt, error: CallError) -> CallError:
        """``error``, the attempt's and the call's, recorded: its outcome then holds the attempt too."""
        self.record(attempt, error=error)
        error.outcome = self.outcome(ask)
        return error

    def outcome(self, ask: Ask) -> Outcome:
        """The record so far, standing at the attempt ``ask`` (its plan's mode and compile report)."""
        plan = self.plans[ask.plan_index]
        return Outcome(self.provider, self.call.model, plan.mode, tuple(self.attempts), self.usage, self.trace_id,
                       time.monotonic() - self.started, self.contract.schema_hash, plan.report)


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


# -- the two drivers -------------------------------------------------------------------------------------------------
Item = Partial | Result[Any]


def _report(call: Call, method: Callable[..., Any]) -> CallReport:
    """The call's telemetry, with the request settings the endpoint reads from the caller's keywords."""
    return CallReport(method, call.endpoint.provider, call.model, temperature=call.endpoint.temperature(call.kwargs),
                      max_tokens=call.endpoint.max_tokens(call.kwargs), capture_content=call.settings.capture_content)


#: What a driver is told about previews: ``True`` for :class:`Previewer` ones, ``False`` for none, or a function
#: making the reader of each streamed try (its :data:`~guardrail.call.http.Show`), as :mod:`guardrail.call.iterable`
#: reads finished list items.
Previews = bool | Callable[[Send], Show]


def _previewer(send: Send, previews: Previews) -> Show | None:
    """A fresh previewer (or the caller's reader) for each try of a streamed attempt, when the caller wants one."""
    if not send.stream or previews is False:
        return None
    return Previewer(send.attempt, send.wrapped) if previews is True else previews(send)


def iterate_sync(call: Call, method: Callable[..., Any], *, previews: Previews,
                 replies: Sequence[Completion | Exception] = (), steps: Callable[..., Loop] = attempt_loop
                 ) -> Generator[Item, None, None]:
    """Run the call with a synchronous SDK ``method``: previews of a streamed answer while it arrives (when
    ``previews``), then the result, its last item. With ``replies`` the call goes on from where they left it
    (:func:`replayed`): a batch item re-asked live. ``steps`` is the loop stepped (:func:`attempt_loop`, or one
    that wraps it: :func:`guardrail.call.reasoning.reasoned_loop`)."""
    with _report(call, method) as report:
        loop = steps(call, trace_id=report.trace_id, provider=report.provider)
        if replies:
            loop = replayed(loop, replies)
        reply: Reply = None
        while True:
            try:
                effect = loop.send(reply)
            except StopIteration as end:
                result: Result[Any] = end.value
                report.end(result, None)
                break
            if isinstance(effect, Sleep):
                time.sleep(effect.seconds)
                reply = None
                continue
            if isinstance(effect, Record):
                effect.perform()
                reply = None
                continue
            try:
                show = _previewer(effect, previews)
                with report.request(effect.kwargs, first=effect.tries == 1) as sent, closing(send_sync(
                        method, call.endpoint, effect.kwargs, stream=effect.stream, tool=effect.tool,
                        deadline=call.deadline, show=show)) as items:
                    for item in items:
                        if isinstance(item, Completion):
                            reply, sent.usage, sent.response_model = item, item.usage, item.model
                        else:
                            yield item
            except Exception as error:
                reply = error
    yield result


async def iterate_async(call: Call, method: Callable[..., Awaitable[Any]], *, previews: Previews,
                        replies: Sequence[Completion | Exception] = (), steps: Callable[..., Loop] = attempt_loop
                        ) -> AsyncGenerator[Item, None]:
    """The async twin of :func:`iterate_sync`."""
    with _report(call, method) as report:
        loop = steps(call, trace_id=report.trace_id, provider=report.provider)
        if replies:
            loop = replayed(loop, replies)
        reply: Reply = None
        while True:
            try:
                effect = loop.send(reply)
            except StopIteration as end:
                result: Result[Any] = end.value
                report.end(result, None)
                break
            if isinstance(effect, Sleep):
                await asyncio.sleep(effect.seconds)
                reply = None
                continue
            if isinstance(effect, Record):
                await asyncio.to_thread(effect.perform)
                reply = None
                continue
            try:
                show = _previewer(effect, previews)
                with report.request(effect.kwargs, first=effect.tries == 1) as sent:
                    async with aclosing(send_async(
                            method, call.endpoint, effect.kwargs, stream=effect.stream, tool=effect.tool,
                            deadline=call.deadline, show=show)) as items:
                        async for item in items:
                            if isinstance(item, Completion):
                                reply, sent.usage, sent.response_model = item, item.usage, item.model
                            else:
                                yield item
            except Exception as error:
                reply = error
    yield result


def run_sync(call: Call, method: Callable[..., Any], *, replies: Sequence[Completion | Exception] = (),
             steps: Callable[..., Loop] = attempt_loop) -> Result[Any]:
    """Run the call with a synchronous SDK method (going on after ``replies``, see :func:`iterate_sync`); return
    the result."""
    with closing(iterate_sync(call, method, previews=False, replies=replies, steps=steps)) as items:
        return _only(next(items))


async def run_async(call: Call, method: Callable[..., Awaitable[Any]], *,
                    replies: Sequence[Completion | Exception] = (), steps: Callable[..., Loop] = attempt_loop
                    ) -> Result[Any]:
    """Run the call with an asynchronous SDK method (going on after ``replies``); return the result. The driver
    is closed before returning, so the call's span ends here, in the caller's context."""
    async with aclosing(iterate_async(call, method, previews=False, replies=replies, steps=steps)) as items:
        return _only(await anext(items))


def _only(item: Item) -> Result[Any]:
    assert isinstance(item, Result), "without previews the only item is the result"
    return item
