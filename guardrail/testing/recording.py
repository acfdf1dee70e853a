"""What the emulator saw: one :class:`RecordedRequest` per HTTP request, normalised across the three APIs.

Tests assert on these (which model, which schema, which tool was forced, what feedback the repair loop
sent back), so the properties read the request body the way each vendor reads it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Api", "RecordedRequest", "estimate_tokens", "text_of"]

Api = Literal["chat", "responses", "messages", "gemini"]


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate the emulator reports in usage: ``ceil(len(text) / 4)``."""
    return math.ceil(len(text) / 4)


def text_of(content: Any) -> str:
    """Plain text of a message ``content`` in any of the three APIs' shapes (string, or list of parts).

    Text parts (``text``, ``input_text``, ``output_text``), Anthropic ``tool_result`` blocks (whose content
    is a string or a list of blocks) and Responses ``function_call_output`` items are read; images, files and
    other parts contribute nothing. Parts are joined with newlines.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        if isinstance(content.get("text"), str):
            return str(content["text"])
        if content.get("type") == "tool_result":
            return text_of(content.get("content"))
        if content.get("type") == "function_call_output":
            return text_of(content.get("output"))
        if "content" in content:
            return text_of(content.get("content"))
        return ""
    if isinstance(content, list):
        return "\n".join(part for part in (text_of(item) for item in content) if part)
    return ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _field(holder: Any, name: str) -> Any:
    """A Gemini request field by its camelCase name, or by its snake_case one (the API reads both, and the
    google-genai SDK sends a few, such as ``parameters_json_schema``, as it has them)."""
    holder = _dict(holder)
    if name in holder:
        return holder[name]
    return holder.get(re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), name))


def _gemini_text(parts: Any) -> str:
    """The text of a Gemini turn's parts: text parts, and what a ``functionResponse`` reports."""
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else ():
        if isinstance(_dict(part).get("text"), str):
            texts.append(part["text"])
        response = _dict(_field(part, "functionResponse")).get("response")
        if isinstance(response, dict):
            said = response.get("error", response.get("output", response))
            texts.append(said if isinstance(said, str) else json.dumps(said))
    return "\n".join(texts)


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the emulator received it (also rejected ones), with vendor-aware accessors.

    Attributes:
        api: ``"chat"`` (OpenAI Chat Completions), ``"responses"`` (OpenAI Responses) or ``"messages"``
            (Anthropic Messages).
        path: the request path, e.g. ``"/v1/chat/completions"``.
        headers: request headers with lower-case names.
        body: the parsed JSON body.
        platform: the cloud platform serving the Messages API on this route (``"bedrock"``, ``"vertex"``), else
            ``None``; there the model is named in the path (``path_model``), and on Bedrock the path asks for a
            stream (``path_stream``).
    """

    api: Api
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    platform: str | None = None
    path_model: str | None = None
    path_stream: bool = False

    @property
    def model(self) -> str | None:
        """The ``model`` the request named (in the body, or in the path on a cloud platform)."""
        value = self.body.get("model", self.path_model)
        return value if isinstance(value, str) else None

    @property
    def stream(self) -> bool:
        """Whether the request asked for a stream (``"stream": true``, or a streaming platform path)."""
        return self.body.get("stream") is True or self.path_stream

    @property
    def generation_config(self) -> dict[str, Any]:
        """Gemini's ``generationConfig`` (empty for the other APIs)."""
        return _dict(_field(self.body, "generationConfig")) if self.api == "gemini" else {}

    @property
    def max_tokens(self) -> int | None:
        """The output-token cap: chat ``max_completion_tokens`` or ``max_tokens``; responses
        ``max_output_tokens``; messages ``max_tokens``."""
        if self.api == "chat":
            value = self.body.get("max_completion_tokens", self.body.get("max_tokens"))
        elif self.api == "responses":
            value = self.body.get("max_output_tokens")
        elif self.api == "gemini":
            value = _field(self.generation_config, "maxOutputTokens")
        else:
            value = self.body.get("max_tokens")
        return value if isinstance(value, int) else None

    @property
    def temperature(self) -> float | None:
        """The sampling ``temperature``, if the request set one."""
        value = self.generation_config.get("temperature") if self.api == "gemini" else self.body.get("temperature")
        return float(value) if isinstance(value, int | float) else None

    @property
    def tools(self) -> list[dict[str, Any]]:
        """Function tools, normalised to ``{"name", "schema", "strict"}`` whatever the API's shape."""
        found: list[dict[str, Any]] = []
        for tool in self.body.get("tools") or []:
            if not isinstance(tool, dict):
                continue
            if self.api == "gemini":  # a Tool holds function declarations (no strict flag)
                for function in _field(tool, "functionDeclarations") or []:
                    schema = _field(function, "parametersJsonSchema")
                    found.append({"name": _dict(function).get("name"),
                                  "schema": schema if schema is not None else _dict(function).get("parameters"),
                                  "strict": None})
            elif self.api == "chat":
                if tool.get("type") != "function":
                    continue
                function = _dict(tool.get("function"))
                found.append(
                    {
                        "name": function.get("name"),
                        "schema": function.get("parameters"),
                        "strict": function.get("strict"),
                    }
                )
            elif self.api == "responses":
                if tool.get("type") != "function":
                    continue
                found.append({"name": tool.get("name"), "schema": tool.get("parameters"), "strict": tool.get("strict")})
            elif "input_schema" in tool:
                found.append(
                    {"name": tool.get("name"), "schema": tool.get("input_schema"), "strict": tool.get("strict")}
                )
        return found

    @property
    def forced_tool(self) -> str | None:
        """Name of the tool that ``tool_choice`` forces, else ``None``.

        Chat ``{"type": "function", "function": {"name"}}``, Responses ``{"type": "function", "name"}`` and
        Anthropic ``{"type": "tool", "name"}`` name it; ``"required"`` (OpenAI) or ``{"type": "any"}``
        (Anthropic) force it too when exactly one function tool is offered.
        """
        names: list[str] = [tool["name"] for tool in self.tools if isinstance(tool.get("name"), str)]
        if self.api == "gemini":  # toolConfig.functionCallingConfig mode ANY, one allowed (or one offered) function
            calling = _dict(_field(_field(self.body, "toolConfig"), "functionCallingConfig"))
            allowed = _field(calling, "allowedFunctionNames")
            allowed = allowed if isinstance(allowed, list) else names
            if calling.get("mode") == "ANY" and len(allowed) == 1 and isinstance(allowed[0], str):
                return str(allowed[0])
            return None
        choice = self.body.get("tool_choice")
        if isinstance(choice, dict):
            kind = choice.get("type")
            name: Any = None
            if self.api == "chat" and kind == "function":
                name = _dict(choice.get("function")).get("name")
            elif (self.api == "responses" and kind == "function") or (self.api == "messages" and kind == "tool"):
                name = choice.get("name")
            elif self.api == "messages" and kind == "any" and len(names) == 1:
                name = names[0]
            return name if isinstance(name, str) else None
        if choice == "required" and self.api != "messages" and len(names) == 1:
            return names[0]
        return None

    @property
    def output_format(self) -> dict[str, Any] | None:
        """The native structured-output format object: chat ``response_format``, responses ``text.format``,
        Anthropic ``output_config.format``; ``None`` when absent."""
        if self.api == "gemini":  # responseMimeType JSON with a schema, or without one (JSON mode)
            config = self.generation_config
            if _field(config, "responseMimeType") != "application/json":
                return None
            schema = _field(config, "responseJsonSchema")
            if schema is None:
                schema = _field(config, "responseSchema")
            return {"type": "json_object"} if schema is None else {"type": "json_schema", "schema": schema}
        if self.api == "chat":
            value = self.body.get("response_format")
        elif self.api == "responses":
            value = _dict(self.body.get("text")).get("format")
        else:
            value = _dict(self.body.get("output_config")).get("format")
        return value if isinstance(value, dict) else None

    @property
    def schema(self) -> dict[str, Any] | None:
        """The JSON schema sent for structured output: the native format's schema, else the forced tool's
        parameters / input_schema, else ``None``."""
        fmt = self.output_format
        if fmt is not None and fmt.get("type") == "json_schema":
            holder = _dict(fmt.get("json_schema")) if self.api == "chat" else fmt
            schema = holder.get("schema")
            if isinstance(schema, dict):
                return schema
        forced = self.forced_tool
        for tool in self.tools:
            if tool["name"] == forced and isinstance(tool["schema"], dict):
                return dict(tool["schema"])
        return None

    @property
    def text_constraint(self) -> dict[str, str] | None:
        """The regex or grammar a self-hosted server was asked to decode under, read from whichever server's
        field carries it: vLLM ``structured_outputs.regex``/``.grammar`` (and the older ``guided_regex``/
        ``guided_grammar``), SGLang ``regex``/``ebnf``, llama.cpp ``grammar``. ``{"field", "kind", "value"}``
        (``kind``: ``"regex"`` or ``"grammar"``; ``field`` the body path that held it), else ``None``. Fields of
        another server are read alike: which one was sent is what the test asserts."""
        if self.api != "chat":
            return None
        outputs = _dict(self.body.get("structured_outputs"))
        found = [(f"structured_outputs.{key}", kind, outputs.get(key)) for key, kind in (("regex", "regex"),
                                                                                          ("grammar", "grammar"))]
        found += [(key, kind, self.body.get(key)) for key, kind in (
            ("guided_regex", "regex"), ("guided_grammar", "grammar"), ("regex", "regex"), ("ebnf", "grammar"),
            ("grammar", "grammar"))]
        for field, kind, value in found:
            if isinstance(value, str):
                return {"field": field, "kind": kind, "value": value}
        return None

    @property
    def mode_fields(self) -> dict[str, Any]:
        """A small summary of how structured output was requested, for asserting on the mode in one go.

        Keys: ``format`` (the native format's ``type``: ``"json_schema"``, ``"json_object"``, ``"text"`` or
        ``None``), ``strict`` (the native format's strict flag; always True for Anthropic json_schema),
        ``tools`` (names of the function tools offered), ``forced_tool``, ``strict_tools`` (names of tools with
        strict true), ``parallel_tool_calls`` (OpenAI's flag, or the negation of Anthropic's
        ``disable_parallel_tool_use``; ``None`` when unset), ``stream``.
        """
        fmt = self.output_format or {}
        if self.api == "chat":
            strict = _dict(fmt.get("json_schema")).get("strict")
        elif self.api == "responses":
            strict = fmt.get("strict")
        else:
            strict = True if fmt.get("type") == "json_schema" else None
        if self.api == "messages":
            disable = _dict(self.body.get("tool_choice")).get("disable_parallel_tool_use")
            parallel = None if disable is None else not disable
        else:
            parallel = self.body.get("parallel_tool_calls")
        return {
            "format": fmt.get("type"),
            "strict": strict,
            "tools": [tool["name"] for tool in self.tools],
            "forced_tool": self.forced_tool,
            "strict_tools": [tool["name"] for tool in self.tools if tool["strict"] is True],
            "parallel_tool_calls": parallel,
            "stream": self.stream,
        }

    @property
    def system(self) -> str:
        """System text: Anthropic ``system``, Responses ``instructions``, or chat system/developer messages."""
        if self.api == "messages":
            return text_of(self.body.get("system"))
        if self.api == "gemini":
            instruction = _field(self.body, "systemInstruction")
            return _gemini_text(_dict(instruction).get("parts")) if isinstance(instruction, dict) \
                else text_of(instruction)
        if self.api == "responses":
            return text_of(self.body.get("instructions"))
        return "\n".join(text_of(m.get("content")) for m in self.messages if m.get("role") in ("system", "developer"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation as a list of dicts: chat ``messages``, responses ``input`` (a string becomes one
        user message), Anthropic ``messages``. Items are the request's own dicts (do not mutate them)."""
        if self.api == "gemini":  # contents as {"role": "user" | "assistant", "content": their text}
            return [{"role": "assistant" if turn.get("role") == "model" else "user",
                     "content": _gemini_text(turn.get("parts"))}
                    for turn in self.body.get("contents") or [] if isinstance(turn, dict)]
        if self.api == "responses":
            value = self.body.get("input")
            if isinstance(value, str):
                return [{"role": "user", "content": value}]
        else:
            value = self.body.get("messages")
        return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []

    @property
    def last_user_text(self) -> str:
        """Text of the last user message, tool result (chat ``role: tool``, Anthropic ``tool_result``) or
        Responses ``function_call_output`` item; where a repair loop's feedback would be. ``""`` if none."""
        for item in reversed(self.messages):
            if item.get("type") == "function_call_output":
                return text_of(item.get("output"))
            if item.get("role") in ("user", "tool"):
                return text_of(item.get("content"))
        return ""

    @property
    def conversation_text(self) -> str:
        """System text and the text of every message, joined by newlines (no schema)."""
        # Chat's system text is already among the messages.
        parts = [] if self.api == "chat" else [self.system]
        parts.extend(text_of(m) for m in self.messages)
        return "\n".join(part for part in parts if part)

    @property
    def prompt_text(self) -> str:
        """Everything the usage estimate counts as input: system, message texts and the schema's JSON."""
        schema = self.schema
        parts = [self.conversation_text, json.dumps(schema, sort_keys=True) if schema is not None else ""]
        return "\n".join(part for part in parts if part)
