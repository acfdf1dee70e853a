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
from guardrail.testing import reply  # the behaviour constructors: plain values, the standard library only
from guardrail.testing.reply import *  # noqa: F403  (their names are listed once, in behaviours.__all__)

if TYPE_CHECKING:
    from guardrail.testing.emulator import EXHAUSTED, Emulator, Responder
    from guardrail.testing.examples import example_instance
    from guardrail.testing.faults import FaultProfile
    from guardrail.testing.offline_context import offline
    from guardrail.testing.recording import RecordedRequest
    from guardrail.testing.strictness import anthropic_strict_problems, openai_strict_problems

#: The other public names -> the module that defines each; loaded on first use, so importing this package (the
#: pytest plugin does) starts no server and imports no SDK.
_NAMES: dict[str, str] = {
    "EXHAUSTED": "guardrail.testing.emulator",
    "Emulator": "guardrail.testing.emulator",
    "FaultProfile": "guardrail.testing.faults",
    "RecordedRequest": "guardrail.testing.recording",
    "Responder": "guardrail.testing.emulator",
    "anthropic_strict_problems": "guardrail.testing.strictness",
    "example_instance": "guardrail.testing.examples",
    "offline": "guardrail.testing.offline_context",
    "openai_strict_problems": "guardrail.testing.strictness",
}

__all__ = [
    "EXHAUSTED",
    "Emulator",
    "FaultProfile",
    "RecordedRequest",
    "Responder",
    "anthropic_strict_problems",
    "example_instance",
    "offline",
    "openai_strict_problems",
    "reply",
]
__all__ += reply.__all__

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
