"""Vendors: one endpoint per wire format, one capability profile row per provider, and the plans (modes).

Each endpoint (:class:`ChatCompletions`, :class:`Responses`, :class:`Messages`) implements :class:`Endpoint`
and answers a :class:`Completion`; :func:`capabilities` reads a provider's :class:`Profile` rows, and a
:class:`Plan` is one :data:`Mode` of asking for the contract. Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.vendors.anthropic_messages import Messages
    from guardrail.vendors.base import Completion, Endpoint
    from guardrail.vendors.openai_chat import ChatCompletions
    from guardrail.vendors.openai_responses import Responses
    from guardrail.vendors.plans import Plan
    from guardrail.vendors.profiles import Capabilities, Mode, Profile, capabilities

_NAMES: dict[str, str] = {
    "Capabilities": "guardrail.vendors.profiles",
    "capabilities": "guardrail.vendors.profiles",
    "Mode": "guardrail.vendors.profiles",
    "Plan": "guardrail.vendors.plans",
    "Profile": "guardrail.vendors.profiles",
    "ChatCompletions": "guardrail.vendors.openai_chat",
    "Completion": "guardrail.vendors.base",
    "Endpoint": "guardrail.vendors.base",
    "Messages": "guardrail.vendors.anthropic_messages",
    "Responses": "guardrail.vendors.openai_responses",
}

__all__ = [
    "Capabilities",
    "ChatCompletions",
    "Completion",
    "Endpoint",
    "Messages",
    "Mode",
    "Plan",
    "Profile",
    "Responses",
    "capabilities",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
