"""Runnable example: the official openai client, wrapped by guardrail, against the local vendor emulator.

    python examples/wrapped_openai.py

No network and no API key: ``guardrail.testing.Emulator`` is a real HTTP server on loopback that answers like
OpenAI. Each scene scripts what the "model" does and shows what guardrail did about it: the mode
it chose, the schema it sent, repairs, the feedback turn, retries, and the typed error when nothing valid came.
"""

from __future__ import annotations

import logging

import openai
import structlog
from pydantic import BaseModel, Field

import guardrail
from guardrail.testing import Emulator, reply


class Ticket(BaseModel):
    """A triaged customer inquiry."""

    urgency: int = Field(ge=1, le=5)
    category: str
    summary: str
    tags: list[str] = []


ASK = [{"role": "user", "content": "배송이 2주째 안 와요. 환불해 주세요! (Triage this message.)"}]
FAST = guardrail.RetryPolicy(initial_wait=0.05, max_wait=1.0, deadline=30)


def show(title: str, result: guardrail.Result[Ticket]) -> None:
    print(f"== {title}")
    print(f"   value: {result.value!r}")
    print(f"   mode={result.mode} attempts={len(result.attempts)} vendor_calls={result.vendor_calls} "
          f"tokens={result.usage.total_tokens} trace_id={result.trace_id[:8]}…")
    for attempt in result.attempts:
        if attempt.error is not None:
            print(f"   attempt {attempt.number}: {attempt.error_kind}: {str(attempt.error)[:100]}")
    if result.fixes:
        print("   fixes: " + ", ".join(f"{f.kind} {f.path}" for f in result.fixes))


def main() -> None:
    # guardrail logs one structlog event per call and attempt; this example only prints what it shows.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with Emulator() as emu:
        oai = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"), retry=FAST)
        good = '{"urgency": 4, "category": "shipping", "summary": "Parcel two weeks late; wants a refund"}'

        emu.script(reply.answer("Sure! Here it is:\n```json\n" + good.replace('"tags"', "'tags'")[:-1] + ",}\n```"))
        result = oai.chat.completions.create_with_result(model="gpt-4o", messages=ASK, response_model=Ticket)
        show("OpenAI chat, native strict schema; fenced answer with a trailing comma (repaired, no re-ask)", result)
        sent = emu.requests[-1].body["response_format"]["json_schema"]
        print(f"   sent schema: strict={sent['strict']} required={sorted(sent['schema']['required'])}")
        report = result.compile_report.summary().splitlines() if result.compile_report else []
        print("   compile report:\n" + "\n".join("     " + line for line in report[:6]))

        emu.script(reply.answer('{"urgency": "high (4)", "category": "shipping"}'), reply.answer(good))
        result = oai.chat.completions.create_with_result(model="gpt-4o", messages=ASK, response_model=Ticket)
        show("OpenAI chat; first answer breaks the contract, one feedback turn fixes it", result)
        print("   feedback sent: " + emu.requests[-1].last_user_text.replace("\n", " | "))

        emu.script(reply.rate_limited(retry_after=0.2), reply.truncated(good[:30]), reply.answer(good))
        result = oai.responses.create_with_result(model="gpt-4o", input="Triage: parcel late", response_model=Ticket,
                                                  max_output_tokens=40)
        show("OpenAI Responses; a 429 (Retry-After honoured), then a cut-off answer (token limit raised once)", result)
        print(f"   max_output_tokens sent: {[r.max_tokens for r in emu.requests[-3:]]}")

        print("== every attempt fails the contract (typed error with every raw output)")
        emu.script(*(reply.answer(bad) for bad in ('{"urgency": 9}', "I think urgency is 4/5", '{"urgency": "4/5"}')))
        try:
            oai.chat.completions.create(model="gpt-4o", messages=ASK, response_model=Ticket)
        except guardrail.GaveUp as error:
            print(f"   GaveUp after {len(error.outcome.attempts)} attempts; raw outputs: {error.raw_outputs}")
            print(f"   errors: {[e.kind for e in error.errors]}; usage: {error.outcome.usage}")  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
