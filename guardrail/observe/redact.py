"""Redaction: secrets never reach logs, spans or audit records.

``redact(value)`` returns a copy of any JSON-like value with secrets replaced by ``"[REDACTED]"``: values of
keys that name secrets (``api_key``, ``password``, ``token``, ``authorization``, ``secret``, ``cookie``...,
plus any key the caller passes, such as the arguments a policy marks ``secret``), and secret-looking strings
anywhere (OpenAI/Anthropic keys ``sk-...``, AWS access keys ``AKIA...``, ``Bearer`` tokens, JWTs, private key
blocks). ``redact_processor`` is the same as a structlog processor; guardrail's own audit records and span
contents always pass through it.

The patterns have no nested quantifiers, so they run in linear time on any text; strings longer than
``MAX_SCAN`` are scanned in full but at most ``MAX_DEPTH`` levels of nesting are walked (deeper is replaced).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from typing import Any

REDACTED = "[REDACTED]"
MAX_DEPTH = 32

_SECRET_NAMES = frozenset({"api_key", "apikey", "password", "passwd", "secret", "token", "authorization",
                           "auth", "cookie", "set_cookie", "session_id", "private_key", "access_key", "credential",
                           "credentials", "x_api_key", "secret_key", "client_secret", "access_token",
                           "refresh_token", "id_token", "auth_token", "bearer"})
_SECRET_SUFFIXES = ("_api_key", "_apikey", "_password", "_passwd", "_secret", "_token", "_private_key",
                    "_access_key", "_credential", "_credentials", "_session_id")
_SECRET_TEXT = re.compile(
    r"sk-[A-Za-z0-9_\-]{16,}"                                 # OpenAI / Anthropic style API keys
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"                             # AWS access key ids
    r"|(?i:bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*"                # bearer tokens
    r"|eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*"  # JWTs
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*-----END [A-Z ]*PRIVATE KEY-----"
    r"|xox[baprs]-[A-Za-z0-9\-]{10,}"                         # Slack tokens
    r"|gh[pousr]_[A-Za-z0-9]{20,}"                            # GitHub tokens
)


def redact_text(text: str) -> str:
    """``text`` with secret-looking substrings replaced."""
    return _SECRET_TEXT.sub(REDACTED, text)


def redact(value: Any, secret_keys: frozenset[str] = frozenset(), secret_values: tuple[str, ...] = (),
           _depth: int = 0) -> Any:
    """A copy of ``value`` with secrets replaced (see the module docstring); ``secret_values`` are known secret
    strings (the values of arguments a policy marks secret) removed wherever they appear."""
    if _depth > MAX_DEPTH:
        return REDACTED
    if isinstance(value, str):
        for known in secret_values:
            value = value.replace(known, REDACTED)
        return redact_text(value)
    if isinstance(value, Mapping):
        return {key: REDACTED if _is_secret_key(key, secret_keys) else
                redact(item, secret_keys, secret_values, _depth + 1) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [redact(item, secret_keys, secret_values, _depth + 1) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return redact(bytes(value).decode("utf-8", "replace"), secret_keys, secret_values, _depth)
    return value


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _is_secret_key(key: object, secret_keys: frozenset[str]) -> bool:
    """Whether a key names a secret: listed by the caller, or a known name/suffix (``max_tokens`` is not)."""
    if not isinstance(key, str):
        return False
    if key in secret_keys:
        return True
    name = _CAMEL.sub("_", key).lower().replace("-", "_")
    return name in _SECRET_NAMES or name.endswith(_SECRET_SUFFIXES)


def redact_processor(logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A structlog processor: put it before the renderer to redact every event (``event`` text included)."""
    return {key: REDACTED if key != "event" and _is_secret_key(key, frozenset()) else redact(item)
            for key, item in event_dict.items()}
