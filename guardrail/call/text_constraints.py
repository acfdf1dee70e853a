"""A structured call whose contract is a text constraint: ``response_model=Regex(r"...")`` or ``Grammar(text)``.

The call runs guardrail's usual attempt loop (transport retries, deadline, budget, re-asks, the response cache,
results) with the plans of :func:`guardrail.vendors.self_hosted_constraints.constraint_plans`: a self-hosted server
is asked to decode under the constraint with its own fields where it has one, every other endpoint is asked in
words. Whatever the server did, the answer text is checked here (:func:`constraint_report`) before it is the
value: a text outside the constraint's language is a :class:`~guardrail.errors.SchemaViolationError` fed back to
the model, and after the last attempt :class:`~guardrail.errors.GaveUp`; never a value.

The check is independent of the server:

* a :class:`~guardrail.local.Regex` must ``re.fullmatch`` the whole text under Python's ``re`` (when Python can
  compile the pattern) and be accepted by llguidance's matcher over bytes (when llguidance is installed; it reads
  the Rust ``regex`` syntax the servers' engines read, ``\\p{L}`` included). A pattern neither can read is a
  :class:`~guardrail.errors.GrammarError` before any request; a text holding characters Python's Unicode database
  does not know yet is judged by llguidance alone, as on the local tier.
* a :class:`~guardrail.local.Grammar` (Lark or GBNF) is checked by llguidance's matcher over bytes (the ``local``
  extra); one it cannot compile is a :class:`~guardrail.errors.GrammarError` before any request.
"""

from __future__ import annotations

import functools
import re
import warnings
from typing import TYPE_CHECKING, Any

from guardrail._optional import require
from guardrail.contract import compile_contract
from guardrail.errors import GrammarError, MissingExtra, SchemaViolationError, UsageError
from guardrail.parse.report import ParseReport
from guardrail.vendors.profiles import Mode, capabilities
from guardrail.vendors.self_hosted_constraints import constraint_plans

if TYPE_CHECKING:
    from guardrail.call.options import Prepared
    from guardrail.vendors.base import Endpoint

__all__ = ["constraint_prepared", "constraint_report"]


def constraint_prepared(endpoint: Endpoint, constraint: Any, mode: Mode | None, examples: Any = ()) -> Prepared:
    """What a call with this text constraint needs before it is sent: a ``str`` contract and the constraint's
    plans for the endpoint's server. The constraint is compiled here first, so a pattern or grammar no checker
    can read is a :class:`GrammarError` before any request. Few-shot examples (JSON values of a contract) are a
    :class:`UsageError` here."""
    from guardrail.call.options import Prepared

    if examples:
        raise UsageError("examples= shows JSON values of a contract; a Regex or Grammar response_model takes none")
    _checker(constraint)
    server = endpoint.server if endpoint.api == "chat" else None  # the servers' fields are Chat Completions fields
    return Prepared(compile_contract(str), capabilities(endpoint.provider, ""),
                    constraint_plans(server, constraint, mode), False)


def constraint_report(constraint: Any, text: str | None) -> ParseReport[Any]:
    """The answer ``text`` as the value when it is in the constraint's language, else the report of a
    :class:`SchemaViolationError` whose feedback tells the model what was wrong. ``None`` (a reply without
    text: a tool call, a null content) is never an answer, even where the language holds the empty text."""
    if text is None:
        return ParseReport(text="", error=SchemaViolationError(
            "the reply had no text (a tool call or an empty message); reply with the text only", text=""))
    problem = _checker(constraint)(text)
    if problem is None:
        return ParseReport(text=text, value=text)
    return ParseReport(text=text, error=SchemaViolationError(problem, text=text))


@functools.lru_cache(maxsize=256)
def _checker(constraint: Any) -> Any:
    """A function from a text to ``None`` (it matches) or what is wrong with it, made once per constraint."""
    if hasattr(constraint, "pattern"):
        return _regex_checker(constraint)
    matcher = _llguidance_matcher(constraint)
    if matcher is None:
        raise MissingExtra("llguidance", "local", "checking an answer against a Grammar")
    return lambda text: None if matcher(text) else "the reply is not a sentence of the grammar; reply with " \
                                                   "the text only, as the grammar describes it"


def _regex_checker(constraint: Any) -> Any:
    try:
        with warnings.catch_warnings():  # e.g. "possible nested set" for [[:alpha:]]: Rust syntax
            warnings.simplefilter("error")
            python: re.Pattern[str] | None = re.compile(constraint.pattern)
    except (re.error, ValueError, OverflowError, RecursionError, Warning):
        python = None  # Rust-only syntax: the matcher's check stands alone
    engine = _llguidance_matcher(constraint)
    if python is None and engine is None:
        raise GrammarError(f"the regex {constraint.pattern!r} cannot be checked: Python's re cannot compile it and "
                           "llguidance (the 'local' extra) is not installed")
    feedback = f"the reply does not match the regular expression {constraint.pattern}; reply with the text only"

    def check(text: str) -> str | None:
        if engine is not None and not engine(text):
            return feedback
        if python is not None and python.fullmatch(text) is None and (engine is None or not _newer(text)):
            return feedback
        return None

    return check


def _newer(text: str) -> bool:
    """A character Python's Unicode database does not know (where ``re`` and the engine may disagree alone)."""
    from guardrail.local.constraints import newer_than_python

    return newer_than_python(text)


def _llguidance_matcher(constraint: Any) -> Any:
    """A function telling whether a text is in the constraint's language by llguidance's matcher over bytes;
    ``None`` when llguidance is not installed. :class:`GrammarError` when it cannot compile the constraint."""
    try:
        llguidance = require("llguidance", "local", "checking an answer against a Regex or Grammar")
    except MissingExtra:
        return None
    from guardrail.local.constraints import engine_grammar, grammar_problem

    grammar = engine_grammar(constraint)
    tokenizer = _byte_tokenizer()
    problem = grammar_problem(grammar, tokenizer)
    if problem:
        what = "regex" if hasattr(constraint, "pattern") else "grammar"
        raise GrammarError(f"the {what} cannot be compiled: {problem}")

    pristine = llguidance.LLMatcher(tokenizer, grammar, log_level=0)  # a refusal is an answer, not a log line

    def accepts(text: str) -> bool:
        matcher = pristine.deep_copy()  # a copy per text: 20x cheaper than a new matcher, and never shared
        return bool(matcher.consume_tokens(tokenizer.tokenize_bytes(text.encode("utf-8", "surrogatepass")))) \
            and bool(matcher.is_accepting())

    return accepts


@functools.cache
def _byte_tokenizer() -> Any:
    """llguidance's tokenizer of single bytes: a text's bytes are its tokens, so any text can be checked."""
    import llguidance

    return llguidance.LLTokenizer("byte")

