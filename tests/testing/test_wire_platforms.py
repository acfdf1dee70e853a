"""The emulator's cloud-platform wire: the AWS event-stream encoder read back by botocore's own decoder (the one
the anthropic SDK's Bedrock client uses), and the platform routes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from hypothesis import given
from hypothesis import strategies as st

from guardrail.testing.wire_platforms import event_message, platform_route, platform_stream

_NAMES = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40)
_VALUES = st.text(max_size=200)


@given(headers=st.dictionaries(_NAMES, _VALUES, max_size=6), payload=st.binary(max_size=2000),
       split=st.integers(min_value=1, max_value=64))
def test_event_messages_decode_with_botocore(headers: dict[str, str], payload: bytes, split: int) -> None:
    """Any string headers and payload come back whole, however the bytes are split on the way (CRCs checked)."""
    data = event_message(headers, payload) * 2
    buffer = EventStreamBuffer()
    decoded = []
    for start in range(0, len(data), split):
        buffer.add_data(data[start:start + split])
        decoded.extend(buffer)
    assert [(m.headers, m.payload) for m in decoded] == [(headers, payload)] * 2


def test_a_corrupted_message_fails_botocores_checksum() -> None:
    data = bytearray(event_message({":event-type": "chunk"}, b'{"bytes": ""}'))
    data[-6] ^= 0x01  # a payload byte
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(data))
    with pytest.raises(ChecksumMismatch):
        list(buffer)


def _decoded(frames: list[bytes]) -> list[tuple[str, Any]]:
    buffer = EventStreamBuffer()
    buffer.add_data(b"".join(frames))
    out: list[tuple[str, Any]] = []
    for message in buffer:
        body = json.loads(message.payload)
        if message.headers[":message-type"] == "event":
            out.append((message.headers[":event-type"], json.loads(base64.b64decode(body["bytes"]))))
        else:
            out.append((message.headers[":exception-type"], body))
    return out


def test_messages_events_become_chunks_and_a_closing_error_an_exception() -> None:
    events = [{"type": "message_start"}, {"type": "ping"},
              {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}]
    assert _decoded(platform_stream(events)) == [
        ("chunk", {"type": "message_start"}), ("chunk", {"type": "ping"}),
        ("serviceUnavailableException", {"message": "Overloaded"})]


@pytest.mark.parametrize(("path", "expected"), [
    ("/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke",
     ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", False)),
    ("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/invoke-with-response-stream",
     ("bedrock", "arn:aws:bedrock:us-east-1:1:inference-profile/x", True)),
    ("/v1/projects/p/locations/global/publishers/anthropic/models/claude-opus-4-6:rawPredict",
     ("vertex", "claude-opus-4-6", False)),
    ("/projects/p/locations/us-east5/publishers/anthropic/models/claude-3-5-haiku@20241022:streamRawPredict",
     ("vertex", "claude-3-5-haiku@20241022", True)),
])
def test_platform_routes(path: str, expected: tuple[str, str, bool]) -> None:
    found = platform_route(path)
    assert found is not None and (found.platform, found.model, found.stream) == expected


@pytest.mark.parametrize("path", ["/v1/messages", "/model/x/converse", "/projects/p/models/m:predict"])
def test_other_paths_are_no_platform_route(path: str) -> None:
    assert platform_route(path) is None
