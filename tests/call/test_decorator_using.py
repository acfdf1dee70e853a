"""``StructuredFunction.using``: the same decorated function with another client, model, mode or token limit
(what ``guardrail eval --function`` runs per model and mode); everything else stays the function's own."""

from __future__ import annotations

import openai
import pytest
from pydantic import BaseModel, Field

import guardrail
from guardrail.errors import UsageError
from guardrail.gates.semantic import rule
from guardrail.testing import Emulator, reply

pytestmark = pytest.mark.usefixtures("clean_config")


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


@rule
def not_five(value: Ticket, context: object) -> str | None:
    return "urgency 5 is for outages" if value.urgency == 5 else None


@guardrail.structured(model="not-called", rules=[not_five], version="v7")
def triage(inquiry: str) -> Ticket:
    """Triage a customer inquiry."""


def test_using_replaces_the_client_model_and_mode_and_keeps_the_rules(emu: Emulator) -> None:
    emu.script(reply.answer('{"urgency": 5, "summary": "down"}'), reply.answer('{"urgency": 4, "summary": "down"}'))
    client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10)
    result = triage.using(client=client, model="gpt-4o", mode="json", max_tokens=77).with_result("site down")
    assert result.value == Ticket(urgency=4, summary="down") and result.vendor_calls == 2  # the rule re-asked
    assert {r.body["model"] for r in emu.requests} == {"gpt-4o"}
    assert {r.body["response_format"]["type"] for r in emu.requests} == {"json_object"}
    assert emu.requests[0].body["max_completion_tokens"] == 77
    assert "Triage a customer inquiry." in str(emu.requests[0].body["messages"])


def test_using_refuses_what_structured_does_not_take() -> None:
    with pytest.raises(UsageError, match="not temperature"):
        triage.using(temperature=0.5)
    assert triage.using().output_type is Ticket and triage.using(model=None).__name__ == "triage"
