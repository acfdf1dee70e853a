"""Anthropic's Messages API as the cloud platforms serve it: Amazon Bedrock and Google Vertex AI.

Both take the Messages body with the model moved into the URL and ``anthropic_version`` in the body (the
anthropic SDK's ``AnthropicBedrock``/``AnthropicVertex`` clients do the moving; beta headers travel as the
``anthropic_beta`` body field on Bedrock), and answer with the Messages JSON (:mod:`.wire_anthropic`):

==========  ===========================================================================================
bedrock     ``POST /model/{model}/invoke`` (JSON) and ``/model/{model}/invoke-with-response-stream``: the
            stream is AWS event-stream binary framing, one ``chunk`` event per Messages event (its JSON,
            base64, under ``bytes``); a failure mid-stream is an ``exception`` message. Errors are
            ``{"message"}`` with an ``x-amzn-errortype`` header.
vertex      ``POST .../projects/{p}/locations/{region}/publishers/anthropic/models/{model}:rawPredict``
            and ``:streamRawPredict`` (``"stream": true`` stays in the body; SSE as Anthropic's). Quota
            errors are Google's ``{"error": {"code", "message", "status"}}``; the rest are Anthropic's.
==========  ===========================================================================================

The event-stream encoder is the inverse of ``botocore.eventstream.EventStreamBuffer`` (which the SDK decodes
with): a prelude (total length, headers length, CRC32 of the two), string headers, the payload, and a CRC32
of the whole message.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote

from guardrail.testing.behaviours import Reply
from guardrail.testing.recording import RecordedRequest
from guardrail.testing.rendering import new_id

__all__ = ["EVENT_STREAM", "Platform", "PlatformRoute", "event_message", "platform_error", "platform_problem",
           "platform_route", "platform_stream"]

Platform = Literal["bedrock", "vertex"]

#: The content type of a Bedrock response stream.
EVENT_STREAM = "application/vnd.amazon.eventstream"

_BEDROCK = re.compile(r"/model/(?P<model>[^/]+)/(?P<action>invoke|invoke-with-response-stream)$")
_VERTEX = re.compile(r"/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/(?P<model>[^/]+?)"
                     r":(?P<action>rawPredict|streamRawPredict)$")


@dataclass(frozen=True, slots=True)
class PlatformRoute:
    """A platform path: which platform, the model named in the URL, and whether the path asks for a stream."""

    platform: Platform
    model: str
    stream: bool


def platform_route(path: str) -> PlatformRoute | None:
    """The platform route of a request path (any prefix before it, such as ``/v1``), else ``None``."""
    found = _BEDROCK.search(path)
    if found is not None:
        return PlatformRoute("bedrock", unquote(found["model"]), found["action"] == "invoke-with-response-stream")
    found = _VERTEX.search(path)
    if found is not None:
        return PlatformRoute("vertex", unquote(found["model"]), found["action"] == "streamRawPredict")
    return None


def platform_problem(request: RecordedRequest) -> Reply | None:
    """The 400 the platform gives a body that is not its shape: no ``anthropic_version``, or fields that belong
    in the URL (``model``; on Bedrock ``stream`` too). ``None`` when the body is the platform's."""
    body = request.body
    if not isinstance(body.get("anthropic_version"), str):
        message = ("Malformed input request: #: required key [anthropic_version] not found" if request.platform ==
                   "bedrock" else "anthropic_version: Field required")
        return Reply(kind="error", status=400, error_type="invalid_request_error", message=message)
    extra = [key for key in (("model", "stream") if request.platform == "bedrock" else ("model",)) if key in body]
    if extra:
        message = (f"Malformed input request: #: extraneous key [{extra[0]}] is not permitted, please reformat "
                   "your input and try again." if request.platform == "bedrock" else
                   f"{extra[0]}: Extra inputs are not permitted")
        return Reply(kind="error", status=400, error_type="invalid_request_error", message=message)
    return None


# -- errors --------------------------------------------------------------------------------------------------------
#: Bedrock's exception names per HTTP status (the ``x-amzn-errortype`` header; the body is ``{"message"}``).
_BEDROCK_ERRORS = {400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
                   408: "ModelTimeoutException", 424: "ModelErrorException", 429: "ThrottlingException",
                   500: "InternalServerException", 503: "ServiceUnavailableException"}


def platform_error(reply: Reply, request: RecordedRequest, status: int, anthropic_body: dict[str, Any],
                   headers: list[tuple[str, str]]) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
    """An error answer on a platform route, from the first-party answer ``(status, anthropic_body, headers)``.

    Bedrock answers in its own shape (an overload is its 503); Vertex AI passes the model's errors through in
    Anthropic's shape and answers a rate limit in Google's."""
    message = str((anthropic_body.get("error") or {}).get("message") or "")
    if request.platform == "bedrock":
        if reply.variant == "overloaded" or status == 529:
            status, message = 503, "Bedrock is unable to process your request."
        elif reply.variant == "rate_limited":
            message = "Too many requests, please wait before trying again."
        kind = _BEDROCK_ERRORS.get(status, "InternalServerException" if status >= 500 else "ValidationException")
        extra = [(name, value) for name, value in headers if name.lower() != "request-id"]
        return status, {"message": message}, [*extra, ("x-amzn-requestid", new_id("")),
                                              ("x-amzn-errortype", f"{kind}:http://internal.amazon.com/coral/")]
    if reply.variant == "rate_limited":
        google = {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": (
            "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base "
            f"model: {request.model}. Please submit a quota increase request.")}
        return 429, {"error": google}, headers
    return status, anthropic_body, headers


# -- Bedrock's event stream ----------------------------------------------------------------------------------------
def event_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message with string-valued ``headers`` (type 7) and ``payload``."""
    head = b"".join(struct.pack(">B", len(name.encode())) + name.encode() + b"\x07" +
                    struct.pack(">H", len(value.encode())) + value.encode() for name, value in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", binascii.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + head + payload
    return message + struct.pack(">I", binascii.crc32(message) & 0xFFFFFFFF)


def _chunk(data: bytes) -> bytes:
    payload = json.dumps({"bytes": base64.b64encode(data).decode("ascii")}).encode()
    return event_message({":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
                         payload)


#: Bedrock's stream exception per Anthropic error type (members of bedrock-runtime's ``ResponseStream`` shape).
_STREAM_EXCEPTIONS = {"overloaded_error": "serviceUnavailableException", "api_error": "internalServerException",
                      "rate_limit_error": "throttlingException", "timeout_error": "modelTimeoutException"}


def platform_stream(events: list[dict[str, Any]], bad_line: str | None = None) -> list[bytes]:
    """Bedrock's response stream for Messages ``events``: a ``chunk`` per event, a closing ``error`` event as an
    ``exception`` message; ``bad_line`` (a malformed-event fault) goes in the middle as a chunk that is not JSON."""
    frames: list[bytes] = []
    for event in events:
        if event.get("type") == "error":
            error = event.get("error") or {}
            kind = _STREAM_EXCEPTIONS.get(str(error.get("type")), "modelStreamErrorException")
            frames.append(event_message({":exception-type": kind, ":content-type": "application/json",
                                         ":message-type": "exception"},
                                        json.dumps({"message": error.get("message") or ""}).encode()))
        else:
            frames.append(_chunk(json.dumps(event, separators=(",", ":")).encode()))
    if bad_line is not None:
        frames.insert(len(frames) // 2, _chunk(bad_line.encode()))
    return frames
