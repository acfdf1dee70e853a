"""Who is calling, as the trusted runtime says: the only source of identity for authorization decisions.

The application sets it around the work it does for a user (a web request, a job)::

    with guardrail.identity(tenant="acme", user="u-17", roles=["support"]):
        guardrail.execute_tool_call("refund_order", model_arguments)

It lives in a ``contextvars.ContextVar``, so it follows threads started with ``contextvars.copy_context`` and
asyncio tasks, and never leaks between concurrent requests. Nothing the model writes can set or change it: a
``tenant_id`` or ``roles`` in a tool call's arguments is just an argument and grants nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from guardrail.errors import UsageError

#: The key used for a caller with no identity at all (distinct from every identity's key).
ANONYMOUS = "anonymous"


def key_of(who: Identity | None) -> str:
    """The binding key of a caller (:attr:`Identity.key`, or :data:`ANONYMOUS`)."""
    return who.key if who is not None else ANONYMOUS


_current: ContextVar[Identity | None] = ContextVar("guardrail_identity", default=None)


@dataclass(frozen=True, slots=True)
class Identity:
    """A caller: tenant, user and roles, as established by the application's own authentication."""

    tenant: str | None = None
    user: str | None = None
    roles: frozenset[str] = frozenset()

    @property
    def key(self) -> str:
        """A stable, collision-free key for per-identity quotas and bindings.

        It is a digest of the JSON pair ``[tenant, user]``, so ``("a/b", "c")`` and ``("a", "b/c")`` or a user
        literally named ``"-"`` never share it with anyone else; :data:`ANONYMOUS` is the key of no identity.
        """
        pair = json.dumps([self.tenant, self.user], ensure_ascii=False)
        return "id:" + hashlib.sha256(pair.encode()).hexdigest()[:40]

    def as_dict(self) -> dict[str, object]:
        return {"tenant": self.tenant, "user": self.user, "roles": sorted(self.roles)}


@contextmanager
def identity(*, tenant: str | None = None, user: str | None = None,
             roles: Iterable[str] = ()) -> Iterator[Identity]:
    """Set the caller's identity for the code inside the ``with`` block (restored afterwards)."""
    if isinstance(roles, str):
        raise UsageError("roles must be a collection of role names, not one string")
    who = Identity(tenant, user, frozenset(roles))
    token = _current.set(who)
    try:
        yield who
    finally:
        _current.reset(token)


def current_identity() -> Identity | None:
    """The identity set by the innermost ``with guardrail.identity(...)``, or ``None`` (anonymous)."""
    return _current.get()
