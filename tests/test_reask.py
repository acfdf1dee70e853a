"""Re-asks: what the model is sent after an answer failed, on every endpoint.

A re-ask carries the caller's messages, the latest failed answer once and one feedback message listing its
problems. Older failed answers are not replayed: the request does not grow with each attempt.
"""

from __future__ import annotations

import json

import pytest
from helpers import endpoint_client, endpoint_method
from pydantic import BaseModel, Field

import guardrail
from guardrail.testing import Emulator, reply


class Score(BaseModel):
    label: str
    score: int = Field(ge=1, le=5)


ANSWERS = ['{"label": "first", "score": 9}', '{"label": "second", "score": 7}', '{"label": "third", "score": 4}']


def _serialized(messages: list[dict[str, object]]) -> str:
    return json.dumps(messages, ensure_ascii=False)


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_a_reask_replays_only_the_latest_answer_and_its_problems(api: str) -> None:
    with Emulator() as emu:
        emu.script(*(reply.answer(text) for text in ANSWERS))
        client = guardrail.wrap(endpoint_client(emu, api, is_async=False), settings=guardrail.Settings(max_attempts=3))
        method, kwargs = endpoint_method(client, api)
        assert method.create(response_model=Score, **kwargs) == Score(label="third", score=4)
        first, second, third = emu.requests
    # the second request replays the first answer; the third replays the second answer only
    assert "first" in _serialized(second.messages)
    assert "second" in _serialized(third.messages) and "first" not in _serialized(third.messages)
    assert "7" in third.last_user_text and "9" not in third.last_user_text
    # caller's messages + one answer + one feedback: the same size on every re-ask
    assert len(third.messages) == len(second.messages) == len(first.messages) + 2
