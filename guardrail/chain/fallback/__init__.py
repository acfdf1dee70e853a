"""The rule engine: the deterministic, model-free last tier of guardrail's degradation chain.

When every LLM tier fails, a rule set (``fallbacks/*.toml``) builds a value of the same contract from the call's
inputs with keywords, RE2 patterns, defaults and derived fields, or with a registered Python function, and says
which rules fired. See :mod:`guardrail.chain.fallback.model` for the file format.

    rule_set = load_rule_set("fallbacks/ticket_triage.toml")
    value, fired = RuleEngine(rule_set).run({"inquiry": "..."}, Ticket)
"""

from guardrail.chain.fallback.engine import (
    MAX_RULES_BYTES,
    Fired,
    RuleEngine,
    check_rule_sets,
    load_rule_set,
    rules_check,
)
from guardrail.chain.fallback.functions import (
    RuleFunction,
    get_rule_function,
    registered_functions,
    rule_function,
    segment_transcript,
)
from guardrail.chain.fallback.model import (
    Condition,
    Derived,
    FallbackRule,
    Problem,
    RuleSet,
    RuleSetError,
    parse_rule_set,
)

__all__ = [
    "MAX_RULES_BYTES",
    "Condition",
    "Derived",
    "FallbackRule",
    "Fired",
    "Problem",
    "RuleEngine",
    "RuleFunction",
    "RuleSet",
    "RuleSetError",
    "check_rule_sets",
    "get_rule_function",
    "load_rule_set",
    "parse_rule_set",
    "registered_functions",
    "rule_function",
    "rules_check",
    "segment_transcript",
]
