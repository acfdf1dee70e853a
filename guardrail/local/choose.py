"""Finite-choice judgments: a probability distribution over a fixed set of options, not just one label.

Two kinds of backend, one call shape, ``choose(prompt, options, *, backend, threshold=None)``:

* a :class:`~guardrail.local.LocalModel`: every option's full token sequence is scored after the prompt in
  one batched forward pass (options that share a first token are still told apart by the rest of their
  tokens), then ``exp(log p(option | prompt))`` is normalised over the options. Every option is scored exactly.
  Each option is tokenized together with the prompt (token healing: ``"Answer: "`` + ``"yes"`` is scored as
  the model's own ``" yes"`` token, not a split ``" "``, ``"yes"``; see :func:`_healed`).
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
(carrying the distribution) so the caller can escalate. With ``calibration`` (a
:class:`~guardrail.local.Calibration` or the path of its JSON file, fitted by ``guardrail calibrate``), the
probabilities are calibrated first, so the threshold acts on calibrated ones (:mod:`guardrail.local.calibration`).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from guardrail.errors import ConfigError, NoOptionMatched, Uncertain, UsageError
from guardrail.local.calibration import Calibration, resolve
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


#: What ``calibration=`` takes: a :class:`~guardrail.local.Calibration`, the path of its JSON file, or ``None``.
CalibrationArg = Calibration | str | os.PathLike[str] | None


def choose(prompt: str, options: Sequence[str], *, backend: Any, threshold: float | None = None,
           calibration: CalibrationArg = None) -> Choice:
    """A distribution over ``options`` for ``prompt``.

    Args:
        prompt: the question; the options are listed after it for an API backend.
        options: at least two distinct, non-empty strings.
        backend: a :class:`~guardrail.local.LocalModel`, or ``guardrail.local.LogprobBackend(client, model)`` with a
            sync ``openai.OpenAI`` client (an ``AsyncOpenAI`` one needs :func:`achoose`).
        threshold: below this probability the best option is not an answer: :class:`Uncertain`.
        calibration: a :class:`~guardrail.local.Calibration` (or its JSON file's path) applied to the
            probabilities before the threshold; the best option stays the same.

    Raises:
        ValueError: bad options (also options an API answer cannot tell apart), a threshold outside [0, 1],
            a prompt and option longer than a local model's context.
        LogprobsUnavailable: an Anthropic client, or a server that returns no logprobs.
        NoOptionMatched: the API's reply names no option at all (an :class:`Uncertain`).
        Uncertain: the best option's probability is below ``threshold``.
        CalibrationError: ``calibration`` is not a calibration, or its file cannot be read as one.
        TypeError: an unsupported backend. Transport failures are the SDK's own exceptions.
    """
    options = _check(options)
    _check_threshold(threshold)
    calibrated = resolve(calibration)
    api = _api(backend)
    if api is None:
        return _gate(_calibrate(_local_choice(backend, prompt, options), calibrated), threshold)
    if api.is_async:
        raise UsageError("the backend's client is openai.AsyncOpenAI: use `await guardrail.achoose(...)`")
    response = api.create(api.request(prompt, options))
    return api_choice(options, response, threshold, calibrated)


async def achoose(prompt: str, options: Sequence[str], *, backend: Any, threshold: float | None = None,
                  calibration: CalibrationArg = None) -> Choice:
    """:func:`choose` for async code: awaits an ``openai.AsyncOpenAI`` backend's request; runs any other backend
    (a sync client, a :class:`~guardrail.local.LocalModel`) in a worker thread. Same arguments, result and
    errors."""
    options = _check(options)
    _check_threshold(threshold)
    calibrated = resolve(calibration)
    api = _api(backend)
    if api is None or not api.is_async:
        return await asyncio.to_thread(choose, prompt, options, backend=backend, threshold=threshold,
                                       calibration=calibrated)
    response = await api.create(api.request(prompt, options))
    return api_choice(options, response, threshold, calibrated)


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


def _calibrate(choice: Choice, calibration: Calibration | None) -> Choice:
    """``choice`` with its probabilities calibrated (the same best option and scoring)."""
    if calibration is None:
        return choice
    return Choice(choice.best, calibration.apply(choice.probabilities), choice.scoring)


def api_choice(options: list[str], response: Any, threshold: float | None,
               calibration: Calibration | None = None) -> Choice:
    """The judgment from an API reply (pure): score, calibrate, then :class:`NoOptionMatched` or the threshold
    gate."""
    reply = read_reply(response)
    scored = score(options, reply)
    choice = _calibrate(Choice(_best(scored.probabilities), scored.probabilities, scored.basis), calibration)
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

    Token healing: each option is tokenized *together with* the prompt, as the model saw such text in training,
    not after it (``"Answer: "`` + ``"yes"`` is ``"Answer:", " yes"``, not ``"Answer:", " ", "yes"``, a split a
    model almost never saw, which would skew the options' probabilities). The options are scored after the
    longest token prefix that the prompt's own tokens share with every option's joint tokens; what follows it
    (the prompt's last characters when a boundary token merges them with an option, then the option) is scored,
    the same prompt text for every option, so the options compare on equal terms (see :func:`_healed`).

    An option whose tokens are a prefix of another option's ("yes" / "yes please") also needs its *end* scored,
    or it would always collect the longer option's mass too: it is scored as its tokens followed by none of the
    tokens that continue it into a longer option, i.e. log p(tokens) + log(1 - p(those continuations)).
    """
    import torch

    tokenizer, model = backend.tokenizer, backend.model
    prefix, suffixes = _healed(tokenizer, prompt, options)
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


def _ids(tokenizer: Any, text: str, special: bool) -> list[int]:
    return list(tokenizer(text, add_special_tokens=special)["input_ids"])


def _healed(tokenizer: Any, prompt: str, options: list[str]) -> tuple[list[int], list[list[int]]]:
    """``(shared context tokens, each option's tokens to score)``, the prompt and each option tokenized together.

    ``prompt + option`` is tokenized for each option; the context is the special tokens the tokenizer puts before
    a text (a BOS) and the longest prefix of the prompt's own tokens that every joint tokenization starts with;
    each option's scored tokens are the rest of its joint tokenization. When a boundary token merges the prompt's
    end with an option, the context stops before it, so that token is scored whole. A tokenizer that does not
    place the text's tokens inside its special ones is tokenized the old way (prompt, then option).
    """
    plain = _ids(tokenizer, prompt, False)
    full = _ids(tokenizer, prompt, True)
    lead = next((full[:i] for i in range(len(full) - len(plain) + 1) if full[i:i + len(plain)] == plain), None)
    if lead is None or not plain:
        suffixes = [_ids(tokenizer, option, False) for option in options]
        context = full
    else:
        joint = [_ids(tokenizer, prompt + option, False) for option in options]
        keep = min(_common(plain, tokens) for tokens in joint)
        context = lead + plain[:keep]
        suffixes = [tokens[keep:] for tokens in joint]
    for option, suffix in zip(options, suffixes, strict=True):
        if not suffix:
            raise ConfigError(f"option {option!r} adds no tokens after the prompt: it cannot be scored")
    return context or [tokenizer.eos_token_id or 0], suffixes


def _common(a: list[int], b: list[int]) -> int:
    """The length of the longest common prefix of ``a`` and ``b``."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
