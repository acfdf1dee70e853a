"""Finite-choice judgments: a probability distribution over a fixed set of options, not just one label.

``choose(prompt, options, backend=local_model)`` scores every option's full token sequence after the prompt in
one batched forward pass (the prompt is tokenized once and shared, so options that share a first token are
still told apart by the rest of their tokens), then normalises ``exp(log p(option | prompt))`` over the options.
With ``threshold``, a best option whose probability is below it is not an answer: :class:`Uncertain` is raised
(carrying the distribution) so the caller can escalate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from guardrail.errors import GuardrailError


@dataclass(frozen=True, slots=True)
class Choice:
    """The chosen option and the whole distribution (probabilities sum to 1)."""

    best: str
    probabilities: dict[str, float]

    @property
    def confidence(self) -> float:
        return self.probabilities[self.best]


class Uncertain(GuardrailError):
    """No option reached the threshold: route to a person or a stronger tier (``.choice`` has the distribution)."""

    def __init__(self, choice: Choice, threshold: float) -> None:
        super().__init__(f"best option {choice.best!r} has probability {choice.confidence:.3f} < {threshold}")
        self.choice = choice
        self.threshold = threshold


def choose(prompt: str, options: Sequence[str], *, backend: Any, threshold: float | None = None) -> Choice:
    """A distribution over ``options`` for ``prompt`` from a :class:`~guardrail.local.LocalModel` backend."""
    if len(options) < 2 or len(set(options)) != len(options) or any(not o for o in options):
        raise ValueError("options must be at least two distinct, non-empty strings")
    scores = _log_probs(backend, prompt, list(options))
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    probabilities = {option: w / total for option, w in zip(options, weights, strict=True)}
    best = max(probabilities, key=lambda o: probabilities[o])
    choice = Choice(best, probabilities)
    if threshold is not None and choice.confidence < threshold:
        raise Uncertain(choice, threshold)
    return choice


def _log_probs(backend: Any, prompt: str, options: list[str]) -> list[float]:
    """log p(option tokens | prompt tokens) for each option, from one batched forward pass."""
    import torch

    tokenizer, model = backend.tokenizer, backend.model
    prefix = list(tokenizer(prompt)["input_ids"]) or [tokenizer.eos_token_id or 0]
    suffixes = [list(tokenizer(option)["input_ids"]) for option in options]
    width = len(prefix) + max(len(s) for s in suffixes)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    rows = [prefix + s + [pad] * (width - len(prefix) - len(s)) for s in suffixes]
    mask = [[1] * (len(prefix) + len(s)) + [0] * (width - len(prefix) - len(s)) for s in suffixes]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor(rows, device=backend.device),
                       attention_mask=torch.tensor(mask, device=backend.device)).logits.float()
    logp = torch.log_softmax(logits, dim=-1)
    scores = []
    for row, suffix in enumerate(suffixes):
        total = 0.0
        for offset, token in enumerate(suffix):
            position = len(prefix) + offset - 1  # the logits at position i predict token i + 1
            total += float(logp[row, position, token])
        scores.append(total)
    return scores
