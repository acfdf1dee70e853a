"""``LocalModel``: grammar-masked generation with a Hugging Face causal LM and llguidance.

At every step the tokens that would break the contract's grammar get a logit of ``-inf`` before sampling
(temperature applies after the mask), so an invalid output cannot be produced; EOS is allowed only where the
grammar accepts. The JSON is compact (no flexible whitespace: weak models otherwise pad with spaces) and
objects are closed to extra keys unless the contract allows them. Where the grammar allows exactly one
continuation (keys, punctuation, the rest of an enum value) the tokens are appended without asking the
model (jump-forward); the :class:`Trace` counts forced and sampled tokens. The finished text then goes
through the same parse layer and validation as every other tier: format comes from the mask, meaning is
still checked.

Caches: the llguidance tokenizer is built once per tokenizer object; compiled grammars are keyed by
(contract schema hash, llguidance version, tokenizer). Requires the ``local`` extra (torch, transformers,
llguidance).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from guardrail.contract import compile_contract
from guardrail.errors import GuardrailError, TruncatedError
from guardrail.local.grammar import compile_grammar, lltokenizer
from guardrail.parse.pipeline import parse
from guardrail.schema.lower import CompileReport


class DeadEnd(GuardrailError):
    """No token is allowed at some step (the grammar and the vocabulary cannot continue); ``.state`` says where."""

    def __init__(self, message: str, *, text: str, state: str) -> None:
        super().__init__(message)
        self.text = text
        self.state = state


@dataclass
class Trace:
    """What one generation did: tokens sampled vs forced by jump-forward, cache use and timings."""

    sampled: int = 0
    forced: int = 0
    grammar_cache_hit: bool = False
    compile_seconds: float = 0.0
    mask_seconds: float = 0.0
    forward_seconds: float = 0.0
    text: str = ""
    report: CompileReport | None = None
    stop_reason: str = ""
    steps: list[int] = field(default_factory=list)


class LocalModel:
    """A loaded transformers causal LM + fast tokenizer, generating contract values under a grammar mask."""

    def __init__(self, model: Any, tokenizer: Any, *, engine: str = "llguidance", device: str | None = None) -> None:
        if engine != "llguidance":
            raise ValueError(f"unknown engine {engine!r}; this build supports 'llguidance'")
        import torch

        self.torch = torch
        self.model = model
        self.tokenizer = tokenizer
        self.engine = engine
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model.to(self.device)
        self.model.eval()
        self.vocab_size = int(getattr(model.config, "vocab_size", len(tokenizer)))

    def generate(self, prompt: str, output_type: Any, *, temperature: float = 1.0, max_new_tokens: int = 256,
                 seed: int | None = None) -> Any:
        """Generate a value of ``output_type`` for ``prompt``; the same typed errors as every tier."""
        value, _ = self.generate_with_trace(prompt, output_type, temperature=temperature,
                                            max_new_tokens=max_new_tokens, seed=seed)
        return value

    def generate_with_trace(self, prompt: str, output_type: Any, *, temperature: float = 1.0,
                            max_new_tokens: int = 256, seed: int | None = None) -> tuple[Any, Trace]:
        """:meth:`generate`, plus the :class:`Trace` of what the loop did."""
        import llguidance
        import llguidance.torch as masks

        torch = self.torch
        contract = compile_contract(output_type)
        compiled = compile_grammar(contract.schema, contract.schema_hash, self.tokenizer, self.vocab_size)
        trace = Trace(report=compiled.report, grammar_cache_hit=compiled.cache_hit,
                      compile_seconds=compiled.seconds)
        matcher = llguidance.LLMatcher(lltokenizer(self.tokenizer, self.vocab_size), compiled.grammar)
        generator = torch.Generator(device="cpu")
        if seed is not None:
            generator.manual_seed(seed)
        ids = list(self.tokenizer(prompt)["input_ids"]) or [self.tokenizer.eos_token_id or 0]
        produced: list[int] = []
        bitmask = masks.allocate_token_bitmask(1, self.vocab_size)
        pending = ids
        past = None
        limit = getattr(self.model.config, "n_positions", None) or getattr(
            self.model.config, "max_position_embeddings", None) or 1 << 30
        while len(produced) < max_new_tokens:  # sampled and forced tokens both count
            if len(ids) + len(produced) + len(pending) > limit:
                break  # the model's context is full: the output is cut off (truncated below)
            started = time.perf_counter()
            with torch.no_grad():
                out = self.model(input_ids=torch.tensor([pending], device=self.device), past_key_values=past,
                                 use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].float().unsqueeze(0).cpu()
            trace.forward_seconds += time.perf_counter() - started
            started = time.perf_counter()
            masks.fill_next_token_bitmask(matcher, bitmask, 0)
            masks.apply_token_bitmask_inplace(logits, bitmask)
            trace.mask_seconds += time.perf_counter() - started
            if not torch.isfinite(logits).any():
                raise DeadEnd("no token is allowed here", text=self._text(produced), state=str(matcher.get_error()))
            if temperature <= 0:
                token = int(torch.argmax(logits[0]))
            else:
                probs = torch.softmax(logits[0] / temperature, dim=-1)
                token = int(torch.multinomial(probs, 1, generator=generator))
            if not matcher.consume_token(token):
                raise DeadEnd("the grammar refused a masked token", text=self._text(produced),
                              state=str(matcher.get_error()))
            produced.append(token)
            trace.sampled += 1
            pending = [token]
            if matcher.is_stopped():
                break
            forced = list(matcher.compute_ff_tokens())[: max_new_tokens - len(produced)]
            if forced:
                if not matcher.consume_tokens(forced):
                    raise DeadEnd("jump-forward tokens refused", text=self._text(produced),
                                  state=str(matcher.get_error()))
                produced.extend(forced)
                trace.forced += len(forced)
                pending = [token, *forced]
                if matcher.is_stopped():
                    break
        trace.text = self._text(produced)
        trace.stop_reason = str(matcher.stop_reason()) if matcher.is_stopped() else "max_new_tokens"
        if not matcher.is_stopped() and not matcher.is_accepting():
            raise TruncatedError(f"The output reached max_new_tokens ({max_new_tokens}) before it was complete.",
                                 text=trace.text)
        return parse(trace.text, output_type), trace

    def _text(self, tokens: list[int]) -> str:
        eos = self.tokenizer.eos_token_id
        text: str = self.tokenizer.decode([t for t in tokens if t != eos])
        return text

    def __repr__(self) -> str:
        return f"LocalModel({type(self.model).__name__}, engine={self.engine!r}, device={self.device!r})"


