"""What a type checker sees of ``guardrail.wrap(client)``: one protocol per client class.

``wrap`` has an overload per SDK client class (see :func:`guardrail.call.client.wrap`), each returning one of the
protocols below, so ``client.chat.completions.create(..., response_model=Ticket)`` is a ``Ticket`` (an
awaitable of one for async clients), ``create_with_result`` a ``Result[Ticket]``, ``with_raw_response``'s
``create`` a ``RawStructured[Ticket]``, and ``response_model=`` under ``with_streaming_response`` a type
error. The structured resources are typed exactly (the method classes of :mod:`guardrail.call.methods`); every
other attribute is the SDK's own at runtime and ``Any`` here (``__getattr__``), as only the SDK's types
describe it.

The protocols exist for type checkers. At runtime the wrapped client is an instance of a subclass of the SDK
client's own class (and of :class:`guardrail.call.client.WrappedClient`), its structured resources instances of
subclasses of the SDK's resources (:mod:`guardrail.call.resources`): ``isinstance`` against the SDK's classes
holds, and every attribute a protocol types as ``Any`` is the SDK's own.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from guardrail.call.iterable import AsyncItemStream, ItemStream
from guardrail.call.methods import (
    AsyncRawStructuredMethod,
    AsyncStructuredMethod,
    RawStructuredMethod,
    StreamingResponseMethod,
    StructuredMethod,
)
from guardrail.call.streaming import AsyncStructuredStream, StructuredStream
from guardrail.outcome import Result

if TYPE_CHECKING:
    from guardrail.call.methods import TypeForm

#: The method class at the leaves of a namespace (structured, raw-response or streaming-response flavor).
M = TypeVar("M", covariant=True)
T = TypeVar("T")


class ChatNamespace(Protocol[M]):
    """``client.chat``: ``completions`` is structured."""

    @property
    def completions(self) -> M: ...
    def __getattr__(self, name: str) -> Any: ...


class OpenAIBeta(Protocol[M]):
    """``client.beta`` of an OpenAI client: ``chat.completions`` and ``responses`` are structured."""

    @property
    def chat(self) -> ChatNamespace[M]: ...
    @property
    def responses(self) -> M: ...
    def __getattr__(self, name: str) -> Any: ...


class OpenAIResources(Protocol[M]):
    """An OpenAI client's resources in one flavor (the client itself, or its ``with_raw_response``)."""

    @property
    def chat(self) -> ChatNamespace[M]: ...
    @property
    def responses(self) -> M: ...
    @property
    def beta(self) -> OpenAIBeta[M]: ...
    def __getattr__(self, name: str) -> Any: ...


class OpenAIClient(OpenAIResources[StructuredMethod], Protocol):
    """``guardrail.wrap(openai.OpenAI(...))``."""

    @property
    def vendor(self) -> str: ...
    @property
    def with_raw_response(self) -> OpenAIResources[RawStructuredMethod]: ...
    @property
    def with_streaming_response(self) -> OpenAIResources[StreamingResponseMethod]: ...
    def with_options(self, **options: Any) -> OpenAIClient: ...
    def copy(self, **options: Any) -> OpenAIClient: ...


class AsyncOpenAIClient(OpenAIResources[AsyncStructuredMethod], Protocol):
    """``guardrail.wrap(openai.AsyncOpenAI(...))``."""

    @property
    def vendor(self) -> str: ...
    @property
    def with_raw_response(self) -> OpenAIResources[AsyncRawStructuredMethod]: ...
    @property
    def with_streaming_response(self) -> OpenAIResources[StreamingResponseMethod]: ...
    def with_options(self, **options: Any) -> AsyncOpenAIClient: ...
    def copy(self, **options: Any) -> AsyncOpenAIClient: ...


class AnthropicBeta(Protocol[M]):
    """``client.beta`` of an Anthropic client: ``messages`` is structured."""

    @property
    def messages(self) -> M: ...
    def __getattr__(self, name: str) -> Any: ...


class AnthropicResources(Protocol[M]):
    """An Anthropic client's resources in one flavor (the client itself, or its ``with_raw_response``)."""

    @property
    def messages(self) -> M: ...
    @property
    def beta(self) -> AnthropicBeta[M]: ...
    def __getattr__(self, name: str) -> Any: ...


class AnthropicClient(AnthropicResources[StructuredMethod], Protocol):
    """``guardrail.wrap(anthropic.Anthropic(...))``."""

    @property
    def vendor(self) -> str: ...
    @property
    def with_raw_response(self) -> AnthropicResources[RawStructuredMethod]: ...
    @property
    def with_streaming_response(self) -> AnthropicResources[StreamingResponseMethod]: ...
    def with_options(self, **options: Any) -> AnthropicClient: ...
    def copy(self, **options: Any) -> AnthropicClient: ...


class AsyncAnthropicClient(AnthropicResources[AsyncStructuredMethod], Protocol):
    """``guardrail.wrap(anthropic.AsyncAnthropic(...))``."""

    @property
    def vendor(self) -> str: ...
    @property
    def with_raw_response(self) -> AnthropicResources[AsyncRawStructuredMethod]: ...
    @property
    def with_streaming_response(self) -> AnthropicResources[StreamingResponseMethod]: ...
    def with_options(self, **options: Any) -> AsyncAnthropicClient: ...
    def copy(self, **options: Any) -> AsyncAnthropicClient: ...


class PlatformAnthropicClient(AnthropicResources[StructuredMethod], Protocol):
    """``guardrail.wrap(anthropic.AnthropicBedrock(...))`` or ``AnthropicVertex(...)``: as :class:`AnthropicClient`,
    less the client-level ``with_raw_response``/``with_streaming_response``, which the platform clients do not
    have (each resource has its own: ``client.messages.with_raw_response``)."""

    @property
    def vendor(self) -> str: ...
    def with_options(self, **options: Any) -> PlatformAnthropicClient: ...
    def copy(self, **options: Any) -> PlatformAnthropicClient: ...


class AsyncPlatformAnthropicClient(AnthropicResources[AsyncStructuredMethod], Protocol):
    """``guardrail.wrap(anthropic.AsyncAnthropicBedrock(...))`` or ``AsyncAnthropicVertex(...)``."""

    @property
    def vendor(self) -> str: ...
    def with_options(self, **options: Any) -> AsyncPlatformAnthropicClient: ...
    def copy(self, **options: Any) -> AsyncPlatformAnthropicClient: ...


class GeminiModels(Protocol):
    """``client.models`` of a wrapped ``google.genai.Client``: Gemini's method names, guardrail's keywords."""

    @overload
    def generate_content(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def generate_content(self, *, response_model: type[T], **kwargs: Any) -> T: ...
    @overload
    def generate_content(self, *, response_model: TypeForm, **kwargs: Any) -> Any: ...
    @overload
    def generate_content_with_result(self, *, response_model: type[T], **kwargs: Any) -> Result[T]: ...
    @overload
    def generate_content_with_result(self, *, response_model: TypeForm, **kwargs: Any) -> Result[Any]: ...
    @overload
    def generate_content_stream(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def generate_content_stream(self, *, response_model: type[T], **kwargs: Any) -> StructuredStream[T]: ...
    @overload
    def generate_content_stream(self, *, response_model: TypeForm, **kwargs: Any) -> StructuredStream[Any]: ...
    @overload
    def generate_content_iterable(self, *, response_model: type[T], **kwargs: Any) -> ItemStream[T]: ...
    @overload
    def generate_content_iterable(self, *, response_model: TypeForm, **kwargs: Any) -> ItemStream[Any]: ...
    def __getattr__(self, name: str) -> Any: ...


class AsyncGeminiModels(Protocol):
    """``client.aio.models``: as :class:`GeminiModels`, each an awaitable (the stream too, as the SDK's is)."""

    @overload
    def generate_content(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def generate_content(self, *, response_model: type[T], **kwargs: Any) -> Coroutine[Any, Any, T]: ...
    @overload
    def generate_content(self, *, response_model: TypeForm, **kwargs: Any) -> Coroutine[Any, Any, Any]: ...
    @overload
    def generate_content_with_result(self, *, response_model: type[T],
                                     **kwargs: Any) -> Coroutine[Any, Any, Result[T]]: ...
    @overload
    def generate_content_with_result(self, *, response_model: TypeForm,
                                     **kwargs: Any) -> Coroutine[Any, Any, Result[Any]]: ...
    @overload
    def generate_content_stream(self, *, response_model: None = None, **kwargs: Any) -> Any: ...
    @overload
    def generate_content_stream(self, *, response_model: type[T], **kwargs: Any) -> AsyncStructuredStream[T]: ...
    @overload
    def generate_content_stream(self, *, response_model: TypeForm,
                                **kwargs: Any) -> AsyncStructuredStream[Any]: ...
    @overload
    def generate_content_iterable(self, *, response_model: type[T], **kwargs: Any) -> AsyncItemStream[T]: ...
    @overload
    def generate_content_iterable(self, *, response_model: TypeForm, **kwargs: Any) -> AsyncItemStream[Any]: ...
    def __getattr__(self, name: str) -> Any: ...


class AsyncGeminiClient(Protocol):
    """``guardrail.wrap(client.aio)``, and ``client.aio`` of a wrapped ``google.genai.Client``."""

    @property
    def vendor(self) -> str: ...
    @property
    def models(self) -> AsyncGeminiModels: ...
    def __getattr__(self, name: str) -> Any: ...


class GeminiClient(Protocol):
    """``guardrail.wrap(google.genai.Client(...))``."""

    @property
    def vendor(self) -> str: ...
    @property
    def models(self) -> GeminiModels: ...
    @property
    def aio(self) -> AsyncGeminiClient: ...
    def __getattr__(self, name: str) -> Any: ...
