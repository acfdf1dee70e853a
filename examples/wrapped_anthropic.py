"""Runnable example: the official anthropic client, wrapped by guardrail, against the local vendor emulator.

    python examples/wrapped_anthropic.py

No network and no API key: ``guardrail.testing.Emulator`` answers like the Anthropic Messages API. Scenes:
native JSON output (``output_config.format``), the forced output tool with a 529 overload retried, a repair
turn sent as a ``tool_result`` with ``is_error``, a recursive contract that Anthropic's strict modes cannot
carry (guardrail falls back to a non-strict tool and validates afterwards), and a refusal.
"""

from __future__ import annotations

import logging

import anthropic
import structlog
from pydantic import BaseModel, Field

import guardrail
from guardrail.testing import Emulator, reply


class Ticket(BaseModel):
    """A triaged customer inquiry."""

    urgency: int = Field(ge=1, le=5)
    category: str
    summary: str


class Topic(BaseModel):
    """A topic tree (recursive: Anthropic's strict modes cannot express it)."""

    name: str
    children: list[Topic] = []


ASK = [{"role": "user", "content": "배송이 2주째 안 와요. 환불해 주세요! (Triage this message.)"}]
GOOD = '{"urgency": 4, "category": "shipping", "summary": "Parcel two weeks late; wants a refund"}'


def show(title: str, result: guardrail.Result[object]) -> None:
    print(f"== {title}")
    print(f"   value: {result.value!r}")
    print(f"   mode={result.mode} attempts={len(result.attempts)} vendor_calls={result.vendor_calls} "
          f"tokens={result.usage.total_tokens}")


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with Emulator() as emu:
        raw = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test")
        claude = guardrail.wrap(raw, retry=guardrail.RetryPolicy(initial_wait=0.05, max_wait=1.0, deadline=30))
        model = "claude-sonnet-5-5"

        emu.script(reply.answer(GOOD))
        result = claude.messages.create_with_result(model=model, max_tokens=300, messages=ASK, response_model=Ticket)
        show("native output_config.format", result)
        print(f"   sent: output_config.format.type={emu.requests[-1].body['output_config']['format']['type']}")

        emu.script(reply.overloaded(), reply.answer('{"urgency": 9, "category": "shipping"}'), reply.answer(GOOD))
        result = claude.messages.create_with_result(model=model, max_tokens=300, messages=ASK, response_model=Ticket,
                                                    mode="tool")
        show("forced output tool; a 529 overload retried, then one repair turn", result)
        turn = emu.requests[-1].body["messages"][-1]["content"][0]
        print(f"   repair turn: type={turn['type']} is_error={turn['is_error']}")
        print("   feedback: " + turn["content"].replace("\n", " | "))

        emu.script(reply.answer('{"name": "billing", "children": [{"name": "refunds"}, {"name": "invoices"}]}'))
        result = claude.messages.create_with_result(model=model, max_tokens=300, messages=ASK, response_model=Topic)
        show("recursive contract: strict modes rejected, non-strict tool, validated afterwards", result)
        report = result.compile_report
        print(f"   compile report ok={report.ok if report else None}; strict tool sent: "
              f"{emu.requests[-1].body['tools'][0].get('strict', False)}")

        print("== refusal (typed error, never retried)")
        emu.script(reply.refusal("I can't help with that request."))
        try:
            claude.messages.create(model=model, max_tokens=300, messages=ASK, response_model=Ticket)
        except guardrail.Refused as error:
            print(f"   Refused: {error.refusal!r} after {error.outcome.vendor_calls} call")


if __name__ == "__main__":
    main()
