"""The ``local`` mode: a case run through a local transformers model with constrained decoding
(:class:`guardrail.local.LocalModel`), judged like every other run's cases.

The prompt is the case's system and user text, as the chain's local tier makes it; decoding is greedy
(temperature 0), so a run is repeatable. The grammar mask keeps the output inside the contract's JSON Schema;
the value then passes the same parse layer and validation, and the semantic rules (there is no re-ask: a value
that breaks one is a failure, ``semantic_violation``, counted per rule). Nothing is sent to a vendor:
``vendor_calls`` and ``cost_usd`` are 0; ``input_tokens``/``output_tokens`` are the prompt's tokens and the
tokens generated.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

from guardrail.errors import GuardrailError, SemanticViolation
from guardrail.evals.cases import Case
from guardrail.evals.run import CaseResult, judge_case
from guardrail.gates.semantic import Rule, evaluate
from guardrail.outcome import Attempt, Outcome, Usage
from guardrail.vendors.openai_chat import split_messages

__all__ = ["LOCAL", "local_case", "local_outcome"]

#: The mode label of a local run.
LOCAL = "local"


def local_outcome(name: str, seconds: float, *, raw: str | None = None, usage: Usage | None = None,
                  error: GuardrailError | None = None) -> Outcome:
    """The record of one local generation: one attempt that sent no request (``vendor_calls`` 0)."""
    spent = usage or Usage()
    attempt = Attempt(1, LOCAL, raw=raw, finish_reason="stop", usage=spent, error=error, vendor_calls=0,
                      seconds=seconds)
    return Outcome(LOCAL, name, LOCAL, (attempt,), spent, uuid.uuid4().hex, seconds, "")


def local_case(model: Any, name: str, case: Case, contract: Any, rules: Sequence[Rule],
               max_new_tokens: int) -> CaseResult:
    """Generate ``case``'s value with the :class:`~guardrail.local.LocalModel` ``model`` (reported as ``name``)
    and judge it."""
    system, user = split_messages(case.messages)
    prompt = f"{system}\n\n{user}" if system else user
    started = time.perf_counter()
    (produced,), (trace,) = model.generate_batch_with_traces([prompt], contract, temperature=0.0,
                                                             max_new_tokens=max_new_tokens)
    seconds = time.perf_counter() - started
    usage = Usage(len(model.tokenizer(prompt)["input_ids"]), len(trace.tokens))
    error: GuardrailError | None = None
    value: Any = None
    if isinstance(produced, GuardrailError):
        error = produced
    elif isinstance(produced, BaseException):
        raise produced  # not guardrail's: a bug
    else:
        value = produced
        verdict = evaluate(rules, value, {}) if rules else None
        if verdict is not None and not verdict.ok:
            feedback = "; ".join(f"{v.path}: {v.message}" for v in verdict.violations) or (verdict.declined or "")
            error = SemanticViolation(feedback, verdict.violations, verdict.failed)
    outcome = local_outcome(name, seconds, raw=trace.text, usage=usage, error=error)
    return judge_case(case, LOCAL, name, contract, outcome, None if error else value, error)
