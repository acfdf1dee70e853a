"""Reasoning first on the local tier: a :class:`~guardrail.local.LocalModel` thinks in free text, then answers under
the contract's grammar with its reasoning in the prompt.

The local twin of :mod:`guardrail.call.reasoning` (the same :class:`~guardrail.call.reasoning.Reasoning` options):

``"two_stage"``
    Stage one generates free text (no grammar: a pattern that accepts anything, so the model may stop wherever it
    likes) for at most :attr:`Reasoning.max_tokens` new tokens; reasoning cut off by that cap is kept as it is.
    Stage two is the ordinary constrained generation over the prompt, the reasoning request, the reasoning and
    the follow-up: the answer cannot break the
    contract's grammar and still goes through the parse layer and validation. An empty reasoning is
    :class:`~guardrail.errors.ReasoningFailed`; the ``timeout`` covers both stages (stage two gets what stage one
    left; none left is :class:`~guardrail.errors.DeadlineExceeded`).

``"field"``
    One constrained generation of the contract with a leading ``reasoning`` field (the grammar makes the model
    write it first); the value is the contract's type without it.

:func:`generate_reasoned` returns a :class:`~guardrail.Result` (provider ``local``): the value, the reasoning on
``.reasoning``, both stages as attempts (the first one's mode ``"reasoning"``) and their token counts summed in
``.usage``. Each stage is a span ``guardrail.reasoning.stage`` (the generation's span is its child). The chain's
local tier calls it when the request asks to reason first.
"""

from __future__ import annotations

import time
from typing import Any

from guardrail.call.reasoning import REASONING_MODE, Reasoning, reasoned_contract, reasoning_of, split
from guardrail.contract import compile_contract
from guardrail.errors import DeadlineExceeded, ReasoningFailed, TruncatedJSONError
from guardrail.local.constraints import Regex
from guardrail.local.decode import Trace
from guardrail.local.telemetry import model_name
from guardrail.observe.telemetry import current_trace_id, internal_span
from guardrail.outcome import Attempt, Outcome, Result, Usage

__all__ = ["FREE_TEXT", "generate_reasoned"]

#: Stage one's constraint: any text at all (free generation, ended by the model or the token cap).
FREE_TEXT = Regex(r"(?s).*")

#: The mode of the answer's attempt (grammar-masked generation).
_ANSWER_MODE = "grammar"


def generate_reasoned(model: Any, prompt: str, output_type: Any, *, reason_first: Reasoning | str = "two_stage",
                      temperature: float = 1.0, max_new_tokens: int = 256, seed: int | None = None,
                      timeout: float | None = None) -> Result[Any]:
    """A value of ``output_type`` for ``prompt`` from ``model``, reasoned first (see the module docstring).

    ``max_new_tokens`` bounds the answer (and, in ``"field"`` mode, the reasoning with it); the reasoning stage
    is bounded by the :class:`Reasoning`'s ``max_tokens``. Raises the typed errors of
    :meth:`LocalModel.generate <guardrail.local.LocalModel.generate>`, and :class:`ReasoningFailed` /
    :class:`DeadlineExceeded` as above."""
    spec = reasoning_of(reason_first)
    assert spec is not None
    record = _Record(model, prompt, output_type)
    if spec.mode == "field":
        extended = reasoned_contract(output_type, spec.field)
        with internal_span("guardrail.reasoning.stage", _attributes("field", spec)):
            value, trace = model.generate_with_trace(prompt, extended, temperature=temperature,
                                                     max_new_tokens=max_new_tokens, seed=seed, timeout=timeout)
        record.add(_ANSWER_MODE, prompt, trace)
        plain, text = split(value, output_type, spec.field)
        return record.result(plain, text, _ANSWER_MODE)

    with internal_span("guardrail.reasoning.stage", _attributes("reasoning", spec)):
        asked = f"{prompt}\n\n{spec.prompt}\n\n"
        (said,), (first,) = model.generate_batch_with_traces([asked], FREE_TEXT, temperature=temperature,
                                                             max_new_tokens=spec.max_tokens, seed=seed,
                                                             timeout=timeout)
    record.add(REASONING_MODE, asked, first)
    if isinstance(said, TruncatedJSONError):  # stopped by the cap (or the timeout) inside a character
        said = first.text
    elif isinstance(said, Exception):
        raise said
    text = str(said).strip()
    if not text:
        raise ReasoningFailed(f"the reasoning stage generated no text ({first.stop_reason or 'stopped'})",
                              outcome=record.outcome(REASONING_MODE))
    left = None if timeout is None else timeout - (time.monotonic() - record.started)
    if left is not None and left <= 0:
        raise DeadlineExceeded(f"the timeout ({timeout} s) passed in the reasoning stage", status=None,
                               outcome=record.outcome(REASONING_MODE))
    follow = f"{asked}{text}\n\n{spec.follow_up}\n\n"
    with internal_span("guardrail.reasoning.stage", _attributes("answer", spec)):
        value, second = model.generate_with_trace(follow, output_type, temperature=temperature,
                                                  max_new_tokens=max_new_tokens, seed=seed, timeout=left)
    record.add(_ANSWER_MODE, follow, second)
    return record.result(value, text, _ANSWER_MODE)


def _attributes(stage: str, spec: Reasoning) -> dict[str, Any]:
    return {"guardrail.reasoning.stage": stage, "guardrail.reasoning.mode": spec.mode,
            "guardrail.reasoning.max_tokens": spec.max_tokens}


class _Record:
    """The stages generated so far, as a :class:`Result`'s attempts and usage (tokens counted, not billed)."""

    def __init__(self, model: Any, prompt: str, output_type: Any) -> None:
        self.model, self.output_type = model, output_type
        self.started = time.monotonic()
        self.trace_id = current_trace_id()
        self.attempts: list[Attempt] = []
        self.usage = Usage()

    def add(self, mode: str, prompt: str, trace: Trace) -> None:
        usage = Usage(len(self.model.tokenizer(prompt)["input_ids"]), trace.sampled + trace.forced)
        self.attempts.append(Attempt(len(self.attempts) + 1, mode, raw=trace.text, finish_reason=trace.stop_reason,
                                     usage=usage))
        self.usage = self.usage + usage

    def outcome(self, mode: str) -> Outcome:
        return Outcome("local", model_name(self.model), mode, tuple(self.attempts), self.usage, self.trace_id,
                       time.monotonic() - self.started, compile_contract(self.output_type).schema_hash)

    def result(self, value: Any, reasoning: str, mode: str) -> Result[Any]:
        outcome = self.outcome(mode)
        return Result(outcome.provider, outcome.model, outcome.mode, outcome.attempts, outcome.usage,
                      outcome.trace_id, outcome.seconds, outcome.schema_hash, None, value, reasoning=reasoning)
