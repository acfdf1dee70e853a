"""Runnable example: ticket triage with ``@guardrail.structured``, against the local vendor emulator.

    python examples/triage_decorator.py

The function's docstring and arguments make the prompt; its return annotation is the contract. The body
never runs. ``guardrail.configure`` sets the client and model once; a keyword on the decorator overrides them.
"""

from __future__ import annotations

import logging
from enum import StrEnum

import openai
import structlog
from pydantic import BaseModel, Field

import guardrail
from guardrail.testing import Emulator, reply


class Category(StrEnum):
    billing = "billing"
    shipping = "shipping"
    account = "account"
    technical = "technical"


class Ticket(BaseModel):
    """A triaged customer inquiry."""

    urgency: int = Field(ge=1, le=5)
    category: Category
    summary: str = Field(max_length=120)


@guardrail.structured
def triage(inquiry: str, customer_tier: str = "standard") -> Ticket:
    """Triage one customer inquiry (it may be in Korean): urgency 1 (can wait) to 5 (drop everything), one
    category, and a one-line English summary. Gold customers get one more point of urgency, up to 5."""
    raise NotImplementedError  # never runs: the model computes the value


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with Emulator() as emu:
        guardrail.configure(client=openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), model="gpt-4o-mini",
                            retry=guardrail.RetryPolicy(initial_wait=0.05, max_wait=1.0, deadline=30))
        emu.script(
            reply.answer('{"urgency": 5, "category": "account", "summary": "Locked out before a presentation"}'),
            reply.answer('```json\n{"Urgency": "2", "category": "Billing ", "summary": "Wants an old receipt",}\n```'),
        )
        first = triage("비밀번호를 재설정했는데 로그인이 안 됩니다. 오늘 발표라서 급해요.", customer_tier="gold")
        print(f"== {first!r}")
        sent = emu.requests[-1].body["messages"]
        print("   system prompt: " + sent[0]["content"].splitlines()[0])
        print("   user prompt:   " + sent[1]["content"].replace("\n", " | "))
        result = triage.with_result("지난달 영수증을 다시 받을 수 있을까요?")
        print(f"== {result.value!r}")
        print("   repairs: " + ", ".join(sorted({f.kind for f in result.fixes})))
        print(f"   model={result.model} mode={result.mode} attempts={len(result.attempts)}")


if __name__ == "__main__":
    main()
