"""OpenAI Chat Completions (and every OpenAI-compatible server): request fields per mode, response reading.

Self-hosted servers speak the same wire format but constrain decoding through their own request fields;
:mod:`guardrail.vendors.compat` supplies those for the native mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from guardrail.call.modes import Plan
from guardrail.outcome import Usage
from guardrail.vendors import compat
from guardrail.vendors.base import (
    Accumulator,
    Completion,
    Endpoint,
    Exchange,
    Finish,
    count,
    feedback_message,
    instruction,
    with_history,
)

_FINISH: dict[str, Finish] = {"stream_ended": "length", "stop": "stop", "tool_calls": "stop",
                              "function_call": "stop", "length": "length",
                              "content_filter": "content_filter"}


class ChatCompletions(Endpoint):
    """``client.chat.completions.create``."""

    api = "chat"
    list_fields = ("choices",)

    def __init__(self, server: str | None = None) -> None:
        super().__init__(server)
        self.provider = server or "openai"

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
            fields = compat.chat_native_fields(self.server, plan)
            extra = fields.pop("extra_body", None)
            out.update(fields)
            if extra:
                out["extra_body"] = {**(out.get("extra_body") or {}), **extra}
        elif plan.mode == "tool":
            function: dict[str, Any] = {"name": plan.name, "description": f"Report the {plan.name} result.",
                                        "parameters": plan.schema}
            if plan.strict:
                function["strict"] = True
            out["tools"] = [*out.get("tools", ()), {"type": "function", "function": function}]
            out["tool_choice"] = {"type": "function", "function": {"name": plan.name}}
            out["parallel_tool_calls"] = False
        else:
            if plan.mode == "json":
                out["response_format"] = {"type": "json_object"}
            messages = _with_system(messages, instruction(plan))
        token_key = "max_tokens" if "max_tokens" in kwargs and "max_completion_tokens" not in kwargs else \
            "max_completion_tokens"
        with_history(out, "messages", messages, history, _replay, max_tokens=max_tokens, token_key=token_key,
                     temperature=temperature)
        if out.get("stream"):
            out["stream_options"] = {**(out.get("stream_options") or {}), "include_usage": True}
        return out

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
        self.parts: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, list[Any]] = {}  # index -> [id, name, argument fragments]
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
                entry = self.calls.setdefault(call.index, [None, None, []])
                entry[0] = call.id or entry[0]
                if call.function is not None:
                    entry[1] = call.function.name or entry[1]
                    entry[2].append(call.function.arguments or "")
            if choice.finish_reason:
                self.reason = choice.finish_reason

    def _answer_call(self) -> list[Any] | None:
        return next((entry for entry in self.calls.values() if self.tool and entry[1] == self.tool), None)

    def text(self) -> str:
        call = self._answer_call()
        return "".join(call[2]) if call is not None else "".join(self.parts)

    def completion(self) -> Completion:
        refusal = "".join(self.refusal) or None
        call = self._answer_call()
        finish: Finish = "refusal" if refusal else _FINISH.get(self.reason, "other")
        if call is not None:
            return Completion("".join(call[2]), finish, self.reason, self.usage, refusal, call[0], call[1],
                              self.model, self.id)
        text = "".join(self.parts) if self.parts else None
        return Completion(text, finish, self.reason, self.usage, refusal, None, None, self.model, self.id)
