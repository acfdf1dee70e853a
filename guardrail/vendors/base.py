"""What every vendor adapter shares: the completion record, the repair exchange, and the adapter contract.

An adapter (one per wire format: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) knows how
to turn the caller's SDK keywords plus a :class:`~guardrail.call.modes.Plan` into the keywords for one SDK call,
and how to read the SDK's response (or stream of events) into a :class:`Completion`. It holds no state
between calls and does no I/O itself: the drivers call the SDK method it names.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from guardrail.outcome import Usage

if TYPE_CHECKING:
    from guardrail.call.modes import Plan

Finish = Literal["stop", "length", "refusal", "content_filter", "other"]


@dataclass(frozen=True, slots=True)
class Completion:
    """One model answer, vendor-neutral.

    ``text`` is what the parse layer reads: the message text, or the forced tool's arguments as JSON text
    when ``tool_call_id`` is set. ``finish`` is the normalised finish reason, ``finish_reason`` the
    vendor's own word for it.
    """

    text: str | None
    finish: Finish
    finish_reason: str
    usage: Usage
    refusal: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    model: str | None = None
    response_id: str | None = None


@dataclass(frozen=True, slots=True)
class Exchange:
    """One failed answer and the feedback about it, replayed to the model on the next attempt."""

    completion: Completion
    feedback: str


class Accumulator(ABC):
    """Builds a :class:`Completion` from a stream of SDK events (one instance per streamed response)."""

    @abstractmethod
    def feed(self, event: Any) -> None: ...

    @abstractmethod
    def completion(self) -> Completion: ...

    @abstractmethod
    def text(self) -> str:
        """The answer text (or tool arguments) received so far, for previews."""


class Endpoint(ABC):
    """The adapter contract for one wire format.

    Attributes:
        provider: the ``gen_ai.provider.name`` value (``"openai"``, ``"anthropic"``, or the server kind).
        api: ``"chat"``, ``"responses"`` or ``"messages"``.
        server: the self-hosted server kind (``"vllm"``, ``"sglang"``, ``"llamacpp"``, ``"ollama"``) or ``None``.
    """

    provider: str = ""
    api: str = ""
    #: The SDK keyword that carries the output-token limit on this endpoint.
    max_tokens_key: str = "max_tokens"
    #: Fields every answer of this API carries as a list; an answer without them is not the API's (the SDKs
    #: build their models without validation, so a missing field reads as ``None``, not as an error).
    list_fields: tuple[str, ...] = ()

    def __init__(self, server: str | None = None) -> None:
        self.server = server

    @abstractmethod
    def build(self, kwargs: Mapping[str, Any], plan: Plan, history: list[Exchange], *,
              max_tokens: int | None, temperature: float | None) -> dict[str, Any]:
        """The keywords for one SDK call: the caller's own, plus the mode's fields and the repair turns."""

    @abstractmethod
    def read(self, response: Any, tool: str | None) -> Completion:
        """Read a non-streamed SDK response.

        ``tool`` is the name of the forced output tool (tool mode), else ``None``: only a call of that tool
        is the answer; a call of any other tool (one of the caller's own) is never taken for it.
        """

    @abstractmethod
    def accumulator(self, tool: str | None) -> Accumulator:
        """A fresh accumulator for a streamed response (``tool`` as for :meth:`read`)."""

    def max_tokens(self, kwargs: Mapping[str, Any]) -> int | None:
        """The output-token limit the caller set, if any."""
        value = kwargs.get(self.max_tokens_key)
        return value if isinstance(value, int) else None

    def thinking(self, kwargs: Mapping[str, Any]) -> bool:
        """Whether the caller turned on extended thinking/reasoning that forbids forcing a tool."""
        return False


def instruction(plan: Plan) -> str:
    """The system-prompt text that asks for JSON matching the schema (prompt and JSON modes)."""
    schema = json.dumps(plan.schema, ensure_ascii=False, separators=(",", ":"))
    return ("Reply with one JSON value and nothing else: no prose, no code fences. "
            f"It must match this JSON Schema:\n{schema}")


def with_history(out: dict[str, Any], key: str, turns: list[Any], history: list[Exchange],
                 replay: Callable[[Exchange], list[dict[str, Any]]], *, max_tokens: int | None, token_key: str,
                 temperature: float | None) -> dict[str, Any]:
    """The end of every endpoint's request: the caller's ``turns`` and then each earlier exchange of this call
    (``replay`` renders one in the endpoint's shape) under ``key``, the output-token limit under ``token_key``,
    the temperature. Returns ``out``."""
    for exchange in history:
        turns.extend(replay(exchange))
    out[key] = turns
    if max_tokens is not None:
        out[token_key] = max_tokens
    if temperature is not None:
        out["temperature"] = temperature
    return out


def feedback_message(feedback: str) -> str:
    """The user turn that sends the model the list of what was wrong with its last answer."""
    return f"Your previous answer could not be used.\n{feedback}"


def as_text(value: Any) -> str:
    """Tool arguments as JSON text, whether the SDK gave a string (OpenAI) or a parsed object (Anthropic)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def count(obj: Any, *path: str) -> int:
    """The token count at ``path`` in a usage object or dict (SDK models and plain dicts alike); 0 when any
    step is missing or not a number (a vendor that does not report a detail reports none of it)."""
    for name in path:
        if obj is None:
            return 0
        obj = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    return obj if isinstance(obj, int) and not isinstance(obj, bool) else 0
