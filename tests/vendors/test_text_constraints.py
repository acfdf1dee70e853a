"""A regex or grammar as ``response_model`` on OpenAI-compatible self-hosted servers: each server's own request
field carries it (vLLM ``structured_outputs``, SGLang ``regex``/``ebnf``, llama.cpp ``grammar``; Ollama takes
none), and the answer text is checked against it whatever the server did: a text outside the language is
re-asked and never returned."""

from __future__ import annotations

import re
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import guardrail
from guardrail.errors import ConfigError, GaveUp, GrammarError, UsageError
from guardrail.local import Grammar, Regex
from guardrail.store import SQLiteStore
from guardrail.testing import Emulator, reply

FAST = guardrail.RetryPolicy(max_tries=2, initial_wait=0.01, max_wait=0.1, deadline=10)
MESSAGES = [{"role": "user", "content": "Give me a ticket code."}]

#: Unicode letters and digits, an escaped dot, a literal backslash, a quote and a \u escape: the body must carry
#: the pattern exactly as written.
UNICODE_REGEX = Regex(r"Tïcket-№\d{2}\.\\[a-zé]+ \"ok\" \u00e9")
UNICODE_TEXT = 'Tïcket-№42.\\café "ok" é'
GBNF = Grammar('root ::= "yes" | "no" | "peut-être"')
LARK = Grammar('start: "oui" | "non"')

#: server -> (the body path of the regex, of a GBNF grammar, of a Lark grammar); None: post-checked only.
FIELDS: dict[str, tuple[str | None, str | None, str | None]] = {
    "vllm": ("structured_outputs.regex", "structured_outputs.grammar", "structured_outputs.grammar"),
    "sglang": ("regex", "ebnf", None),
    "llamacpp": (None, "grammar", None),
    "ollama": (None, None, None),
}


def client(emu: Emulator, server: str | None, **options: Any) -> Any:
    return guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), server=server,
                          retry=FAST, **options)


def ask(emu: Emulator, server: str | None, constraint: Any, **kwargs: Any) -> Any:
    return client(emu, server).chat.completions.create_with_result(model="m", messages=MESSAGES,
                                                                    response_model=constraint, **kwargs)


@pytest.mark.parametrize("server", list(FIELDS))
@pytest.mark.parametrize(("which", "constraint", "answer"), [(0, UNICODE_REGEX, UNICODE_TEXT), (1, GBNF, "peut-être"),
                                                             (2, LARK, "non")])
def test_each_server_gets_its_own_field(emu: Emulator, server: str, which: int, constraint: Any,
                                        answer: str) -> None:
    emu.script(reply.answer(answer))
    result = ask(emu, server, constraint)
    assert result.value == answer  # the text itself, not JSON
    (request,) = emu.requests
    field = FIELDS[server][which]
    sent = constraint.pattern if isinstance(constraint, Regex) else constraint.text
    if field is None:
        assert request.text_constraint is None and result.mode == "prompt"
        (entry,) = result.compile_report.entries
        assert entry.action == "post_validated"
    else:
        assert request.text_constraint == {"field": field, "kind": "regex" if which == 0 else "grammar",
                                           "value": sent}
        assert result.mode == "native"
        (entry,) = result.compile_report.entries
        assert entry.action == "enforced"
    assert request.output_format is None and request.tools == []  # no JSON schema asked for as well
    assert sent in request.system  # the model is told the constraint in every case


@pytest.mark.parametrize("server", list(FIELDS))
def test_a_text_outside_the_language_is_reasked_never_returned(emu: Emulator, server: str) -> None:
    emu.script(reply.answer(f'"{UNICODE_TEXT}"'), reply.answer(UNICODE_TEXT))
    result = ask(emu, server, UNICODE_REGEX)
    assert result.value == UNICODE_TEXT
    _, second = emu.requests
    assert "does not match the regular expression" in second.last_user_text
    assert [attempt.error_kind for attempt in result.attempts] == ["schema_violation", None]


def test_no_match_after_the_last_attempt_is_gave_up(emu: Emulator) -> None:
    emu.script(*(reply.answer("maybe") for _ in range(2)))
    with pytest.raises(GaveUp):
        ask(emu, "sglang", GBNF, max_attempts=2)
    assert len(emu.requests) == 2


def test_openai_itself_is_asked_in_words_and_checked(emu: Emulator) -> None:
    emu.script(reply.answer("no"))
    result = ask(emu, None, GBNF)
    assert result.value == "no" and result.mode == "prompt"
    assert emu.requests[0].text_constraint is None


def test_a_constraint_no_checker_can_compile_fails_before_any_request(emu: Emulator) -> None:
    with pytest.raises(GrammarError):
        ask(emu, "vllm", Grammar("start: undefined_rule"))
    with pytest.raises(GrammarError):
        ask(emu, "vllm", Regex(r"(?<=a)b"))  # look-behind: neither engine reads it
    assert emu.requests == []


def test_json_modes_and_examples_do_not_apply(emu: Emulator) -> None:
    with pytest.raises(ConfigError, match="asks for JSON"):
        ask(emu, "vllm", GBNF, mode="json")
    with pytest.raises(ConfigError, match="mode='prompt'"):
        ask(emu, "ollama", GBNF, mode="native")
    with pytest.raises(UsageError, match="examples"):
        ask(emu, "vllm", GBNF, examples=["yes"])
    assert emu.requests == []


def test_a_forced_prompt_mode_sends_no_field(emu: Emulator) -> None:
    emu.script(reply.answer("yes"))
    assert ask(emu, "vllm", GBNF, mode="prompt").value == "yes"
    assert emu.requests[0].text_constraint is None


def test_rust_only_regex_syntax_is_checked_by_the_engine(emu: Emulator) -> None:
    emu.script(reply.answer("Ωmega1"), reply.answer("Ωmega"))
    result = ask(emu, "vllm", Regex(r"\p{L}+"))  # Python's re cannot read \p{L}; llguidance can
    assert result.value == "Ωmega" and len(emu.requests) == 2
    assert emu.requests[0].text_constraint == {"field": "structured_outputs.regex", "kind": "regex",
                                               "value": r"\p{L}+"}


def test_the_constraint_is_part_of_the_cache_key(emu: Emulator, tmp_path: Any) -> None:
    emu.script(reply.answer("yes"), reply.answer("oui"))
    wrapped = client(emu, "vllm", cache=guardrail.Cache(SQLiteStore(str(tmp_path / "c.db"))))
    calls = [(GBNF, "yes"), (GBNF, "yes"), (Grammar('root ::= "yes" | "oui"'), "oui")]
    results = [wrapped.chat.completions.create_with_result(model="m", messages=MESSAGES, response_model=c)
               for c, _ in calls]
    assert [(r.value, r.cached) for r in results] == [("yes", False), ("yes", True), ("oui", False)]


def test_async_client(emu: Emulator) -> None:
    import asyncio

    emu.script(reply.answer("no"))
    wrapped = guardrail.wrap(openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5),
                             server="sglang", retry=FAST)

    async def go() -> Any:
        return await wrapped.chat.completions.create(model="m", messages=MESSAGES, response_model=GBNF)

    assert asyncio.run(go()) == "no"
    assert emu.requests[0].text_constraint == {"field": "ebnf", "kind": "grammar", "value": GBNF.text}


PATTERN = r"[A-Z]{2}-\d{1,3}( [a-zà-ÿ]+)?"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.from_regex(PATTERN, fullmatch=True), st.text(max_size=12)))
def test_a_value_is_returned_only_when_it_matches(emu: Emulator, text: str) -> None:
    emu.reset()
    emu.script(reply.answer(text), reply.answer("OK-1"))
    result = ask(emu, "vllm", Regex(PATTERN), max_attempts=2)
    if text and re.fullmatch(PATTERN, text):
        assert result.value == text and len(emu.requests) == 1
    else:
        assert result.value == "OK-1" and len(emu.requests) == 2


def literal(text: str) -> str:
    """``text`` as a regex matching exactly it, in the syntax Python's ``re`` and Rust's ``regex`` share."""
    return "".join("\\" + char if char in ".^$*+?()[]{}|\\" else char for char in text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(st.characters(exclude_categories=("Cs", "Cc", "Cn")), min_size=1, max_size=12))
def test_any_unicode_literal_travels_exactly_and_matches(emu: Emulator, text: str) -> None:
    emu.reset()
    emu.script(reply.answer(text))
    pattern = literal(text)
    assert ask(emu, "sglang", Regex(pattern)).value == text
    assert emu.requests[0].text_constraint == {"field": "regex", "kind": "regex", "value": pattern}


def test_the_decorator_and_the_chain_take_a_constraint(emu: Emulator) -> None:
    from guardrail.chain.tiers import Chain, vendor

    emu.script(reply.answer("AB-12"), reply.answer("yes"))

    @guardrail.structured(client=client(emu, "vllm"), model="m", output=Regex(r"[A-Z]{2}-\d+"))
    def code(item: str) -> str:
        """A stock code for the item."""

    assert code("chair") == "AB-12"
    chain = Chain([vendor(openai.OpenAI(base_url=emu.openai_base_url, api_key="t", timeout=5), "m", server="sglang")])
    assert chain.run(GBNF, system="Answer.", user="ok?").value == "yes"
    first, second = emu.requests
    assert first.text_constraint == {"field": "structured_outputs.regex", "kind": "regex", "value": r"[A-Z]{2}-\d+"}
    assert second.text_constraint == {"field": "ebnf", "kind": "grammar", "value": GBNF.text}


def test_the_check_is_right_from_many_threads_at_once() -> None:
    import threading

    from guardrail.call.text_constraints import constraint_report

    wrong: list[str] = []

    def check() -> None:
        for number in range(300):
            text = "peut-être" if number % 2 else "peut-etre"
            if constraint_report(GBNF, text).ok != bool(number % 2):
                wrong.append(text)

    threads = [threading.Thread(target=check) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
