"""``offline()``: run a block of code against the vendor emulator instead of a vendor, with no key.

For quick starts, notebooks and examples: inside the block ``openai.OpenAI()`` and ``anthropic.Anthropic()``
(which read ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` and the keys from the environment) talk to a real
HTTP server on loopback, and guardrail's default clients (``@structured`` without ``client=``) are OpenAI
clients pointed at it. Scripted behaviours answer first; every other request is answered with a small valid
instance of the schema it asked for (:func:`~guardrail.testing.example_instance`). The environment and
guardrail's configuration are restored when the block ends.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from guardrail.testing import behaviours as reply
from guardrail.testing.behaviours import Reply
from guardrail.testing.emulator import Emulator
from guardrail.testing.faults import default_answer
from guardrail.testing.recording import RecordedRequest

__all__ = ["offline"]


def _minimal_valid(request: RecordedRequest) -> Reply:
    return reply.answer(default_answer(request))


@contextmanager
def offline(*behaviours: Reply, model: str = "gpt-4o-mini") -> Iterator[Emulator]:
    """Start an :class:`Emulator`, point the SDKs and guardrail at it, yield it; undo everything on exit.

    Args:
        behaviours: what the "model" does with the first requests, in order (``reply.answer(...)`` ...).
        model: the default model name guardrail's entry points use inside the block.
    """
    from guardrail._optional import require
    from guardrail.call.config import Config, configure, get_config

    openai = require("openai", "openai", "guardrail.testing.offline()")
    saved_env = {name: os.environ.get(name) for name in
                 ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}
    saved_config = get_config()
    with Emulator() as emulator:
        emulator.script(*behaviours)
        emulator.responder = _minimal_valid
        os.environ.update(OPENAI_BASE_URL=emulator.openai_base_url, OPENAI_API_KEY="test",
                          ANTHROPIC_BASE_URL=emulator.anthropic_base_url, ANTHROPIC_API_KEY="test")
        client = openai.OpenAI(base_url=emulator.openai_base_url, api_key="test")
        async_client = openai.AsyncOpenAI(base_url=emulator.openai_base_url, api_key="test")
        configure(Config(), client=client, async_client=async_client, model=model)
        try:
            yield emulator
        finally:
            configure(saved_config)
            client.close()
            for name, value in saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
