"""What a vendor call did: usage, budgets, one record per attempt, and the result that holds them.

A :class:`Result` is what ``create_with_result`` returns; every :class:`~guardrail.errors.CallError` carries the
same record as ``.outcome``, so a failure loses nothing a success would have shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from guardrail.errors import ConfigError

if TYPE_CHECKING:
    from guardrail.errors import GuardrailError
    from guardrail.parse.report import Fix
    from guardrail.schema.lower import CompileReport

__all__ = [
    "Attempt",
    "Budget",
    "Outcome",
    "Partial",
    "Price",
    "Result",
    "Usage",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens billed by the vendor; ``+`` sums them across attempts.

    ``input_tokens`` counts *every* input token, cached ones included (OpenAI reports it so; Anthropic's
    separate cache buckets are added in), as the OpenTelemetry GenAI conventions count
    ``gen_ai.usage.input_tokens``. ``cached_input_tokens`` (read from the vendor's prompt cache, billed at a
    discount) and ``cache_write_tokens`` (written to it; Anthropic bills them at a premium) are parts of it;
    ``reasoning_tokens`` (hidden reasoning / thinking) are part of ``output_tokens``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.cached_input_tokens + other.cached_input_tokens,
                     self.reasoning_tokens + other.reasoning_tokens,
                     self.cache_write_tokens + other.cache_write_tokens)

    def cost(self, price: Price) -> float:
        """What these tokens cost at ``price``."""
        return (self.input_tokens * price.input_per_mtok + self.output_tokens * price.output_per_mtok) / 1e6


@dataclass(frozen=True, slots=True)
class Price:
    """Price per million tokens, in whatever currency the budget is written in."""

    input_per_mtok: float
    output_per_mtok: float


@dataclass(frozen=True, slots=True)
class Budget:
    """A cap across all attempts of one call: total tokens, cost at your own ``price``, and/or US dollars.

    The attempt loop stops *before* an attempt that could pass the cap: it estimates the next request's
    input tokens, needs room for at least as many output tokens as the last answer used, and lowers the
    request's output-token limit to what the budget leaves.

    ``max_usd`` prices the model's tokens from the maintained ``genai-prices`` table (the ``cost`` extra):
    what the attempts so far cost (each at the model that answered it) is subtracted, and what is left is
    turned into tokens at the model's dearer rate. A model the table does not know cannot be held to a
    dollar cap, so such a call fails before its first request (:class:`~guardrail.errors.PriceUnknown`).
    """

    max_tokens: int | None = None
    max_cost: float | None = None
    price: Price | None = None
    max_usd: float | None = None

    def __post_init__(self) -> None:
        if self.max_cost is not None and self.price is None:
            raise ConfigError("Budget(max_cost=...) needs price=Price(...) to turn tokens into cost")
        if self.max_usd is not None and not self.max_usd >= 0:
            raise ConfigError("Budget(max_usd=...) must be a number of dollars, 0 or more")

    def after(self, used: Usage, spent: float | None = 0.0) -> Budget:
        """What this budget leaves after ``used`` tokens and ``spent`` dollars (never negative; an unknown spend,
        ``None``, leaves no dollars: a dollar cap is never assumed kept). A chain's later tiers and a chunked
        call's later chunks get it."""
        tokens = None if self.max_tokens is None else max(0, self.max_tokens - used.total_tokens)
        cost = None
        if self.max_cost is not None and self.price is not None:
            cost = max(0.0, self.max_cost - used.cost(self.price))
        dollars = None if self.max_usd is None else max(0.0, self.max_usd - spent) if spent is not None else 0.0
        return Budget(tokens, cost, self.price, dollars)

    def tokens_left(self, used: Usage) -> float:
        """How many more tokens (input + output, at the dearer rate for cost caps) the budget allows."""
        left = float("inf")
        if self.max_tokens is not None:
            left = self.max_tokens - used.total_tokens
        if self.max_cost is not None and self.price is not None:
            dearer = max(self.price.input_per_mtok, self.price.output_per_mtok)
            spent = used.cost(self.price)
            left = min(left, (self.max_cost - spent) * 1e6 / dearer if dearer else float("inf"))
        return left


@dataclass(frozen=True, slots=True)
class Attempt:
    """One round trip to the model: what was asked, what came back, and what guardrail made of it.

    ``raw`` is the model's text or tool-call arguments exactly as received (``None`` when the vendor sent
    no completion, e.g. a transport failure). ``error`` is why the attempt did not give a value.
    ``vendor_calls`` counts HTTP requests, transport retries included.
    """

    number: int
    mode: str
    raw: str | None = None
    finish_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    error: GuardrailError | None = None
    fixes: tuple[Fix, ...] = ()
    feedback: str | None = None
    vendor_calls: int = 1
    seconds: float = 0.0
    max_tokens: int | None = None
    temperature: float | None = None
    #: The model that answered (``gen_ai.response.model``) and the vendor's id for the answer, when sent.
    response_model: str | None = None
    response_id: str | None = None

    @property
    def error_kind(self) -> str | None:
        """``no_json``/``truncated``/``ambiguous``/``schema_violation`` for parse errors, else the error's class."""
        if self.error is None:
            return None
        kind = getattr(self.error, "kind", None)
        return kind if isinstance(kind, str) else type(self.error).__name__


@dataclass(frozen=True, slots=True)
class Outcome:
    """Everything a vendor call did, success or not."""

    provider: str
    model: str
    mode: str
    attempts: tuple[Attempt, ...]
    usage: Usage
    trace_id: str
    seconds: float
    schema_hash: str
    compile_report: CompileReport | None = None

    @property
    def vendor_calls(self) -> int:
        """HTTP requests sent, transport retries included."""
        return sum(a.vendor_calls for a in self.attempts)

    @property
    def cost_usd(self) -> float | None:
        """What the call cost in US dollars, every attempt included, each at the model that answered it
        (``genai-prices``, the ``cost`` extra); ``None`` when any billed attempt's price is unknown (no extra, an
        unpriced model or server), never a partial sum that looks complete. Computed when read."""
        from guardrail.observe.cost import usd  # the price table loads on first use only

        total = 0.0
        for attempt in self.attempts:
            spent = usd(attempt.usage, self.provider, attempt.response_model or self.model)
            if spent is None:
                return None
            total += spent
        return total

    @property
    def raw(self) -> str | None:
        """The last raw model output received."""
        for attempt in reversed(self.attempts):
            if attempt.raw is not None:
                return attempt.raw
        return None


@dataclass(frozen=True, slots=True)
class Result(Outcome, Generic[T]):
    """A validated value and the :class:`Outcome` that produced it (``create_with_result`` returns this).

    ``reasoning`` is the text the model reasoned in before answering, when the call asked for it.
    ``cached`` is true when the value came from a response cache (:class:`guardrail.call.cache.Cache`) instead of
    the vendor: re-validated against the current contract and rules, with no attempts and ``vendor_calls == 0``.
    """

    value: T = None  # type: ignore[assignment]
    cached: bool = False
    #: What the model reasoned before answering (``reason_first=`` on the call, :mod:`guardrail.call.reasoning`):
    #: kept beside the value, never read or validated as the answer; ``None`` for a call without it.
    reasoning: str | None = None

    @property
    def fixes(self) -> tuple[Fix, ...]:
        """The repairs the parse layer made to the accepted output."""
        return self.attempts[-1].fixes if self.attempts else ()


@dataclass(frozen=True, slots=True)
class Partial:
    """A preview of an answer that is still streaming: for showing, never for using.

    ``data`` is the JSON value the text so far would be if it stopped here (open strings and containers
    closed, an incomplete key or number left out); it is *not* validated, and no gate, tool or cache ever
    sees it. ``attempt`` says which attempt it belongs to: a repair attempt starts a new preview.
    """

    data: Any
    text: str
    attempt: int
    partial: bool = True


def result_from(outcome: Outcome, value: Any) -> Result[Any]:
    """A :class:`Result` holding ``value`` and everything in ``outcome``."""
    return Result(outcome.provider, outcome.model, outcome.mode, outcome.attempts, outcome.usage, outcome.trace_id,
                  outcome.seconds, outcome.schema_hash, outcome.compile_report, value)
