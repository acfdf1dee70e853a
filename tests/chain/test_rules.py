"""The rule engine: the shipped rule sets, precedence, contract validation, load-time errors and speed."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from guardrail.chain.fallback import (
    Fired,
    RuleEngine,
    RuleSetError,
    check_rule_sets,
    load_rule_set,
    parse_rule_set,
    rule_function,
    rules_check,
)
from guardrail.tools.policy.regex import LinearPattern

FALLBACKS = Path(__file__).resolve().parents[2] / "fallbacks"


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    category: Literal["billing", "shipping", "account", "technical", "other"]
    summary: str = Field(max_length=120)


class Segment(BaseModel):
    scriptText: str
    startSeconds: float
    durationSeconds: float
    keywords: list[str]


@pytest.fixture(scope="module")
def triage() -> RuleEngine:
    return RuleEngine(load_rule_set(FALLBACKS / "ticket_triage.toml"))


@pytest.fixture(scope="module")
def segmenter() -> RuleEngine:
    return RuleEngine(load_rule_set(FALLBACKS / "video_segments.toml"))


def ids(fired: tuple[Fired, ...]) -> list[str]:
    return [f.rule_id for f in fired]


# ------------------------------------------------------------------------------------------------ ticket triage


@pytest.mark.parametrize(
    ("inquiry", "category", "urgency", "rules"),
    [
        ("배송이 2주째 안 와요", "shipping", 3, ["shipping-keywords", "waiting-long"]),
        ("택배가 아직 도착하지 않았어요. 급해요!", "shipping", 5, ["shipping-keywords", "waiting-long", "urgent-cues"]),
        ("결제가 두 번 되었어요. 환불해 주세요.", "billing", 3, ["billing-keywords", "money-at-stake"]),
        ("로그인이 안 돼요. 비밀번호를 잊어버렸어요.", "account", 2, ["account-keywords"]),
        ("앱에서 오류가 나요", "technical", 2, ["technical-keywords"]),
        ("계정이 해킹당했어요", "account", 5, ["account-keywords", "security-incident"]),
        ("Where is my parcel? The tracking page shows nothing.", "shipping", 2, ["shipping-keywords"]),
        ("I was charged twice and want a refund", "billing", 3, ["billing-keywords", "money-at-stake"]),
        ("I can't log in, password reset email never arrives", "account", 2, ["account-keywords"]),
        ("The app shows an error and crashes on start", "technical", 2, ["technical-keywords"]),
        ("URGENT: please fix my invoice today", "billing", 5, ["billing-keywords", "urgent-cues"]),
    ],
)
def test_triage_examples(triage: RuleEngine, inquiry: str, category: str, urgency: int, rules: list[str]) -> None:
    ticket, fired = triage.run({"inquiry": inquiry}, Ticket)
    assert isinstance(ticket, Ticket)
    assert (ticket.category, ticket.urgency) == (category, urgency)
    assert ids(fired) == rules
    assert all(f.why for f in fired)


def test_defaults_when_nothing_matches(triage: RuleEngine) -> None:
    ticket, fired = triage.run({"inquiry": "Hello, I have a question about your opening hours."}, Ticket)
    assert (ticket.category, ticket.urgency) == ("other", 2)
    assert ticket.summary == "Hello, I have a question about your opening hours."
    assert fired == ()
    ticket, fired = triage.run({}, Ticket)  # the input is missing altogether
    assert (ticket.category, ticket.urgency, ticket.summary) == ("other", 2, "")
    assert fired == ()


def test_summary_is_first_sentence_within_120(triage: RuleEngine) -> None:
    ticket, _ = triage.run({"inquiry": "  My order   is late. It was due Monday. Please help!"}, Ticket)
    assert ticket.summary == "My order is late."
    ticket, _ = triage.run({"inquiry": "word " * 100}, Ticket)
    assert len(ticket.summary) <= 120 and ticket.summary.endswith("…")
    ticket, _ = triage.run({"inquiry": "환불 요청합니다. 상품이 파손되었어요."}, Ticket)
    assert ticket.summary == "환불 요청합니다."


def test_later_rule_overrides_earlier_for_the_same_field(triage: RuleEngine) -> None:
    # shipping-keywords comes after account-keywords in the file: the later match wins the category
    ticket, fired = triage.run({"inquiry": "my account page has no tracking number"}, Ticket)
    assert ticket.category == "shipping"
    account = next(f for f in fired if f.rule_id == "account-keywords")
    assert account.fields == ("category",) and account.overridden == ("category",)
    shipping = next(f for f in fired if f.rule_id == "shipping-keywords")
    assert shipping.overridden == ()
    # urgency 3 (refund) then urgency 5 (urgent): 5 wins
    ticket, fired = triage.run({"inquiry": "refund asap"}, Ticket)
    assert ticket.urgency == 5
    assert next(f for f in fired if f.rule_id == "money-at-stake").overridden == ("urgency",)


def test_precedence_defaults_derived_rules() -> None:
    rule_set = parse_rule_set(
        """
name = "p"
version = "1"
input = "text"
[defaults]
a = "default"
b = "default"
[derived]
b = { from = "text" }
[[rules]]
id = "first"
when.any_keywords = ["x"]
set = { a = "first", c = 1 }
[[rules]]
id = "second"
when.all_keywords = ["x", "y"]
set = { a = "second" }
[[rules]]
id = "needs-order"
when.input_missing = "order_id"
set = { c = 2 }
"""
    )
    engine = RuleEngine(rule_set)
    value, fired = engine.produce({"text": "x y"})
    assert value == {"a": "second", "b": "x y", "c": 2}
    assert ids(fired) == ["first", "second", "needs-order"]
    assert fired[0].overridden == ("a", "c")
    value, fired = engine.produce({"text": "x", "order_id": "17"})
    assert value == {"a": "first", "b": "x", "c": 1}
    assert ids(fired) == ["first"]


def test_output_failing_the_contract_raises() -> None:
    rule_set = parse_rule_set(
        'name = "t"\nversion = "1"\ninput = "inquiry"\n[defaults]\nurgency = 2\ncategory = "other"\n'
        'summary = ""\n[[rules]]\nid = "too-urgent"\nwhen.any_keywords = ["fire"]\nset = { urgency = 9 }\n'
    )
    engine = RuleEngine(rule_set)
    assert engine.run({"inquiry": "calm"}, Ticket)[0].urgency == 2
    with pytest.raises(RuleSetError) as caught:
        engine.run({"inquiry": "fire!"}, Ticket)
    assert caught.value.problems[0].key == "urgency"
    assert ids(caught.value.fired) == ["too-urgent"]


@given(st.text() | st.text(st.characters(exclude_categories=[])) | st.none() | st.integers())
def test_any_inquiry_gives_a_valid_ticket(inquiry: Any) -> None:
    engine = RuleEngine(load_rule_set(FALLBACKS / "ticket_triage.toml"))
    ticket, fired = engine.run({"inquiry": inquiry}, Ticket)
    assert isinstance(ticket, Ticket) and isinstance(fired, tuple)


def test_lone_surrogates_do_not_break_the_summary(triage: RuleEngine) -> None:
    ticket, _ = triage.run({"inquiry": "refund \ud800 now"}, Ticket)
    assert ticket.category == "billing" and "\ufffd" in ticket.summary


def test_100kb_input_is_fast(triage: RuleEngine) -> None:
    inquiry = ("a" * 30 + "! 배송 " + "x" * 50 + " ") * 1200  # ~100 KB, backtracking bait for a naive engine
    assert len(inquiry.encode()) > 100_000
    # Linear time is a property of the engine, checked without a clock: every pattern runs on RE2 (no
    # backtracking); keywords are substring searches. Speed itself is measured in bench/, not asserted here.
    patterns = [rule.when.pattern for rule in triage.rule_set.rules if rule.when.pattern is not None]
    assert patterns and all(isinstance(pattern, LinearPattern) for pattern in patterns)
    ticket, _ = triage.run({"inquiry": inquiry + "urgent"}, Ticket)
    assert (ticket.category, ticket.urgency) == ("shipping", 5)


# --------------------------------------------------------------------------------------------- video segmenting


def test_segments_cut_at_sentence_ends(segmenter: RuleEngine) -> None:
    sentences = [
        "Today we learn about Python lists.",
        "Lists hold values in order and Python lists grow as needed.",
        "오늘은 파이썬 딕셔너리를 배웁니다.",
        "딕셔너리는 키와 값을 저장합니다.",
        "Finally, we look at tuples and why tuples are immutable.",
        "That is all for today!",
    ]
    transcript = " ".join(sentences)
    segments, fired = segmenter.run(
        {"transcript": transcript, "duration_seconds": 90.0, "segment_seconds": 30}, list[Segment]
    )
    assert ids(fired) == ["function:segment_transcript"]
    assert len(segments) == 3
    assert "".join(s.scriptText for s in segments) == transcript
    for segment in segments[:-1]:
        assert segment.scriptText.rstrip()[-1] in ".!?"  # no sentence cut mid-way
    assert segments[0].startSeconds == 0.0
    assert abs(sum(s.durationSeconds for s in segments) - 90.0) < 1e-6
    assert "python" in segments[0].keywords and "lists" in segments[0].keywords
    assert all(len(s.keywords) <= 3 and all(len(k) >= 3 for k in s.keywords) for s in segments)


def test_segment_defaults_and_bad_inputs(segmenter: RuleEngine) -> None:
    segments, _ = segmenter.run({"transcript": "One. Two. Three.", "duration_seconds": 45}, list[Segment])
    assert len(segments) == 2  # segment_seconds defaults to 30: round(45 / 30)
    segments, _ = segmenter.run({"transcript": "", "duration_seconds": 12.5}, list[Segment])
    assert [(s.scriptText, s.startSeconds, s.durationSeconds) for s in segments] == [("", 0.0, 12.5)]
    bad_inputs: list[dict[str, Any]] = [
        {"transcript": "x"},
        {"transcript": 3, "duration_seconds": 10},
        {"transcript": "x", "duration_seconds": -1},
        {"transcript": "x", "duration_seconds": 10, "segment_seconds": 0},
    ]
    for bad in bad_inputs:
        with pytest.raises(RuleSetError, match="segment_transcript"):
            segmenter.run(bad, list[Segment])


_SENTENCE = st.lists(st.sampled_from(["alpha", "beta", "감사합니다", "영상", "python", "x", "123", "é"]), min_size=1,
                     max_size=12).map(" ".join)
_TRANSCRIPTS = st.lists(
    st.tuples(_SENTENCE, st.sampled_from([". ", "! ", "? ", "。", "다. ", "\n", " ", ""])).map("".join), max_size=40
).map("".join) | st.text(max_size=400)


@given(
    _TRANSCRIPTS,
    st.floats(min_value=0.5, max_value=20_000, allow_nan=False),
    st.floats(min_value=1, max_value=120, allow_nan=False),
)
def test_segment_properties(transcript: str, duration: float, step: float) -> None:
    engine = RuleEngine(load_rule_set(FALLBACKS / "video_segments.toml"))
    inputs = {"transcript": transcript, "duration_seconds": duration, "segment_seconds": step}
    segments, _ = engine.run(inputs, list[Segment])
    assert segments
    assert "".join(s.scriptText for s in segments) == transcript  # every character once, in order
    assert all(s.durationSeconds > 0 for s in segments)
    assert abs(sum(s.durationSeconds for s in segments) - duration) < 1e-6
    assert segments[0].startSeconds == 0.0
    for before, after in itertools.pairwise(segments):
        assert after.startSeconds > before.startSeconds
        assert abs(before.startSeconds + before.durationSeconds - after.startSeconds) < 1e-6
    assert len(segments) <= max(1, round(duration / step))
    assert engine.run(inputs, list[Segment])[0] == segments  # deterministic


# ------------------------------------------------------------------------------------------ load-time validation


def problems_of(text: str) -> list[tuple[str, int | None, str, str]]:
    with pytest.raises(RuleSetError) as caught:
        parse_rule_set(text, "bad.toml")
    return [tuple(p) for p in caught.value.problems]  # type: ignore[misc]


def test_bad_pattern_is_refused_with_line_and_key() -> None:
    text = 'name = "t"\nversion = "1"\ninput = "q"\n\n[[rules]]\nid = "r1"\n'
    text += 'when.pattern = "(a)\\\\1"\nset = { x = 1 }\n'
    [(file, line, key, message)] = problems_of(text)
    assert (file, line, key) == ("bad.toml", 7, "rules[0].when.pattern")
    assert "backreferences" in message


def test_unknown_keys_are_refused_with_line() -> None:
    text = ('name = "t"\nversion = "1"\ninput = "q"\ncolour = "red"\n[[rules]]\nid = "r1"\n'
            'when.any_keyword = ["x"]\nset = { x = 1 }\n')
    found = {(key, line) for _, line, key, _ in problems_of(text)}
    assert ("colour", 4) in found
    assert ("rules[0].when.any_keyword", 7) in found


def test_duplicate_and_missing_ids() -> None:
    text = ('name = "t"\nversion = "1"\ninput = "q"\n'
            '[[rules]]\nid = "same"\nwhen.any_keywords = ["a"]\nset = { x = 1 }\n'
            '[[rules]]\nid = "same"\nwhen.any_keywords = ["b"]\nset = { x = 2 }\n'
            '[[rules]]\nwhen.any_keywords = ["c"]\nset = { x = 3 }\n')
    problems = problems_of(text)
    duplicate = next(p for p in problems if "duplicate" in p[3])
    assert duplicate[1:3] == (9, "rules[1].id")
    missing = next(p for p in problems if p[2] == "rules[2].id")
    assert missing[1] == 12  # the [[rules]] header of the rule without an id


def test_other_load_errors() -> None:
    problems = problems_of('name = "t"\nversion = "1"\nfunction = "no_such_function"\n')
    assert problems[0][1:3] == (3, "function") and "unknown rule function" in problems[0][3]
    problems = problems_of('name = "t"\nversion = "1"\n[[rules]]\nid = "r"\nwhen.pattern = "x"\nset = { a = 1 }\n')
    assert any("input" in message for *_, message in problems)  # text conditions need an input
    problems = problems_of('name = "t"\nversion = 1\nversion = 2\n')
    assert problems[0][1] == 3 and "TOML" in problems[0][3]


def test_check_rule_sets_with_contracts(tmp_path: Path) -> None:
    assert check_rule_sets(FALLBACKS, {"ticket_triage": Ticket, "video_segments": list[Segment]}) == []
    (tmp_path / "t.toml").write_text(
        'name = "ticket_triage"\nversion = "1"\ninput = "inquiry"\n\n[defaults]\nurgency = 2\ncategory = "other"\n\n'
        '[derived]\nsummary = { from = "inquiry", truncate = 120 }\n\n[[rules]]\nid = "r1"\n'
        'when.any_keywords = ["x"]\nset = { category = "billing", priority = "high" }\n\n'
        '[[rules]]\nid = "r2"\nwhen.any_keywords = ["y"]\nset = { urgency = 7 }\n',
        encoding="utf-8",
    )
    (tmp_path / "broken.toml").write_text('name = "x"\nversion = "1"\nfunction = 3\n', encoding="utf-8")
    problems = check_rule_sets(tmp_path, {"ticket_triage": Ticket})
    by_key = {p.key: p for p in problems}
    priority = by_key["rules[0].set.priority"]
    assert priority.line == 15 and "no field 'priority'" in priority.message
    assert by_key["rules[1].set.urgency"].line == 20
    assert by_key["function"].file.endswith("broken.toml")
    assert all(str(p) for p in problems)
    assert check_rule_sets(tmp_path / "missing") == [(str(tmp_path / "missing"), None, "", "does not exist")]


def test_registered_functions(tmp_path: Path) -> None:
    @rule_function("test_rules.constant")
    def constant(inputs: Any) -> dict[str, Any]:
        return {"urgency": 1, "category": "other", "summary": str(inputs.get("inquiry", ""))[:10]}

    with pytest.raises(ValueError, match="already registered"):
        rule_function("test_rules.constant")(lambda inputs: None)
    (tmp_path / "c.toml").write_text('name = "c"\nversion = "1"\nfunction = "test_rules.constant"\n', "utf-8")
    ticket, fired = RuleEngine(load_rule_set(tmp_path / "c.toml")).run({"inquiry": "hello world"}, Ticket)
    assert ticket.summary == "hello worl" and ids(fired) == ["function:test_rules.constant"]


def test_rules_check_command(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert rules_check(FALLBACKS, {"ticket_triage": Ticket, "video_segments": "guardrail.chain.fallback:RuleSet"},
                       out=out, err=err) == 0
    assert err.getvalue() == "" and "2 valid rule sets (ticket_triage, video_segments); 0 problems" in out.getvalue()

    (tmp_path / "bad.toml").write_text('name = "b"\nversion = "1"\ninput = "q"\n[[rules]]\nid = "r"\n'
                                       'when.pattern = "(?=x)"\nset = { a = 1 }\n', encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert rules_check(tmp_path, {"b": "no_such_module_xyz:Model"}, out=out, err=err) == 1
    assert "bad.toml:6: rules[0].when.pattern:" in err.getvalue()
    assert "<contracts>: b: cannot load contract" in err.getvalue()
    out = io.StringIO()
    assert rules_check(tmp_path, as_json=True, out=out) == 1
    report = json.loads(out.getvalue())
    assert report["ok"] is False and report["problems"][0]["line"] == 6
