"""Constraints beyond JSON on the local tier: ``Regex`` and ``Grammar`` (Lark and GBNF) through llguidance.

The tiny random model at temperature 1 is adversarial: whatever it would write, only the mask keeps the text in
the language, so every output is checked here against an independent Python ``re`` equivalent of the constraint.
A puppet aims the decoder at texts inside and outside the language. Constraints the engine cannot compile are
typed errors before any forward pass.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
llguidance = pytest.importorskip("llguidance")

from support.puppet import steer  # noqa: E402

from guardrail.errors import ConfigError, SchemaViolationError, TruncatedJSONError  # noqa: E402
from guardrail.local import Grammar, GrammarError, LocalModel, Regex  # noqa: E402
from guardrail.local.constraints import check_text, compile_constraint  # noqa: E402
from guardrail.local.grammar import lltokenizer  # noqa: E402

# (pattern, Python equivalent or None when Python's re reads the pattern the same way)
REGEXES: list[tuple[str, str | None]] = [
    (r"[a-z]{2,5}-\d{3}", None),
    (r"안녕[가-힣]{1,3}요?", None),
    (r"\t\"[😀-😂]{1,2}\\n", None),               # a tab, a quote, emoji, a backslash then n
    (r"(?:yes|no|maybe)\.", None),
    (r"\$\d{1,3}(?:,\d{3}){0,2}", None),        # escaped metacharacters
    (r"[^\x00-\x1f\"\\]{1,6}", None),           # no control characters, quotes or backslashes
    (r"\p{Lu}\p{Ll}{0,4}", r"[^\W\d_a-z]\w{0,4}"),  # Rust-only classes: checked by the matcher (see below)
    (r"(?i:ok|né)!", None),
    (r"\u{48}\x{e9}llo \u{1F600}", "Héllo 😀"),    # Rust escapes for code points
]


def python_pattern(pattern: str, python: str | None) -> re.Pattern[str] | None:
    return None if python is not None and python.startswith("[^\\W") else re.compile(python or pattern)


@pytest.mark.parametrize(("pattern", "python"), REGEXES)
def test_every_sampled_text_fullmatches_the_regex(tiny: LocalModel, pattern: str, python: str | None) -> None:
    expected = python_pattern(pattern, python)
    for seed in range(6):
        text = tiny.generate("Write something:", Regex(pattern), seed=seed, max_new_tokens=64)
        assert isinstance(text, str)
        if expected is not None:
            assert expected.fullmatch(text), (pattern, text)
        else:  # \p{Lu}: check the classes by their Unicode categories

            assert unicodedata.category(text[0]) == "Lu" and all(unicodedata.category(c) == "Ll" for c in text[1:])
            assert 1 <= len(text) <= 5


# Lark and GBNF grammars, each with a Python regex for the same language
GRAMMARS: list[tuple[str, str]] = [
    ('start: greeting " " name "!"\n'
     'greeting: "안녕" | "h\\u00e9llo" | "tab\\there"\n'
     'name: /[A-Z][a-z]{1,5}/',
     r"(?:안녕|héllo|tab\there) [A-Z][a-z]{1,5}!"),
    ('start: "[" item ("," item)? "]"\nitem: /"[^"\\\\]{0,4}"/ | NUMBER\nNUMBER: /-?[0-9]{1,3}/',
     r'\[(?:"[^"\\]{0,4}"|-?[0-9]{1,3})(?:,(?:"[^"\\]{0,4}"|-?[0-9]{1,3}))?\]'),
    ('root ::= "\\"" [a-c] [a-c]? "\\"" sep ("x" | "yé")\nsep ::= "\\n" | "\\t"',
     r'"[a-c][a-c]?"[\n\t](?:x|yé)'),
    ('root ::= answer\nanswer ::= "예" | "아니요" | "maybe: " [0-9]',
     r"예|아니요|maybe: [0-9]"),
]


@pytest.mark.parametrize(("grammar", "python"), GRAMMARS)
def test_every_sampled_text_is_in_the_grammars_language(tiny: LocalModel, grammar: str, python: str) -> None:
    expected = re.compile(python)
    for seed in range(6):
        text = tiny.generate("Answer:", Grammar(grammar), seed=seed, max_new_tokens=64)
        assert expected.fullmatch(text), (grammar, text)


def test_the_syntax_can_be_named(tiny: LocalModel) -> None:
    text = tiny.generate("?", Grammar('root ::= "a" | "b"', syntax="gbnf"), seed=0)
    assert text in ("a", "b")
    assert tiny.generate("?", Grammar('start: "c" | "d"', syntax="lark"), seed=0) in ("c", "d")
    with pytest.raises(ConfigError):
        Grammar("start: x", syntax="ebnf")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        Regex(b"abc")  # type: ignore[arg-type]


class Refuses(torch.nn.Module):  # type: ignore[misc]
    """A model whose forward pass fails the test: compile errors must come before any generation."""

    def __init__(self, tokenizer: Any) -> None:
        super().__init__()
        from types import SimpleNamespace

        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.config = SimpleNamespace(vocab_size=len(tokenizer), n_positions=64)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a forward pass ran for a constraint that does not compile")


@pytest.mark.parametrize("constraint", [
    Regex("(a|b"), Regex(r"(?=a)b"), Regex(r"(a)\1"), Regex(r"a{3,1}"), Regex("[z-a]"),
    Grammar("start: foo"), Grammar('root ::= "unterminated'),
    Grammar("root ::= [a-"), Grammar("start: /(?<=x)y/"), Grammar("this is not a grammar"),
])
def test_a_constraint_the_engine_cannot_compile_is_a_typed_error_before_generating(tiny: LocalModel,
                                                                                   constraint: Any) -> None:
    model = LocalModel(Refuses(tiny.tokenizer), tiny.tokenizer, device="cpu")
    with pytest.raises(GrammarError) as caught:
        model.generate("x", constraint)
    assert "cannot be" in str(caught.value)


def test_an_unbounded_regex_cut_off_is_truncated_not_returned(tiny: LocalModel) -> None:
    value, text = steer(tiny.tokenizer, Regex(r"x[a-z]+!"), "x" + "abc" * 40, max_new_tokens=5)
    assert isinstance(value, TruncatedJSONError) and text.startswith("xabc")


def test_a_puppet_aiming_outside_the_regex_is_held_inside(tiny: LocalModel) -> None:
    value, _ = steer(tiny.tokenizer, Regex(r"[a-z]{3}\d{2}"), "abc123")
    assert value == "abc12"
    value, _ = steer(tiny.tokenizer, Regex(r"(?:red|green) \d"), "red 7 and more")
    assert value == "red 7"
    value, _ = steer(tiny.tokenizer, Regex(r"안녕\"\\[가-힣]"), "안녕\"\\하세요")
    assert value == "안녕\"\\하"


def test_the_post_check_refuses_a_text_outside_the_language(tiny: LocalModel) -> None:
    compiled = compile_constraint(Regex(r"[0-9]{2}"), tiny.tokenizer, tiny.vocab_size)
    lltok = lltokenizer(tiny.tokenizer, tiny.vocab_size)
    good = tiny.tokenizer.encode("42", add_special_tokens=False)
    assert check_text(Regex(r"[0-9]{2}"), compiled, "42", good, lltok) == "42"
    bad = tiny.tokenizer.encode("4x", add_special_tokens=False)
    with pytest.raises(SchemaViolationError):
        check_text(Regex(r"[0-9]{2}"), compiled, "4x", bad, lltok)
    with pytest.raises(SchemaViolationError):  # the tokens match but the text claimed does not: Python's check
        check_text(Regex(r"[0-9]{2}"), compiled, "4x", good, lltok)


def test_compiled_constraints_are_cached(tiny: LocalModel) -> None:
    pattern = Regex(r"cache-me-[0-9]{4}")
    first = compile_constraint(pattern, tiny.tokenizer, tiny.vocab_size)
    again = compile_constraint(Regex(r"cache-me-[0-9]{4}"), tiny.tokenizer, tiny.vocab_size)
    assert not first.cache_hit and again.cache_hit and again.grammar == first.grammar
    _, trace = tiny.generate_with_trace("x", pattern, seed=0)
    assert trace.grammar_cache_hit and trace.report is None


# ------------------------------------------------------------------- random simple regexes from a small generator

_LITERALS = list("abcxyz019 -_.é한😀\t\"\\$()[]{}|*+?^")
_CLASSES = [r"[a-c]", r"[0-9]", r"[가-힣]", r"[^\n]", r"\d", r"[xyz😀]", r"[\-.]"]


def _literal(char: str) -> str:
    return re.escape(char) if char not in "\t" else r"\t"


def regexes() -> st.SearchStrategy[str]:
    atom = st.one_of(st.sampled_from(_LITERALS).map(_literal), st.sampled_from(_CLASSES))
    quantified = st.tuples(atom, st.sampled_from(["", "?", "{1,3}", "{2}", "{0,2}"])).map("".join)
    sequence = st.lists(quantified, min_size=1, max_size=4).map("".join)
    alternation = st.lists(sequence, min_size=2, max_size=3).map(lambda alts: "(?:" + "|".join(alts) + ")")
    return st.one_of(sequence, alternation,
                     st.tuples(sequence, sequence).map(lambda pair: f"{pair[0]}(?:{pair[1]})?"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=regexes(), seed=st.integers(0, 2**16))
def test_random_regexes_every_output_fullmatches(tiny: LocalModel, pattern: str, seed: int) -> None:
    text = tiny.generate("?", Regex(pattern), seed=seed, max_new_tokens=80)
    # a character newer than Python's Unicode database (``\\d`` matching a digit Unicode 16 added) is judged by
    # the engine's own Unicode tables; every other output must fullmatch under Python's re as well
    assert re.fullmatch(pattern, text) or any(unicodedata.category(char) == "Cn" for char in text), (pattern, text)


def test_a_digit_newer_than_pythons_unicode_database_is_judged_by_the_engine(tiny: LocalModel) -> None:
    # seed 34609 makes the tiny model write U+1CCF1 OUTLINED DIGIT ONE (Nd since Unicode 16; unassigned in the
    # Unicode database of the Python running the tests when it is older): the engine's \d matches it, so it is the
    # answer, not a SchemaViolationError from Python's re disagreeing
    text = tiny.generate("?", Regex(r"\d"), seed=34609, max_new_tokens=80)
    assert len(text) == 1 and (re.fullmatch(r"\d", text) or unicodedata.category(text) == "Cn")
