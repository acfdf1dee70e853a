"""Compiling a contract's JSON Schema into an llguidance grammar for one tokenizer, with caches.

Two caches, both process-wide and thread-safe:

- the llguidance tokenizer, built once per tokenizer *content* (:func:`tokenizer_key`: the tokenizer's name
  plus a hash of its serialised vocabulary, merges and special tokens, so two loads of the same files share
  one entry and a retrained tokenizer under the same name does not) and vocabulary size;
- the compiled grammar, keyed by (canonical schema hash, engine name and version, tokenizer key).

:func:`compile_grammar` returns the grammar with the engine's :class:`~guardrail.schema.lower.CompileReport`
and says whether the cache was hit and how long compiling took, so every generation's trace can show it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from guardrail.schema.lower import CompileReport, lower

__all__ = ["Compiled", "GrammarError", "compile_grammar", "engine_version", "lltokenizer", "tokenizer_key"]

ENGINE = "llguidance"

_GRAMMARS: dict[tuple[str, str, str], tuple[str, CompileReport]] = {}
_TOKENIZERS: dict[tuple[str, int], Any] = {}
_KEYS: dict[int, tuple[Any, str]] = {}
_LOCK = threading.Lock()


class GrammarError(ValueError):
    """The contract cannot be compiled for constrained decoding; ``.report`` says which keywords and why."""

    def __init__(self, message: str, report: CompileReport | None = None) -> None:
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class Compiled:
    """A grammar ready for ``llguidance.LLMatcher``, the engine's compile report, and how it was obtained."""

    grammar: str
    report: CompileReport
    cache_hit: bool
    seconds: float
    key: tuple[str, str, str]


def engine_version() -> str:
    """The installed llguidance version (part of every grammar cache key)."""
    import llguidance

    getter = getattr(llguidance, "get_version", None)
    return f"{ENGINE}-{getter() if getter else 'unknown'}"


def tokenizer_key(tokenizer: Any) -> str:
    """``name@sha256`` of a tokenizer's content: the same files give the same key, in any process.

    A fast tokenizer is hashed through its full serialisation (vocabulary, merges, normaliser, special
    tokens); a slow one through its vocabulary. Computed once per tokenizer object.
    """
    with _LOCK:
        found = _KEYS.get(id(tokenizer))
        if found is not None and found[0] is tokenizer:
            return found[1]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        content = backend.to_str()
    else:
        content = json.dumps(sorted(tokenizer.get_vocab().items()), ensure_ascii=False)
    special = json.dumps([str(t) for t in getattr(tokenizer, "all_special_tokens", [])])
    digest = hashlib.sha256((content + special).encode()).hexdigest()[:24]
    name = str(getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__)
    key = f"{name}@{digest}"
    with _LOCK:
        _KEYS[id(tokenizer)] = (tokenizer, key)
    return key


def lltokenizer(tokenizer: Any, n_vocab: int) -> Any:
    """The llguidance tokenizer for ``tokenizer`` with ``n_vocab`` logits (built once per content and size)."""
    import llguidance.hf

    key = (tokenizer_key(tokenizer), n_vocab)
    with _LOCK:
        found = _TOKENIZERS.get(key)
    if found is None:
        found = llguidance.hf.from_tokenizer(tokenizer, n_vocab=n_vocab)
        with _LOCK:
            found = _TOKENIZERS.setdefault(key, found)
    return found


def compile_grammar(schema: dict[str, Any], schema_hash: str, tokenizer: Any, n_vocab: int) -> Compiled:
    """Compile ``schema`` (the contract's JSON Schema; ``schema_hash`` its canonical hash) for ``tokenizer``.

    Raises :class:`GrammarError` when the engine cannot compile it (the report lists the rejections).
    """
    import llguidance

    key = (schema_hash, engine_version(), tokenizer_key(tokenizer))
    with _LOCK:
        found = _GRAMMARS.get(key)
    if found is not None:
        return Compiled(found[0], found[1], True, 0.0, key)
    started = time.perf_counter()
    lowered = lower(schema, "grammar")
    report = lowered.report
    if not report.ok:
        raise GrammarError("the contract cannot be compiled for constrained decoding: "
                           + "; ".join(e.detail for e in report.rejected), report)
    grammar: str = llguidance.LLMatcher.grammar_from_json_schema(
        closed(lowered.schema), defaults={"whitespace_flexible": False})
    problem = llguidance.LLMatcher.validate_grammar(grammar, lltokenizer(tokenizer, n_vocab))
    if problem:
        raise GrammarError(f"the contract cannot be compiled for constrained decoding: {problem}", report)
    seconds = time.perf_counter() - started
    with _LOCK:
        _GRAMMARS[key] = (grammar, report)
    return Compiled(grammar, report, False, seconds, key)


def clear_caches() -> None:
    """Forget compiled grammars and tokenizers (benchmarks measure cold compiles with it)."""
    with _LOCK:
        _GRAMMARS.clear()
        _TOKENIZERS.clear()
        _KEYS.clear()


def closed(schema: Any) -> Any:
    """A copy with ``additionalProperties: false`` on every object schema that does not say otherwise.

    In JSON Schema an object is open unless it says so; a pydantic model that does not allow extra fields
    should not let the decoder invent keys that validation would then drop. A model with ``extra="allow"``
    emits ``additionalProperties: true`` and stays open. Walks with an explicit stack (no recursion limit).
    """
    import copy

    out = copy.deepcopy(schema)
    stack = [out]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out
