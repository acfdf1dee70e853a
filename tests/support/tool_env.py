"""Guarded tools one test at a time: a private registry and store (:class:`ToolEnv`, also the ``env``
fixture of ``tests/conftest.py``), the policy snippets most tests start from, and the audit records of a run."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from guardrail.store.base import Store
from guardrail.store.memory import MemoryStore
from guardrail.tools.execute import ToolRegistry, execute_tool_call, tool
from guardrail.tools.policy.loader import parse_policy

#: What a denied caller (and the model) is told, whatever the reason.
GENERIC = "This action is not permitted."
#: A policy's one allow rule: any identified caller.
OPEN = '[[allow]]\nid = "anyone"\n'
#: The same, behind a human approval.
APPROVAL = 'approval = "required"\n' + OPEN


class ToolEnv:
    """A private registry and store; ``add`` registers a function under a policy written as TOML text, ``call``
    runs a tool call through every gate (``execute_tool_call``) and ``calls`` lists what really ran."""

    def __init__(self, store: Store | None = None) -> None:
        self.registry = ToolRegistry()
        self.store: Store = store or MemoryStore()
        self.calls: list[tuple[str, Any]] = []
        self.lock = threading.Lock()

    def add(self, fn: Callable[..., Any], policy: str, *, name: str | None = None, **kwargs: Any) -> None:
        tool_name = name or fn.__name__
        text = policy if policy.lstrip().startswith("tool") else f'tool = "{tool_name}"\n{policy}'
        tool(name=tool_name, policy=parse_policy(text), registry=self.registry, **kwargs)(fn)

    def ran(self, name: str, value: Any) -> Any:
        """Record that a tool really ran; returns None (so ``lambda: env.ran(...) or result`` works)."""
        with self.lock:
            self.calls.append((name, value))

    def call(self, name: str, arguments: Any, **kwargs: Any) -> Any:
        return execute_tool_call(name, arguments, registry=self.registry, store=self.store, **kwargs)


def audits(logs: list[Any]) -> list[dict[str, Any]]:
    """The audit records among structlog's captured entries."""
    return [entry for entry in logs if entry.get("event") == "guardrail.audit"]
