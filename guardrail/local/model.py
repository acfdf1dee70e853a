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

import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from guardrail._optional import require
from guardrail.contract import compile_contract
from guardrail.errors import (
    BatchFailed,
    ConfigError,
    DeadEnd,
    GrammarError,
    GuardrailError,
    SchemaViolationError,
    TruncatedJSONError,
    UsageError,
)
from guardrail.local import telemetry
from guardrail.local.constraints import Compiled as CompiledConstraint
from guardrail.local.constraints import check_text, compile_constraint, is_constraint
from guardrail.local.decode import Row, Sampling, Trace, decode
from guardrail.local.enums import check as check_enums
from guardrail.local.enums import splice
from guardrail.local.grammar import OPTIONS, compile_grammar, lltokenizer
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
                 seed: int | None = None, top_k: int = 0, top_p: float = 1.0, timeout: float | None = None,
                 enums: Mapping[str, Sequence[Any]] | None = None, repetition_penalty: float = 1.0,
                 no_repeat_ngram_size: int = 0, examples: Sequence[Any] = ()) -> Any:
        """Generate a value of ``output_type`` for ``prompt``; the same typed errors as every tier.

        ``output_type`` is a contract (a type, a JSON Schema), or a :class:`~guardrail.local.Regex` or
        :class:`~guardrail.local.Grammar`: then the value is the generated text, checked to match.
        ``timeout`` bounds the whole generation in seconds: an output still running then is cut off and
        raised as :class:`TruncatedJSONError`, like one that reaches ``max_new_tokens``. ``enums`` narrows
        fields of the contract to values known per request (``{"product_id": ids}``, :mod:`guardrail.local.enums`).
        ``repetition_penalty`` and ``no_repeat_ngram_size`` steer sampling away from repeats
        (:func:`guardrail.local.decode.penalise_repeats`, :func:`guardrail.local.decode.ban_repeats`).
        ``examples`` are few-shot examples, valid values of the contract shown after the prompt
        (:mod:`guardrail.call.examples`; an invalid one raises :class:`~guardrail.errors.InvalidExample` first).
        """
        value, _ = self.generate_with_trace(prompt, output_type, temperature=temperature,
                                            max_new_tokens=max_new_tokens, seed=seed, top_k=top_k, top_p=top_p,
                                            timeout=timeout, enums=enums, repetition_penalty=repetition_penalty,
                                            no_repeat_ngram_size=no_repeat_ngram_size, examples=examples)
        return value

    def generate_with_trace(self, prompt: str, output_type: Any, *, temperature: float = 1.0,
                            max_new_tokens: int = 256, seed: int | None = None, top_k: int = 0,
                            top_p: float = 1.0, jump_forward: bool = True,
                            timeout: float | None = None, enums: Mapping[str, Sequence[Any]] | None = None,
                            repetition_penalty: float = 1.0, no_repeat_ngram_size: int = 0,
                            examples: Sequence[Any] = ()) -> tuple[Any, Trace]:
        """:meth:`generate`, plus the :class:`Trace` of what the loop did."""
        if examples:
            from guardrail.call.examples import examples_prompt

            if is_constraint(output_type):
                raise UsageError("examples= shows JSON values of a contract; a Regex or Grammar takes none")
            prompt = examples_prompt(prompt, output_type, examples)
        sampling = Sampling(temperature, top_k, top_p, max_new_tokens, jump_forward, timeout=timeout,
                            repetition_penalty=repetition_penalty, no_repeat_ngram_size=no_repeat_ngram_size)
        (result,), (trace,) = self._run([prompt], [output_type], sampling, seed, enums)
        if isinstance(result, Exception):
            raise result
        return result, trace

    def generate_batch(self, prompts: Sequence[str], output_type: Any = None, *, temperature: float = 1.0,
                       max_new_tokens: int = 256, seed: int | None = None, top_k: int = 0, top_p: float = 1.0,
                       return_exceptions: bool = False, timeout: float | None = None,
                       output_types: Sequence[Any] | None = None, enums: Mapping[str, Sequence[Any]] | None = None,
                       repetition_penalty: float = 1.0, no_repeat_ngram_size: int = 0) -> list[Any]:
        """Generate one value per prompt in one batched loop; row ``i`` is seeded ``seed + i``.

        Each row decodes exactly as :meth:`generate` would alone with that seed (up to floating-point
        differences from batching). ``output_types`` (instead of ``output_type``) gives each row its own
        contract, regex or grammar: one forward pass still serves every row, each row's mask comes from its own
        grammar. When a row fails, :class:`BatchFailed` is raised with every row's result or error, unless
        ``return_exceptions`` is true: then the errors are returned in place of values.
        """
        results, traces = self.generate_batch_with_traces(
            prompts, output_type, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, top_k=top_k,
            top_p=top_p, timeout=timeout, output_types=output_types, enums=enums,
            repetition_penalty=repetition_penalty, no_repeat_ngram_size=no_repeat_ngram_size)
        if not return_exceptions and any(isinstance(r, Exception) for r in results):
            raise BatchFailed(results, traces)
        return results

    def generate_batch_with_traces(self, prompts: Sequence[str], output_type: Any = None, *, temperature: float = 1.0,
                                   max_new_tokens: int = 256, seed: int | None = None, top_k: int = 0,
                                   top_p: float = 1.0, jump_forward: bool = True,
                                   overlap: bool = True, timeout: float | None = None,
                                   output_types: Sequence[Any] | None = None,
                                   enums: Mapping[str, Sequence[Any]] | None = None, repetition_penalty: float = 1.0,
                                   no_repeat_ngram_size: int = 0) -> tuple[list[Any], list[Trace]]:
        """Values (or the exceptions of failed rows) and traces, one per prompt, in order."""
        if isinstance(prompts, str) or not prompts:
            raise ConfigError("prompts must be a non-empty sequence of strings")
        if (output_type is None) == (output_types is None):
            raise ConfigError("give either output_type (every row) or output_types (one per row)")
        if output_types is not None and (isinstance(output_types, str) or len(output_types) != len(prompts)):
            raise ConfigError(f"output_types must hold one entry per prompt ({len(prompts)})")
        types = list(output_types) if output_types is not None else [output_type] * len(prompts)
        sampling = Sampling(temperature, top_k, top_p, max_new_tokens, jump_forward, overlap, timeout,
                            repetition_penalty, no_repeat_ngram_size)
        return self._run(list(prompts), types, sampling, seed, enums)

    def _run(self, prompts: list[str], output_types: list[Any], sampling: Sampling, seed: int | None,
             enums: Mapping[str, Sequence[Any]] | None = None) -> tuple[list[Any], list[Trace]]:
        import torch

        origin = time.perf_counter()
        with telemetry.generation_span(self, len(prompts)) as span:
            plans: dict[int, Plan] = {}
            for output_type in output_types:
                if id(output_type) not in plans:
                    plans[id(output_type)] = self._plan(output_type, enums)
            rows = []
            for index, (prompt, output_type) in enumerate(zip(prompts, output_types, strict=True)):
                plan = plans[id(output_type)]
                generator = None
                if seed is not None:
                    generator = torch.Generator(device=self.device)
                    generator.manual_seed(seed + index)
                trace = Trace(report=plan.report, grammar_cache_hit=plan.cache_hit, compile_seconds=plan.seconds,
                              matcher_seconds=plan.matcher_seconds)
                ids = list(self.tokenizer(prompt)["input_ids"]) or [self.pad_id]
                rows.append(Row(plan.matcher.deep_copy(), ids, generator, trace))
            with self._lock:  # one loop at a time per model: the forward passes would only contend
                decode(self.model, rows, sampling, vocab_size=self.vocab_size, pad_id=self.pad_id,
                       device=self.device, context=self.context, pool=self._worker(), text_of=self._text,
                       origin=origin)
            results: list[Any] = []
            for row, output_type in zip(rows, output_types, strict=True):
                plan = plans[id(output_type)]
                row.trace.text = plan.text_of(row.produced)
                results.append(self._finish(row, plan, sampling))
            telemetry.record_generation(span, self, list(plans.values()), results, [row.trace for row in rows])
        return results, [row.trace for row in rows]

    def _plan(self, output_type: Any, enums: Mapping[str, Sequence[Any]] | None) -> Plan:
        """How rows of ``output_type`` are masked and finished: its grammar (compiled or from the cache, with
        ``enums`` spliced in) as a matcher each row copies."""
        import llguidance

        tokenizer = lltokenizer(self.tokenizer, self.vocab_size)
        if is_constraint(output_type):
            if enums:
                raise ConfigError("enums narrow fields of a JSON contract, not a Regex or Grammar")
            built = compile_constraint(output_type, self.tokenizer, self.vocab_size)
            plan = Plan(output_type, built.grammar, None, built.cache_hit, built.seconds, tokenizer, constraint=built)
        else:
            contract = compile_contract(output_type)
            compiled = compile_grammar(contract.schema, contract.schema_hash, self.tokenizer, self.vocab_size)
            grammar, seconds = compiled.grammar, compiled.seconds
            if enums:
                started = time.perf_counter()
                options: Any = dict(OPTIONS)
                grammar = llguidance.LLMatcher.grammar_from_json_schema(
                    splice(compiled.engine_schema or {}, enums), overrides=options)
                seconds += time.perf_counter() - started
            plan = Plan(output_type, grammar, compiled.report, compiled.cache_hit, seconds, tokenizer,
                        enums=dict(enums) if enums else None, text=self._text)
        started = time.perf_counter()
        plan.matcher = llguidance.LLMatcher(tokenizer, plan.grammar, log_level=0)
        plan.matcher_seconds = time.perf_counter() - started
        if plan.matcher.is_error():
            raise GrammarError(f"the grammar cannot be built for this tokenizer: "
                               f"{plan.matcher.get_error().splitlines()[0][:300]}", plan.report)
        return plan

    def _finish(self, row: Row, plan: Plan, sampling: Sampling) -> Any:
        """The row's validated value, or the typed error it ends with."""
        if isinstance(row.error, DeadEnd) and row.error.expected is None:
            dead = row.error
            expected = plan.expected_after(row.produced)
            if expected:
                row.error = DeadEnd(dead.detail, text=dead.text, state=dead.state,
                                    position=dead.position, tokens=dead.tokens, expected=expected, reason=dead.reason)
        if row.error is not None:
            return row.error
        matcher = row.matcher
        if not matcher.is_stopped() and not matcher.is_accepting():
            where = {"context": "the model's context", "timeout": f"the timeout ({sampling.timeout} s)"}.get(
                row.trace.stop_reason, f"max_new_tokens ({sampling.max_new_tokens})")
            return TruncatedJSONError(f"The output reached {where} before it was complete.", text=row.trace.text)
        try:
            if plan.constraint is not None:
                return check_text(plan.output_type, plan.constraint, row.trace.text, row.produced, plan.lltok)
            value = parse(row.trace.text, plan.output_type)
            if plan.enums:
                check_enums(_json(row.trace.text), plan.enums, row.trace.text)
            return value
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


class Plan:
    """One output type's part of a run: its grammar and a matcher every row of that type copies, how long the
    grammar took and whether it came from the cache, and how a row's tokens become text and are checked."""

    def __init__(self, output_type: Any, grammar: str, report: Any, cache_hit: bool, seconds: float, lltok: Any,
                 *, constraint: CompiledConstraint | None = None, enums: dict[str, Sequence[Any]] | None = None,
                 text: Callable[[list[int]], str] | None = None) -> None:
        self.output_type = output_type
        self.grammar = grammar
        self.report = report
        self.cache_hit = cache_hit
        self.seconds = seconds
        self.lltok = lltok
        self.constraint = constraint
        self.enums = enums
        self._text = text
        self.matcher: Any = None
        self.matcher_seconds = 0.0

    def text_of(self, tokens: list[int]) -> str:
        """The text of ``tokens``: for a regex or grammar the exact bytes the matcher accepted (EOS left out)."""
        if self._text is not None:
            return self._text(tokens)
        eos = self.lltok.eos_token
        raw: bytes = self.lltok.decode_bytes([t for t in tokens if t != eos])
        return raw.decode("utf-8", errors="replace")

    def expected_after(self, tokens: list[int]) -> str | None:
        """What the grammar requires next after ``tokens`` when it requires one thing (its forced bytes)."""
        matcher = self.matcher.deep_copy()
        if not matcher.consume_tokens(tokens):
            return None
        forced: bytes = matcher.compute_ff_bytes()
        return forced.decode("utf-8", errors="backslashreplace") if forced else None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise SchemaViolationError("the output is not one JSON document", text=text) from None
