"""An item's record keeps what the model wrote exactly, whatever it is, through a real SQLite file (property)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from guardrail.batch.records import ItemRecord, Records
from guardrail.outcome import Usage
from guardrail.store import SQLiteStore
from guardrail.vendors.base import Completion
from guardrail.vendors.batches import ItemError

any_text = st.text(st.characters(exclude_categories=()), max_size=60)  # lone surrogates included
completions = st.builds(Completion, text=st.none() | any_text, finish=st.sampled_from(["stop", "length", "refusal"]),
                        finish_reason=any_text, usage=st.builds(Usage, *[st.integers(0, 10**9)] * 5),
                        refusal=st.none() | any_text, tool_call_id=st.none() | any_text)
errors = st.builds(lambda message, status: ItemError(message, reason="errored", status=status,
                                                     body={"error": {"message": message}}),
                   any_text, st.none() | st.integers(400, 599))


@given(replies=st.lists(st.tuples(st.integers(0, 5), completions | errors), max_size=4), text=any_text)
def test_replies_round_trip_through_the_store(tmp_path_factory, replies, text) -> None:
    path: Path = tmp_path_factory.mktemp("records") / "jobs.db"
    store = SQLiteStore(path)
    try:
        records = Records(store, "job")
        records.add_item("item", ItemRecord({"messages": [{"role": "user", "content": text}]}, 3, list(replies)))
        found = records.item("item")
        assert found is not None
        back = found[1]
        assert back.kwargs["messages"][0]["content"] == text and back.round == 3
        assert len(back.replies) == len(replies)
        for (round_, reply), (round_back, reply_back) in zip(replies, back.replies, strict=True):
            assert round_ == round_back
            if isinstance(reply, Completion):
                assert reply_back == reply
            else:
                assert isinstance(reply_back, ItemError) and reply_back.to_json() == reply.to_json()
    finally:
        store.close()
