"""The behaviour constructors as one namespace: ``from guardrail.testing import reply; reply.answer("{}")``.

See :mod:`guardrail.testing.behaviours` for what each one does on each vendor's wire; its ``__all__`` is the
one list of the names this namespace (and ``guardrail.testing``) offers.
"""

from guardrail.testing import behaviours as _behaviours
from guardrail.testing.behaviours import *  # noqa: F403

__all__: list[str] = []
__all__ += _behaviours.__all__
