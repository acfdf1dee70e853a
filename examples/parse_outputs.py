"""Runnable example: raw model outputs (English and Korean) in, typed tickets or precise errors out.

    python examples/parse_outputs.py

Each sample is the kind of text a chat model really returns: fenced, chatty, with syntax slips,
drifted field names, stringly-typed numbers, or cut off. For each, it prints what guardrail did
(the fixes, with their JSON paths) and the typed result, or the error kind and the feedback that
would be sent back to the model.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field

import guardrail


class Category(str, Enum):  # noqa: UP042 - str mixin keeps the README example short
    billing = "billing"
    shipping = "shipping"
    account = "account"
    other = "other"


class Ticket(BaseModel):
    """A triaged customer inquiry."""

    urgency: int = Field(ge=1, le=5, description="1 = can wait, 5 = drop everything")
    category: Category
    summary: str = Field(max_length=200)


SAMPLES: list[tuple[str, str]] = [
    ("clean JSON", '{"urgency": 2, "category": "shipping", "summary": "Parcel delayed a week."}'),
    ("fenced, chatty, trailing comma",
     "Sure! Here's the triage:\n```json\n{\n  \"urgency\": 4,\n  \"category\": \"billing\",\n"
     "  \"summary\": \"Charged twice for October.\",\n}\n```\nHope this helps!"),
    ("Korean prose, drifted names, string number",
     "네, 분석 결과입니다.\n```JSON\n{\"Urgency\": \"5\", \"Category\": \"Account \", "
     "\"summary\": \"비밀번호 재설정 후 로그인 불가, 오늘 급여 지급 예정\"}\n```\n추가 문의는 언제든지 말씀해 주세요."),
    ("Python-style dict in a tag",
     "<json>{'urgency': 3, 'category': 'other', 'summary': 'Asks about API limits', }</json>"),
    ("format example and the real answer",
     'Format: {"urgency": "<1-5>", "category": "<billing|shipping|account|other>", "summary": "<text>"}\n'
     'Answer: {"urgency": 1, "category": "other", "summary": "Thanks the team."}'),
    ("meaning-changing value (refused)", '{"urgency": "4/5", "category": "결제", "summary": "환불 요청"}'),
    ("cut off by max_tokens", '```json\n{"urgency": 4, "category": "billing", "summary": "Customer reports'),
    ("no JSON at all", "I'm sorry, I can't help with that request."),
]


def main() -> None:
    for title, text in SAMPLES:
        report = guardrail.parse_report(text, Ticket)
        print(f"== {title}")
        print("   model said:", text.replace("\n", "⏎ ")[:110])
        for fix in report.fixes:
            print(f"   fix   {fix.kind:24} {fix.path:12} {fix.before!r:.40} -> {fix.after!r:.30}")
        if report.ok:
            print("   value:", repr(report.value))
        else:
            assert report.error is not None
            print(f"   error: {report.error.kind}")
            for line in report.error.feedback.splitlines():
                print("   feedback>", line)
        print()


if __name__ == "__main__":
    main()
