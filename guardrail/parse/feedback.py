"""Messages written for the model: what is wrong, where (JSON path), and what is expected.

They go back to the model verbatim in a repair round, so they hold no documentation links, no Python
reprs of internal objects and no stack traces, and they stay short (at most ``MAX_LINES`` violations).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import ValidationError

from guardrail.parse.report import Violation, json_path

MAX_LINES: Final = 12

_REPHRASE: Final = {
    "missing": "this required field is missing",
    "extra_forbidden": "this field is not allowed; remove it",
    # guardrail re-encodes values as JSON before validating, so the only invalid JSON pydantic can see is
    # a string holding a lone UTF-16 surrogate escape; its line and column would point into our text.
    "json_invalid": "a string holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not a character",
}


def violations_from(error: ValidationError) -> list[Violation]:
    """Turn pydantic's errors into model-facing violations (path + message + the offending input)."""
    out: list[Violation] = []
    for item in error.errors(include_url=False, include_context=False):
        loc = [part for part in item["loc"] if isinstance(part, (str, int))]
        kind = item["type"]
        message = _REPHRASE.get(kind) or item["msg"]
        if kind not in _REPHRASE and "input" in item:
            message = f"{message} (got {_show(item['input'])})"
        out.append(Violation(json_path(loc), message))
    return out


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "an array"
    text = repr(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else (
        "null" if value is None else str(value))
    return text if len(text) <= 60 else text[:57] + "..."


def schema_feedback(violations: list[Violation]) -> str:
    """One precise list of what is wrong, for a repair round."""
    lines = [f"- {v.path}: {v.message}" for v in violations[:MAX_LINES]]
    if len(violations) > MAX_LINES:
        lines.append(f"- ... and {len(violations) - MAX_LINES} more")
    return "The JSON does not match the required schema:\n" + "\n".join(lines) + \
        "\nReply with the corrected JSON only."


def semantic_feedback(violations: list[Violation]) -> str:
    """The repair message for a valid answer that breaks semantic rules (same shape as schema feedback)."""
    lines = [f"- {v.path}: {v.message}" for v in violations[:MAX_LINES]]
    if len(violations) > MAX_LINES:
        lines.append(f"- ... and {len(violations) - MAX_LINES} more")
    return "The JSON is well-formed but wrong:\n" + "\n".join(lines) + "\nReply with the corrected JSON only."


def no_json_feedback(detail: str = "") -> str:
    """No JSON value could be read; ``detail`` says where the last attempt at one broke down."""
    extra = f" ({detail})" if detail else ""
    return f"No JSON value could be read from the reply{extra}. Reply with the JSON value only."


def syntax_feedback(detail: str) -> str:
    """The JSON broke at a position where no safe repair exists (``detail`` says what and where)."""
    return f"The JSON is malformed: {detail}. Reply with the complete, corrected JSON value only."


def truncated_feedback(path: str, offset: int) -> str:
    """The JSON stops inside ``path``, ``offset`` characters after it began."""
    return (f"The JSON stops before it is complete: it is cut off inside {path} after {offset} characters. "
            "Reply with the complete JSON; keep it shorter if needed.")


def field_conflict_feedback(path: str, message: str) -> str:
    """A field given twice (its name and a drifted name) with different values."""
    return f"At {path}: {message}."


def ambiguous_feedback(count: int) -> str:
    """Several different JSON values in the reply each satisfy the contract."""
    return (f"The reply contains {count} different JSON values that each match the schema. "
            "Reply with exactly one JSON value.")
