"""Scripted-behaviour files: a JSON list of behaviours for ``guardrail emulator --script FILE``.

Each item is an object with one key, the name of a constructor in :mod:`guardrail.testing.reply`, whose
value is its first argument or an object of its keyword arguments; an optional ``"after"`` key delays it and
an optional ``"trickle"`` key (``{"every": seconds, "piece": bytes}``) trickles its body out slowly::

    [
      {"answer": "{\\"title\\": \\"x\\"}"},
      {"rate_limited": {"retry_after": 1}},
      {"truncated": "{\\"title\\": "},
      {"error": {"status": 400, "message": "bad request"}},
      {"timeout": {"seconds": 30}},
      {"drop": {}},
      {"answer": "{}", "after": 0.5},
      {"html_page": {"status": 200}},
      {"answer": "{}", "trickle": {"every": 0.2, "piece": 1}},
      {"logprobs": [{"billing": 0.8, "shipping": 0.2}]},
      {"logprobs": {"steps": [["yes", {"yes": 0.4, "no": 0.6}]], "truncated": true}}
    ]
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guardrail.errors import ConfigError
from guardrail.testing import behaviours
from guardrail.testing.behaviours import Reply

CONSTRUCTORS: dict[str, Callable[..., Reply]] = {
    name: getattr(behaviours, name)
    for name in ("answer", "text", "tool_call", "truncated", "refusal", "error", "schema_rejected", "rate_limited",
                 "server_error", "overloaded", "timeout", "drop", "stream_error", "logprobs", "raw", "html_page",
                 "not_json", "malformed_event", "cut")
}


def parse_script(items: Any) -> list[Reply]:
    """Behaviours from the decoded JSON of a script; ``ValueError`` naming the item that is wrong."""
    if not isinstance(items, list):
        raise ConfigError("a script is a JSON list of behaviours")
    out: list[Reply] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConfigError(f"item {index}: expected an object like {{\"answer\": \"...\"}}, got {item!r}")
        item = dict(item)
        delay = item.pop("after", 0)
        trickle = item.pop("trickle", None)
        if len(item) != 1 or next(iter(item)) not in CONSTRUCTORS:
            raise ConfigError(f"item {index}: expected one key out of {', '.join(CONSTRUCTORS)}; got {sorted(item)}")
        name, value = next(iter(item.items()))
        try:
            reply = CONSTRUCTORS[name](**value) if isinstance(value, dict) else CONSTRUCTORS[name](value)
        except TypeError as error:
            raise ConfigError(f"item {index} ({name}): {error}") from None
        if trickle is not None:
            if not isinstance(trickle, dict):
                raise ConfigError(f"item {index}: \"trickle\" takes an object like {{\"every\": 0.2, \"piece\": 1}}")
            try:
                reply = reply.trickled(**trickle)
            except (TypeError, ValueError) as error:
                raise ConfigError(f"item {index} (trickle): {error}") from None
        out.append(reply.after(float(delay)) if delay else reply)
    return out


def load_script(path: str | Path) -> list[Reply]:
    """Read and parse a script file (UTF-8 JSON)."""
    try:
        items = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not JSON: {error}") from None
    return parse_script(items)
