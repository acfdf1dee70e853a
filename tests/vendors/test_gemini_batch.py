"""Gemini batch mode's keeping of a request (``GeminiBatch.storable``/``restored``/``line``): whatever text and
bytes a request carries come back unchanged from the job's store and reach the batch line whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

from guardrail.errors import UsageError
from guardrail.vendors.gemini_batch import GeminiBatch, batch_requests

BATCH = GeminiBatch()
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=60, deadline=None)
@given(text=texts, data=st.binary(max_size=64), system=texts, limit=st.integers(1, 10_000),
       as_objects=st.booleans())
def test_a_request_comes_back_from_the_store_unchanged(tmp_path_factory: pytest.TempPathFactory, text: str,
                                                       data: bytes, system: str, limit: int,
                                                       as_objects: bool) -> None:
    parts = [types.Part(text=text), types.Part.from_bytes(data=data, mime_type="image/png")]
    contents: object = [types.Content(role="user", parts=parts)]
    config: object = types.GenerateContentConfig(max_output_tokens=limit, system_instruction=system or None)
    if not as_objects:
        contents = [{"role": "user", "parts": [{"text": text}, {"inline_data": {"data": data,
                                                                                "mime_type": "image/png"}}]}]
        config = {"max_output_tokens": limit, **({"system_instruction": system} if system else {})}
    stored = BATCH.storable({"model": "gemini-2.5-flash", "contents": contents, "config": config})
    kept = json.loads(json.dumps(stored))  # what a store holds: JSON
    back = BATCH.restored(kept)
    (turn,) = back["contents"]
    assert turn.parts[0].text == text and turn.parts[1].inline_data.data == data
    assert back["config"].max_output_tokens == limit
    assert back["model"] == "gemini-2.5-flash"
    lines = tmp_path_factory.mktemp("lines") / "input.jsonl"
    lines.write_bytes(BATCH.line("id-1", back))
    model, (again,) = batch_requests(lines)  # the batch's requests as submit() sends them
    assert model == "gemini-2.5-flash" and again.metadata == {"key": "id-1"}
    assert again.contents[0].parts[1].inline_data.data == data and again.contents[0].parts[0].text == text


def test_a_lone_surrogate_travels_as_python_keeps_it(tmp_path: Path) -> None:
    """A model's answer replayed in a re-ask may hold one (JSON escapes allow it; the SDK's JSON reader does not)."""
    text = "a lone surrogate: \ud800"
    back = BATCH.restored(json.loads(json.dumps(BATCH.storable({"model": "gemini-2.5-flash", "contents": text}))))
    assert back["contents"] == text
    lines = tmp_path / "input.jsonl"
    lines.write_bytes(BATCH.line("id-1", back))
    _, (request,) = batch_requests(lines)
    assert request.contents == text


def test_what_is_not_data_is_refused() -> None:
    with pytest.raises(UsageError, match="SDK cannot read"):
        BATCH.storable({"model": "gemini-2.5-flash", "contents": [object()]})
