"""Constraints beyond JSON for :class:`guardrail.local.LocalModel`: a regular expression or a context-free grammar.

``LocalModel.generate(prompt, Regex(r"..."))`` and ``LocalModel.generate(prompt, Grammar(text))`` mask the logits
with an llguidance grammar built from the pattern or grammar instead of a contract's JSON Schema; the value is
the generated **text**, which is guaranteed to match:

- while decoding, no token that would leave the language can be sampled, and EOS only where it may end;
- after decoding the text is checked again, independently of the decoding matcher: a fresh matcher must accept
  the produced tokens and end in an accepting state, and a :class:`Regex` must also ``re.fullmatch`` the text
  with Python's own engine (when Python's ``re`` can compile the pattern: llguidance reads Rust ``regex``
  syntax, where ``\\p{L}`` and ``[[:alpha:]]`` exist; a pattern only Rust reads is checked by the matcher only); and a
  text holding characters Python's Unicode database does not know yet, such as ``\\d`` matching a digit Unicode 16
  added, is judged by the matcher alone: the two engines' Unicode versions differ, and the engine's is the one
  the pattern is written for).
  A text that fails a check is a :class:`~guardrail.errors.SchemaViolationError`, never a value.

Compiling happens before any token is generated: a pattern or grammar the engine cannot compile (bad syntax,
look-around, back-references, an undefined rule, a GBNF text that does not convert) is a
:class:`~guardrail.errors.GrammarError` naming the engine's message. Compiled constraints are cached per
(kind, text, engine version, tokenizer key), like contract grammars.

A :class:`Grammar` is llguidance's Lark-like syntax (``start: ...``, ``%json {...}`` for an embedded JSON
Schema, ``/regex/`` terminals) or llama.cpp's GBNF (``root ::= ...``), told apart by the text (or named with
``syntax=``); GBNF is converted to Lark by llguidance's own converter.
"""

from __future__ import annotations

import re
import threading
import time
import unicodedata
import warnings
from dataclasses import dataclass
from typing import Any, Literal

from guardrail.errors import ConfigError, GrammarError, SchemaViolationError
from guardrail.local.grammar import engine_version, lltokenizer, tokenizer_key

__all__ = ["Compiled", "Grammar", "Regex", "check_text", "compile_constraint", "engine_grammar", "grammar_problem"]


@dataclass(frozen=True)
class Regex:
    """Generate a text that matches ``pattern`` as a whole (Rust ``regex`` syntax, as llguidance reads it).

    The pattern is implicitly anchored at both ends: ``Regex(r"[a-z]+")`` never yields ``"abc!"``.
    """

    pattern: str

    def __post_init__(self) -> None:
        if not isinstance(self.pattern, str):
            raise ConfigError(f"Regex takes a pattern string, not {type(self.pattern).__name__}")


@dataclass(frozen=True)
class Grammar:
    """Generate a text of the language of a context-free grammar: llguidance Lark (``start: ...``) or GBNF
    (``root ::= ...``); ``syntax="auto"`` tells them apart the way llguidance does."""

    text: str
    syntax: Literal["auto", "lark", "gbnf"] = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise ConfigError(f"Grammar takes the grammar's text, not {type(self.text).__name__}")
        if self.syntax not in ("auto", "lark", "gbnf"):
            raise ConfigError(f"Grammar syntax must be 'auto', 'lark' or 'gbnf', not {self.syntax!r}")


Constraint = Regex | Grammar


@dataclass(frozen=True)
class Compiled:
    """An llguidance grammar for a :class:`Regex` or :class:`Grammar`, checked against one tokenizer."""

    grammar: str
    cache_hit: bool
    seconds: float
    python_pattern: re.Pattern[str] | None = None


_CACHE: dict[tuple[str, str, str, str, str], tuple[str, re.Pattern[str] | None]] = {}
_LOCK = threading.Lock()


def is_constraint(value: Any) -> bool:
    """Whether ``value`` is a :class:`Regex` or :class:`Grammar` (rather than a contract type)."""
    return isinstance(value, (Regex, Grammar))


def compile_constraint(constraint: Constraint, tokenizer: Any, n_vocab: int) -> Compiled:
    """The llguidance grammar for ``constraint``, validated for ``tokenizer`` (cached); raises
    :class:`GrammarError` with the engine's message when it cannot be compiled."""
    kind = "regex" if isinstance(constraint, Regex) else f"grammar:{constraint.syntax}"
    text = constraint.pattern if isinstance(constraint, Regex) else constraint.text
    key = (kind, text, engine_version(), tokenizer_key(tokenizer), str(n_vocab))
    with _LOCK:
        found = _CACHE.get(key)
    if found is not None:
        return Compiled(found[0], True, 0.0, found[1])
    import llguidance

    started = time.perf_counter()
    python_pattern = None
    if isinstance(constraint, Regex):
        grammar = llguidance.LLMatcher.grammar_from_regex(constraint.pattern)
        try:
            with warnings.catch_warnings():  # e.g. "possible nested set" for [[:alpha:]]: Rust syntax
                warnings.simplefilter("error")
                python_pattern = re.compile(constraint.pattern)
        except (re.error, ValueError, OverflowError, RecursionError, Warning):
            python_pattern = None  # Rust-only syntax: the matcher's check stands alone
    else:
        grammar = _from_grammar(constraint)
    problem = llguidance.LLMatcher.validate_grammar(grammar, lltokenizer(tokenizer, n_vocab))
    if problem:
        what = "regex" if isinstance(constraint, Regex) else "grammar"
        raise GrammarError(f"the {what} cannot be compiled for constrained decoding: {_summary(problem)}")
    seconds = time.perf_counter() - started
    with _LOCK:
        _CACHE[key] = (grammar, python_pattern)
    return Compiled(grammar, False, seconds, python_pattern)


def _from_grammar(constraint: Grammar) -> str:
    import llguidance
    from llguidance.gbnf_to_lark import any_to_lark, gbnf_to_lark

    text = constraint.text
    try:
        if constraint.syntax == "gbnf":
            text = gbnf_to_lark(text)
        elif constraint.syntax == "auto":
            text = any_to_lark(text)
    except Exception as error:  # the converter raises its own and builtin errors alike; all mean "not GBNF"
        raise GrammarError(f"the GBNF grammar cannot be converted: {_summary(str(error))}") from None
    grammar: str = llguidance.LLMatcher.grammar_from_lark(text)
    return grammar


def engine_grammar(constraint: Constraint) -> str:
    """llguidance's grammar for a :class:`Regex` or :class:`Grammar`, for no tokenizer in particular (a check of
    answer texts over bytes, :mod:`guardrail.call.text_constraints`); :class:`GrammarError` for a bad GBNF."""
    import llguidance

    if isinstance(constraint, Regex):
        grammar: str = llguidance.LLMatcher.grammar_from_regex(constraint.pattern)
        return grammar
    return _from_grammar(constraint)


def grammar_problem(grammar: str, lltok: Any) -> str | None:
    """What llguidance says is wrong with ``grammar`` for the tokenizer ``lltok`` (summarised), or ``None``."""
    import llguidance

    problem = llguidance.LLMatcher.validate_grammar(grammar, lltok)
    return _summary(problem) if problem else None


def _summary(problem: str) -> str:
    lines = [line.strip() for line in problem.splitlines() if line.strip()]
    detail = next((line for line in lines if line.startswith("error:")), "")
    head = lines[0] if lines else problem
    return (f"{head} ({detail})" if detail and detail != head else head)[:300]


def check_text(constraint: Constraint, compiled: Compiled, text: str, tokens: list[int], lltok: Any) -> str:
    """``text`` (made of ``tokens``) if it is in the constraint's language, checked afresh (see the module
    docstring); else :class:`SchemaViolationError`."""
    import llguidance

    matcher = llguidance.LLMatcher(lltok, compiled.grammar)
    eos = lltok.eos_token
    body = tokens[:-1] if tokens and tokens[-1] == eos else tokens
    if not matcher.consume_tokens(body) or not matcher.is_accepting():
        raise SchemaViolationError("the text is not in the constraint's language", text=text)
    if compiled.python_pattern is not None and compiled.python_pattern.fullmatch(text) is None \
            and not newer_than_python(text):
        raise SchemaViolationError(f"the text does not fullmatch {compiled.python_pattern.pattern!r} "
                                   "under Python's re", text=text)
    return text


def newer_than_python(text: str) -> bool:
    """Whether ``text`` holds a character Python's Unicode database does not know (unassigned there): where
    Python's ``re`` and the engine's Rust ``regex`` may disagree for that reason alone."""
    return any(unicodedata.category(char) == "Cn" for char in text)
