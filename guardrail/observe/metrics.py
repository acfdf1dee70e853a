"""Metrics: the OpenTelemetry GenAI client metrics for every vendor request, and guardrail's own counters.

Only the OpenTelemetry *API* is used (``metrics.get_meter("guardrail", version)``); without an SDK configured
by the application every instrument is a no-op. Instruments are created once, at import; the API's proxy
meter hands them to the real provider whenever the application sets one.

**GenAI client metrics** (semantic conventions for generative AI metrics), recorded per HTTP request:

``gen_ai.client.operation.duration`` (``s``)
    One measurement per HTTP request sent: each transport retry and each re-ask is its own SDK call, so its
    own operation, exactly as the vendors' own instrumentations count it. A request that failed (a 429, a
    5xx, a timeout, an answer not in the API's shape) carries ``error.type``: the exception's class name
    (``RateLimitError``, ``InternalServerError``, ``APITimeoutError``, ``TimeoutError``, ``BadResponse``...),
    or ``cancelled`` when the caller stopped reading.
``gen_ai.client.token.usage`` (``{token}``)
    Two measurements (``gen_ai.token.type`` = ``input``, ``output``) per response that reported usage: every
    billed request once, retries and re-asks included. A failed request reports no usage and records none.

Both carry ``gen_ai.operation.name`` (``chat``), ``gen_ai.provider.name`` (``openai``, ``anthropic``,
``azure.ai.openai``, or the self-hosted server kind), ``gen_ai.request.model``, ``gen_ai.response.model``
(when the answer named it), ``server.address`` and ``server.port``, with the bucket boundaries the
conventions advise.

**No double counting.** When the SDK method is already instrumented by OpenTelemetry (for example
``opentelemetry-instrumentation-openai-v2`` on Chat Completions), that instrumentation records the two GenAI
metrics for every request guardrail sends through it, and guardrail records neither for those requests (see
:func:`guardrail.observe.telemetry.instrumented`); it still records everything under ``guardrail.*``, which no
vendor instrumentation knows about. A method the instrumentation does not wrap (the Responses API under
``openai-v2`` 2.4b0, Anthropic without its instrumentation) keeps guardrail's own GenAI metrics, so each
request is counted exactly once either way.

**guardrail's own metrics**, per structured call (names under ``guardrail.*``):

==================================  ==========  =====================================================================
``guardrail.call.duration``         ``s``       the whole call: every attempt, retry and wait (``error.type`` if failed)
``guardrail.attempts``              {attempt}   model attempts (``guardrail.attempt.result``: ``ok`` or the error kind)
``guardrail.repairs``               {fix}       local repairs on answers that validated (``guardrail.fix.kind``)
``guardrail.reasks``                {reask}     attempts sent after a failed one (``guardrail.reask.reason``)
``guardrail.gave_up``               {call}      calls that ran out of attempts or budget (``guardrail.gave_up.reason``)
``guardrail.truncations``           {attempt}   answers cut off at the output-token limit
``guardrail.refusals``              {call}      refusals and content-filter blocks (``guardrail.refusal.source``)
``guardrail.semantic.rejections``   {rejection} answers a semantic rule rejected (``guardrail.rule``)
``guardrail.empty_results``         {call}      valid answers that hold nothing (``None``, ``""``, ``[]``, all-empty)
``guardrail.cost``                  ``USD``     US dollars spent, when the ``cost`` extra prices the model
``guardrail.tool.denials``          {denial}    tool calls denied (``guardrail.rule``, ``gen_ai.tool.name``)
``guardrail.chain.results``         {call}      chain results (``guardrail.chain.tier``, ``.kind``, ``.degraded``)
``guardrail.cache.lookups``         {lookup}    response-cache lookups (``guardrail.cache.result``: ``hit``/``miss``)
==================================  ==========  =====================================================================

Call-level counters carry ``gen_ai.provider.name``, ``gen_ai.request.model`` and ``guardrail.mode``. All
attribute values are low-cardinality: no ids, no content.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from opentelemetry import metrics

from guardrail._version import __version__
from guardrail.observe import cost
from guardrail.outcome import Outcome, Usage

if TYPE_CHECKING:
    from guardrail.observe.telemetry import Target

__all__ = ["cache_lookup", "chain_result", "is_empty", "record_call", "record_request", "tool_denied"]

#: Bucket boundaries the GenAI conventions advise for the two client histograms.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

_meter = metrics.get_meter("guardrail", __version__)
_token_usage = _meter.create_histogram(
    "gen_ai.client.token.usage", unit="{token}", description="Number of input and output tokens used.",
    explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
_operation_duration = _meter.create_histogram(
    "gen_ai.client.operation.duration", unit="s", description="GenAI operation duration.",
    explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
_call_duration = _meter.create_histogram(
    "guardrail.call.duration", unit="s", description="A structured call, every attempt, retry and wait included.",
    explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
_attempts = _meter.create_counter("guardrail.attempts", unit="{attempt}", description="Model attempts.")
_repairs = _meter.create_counter("guardrail.repairs", unit="{fix}",
                                 description="Local repairs made to answers that validated, by kind.")
_reasks = _meter.create_counter("guardrail.reasks", unit="{reask}", description="Attempts sent after a failed one.")
_gave_up = _meter.create_counter("guardrail.gave_up", unit="{call}",
                                 description="Calls that ended without a value after their attempts or budget ran out.")
_truncations = _meter.create_counter("guardrail.truncations", unit="{attempt}",
                                     description="Answers cut off at the output-token limit.")
_refusals = _meter.create_counter("guardrail.refusals", unit="{call}",
                                  description="Calls the model refused or the vendor's content filter blocked.")
_semantic = _meter.create_counter("guardrail.semantic.rejections", unit="{rejection}",
                                  description="Validated answers a semantic rule rejected, by rule.")
_empty = _meter.create_counter("guardrail.empty_results", unit="{call}",
                               description="Valid answers that hold nothing.")
_cost = _meter.create_counter("guardrail.cost", unit="USD", description="US dollars spent on vendor requests.")
_denials = _meter.create_counter("guardrail.tool.denials", unit="{denial}", description="Tool calls denied, by rule.")
_chain = _meter.create_counter("guardrail.chain.results", unit="{call}",
                               description="Chain results by the tier that answered, degraded or not.")
_cache = _meter.create_counter("guardrail.cache.lookups", unit="{lookup}", description="Response-cache lookups.")


# -- per HTTP request ----------------------------------------------------------------------------------------
def record_request(target: Target, model: str, seconds: float, usage: Usage | None, response_model: str | None,
                   failed: str | None) -> None:
    """The GenAI client metrics of one HTTP request that took ``seconds`` (see the module docstring): its
    duration, and its token usage when it answered (``failed``: the ``error.type`` of a request that did not).
    The caller records nothing when ``target`` is already instrumented or no meter provider is configured
    (:class:`guardrail.observe.telemetry.CallReport` times the requests)."""
    attributes = {"gen_ai.operation.name": "chat", **target.attributes(), "gen_ai.request.model": model}
    if response_model:
        attributes["gen_ai.response.model"] = response_model
    if failed is not None:
        attributes["error.type"] = failed
    _operation_duration.record(max(0.0, seconds), attributes)
    if usage is not None and failed is None:
        _token_usage.record(usage.input_tokens, {**attributes, "gen_ai.token.type": "input"})
        _token_usage.record(usage.output_tokens, {**attributes, "gen_ai.token.type": "output"})


# -- per call ------------------------------------------------------------------------------------------------
def record_call(target: Target, outcome: Outcome, error: BaseException | None, value: Any = None) -> None:
    """guardrail's counters for one finished structured call, all read from its :class:`Outcome` (the caller
    skips this when no meter provider is configured: there is nothing to record into)."""
    base = {"gen_ai.provider.name": target.provider, "gen_ai.request.model": outcome.model,
            "guardrail.mode": outcome.mode}
    duration = dict(base)
    if error is not None:
        duration["error.type"] = type(error).__name__
    _call_duration.record(max(0.0, outcome.seconds), duration)
    previous: str | None = None
    for attempt in outcome.attempts:
        kind = attempt.error_kind
        if attempt.raw is not None or attempt.finish_reason is not None:  # the model answered: a model attempt
            _attempts.add(1, {**base, "guardrail.attempt.result": kind or "ok"})
            if previous is not None:
                _reasks.add(1, {**base, "guardrail.reask.reason": previous})
        if kind in (None, "semantic_violation"):
            for fix in attempt.fixes:
                _repairs.add(1, {**base, "guardrail.fix.kind": fix.kind})
        if kind == "truncated":
            _truncations.add(1, base)
        if kind == "semantic_violation":
            for rule in getattr(attempt.error, "rules", ()) or ("unnamed",):
                _semantic.add(1, {**base, "guardrail.rule": rule})
        previous = kind if attempt.raw is not None or attempt.finish_reason is not None else previous
    _record_end(base, outcome, error, value)


def _record_end(base: dict[str, Any], outcome: Outcome, error: BaseException | None, value: Any) -> None:
    from guardrail.errors import GaveUp, Refused  # errors imports nothing of observe; kept local for clarity

    if isinstance(error, Refused):
        last = outcome.attempts[-1].finish_reason if outcome.attempts else None
        source = "content_filter" if last in {"content_filter"} else "refusal"
        _refusals.add(1, {**base, "guardrail.refusal.source": source})
    elif isinstance(error, GaveUp):
        _gave_up.add(1, {**base, "guardrail.gave_up.reason": str(getattr(error, "kind", "") or "attempts")})
    elif error is None and is_empty(value):
        _empty.add(1, base)
    if outcome.attempts and cost.available():  # pricing costs time: only when collected
        spent = outcome.cost_usd
        if spent:
            _cost.add(spent, base)


def is_empty(value: Any) -> bool:
    """Whether a valid answer holds nothing: ``None``, an empty string or container, or an object (pydantic
    model or mapping) whose every field is empty. ``0`` and ``False`` are answers, not empty."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, dict):
        return all(is_empty(item) for item in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return len(value) == 0
    fields = getattr(type(value), "model_fields", None)
    if isinstance(fields, dict) and fields:
        return all(is_empty(getattr(value, name, None)) for name in fields)
    return False


# -- other parts of guardrail call these ---------------------------------------------------------------------
def tool_denied(rule: str, tool: str) -> None:
    """One tool call denied by ``rule`` (the audit record's rule: ``default-deny``, ``unknown-tool``...)."""
    _denials.add(1, {"guardrail.rule": rule or "unnamed", "gen_ai.tool.name": tool})


def chain_result(tier: str, kind: str, degraded: bool) -> None:
    """One chain call answered by ``tier`` (of ``kind``: vendor, local, rules, default), degraded or not."""
    _chain.add(1, {"guardrail.chain.tier": tier, "guardrail.chain.kind": kind, "guardrail.chain.degraded": degraded})


def cache_lookup(hit: bool, *, store: str | None = None) -> None:
    """One response-cache lookup: a hit or a miss (``store``: the store's kind, ``memory``/``sqlite``/``redis``).
    The response cache calls this once per lookup; a hit that failed re-validation is a miss."""
    attributes: dict[str, Any] = {"guardrail.cache.result": "hit" if hit else "miss"}
    if store:
        attributes["guardrail.cache.store"] = store
    _cache.add(1, attributes)
