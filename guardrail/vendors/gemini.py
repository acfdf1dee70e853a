"""Gemini ``generateContent`` (the google-genai SDK, for the Gemini API and Vertex AI alike).

The request is ``model``, ``contents`` and a ``config`` (a ``GenerateContentConfig`` or its dict) holding every
setting: the output format (``response_mime_type``, ``response_json_schema``), tools and ``tool_config``, the
system instruction, ``max_output_tokens`` and ``temperature``. The answer is a ``GenerateContentResponse``:
``candidates[0]`` with its ``content.parts`` and ``finish_reason``, ``prompt_feedback`` (a blocked prompt has a
``block_reason`` and no candidate) and ``usage_metadata``. A stream is ``generate_content_stream``: the same
responses in pieces, the last carrying the finish reason and the whole usage.

Unlike the openai and anthropic SDKs, a structured resource's methods are ``generate_content`` (the value),
``generate_content_with_result`` and ``generate_content_stream`` (previews; without ``response_model`` the
SDK's own stream), and the client has no ``max_retries``: the SDK retries only when ``http_options`` asks it
to, so each request guardrail sends turns that off itself (:meth:`Gemini.sender`), with the call's timeout.
Nothing here imports the SDK: requests are built as the plain dicts the SDK accepts.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from guardrail.outcome import Usage
from guardrail.vendors.base import (
    Accumulator,
    Completion,
    Endpoint,
    Exchange,
    Finish,
    Methods,
    Pieces,
    Role,
    ToolCall,
    as_text,
    count,
    examples_instruction,
    feedback_message,
    instruction,
    replayed_arguments,
)
from guardrail.vendors.plans import Plan

__all__ = ["GEMINI", "VERTEX", "Gemini", "gemini_usage"]

#: ``gen_ai.provider.name`` of the Gemini API and of Vertex AI (OpenTelemetry GenAI semantic conventions).
GEMINI = "gcp.gemini"
VERTEX = "gcp.vertex_ai"

#: The finish reason of a stream that ended without one (cut short): read as truncated, never as whole.
_STREAM_ENDED = "STREAM_ENDED"
#: Candidate finish reasons (``types.FinishReason``) -> guardrail's. The safety family ends the call as a refusal;
#: a malformed or unexpected function call, a missing thought signature and the like are answers that failed
#: (read as they are, so the loop asks again with feedback); anything unknown is ``"other"`` too.
_FINISH: dict[str, Finish] = {
    "STOP": "stop", "MAX_TOKENS": "length", _STREAM_ENDED: "length",
    **dict.fromkeys(("SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
                     "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "LANGUAGE", "MODEL_ARMOR"), "content_filter"),
}


#: Gemini 3 refuses a replayed function call without the thought signature it came with (a 400); the answer's own
#: signature is not kept, so the replay carries the sentinel Google documents for a call it did not make
#: (ai.google.dev/gemini-api/docs/thought-signatures), as the bytes the SDK sends as that very string.
_SKIP_SIGNATURE = base64.urlsafe_b64decode("skip_thought_signature_validator")


class Gemini(Endpoint):
    """``client.models.generate_content`` (and ``client.aio.models``)."""

    provider = GEMINI
    api = "gemini"
    sdk = "google.genai"
    paths = ("models",)
    methods = Methods(value="generate_content", result="generate_content_with_result",
                      partial="generate_content_stream", send="generate_content",
                      send_stream="generate_content_stream", iterable="generate_content_iterable")
    max_tokens_key = "max_output_tokens"
    list_fields = ()  # a blocked prompt's answer has no candidates: read() says what it is
    reserved = ("config.response_mime_type", "config.response_json_schema", "config.response_schema",
                "config.tool_config")
    prompt_fields = ("contents", "config")

    def flavored(self, client: Any) -> Gemini:
        """The endpoint as ``client`` speaks it: Vertex AI's provider name for a ``vertexai=True`` client."""
        if not getattr(getattr(client, "_api_client", None), "vertexai", False):
            return self
        vertex = type(self)(self.server)
        vertex.provider = VERTEX
        return vertex

    # -- the caller's settings live in config ------------------------------------------------------------------
    def max_tokens(self, kwargs: Mapping[str, Any]) -> int | None:
        value = _config(kwargs.get("config")).get(self.max_tokens_key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def temperature(self, kwargs: Mapping[str, Any]) -> float | None:
        given = _config(kwargs.get("config")).get("temperature")
        return float(given) if isinstance(given, (int, float)) and not isinstance(given, bool) else None

    def conflicts(self, kwargs: Mapping[str, Any]) -> list[str]:
        config = _config(kwargs.get("config"))
        return sorted(name for name in self.reserved if config.get(name.partition(".")[2]) is not None)

    def client_timeout(self, client: Any) -> float | None:
        """``http_options.timeout`` (milliseconds) of the client, in seconds."""
        options = getattr(getattr(client, "_api_client", None), "_http_options", None)
        timeout = getattr(options, "timeout", None)
        return timeout / 1000 if isinstance(timeout, (int, float)) and timeout > 0 else None

    def sender(self, resource: Any) -> Callable[..., Any]:
        """The SDK call one try makes: ``generate_content``, or ``generate_content_stream`` for a stream, with the
        SDK's own retries off (``http_options.retry_options`` attempts 1: guardrail retries) and the try's
        ``timeout`` (seconds, cut to the call's deadline) as the request's ``http_options.timeout``."""
        methods = self.methods

        def send(**kwargs: Any) -> Any:
            stream = bool(kwargs.pop("stream", False))
            timeout = kwargs.pop("timeout", None)
            config = dict(_config(kwargs.get("config")))
            options = dict(_config(config.get("http_options")))
            options["retry_options"] = {"attempts": 1}
            if isinstance(timeout, (int, float)) and math.isfinite(timeout):
                options["timeout"] = max(1, math.ceil(timeout * 1000))
            config["http_options"] = options
            name = methods.send_stream if stream and methods.send_stream else methods.send
            return getattr(resource, name)(**{**kwargs, "config": config})

        send.__name__ = send.__qualname__ = methods.send
        return send

    # -- requests ------------------------------------------------------------------------------------------------
    def prompt_request(self, system: str, user: str, *, max_tokens: int | None) -> dict[str, Any]:
        config: dict[str, Any] = {"system_instruction": system}
        if max_tokens is not None:
            config[self.max_tokens_key] = max_tokens
        return {"contents": [_turn("user", {"text": user})], "config": config}

    def tool_definition(self, name: str, description: str, schema: Mapping[str, Any], *,
                        strict: bool = False) -> dict[str, Any]:
        """A ``Tool`` with one function declaration (Gemini has no per-tool strict flag)."""
        return {"function_declarations": [{"name": name, "description": description,
                                           "parameters_json_schema": dict(schema)}]}

    def tool_calls(self, response: Any) -> list[ToolCall]:
        if type(response).__name__ != "GenerateContentResponse":
            return []
        calls = []
        for part in _parts(response):
            call = getattr(part, "function_call", None)
            if call is not None:
                calls.append(ToolCall(str(call.name or ""), as_text(call.args or {}), call.id))
        return calls

    def build(self, kwargs: Mapping[str, Any], plan: Plan, history: list[Exchange], *,
              max_tokens: int | None, temperature: float | None) -> dict[str, Any]:
        out = dict(kwargs)
        config = dict(_config(kwargs.get("config")))
        if plan.mode == "native":
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = plan.schema
        elif plan.mode == "tool":
            tool = self.tool_definition(plan.name, f"Report the {plan.name} result.", plan.schema)
            config["tools"] = [*(config.get("tools") or ()), tool]
            config["tool_config"] = {"function_calling_config": {"mode": "ANY",
                                                                 "allowed_function_names": [plan.name]}}
            config["automatic_function_calling"] = {"disable": True}  # the call is the answer, never run
        else:
            if plan.mode == "json":
                config["response_mime_type"] = "application/json"
            config["system_instruction"] = _with_system(config.get("system_instruction"), instruction(plan))
        shown = examples_instruction(plan) if plan.mode in ("native", "tool") else None
        if shown is not None:  # the prompt and JSON modes show them in instruction(plan)
            config["system_instruction"] = _with_system(config.get("system_instruction"), shown)
        turns = _contents(kwargs.get("contents"))
        for exchange in history:
            turns.extend(_replay(exchange))
        out["contents"] = turns
        if max_tokens is not None:
            config[self.max_tokens_key] = max_tokens
        if temperature is not None:
            config["temperature"] = temperature
        out["config"] = config
        return out

    def continued(self, kwargs: Mapping[str, Any], turns: Sequence[tuple[Role, str]], *,
                  max_tokens: int | None) -> dict[str, Any]:
        out = dict(kwargs)
        out["contents"] = [*_contents(kwargs.get("contents")),
                           *(_turn("model" if role == "assistant" else "user", {"text": text}) for role, text in turns)]
        if max_tokens is not None:
            out["config"] = {**_config(kwargs.get("config")), self.max_tokens_key: max_tokens}
        return out

    # -- answers -------------------------------------------------------------------------------------------------
    def read(self, response: Any, tool: str | None) -> Completion:
        usage = gemini_usage(getattr(response, "usage_metadata", None))
        blocked = _block_reason(response)
        if blocked is not None:
            return _blocked(blocked, usage, response)
        reason = _reason(response)
        texts: list[str] = []
        for part in _parts(response):
            call = getattr(part, "function_call", None)
            if call is not None and tool is not None and call.name == tool:
                return _completion(as_text(call.args or {}), reason, usage, call.id or call.name, call.name,
                                   response)
            if isinstance(part.text, str) and not part.thought:
                texts.append(part.text)
        return _completion("".join(texts) if texts else None, reason, usage, None, None, response)

    def accumulator(self, tool: str | None) -> Accumulator:
        return _GeminiStream(tool)


def gemini_usage(usage: Any) -> Usage:
    """``usage_metadata``. The prompt count includes the cached part (``cached_content_token_count``) and tool-use
    prompts are counted apart (added in); thinking tokens (``thoughts_token_count``) are billed as output but
    counted apart from ``candidates_token_count``, so guardrail adds them to the output and keeps them as a part."""
    thoughts = count(usage, "thoughts_token_count")
    return Usage(count(usage, "prompt_token_count") + count(usage, "tool_use_prompt_token_count"),
                 count(usage, "candidates_token_count") + thoughts,
                 cached_input_tokens=count(usage, "cached_content_token_count"), reasoning_tokens=thoughts)


def _config(config: Any) -> Mapping[str, Any]:
    """A config (``GenerateContentConfig``, ``HttpOptions`` or their dicts) as a mapping of the fields set."""
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return config
    fields = getattr(type(config), "model_fields", None)
    if fields is not None:  # a pydantic model of the SDK: its fields that hold a value, as they are
        return {name: getattr(config, name) for name in fields if getattr(config, name, None) is not None}
    raise TypeError(f"config must be a GenerateContentConfig or a dict, not {type(config).__name__}")


def _turn(role: str, *parts: Any) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def _is_content(item: Any) -> bool:
    """A ``Content`` (a turn with a role and parts), as an SDK object or a dict."""
    if isinstance(item, Mapping):
        return "parts" in item or "role" in item
    return type(item).__name__ == "Content"


def _contents(contents: Any) -> list[Any]:
    """The caller's ``contents`` as a list of turns (the SDK's rules: a string or a list of parts is one user
    turn), so the repair turns can follow."""
    if contents is None:
        return []
    if isinstance(contents, str):
        return [_turn("user", {"text": contents})]
    if _is_content(contents):
        return [contents]
    if isinstance(contents, (list, tuple)):
        if all(_is_content(item) for item in contents):
            return list(contents)
        if not any(_is_content(item) for item in contents):
            return [_turn("user", *({"text": item} if isinstance(item, str) else item for item in contents))]
        turns: list[Any] = []  # turns and loose parts mixed: each run of parts is one user turn, as the SDK does
        for item in contents:
            if _is_content(item):
                turns.append(item)
            elif turns and isinstance(turns[-1], dict) and turns[-1].get("_loose"):
                turns[-1]["parts"].append({"text": item} if isinstance(item, str) else item)
            else:
                turns.append({"_loose": True, **_turn("user", {"text": item} if isinstance(item, str) else item)})
        return [{k: v for k, v in turn.items() if k != "_loose"} if isinstance(turn, dict) else turn
                for turn in turns]
    return [_turn("user", contents)]  # one part (a Part, a File, an image)


def _with_system(system: Any, text: str) -> Any:
    """The caller's system instruction with ``text`` after it (a string, a ``Content``, a list of parts)."""
    if system is None or system == "":
        return text
    if isinstance(system, str):
        return f"{system}\n\n{text}"
    if isinstance(system, (list, tuple)):
        return [*system, {"text": text}]
    given = _config(system) if not isinstance(system, Mapping) else system
    if "parts" in given:
        return {**given, "parts": [*(given.get("parts") or ()), {"text": text}]}
    return [system, {"text": text}]  # one part


def _replay(exchange: Exchange) -> list[dict[str, Any]]:
    done = exchange.completion
    note = feedback_message(exchange.feedback)
    if done.tool_call_id:
        given, note = replayed_arguments(done, note, "function call input")
        name = done.tool_name or ""
        call = {"function_call": {"name": name, "args": given}, "thought_signature": _SKIP_SIGNATURE}
        result = {"function_response": {"name": name, "response": {"error": note}}}
        return [_turn("model", call), _turn("user", result)]
    return [_turn("model", {"text": done.text or "(empty)"}), _turn("user", {"text": note})]


def _first(response: Any) -> Any:
    candidates = getattr(response, "candidates", None) or ()
    return candidates[0] if candidates else None


def _parts(response: Any) -> list[Any]:
    candidate = _first(response)
    content = getattr(candidate, "content", None)
    return list(getattr(content, "parts", None) or ())


def _name(value: Any) -> str | None:
    """An SDK enum's name (``FinishReason.STOP`` -> ``"STOP"``), or the string the API sent."""
    if value is None:
        return None
    found = getattr(value, "value", value)
    return str(found)


def _reason(response: Any) -> str | None:
    return _name(getattr(_first(response), "finish_reason", None))


def _block_reason(response: Any) -> str | None:
    feedback = getattr(response, "prompt_feedback", None)
    return _name(getattr(feedback, "block_reason", None))


def _blocked(reason: str, usage: Usage, response: Any) -> Completion:
    message = getattr(getattr(response, "prompt_feedback", None), "block_reason_message", None)
    said = f"the prompt was blocked ({reason})" + (f": {message}" if message else "")
    return Completion(None, "content_filter", f"prompt blocked: {reason}", usage, said, None, None,
                      getattr(response, "model_version", None), getattr(response, "response_id", None))


def _completion(text: str | None, reason: str | None, usage: Usage, call_id: str | None, name: str | None,
                response: Any) -> Completion:
    word = reason or "FINISH_REASON_UNSPECIFIED"
    finish: Finish = _FINISH.get(word, "other")
    refusal = f"the answer was stopped by the vendor's filter ({word})" if finish == "content_filter" else None
    return Completion(text, finish, word, usage, refusal, call_id, name, getattr(response, "model_version", None),
                      getattr(response, "response_id", None))


class _GeminiStream(Accumulator):
    """Joins ``generate_content_stream`` chunks: text parts, the output function's call (Gemini sends a call
    whole, in one chunk), the finish reason and the usage (each chunk's is the total so far)."""

    def __init__(self, tool: str | None) -> None:
        self.tool = tool
        self.texts = Pieces()
        self.args = Pieces()
        self.call_id: str | None = None
        self.name: str | None = None
        self.reason: str | None = None
        self.block: str | None = None
        self.usage: Any = None
        self.model_version: str | None = None
        self.response_id: str | None = None
        self.last: Any = None

    def feed(self, event: Any) -> None:
        self.last = event
        self.model_version = getattr(event, "model_version", None) or self.model_version
        self.response_id = getattr(event, "response_id", None) or self.response_id
        self.usage = getattr(event, "usage_metadata", None) or self.usage
        self.block = _block_reason(event) or self.block
        self.reason = _reason(event) or self.reason
        for part in _parts(event):
            call = getattr(part, "function_call", None)
            if call is not None:
                if self.tool is not None and call.name == self.tool and self.call_id is None:
                    self.call_id, self.name = call.id or call.name, call.name
                    self.args.append(as_text(call.args or {}))
            elif isinstance(part.text, str) and not part.thought:
                self.texts.append(part.text)

    def answer(self) -> Pieces:
        return self.args if self.call_id is not None else self.texts

    def completion(self) -> Completion:
        usage = gemini_usage(self.usage)
        if self.block is not None:
            return _blocked(self.block, usage, self.last)
        reason = self.reason or _STREAM_ENDED
        if self.call_id is not None:
            return _completion(self.args.text(), reason, usage, self.call_id, self.name, self)
        return _completion(self.texts.text() if self.texts else None, reason, usage, None, None, self)
