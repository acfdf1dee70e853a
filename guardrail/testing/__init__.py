"""guardrail.testing: a vendor emulator for testing code that calls OpenAI and Anthropic.

The :class:`Emulator` is a real HTTP server on loopback that speaks OpenAI Chat Completions, OpenAI
Responses and Anthropic Messages (JSON and SSE streaming) closely enough that the official SDK clients
parse its answers. Script what the "model" does with :mod:`reply` behaviours, or set a responder such as
:class:`FaultProfile`; assert on :class:`RecordedRequest` values. The pytest plugin (registered through the
``pytest11`` entry point) provides the ``guardrail_emulator`` fixture and SDK client fixtures
(``guardrail_openai``, ``guardrail_anthropic`` and their async twins); :func:`offline` runs a block of code
against an emulator without pytest.

Example::

    from guardrail.testing import Emulator, reply

    with Emulator() as emu:
        emu.script(reply.answer('{"name": "Ada"}'), reply.rate_limited(retry_after=0))
        client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0)
        ...
        assert emu.requests[0].forced_tool == "output"
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.testing import reply
    from guardrail.testing.behaviours import (
        Reply,
        answer,
        cut,
        drop,
        error,
        html_page,
        logprobs,
        malformed_event,
        not_json,
        overloaded,
        rate_limited,
        raw,
        refusal,
        schema_rejected,
        server_error,
        stream_error,
        text,
        timeout,
        tool_call,
        truncated,
    )
    from guardrail.testing.emulator import EXHAUSTED, Emulator, Responder
    from guardrail.testing.examples import example_instance
    from guardrail.testing.faults import FaultProfile
    from guardrail.testing.offline_context import offline
    from guardrail.testing.recording import RecordedRequest
    from guardrail.testing.strictness import anthropic_strict_problems, openai_strict_problems

#: Public name -> the module that defines it; loaded on first use, so importing this package (the pytest plugin
#: does) starts no server and imports no SDK.
_NAMES: dict[str, str] = {
    "EXHAUSTED": "guardrail.testing.emulator",
    "Emulator": "guardrail.testing.emulator",
    "FaultProfile": "guardrail.testing.faults",
    "RecordedRequest": "guardrail.testing.recording",
    "Reply": "guardrail.testing.behaviours",
    "Responder": "guardrail.testing.emulator",
    "answer": "guardrail.testing.behaviours",
    "cut": "guardrail.testing.behaviours",
    "anthropic_strict_problems": "guardrail.testing.strictness",
    "drop": "guardrail.testing.behaviours",
    "error": "guardrail.testing.behaviours",
    "example_instance": "guardrail.testing.examples",
    "html_page": "guardrail.testing.behaviours",
    "logprobs": "guardrail.testing.behaviours",
    "malformed_event": "guardrail.testing.behaviours",
    "not_json": "guardrail.testing.behaviours",
    "offline": "guardrail.testing.offline_context",
    "openai_strict_problems": "guardrail.testing.strictness",
    "overloaded": "guardrail.testing.behaviours",
    "rate_limited": "guardrail.testing.behaviours",
    "raw": "guardrail.testing.behaviours",
    "reply": "guardrail.testing.reply",
    "refusal": "guardrail.testing.behaviours",
    "schema_rejected": "guardrail.testing.behaviours",
    "server_error": "guardrail.testing.behaviours",
    "stream_error": "guardrail.testing.behaviours",
    "text": "guardrail.testing.behaviours",
    "timeout": "guardrail.testing.behaviours",
    "tool_call": "guardrail.testing.behaviours",
    "truncated": "guardrail.testing.behaviours",
}

__all__ = [
    "EXHAUSTED",
    "Emulator",
    "FaultProfile",
    "RecordedRequest",
    "Reply",
    "Responder",
    "answer",
    "anthropic_strict_problems",
    "cut",
    "drop",
    "error",
    "example_instance",
    "html_page",
    "logprobs",
    "malformed_event",
    "not_json",
    "offline",
    "openai_strict_problems",
    "overloaded",
    "rate_limited",
    "raw",
    "refusal",
    "reply",
    "schema_rejected",
    "server_error",
    "stream_error",
    "text",
    "timeout",
    "tool_call",
    "truncated",
]


__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
