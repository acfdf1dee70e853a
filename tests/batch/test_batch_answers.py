"""Whatever the model writes in a batch answer, each item ends as a checked value or a typed error (property)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.batch_jobs import Ticket

import guardrail
import guardrail.batch
from guardrail.errors import CallError
from guardrail.store import MemoryStore
from guardrail.testing import Emulator, RecordedRequest, reply
from guardrail.testing.behaviours import Reply

json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["title", "priority", "x"]), inner,
                                                                max_size=3),
    max_leaves=6,
).map(json.dumps)
answers = st.one_of(json_like, st.text(max_size=40), json_like.map(lambda text: f"```json\n{text}\n```"))


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(answers, min_size=1, max_size=4))
def test_any_answer_ends_as_a_valid_value_or_a_typed_error(emu: Emulator, openai_client, texts: list[str]) -> None:
    def model(request: RecordedRequest) -> Reply:
        index = int(request.headers.get("x-custom-id", "item-0").split("-")[1])
        return reply.answer(texts[index])

    emu.responder = model
    items = [{"custom_id": f"item-{n}", "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "t"}]}
             for n in range(len(texts))]
    job = guardrail.batch.submit(openai_client, items, response_model=Ticket, store=MemoryStore(), max_attempts=2,
                                 live_threshold=0)
    out = dict(job.results(poll_interval=0))
    assert sorted(out) == sorted(item["custom_id"] for item in items)
    for outcome in out.values():
        if isinstance(outcome, guardrail.Result):
            assert Ticket.model_validate(outcome.value.model_dump()) == outcome.value
            assert 1 <= outcome.value.priority <= 5
        else:
            assert isinstance(outcome, CallError)
            assert len(outcome.outcome.attempts) <= 2


def test_an_answer_with_a_lone_surrogate_is_asked_again_in_a_batch(emu: Emulator, openai_client) -> None:
    def model(request: RecordedRequest) -> Reply:
        if "previous answer" in request.conversation_text:
            return reply.answer('{"title": "fixed", "priority": 1}')
        return reply.answer('{"title": "\ud800 broken"}')  # a lone surrogate: JSON escapes can carry one

    emu.responder = model
    items = [{"custom_id": "a", "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "t"}]}]
    job = guardrail.batch.submit(openai_client, items, response_model=Ticket, store=MemoryStore(), live_threshold=0)
    (outcome,) = dict(job.results(poll_interval=0)).values()
    assert isinstance(outcome, guardrail.Result) and outcome.value.title == "fixed"
    assert "\ud800" in (outcome.attempts[0].raw or "")
