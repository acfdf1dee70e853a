"""``LocalModel``: grammar-masked generation with a Hugging Face causal LM and llguidance.

At every step the tokens that would break the contract's grammar get a logit of ``-inf`` before sampling
(temperature, top-k and top-p apply after the mask), so an invalid output cannot be produced; EOS is allowed
only where the grammar accepts. The JSON is compact (no flexible whitespace: weak models otherwise pad with
spaces) and objects are closed to extra keys unless the contract allows them. Where the grammar allows
exactly one continuation (keys, punctuation, the rest of an enum value) the tokens are appended without
asking the model (jump-forward); the :class:`Trace` counts forced and sampled tokens. The finished text then
goes through the same parse layer and validation as every other tier: format comes from the mask, meaning is
still checked.

One loop (:mod:`guardrail.local.decode`) serves :meth:`LocalModel.generate` (a batch of one) and
:meth:`LocalModel.generate_batch` (several prompts in one forward pass per step, one matcher each, one
shared compiled grammar, masks computed in a worker thread while the forward pass runs). Grammars and
llguidance tokenizers are cached (:mod:`guardrail.local.grammar`). Requires the ``local`` extra (torch,
transformers, llguidance).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from guardrail._optional import require
from guardrail.contract import compile_contract
from guardrail.errors import BatchFailed, ConfigError, DeadEnd, GuardrailError, TruncatedJSONError
from guardrail.local.decode import Row, Sampling, Trace, decode
from guardrail.local.grammar import compile_grammar, lltokenizer
from guardrail.parse.pipeline import parse

__all__ = ["BatchFailed", "DeadEnd", "LocalModel", "Trace"]


class LocalModel:
    """A loaded transformers causal LM + fast tokenizer, generating contract values under a grammar mask."""

    def __init__(self, model: Any, tokenizer: Any, *, engine: str = "llguidance", device: str | None = None) -> None:
        if engine != "llguidance":
            raise ConfigError(f"unknown engine {engine!r}; this build supports 'llguidance'")
        torch = require("torch", "local", "guardrail.local.LocalModel")
        require("llguidance", "local", "guardrail.local.LocalModel")

        self.model = model
        self.tokenizer = tokenizer
        self.engine = engine
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)
        self.model.eval()
        config = model.config
        self.vocab_size = int(getattr(config, "vocab_size", None) or len(tokenizer))
        if self.vocab_size < len(tokenizer):
            raise ConfigError(f"the model's output layer has {self.vocab_size} ids but the tokenizer has "
                             f"{len(tokenizer)}: they do not belong together")
        self.context = int(getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
                           or 1 << 30)
        eos = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else eos if eos is not None else 0)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def generate(self, prompt: str, output_type: Any, *, temperature: float = 1.0, max_new_tokens: int = 256,
                 seed: int | None = None, top_k: int = 0, top_p: float = 1.0, timeout: float | None = None) -> Any:
        """Generate a value of ``output_type`` for ``prompt``; the same typed errors as every tier.

        ``timeout`` bounds the whole generation in seconds: an output still running then is cut off and
        raised as :class:`TruncatedJSONError`, like one that reaches ``max_new_tokens``.
        """
        value, _ = self.generate_with_trace(prompt, output_type, temperature=temperature,
                                            max_new_tokens=max_new_tokens, seed=seed, top_k=top_k, top_p=top_p,
                                            timeout=timeout)
        return value

    def generate_with_trace(self, prompt: str, output_type: Any, *, temperature: float = 1.0,
                            max_new_tokens: int = 256, seed: int | None = None, top_k: int = 0,
                            top_p: float = 1.0, jump_forward: bool = True,
                            timeout: float | None = None) -> tuple[Any, Trace]:
        """:meth:`generate`, plus the :class:`Trace` of what the loop did."""
        sampling = Sampling(temperature, top_k, top_p, max_new_tokens, jump_forward, timeout=timeout)
        (result,), (trace,) = self._run([prompt], output_type, sampling, seed)
        if isinstance(result, Exception):
            raise result
        return result, trace

    def generate_batch(self, prompts: Sequence[str], output_type: Any, *, temperature: float = 1.0,
                       max_new_tokens: int = 256, seed: int | None = None, top_k: int = 0, top_p: float = 1.0,
                       return_exceptions: bool = False, timeout: float | None = None) -> list[Any]:
        """Generate one value per prompt in one batched loop; row ``i`` is seeded ``seed + i``.

        Each row decodes exactly as :meth:`generate` would alone with that seed (up to floating-point
        differences from batching). When a row fails, :class:`BatchFailed` is raised with every row's result
        or error, unless ``return_exceptions`` is true: then the errors are returned in place of values.
        """
        results, traces = self.generate_batch_with_traces(prompts, output_type, temperature=temperature,
                                                          max_new_tokens=max_new_tokens, seed=seed, top_k=top_k,
                                                          top_p=top_p, timeout=timeout)
        if not return_exceptions and any(isinstance(r, Exception) for r in results):
            raise BatchFailed(results, traces)
        return results

    def generate_batch_with_traces(self, prompts: Sequence[str], output_type: Any, *, temperature: float = 1.0,
                                   max_new_tokens: int = 256, seed: int | None = None, top_k: int = 0,
                                   top_p: float = 1.0, jump_forward: bool = True,
                                   overlap: bool = True, timeout: float | None = None) -> tuple[list[Any], list[Trace]]:
        """Values (or the exceptions of failed rows) and traces, one per prompt, in order."""
        if isinstance(prompts, str) or not prompts:
            raise ConfigError("prompts must be a non-empty sequence of strings")
        sampling = Sampling(temperature, top_k, top_p, max_new_tokens, jump_forward, overlap, timeout)
        return self._run(list(prompts), output_type, sampling, seed)

    def _run(self, prompts: list[str], output_type: Any, sampling: Sampling,
             seed: int | None) -> tuple[list[Any], list[Trace]]:
        import llguidance
        import torch

        contract = compile_contract(output_type)
        compiled = compile_grammar(contract.schema, contract.schema_hash, self.tokenizer, self.vocab_size)
        tokenizer = lltokenizer(self.tokenizer, self.vocab_size)
        rows = []
        for index, prompt in enumerate(prompts):
            generator = None
            if seed is not None:
                generator = torch.Generator(device=self.device)
                generator.manual_seed(seed + index)
            trace = Trace(report=compiled.report, grammar_cache_hit=compiled.cache_hit,
                          compile_seconds=compiled.seconds)
            ids = list(self.tokenizer(prompt)["input_ids"]) or [self.pad_id]
            rows.append(Row(llguidance.LLMatcher(tokenizer, compiled.grammar), ids, generator, trace))
        with self._lock:  # one loop at a time per model: the forward passes would only contend
            decode(self.model, rows, sampling, vocab_size=self.vocab_size, pad_id=self.pad_id, device=self.device,
                   context=self.context, pool=self._worker(), text_of=self._text)
        results: list[Any] = []
        for row in rows:
            row.trace.text = self._text(row.produced)
            results.append(self._finish(row, output_type, sampling))
        return results, [row.trace for row in rows]

    def _finish(self, row: Row, output_type: Any, sampling: Sampling) -> Any:
        """The row's validated value, or the typed error it ends with."""
        if row.error is not None:
            return row.error
        matcher = row.matcher
        if not matcher.is_stopped() and not matcher.is_accepting():
            where = {"context": "the model's context", "timeout": f"the timeout ({sampling.timeout} s)"}.get(
                row.trace.stop_reason, f"max_new_tokens ({sampling.max_new_tokens})")
            return TruncatedJSONError(f"The output reached {where} before it was complete.", text=row.trace.text)
        try:
            return parse(row.trace.text, output_type)
        except GuardrailError as error:
            return error

    def _worker(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="guardrail-mask")
        return self._pool

    def _text(self, tokens: list[int]) -> str:
        eos = self.tokenizer.eos_token_id
        text: str = self.tokenizer.decode([t for t in tokens if t != eos])
        return text

    def __repr__(self) -> str:
        return f"LocalModel({type(self.model).__name__}, engine={self.engine!r}, device={self.device!r})"
