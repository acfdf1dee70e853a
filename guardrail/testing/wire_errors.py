"""HTTP error answers in each vendor's body shape, and the request checks that produce them.

OpenAI: ``{"error": {"message", "type", "param", "code"}}`` with an ``x-request-id`` header. Anthropic:
``{"type": "error", "error": {"type", "message"[, "details": {"error_code"}]}, "request_id"}`` with a
``request-id`` header; the anthropic SDK picks its exception class from the status and
``error.details.error_code``.
"""

from __future__ import annotations

import re
from typing import Any

from guardrail.testing.behaviours import Reply
from guardrail.testing.recording import RecordedRequest
from guardrail.testing.rendering import new_id
from guardrail.testing.strictness import anthropic_strict_problems, gemini_schema_problems, openai_strict_problems
from guardrail.testing.wire_gemini import gemini_error

__all__ = ["ErrorAnswer", "check_request", "error_answer", "openai_stream_error_type"]

#: ``(status, body, headers)`` ready to send.
ErrorAnswer = tuple[int, dict[str, Any], list[tuple[str, str]]]

_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    422: "invalid_request_error",
    429: "requests",
}
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_CHAT_JSON_MODE = (
    "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
)
_RESPONSES_JSON_MODE = (
    "Response input messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'."
)


def openai_stream_error_type(error_type: str | None) -> str:
    """The OpenAI type/code for a mid-stream failure (Anthropic's ``overloaded_error`` reads ``server_error``)."""
    return "server_error" if error_type in (None, "overloaded_error", "api_error") else str(error_type)


def _openai_parts(reply: Reply, request: RecordedRequest) -> tuple[int, str, str | None, str, str | None]:
    """``(status, type, code, message, param)`` for an OpenAI endpoint."""
    model = request.model or "the model"
    if reply.variant == "schema_rejected":
        fmt = request.output_format or {}
        if fmt.get("type") == "json_schema" or not request.tools:
            param = "response_format" if request.api == "chat" else "text.format.schema"
            message = reply.message or "Invalid schema for response_format: the schema is not supported."
            return 400, "invalid_request_error", "invalid_json_schema", message, param
        param = "tools[0].function.parameters" if request.api == "chat" else "tools[0].parameters"
        message = reply.message or f"Invalid schema for function '{request.tools[0]['name']}'."
        return 400, "invalid_request_error", "invalid_function_parameters", message, param
    if reply.variant == "rate_limited":
        message = (
            f"Rate limit reached for {model} in organization org-emulator on requests per min (RPM): "
            "Limit 3, Used 3, Requested 1. Please try again in 20s."
        )
        return 429, "requests", "rate_limit_exceeded", message, None
    if reply.variant == "spend_limit":
        message = (
            "You exceeded your current quota, please check your plan and billing details. For more information "
            "on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."
        )
        return 429, "insufficient_quota", "insufficient_quota", message, None
    if reply.variant == "server_error":
        message = reply.message or "The server had an error while processing your request. Sorry about that!"
        return reply.status, "server_error", None, message, None
    if reply.variant == "overloaded":
        return 503, "server_error", None, "The engine is currently overloaded, please try again later.", None
    default = _OPENAI_TYPES.get(reply.status, "server_error" if reply.status >= 500 else "invalid_request_error")
    return reply.status, reply.error_type or default, reply.code, reply.message, reply.param


def _anthropic_parts(reply: Reply, request: RecordedRequest) -> tuple[int, str, str | None, str]:
    """``(status, type, details.error_code, message)`` for the Anthropic endpoint."""
    if reply.variant == "schema_rejected":
        where = "output_config.format.schema" if request.output_format else "tools.0.custom.input_schema"
        return 400, "invalid_request_error", None, reply.message or f"{where}: The provided schema is not supported."
    if reply.variant == "rate_limited":
        message = (
            "This request would exceed the rate limit for your organization (org-emulator) of 50 requests per "
            "minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."
        )
        return 429, "rate_limit_error", None, message
    if reply.variant == "spend_limit":
        message = "You have reached your specified API usage limits. You will regain access on 2030-01-01."
        return 429, "rate_limit_error", "enforced_spend_limit_reached", message
    if reply.variant == "server_error":
        return reply.status, "api_error", None, reply.message or "Internal server error"
    if reply.variant == "overloaded":
        return 529, "overloaded_error", None, "Overloaded"
    default = _ANTHROPIC_TYPES.get(reply.status, "api_error" if reply.status >= 500 else "invalid_request_error")
    return reply.status, reply.error_type or default, reply.code, reply.message


def _gemini_parts(reply: Reply, request: RecordedRequest) -> tuple[int, str, list[dict[str, Any]] | None]:
    """``(status, message, details)`` for the Gemini endpoint (Google's error shape)."""
    if reply.variant == "schema_rejected":
        where = "generation_config.response_json_schema" if request.output_format else \
            "tools[0].function_declarations[0].parameters_json_schema"
        return 400, reply.message or f"* GenerateContentRequest.{where}: the schema is not supported.", None
    if reply.variant == "rate_limited":
        wait = next((value for name, value in reply.headers if name == "retry-after"), None)
        details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{wait}s"}] if wait else None
        return 429, "Resource has been exhausted (e.g. check quota).", details
    if reply.variant == "spend_limit":
        return 403, "Your project has been denied access: billing is disabled for this project.", None
    if reply.variant == "server_error":
        return reply.status, reply.message or "An internal error has occurred.", None
    if reply.variant == "overloaded":
        return 503, "The model is overloaded. Please try again later.", None
    return reply.status, reply.message, None


def error_answer(reply: Reply, request: RecordedRequest) -> ErrorAnswer:
    """The status, body and headers of an error behaviour on ``request``'s endpoint."""
    headers = list(reply.headers)
    if request.api == "gemini":
        status, message, details = _gemini_parts(reply, request)
        return status, gemini_error(status, message, details), headers
    if request.api == "messages":
        status, kind, error_code, message = _anthropic_parts(reply, request)
        error: dict[str, Any] = {"type": kind, "message": message}
        if error_code is not None:
            error["details"] = {"error_code": error_code}
        request_id = new_id("req_")
        headers.append(("request-id", request_id))
        return status, {"type": "error", "error": error, "request_id": request_id}, headers
    status, kind, code, message, param = _openai_parts(reply, request)
    headers.append(("x-request-id", new_id("req_")))
    return status, {"error": {"message": message, "type": kind, "param": param, "code": code}}, headers


def _reject(message: str, *, code: str | None, param: str | None) -> Reply:
    return Reply(kind="error", status=400, error_type="invalid_request_error", code=code, message=message, param=param)


def _mentions_json(request: RecordedRequest) -> bool:
    return re.search("json", request.conversation_text, re.IGNORECASE) is not None


def check_request(request: RecordedRequest) -> Reply | None:
    """The 400 a vendor would give this request for its schema or JSON mode, or ``None`` if it passes.

    Checked: OpenAI strict ``json_schema`` formats (``invalid_json_schema``) and strict function tools
    (``invalid_function_parameters``); Anthropic ``output_config.format`` (always strict) and strict tools;
    OpenAI JSON mode (``json_object``) without the word "JSON" anywhere in the messages or instructions.
    """
    fmt = request.output_format or {}
    if request.api == "gemini":
        return _gemini_check(request, fmt)
    if request.api == "messages":
        schemas: list[tuple[str, Any]] = []
        if fmt.get("type") == "json_schema":
            schemas.append(("output_config.format.schema", fmt.get("schema")))
        for index, tool in enumerate(request.tools):
            if tool["strict"] is True:
                schemas.append((f"tools.{index}.custom.input_schema", tool["schema"]))
        for where, schema in schemas:
            problems = anthropic_strict_problems(schema if isinstance(schema, dict) else {})
            if problems:
                return _reject(f"{where}: Schema is not supported: " + "; ".join(problems), code=None, param=None)
        return None
    if fmt.get("type") == "json_schema":
        holder = fmt.get("json_schema") if request.api == "chat" else fmt
        holder = holder if isinstance(holder, dict) else {}
        if holder.get("strict") is True:
            schema = holder.get("schema")
            problems = openai_strict_problems(schema if isinstance(schema, dict) else {})
            if problems:
                name = holder.get("name", "")
                param = "response_format" if request.api == "chat" else "text.format.schema"
                message = f"Invalid schema for response_format '{name}': " + "; ".join(problems)
                return _reject(message, code="invalid_json_schema", param=param)
    for index, tool in enumerate(request.tools):
        # The Responses API treats a function tool without "strict" as strict.
        strict = tool["strict"] is True or (request.api == "responses" and "strict" not in _raw_tool(request, index))
        if strict:
            schema = tool["schema"]
            problems = openai_strict_problems(schema if isinstance(schema, dict) else {})
            if problems:
                param = f"tools[{index}].function.parameters" if request.api == "chat" else f"tools[{index}].parameters"
                message = f"Invalid schema for function '{tool['name']}': " + "; ".join(problems)
                return _reject(message, code="invalid_function_parameters", param=param)
    if fmt.get("type") == "json_object" and not _mentions_json(request):
        if request.api == "chat":
            return _reject(_CHAT_JSON_MODE, code=None, param="messages")
        return _reject(_RESPONSES_JSON_MODE, code=None, param="input")
    return None


def _gemini_check(request: RecordedRequest, fmt: dict[str, Any]) -> Reply | None:
    """Gemini's 400s: a ``response_json_schema`` outside the documented keywords, and (Gemini 3) a replayed
    function call without its thought signature (a model turn's ``functionCall`` part must carry
    ``thoughtSignature`` back, Gemini's thought-signature docs)."""
    schema = fmt.get("schema")
    problems = gemini_schema_problems(schema) if isinstance(schema, dict) else []
    if problems:
        message = "* GenerateContentRequest.generation_config.response_json_schema: " + "; ".join(problems)
        return _reject(message, code=None, param=None)
    if not (request.model or "").startswith("gemini-3"):
        return None
    for index, turn in enumerate(request.body.get("contents") or []):
        parts = turn.get("parts") if isinstance(turn, dict) and turn.get("role") == "model" else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and ("functionCall" in part or "function_call" in part) and not (
                    part.get("thoughtSignature") or part.get("thought_signature")):
                return _reject(f"Function call is missing a thought_signature in functionCall parts (content "
                               f"{index}). This is required for tools to work correctly.", code=None, param=None)
    return None


def _raw_tool(request: RecordedRequest, index: int) -> dict[str, Any]:
    tools = [t for t in request.body.get("tools") or [] if isinstance(t, dict) and t.get("type") == "function"]
    return tools[index] if index < len(tools) else {}
