"""OpenAI Responses API: request fields per mode, and reading output items, refusals and ``incomplete``."""

from __future__ import annotations

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
    count,
    examples_instruction,
    feedback_message,
    instruction,
    with_history,
)
from guardrail.vendors.failures import StreamError
from guardrail.vendors.plans import Plan


class Responses(Endpoint):
    """``client.responses.create``."""

    provider = "openai"
    api = "responses"
    sdk = "openai"
    paths = ("responses", "beta.responses")
    max_tokens_key = "max_output_tokens"
    list_fields = ("output",)
    reserved = ("tool_choice", "text.format")

    def prompt_request(self, system: str, user: str, *, max_tokens: int | None) -> dict[str, Any]:
        limit = max_tokens or self.default_max_tokens
        return {"instructions": system, "input": user, **({self.max_tokens_key: limit} if limit else {})}

    def tool_definition(self, name: str, description: str, schema: Mapping[str, Any], *,
                        strict: bool = False) -> dict[str, Any]:
        return {"type": "function", "name": name, "description": description, "parameters": schema,
                "strict": strict}

    def tool_calls(self, response: Any) -> list[ToolCall]:
        return [ToolCall(item.name, item.arguments or "", item.call_id)
                for item in getattr(response, "output", None) or () if getattr(item, "type", None) == "function_call"]

    def build(self, kwargs: Mapping[str, Any], plan: Plan, history: list[Exchange], *,
              max_tokens: int | None, temperature: float | None) -> dict[str, Any]:
        out = dict(kwargs)
        given = out.get("input")
        items: list[Any] = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
        text = dict(out.get("text") or {})
        if plan.mode == "native":
            text["format"] = {"type": "json_schema", "name": plan.name, "schema": plan.schema, "strict": plan.strict}
        elif plan.mode == "tool":
            tool = self.tool_definition(plan.name, f"Report the {plan.name} result.", plan.schema, strict=plan.strict)
            out["tools"] = [*out.get("tools", ()), tool]
            out["tool_choice"] = {"type": "function", "name": plan.name}
            out["parallel_tool_calls"] = False
        else:
            if plan.mode == "json":
                text["format"] = {"type": "json_object"}
            own = out.get("instructions")
            out["instructions"] = f"{own}\n\n{instruction(plan)}" if own else instruction(plan)
        shown = examples_instruction(plan) if plan.mode in ("native", "tool") else None
        if shown is not None:  # the prompt and JSON modes show them in instruction(plan)
            own = out.get("instructions")
            out["instructions"] = f"{own}\n\n{shown}" if own else shown
        if text:
            out["text"] = text
        return with_history(out, "input", items, history, _replay, max_tokens=max_tokens,
                            token_key=self.max_tokens_key, temperature=temperature)

    def continued(self, kwargs: Mapping[str, Any], turns: Sequence[tuple[Role, str]], *,
                  max_tokens: int | None) -> dict[str, Any]:
        given = kwargs.get("input")
        items: list[Any] = [{"role": "user", "content": given}] if isinstance(given, str) else list(given or [])
        items.extend({"role": role, "content": text} for role, text in turns)
        return with_history(dict(kwargs), "input", items, [], _replay, max_tokens=max_tokens,
                            token_key=self.max_tokens_key, temperature=None)

    def read(self, response: Any, tool: str | None) -> Completion:
        if getattr(response, "status", None) == "failed":  # the vendor failed mid-way: a transport problem
            error = getattr(response, "error", None)
            raise StreamError({"type": getattr(error, "code", None) or "server_error",
                               "message": getattr(error, "message", None) or "the response failed"})
        usage = responses_usage(response.usage)
        status = getattr(response, "status", None) or "completed"
        details = getattr(response, "incomplete_details", None)
        reason = getattr(details, "reason", None) if details is not None else None
        finish: Finish = "stop"
        if status == "incomplete":
            finish = "content_filter" if reason == "content_filter" else "length"
        elif status not in {"completed", None}:
            finish = "other"
        text_parts: list[str] = []
        refusal: list[str] = []
        for item in response.output or ():
            kind = getattr(item, "type", None)
            if kind == "function_call" and tool is not None and item.name == tool:
                return Completion(item.arguments, finish, reason or status, usage, None, item.call_id, item.name,
                                  response.model, response.id)
            if kind == "message":
                for part in item.content or ():
                    if part.type == "output_text":
                        text_parts.append(part.text)
                    elif part.type == "refusal":
                        refusal.append(part.refusal)
        said = "".join(refusal) or None
        text = "".join(text_parts) if text_parts else None
        return Completion(text, "refusal" if said else finish, reason or status, usage, said, None, None,
                          response.model, response.id)

    def accumulator(self, tool: str | None) -> Accumulator:
        return _ResponsesStream(self, tool)


def responses_usage(usage: Any) -> Usage:
    """Responses ``usage``: ``input_tokens`` (cached ones included, as ``input_tokens_details.cached_tokens``)
    and ``output_tokens`` (reasoning included, as ``output_tokens_details.reasoning_tokens``)."""
    return Usage(count(usage, "input_tokens"), count(usage, "output_tokens"),
                 cached_input_tokens=count(usage, "input_tokens_details", "cached_tokens"),
                 reasoning_tokens=count(usage, "output_tokens_details", "reasoning_tokens"))


def _replay(exchange: Exchange) -> list[dict[str, Any]]:
    done = exchange.completion
    note = feedback_message(exchange.feedback)
    if done.tool_call_id:
        return [{"type": "function_call", "call_id": done.tool_call_id, "name": done.tool_name or "",
                 "arguments": done.text or ""},
                {"type": "function_call_output", "call_id": done.tool_call_id, "output": note}]
    return [{"role": "assistant", "content": done.text or ""}, {"role": "user", "content": note}]


class _ResponsesStream(Accumulator):
    """The stream's final ``response.completed``/``incomplete``/``failed`` event carries the whole response."""

    def __init__(self, endpoint: Responses, tool: str | None) -> None:
        self.endpoint = endpoint
        self.tool = tool
        self.final: Any = None
        self.parts = Pieces()

    def feed(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind in {"response.completed", "response.incomplete", "response.failed"}:
            self.final = event.response
        elif kind == "error":
            raise StreamError({"type": getattr(event, "code", None) or "server_error",
                               "code": getattr(event, "code", None), "message": getattr(event, "message", "")})
        elif kind in {"response.output_text.delta", "response.function_call_arguments.delta"}:
            self.parts.append(event.delta)

    def answer(self) -> Pieces:
        return self.parts

    def completion(self) -> Completion:
        if self.final is not None:
            return self.endpoint.read(self.final, self.tool)
        # The stream stopped before its final event: what arrived is cut off, never complete.
        return Completion(self.parts.text(), "length", "stream_ended", Usage())
