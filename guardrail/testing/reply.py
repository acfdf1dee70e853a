"""The behaviour constructors as one namespace: ``from guardrail.testing import reply; reply.answer("{}")``.

See :mod:`guardrail.testing.behaviours` for what each one does on each vendor's wire.
"""

from guardrail.testing.behaviours import (
    Reply,
    answer,
    cut,
    drop,
    error,
    html_page,
    logprobs,
    malformed_event,
    not_json,
    overloaded,
    rate_limited,
    raw,
    refusal,
    schema_rejected,
    server_error,
    stream_error,
    text,
    timeout,
    tool_call,
    truncated,
)

__all__ = [
    "Reply",
    "answer",
    "cut",
    "drop",
    "error",
    "html_page",
    "logprobs",
    "malformed_event",
    "not_json",
    "overloaded",
    "rate_limited",
    "raw",
    "refusal",
    "schema_rejected",
    "server_error",
    "stream_error",
    "text",
    "timeout",
    "tool_call",
    "truncated",
]
