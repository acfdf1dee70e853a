"""Anthropic Messages: request fields per mode, and reading content blocks, stop reasons and refusals."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from guardrail.outcome import Usage
from guardrail.vendors.base import (
    Accumulator,
    Completion,
    Endpoint,
    Exchange,
    Finish,
    Pieces,
    Role,
    ToolCall,
    as_text,
    count,
    examples_instruction,
    feedback_message,
    instruction,
    replayed_arguments,
    with_history,
)
from guardrail.vendors.plans import Plan

_FINISH: dict[str, Finish] = {"stream_ended": "length", "end_turn": "stop", "tool_use": "stop",
                              "stop_sequence": "stop",
                              "max_tokens": "length", "model_context_window_exceeded": "length",
                              "refusal": "refusal"}


class Messages(Endpoint):
    """``client.messages.create``."""

    provider = "anthropic"
    api = "messages"
    sdk = "anthropic"
    paths = ("messages", "beta.messages")
    max_tokens_key = "max_tokens"
    #: The Messages API requires a token limit on every request.
    default_max_tokens = 1024
    list_fields = ("content",)
    reserved = ("tool_choice", "output_config.format")

    def prompt_request(self, system: str, user: str, *, max_tokens: int | None) -> dict[str, Any]:
        return {"system": system, "messages": [{"role": "user", "content": user}],
                self.max_tokens_key: max_tokens or self.default_max_tokens}

    def tool_definition(self, name: str, description: str, schema: Mapping[str, Any], *,
                        strict: bool = False) -> dict[str, Any]:
        tool: dict[str, Any] = {"name": name, "description": description, "input_schema": schema}
        if strict:
            tool["strict"] = True
        return tool

    def tool_calls(self, response: Any) -> list[ToolCall]:
        return [ToolCall(block.name, block.input if isinstance(block.input, str) else json.dumps(block.input),
                         block.id)
                for block in getattr(response, "content", None) or () if getattr(block, "type", None) == "tool_use"]

    def thinking(self, kwargs: Mapping[str, Any]) -> bool:
        thinking = kwargs.get("thinking")
        return isinstance(thinking, Mapping) and thinking.get("type") in {"enabled", "adaptive"}

    def build(self, kwargs: Mapping[str, Any], plan: Plan, history: list[Exchange], *,
              max_tokens: int | None, temperature: float | None) -> dict[str, Any]:
        out = dict(kwargs)
        messages = list(out.get("messages") or [])
        if plan.mode == "native":
            out["output_config"] = {**(out.get("output_config") or {}),
                                    "format": {"type": "json_schema", "schema": plan.schema}}
        elif plan.mode == "tool":
            tool = self.tool_definition(plan.name, f"Report the {plan.name} result.", plan.schema, strict=plan.strict)
            out["tools"] = [*out.get("tools", ()), tool]
            out["tool_choice"] = {"type": "tool", "name": plan.name, "disable_parallel_tool_use": True}
        else:
            out["system"] = _with_system(out.get("system"), instruction(plan))
        shown = examples_instruction(plan) if plan.mode in ("native", "tool") else None
        if shown is not None:  # the prompt and JSON modes show them in instruction(plan)
            out["system"] = _with_system(out.get("system"), shown)
        return with_history(out, "messages", messages, history, _replay, max_tokens=max_tokens,
                            token_key=self.max_tokens_key, temperature=temperature)

    def continued(self, kwargs: Mapping[str, Any], turns: Sequence[tuple[Role, str]], *,
                  max_tokens: int | None) -> dict[str, Any]:
        messages = [*(kwargs.get("messages") or []), *({"role": role, "content": text} for role, text in turns)]
        return with_history(dict(kwargs), "messages", messages, [], _replay, max_tokens=max_tokens,
                            token_key=self.max_tokens_key, temperature=None)

    def read(self, response: Any, tool: str | None) -> Completion:
        usage = messages_usage(response.usage)
        reason = response.stop_reason or "end_turn"
        texts: list[str] = []
        for block in response.content or ():
            if block.type == "tool_use" and tool is not None and block.name == tool:
                return _completion(as_text(block.input), reason, usage, block.id, block.name, response)
            if block.type == "text":
                texts.append(block.text)
        return _completion("".join(texts) if texts else None, reason, usage, None, None, response)

    def accumulator(self, tool: str | None) -> Accumulator:
        return _MessagesStream(tool)


def _completion(text: str | None, reason: str, usage: Usage, call_id: str | None, name: str | None,
                response: Any) -> Completion:
    finish = _FINISH.get(reason, "other")
    refusal = (text or "the model declined to answer") if finish == "refusal" else None
    return Completion(text, finish, reason, usage, refusal, call_id, name, getattr(response, "model", None),
                      getattr(response, "id", None))


def messages_usage(usage: Any) -> Usage:
    """Messages ``usage``. Anthropic counts cache reads and cache writes apart from ``input_tokens``; guardrail
    adds them in (every input token, as the OpenTelemetry conventions count them) and keeps them as parts.
    Thinking tokens are part of ``output_tokens`` (``output_tokens_details.thinking_tokens``)."""
    read = count(usage, "cache_read_input_tokens")
    written = count(usage, "cache_creation_input_tokens")
    return Usage(count(usage, "input_tokens") + read + written,
                 count(usage, "output_tokens"),
                 cached_input_tokens=read, cache_write_tokens=written,
                 reasoning_tokens=count(usage, "output_tokens_details", "thinking_tokens"))


def _with_system(system: Any, text: str) -> Any:
    if not system:
        return text
    if isinstance(system, str):
        return f"{system}\n\n{text}"
    return [*system, {"type": "text", "text": text}]


def _replay(exchange: Exchange) -> list[dict[str, Any]]:
    done = exchange.completion
    note = feedback_message(exchange.feedback)
    if done.tool_call_id:
        given, note = replayed_arguments(done, note, "tool input")
        block = {"type": "tool_use", "id": done.tool_call_id, "name": done.tool_name or "", "input": given}
        result = {"type": "tool_result", "tool_use_id": done.tool_call_id, "content": note, "is_error": True}
        return [{"role": "assistant", "content": [block]}, {"role": "user", "content": [result]}]
    return [{"role": "assistant", "content": done.text or "(empty)"}, {"role": "user", "content": note}]


class _MessagesStream(Accumulator):
    """Joins Messages stream events: text deltas, the output tool's JSON fragments, usage, stop reason."""

    def __init__(self, tool: str | None) -> None:
        self.tool = tool
        self.texts = Pieces()
        self.args = Pieces()
        self.answer_index: int | None = None  # the content block holding the output tool's call
        self.call_id: str | None = None
        self.name: str | None = None
        self.reason = "stream_ended"  # until message_delta says why it stopped
        self.start_usage: Any = None  # message_start's usage: the input side, cache buckets included
        self.delta_usage: Any = None  # the last message_delta's usage: cumulative output (and thinking) tokens
        self.model: str | None = None
        self.id: str | None = None

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            self.model, self.id = event.message.model, event.message.id
            self.start_usage = event.message.usage
        elif kind == "content_block_start" and event.content_block.type == "tool_use" and self.call_id is None \
                and self.tool is not None and event.content_block.name == self.tool:
            self.call_id, self.name = event.content_block.id, event.content_block.name
            self.answer_index = event.index
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self.texts.append(delta.text)
            elif delta.type == "input_json_delta" and event.index == self.answer_index:
                self.args.append(delta.partial_json)
        elif kind == "message_delta":
            self.reason = event.delta.stop_reason or self.reason
            self.delta_usage = getattr(event, "usage", None) or self.delta_usage

    def answer(self) -> Pieces:
        return self.args if self.call_id is not None else self.texts

    def completion(self) -> Completion:
        start = messages_usage(self.start_usage)
        usage = start if self.delta_usage is None else Usage(
            start.input_tokens, count(self.delta_usage, "output_tokens") or start.output_tokens,
            cached_input_tokens=start.cached_input_tokens, cache_write_tokens=start.cache_write_tokens,
            reasoning_tokens=count(self.delta_usage, "output_tokens_details", "thinking_tokens"))
        if self.call_id is not None:
            return _completion(self.args.text(), self.reason, usage, self.call_id, self.name, self)
        return _completion(self.texts.text() if self.texts else None, self.reason, usage, None, None, self)
