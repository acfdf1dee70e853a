"""Finite-choice judgments from an API vendor's ``logprobs``/``top_logprobs`` (OpenAI Chat Completions and
OpenAI-compatible servers that return them).

``guardrail.choose(prompt, options, backend=guardrail.local.LogprobBackend(client, "gpt-4.1-mini"))`` sends one
Chat Completions request (``logprobs=True``, ``top_logprobs=20``, ``temperature=0``, a small ``max_tokens``)
whose messages list the options one per line and ask for exactly one of them, copied. The reply's tokens
are then scored by :func:`score` - pure code, no I/O, shared by the sync and async drivers in
:mod:`guardrail.local.choose`.

How options are scored, and where it is an approximation
---------------------------------------------------------
An API returns, for each token it generated, that token's logprob and the ``top_logprobs`` most probable
tokens *at that position only*. Nothing is known about positions it did not generate. So:

* **Walk.** Start at the first generated token with every option still possible. At each position, every
  listed alternative other than the generated token is a branch: the text so far plus that token. Its mass
  (the probability of reaching the position times the token's probability) goes to the options that text can
  still become. Then follow the generated token. While it keeps two or more options possible (a shared
  prefix: ``"yes"`` / ``"yes, but"``, ``"billing"`` / ``"billing_dispute"``), the walk goes on to the next
  position, whose alternatives are where those options diverge. As soon as only one option is possible, that
  option gets the mass of the path so far (the answer is committed) and the walk ends; when none is, it ends
  too (the answer is not an option; that mass is dropped). If the tokens run out with the answer complete,
  the option it spells gets the path's mass; with the answer cut off by ``max_tokens``, the options it can
  still become share it.
* **exact / shared / floor** (:attr:`Scored.basis`, then ``Choice.scoring``). *exact*: some of the option's
  mass comes from a token whose text can only become this option. *shared*: its only evidence is a branch
  several options can still become (a listed ``"bill"`` with options ``billing`` and ``billing_dispute``, the
  generated path never going there): the branch's mass is split evenly among them, which is a guess, and the
  branch's mass is an upper bound for each. *floor*: none of its tokens was ever listed. Its probability
  is then bounded, not read: at the position where it would have had to appear (the last one at which the
  answer could still become it) it was not among the listed tokens, so its first token there had at most the
  smallest listed probability; and all the options missing there together had at most what the listed
  tokens leave unlisted (``1 - sum``). Each gets ``P(reaching the position) * min(smallest listed
  probability, unlisted / number of options missing there)``: the most it could have had, shared fairly.
  After the last generated token nothing is listed (the stop token is never shown); there the smallest
  probability listed anywhere in the reply stands in for the smallest listed one, and ``1`` for the
  unlisted share. The floor is conservative on purpose: it lowers the best option's confidence rather than
  overstating it.
* **Merging variants.** Texts are compared after dropping leading whitespace, quotes, backticks and asterisks,
  and (for a complete answer) the same plus ``.`` and ``!`` at the end, and case-insensitively
  (``str.casefold``). So ``" Yes"``, ``"yes"``, ``"YES"`` and ``'"yes".'`` are all the option ``yes``, and
  their listed probabilities add up. Case is kept when two options differ only in case. Options that are the
  same after that normalisation cannot be told apart in an answer: ``ValueError``. Alternatives that add
  nothing but such decoration at their position (a leading space or newline before the answer) are not
  counted for any option: they say nothing about which option follows.
* **Other simplifications.** Token texts are taken from ``bytes`` when given (a token may be part of a UTF-8
  character; a character is matched once it is complete, and a partial one against the next character of the
  option). Other tokenisations of the same text that are not listed are not counted. OpenAI's ``-9999.0``
  ("very unlikely") counts as probability 0. The end-of-text probability is never listed, so an option that
  is a prefix of the generated answer (``yes`` when ``yes, but`` was generated) gets only what the listed
  alternatives give it (``"."`` after ``yes``), not the unlisted stop.

The mass given to options is finally normalised over the options (the answer is assumed to be one of
them). When no option gets any mass read from the reply (the answer and every listed alternative miss all
options, or the model refused), there is no judgment: :class:`~guardrail.local.NoOptionMatched`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from guardrail.errors import ConfigError, LogprobsUnavailable, UsageError
from guardrail.vendors.base import LogprobAnswer, LogprobStep
from guardrail.vendors.openai_chat import ChatCompletions, logprob_request, read_logprobs
from guardrail.vendors.registry import sdk_of

__all__ = ["Answer", "Basis", "LogprobBackend", "LogprobsUnavailable", "Scored", "Step", "is_sdk_client", "read_reply",
           "score"]

#: How an option's probability was obtained (see the module docstring).
Basis = Literal["exact", "shared", "floor"]

#: What OpenAI sends as the logprob of a "very unlikely" token; read as probability 0.
_VERY_UNLIKELY = -9999.0
_LEAD = re.compile(r"^[\s\"'`*]+")
_TRAIL = re.compile(r"[\s\"'`*.!]+$")


@dataclass(frozen=True)
class LogprobBackend:
    """An OpenAI client and a model, as a ``choose`` backend that reads ``logprobs``/``top_logprobs``.

    ``client`` is ``openai.OpenAI`` or ``openai.AsyncOpenAI`` (any OpenAI-compatible server through
    ``base_url`` that returns logprobs), or the same wrapped by :func:`guardrail.wrap`. Use
    ``guardrail.choose`` with a sync client and ``await guardrail.achoose`` with an async one. An Anthropic
    client raises :class:`LogprobsUnavailable` here: its API has no logprobs.

    Args:
        client: the SDK client (its own ``max_retries`` and timeout apply to the one request).
        model: the model name sent as ``model``.
        top_logprobs: alternatives asked for per position (OpenAI allows 0 to 20; more is better here).
        max_tokens: the answer's token cap; ``None``: enough to spell the longest option (at most 64).
    """

    client: Any
    model: str
    top_logprobs: int = 20
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        sdk, is_async = _sdk_client(self.client)
        if sdk is None:
            raise UsageError(f"LogprobBackend takes an openai.OpenAI/AsyncOpenAI client (or guardrail.wrap of one), "
                            f"not {type(self.client).__name__}")
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError("LogprobBackend needs the model name, e.g. LogprobBackend(client, 'gpt-4.1-mini')")
        if isinstance(self.top_logprobs, bool) or not isinstance(self.top_logprobs, int) \
                or not 0 <= self.top_logprobs <= 20:
            raise ConfigError(f"top_logprobs must be an int from 0 to 20, got {self.top_logprobs!r}")
        if self.max_tokens is not None and (not isinstance(self.max_tokens, int) or self.max_tokens < 1):
            raise ConfigError(f"max_tokens must be a positive int, got {self.max_tokens!r}")
        object.__setattr__(self, "_sdk", sdk)
        object.__setattr__(self, "_async", is_async)

    @property
    def sdk(self) -> Any:
        """The SDK client requests go through (the caller's own client, unwrapped)."""
        return self.__dict__["_sdk"]

    @property
    def is_async(self) -> bool:
        """Whether the client is ``openai.AsyncOpenAI`` (use ``await guardrail.achoose``)."""
        return bool(self.__dict__["_async"])

    def request(self, prompt: str, options: Sequence[str]) -> dict[str, Any]:
        """The keyword arguments of ``client.chat.completions.create`` for one judgment (``ValueError`` first
        for options an answer cannot tell apart, so no request is wasted)."""
        _Keys(options)
        listed = "\n".join(options)
        cap = self.max_tokens or min(64, 4 + max(len(option) for option in options))
        return logprob_request(self.model, "Answer with exactly one of the options the user lists, copied exactly "
                               "as written, and nothing else.",
                               f"{prompt}\n\nOptions (one per line):\n{listed}\n\nAnswer with exactly one option.",
                               top_logprobs=self.top_logprobs, max_tokens=cap)

    def create(self, request: dict[str, Any]) -> Any:
        """Send ``request`` with the client's Chat Completions ``create`` (an awaitable for an async client)."""
        return self.sdk.chat.completions.create(**request)


def _sdk_client(client: Any) -> tuple[Any, bool]:
    """``(the openai SDK client, is_async)``; ``(None, False)`` for anything that is not one.

    Raises :class:`LogprobsUnavailable` for an Anthropic client (wrapped or not).
    """
    from guardrail.call.client import unwrap

    raw = unwrap(client)
    found = sdk_of(raw)
    if found is None:
        return None, False
    kind, is_async = found
    if kind != ChatCompletions.sdk:
        raise LogprobsUnavailable("Anthropic's Messages API exposes no token logprobs, so guardrail.choose cannot "
                                  "score options with an Anthropic client; use an OpenAI (or OpenAI-compatible) "
                                  "client with LogprobBackend, or a guardrail.local.LocalModel")
    return raw, is_async


def is_sdk_client(backend: Any) -> bool:
    """Whether ``backend`` is an openai SDK client (wrapped or not); :class:`LogprobsUnavailable` for an
    Anthropic one."""
    return _sdk_client(backend)[0] is not None


# -- reading a reply ---------------------------------------------------------------------------------------

#: One generated token and its listed alternatives (read from the reply by the endpoint).
Step = LogprobStep
#: The vendor-neutral part of a reply that scoring reads.
Answer = LogprobAnswer


def _clean(logprob: float) -> float:
    """A usable logprob: NaN and OpenAI's "very unlikely" ``-9999.0`` (or below) are ``-inf``; above 0 is 0."""
    if math.isnan(logprob) or logprob <= _VERY_UNLIKELY:
        return -math.inf
    return min(logprob, 0.0)


def read_reply(response: Any) -> Answer:
    """The steps of a ``ChatCompletion`` (the SDK object or its JSON as a dict), read by the Chat Completions
    endpoint.

    Raises :class:`LogprobsUnavailable` when the reply carries no logprobs at all (a server that ignores
    ``logprobs=True``).
    """
    answer = read_logprobs(response)
    if answer.unavailable is not None:
        raise LogprobsUnavailable(answer.unavailable)
    return answer


# -- scoring -----------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Scored:
    """A distribution over the options (in their order, summing to 1), how each was obtained, and whether
    any option got mass read from the reply (``False``: no judgment, only floors)."""

    probabilities: dict[str, float]
    basis: dict[str, Basis]
    matched: bool


def _split_utf8(data: bytes) -> tuple[str, bytes]:
    """``(text of the complete characters, the bytes of an unfinished last character)``."""
    for cut in range(min(3, len(data)) + 1):
        try:
            return data[: len(data) - cut].decode(), data[len(data) - cut:]
        except UnicodeDecodeError:
            continue
    return data.decode(errors="replace"), b""


class _Keys:
    """Option spellings normalised for matching (see "Merging variants" in the module docstring)."""

    def __init__(self, options: Sequence[str]) -> None:
        self.fold = True
        folded = [self.complete(option) for option in options]
        if len(set(folded)) < len(folded):
            self.fold = False
        self.keys = {option: self.complete(option) for option in options}
        seen: dict[str, str] = {}
        for option, key in self.keys.items():
            if not key:
                raise ConfigError(f"option {option!r} is only whitespace, quotes or punctuation: an answer cannot "
                                 "be matched to it")
            if key in seen:
                raise ConfigError(f"options {seen[key]!r} and {option!r} differ only in surrounding whitespace, "
                                 "quotes or a final '.'/'!': an answer cannot tell them apart")
            seen[key] = option

    def partial(self, text: str) -> str:
        text = _LEAD.sub("", text)
        return text.casefold() if self.fold else text

    def complete(self, text: str) -> str:
        return _TRAIL.sub("", self.partial(text))

    def state(self, data: bytes) -> tuple[str, bytes]:
        """What matching sees of an answer so far: its normalised text and an unfinished character's bytes."""
        text, tail = _split_utf8(data)
        return self.partial(text), tail

    def options_for(self, data: bytes, among: Sequence[str]) -> list[str]:
        """The options of ``among`` that the answer ``data`` (so far) can still become, or already spells."""
        text, tail = _split_utf8(data)
        head = self.partial(text)
        whole = _TRAIL.sub("", head) if not tail else None
        found = []
        for option in among:
            key = self.keys[option]
            if tail:
                if len(key) > len(head) and key.startswith(head) and self._starts(key[len(head)], tail):
                    found.append(option)
            elif key.startswith(head) or key == whole:
                found.append(option)
        return found

    def _starts(self, char: str, tail: bytes) -> bool:
        spellings = {char, char.upper(), char.lower(), char.title()} if self.fold else {char}
        return any(spelling.encode().startswith(tail) for spelling in spellings)


def _logaddexp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    if b == -math.inf:
        return a
    top = max(a, b)
    return top + math.log1p(math.exp(-abs(a - b)))


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def score(options: Sequence[str], reply: Answer) -> Scored:
    """Score ``options`` from ``reply`` (pure; see the module docstring for the method).

    Raises ``ValueError`` for options an answer cannot tell apart; nothing else.
    """
    keys = _Keys(options)
    mass = {option: -math.inf for option in options}          # log of the probability read for each option
    basis: dict[str, Basis] = {}
    # Where each option was last still possible: (log P(reaching it), smallest listed p or None, unlisted p).
    where: dict[str, tuple[int, float, float | None, float]] = {}
    reach = 0.0
    prefix = b""
    alive = list(options)
    committed = False
    listed_anywhere: list[float] = []

    def give(targets: Sequence[str], logp: float) -> None:
        share = logp - math.log(len(targets))
        for option in targets:
            mass[option] = _logaddexp(mass[option], share)
            if share > -math.inf:
                basis[option] = "exact" if len(targets) == 1 else basis.get(option, "shared")

    for position, raw in enumerate(reply.steps):
        step = Step(raw.token, _clean(raw.logprob), tuple((t, _clean(lp)) for t, lp in raw.alternatives))
        listed = [math.exp(lp) for _, lp in step.alternatives]
        listed_anywhere.extend(p for p in listed if p > 0)
        known = math.fsum(listed)
        if all(token != step.token for token, _ in step.alternatives):
            known += math.exp(step.logprob)
        smallest = min(listed) if listed else None
        for option in alive:
            where[option] = (position, reach, smallest, max(0.0, 1.0 - known))
        before = keys.state(prefix)
        skipped = False
        for token, lp in step.alternatives:
            if not skipped and token == step.token:
                skipped = True
                continue
            if lp == -math.inf or keys.state(prefix + token) == before:
                continue
            targets = keys.options_for(prefix + token, alive)
            if targets:
                give(targets, reach + lp)
        reach += step.logprob
        prefix += step.token
        alive = keys.options_for(prefix, alive)
        if len(alive) <= 1:
            if alive:
                give(alive, reach)
            committed = True
            break
    if not committed and reply.steps:
        position = len(reply.steps)
        smallest = min(listed_anywhere) if listed_anywhere else None
        if reply.finished:
            text, tail = _split_utf8(prefix)
            spelled = [o for o in alive if not tail and keys.keys[o] == keys.complete(text)]
            if spelled:
                give(spelled, reach)
        else:
            give(alive, reach)
        for option in alive:
            where[option] = (position, reach, smallest, 1.0)

    matched = bool(basis)
    # Floors for options with no mass read from the reply, grouped by the position where they went missing.
    missing = [option for option in options if option not in basis]
    for option in missing:
        basis[option] = "floor"
        position, at, smallest, unlisted = where.get(option, (0, 0.0, None, 1.0))
        peers = sum(1 for other in missing if where.get(other, (0,))[0] == position)
        cap = unlisted / peers
        if smallest is not None:
            cap = min(cap, smallest)
        mass[option] = at + _log(cap)
    return Scored(_normalise(options, mass), {option: basis[option] for option in options}, matched)


def _normalise(options: Sequence[str], logs: Mapping[str, float]) -> dict[str, float]:
    """``exp(logs)`` normalised to sum to 1 (uniform when every option is at probability 0)."""
    top = max(logs.values())
    if top == -math.inf:
        return {option: 1.0 / len(options) for option in options}
    weights = [math.exp(logs[option] - top) for option in options]
    total = math.fsum(weights)
    return {option: weight / total for option, weight in zip(options, weights, strict=True)}
