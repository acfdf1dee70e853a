"""What every vendor adapter shares: guardrail's own records of what a vendor said, and the adapter contract.

An adapter (one per wire format: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) is the only
place that knows that format. It turns the caller's SDK keywords plus a :class:`~guardrail.vendors.plans.Plan`
into the keywords for one SDK call, builds plain prompt requests (the decorator, the chain's vendor tiers),
tool definitions and the token-limit field, checks that an answer has the API's shape, and reads the SDK's
response (or stream of events) into guardrail's own types: a :class:`Completion` (text, normalised finish
reason, usage, refusal), :class:`ToolCall` records, a :class:`LogprobAnswer`. It holds no state between
calls and does no I/O itself: the drivers call the SDK method it names. Every module outside
``guardrail/vendors/`` speaks only these types (``tests/project/test_layout.py`` checks it).
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from guardrail.outcome import Usage

if TYPE_CHECKING:
    from guardrail.vendors.plans import Plan

Finish = Literal["stop", "length", "refusal", "content_filter", "other"]
#: Who says a turn added to a conversation (:meth:`Endpoint.continued`).
Role = Literal["user", "assistant"]

#: Request keywords that never change the answer (transport, billing, logging, streaming): left out of
#: the response cache's key.
TRANSPORT_KEYWORDS = frozenset({
    "timeout", "extra_headers", "extra_query", "stream", "stream_options", "metadata", "user", "store",
    "service_tier", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "idempotency_key",
})


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

    @property
    def blocked(self) -> bool:
        """The model refused, or the vendor's content filter stopped the answer: an answer, never retried."""
        return self.finish in {"refusal", "content_filter"}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model proposed: the tool's name, its arguments as JSON text (as the model wrote
    them; never parsed here), and the vendor's id for the call (``None`` where the format has none)."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True, slots=True)
class LogprobStep:
    """One generated token (its UTF-8 bytes and logprob) and the listed alternatives at its position.

    Logprobs are taken as the API sent them; scoring reads NaN and ``-9999.0`` as probability 0."""

    token: bytes
    logprob: float
    alternatives: tuple[tuple[bytes, float], ...]


@dataclass(frozen=True, slots=True)
class LogprobAnswer:
    """The vendor-neutral part of a reply with token logprobs that ``guardrail.choose`` scores.

    ``finished``: the answer ended on its own (not cut by the token limit); ``text``: the answer (or the
    refusal) as text; ``refused``: the model refused. ``unavailable`` says why the reply carries no logprobs
    to read (then ``steps`` is empty); ``None`` when it does.
    """

    steps: tuple[LogprobStep, ...]
    finished: bool
    text: str
    refused: bool = False
    unavailable: str | None = None


@dataclass(frozen=True, slots=True)
class Exchange:
    """One failed answer and the feedback about it, replayed to the model on the next attempt."""

    completion: Completion
    feedback: str


class Pieces:
    """Text that arrives in pieces (a streamed answer): adding a piece is O(1), and :meth:`text` joins only
    the pieces that came since it was last read, so reading the text after every piece costs a copy of it,
    not a join of every piece again. :attr:`parts` are the pieces in order (never changed, only added to),
    for a reader that reads each piece once (the previews)."""

    __slots__ = ("_joined", "_text", "parts", "size")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0  # characters in all
        self._text = ""
        self._joined = 0  # parts in _text

    def append(self, piece: str) -> None:
        if piece:
            self.parts.append(piece)
            self.size += len(piece)

    def text(self) -> str:
        """All the pieces so far, as one string."""
        if self._joined < len(self.parts):
            self._text += "".join(self.parts[self._joined:])
            self._joined = len(self.parts)
        return self._text

    def __bool__(self) -> bool:
        return self.size > 0


class Accumulator(ABC):
    """Builds a :class:`Completion` from a stream of SDK events (one instance per streamed response)."""

    @abstractmethod
    def feed(self, event: Any) -> None: ...

    @abstractmethod
    def completion(self) -> Completion: ...

    @abstractmethod
    def answer(self) -> Pieces:
        """The pieces of the answer text (or of the output tool's arguments) received so far, for previews.
        Another object when the answer moved (the output tool's call began after some message text)."""

    def text(self) -> str:
        """The answer text (or tool arguments) received so far."""
        return self.answer().text()


@dataclass(frozen=True, slots=True)
class Methods:
    """The method names of an endpoint's structured resources.

    ``value``, ``result``, ``partial`` and ``iterable`` are what a wrapped client's resource offers with
    ``response_model=`` (the validated value, the :class:`~guardrail.Result`, the stream of previews, the stream
    of a list's items: :mod:`guardrail.call.iterable`); where one is also an SDK
    method (Gemini's ``generate_content_stream``), a call without ``response_model`` is the SDK's. ``send`` is
    the SDK method a structured call sends through, ``send_stream`` the one for a streamed answer (``None``:
    ``send`` with ``stream=True``).
    """

    value: str = "create"
    result: str = "create_with_result"
    partial: str = "create_partial"
    send: str = "create"
    send_stream: str | None = None
    iterable: str = "create_iterable"


class Endpoint(ABC):
    """The adapter contract for one wire format.

    Attributes:
        provider: the ``gen_ai.provider.name`` value (``"openai"``, ``"anthropic"``, or the server kind), also
            the provider column of the capability profiles (:data:`guardrail.vendors.profiles.PROFILES`).
        api: ``"chat"``, ``"responses"`` or ``"messages"``.
        server: the self-hosted server kind (``"vllm"``, ``"sglang"``, ``"llamacpp"``, ``"ollama"``) or ``None``.
    """

    provider: str = ""
    api: str = ""
    #: The SDK (its module name, a row of :data:`guardrail.vendors.registry.SDKS`) whose clients serve this API.
    sdk: str = ""
    #: The SDK resources (dotted paths from the client) whose ``create`` speaks this format; ``wrap`` replaces
    #: each one the installed SDK version has. The first is the main one (``beta`` twins follow).
    paths: tuple[str, ...] = ()
    #: The method names of the structured resources (:class:`Methods`).
    methods: Methods = Methods()
    #: Whether OpenAI-compatible self-hosted servers (``wrap(client, server=...)``) serve this API as well.
    self_hosted: bool = False
    #: The SDK keyword that carries the output-token limit on this endpoint.
    max_tokens_key: str = "max_tokens"
    #: The output-token limit a plain prompt request sends when the caller set none: ``None`` leaves it to the
    #: vendor; an API that requires one (Anthropic) names its default here.
    default_max_tokens: int | None = None
    #: Fields every answer of this API carries as a list; an answer without them is not the API's (the SDKs
    #: build their models without validation, so a missing field reads as ``None``, not as an error).
    list_fields: tuple[str, ...] = ()
    #: Request fields guardrail sets for its modes (``outer.inner`` for a nested one): the caller giving one
    #: together with ``response_model`` is a conflict, never a silent merge.
    reserved: tuple[str, ...] = ()
    #: The request fields that carry what the model reads, counted by the budget's input estimate. One list for
    #: the three endpoints (each field is counted, ``null`` when absent), so the estimate is the same whatever
    #: the API; a new endpoint whose prompt travels in other fields adds them.
    prompt_fields: tuple[str, ...] = ("messages", "input", "system", "instructions", "tools", "response_format",
                                      "text", "output_config", "extra_body")

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

    @abstractmethod
    def prompt_request(self, system: str, user: str, *, max_tokens: int | None) -> dict[str, Any]:
        """The SDK keywords (less ``model``) for one plain exchange: a system text and a user text.

        ``max_tokens`` is the caller's output-token limit; without one, :attr:`default_max_tokens` (if any).
        """

    @abstractmethod
    def continued(self, kwargs: Mapping[str, Any], turns: Sequence[tuple[Role, str]], *,
                  max_tokens: int | None) -> dict[str, Any]:
        """The caller's keywords with ``turns`` (``("user" | "assistant", text)``, in order) after its own, and
        ``max_tokens`` as the output-token limit when given: a free-text request with no mode's fields (the
        reasoning stage of :mod:`guardrail.call.reasoning`, and its follow-up's base)."""

    @abstractmethod
    def tool_definition(self, name: str, description: str, schema: Mapping[str, Any], *,
                        strict: bool = False) -> dict[str, Any]:
        """One entry of the request's ``tools`` list: a function tool taking ``schema`` as its arguments."""

    @abstractmethod
    def tool_calls(self, response: Any) -> list[ToolCall]:
        """Every tool call in a non-streamed SDK response of this API, in order (none for another API's)."""

    def flavored(self, client: Any) -> Endpoint:
        """This endpoint as ``client`` speaks it (a provider of its own, say); itself unless a flavour differs."""
        return self

    def client_timeout(self, client: Any) -> Any:
        """The SDK client's own request timeout: seconds, or an httpx ``Timeout`` (``client.timeout``)."""
        return getattr(client, "timeout", None)

    def sender(self, resource: Any) -> Callable[..., Any]:
        """The SDK call one HTTP try makes with the built keywords, on ``resource`` (the SDK's own resource,
        without SDK retries): its :attr:`Methods.send` method, which takes ``stream=True`` for a stream."""
        found: Callable[..., Any] = getattr(resource, self.methods.send)
        return found

    def conflicts(self, kwargs: Mapping[str, Any]) -> list[str]:
        """The :attr:`reserved` fields the caller gave (sorted)."""
        found = []
        for name in self.reserved:
            outer, _, inner = name.partition(".")
            given = kwargs.get(outer) if inner else None
            if (inner and isinstance(given, Mapping) and given.get(inner) is not None) or \
                    (not inner and outer in kwargs):
                found.append(name)
        return sorted(found)

    def missing_fields(self, answer: Any) -> list[str]:
        """The :attr:`list_fields` a parsed answer lacks: any at all means it is not this API's answer."""
        return [name for name in self.list_fields if not isinstance(getattr(answer, name, None), list)]

    def max_tokens(self, kwargs: Mapping[str, Any]) -> int | None:
        """The output-token limit the caller set, if any."""
        value = kwargs.get(self.max_tokens_key)
        return value if isinstance(value, int) else None

    def temperature(self, kwargs: Mapping[str, Any]) -> float | None:
        """The sampling temperature the caller set, if any."""
        given = kwargs.get("temperature")
        return float(given) if isinstance(given, (int, float)) else None

    def streams(self, kwargs: Mapping[str, Any]) -> bool:
        """Whether these keywords ask for a streamed answer."""
        return bool(kwargs.get("stream"))

    def streaming(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The keywords asking for a streamed answer."""
        return {**kwargs, "stream": True}

    def estimate_input_tokens(self, request: Mapping[str, Any]) -> int:
        """A conservative input-token estimate of a built request: a quarter of the characters of its
        :attr:`prompt_fields`."""
        sent = {key: request.get(key) for key in self.prompt_fields}
        return math.ceil(len(json.dumps(sent, ensure_ascii=False, default=str)) / 4)

    def thinking(self, kwargs: Mapping[str, Any]) -> bool:
        """Whether the caller turned on extended thinking/reasoning that forbids forcing a tool."""
        return False


def instruction(plan: Plan) -> str:
    """The system-prompt text that asks for JSON matching the schema (prompt and JSON modes), with the call's
    few-shot examples after it; for a text constraint (a regex or grammar), the words asking for such a text."""
    if plan.constraint is not None:
        from guardrail.vendors.self_hosted_constraints import constraint_instruction

        return constraint_instruction(plan.constraint)
    schema = json.dumps(plan.schema, ensure_ascii=False, separators=(",", ":"))
    text = ("Reply with one JSON value and nothing else: no prose, no code fences. "
            f"It must match this JSON Schema:\n{schema}")
    return f"{text}\n\n{examples_block(plan)}" if plan.examples else text


def examples_text(texts: Sequence[str], what: str = "replies") -> str:
    """Few-shot examples (JSON texts) as one block of instruction text, each on its own lines. Examples are shown in
    the instructions, never as made-up assistant turns, so the model never reads them as something it said."""
    shown = "\n".join(f"Example {number}:\n{text}" for number, text in enumerate(texts, 1))
    return f"Examples of valid {what} (each one complete JSON value; illustrations, not the answer):\n{shown}"


def examples_block(plan: Plan) -> str:
    """The plan's few-shot examples as one block of text (after the schema text in the prompt and JSON modes)."""
    return examples_text(plan.examples)


def examples_instruction(plan: Plan) -> str | None:
    """The instruction text showing the few-shot examples in the native and tool modes, where no schema text is
    in the prompt (the mode's own fields carry the schema); ``None`` when the call has none. The endpoints append
    it to the system instructions."""
    if not plan.examples:
        return None
    return examples_text(plan.examples, f"arguments of the {plan.name} tool" if plan.mode == "tool" else "replies")


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


def replayed_arguments(done: Completion, note: str, what: str) -> tuple[dict[str, Any], str]:
    """The forced tool's arguments as the object an API takes back in a replayed call, and the feedback ``note``
    to send with it. Arguments that are not a JSON object (which such an API cannot take back) are replayed as
    ``{}``, and the note shows the model what it wrote (``what``: the API's word for them, ``"tool input"``)."""
    try:
        given: Any = json.loads(done.text or "{}")
    except ValueError:
        given = None
    if isinstance(given, dict):
        return given, note
    return {}, f"Your {what} was not a JSON object; it was:\n{done.text}\n{note}"


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
