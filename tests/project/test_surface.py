"""The public surface is pinned: a change to any package's ``__all__`` is a conscious one, made here too.

``PINNED`` lists, as literal sorted lists, the ``__all__`` of every package of guardrail and of the three root
modules users import from (``errors``, ``outcome``, ``contract``). Every pinned name must resolve (lazy namespaces
load it on first read), every package must be pinned (a new package adds its list here), the top-level namespace
stays at most 46 names, and at most 12 modules sit at the package root.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path

import pytest

import guardrail

ROOT = Path(guardrail.__file__).parent
MODULES = ("guardrail.contract", "guardrail.errors", "guardrail.outcome")
#: Exported names that are meant to be the submodule of that name.
SUBMODULES_EXPORTED = {"guardrail.testing": ("reply",)}

PINNED: dict[str, list[str]] = {
    "guardrail": [
        "ApprovalRequired",
        "Budget",
        "BudgetExceeded",
        "Cache",
        "Canary",
        "Chain",
        "Config",
        "Declined",
        "Denied",
        "GaveUp",
        "GuardrailError",
        "Identity",
        "JsonSchema",
        "ParseError",
        "Refused",
        "Result",
        "RetryPolicy",
        "Rule",
        "SchemaViolationError",
        "SemanticRejected",
        "Settings",
        "Tool",
        "ToolRegistry",
        "TruncatedJSONError",
        "Usage",
        "VendorError",
        "VendorUnavailable",
        "Violation",
        "__version__",
        "achoose",
        "approve",
        "choose",
        "configure",
        "execute_tool_call",
        "execute_tool_calls",
        "identity",
        "load_policies",
        "load_policy",
        "parse",
        "parse_report",
        "reject",
        "rule",
        "run_tool_call",
        "structured",
        "tool",
        "wrap",
    ],
    "guardrail.batch": [
        "AsyncJob",
        "BatchItemFailed",
        "BatchJobError",
        "JOB_TTL",
        "Job",
        "JobStatus",
        "LIVE_THRESHOLD",
        "aresume",
        "asubmit",
        "resume",
        "submit",
    ],
    "guardrail.call": [
        "AsyncItemStream",
        "AsyncStructuredMethod",
        "AsyncStructuredStream",
        "Cache",
        "ChunkedResult",
        "Chunking",
        "Config",
        "ItemStream",
        "RawStructured",
        "RetryPolicy",
        "Settings",
        "StructuredFunction",
        "StructuredMethod",
        "StructuredStream",
        "WrappedClient",
        "configure",
        "get_config",
        "reset_config",
        "structured",
        "wrap",
    ],
    "guardrail.canary": [
        "Canary",
        "CanaryStatus",
        "Tally",
        "Verdict",
        "decide",
    ],
    "guardrail.chain": [
        "Chain",
        "ChainExhausted",
        "ChainResult",
        "CircuitBreaker",
        "Departure",
        "SharedCircuitBreaker",
        "Tier",
        "local",
        "rule_engine",
        "safe_default",
        "vendor",
    ],
    "guardrail.chain.fallback": [
        "Condition",
        "Derived",
        "FallbackRule",
        "Fired",
        "MAX_RULES_BYTES",
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
    ],
    "guardrail.cli": [
        "main",
    ],
    "guardrail.contract": [
        "Contract",
        "ExactValidator",
        "VALIDATION_CONTEXT",
        "compile_contract",
        "validation_context",
    ],
    "guardrail.errors": [
        "AmbiguousError",
        "ApprovalRequired",
        "BatchFailed",
        "BatchItemFailed",
        "BatchJobError",
        "BudgetExceeded",
        "CalibrationError",
        "CallError",
        "ChainExhausted",
        "ChunkRejected",
        "ChunkingFailed",
        "ChunksExhausted",
        "CommandError",
        "CommandLineError",
        "ConfigError",
        "ConnectionDenied",
        "ContractError",
        "DeadEnd",
        "DeadlineExceeded",
        "Declined",
        "Denied",
        "GaveUp",
        "GrammarError",
        "GuardrailError",
        "IdempotencyConflict",
        "IdempotencyError",
        "IdempotencyFailed",
        "IdempotencyInFlight",
        "IdempotencyUnknown",
        "InputLimitError",
        "InvalidExample",
        "JSONSyntaxError",
        "LogprobsUnavailable",
        "MissingExtra",
        "NoJSONError",
        "NoOptionMatched",
        "NotReady",
        "NothingHappened",
        "OutputTruncated",
        "ParseError",
        "ParseErrorKind",
        "PathRejected",
        "PolicyError",
        "PriceUnknown",
        "ReasoningFailed",
        "Refused",
        "Rejected",
        "ResultNotStorable",
        "RuleError",
        "RuleSetError",
        "SchemaViolationError",
        "SemanticRejected",
        "SemanticViolation",
        "StoreError",
        "StoreUnavailable",
        "SyncAsyncMismatch",
        "ToolCallError",
        "TruncatedJSONError",
        "Uncertain",
        "UnsupportedCall",
        "UsageError",
        "VendorError",
        "VendorUnavailable",
    ],
    "guardrail.evals": [
        "AUTO",
        "Case",
        "CaseResult",
        "build_report",
        "figures",
        "load_cases",
        "parse_cases",
        "read_state",
        "render_html",
        "run_matrix",
        "suggestions",
    ],
    "guardrail.gates": [
        "Rule",
        "Verdict",
        "evaluate",
        "exit_status",
        "implies",
        "in_range",
        "member_of",
        "non_empty",
        "relation",
        "rule",
    ],
    "guardrail.local": [
        "BatchFailed",
        "Calibration",
        "CalibrationError",
        "Choice",
        "DeadEnd",
        "Grammar",
        "GrammarError",
        "LocalModel",
        "LogprobBackend",
        "LogprobsUnavailable",
        "NoOptionMatched",
        "Regex",
        "Trace",
        "Uncertain",
        "achoose",
        "choose",
        "load_local_model",
    ],
    "guardrail.local.lowering": [],
    "guardrail.observe": [
        "EventLogger",
        "get_logger",
    ],
    "guardrail.outcome": [
        "Attempt",
        "Budget",
        "Outcome",
        "Partial",
        "Price",
        "Result",
        "Usage",
    ],
    "guardrail.parse": [
        "Candidate",
        "DEFAULT_STAGES",
        "Fix",
        "Limits",
        "ParseReport",
        "ParseState",
        "Stage",
        "Violation",
        "parse",
        "parse_report",
    ],
    "guardrail.replay": [
        "JsonlRecorder",
        "Judged",
        "RecordTo",
        "Recorder",
        "ReplayReport",
        "Replayed",
        "StoreRecorder",
        "judge_answer",
        "read_records",
        "replay",
    ],
    "guardrail.schema": [
        "CompileEntry",
        "CompileReport",
        "JsonSchema",
        "Lowered",
    ],
    "guardrail.store": [
        "Counter",
        "Idempotency",
        "IdempotencyConflict",
        "IdempotencyFailed",
        "IdempotencyInFlight",
        "IdempotencyUnknown",
        "ListSnapshot",
        "Lists",
        "MemoryStore",
        "NOT_EXECUTED",
        "NothingHappened",
        "RedisStore",
        "ResultNotStorable",
        "SQLiteStore",
        "Store",
        "StoreError",
        "StoreUnavailable",
        "VolatileRedisWarning",
    ],
    "guardrail.testing": [
        "EXHAUSTED",
        "Emulator",
        "FaultProfile",
        "RecordedRequest",
        "Reply",
        "Responder",
        "answer",
        "anthropic_strict_problems",
        "cut",
        "drop",
        "error",
        "example_instance",
        "html_page",
        "logprobs",
        "malformed_event",
        "not_json",
        "offline",
        "openai_strict_problems",
        "overloaded",
        "rate_limited",
        "raw",
        "refusal",
        "reply",
        "schema_rejected",
        "server_error",
        "stream_error",
        "text",
        "timeout",
        "tool_call",
        "truncated",
    ],
    "guardrail.tools": [
        "Decision",
        "Identity",
        "Policy",
        "PolicyError",
        "RunContext",
        "Tool",
        "ToolOutcome",
        "ToolRegistry",
        "ToolResult",
        "approve",
        "current_identity",
        "current_run",
        "execute_tool_call",
        "execute_tool_calls",
        "lists",
        "load_policies",
        "load_policy",
        "reject",
        "run_context",
        "run_tool_call",
        "tool",
    ],
    "guardrail.tools.policy": [
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
    ],
    "guardrail.vendors": [
        "Capabilities",
        "ChatCompletions",
        "Completion",
        "Endpoint",
        "Messages",
        "Mode",
        "Plan",
        "Profile",
        "Responses",
        "capabilities",
    ],
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_all_is_pinned(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), f"{name}.__all__ lists a name twice"
    assert sorted(exported) == PINNED[name], f"{name}.__all__ changed: update PINNED if the change is meant"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_every_exported_name_resolves(name: str) -> None:
    module = importlib.import_module(name)
    missing = [export for export in module.__all__ if not hasattr(module, export)]
    assert not missing, f"{name}.__all__ names what it does not have: {missing}"
    assert set(module.__all__) <= set(dir(module))


def test_no_exported_name_is_shadowed_by_a_submodule() -> None:
    """A package attribute named like one of its submodules turns into that module once the submodule is imported
    (``from guardrail.schema import lower`` would give the module ``guardrail.schema.lower``), unless the package
    binds it eagerly. With every submodule imported, each exported name is still what the package meant."""
    for info in pkgutil.walk_packages(guardrail.__path__, "guardrail."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    shadowed = []
    for name in PINNED:
        module = importlib.import_module(name)
        for export in module.__all__:
            value = getattr(module, export)
            submodule = importlib.util.find_spec(f"{name}.{export}") if hasattr(module, "__path__") else None
            if submodule is not None and getattr(value, "__name__", None) == f"{name}.{export}" \
                    and export not in SUBMODULES_EXPORTED.get(name, ()):
                shadowed.append(f"{name}.{export}")
    assert not shadowed, shadowed


def test_every_package_is_pinned() -> None:
    packages = {"guardrail"} | {info.name for info in pkgutil.walk_packages(guardrail.__path__, "guardrail.")
                                if info.ispkg}
    assert packages | set(MODULES) == set(PINNED)


def test_canary_is_reachable_from_the_top_level() -> None:
    """``guardrail.Canary`` (in the top-level ``__all__``, loaded lazily) is the canary package's."""
    from guardrail.canary import Canary

    assert guardrail.Canary is Canary


def test_the_top_level_namespace_is_small() -> None:
    assert len(guardrail.__all__) <= 46


def test_at_most_twelve_modules_at_the_package_root() -> None:
    root_modules = sorted(path.name for path in ROOT.glob("*.py"))
    assert len(root_modules) <= 12, root_modules
