"""``Rejected``: how an argument checker says no, with the reason and where in the arguments it looked.

The policy checkers (paths, URLs, SQL, the generic constraints) raise it; the authorization gate turns it into
a denial whose rule, argument path and reason reach the audit record and :class:`~guardrail.Denied`.
"""

from __future__ import annotations

from guardrail.errors import GuardrailError


class Rejected(GuardrailError):
    """A value breaks a constraint: ``.reason`` says why, ``.argument`` where (``urls[1]``, ``target.url``)."""

    def __init__(self, reason: str, argument: str = "") -> None:
        super().__init__(f"{argument}: {reason}" if argument else reason)
        self.reason = reason
        self.argument = argument

    def at(self, argument: str) -> Rejected:
        """The same rejection located at ``argument`` (kept when already located deeper)."""
        return self if self.argument else Rejected(self.reason, argument)


class PathRejected(Rejected, ValueError):
    """The path checker's no (:func:`~guardrail.tools.policy.paths.resolve_path`, ``check_path``): a
    :class:`Rejected` whose reason is the message, and also the ``ValueError`` those functions have always raised."""
