"""The grammar-masked decoding loop, for one sequence or a batch (one loop: a single generation is a batch of 1).

Each step:

1. every unfinished row feeds its pending tokens (the prompt on the first step; afterwards the sampled token
   plus any jump-forward tokens). Rows are right-padded to the longest pending run; padding is masked out of
   attention and stays masked in the KV cache, and each row's positions count only its real tokens, so rows
   of different lengths and different jump-forward runs share one forward pass and decode exactly as alone;
2. while the model's forward pass runs on the calling thread, a worker thread computes the next token masks
   for all unfinished rows (llguidance releases the GIL, so the two overlap); the loop then waits only for
   what is left of the mask computation (``Trace.mask_wait_seconds``);
3. the mask is applied (disallowed tokens get ``-inf``), then temperature, top-k and top-p, then sampling;
4. each row's matcher consumes its token; where the grammar allows exactly one continuation, those tokens
   are appended without sampling (jump-forward) and fed with the next step.

A row ends when its grammar stops (it accepted and EOS or the end of the grammar was reached), when it hits
``max_new_tokens`` or the model's context (the caller reports truncation), or at a dead end (no allowed
token: :class:`DeadEnd` with the grammar state). Rows never wait for each other except within a step.
"""

from __future__ import annotations

import inspect
import math
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from guardrail.errors import ConfigError, DeadEnd
from guardrail.schema.lower import CompileReport

__all__ = ["DeadEnd", "Row", "Sampling", "Trace", "decode"]


@dataclass
class Trace:
    """What one generation did: tokens sampled vs forced by jump-forward, cache use and timings.

    In a batch the step timings are the batch's (one forward pass and one mask computation serve every row);
    ``mask_seconds`` is the time spent computing masks (in the worker thread), ``mask_wait_seconds`` the part
    of it the loop actually waited for after the forward pass (what overlapping did not hide);
    ``step_seconds`` the wall time of each whole step. On CUDA the forward call returns once its kernels
    are queued, so ``step_forward_seconds`` is launch time there and the GPU work shows in ``step_seconds``.
    """

    sampled: int = 0
    forced: int = 0
    grammar_cache_hit: bool = False
    compile_seconds: float = 0.0
    mask_seconds: float = 0.0
    mask_wait_seconds: float = 0.0
    forward_seconds: float = 0.0
    text: str = ""
    report: CompileReport | None = None
    stop_reason: str = ""
    step_mask_seconds: list[float] = field(default_factory=list)
    step_forward_seconds: list[float] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    #: every token produced (sampled and forced, EOS included), in order
    tokens: list[int] = field(default_factory=list)
    #: seconds from the start of the generation (compiling included) to its first token; None if none came
    first_token_seconds: float | None = None
    #: mean seconds between tokens after the first (jump-forward tokens arrive together); None below 2 tokens
    inter_token_seconds: float | None = None
    #: seconds building the llguidance matcher for the grammar (once per output type and run; rows copy it)
    matcher_seconds: float = 0.0
    #: times the ``no_repeat_ngram_size`` ban was lifted at a step because it would have left no allowed token
    ngram_bans_lifted: int = 0


@dataclass(frozen=True)
class Sampling:
    """How tokens are drawn after the mask: temperature (0 = greedy), top-k (0 = off), top-p (1 = off)."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    max_new_tokens: int = 256
    jump_forward: bool = True
    overlap: bool = True
    #: seconds for the whole loop; rows still running then end as cut off (reported as truncated)
    timeout: float | None = None
    #: > 1 makes tokens the model already sampled less likely (see :func:`penalise_repeats`); 1 = off
    repetition_penalty: float = 1.0
    #: n > 0 forbids sampling a token that would repeat an n-gram of sampled tokens (see :func:`ban_repeats`)
    no_repeat_ngram_size: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.temperature < math.inf or self.top_k < 0 or not 0 < self.top_p <= 1 \
                or self.max_new_tokens < 1:  # the comparisons also refuse NaN
            raise ConfigError("need a finite temperature >= 0, top_k >= 0, 0 < top_p <= 1 and max_new_tokens >= 1")
        if not 1 <= self.repetition_penalty < math.inf or not isinstance(self.no_repeat_ngram_size, int) \
                or self.no_repeat_ngram_size < 0:
            raise ConfigError("need a finite repetition_penalty >= 1 and an integer no_repeat_ngram_size >= 0")
        if self.timeout is not None and not self.timeout > 0:
            raise ConfigError("timeout must be a positive number of seconds (or None)")


@dataclass
class Row:
    """One sequence of a batch: its matcher, its tokens so far, its random generator and its trace."""

    matcher: Any
    pending: list[int]
    generator: Any
    trace: Trace
    produced: list[int] = field(default_factory=list)
    length: int = 0  # real (unpadded) tokens in the cache: the next position id
    done: bool = False
    error: Exception | None = None
    sampled_ids: list[int] = field(default_factory=list)  # what the model chose (repetition control reads these)
    first_token_at: float | None = None
    last_token_at: float | None = None


_EXECUTOR: Any = None


def _llexecutor() -> Any:
    global _EXECUTOR
    if _EXECUTOR is None:
        import llguidance

        _EXECUTOR = llguidance.LLExecutor()
    return _EXECUTOR


def _fill_masks(matchers: list[tuple[Any, int]], bitmask: Any) -> float:
    """Compute the allowed-token bitmask of each (matcher, row); returns the seconds it took."""
    import llguidance.torch as masks

    started = time.perf_counter()
    if len(matchers) == 1:
        masks.fill_next_token_bitmask(matchers[0][0], bitmask, matchers[0][1])
    else:
        masks.fill_next_token_bitmask_par(_llexecutor(), matchers, bitmask)
    return time.perf_counter() - started


#: Per model class, the name its ``forward`` gives the KV cache: ``cache`` in transformers 5.2x and later,
#: ``past_key_values`` before (the output attribute has the same name).
_CACHE_KEYWORDS: dict[Any, str] = {}


def _cache_keyword(kind: Any) -> str:
    name = _CACHE_KEYWORDS.get(kind)
    if name is None:
        name = "cache" if "cache" in inspect.signature(kind.forward).parameters else "past_key_values"
        _CACHE_KEYWORDS[kind] = name
    return name


def forward_pass(model: Any, cache: Any, **inputs: Any) -> tuple[Any, Any]:
    """One forward pass that reads and extends the KV cache ``cache`` (``None`` at the start): the model's
    output and the cache to pass next, whatever the installed transformers calls it."""
    name = _cache_keyword(type(model))
    out = model(**inputs, use_cache=True, **{name: cache})
    return out, getattr(out, name)


def decode(model: Any, rows: list[Row], sampling: Sampling, *, vocab_size: int, pad_id: int, device: Any,
           context: int, pool: ThreadPoolExecutor | None, text_of: Any, origin: float | None = None) -> None:
    """Run the loop until every row has ended; results and errors are left on the rows.

    ``origin`` (a ``time.perf_counter()`` reading, default now) is where each row's time to first token counts from.
    """
    import llguidance.torch as masks
    import torch

    origin = time.perf_counter() if origin is None else origin
    count = len(rows)
    bitmask = masks.allocate_token_bitmask(count, vocab_size)
    attention = torch.zeros((count, 0), dtype=torch.long, device=device)
    cache: Any = None
    deadline = None if sampling.timeout is None else time.monotonic() + sampling.timeout
    while True:
        late = deadline is not None and time.monotonic() >= deadline
        for row in rows:
            if not row.done and late:
                _finish(row, "timeout")  # out of time: cut off, reported as truncated
            elif not row.done and row.length + len(row.pending) > context:
                _finish(row, "context")  # no room for the pending tokens: cut off, reported as truncated
        live = [i for i, row in enumerate(rows) if not row.done]
        if not live:
            _latencies(rows, origin)
            return
        step_started = time.perf_counter()
        width = max(len(rows[i].pending) for i in live)
        ids = [[pad_id] * width for _ in rows]
        keep = [[0] * width for _ in rows]
        positions = [[0] * width for _ in rows]
        last = [0] * count
        for i in live:
            row = rows[i]
            n = len(row.pending)
            ids[i][:n] = row.pending
            keep[i][:n] = [1] * n
            positions[i][:n] = range(row.length, row.length + n)
            last[i] = n - 1
        wanted = sorted({last[i] for i in live})
        matchers = [(rows[i].matcher, i) for i in live]
        future: Future[float] | None = pool.submit(_fill_masks, matchers, bitmask) if (
            pool is not None and sampling.overlap) else None
        attention = torch.cat([attention, torch.tensor(keep, device=device)], dim=1)
        started = time.perf_counter()
        with torch.no_grad():
            out, cache = forward_pass(model, cache, input_ids=torch.tensor(ids, device=device),
                                      attention_mask=attention, position_ids=torch.tensor(positions, device=device),
                                      logits_to_keep=torch.tensor(wanted, device=device))
        column = {p: k for k, p in enumerate(wanted)}
        logits = out.logits[torch.arange(count, device=device),
                            torch.tensor([column.get(last[i], 0) for i in range(count)], device=device)].float()
        forward = time.perf_counter() - started
        started = time.perf_counter()
        mask_time = future.result() if future is not None else _fill_masks(matchers, bitmask)
        waited = time.perf_counter() - started if future is not None else mask_time
        if sampling.repetition_penalty != 1.0:
            penalise_repeats(logits, [(i, rows[i].sampled_ids) for i in live], sampling.repetition_penalty)
        apply_mask(logits, bitmask.to(device, non_blocking=True))
        if sampling.no_repeat_ngram_size:
            for i in ban_repeats(logits, [(i, rows[i].sampled_ids) for i in live], sampling.no_repeat_ngram_size):
                rows[i].trace.ngram_bans_lifted += 1
        tokens, alive = _sample(logits, [rows[i] for i in live], live, sampling)
        for i in live:
            row = rows[i]
            row.length += len(row.pending)
            trace = row.trace
            trace.forward_seconds += forward
            trace.mask_seconds += mask_time
            trace.mask_wait_seconds += waited
            trace.step_forward_seconds.append(forward)
            trace.step_mask_seconds.append(mask_time)
        for k, i in enumerate(live):
            _advance(rows[i], tokens[k], alive[k], sampling, text_of)
        now = time.perf_counter()
        for i in live:
            row = rows[i]
            if row.produced and row.first_token_at is None:
                row.first_token_at = now
                row.trace.first_token_seconds = now - origin
            if row.produced:
                row.last_token_at = now
        step = now - step_started
        for i in live:
            rows[i].trace.step_seconds.append(step)


def _latencies(rows: list[Row], origin: float) -> None:
    """Each row's mean inter-token latency and token list, once the loop is over."""
    for row in rows:
        row.trace.tokens = list(row.produced)
        if row.first_token_at is not None and row.last_token_at is not None and len(row.produced) > 1:
            row.trace.inter_token_seconds = (row.last_token_at - row.first_token_at) / (len(row.produced) - 1)


def penalise_repeats(logits: Any, histories: list[tuple[int, list[int]]], penalty: float) -> None:
    """Repetition penalty (CTRL, Keskar et al. 2019, as transformers applies it), before the grammar mask: the
    logit of each token row ``i`` already *sampled* is divided by ``penalty`` when positive and multiplied by it
    when negative, once per distinct token. Tokens the grammar forced (keys, punctuation) are not in the
    history: a contract repeats its structure by design, and penalising a closing quote would only make strings
    longer. In place; ids beyond the logits (never sampled) are ignored."""
    import torch

    width = logits.shape[-1]
    for i, history in histories:
        seen = sorted({t for t in history if 0 <= t < width})
        if not seen:
            continue
        index = torch.tensor(seen, device=logits.device)
        values = logits[i, index]
        logits[i, index] = torch.where(values > 0, values / penalty, values * penalty)


def banned_next(history: list[int], size: int) -> set[int]:
    """The tokens that would complete an n-gram (``size`` tokens) already in ``history`` (the sampled tokens)."""
    if size < 1 or len(history) < size - 1:
        return set()
    if size == 1:
        return set(history)
    tail = tuple(history[len(history) - size + 1:])
    return {history[j + size - 1] for j in range(len(history) - size + 1)
            if tuple(history[j:j + size - 1]) == tail}


def ban_repeats(logits: Any, histories: list[tuple[int, list[int]]], size: int) -> list[int]:
    """``no_repeat_ngram_size``, after the grammar mask: a token that would repeat an n-gram of the row's sampled
    tokens gets ``-inf``, unless that leaves the row no allowed token at all; then the grammar wins (the ban is
    lifted for that step, so a required continuation is never turned into a dead end). Returns the rows whose
    ban was lifted. In place."""
    import torch

    lifted: list[int] = []
    width = logits.shape[-1]
    for i, history in histories:
        banned = sorted(t for t in banned_next(history, size) if 0 <= t < width)
        if not banned or not torch.isfinite(logits[i]).any():
            continue
        index = torch.tensor(banned, device=logits.device)
        kept = logits[i, index].clone()
        logits[i, index] = float("-inf")
        if not torch.isfinite(logits[i]).any():
            logits[i, index] = kept
            lifted.append(i)
    return lifted


COMPILED_KERNEL = [True]


def apply_mask(logits: Any, bitmask: Any) -> None:
    """Set the logits of disallowed tokens (a 0 bit in ``bitmask``, and every id beyond it) to ``-inf``.

    llguidance's kernel is built with ``torch.compile``, which needs a C compiler (CPU) or Triton (CUDA); where
    compiling fails, the same operation in plain torch ops is used from then on (slower, same result).
    """
    import llguidance.torch as masks

    if COMPILED_KERNEL[0]:
        try:
            masks.apply_token_bitmask_inplace(logits, bitmask)
            return
        except Exception:  # torch.compile's failures share no narrower type; plain ops below
            COMPILED_KERNEL[0] = False
    plain_apply_mask(logits, bitmask)


def plain_apply_mask(logits: Any, bitmask: Any) -> None:
    """:func:`apply_mask` in plain torch ops (no compilation)."""
    import torch

    bits = torch.arange(32, dtype=torch.int32, device=bitmask.device)
    allowed = ((bitmask.unsqueeze(-1) >> bits) & 1).bool().reshape(bitmask.shape[0], -1)
    width = min(allowed.shape[1], logits.shape[1])
    logits[:, width:] = float("-inf")
    logits[:, :width].masked_fill_(~allowed[:, :width].to(logits.device), float("-inf"))


def _sample(logits: Any, rows: list[Row], live: list[int], sampling: Sampling) -> tuple[list[int], list[bool]]:
    """One token per live row (already masked logits), plus whether the row had any allowed token at all."""
    import torch

    picked = logits[torch.tensor(live, device=logits.device)]
    alive = torch.isfinite(picked).any(dim=-1)
    if sampling.temperature == 0:
        return picked.argmax(dim=-1).tolist(), alive.tolist()
    # shift so the best allowed token is 0 before scaling: a tiny temperature then sends the others to -inf
    # (greedy) instead of overflowing, a huge one sends them to 0 (uniform over the allowed tokens)
    top = torch.where(alive, picked.max(dim=-1).values, torch.zeros_like(alive, dtype=picked.dtype))
    # (clamped to what float32 can divide by: beyond, the result is the same greedy / uniform draw)
    picked = (picked - top.unsqueeze(-1)) / min(max(sampling.temperature, 1e-30), 1e30)
    if sampling.top_k and sampling.top_k < picked.shape[-1]:
        threshold = torch.topk(picked, sampling.top_k, dim=-1).values[:, -1:]
        picked = picked.masked_fill(picked < threshold, float("-inf"))
    if sampling.top_p < 1.0:
        ordered, order = torch.sort(picked, descending=True, dim=-1)
        cumulative = torch.softmax(ordered, dim=-1).cumsum(dim=-1)
        drop = cumulative - torch.softmax(ordered, dim=-1) >= sampling.top_p  # keep the token that crosses p
        picked = picked.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), float("-inf"))
    safe = torch.where(alive.unsqueeze(-1), picked, torch.zeros_like(picked))  # dead rows: no NaN from softmax
    probs = torch.softmax(safe, dim=-1)
    drawn = [torch.multinomial(probs[k], 1, generator=row.generator) for k, row in enumerate(rows)]
    return torch.cat(drawn).tolist(), alive.tolist()


def _advance(row: Row, token: int, alive: bool, sampling: Sampling, text_of: Any) -> None:
    """Consume the sampled token, then any jump-forward tokens; end the row where it ends."""
    matcher = row.matcher
    if not alive or matcher.is_error():
        _dead(row, "no token is allowed here", text_of)
    elif not matcher.consume_token(token):
        _dead(row, "the grammar refused a masked token", text_of)
    else:
        row.produced.append(token)
        row.sampled_ids.append(token)
        row.trace.sampled += 1
        row.pending = [token]
        if _ended(row, sampling) or not sampling.jump_forward:
            return
        forced = list(matcher.compute_ff_tokens())[: sampling.max_new_tokens - len(row.produced)]
        if not forced:
            return
        if not matcher.consume_tokens(forced):
            _dead(row, "jump-forward tokens refused", text_of)
            return
        row.produced.extend(forced)
        row.trace.forced += len(forced)
        row.pending = [token, *forced]
        _ended(row, sampling)


def _ended(row: Row, sampling: Sampling) -> bool:
    """End the row if its grammar stopped or it reached ``max_new_tokens``; whether it ended."""
    if row.matcher.is_stopped():
        _finish(row, str(row.matcher.stop_reason()))
    elif len(row.produced) >= sampling.max_new_tokens:
        _finish(row, "max_new_tokens")
    return row.done


def _dead(row: Row, message: str, text_of: Any) -> None:
    """End the row at a dead end, keeping the text so far and the grammar state."""
    state = str(row.matcher.get_error())
    reason = state.splitlines()[0].strip() if state.strip() else ""
    row.error = DeadEnd(message, text=text_of(row.produced), state=state, tokens=len(row.produced), reason=reason)
    _finish(row, "dead_end")


def _finish(row: Row, reason: str) -> None:
    row.done = True
    row.trace.stop_reason = reason
