"""The gate's steps around the policy's decision: the facts it reads, the decision, and the sealed checked value.

``read_current`` asks the tool's ``current`` hook for the values a ``changed`` condition compares with;
``authorize`` gathers the facts (the store's lists, the run's content, those current values) and lets
:func:`guardrail.tools.authz.authorize` decide (deny wins, default deny); ``seal_checked`` puts the checked values
into the argument model, so the tool receives exactly what the policy judged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from guardrail.errors import StoreError, UsageError
from guardrail.store.lists import lists_of
from guardrail.tools import authz
from guardrail.tools.arguments import canonical, checked_model, keywords
from guardrail.tools.policy.facts import Facts
from guardrail.tools.provenance import current_run
from guardrail.tools.state import NOT_ASKED, Deny, Fail, GateState, Verdict

__all__ = ["authorize", "read_current", "seal_checked"]


def read_current(state: GateState) -> Verdict | None:
    """The current values of the object the call changes (the tool's ``current`` hook, asked only when the policy
    says ``changed``); a hook that raises or answers something else than a mapping or ``None`` denies the call
    (rule ``current``)."""
    found = state.found()
    policy, model, _ = state.judged()
    if not policy.compares_current or found.current is None:
        return None
    try:
        current = found.current(keywords(model))
        if current is not None and not isinstance(current, Mapping):
            raise UsageError(f"current() returned {type(current).__name__}, not a mapping or None")
        state.current = None if current is None else canonical(dict(current))
    except Exception as error:  # the application's hook: fail closed, whatever it raised
        return Deny("current", f"the current-values hook failed: {type(error).__name__}", error=error)
    return None


def authorize(state: GateState) -> Verdict | None:
    """The policy's decision over the canonical arguments, with the facts of this call (see
    :mod:`guardrail.tools.authz`): denied with the rule that decided, or allowed with the checked arguments. A list
    that cannot be read decides nothing: the call fails (rule ``lists``) and nothing runs."""
    policy, _, arguments = state.judged()
    secret = policy.secret_args
    extra = {} if state.current is NOT_ASKED else {"current": state.current}
    facts = Facts(state.identity, lists=lists_of(state.store), run=current_run(), secret=secret, **extra)
    try:
        decision = authz.authorize(policy, state.found().name, arguments, state.identity, state.left_out, facts)
    except StoreError as error:
        return Fail("failed", error, rule="lists")
    state.decision = decision
    state.checked = json.loads(json.dumps(decision.arguments))  # as judged, whatever the tool does with its values
    if not decision.allowed:
        return Deny(decision.rule, decision.reason, decision.argument)
    return None


def seal_checked(state: GateState) -> Verdict | None:
    """The argument model with the checked values in place (the resolved path, the normalised URL): from here on
    ``model`` and ``arguments`` are what the tool receives. A checked value the parameter's type would turn into
    something else denies the call (rule ``canonical``)."""
    _, model, arguments = state.judged()
    decision = state.decided()
    sealed = checked_model(state.found(), model, arguments, decision.arguments)
    if sealed is None:
        return Deny("canonical", "the checked value does not fit the parameter's type")
    state.model, state.arguments = sealed, decision.arguments
    return None
