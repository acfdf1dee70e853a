"""The local tier's span and metrics: what a grammar-masked generation cost and how it ended.

Only the OpenTelemetry *API* is used, as in :mod:`guardrail.observe.metrics`: without an SDK configured by the
application there is no span and every instrument is a no-op (checked per generation, so the cost is a lookup).

**The span** ``guardrail.local.generate`` (one per :meth:`~guardrail.local.LocalModel.generate` call or batch;
a child of the chain tier's span when the local model is a chain tier):

====================================================  ==================================================================
``gen_ai.operation.name`` / ``gen_ai.request.model``  ``generate_content`` / the model's ``name_or_path`` (else class)
``guardrail.local.engine`` / ``.engine.version``      ``llguidance`` and its version
``guardrail.local.tokenizer``                         the tokenizer's content key (``name@sha256``: which vocabulary)
``guardrail.local.tokenizers.version``                ``tokenizers``' version (and ``.transformers.version``)
``guardrail.local.batch_size``                        rows in the loop
``guardrail.local.grammar.cache_hit``                 every row's grammar came from the cache
``guardrail.local.grammar.compile_seconds``           seconds compiling grammars (0 on a hit; a spliced enum counts)
``guardrail.local.grammar.matcher_seconds``           seconds llguidance took to build the matchers (every run)
``guardrail.local.mask.seconds``                      seconds computing token masks (the loop's, shared by its rows)
``guardrail.local.mask.seconds_per_token``            the same per decoding step
``guardrail.local.time_to_first_token``               seconds to the first token (the earliest row), compiling included
``guardrail.local.inter_token_latency``               mean seconds between later tokens (mean over rows)
``guardrail.local.tokens.sampled`` / ``.forced``      tokens the model chose / the grammar forced (jump-forward)
``guardrail.local.dead_ends``                         rows that ended at a dead end (:class:`~guardrail.errors.DeadEnd`)
``error.type``                                        the first failed row's error class (status ERROR if all failed)
====================================================  ==================================================================

**Metrics** (meter ``guardrail``), attributes ``gen_ai.request.model`` and ``guardrail.local.engine``:

========================================  ============  ================================================================
``guardrail.local.grammar.compile``       ``s``         grammar compile time, per grammar compiled (cache misses)
``guardrail.local.grammar.lookups``       {lookup}      grammar cache lookups (``guardrail.cache.result``: hit/miss)
``guardrail.local.mask.duration``         ``s``         mask computation per decoding step (one token per row)
``guardrail.local.time_to_first_token``   ``s``         per generation (row), compiling and prefill included
``guardrail.local.inter_token_latency``   ``s``         per generation with 2+ tokens: mean gap between tokens
``guardrail.local.generations``           {generation}  rows generated (``guardrail.local.outcome``: ok or error class)
``guardrail.local.dead_ends``             {generation}  rows ended at a dead end; rate = dead_ends / generations
========================================  ============  ================================================================
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics
from opentelemetry.trace import Span

from guardrail._version import __version__
from guardrail.errors import DeadEnd
from guardrail.observe.metrics import DURATION_BUCKETS
from guardrail.observe.telemetry import collecting, internal_span, mark_failed, tracing

if TYPE_CHECKING:
    from guardrail.local.decode import Trace

__all__ = ["generation_span", "record_generation"]

#: Finer buckets for per-token timings (mask computation and inter-token latency run in micro- to milliseconds).
TOKEN_BUCKETS = (1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0)

_meter = metrics.get_meter("guardrail", __version__)
_compile = _meter.create_histogram("guardrail.local.grammar.compile", unit="s",
                                   description="Grammar compile time per grammar compiled (cache misses).",
                                   explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
_lookups = _meter.create_counter("guardrail.local.grammar.lookups", unit="{lookup}",
                                 description="Grammar cache lookups of the local tier.")
_mask = _meter.create_histogram("guardrail.local.mask.duration", unit="s",
                                description="Token mask computation per decoding step.",
                                explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
_first = _meter.create_histogram("guardrail.local.time_to_first_token", unit="s",
                                 description="Seconds from the start of a generation to its first token.",
                                 explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
_gap = _meter.create_histogram("guardrail.local.inter_token_latency", unit="s",
                               description="Mean seconds between tokens after the first, per generation.",
                               explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
_generations = _meter.create_counter("guardrail.local.generations", unit="{generation}",
                                     description="Local generations (rows), by outcome.")
_dead_ends = _meter.create_counter("guardrail.local.dead_ends", unit="{generation}",
                                   description="Local generations that ended at a dead end.")

_VERSIONS: dict[str, str] = {}


def _version(package: str) -> str:
    found = _VERSIONS.get(package)
    if found is None:
        try:
            found = metadata.version(package)
        except metadata.PackageNotFoundError:
            found = "unknown"
        _VERSIONS[package] = found
    return found


def model_name(local: Any) -> str:
    """The model's ``name_or_path`` when it has one, else its class name (low cardinality either way)."""
    name = getattr(getattr(local.model, "config", None), "name_or_path", "") or ""
    return str(name) or type(local.model).__name__


@contextmanager
def generation_span(local: Any, batch: int) -> Iterator[Span | None]:
    """The ``guardrail.local.generate`` span around one run (``None`` when no tracer provider is configured);
    an exception leaving it (a :class:`~guardrail.errors.GrammarError` at compile time) marks it failed."""
    if not tracing():
        yield None
        return
    from guardrail.local.grammar import tokenizer_key

    attributes = {"gen_ai.operation.name": "generate_content", "gen_ai.request.model": model_name(local),
                  "guardrail.local.engine": local.engine, "guardrail.local.engine.version": _version("llguidance"),
                  "guardrail.local.tokenizer": tokenizer_key(local.tokenizer),
                  "guardrail.local.tokenizers.version": _version("tokenizers"),
                  "guardrail.local.transformers.version": _version("transformers"),
                  "guardrail.local.batch_size": batch}
    with internal_span("guardrail.local.generate", attributes) as span:
        yield span


def record_generation(span: Span | None, local: Any, plans: list[Any], results: list[Any],
                      traces: list[Trace]) -> None:
    """Put one run's numbers on its span and into the metrics (see the module docstring)."""
    if span is None and not collecting():
        return
    longest = max(traces, key=lambda t: len(t.step_mask_seconds))
    steps = longest.step_mask_seconds
    failed = [r for r in results if isinstance(r, Exception)]
    dead = sum(isinstance(r, DeadEnd) for r in results)
    firsts = [t.first_token_seconds for t in traces if t.first_token_seconds is not None]
    gaps = [t.inter_token_seconds for t in traces if t.inter_token_seconds is not None]
    if span is not None and span.is_recording():
        span.set_attributes({
            "guardrail.local.grammar.cache_hit": all(p.cache_hit for p in plans),
            "guardrail.local.grammar.compile_seconds": sum(p.seconds for p in plans),
            "guardrail.local.grammar.matcher_seconds": sum(p.matcher_seconds for p in plans),
            "guardrail.local.mask.seconds": sum(steps),
            "guardrail.local.mask.seconds_per_token": sum(steps) / len(steps) if steps else 0.0,
            "guardrail.local.tokens.sampled": sum(t.sampled for t in traces),
            "guardrail.local.tokens.forced": sum(t.forced for t in traces),
            "guardrail.local.dead_ends": dead,
        })
        if firsts:
            span.set_attribute("guardrail.local.time_to_first_token", min(firsts))
        if gaps:
            span.set_attribute("guardrail.local.inter_token_latency", sum(gaps) / len(gaps))
        if len(failed) == len(results):
            mark_failed(span, failed[0])
        elif failed:
            span.set_attribute("error.type", type(failed[0]).__name__)
    if not collecting():
        return
    base = {"gen_ai.request.model": model_name(local), "guardrail.local.engine": local.engine}
    for plan in plans:
        _lookups.add(1, {**base, "guardrail.cache.result": "hit" if plan.cache_hit else "miss"})
        if not plan.cache_hit:
            _compile.record(plan.seconds, base)
    for seconds in steps:
        _mask.record(seconds, base)
    for seconds in firsts:
        _first.record(seconds, base)
    for seconds in gaps:
        _gap.record(seconds, base)
    for result in results:
        _generations.add(1, {**base, "guardrail.local.outcome": type(result).__name__ if isinstance(
            result, Exception) else "ok"})
    if dead:
        _dead_ends.add(dead, base)
