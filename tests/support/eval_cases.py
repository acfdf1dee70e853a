"""The eval tests' cases and the emulator script answering them, with every figure of the report known in advance.

Eight cases in two slices; each answer carries usage (10 input, 5 output tokens):

====  =====  ==========================================================  ================  ========
case  slice  answers, in order                                           outcome           requests
====  =====  ==========================================================  ================  ========
c1    a      clean JSON                                                  clean             1
c2    a      fenced JSON, a trailing comma, ``Summary`` for ``summary``   locally_repaired  1
c3    a      urgency 9 (refused by the contract), then a valid ticket    reasked           2
c4    a      urgency 9, three times                                      failed: gave_up   3
c5    b      a refusal                                                   failed: Refused   1
c6    b      an empty ticket (no urgency, empty summary and tags)        clean, empty      1
c7    b      urgency 5 with no tags (the rule five_needs_tag), then tags  reasked           2
c8    b      a 429, then clean JSON                                      clean             2
====  =====  ==========================================================  ================  ========

c1-c4 have ``expected`` values: c1 and c3 match exactly, c2 differs in ``summary``, c4 failed.

``FUNCTION_CASES`` are the same cases for ``extract``, a decorated function with the same contract and rules
(``"input"``: its keyword arguments, or c5's one argument): every figure comes out the same.
"""

from __future__ import annotations

import json
import math
import re
import threading
from typing import Annotated, Any

from pydantic import BaseModel, Field

import guardrail
from guardrail.gates.semantic import rule
from guardrail.observe import cost
from guardrail.outcome import Usage
from guardrail.testing import reply
from guardrail.testing.behaviours import Reply
from guardrail.testing.recording import RecordedRequest


class Extract(BaseModel):
    urgency: int | None = Field(default=None, ge=1, le=5)
    summary: str
    tags: list[str] = []


class Brief(BaseModel):
    """``Extract`` with every field bounded, so a random tiny local model's output ends (tests of the local mode)."""

    urgency: int = Field(ge=1, le=5)
    summary: str = Field(max_length=12)
    tags: list[Annotated[str, Field(max_length=6)]] = Field(default=[], max_length=2)


@rule
def five_needs_tag(value: Any, context: Any) -> Any:
    return None if value.urgency != 5 or value.tags else "urgency 5 needs a tag"


RULES = [five_needs_tag]
USAGE = (10, 5)


def _answer(data: dict[str, Any]) -> Reply:
    return reply.answer(json.dumps(data), usage=USAGE)


def _ticket(urgency: int | None, summary: str, tags: list[str] | None = None) -> dict[str, Any]:
    return {"urgency": urgency, "summary": summary, "tags": tags or []}


ANSWERS: dict[str, list[Reply]] = {
    "c1": [_answer(_ticket(2, "refund"))],
    "c2": [reply.answer('Here:\n```json\n{"urgency": 3, "Summary": "late", "tags": [],}\n```', usage=USAGE)],
    "c3": [_answer(_ticket(9, "broken")), _answer(_ticket(4, "broken"))],
    "c4": [_answer(_ticket(9, "x"))] * 3,
    "c5": [reply.refusal("I can't help with that.", usage=USAGE)],
    "c6": [_answer(_ticket(None, ""))],
    "c7": [_answer(_ticket(5, "outage")), _answer(_ticket(5, "outage", ["ops"]))],
    "c8": [reply.rate_limited(retry_after=0), _answer(_ticket(1, "hello"))],
}

CASES = [json.dumps(case) for case in [
    {"id": "c1", "slice": "a", "messages": [{"role": "user", "content": "[c1] refund please"}],
     "expected": _ticket(2, "refund")},
    {"id": "c2", "slice": "a", "messages": [{"role": "system", "content": "Extract a ticket."},
                                            {"role": "user", "content": "[c2] parcel late"}],
     "expected": _ticket(3, "late parcel")},
    {"id": "c3", "slice": "a", "messages": [{"role": "user", "content": "[c3] app broken"}],
     "expected": _ticket(4, "broken")},
    {"id": "c4", "slice": "a", "messages": [{"role": "user", "content": "[c4] ???"}], "expected": _ticket(1, "x")},
    {"id": "c5", "slice": "b", "messages": [{"role": "user", "content": "[c5] something bad"}]},
    {"id": "c6", "slice": "b", "messages": [{"role": "user", "content": "[c6] hi"}]},
    {"id": "c7", "slice": "b", "messages": [{"role": "user", "content": "[c7] site down"}]},
    {"id": "c8", "slice": "b", "messages": [{"role": "user", "content": "[c8] hello"}]},
]]



def _as_input(case: dict[str, Any]) -> dict[str, Any]:
    """The case for ``extract``: its user text as the argument (c5's alone, the rest by keyword)."""
    text = case["messages"][-1]["content"]
    return {**{k: v for k, v in case.items() if k != "messages"},
            "input": text if case["id"] == "c5" else {"text": text}}


FUNCTION_CASES = [json.dumps(_as_input(json.loads(case))) for case in CASES]


@guardrail.structured(model="not-a-model-eval-runs", rules=RULES)
def extract(text: str) -> Extract:
    """Extract a support ticket from the customer's text."""


_MARK = re.compile(r"\[(c\d)\]")


class Script:
    """An emulator responder: the n-th request of a case in a run (model, mode) gets that case's n-th answer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[str, str, str], int] = {}

    def __call__(self, request: RecordedRequest) -> Reply:
        body = json.dumps(request.body)
        case = _MARK.search(body)
        assert case is not None, body
        shape = request.body.get("response_format") or {}
        run = (str(request.body.get("model")), str(shape.get("type")), case.group(1))
        with self._lock:
            n = self._seen.get(run, 0)
            self._seen[run] = n + 1
        return ANSWERS[case.group(1)][n]


#: The figures of every run (each model x mode), and of each slice.
RUN = {"cases": 8, "valid": 6, "clean": 3, "locally_repaired": 1, "reasked": 2, "failed": 2,
       "failures": {"Refused": 1, "gave_up": 1}, "vendor_calls": 13, "input_tokens": 120, "output_tokens": 60,
       "semantic_rejections": {"five_needs_tag": 1}, "empty_but_valid": 1, "expected_cases": 4, "exact_match": 0.5,
       "field_accuracy": {"summary": 0.5, "tags": 0.75, "urgency": 0.75}}
SLICES = {
    "a": {"cases": 4, "valid": 3, "clean": 1, "locally_repaired": 1, "reasked": 1, "failed": 1,
          "failures": {"gave_up": 1}, "vendor_calls": 7, "input_tokens": 70, "output_tokens": 35,
          "semantic_rejections": {}, "empty_but_valid": 0, "expected_cases": 4, "exact_match": 0.5,
          "field_accuracy": {"summary": 0.5, "tags": 0.75, "urgency": 0.75}},
    "b": {"cases": 4, "valid": 3, "clean": 2, "locally_repaired": 0, "reasked": 1, "failed": 1,
          "failures": {"Refused": 1}, "vendor_calls": 6, "input_tokens": 50, "output_tokens": 25,
          "semantic_rejections": {"five_needs_tag": 1}, "empty_but_valid": 1, "expected_cases": 0,
          "exact_match": None, "field_accuracy": None},
}


def check_run(entry: dict[str, Any]) -> None:
    """``entry`` (one run of a report over ``CASES`` or ``FUNCTION_CASES``) has every scripted figure."""
    for name, want in RUN.items():
        assert entry[name] == want, (entry["mode"], entry["model"], name)
    for tag, figures in SLICES.items():
        for name, want in figures.items():
            assert entry["slices"][tag][name] == want, (entry["mode"], entry["model"], tag, name)
    assert 0 <= entry["latency_p50_s"] <= entry["latency_p99_s"]
    price = cost.usd(Usage(RUN["input_tokens"], RUN["output_tokens"]), "openai", entry["model"])
    assert (entry["cost_usd"] is None) if price is None else math.isclose(entry["cost_usd"], price)
