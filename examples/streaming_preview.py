"""Runnable example: a streaming preview of a structured answer, against the local vendor emulator.

    python examples/streaming_preview.py

``create_partial`` yields ``Partial`` previews while the vendor streams (for a UI), then the final
validated value. Previews are marked ``partial`` and never validated; only the last item is the answer. A
repair attempt starts a new preview (``attempt`` goes up).
"""

from __future__ import annotations

import logging

import openai
import structlog
from pydantic import BaseModel

import guardrail
from guardrail.outcome import Partial
from guardrail.testing import Emulator, reply


class Summary(BaseModel):
    """A meeting summary."""

    title: str
    decisions: list[str]
    owner: str


ANSWER = ('{"title": "Q3 planning", "decisions": ["Ship the Korean locale in August", "Hire two support '
          'engineers"], "owner": "Kim Min-jun"}')


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with Emulator() as emu:
        client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test"))
        emu.script(reply.answer('{"title": "Q3 planning", "decisions": "none"}'), reply.answer(ANSWER))
        stream = client.chat.completions.create_partial(
            model="gpt-4o", messages=[{"role": "user", "content": "Summarise the meeting notes."}],
            response_model=Summary)
        with stream:
            for item in stream:
                if isinstance(item, Partial):
                    print(f"   preview (attempt {item.attempt}): {item.data}")
                else:
                    print(f"== final, validated: {item!r}")
        assert stream.result is not None
        print(f"   attempts={len(stream.result.attempts)} vendor_calls={stream.result.vendor_calls}")


if __name__ == "__main__":
    main()
