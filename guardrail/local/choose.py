"""Finite-choice judgments: a probability distribution over a fixed set of options, not just one label.

Two kinds of backend, one call shape, ``choose(prompt, options, *, backend, threshold=None)``:

* a :class:`~guardrail.local.LocalModel`: every option's full token sequence is scored after the prompt in
  one batched forward pass (the prompt is tokenized once and shared, so options that share a first token are
  still told apart by the rest of their tokens), then ``exp(log p(option | prompt))`` is normalised over
  the options. Every option is scored exactly.
* a :class:`~guardrail.local.LogprobBackend` (an OpenAI client and a model name:
  ``backend=guardrail.local.LogprobBackend(client, "gpt-4.1-mini")``): one Chat Completions request with
  ``logprobs``/``top_logprobs``, scored from the tokens the API lists. That is an approximation - an API only
  lists the top alternatives at the positions it generated - so ``Choice.scoring`` says which options were
  read from the reply (``"exact"``), split with options sharing their prefix (``"shared"``) or given a bounded
  floor because none of their tokens was listed (``"floor"``). The method and its limits are in
  :mod:`guardrail.local.choose_api`. An Anthropic client raises :class:`~guardrail.local.LogprobsUnavailable`
  (its API exposes no logprobs); a reply in which no option can be found raises :class:`NoOptionMatched`.

``achoose`` is the same judgment for async code: with an ``openai.AsyncOpenAI`` client it awaits the request;
any other backend runs in a worker thread. The sync and async paths share the request building and the
I/O-free scoring (:func:`guardrail.local.choose_api.score`); only the one ``create`` call differs.

With ``threshold``, a best option whose probability is below it is not an answer: :class:`Uncertain` is raised
(carrying the distribution) so the caller can escalate.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from guardrail.errors import ConfigError, NoOptionMatched, Uncertain, UsageError
from guardrail.local.choose_api import Basis, LogprobBackend, is_sdk_client, read_reply, score

__all__ = ["Choice", "NoOptionMatched", "Uncertain", "achoose", "choose"]


@dataclass(frozen=True, slots=True)
class Choice:
    """The chosen option and the whole distribution (probabilities sum to 1, in the options' order).

    ``scoring`` says how each option's probability was obtained: ``"exact"`` (read from the model),
    ``"shared"`` or ``"floor"`` (bounded, not read; API backends only - see :mod:`guardrail.local.choose_api`).
    An option missing from it counts as exact.
    """

    best: str
    probabilities: dict[str, float]
    scoring: dict[str, Basis] = field(default_factory=dict)

    @property
    def confidence(self) -> float:
        return self.probabilities[self.best]

    @property
    def exact(self) -> frozenset[str]:
        """Options whose probability was read from the model's output."""
        return frozenset(o for o in self.probabilities if self.scoring.get(o, "exact") == "exact")

    @property
    def bounded(self) -> frozenset[str]:
        """Options whose probability is a bound or a share, not a reading (``"shared"`` or ``"floor"``)."""
        return frozenset(self.probabilities) - self.exact


def choose(prompt: str, options: Sequence[str], *, backend: Any, threshold: float | None = None) -> Choice:
    """A distribution over ``options`` for ``prompt``.

    Args:
        prompt: the question; the options are listed after it for an API backend.
        options: at least two distinct, non-empty strings.
        backend: a :class:`~guardrail.local.LocalModel`, or ``guardrail.local.LogprobBackend(client, model)`` with a
            sync ``openai.OpenAI`` client (an ``AsyncOpenAI`` one needs :func:`achoose`).
        threshold: below this probability the best option is not an answer: :class:`Uncertain`.

    Raises:
        ValueError: bad options (also options an API answer cannot tell apart), a threshold outside [0, 1],
            a prompt and option longer than a local model's context.
        LogprobsUnavailable: an Anthropic client, or a server that returns no logprobs.
        NoOptionMatched: the API's reply names no option at all (an :class:`Uncertain`).
        Uncertain: the best option's probability is below ``threshold``.
        TypeError: an unsupported backend. Transport failures are the SDK's own exceptions.
    """
    options = _check(options)
    _check_threshold(threshold)
    api = _api(backend)
    if api is None:
        return _gate(_local_choice(backend, prompt, options), threshold)
    if api.is_async:
        raise UsageError("the backend's client is openai.AsyncOpenAI: use `await guardrail.achoose(...)`")
    response = api.create(api.request(prompt, options))
    return api_choice(options, response, threshold)


async def achoose(prompt: str, options: Sequence[str], *, backend: Any, threshold: float | None = None) -> Choice:
    """:func:`choose` for async code: awaits an ``openai.AsyncOpenAI`` backend's request; runs any other backend
    (a sync client, a :class:`~guardrail.local.LocalModel`) in a worker thread. Same arguments, result and
    errors."""
    options = _check(options)
    _check_threshold(threshold)
    api = _api(backend)
    if api is None or not api.is_async:
        return await asyncio.to_thread(choose, prompt, options, backend=backend, threshold=threshold)
    response = await api.create(api.request(prompt, options))
    return api_choice(options, response, threshold)


def _check_threshold(threshold: float | None) -> None:
    if threshold is not None and not 0 <= threshold <= 1:  # NaN fails this too
        raise ConfigError(f"threshold must be a probability in [0, 1] (or None), not {threshold!r}")


def _check(options: Sequence[str]) -> list[str]:
    if isinstance(options, str) or len(options) < 2 or len(set(options)) != len(options) \
            or any(not isinstance(o, str) or not o for o in options):
        raise ConfigError("options must be at least two distinct, non-empty strings")
    return list(options)


def _api(backend: Any) -> LogprobBackend | None:
    """The API backend, ``None`` for a local model; typed errors for the wrong kinds of backend."""
    if isinstance(backend, LogprobBackend):
        return backend
    if is_sdk_client(backend):  # raises LogprobsUnavailable for an Anthropic client
        raise UsageError("an SDK client needs a model name: "
                        "backend=guardrail.local.LogprobBackend(client, 'model-name')")
    if not (hasattr(backend, "model") and hasattr(backend, "tokenizer")):
        raise UsageError(f"backend must be a guardrail.local.LocalModel or a guardrail.local.LogprobBackend, not "
                        f"{type(backend).__name__}")
    return None


def _gate(choice: Choice, threshold: float | None) -> Choice:
    if threshold is not None and choice.confidence < threshold:
        raise Uncertain(choice, threshold)
    return choice


def _best(probabilities: dict[str, float]) -> str:
    return max(probabilities, key=lambda o: probabilities[o])


def api_choice(options: list[str], response: Any, threshold: float | None) -> Choice:
    """The judgment from an API reply (pure): score, then :class:`NoOptionMatched` or the threshold gate."""
    reply = read_reply(response)
    scored = score(options, reply)
    choice = Choice(_best(scored.probabilities), scored.probabilities, scored.basis)
    if not scored.matched:
        raise NoOptionMatched(choice, threshold, text=reply.text, refused=reply.refused)
    return _gate(choice, threshold)


def _local_choice(backend: Any, prompt: str, options: list[str]) -> Choice:
    scores = _log_probs(backend, prompt, options)
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = sum(weights)
    probabilities = {option: w / total for option, w in zip(options, weights, strict=True)}
    return Choice(_best(probabilities), probabilities, dict.fromkeys(options, "exact"))


def _log_probs(backend: Any, prompt: str, options: list[str]) -> list[float]:
    """log p(option | prompt) for each option, from one batched forward pass over the full token sequences.

    Options are tokenized without special tokens (no BOS between the prompt and the option). An option
    whose tokens are a prefix of another option's ("yes" / "yes please") also needs its *end* scored, or it
    would always collect the longer option's mass too: it is scored as its tokens followed by none of the
    tokens that continue it into a longer option, i.e. log p(tokens) + log(1 - p(those continuations)).
    """
    import torch

    tokenizer, model = backend.tokenizer, backend.model
    prefix = list(tokenizer(prompt)["input_ids"]) or [tokenizer.eos_token_id or 0]
    suffixes = [list(tokenizer(option, add_special_tokens=False)["input_ids"]) for option in options]
    width = len(prefix) + max(len(s) for s in suffixes)
    context = getattr(backend, "context", None)
    if context is not None and width > context:
        raise ConfigError(f"the prompt and the longest option take {width} tokens; the model's context is {context}")
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
        onward = {other[len(suffix)] for other in suffixes
                  if len(other) > len(suffix) and other[:len(suffix)] == suffix}
        if onward:
            going_on = float(logp[row, len(prefix) + len(suffix) - 1, sorted(onward)].exp().sum())
            total += math.log(max(1.0 - going_on, 1e-300))
        scores.append(total)
    return scores
