"""Per-tool policies: the model, the TOML loader and the argument checkers.

What a user imports: the policy model and loader, the argument kinds that mark a tool parameter as a path, URL or
SQL, the checkers themselves (each returns the canonical value the tool receives) and the guarded HTTP clients.
Names load on first use, so importing this package loads neither sqlglot nor httpx.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.errors import PolicyError, Rejected
    from guardrail.tools.policy.http import (
        AsyncGuardedTransport,
        GuardedTransport,
        guarded_async_client,
        guarded_client,
    )
    from guardrail.tools.policy.kinds import ArgKind, PathArg, SqlArg, UrlArg
    from guardrail.tools.policy.loader import (
        check_policies,
        load_policies,
        load_policy,
        parse_policy,
    )
    from guardrail.tools.policy.model import Policy
    from guardrail.tools.policy.paths import check_path, open_inside
    from guardrail.tools.policy.sql import check_sql
    from guardrail.tools.policy.urls import canonical_url, check_url

_NAMES: dict[str, str] = {
    "ArgKind": "guardrail.tools.policy.kinds",
    "AsyncGuardedTransport": "guardrail.tools.policy.http",
    "canonical_url": "guardrail.tools.policy.urls",
    "check_path": "guardrail.tools.policy.paths",
    "check_policies": "guardrail.tools.policy.loader",
    "check_sql": "guardrail.tools.policy.sql",
    "check_url": "guardrail.tools.policy.urls",
    "guarded_async_client": "guardrail.tools.policy.http",
    "guarded_client": "guardrail.tools.policy.http",
    "GuardedTransport": "guardrail.tools.policy.http",
    "load_policies": "guardrail.tools.policy.loader",
    "load_policy": "guardrail.tools.policy.loader",
    "open_inside": "guardrail.tools.policy.paths",
    "parse_policy": "guardrail.tools.policy.loader",
    "PathArg": "guardrail.tools.policy.kinds",
    "Policy": "guardrail.tools.policy.model",
    "PolicyError": "guardrail.errors",
    "Rejected": "guardrail.errors",
    "SqlArg": "guardrail.tools.policy.kinds",
    "UrlArg": "guardrail.tools.policy.kinds",
}

__all__ = [
    "ArgKind",
    "AsyncGuardedTransport",
    "GuardedTransport",
    "PathArg",
    "Policy",
    "PolicyError",
    "Rejected",
    "SqlArg",
    "UrlArg",
    "canonical_url",
    "check_path",
    "check_policies",
    "check_sql",
    "check_url",
    "guarded_async_client",
    "guarded_client",
    "load_policies",
    "load_policy",
    "open_inside",
    "parse_policy",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
