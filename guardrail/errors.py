"""Every error guardrail raises, under one root, all defined here (``from guardrail.errors import X`` works for each).

The tree below is the public one: every class in it is defined in this module, and ``(also a ValueError)`` names a
builtin the class also is, so that ``except ValueError`` keeps catching it. guardrail's own control flow (a scan
stopped early, a response to classify, a request with no cache key) is not part of it: those exceptions derive
from :class:`Signal`, are raised and caught inside guardrail and never reach a user; they are drawn in the second
tree with ``[module]``, the module that defines each. Classes whose names start with ``_`` are one module's private
control flow, caught where they are raised, and are not drawn. ``tests/project/test_error_tree.py`` checks the drawings
against the classes, both ways::

    GuardrailError                anything guardrail raises on purpose
    ├── ParseError                model text could not become a valid value (.kind, .feedback, .text, .report)
    │   ├── NoJSONError           kind "no_json": no JSON value could be read from the text
    │   │   └── JSONSyntaxError   kind "syntax_error": JSON began but broke at a position (.position)
    │   ├── TruncatedJSONError    kind "truncated": the JSON stops before it is complete (never closed up)
    │   ├── AmbiguousError        kind "ambiguous": two different readings both satisfy the contract
    │   └── SchemaViolationError  kind "schema_violation": JSON was read but does not satisfy the contract
    │       └── InputLimitError   the text is larger or deeper than the configured limits (.limit, .value)
    ├── ContractError             a JSON Schema contract cannot be honoured (.keyword, .path), before any call
    ├── SemanticViolation         (an attempt's error, not raised alone) rules the answer broke (.violations)
    ├── RuleError                 a semantic rule could not be evaluated (.rule): missing context, or the rule's own
    │                             code raised (the original is the __cause__); never retried
    ├── CallError                 a vendor call ended without a value (.outcome: attempts, raw outputs, usage)
    │   ├── Refused               the model refused (.refusal, the vendor's text); never retried
    │   ├── VendorError           the vendor answered with an error retrying cannot fix (.status, .code): 400, 401, 403,
    │   │                         404, a spend limit; never retried
    │   ├── VendorUnavailable     transport retries (429, 5xx, 529, timeouts, dropped connections, answers not in the
    │   │   │                     API's shape) ran out of tries or of time (.status, .code, .snippet)
    │   │   └── DeadlineExceeded  the call's wall-clock deadline passed; the request in flight was cut off
    │   ├── Declined              the answer is a typed non-answer (status refused/unknown...) (.status, .value)
    │   ├── BatchItemFailed       a batch job's item the vendor never ran: the batch expired or was canceled
    │   │                         (.reason, .custom_id)
    │   ├── ChunkingFailed        a chunked call ended without the whole list (.items: those kept so far,
    │   │   │                     .chunks); a chunk's call kept failing (the __cause__)
    │   │   ├── ChunksExhausted   max_chunks chunks came and none said the list was done
    │   │   └── ChunkRejected     a chunk kept failing the chunk checks: a conflicting duplicate, a gap (.problems)
    │   ├── ReasoningFailed       the reasoning stage of a reasoning-first call gave no reasoning to answer from
    │   └── GaveUp                every attempt's output failed the contract (.errors: one per attempt)
    │       ├── OutputTruncated   the output hit the token limit even after it was raised once (a list too
    │       │                     long for one answer: ask for it in chunks, guardrail.call.chunked)
    │       ├── BudgetExceeded    another attempt would have passed the token or cost budget
    │       └── SemanticRejected  a semantic rule with on_fail="end" failed
    ├── SyncAsyncMismatch         (also a TypeError) a sync call was given an async client, or the reverse
    ├── UnsupportedCall           (also a TypeError) a call shape that cannot give a validated value, such as
    │                             response_model= under with_streaming_response; raised before any request
    ├── MissingExtra              (also an ImportError) an optional feature's package is not installed (.extra)
    ├── PriceUnknown              (also a LookupError) Budget(max_usd=...) for a model genai-prices cannot price
    │                             (.provider, .model); raised before any request
    ├── UsageError                (also a TypeError) an API called the wrong way: an argument of the wrong type or
    │   │                         shape, a missing annotation
    │   └── InvalidExample        a few-shot example is not a valid value of the contract (.index, .path)
    ├── ConfigError               (also a ValueError) a setting or argument value that cannot work: an unknown mode,
    │                             engine or dialect, a limit below 1, a malformed policy entry
    ├── NotReady                  (also a RuntimeError) something read before it exists: a stream's value before its
    │                             end, an emulator's address before it started
    ├── ToolCallError             a model-proposed tool call did not run (.request_id, .tool)
    │   ├── Denied                authorization said no; the message is generic (.rule, .argument, .reason say why)
    │   └── ApprovalRequired      parked until a person approves this exact call (.token, .expires_at, .rule)
    ├── PolicyError               a policy file is invalid (.problems: each with its line and key)
    ├── Rejected                  an argument checker said no (.reason, .argument); the gate
    │   │                         turns it into Denied
    │   └── PathRejected          (also a ValueError) the path checker's no, as resolve_path and
    │                             check_path raise it
    ├── ConnectionDenied          a guarded HTTP transport refused a request or an address (.url, .reason)
    ├── StoreError                a store operation failed (.operation, .key, .claimed, .executed, .result_stored)
    │   └── StoreUnavailable      the store could not be reached or written (down, stalled, locked, read-only)
    ├── IdempotencyError          an idempotent call did not run here (.key: the caller's key)
    │   ├── IdempotencyConflict   the key was used with other arguments
    │   ├── IdempotencyInFlight   still running elsewhere after waiting (.waited)
    │   ├── IdempotencyUnknown    a run started (.started_at) and vanished; resolve it before the key runs again
    │   ├── IdempotencyFailed     the key's one run raised; its error is replayed (.error_type, .message)
    │   └── ResultNotStorable     the key's one run returned a result that cannot be stored (.reason, .preview)
    ├── NothingHappened           raised *by a tool* to say it had no effect, so its key may run again
    ├── ChainExhausted            every tier of a Chain failed (.departures: each tier's failure, in
    │                             order)
    ├── RuleSetError              a rule set is invalid, or built a value the contract refuses
    │                             (.problems, .fired)
    ├── Uncertain                 no option reached the threshold (.choice has the distribution)
    │   └── NoOptionMatched       the reply gave no option any probability, whatever the threshold
    ├── LogprobsUnavailable       (also a TypeError) the backend cannot give token logprobs
    ├── GrammarError              (also a ValueError) the contract cannot be compiled for constrained
    │                             decoding (.report)
    ├── DeadEnd                   no token is allowed at some step of constrained decoding (.state)
    ├── CalibrationError          (also a ValueError) a choose calibration that cannot be fitted, read or applied
    ├── BatchFailed               some rows of LocalModel.generate_batch failed (.results, .traces)
    ├── BatchJobError             a batch job cannot go on: unknown job, a vendor batch that failed, a wait that
    │                             ran out of time (.job_id, .batch_id)
    └── CommandError              what a CLI subcommand prints as its one error line (.code: exit status 1)
        └── CommandLineError      the command line is malformed (exit status 2)

Internal control flow, never raised to a user (not GuardrailErrors, in no ``__all__``)::

    Signal                        base of guardrail's own control flow, raised and caught inside guardrail
    ├── Stop                      [parse.lexer] ends a scan early with a status (truncated, syntax error) and a
    │                             position; caught by the scanner, never leaves it
    ├── FieldConflict             [parse.aliases] a field and a drifted name for it disagree; the alias stage turns it
    │                             into a schema violation
    ├── DuplicateKey              [parse.tokens] (also a ValueError) raised inside the C JSON decoder for a repeated
    │                             key; the lenient scanner takes over
    ├── BadResponse               [vendors.failures] a response not in the API's shape (.status); classified and
    │                             retried, it ends as VendorUnavailable (its __cause__)
    ├── StreamError               [vendors.failures] an error event inside a stream (.body, an SDK error body);
    │                             classified like any vendor error
    ├── ItemError                 [vendors.batches] one batch item's failure (.reason, .body, .status_code when
    │                             the vendor gave one); fed to the item's attempt loop, classified like any vendor error
    └── Uncacheable               [call.cache_key] (also a ValueError) a request with no canonical JSON form; the
                                  response cache catches it and runs the call uncached

Warnings, issued with :func:`warnings.warn` and never raised::

    UserWarning                   (builtin)
    └── VolatileRedisWarning      [store.redis] the Redis server keeps nothing on disk: a restart forgets idempotency
                                  records

``.feedback`` is written for the model, not for the developer: a short list of JSON paths, what is wrong
there and what is expected, with no documentation links and no stack traces. ``str(error)`` is for the
developer and says the same with the kind in front. Every parse error carries the raw text it was given and,
where the pipeline ran, the full :class:`~guardrail.parse.ParseReport` (candidates considered, fixes applied).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from collections.abc import Sequence

    from guardrail.chain.tiers import Departure
    from guardrail.local.choose import Choice
    from guardrail.local.decode import Trace
    from guardrail.outcome import Outcome
    from guardrail.parse.report import ParseReport
    from guardrail.problems import Problem
    from guardrail.schema.lower import CompileReport

__all__ = [
    "AmbiguousError",
    "ApprovalRequired",
    "BatchFailed",
    "BatchItemFailed",
    "BatchJobError",
    "BudgetExceeded",
    "CalibrationError",
    "CallError",
    "ChainExhausted",
    "ChunkRejected",
    "ChunkingFailed",
    "ChunksExhausted",
    "CommandError",
    "CommandLineError",
    "ConfigError",
    "ConnectionDenied",
    "ContractError",
    "DeadEnd",
    "DeadlineExceeded",
    "Declined",
    "Denied",
    "GaveUp",
    "GrammarError",
    "GuardrailError",
    "IdempotencyConflict",
    "IdempotencyError",
    "IdempotencyFailed",
    "IdempotencyInFlight",
    "IdempotencyUnknown",
    "InputLimitError",
    "InvalidExample",
    "JSONSyntaxError",
    "LogprobsUnavailable",
    "MissingExtra",
    "NoJSONError",
    "NoOptionMatched",
    "NotReady",
    "NothingHappened",
    "OutputTruncated",
    "ParseError",
    "ParseErrorKind",
    "PathRejected",
    "PolicyError",
    "PriceUnknown",
    "ReasoningFailed",
    "Refused",
    "Rejected",
    "ResultNotStorable",
    "RuleError",
    "RuleSetError",
    "SchemaViolationError",
    "SemanticRejected",
    "SemanticViolation",
    "StoreError",
    "StoreUnavailable",
    "SyncAsyncMismatch",
    "ToolCallError",
    "TruncatedJSONError",
    "Uncertain",
    "UnsupportedCall",
    "UsageError",
    "VendorError",
    "VendorUnavailable",
]

ParseErrorKind = Literal["no_json", "syntax_error", "truncated", "ambiguous", "schema_violation"]


class Signal(Exception):
    """Base of guardrail's own control flow: raised and caught inside guardrail, never reaching a user, and not
    part of the API (see the second tree above). Not a :class:`GuardrailError`, so that ``except GuardrailError``
    in an application never swallows one by accident."""


class GuardrailError(Exception):
    """Root of every error guardrail raises on purpose; catch this to catch them all."""


class ParseError(GuardrailError):
    """Model output could not be turned into a value of the contract type.

    Attributes:
        kind: one of ``"no_json"``, ``"syntax_error"``, ``"truncated"``, ``"ambiguous"``, ``"schema_violation"``.
        feedback: a short message meant to be sent back to the model as-is.
        text: the raw model text that was parsed (nothing is lost).
        report: the :class:`ParseReport` of the run that failed, or ``None`` if the input was refused
            before any stage ran.
    """

    kind: ParseErrorKind = "schema_violation"

    def __init__(self, feedback: str, *, text: str = "", report: ParseReport[Any] | None = None) -> None:
        super().__init__(f"{self.kind}: {feedback}")
        self.feedback = feedback
        self.text = text
        self.report = report


class NoJSONError(ParseError):
    """No JSON value could be read from the model's text."""

    kind: ParseErrorKind = "no_json"


class JSONSyntaxError(NoJSONError):
    """A JSON value began but broke at ``.position`` (a character offset) in a way no safe repair undoes.

    Not truncated: the text goes on after the break (a mismatched closer like ``["a"}``, a member after
    the object closed). Nothing inside the broken value is used, so no fragment of it can be the answer.
    """

    kind: ParseErrorKind = "syntax_error"

    def __init__(self, feedback: str, *, text: str = "", report: ParseReport[Any] | None = None,
                 position: int = -1) -> None:
        super().__init__(feedback, text=text, report=report)
        self.position = position


class TruncatedJSONError(ParseError):
    """The JSON in the text ends before it is complete; it is reported, never closed up."""

    kind: ParseErrorKind = "truncated"


#: The name :class:`TruncatedJSONError` had before 0.3 (too close to :class:`OutputTruncated`); the same class.
TruncatedError = TruncatedJSONError


class AmbiguousError(ParseError):
    """Two different readings of the text both satisfy the contract, so neither may be chosen."""

    kind: ParseErrorKind = "ambiguous"


class SchemaViolationError(ParseError):
    """JSON was read from the text but it does not satisfy the contract."""

    kind: ParseErrorKind = "schema_violation"


class InputLimitError(SchemaViolationError):
    """The text exceeds a configured limit (size or nesting depth); refused before further work.

    Attributes:
        limit: ``"max_bytes"``, ``"max_depth"`` or ``"max_candidates"``.
        value: the configured limit that was exceeded.
    """

    def __init__(self, feedback: str, *, limit: str, value: int, text: str = "") -> None:
        super().__init__(feedback, text=text)
        self.limit = limit
        self.value = value

    @classmethod
    def too_many_candidates(cls, limit: int, text: str) -> InputLimitError:
        """The error for a text holding more JSON values or fenced blocks than ``max_candidates``."""
        return cls(f"The reply holds more than {limit} JSON values or fenced blocks; reply with exactly one "
                   "JSON value.", limit="max_candidates", value=limit, text=text)


class ToolCallError(GuardrailError):
    """A model-proposed tool call did not run; ``.request_id`` finds its audit record."""

    def __init__(self, message: str, *, tool: str, request_id: str) -> None:
        super().__init__(message)
        self.tool = tool
        self.request_id = request_id


class Denied(ToolCallError):
    """Authorization denied the call. The message is generic on purpose (it is fit to show the model); the
    application reads why in code: ``.rule`` (``args.path``, ``deny.big-refunds``, ``default-deny``...),
    ``.argument`` (where a constraint failed: ``path``, ``urls[1]``, ``target.url``; ``""`` otherwise) and
    ``.reason``; the audit record under ``.request_id`` has the same."""

    def __init__(self, message: str, *, tool: str, request_id: str, rule: str = "", argument: str = "",
                 reason: str = "") -> None:
        super().__init__(message, tool=tool, request_id=request_id)
        self.rule = rule
        self.argument = argument
        self.reason = reason


class ApprovalRequired(ToolCallError):
    """The tool needs a person's approval: the call is parked under ``.token`` until ``.expires_at`` (Unix time).

    Approve with ``guardrail.approve(token, approver=...)``, then run the same call again with
    ``approval_token=token``: only that exact call (tool, arguments, identity) runs, once. ``.rule`` says what
    asked for it: ``"approval"`` (the policy's ``approval = "required"``) or ``"approve.<id>"`` (that rule).
    """

    def __init__(self, message: str, *, tool: str, request_id: str, token: str, expires_at: float,
                 rule: str = "approval") -> None:
        super().__init__(message, tool=tool, request_id=request_id)
        self.token = token
        self.expires_at = expires_at
        self.rule = rule


class PolicyError(GuardrailError):
    """A policy file is invalid; ``.problems`` lists each problem with its line and key."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


class Rejected(GuardrailError):
    """A value breaks a constraint: ``.reason`` says why, ``.argument`` where (``urls[1]``, ``target.url``)."""

    def __init__(self, reason: str, argument: str = "") -> None:
        super().__init__(f"{argument}: {reason}" if argument else reason)
        self.reason = reason
        self.argument = argument

    def at(self, argument: str) -> Rejected:
        """The same rejection located at ``argument`` (kept when already located deeper)."""
        return self if self.argument else Rejected(self.reason, argument)


class PathRejected(Rejected, ValueError):
    """The path checker's no (:func:`~guardrail.tools.policy.paths.resolve_path`, ``check_path``): a
    :class:`Rejected` whose reason is the message, and also the ``ValueError`` those functions have always raised."""


class CallError(GuardrailError):
    """A call to a vendor ended without a validated value; nothing that happened is lost.

    Attributes:
        outcome: the :class:`~guardrail.outcome.Outcome`: every attempt (raw output, error, fixes, usage, mode,
            timing), total usage and the trace id.
    """

    def __init__(self, message: str, *, outcome: Outcome) -> None:
        super().__init__(message)
        self.outcome = outcome

    @property
    def raw_outputs(self) -> list[str]:
        """Every raw model output received, in order (text or tool-call arguments)."""
        return [a.raw for a in self.outcome.attempts if a.raw is not None]

    @property
    def trace_id(self) -> str:
        """The trace id of the call (the OpenTelemetry trace id when tracing is on)."""
        return self.outcome.trace_id


class Refused(CallError):
    """The model refused to answer; the vendor's words are in ``.refusal``. Refusals are not retried."""

    def __init__(self, refusal: str, *, outcome: Outcome) -> None:
        super().__init__(f"the model refused: {refusal}", outcome=outcome)
        self.refusal = refusal


class VendorError(CallError):
    """The vendor answered with an error that retrying cannot fix (bad request, auth, not found, spend limit).

    ``.snippet`` is the start of the response body, secrets redacted (``None`` when there was none).
    """

    def __init__(self, message: str, *, status: int | None, code: str | None, outcome: Outcome,
                 snippet: str | None = None) -> None:
        super().__init__(message, outcome=outcome)
        self.status = status
        self.code = code
        self.snippet = snippet


class VendorUnavailable(CallError):
    """Transport retries ran out (count or deadline) on rate limits, server errors, timeouts, drops, or answers
    that were not in the API's shape (an HTML page from a proxy, a body or stream event that is not JSON).

    ``.status`` is the last HTTP status (``None`` when no response came), ``.code`` what went wrong when it is
    known (the vendor's error code, ``"not_json"``, ``"content_type"``, ``"shape"``, ``"deadline"``) and
    ``.snippet`` the start of the last response body, secrets redacted.
    """

    def __init__(self, message: str, *, status: int | None, outcome: Outcome, code: str | None = None,
                 snippet: str | None = None) -> None:
        super().__init__(message, outcome=outcome)
        self.status = status
        self.code = code
        self.snippet = snippet


class DeadlineExceeded(VendorUnavailable):
    """The call's wall-clock deadline (``RetryPolicy.deadline``, or what a chain had left) passed before a
    usable answer came; a request still in flight, a slowly arriving body or stream included, was cut off."""


class Declined(CallError):
    """The model answered with a non-answer status (``refused``, ``unknown``...): routed here, never as a value."""

    def __init__(self, status: str, *, value: Any, outcome: Outcome) -> None:
        super().__init__(f"the model did not answer: status {status!r}", outcome=outcome)
        self.status = status
        self.value = value


class BatchItemFailed(CallError):
    """An item of a batch job (:mod:`guardrail.batch`) that the vendor never ran: the batch expired before it
    came to it (``reason`` ``"expired"``), it was canceled (``"canceled"``), or no result came for it
    (``"missing"``). ``.outcome`` holds the item's earlier rounds, if any. Items the vendor answered with an error
    end as a live call's would (:class:`VendorError`, :class:`VendorUnavailable`)."""

    def __init__(self, message: str, *, reason: str, custom_id: str, outcome: Outcome) -> None:
        super().__init__(message, outcome=outcome)
        self.reason = reason
        self.custom_id = custom_id


class SemanticViolation(GuardrailError):
    """A validated answer broke semantic rules; ``.feedback`` lists them for the model, like a parse error's."""

    kind: str = "semantic_violation"

    def __init__(self, feedback: str, violations: tuple[Any, ...], rules: tuple[str, ...] = ()) -> None:
        super().__init__(f"semantic_violation: {feedback}")
        self.feedback = feedback
        self.violations = violations
        #: The names of the rules that failed (metrics count rejections per rule).
        self.rules = rules


class ChunkingFailed(CallError):
    """A chunked call (:mod:`guardrail.call.chunked`) ended without the whole list: a chunk's call kept failing
    (its error is the ``__cause__``), or a subclass's reason. ``.outcome`` sums every chunk's; ``.items`` are the
    items kept so far, in order, and never the whole list; ``.chunks`` the accepted chunks' records."""

    def __init__(self, message: str, *, outcome: Outcome, items: list[Any], chunks: tuple[Any, ...]) -> None:
        super().__init__(message, outcome=outcome)
        self.items = items
        self.chunks = chunks


class ChunksExhausted(ChunkingFailed):
    """``max_chunks`` chunks came and none said the list was done: ``.items`` is a beginning, not the list."""


class ChunkRejected(ChunkingFailed):
    """A chunk kept failing the chunk checks after its re-asks: an item conflicting with an earlier one of the
    same key, a gap, or no new item (``.problems``, the lines the model was sent)."""

    def __init__(self, message: str, *, outcome: Outcome, items: list[Any], chunks: tuple[Any, ...],
                 problems: tuple[str, ...]) -> None:
        super().__init__(message, outcome=outcome, items=items, chunks=chunks)
        self.problems = problems


class ReasoningFailed(CallError):
    """The first stage of a reasoning-first call (``reason_first="two_stage"``, :mod:`guardrail.call.reasoning`) gave
    no reasoning to answer from: an empty reply. The answer stage was not asked; ``.outcome`` holds the stage."""

    kind: str = "reasoning_failed"


class GaveUp(CallError):
    """Every attempt's output failed the contract; ``.errors`` holds each attempt's error, in order."""

    kind: str = "gave_up"

    @property
    def errors(self) -> list[GuardrailError]:
        """The error of each failed attempt, in order."""
        return [a.error for a in self.outcome.attempts if a.error is not None]


class OutputTruncated(GaveUp):
    """The output hit the token limit, and again after the limit was raised once (within its ceiling).

    A list longer than one answer can hold (thirty video segments with timings, say) is better asked for in
    chunks: ``create_chunked(..., chunking=Chunking(key=...))`` (:mod:`guardrail.call.chunked`)."""

    kind: str = "truncated"


class BudgetExceeded(GaveUp):
    """Stopped before an attempt that could have passed the token or cost budget."""

    kind: str = "budget"


class SemanticRejected(GaveUp):
    """A semantic rule whose failure ends the call (``on_fail="end"``) failed; no further attempt is made."""

    kind: str = "semantic"


class SyncAsyncMismatch(GuardrailError, TypeError):
    """A synchronous call met an async client or tier (or the reverse): nothing was sent.

    For example ``chain.run(...)`` with an ``AsyncOpenAI`` tier: use ``await chain.arun(...)``, which awaits
    async tiers and runs sync ones in a worker thread. Also a ``TypeError``, as calling a function the wrong
    way is.
    """


class MissingExtra(GuardrailError, ImportError):
    """An optional feature needs a package that is not installed; the message names the extra that brings it.

    Attributes:
        extra: the extra of the ``guardrail-llm`` distribution to install (``"openai"``, ``"local"``, ...).
        module: the module that could not be imported.
    """

    def __init__(self, module: str, extra: str, feature: str) -> None:
        super().__init__(f"{feature} needs {module!r}, which is not installed: pip install 'guardrail-llm[{extra}]'",
                         name=module)
        self.extra = extra
        self.module = module


class RuleError(GuardrailError):
    """A semantic rule could not be evaluated: it needs a ``context`` key the call did not pass, or the
    rule's own code raised (that exception is the ``__cause__``). A fault of the program, not of the model's
    answer, so it is never sent back to the model as feedback.

    Attributes:
        rule: the rule's name.
    """

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"rule {rule!r}: {message}")
        self.rule = rule


# -- stores and idempotency (guardrail.store) ------------------------------------------------------------------------


class StoreError(GuardrailError):
    """A store operation failed; the driver's exception is the ``__cause__``.

    Attributes:
        operation: the store operation (``"put_if_absent"``, ``"get"``...).
        key: the caller's idempotency key when the failure happened inside an idempotent call, else ``None``.
        claimed: whether this caller held the key's claim (``None``: unknown, e.g. a claim write that timed out).
        executed: whether the action ran (``False``: it certainly did not).
        result_stored: whether its outcome was recorded (``None`` when nothing ran).
    """

    def __init__(self, message: str, *, operation: str, key: str | None = None, claimed: bool | None = False,
                 executed: bool = False, result_stored: bool | None = None) -> None:
        super().__init__(message)
        self.operation = operation
        self.key = key
        self.claimed = claimed
        self.executed = executed
        self.result_stored = result_stored


class StoreUnavailable(StoreError):
    """The store could not be reached or written: connection refused or lost, a stall past the timeout, a SQLite
    file locked past its busy timeout, read-only or deleted. Nothing was run unless ``.executed`` says so."""


class IdempotencyError(GuardrailError):
    """An idempotent call did not run here; ``.key`` is the key the caller gave."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


class IdempotencyConflict(IdempotencyError):
    """The key was already used with different arguments (another fingerprint); the action was not run."""

    def __init__(self, key: str, detail: str = "was already used with different arguments") -> None:
        super().__init__(f"idempotency key {key!r} {detail}", key=key)


class IdempotencyInFlight(IdempotencyError):
    """The same key and arguments were still executing elsewhere after waiting ``.waited`` seconds."""

    def __init__(self, key: str, waited: float) -> None:
        super().__init__(f"idempotency key {key!r} is still executing elsewhere after waiting {waited:g} s", key=key)
        self.waited = waited


class IdempotencyUnknown(IdempotencyError):
    """A run of this key started at ``.started_at`` (Unix time) and its runner vanished (crash, kill, lost lease)
    before recording an outcome: the side effect may or may not have happened, so the key is not run again.

    Resolve it with ``guardrail.tools.execute.resolve(...)`` (or ``Idempotency.resolve``) once the application knows, or
    give the tool a ``reconcile`` hook that asks the downstream system. ``.attempt`` counts runs of the key.
    """

    def __init__(self, key: str, started_at: float, attempt: int = 1) -> None:
        super().__init__(f"idempotency key {key!r}: a run started at {started_at:.3f} (Unix time) ended without "
                         "an outcome; it may have taken effect, so it is not run again until resolved", key=key)
        self.started_at = started_at
        self.attempt = attempt


class IdempotencyFailed(IdempotencyError):
    """The key's one run raised; the failure was recorded and is replayed instead of running again.

    Attributes:
        error_type: the class name of the original exception.
        message: its message, redacted.
    """

    def __init__(self, key: str, error_type: str, message: str) -> None:
        super().__init__(f"idempotency key {key!r}: its run failed with {error_type}: {message}", key=key)
        self.error_type = error_type
        self.message = message


class ResultNotStorable(IdempotencyError):
    """The key's one run completed but its result could not be stored (not serializable, or larger than the
    limit); every caller of the key gets this error, and the action is never run again for it.

    Attributes:
        reason: why the result was not stored.
        preview: a short redacted ``repr`` of the result.
    """

    def __init__(self, key: str, reason: str, preview: str) -> None:
        super().__init__(f"idempotency key {key!r}: the run completed but its result is not storable ({reason})",
                         key=key)
        self.reason = reason
        self.preview = preview


class NothingHappened(GuardrailError):
    """Raise this from a tool to say the call had no effect at all (e.g. the downstream refused it before acting):
    the idempotency key is released and a retry runs the tool again. Any other exception is recorded and replayed."""


# -- policy: guarded HTTP transport (guardrail.tools.policy.http) --------------------------------------------------


class ConnectionDenied(GuardrailError):
    """A guarded HTTP transport refused a request (its URL breaks the policy: a redirect out, a nested URL) or a
    connection (the host resolves to a refused address); nothing was sent. ``.url`` and ``.reason`` say which
    and why."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"request to {url} refused: {reason}")
        self.url = url
        self.reason = reason


# --- JSON Schema contracts -------------------------------------------------------------------------------------


class ContractError(GuardrailError):
    """A JSON Schema given as a contract cannot be honoured: an invalid schema (an unknown ``type``, a
    malformed keyword), a ``$ref`` that leaves the document, an unknown ``$schema``. Raised when the
    contract is compiled, so before any vendor call.

    Attributes:
        keyword: the offending keyword (``"type"``, ``"$ref"``, ``"$schema"``...).
        path: a JSON Pointer to the schema node holding it (``"/properties/age"``; ``""`` is the root).
        reason: what is wrong, in the validator's words.
    """

    def __init__(self, reason: str, *, keyword: str, path: str) -> None:
        where = path or "the root"
        super().__init__(f"unusable JSON Schema: {keyword!r} at {where}: {reason}")
        self.keyword = keyword
        self.path = path
        self.reason = reason


class UnsupportedCall(GuardrailError, TypeError):
    """A wrapped-client call that cannot return a validated value in the shape asked for.

    For example ``response_model=`` under ``with_streaming_response`` (whose point is not reading the body,
    while validation needs all of it). Raised before any request is sent; the message names what to use
    instead. Also a ``TypeError``, like any other misuse of a call's arguments.
    """


# -- cost (issue 18) ---------------------------------------------------------------------------------------------
class PriceUnknown(GuardrailError, LookupError):
    """A dollar budget (``Budget(max_usd=...)``) was set for a model the price table cannot price.

    Without a price the cap cannot be kept, so nothing is sent. Attributes: ``provider`` and ``model`` as
    looked up in ``genai-prices``.
    """

    def __init__(self, message: str, *, provider: str, model: str) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model


# -- misuse: an API called the wrong way, found before anything is sent -------------------------------------------


class UsageError(GuardrailError, TypeError):
    """A guardrail API was called the wrong way: an argument of the wrong type or shape (``Chain`` given something
    that is not a tier, ``wrap()`` given an object that is not an SDK client), a missing annotation. A fault of the
    program, raised where it happens, before any request. Also a ``TypeError``, as calling a function the wrong way
    is, so ``except TypeError`` keeps working."""


class InvalidExample(UsageError):
    """A few-shot example (``examples=[...]``) is not a valid value of the contract: raised where the examples are
    given (when a function is decorated, a chain request is made, or a wrapped call starts), before any request.

    Attributes:
        index: the example's position in ``examples`` (0 for the first).
        path: where in the example the first problem is, as a JSON path (``$`` for the whole value).
        problem: what is wrong there.
    """

    def __init__(self, index: int, path: str, problem: str) -> None:
        super().__init__(f"examples[{index}] is not a valid value of the contract at {path}: {problem}")
        self.index = index
        self.path = path
        self.problem = problem


class ConfigError(GuardrailError, ValueError):
    """A setting or argument whose value guardrail cannot work with: ``Budget(max_cost=...)`` without a price, an
    unknown engine, mode, dialect or server kind, a limit below 1, a malformed policy entry. Raised where the value
    is given, before any request. Also a ``ValueError``, so ``except ValueError`` keeps working."""


class NotReady(GuardrailError, RuntimeError):
    """Something read before it exists: a stream's ``.value`` before the stream was read to the end, an emulator's
    address before it started. Also a ``RuntimeError``, as it always was."""


# -- the degradation chain (guardrail.chain) --------------------------------------------------------------------------


class ChainExhausted(GuardrailError):
    """Every tier failed; ``.departures`` holds each tier's failure, in order (an ExceptionGroup-style record)."""

    def __init__(self, departures: Sequence[Departure]) -> None:
        lines = "; ".join(f"{d.tier}: {d.reason}" for d in departures)
        super().__init__(f"every tier failed: {lines}")
        self.departures = tuple(departures)

    @property
    def exceptions(self) -> tuple[BaseException, ...]:
        return tuple(d.error for d in self.departures)


class RuleSetError(GuardrailError):
    """A rule set is invalid, or produced a value the contract refuses; ``.problems`` says where and what.

    ``.fired`` holds the rules that had matched when the produced value failed the contract (empty for load
    errors), so the failure can be explained like a success.
    """

    def __init__(self, problems: list[Problem], fired: tuple[Any, ...] = ()) -> None:
        super().__init__("; ".join(str(problem) for problem in problems) or "invalid rule set")
        self.problems = problems
        self.fired = fired


#: The name :class:`RuleSetError` had before 0.3 (too close to :class:`RuleError`); the same class.
RulesError = RuleSetError


# -- the local tier (guardrail.local) ---------------------------------------------------------------------------------


class Uncertain(GuardrailError):
    """No option reached the threshold: route to a person or a stronger tier (``.choice`` has the distribution)."""

    def __init__(self, choice: Choice, threshold: float | None, message: str | None = None) -> None:
        super().__init__(message or f"best option {choice.best!r} has probability {choice.confidence:.3f} < "
                                    f"{threshold}")
        self.choice = choice
        self.threshold = threshold


class NoOptionMatched(Uncertain):
    """The API's reply gave no option any probability: neither the answer nor any listed alternative token
    could become one of the options (or the model refused). Raised whatever the threshold: there is no
    judgment to return. An :class:`Uncertain`, so the same escalation catches it; ``.choice`` holds only
    floors (every option ``"floor"``), ``.text`` the model's answer (or refusal), ``.refused`` whether it
    refused."""

    def __init__(self, choice: Choice, threshold: float | None, *, text: str, refused: bool = False) -> None:
        what = "refused" if refused else "answered"
        super().__init__(choice, threshold, f"no option was found in the reply: the model {what} {text[:200]!r}")
        self.text = text
        self.refused = refused


class LogprobsUnavailable(GuardrailError, TypeError):
    """The backend cannot give token logprobs, so ``choose`` cannot score options with it.

    Raised for Anthropic clients (the Messages API exposes no logprobs), and when an OpenAI-compatible server
    answers a ``logprobs=True`` request without them. Also a ``TypeError``: the backend is the wrong kind.
    """


class GrammarError(GuardrailError, ValueError):
    """The contract cannot be compiled for constrained decoding; ``.report`` says which keywords and why.

    Also a ``ValueError``, as it was before it joined the :class:`~guardrail.errors.GuardrailError` tree."""

    def __init__(self, message: str, report: CompileReport | None = None) -> None:
        super().__init__(message)
        self.report = report


class CalibrationError(GuardrailError, ValueError):
    """A calibration for ``guardrail.choose`` cannot be used: a file that is missing, not JSON or not a calibration
    (the message names it), a malformed one (a temperature that is not positive, isotonic points out of order), or
    no labelled cases to fit on. Also a ``ValueError``."""


class DeadEnd(GuardrailError):
    """No token is allowed at some step (the grammar and the vocabulary cannot continue); where the parser stood:

    ``.text`` the output so far, ``.position`` its length in characters (where the next character was needed),
    ``.tokens`` the tokens produced, ``.expected`` the text the grammar required next when it required one
    (``None`` when several continuations were possible and no token could start any), ``.reason`` the engine's
    stop reason (``NoExtensionBias``: no token extends the text) and ``.state`` its full parser state dump.
    """

    def __init__(self, message: str, *, text: str, state: str, position: int | None = None, tokens: int = 0,
                 expected: str | None = None, reason: str = "") -> None:
        where = f" after {text[-40:]!r} (character {len(text) if position is None else position})"
        super().__init__(message + where + (f"; the grammar needs {expected!r} next" if expected else ""))
        self.detail = message
        self.text = text
        self.state = state
        self.position = len(text) if position is None else position
        self.tokens = tokens
        self.expected = expected
        self.reason = reason


class BatchFailed(GuardrailError):
    """Some rows of :meth:`LocalModel.generate_batch` failed; nothing is lost.

    ``.results`` has one entry per prompt, in order: the validated value, or the exception that row raised
    (:class:`TruncatedJSONError`, :class:`DeadEnd`, a ``ParseError``). ``.traces`` has every row's trace.
    """

    def __init__(self, results: list[Any], traces: list[Trace]) -> None:
        failed = [i for i, r in enumerate(results) if isinstance(r, Exception)]
        super().__init__(f"{len(failed)} of {len(results)} generations failed (rows {failed}); "
                         f"first: {results[failed[0]]}")
        self.results = results
        self.traces = traces

    @property
    def errors(self) -> dict[int, Exception]:
        return {i: r for i, r in enumerate(self.results) if isinstance(r, Exception)}


class BatchJobError(GuardrailError):
    """A batch job (:mod:`guardrail.batch`) cannot go on: its id is not in the store, a vendor batch of it failed
    as a whole (its input refused), or waiting for it ran out of time. ``.batch_id`` is the vendor batch concerned,
    when one is."""

    def __init__(self, message: str, *, job_id: str, batch_id: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.batch_id = batch_id


# -- the command line (guardrail.cli) ---------------------------------------------------------------------------------


class CommandError(GuardrailError):
    """What a subcommand prints as its one error line; ``code`` is the exit status (1: invalid input)."""

    code = 1  # guardrail.cli.common.EXIT_INVALID


class CommandLineError(CommandError):
    """The command line is malformed (exit status 2)."""

    code = 2  # guardrail.cli.common.EXIT_USAGE
