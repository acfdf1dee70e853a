"""OpenAI Chat Completions (and every OpenAI-compatible server): request fields per mode, response reading.

Self-hosted servers speak the same wire format but constrain decoding through their own request fields. The
native mode asks each for output constrained to the plan's schema (:func:`native_fields`):

=========  ==========================================================================================
openai     ``response_format: {"type": "json_schema", "json_schema": {name, schema, strict: true}}``
vllm       ``structured_outputs: {"json": schema}`` (vLLM >= 0.12; ``guided_json`` was removed)
sglang     ``response_format`` json_schema (SGLang also takes ``regex``/``ebnf``; one constraint at a time)
llamacpp   top-level ``json_schema: schema`` (llama.cpp server; it also reads ``grammar`` for GBNF)
ollama     ``format: schema`` (Ollama's own field) and ``response_format`` json_schema for its /v1 layer
=========  ==========================================================================================

Fields the openai SDK does not know travel in ``extra_body``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from guardrail.errors import ConfigError
from guardrail.outcome import Usage
from guardrail.vendors.base import (
    Accumulator,
    Completion,
    Endpoint,
    Exchange,
    Finish,
    LogprobAnswer,
    LogprobStep,
    Pieces,
    Role,
    ToolCall,
    count,
    examples_instruction,
    feedback_message,
    instruction,
    with_history,
)
from guardrail.vendors.plans import Plan
from guardrail.vendors.self_hosted_constraints import constraint_fields

_FINISH: dict[str, Finish] = {"stream_ended": "length", "stop": "stop", "tool_calls": "stop",
                              "function_call": "stop", "length": "length",
                              "content_filter": "content_filter"}


class ChatCompletions(Endpoint):
    """``client.chat.completions.create``."""

    api = "chat"
    sdk = "openai"
    paths = ("chat.completions", "beta.chat.completions")
    self_hosted = True
    max_tokens_key = "max_completion_tokens"
    list_fields = ("choices",)
    reserved = ("response_format", "tool_choice")

    def __init__(self, server: str | None = None) -> None:
        super().__init__(server)
        self.provider = server or "openai"

    def prompt_request(self, system: str, user: str, *, max_tokens: int | None) -> dict[str, Any]:
        limit = max_tokens or self.default_max_tokens
        return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                **({self.max_tokens_key: limit} if limit else {})}

    def tool_definition(self, name: str, description: str, schema: Mapping[str, Any], *,
                        strict: bool = False) -> dict[str, Any]:
        function: dict[str, Any] = {"name": name, "description": description, "parameters": schema}
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    def tool_calls(self, response: Any) -> list[ToolCall]:
        calls: list[ToolCall] = []
        for choice in (getattr(response, "choices", None) or ())[:1]:
            for call in getattr(choice.message, "tool_calls", None) or ():
                function = getattr(call, "function", None)
                if function is not None:
                    calls.append(ToolCall(function.name, function.arguments or "", call.id))
        return calls

    def max_tokens(self, kwargs: Mapping[str, Any]) -> int | None:
        for key in ("max_completion_tokens", "max_tokens"):
            value = kwargs.get(key)
            if isinstance(value, int):
                return value
        return None

    def build(self, kwargs: Mapping[str, Any], plan: Plan, history: list[Exchange], *,
              max_tokens: int | None, temperature: float | None) -> dict[str, Any]:
        out = dict(kwargs)
        messages = list(out.get("messages") or [])
        if plan.mode == "native":
            fields = native_fields(self.server, plan)
            extra = fields.pop("extra_body", None)
            out.update(fields)
            if extra:
                out["extra_body"] = {**(out.get("extra_body") or {}), **extra}
            if self.server is not None:
                # A grammar decoder constrains the tokens but never shows the schema to the model: without it in
                # the prompt the model hears neither the field descriptions nor the constraints the decoder does
                # not enforce (restated in words there). vLLM's structured-output guide recommends the same.
                messages = _with_system(messages, instruction(plan))
        elif plan.mode == "tool":
            tool = self.tool_definition(plan.name, f"Report the {plan.name} result.", plan.schema, strict=plan.strict)
            out["tools"] = [*out.get("tools", ()), tool]
            out["tool_choice"] = {"type": "function", "function": {"name": plan.name}}
            out["parallel_tool_calls"] = False
        else:
            if plan.mode == "json":
                out["response_format"] = {"type": "json_object"}
            messages = _with_system(messages, instruction(plan))
        # the examples: in instruction(plan) where it was sent (prompt, JSON, a server's native mode), else here
        shown = examples_instruction(plan) if plan.mode == "tool" or (plan.mode == "native" and not self.server) \
            else None
        if shown is not None:
            messages = _with_system(messages, shown)
        token_key = "max_tokens" if "max_tokens" in kwargs and "max_completion_tokens" not in kwargs else \
            "max_completion_tokens"
        with_history(out, "messages", messages, history, _replay, max_tokens=max_tokens, token_key=token_key,
                     temperature=temperature)
        if out.get("stream"):
            out["stream_options"] = {**(out.get("stream_options") or {}), "include_usage": True}
        return out

    def continued(self, kwargs: Mapping[str, Any], turns: Sequence[tuple[Role, str]], *,
                  max_tokens: int | None) -> dict[str, Any]:
        messages = [*(kwargs.get("messages") or []), *({"role": role, "content": text} for role, text in turns)]
        token_key = "max_tokens" if "max_tokens" in kwargs and "max_completion_tokens" not in kwargs else \
            "max_completion_tokens"
        return with_history(dict(kwargs), "messages", messages, [], _replay, max_tokens=max_tokens,
                            token_key=token_key, temperature=None)

    def read(self, response: Any, tool: str | None) -> Completion:
        choice = response.choices[0]
        message = choice.message
        usage = chat_usage(response.usage)
        reason = choice.finish_reason or "stop"
        for call in message.tool_calls or ():
            function = getattr(call, "function", None)
            if tool is not None and function is not None and function.name == tool:
                return _completion(function.arguments, reason, usage, None, call.id, function.name, response)
        return _completion(message.content, reason, usage, getattr(message, "refusal", None), None, None, response)

    def accumulator(self, tool: str | None) -> Accumulator:
        return _ChatStream(tool)


def native_fields(server: str | None, plan: Plan) -> dict[str, Any]:
    """The SDK keywords that ask ``server`` (``None`` = OpenAI itself) for output constrained to the plan's schema
    (or to its text constraint, :mod:`guardrail.vendors.self_hosted_constraints`)."""
    if plan.constraint is not None:
        return constraint_fields(server, plan.constraint) or {}
    if server is None:
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": plan.name, "schema": plan.schema, "strict": plan.strict}}}
    # Grammar engines enforce the whole schema; OpenAI's "strict" subset rules do not apply to them.
    response_format = {"type": "json_schema", "json_schema": {"name": plan.name, "schema": plan.schema}}
    if server == "sglang":
        return {"response_format": response_format}
    if server == "vllm":
        return {"extra_body": {"structured_outputs": {"json": plan.schema}}}
    if server == "llamacpp":
        return {"extra_body": {"json_schema": plan.schema}}
    if server == "ollama":
        return {"response_format": response_format, "extra_body": {"format": plan.schema}}
    raise ConfigError(f"unknown server kind {server!r}; expected vllm, sglang, llamacpp or ollama")


def _completion(text: str | None, reason: str, usage: Usage, refusal: str | None, call_id: str | None,
                name: str | None, response: Any) -> Completion:
    finish: Finish = "refusal" if refusal else _FINISH.get(reason, "other")
    return Completion(text, finish, reason, usage, refusal, call_id, name, getattr(response, "model", None),
                      getattr(response, "id", None))


def chat_usage(usage: Any) -> Usage:
    """Chat Completions ``usage``: ``prompt_tokens`` (cached ones included, as
    ``prompt_tokens_details.cached_tokens``) and ``completion_tokens`` (reasoning included, as
    ``completion_tokens_details.reasoning_tokens``)."""
    return Usage(count(usage, "prompt_tokens"), count(usage, "completion_tokens"),
                 cached_input_tokens=count(usage, "prompt_tokens_details", "cached_tokens"),
                 reasoning_tokens=count(usage, "completion_tokens_details", "reasoning_tokens"))


def _with_system(messages: list[Any], text: str) -> list[Any]:
    """Insert the instruction as a system message after the caller's leading system/developer messages."""
    at = 0
    while at < len(messages) and isinstance(messages[at], dict) and messages[at].get("role") in {"system",
                                                                                                 "developer"}:
        at += 1
    return [*messages[:at], {"role": "system", "content": text}, *messages[at:]]


def _replay(exchange: Exchange) -> list[dict[str, Any]]:
    done = exchange.completion
    note = feedback_message(exchange.feedback)
    if done.tool_call_id:
        call = {"id": done.tool_call_id, "type": "function",
                "function": {"name": done.tool_name or "", "arguments": done.text or ""}}
        return [{"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": done.tool_call_id, "content": note}]
    return [{"role": "assistant", "content": done.text or ""}, {"role": "user", "content": note}]


class _ChatStream(Accumulator):
    """Joins chat-completion chunks: content, refusal, and the argument fragments of the output tool's call."""

    def __init__(self, tool: str | None) -> None:
        self.tool = tool
        self.parts = Pieces()
        self.refusal: list[str] = []
        self.calls: dict[int, list[Any]] = {}  # index -> [id, name, argument Pieces]
        self.reason = "stream_ended"  # until a chunk carries the finish reason
        self.usage = Usage()
        self.model: str | None = None
        self.id: str | None = None

    def feed(self, event: Any) -> None:
        self.model = getattr(event, "model", None) or self.model
        self.id = getattr(event, "id", None) or self.id
        if getattr(event, "usage", None) is not None:
            self.usage = chat_usage(event.usage)
        for choice in getattr(event, "choices", None) or ():
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content:
                self.parts.append(delta.content)
            if getattr(delta, "refusal", None):
                self.refusal.append(delta.refusal)
            for call in delta.tool_calls or ():
                entry = self.calls.get(call.index)
                if entry is None:
                    entry = self.calls[call.index] = [None, None, Pieces()]
                entry[0] = call.id or entry[0]
                if call.function is not None:
                    entry[1] = call.function.name or entry[1]
                    entry[2].append(call.function.arguments or "")
            if choice.finish_reason:
                self.reason = choice.finish_reason

    def _answer_call(self) -> list[Any] | None:
        return next((entry for entry in self.calls.values() if self.tool and entry[1] == self.tool), None)

    def answer(self) -> Pieces:
        call = self._answer_call()
        return call[2] if call is not None else self.parts

    def completion(self) -> Completion:
        refusal = "".join(self.refusal) or None
        call = self._answer_call()
        finish: Finish = "refusal" if refusal else _FINISH.get(self.reason, "other")
        if call is not None:
            return Completion(call[2].text(), finish, self.reason, self.usage, refusal, call[0], call[1],
                              self.model, self.id)
        text = self.parts.text() if self.parts else None
        return Completion(text, finish, self.reason, self.usage, refusal, None, None, self.model, self.id)


def split_messages(messages: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """(system, user) text from Chat Completions messages (``system``/``developer`` vs the rest; a list of
    content parts is read for its text parts)."""
    system: list[str] = []
    user: list[str] = []
    for message in messages:
        content = message.get("content")
        text = content if isinstance(content, str) else " ".join(
            part.get("text", "") for part in content or () if isinstance(part, Mapping))
        (system if message.get("role") in {"system", "developer"} else user).append(text)
    return "\n".join(system), "\n".join(user)


# -- token logprobs (guardrail.choose) ------------------------------------------------------------------------

def logprob_request(model: str, system: str, user: str, *, top_logprobs: int, max_tokens: int) -> dict[str, Any]:
    """The ``chat.completions.create`` keywords for one greedy answer with its token logprobs."""
    return {"model": model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "logprobs": True, "top_logprobs": top_logprobs, "temperature": 0, "max_tokens": max_tokens}


def read_logprobs(response: Any) -> LogprobAnswer:
    """The steps of a ``ChatCompletion`` (the SDK object or its JSON as a dict); ``unavailable`` set when the
    reply carries no logprobs at all (a server that ignores ``logprobs=True``)."""
    choices = _field(response, "choices") or []
    if not choices:
        return LogprobAnswer((), False, "", unavailable="the reply has no choices, so no logprobs")
    choice = choices[0]
    message = _field(choice, "message")
    logprobs = _field(choice, "logprobs")
    refusal = _field(message, "refusal")
    content = _field(logprobs, "content") if logprobs is not None else None
    if isinstance(refusal, str) and refusal:
        return LogprobAnswer((), True, refusal, refused=True)
    if content is None:
        return LogprobAnswer((), False, "", unavailable=(
            "the server answered a logprobs=True request without logprobs: it does not expose them (or not for "
            "this model), so choose cannot score the options"))
    steps = []
    for entry in content:
        alternatives = tuple((_bytes(alt), _logprob(alt)) for alt in (_field(entry, "top_logprobs") or []))
        steps.append(LogprobStep(_bytes(entry), _logprob(entry), alternatives))
    text = _field(message, "content")
    return LogprobAnswer(tuple(steps), _field(choice, "finish_reason") != "length",
                         text if isinstance(text, str) else b"".join(s.token for s in steps).decode(errors="ignore"))


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _bytes(entry: Any) -> bytes:
    raw = _field(entry, "bytes")
    if isinstance(raw, list | tuple):
        try:
            return bytes(raw)
        except (TypeError, ValueError):
            pass
    token = _field(entry, "token")
    return token.encode() if isinstance(token, str) else b""


def _logprob(entry: Any) -> float:
    value = _field(entry, "logprob")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan

