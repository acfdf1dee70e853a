"""The package's layout holds: rules a reader can rely on, checked on the source itself."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "guardrail"

# -- wire formats live in guardrail/vendors/ only ---------------------------------------------------------------

#: Folders that speak vendor wire formats by design: the endpoints, and the emulator (its wire_*.py modules).
WIRE_FOLDERS = ("vendors", "testing")

#: Request and response fields of the vendor APIs (OpenAI Chat Completions and Responses, Anthropic Messages).
#: A string literal equal to one of them outside WIRE_FOLDERS means a module builds or reads a vendor's format.
#: Words with other everyday meanings (``model``, ``input``, ``text``, ``tools``, ``timeout``) are left out: the
#: fields that travel with them are caught instead.
WIRE_KEYS = frozenset({
    # requests: structured output, tools, limits, sampling, streaming, messages
    "response_format", "json_object", "output_config", "text.format", "output_config.format",
    "tool_choice", "parallel_tool_calls", "input_schema", "max_completion_tokens", "max_tokens", "max_output_tokens",
    "temperature", "stream", "stream_options", "logprobs", "top_logprobs", "role", "content",
    # responses: choices, finish/stop reasons, tool calls, refusals, usage
    "choices", "finish_reason", "stop_reason", "end_turn", "incomplete_details", "refusal", "tool_calls",
    "function_call", "function_call_output", "tool_use", "tool_result", "prompt_tokens", "completion_tokens",
    "input_tokens", "output_tokens",
})

#: (module, key) pairs that are not a vendor's field, each with the reason.
WIRE_KEYS_ALLOWED = {
    ("guardrail/contract.py", "choices"):
        "pydantic-core's core schema lists a union's members under 'choices'; walked to find the contract's types",
    ("guardrail/tools/policy/sql.py", "json_object"):
        "a SQL function name in the list of side-effect-free functions",
    ("guardrail/observe/metrics.py", "refusal"):
        "a value of guardrail's own guardrail.refusal.source attribute (a refusal vs the content filter)",
    ("guardrail/call/decorator.py", "max_tokens"):
        "guardrail's own @structured(max_tokens=) keyword, merged by name into Config.max_tokens",
    ("guardrail/evals/report.py", "input_tokens"):
        "a field of guardrail eval's own JSON report (the GenAI conventions' name for the tokens billed)",
    ("guardrail/evals/report.py", "output_tokens"):
        "a field of guardrail eval's own JSON report (the GenAI conventions' name for the tokens billed)",
    ("guardrail/cli/evaluate.py", "max_tokens"):
        "guardrail eval's run-wide budget in its report, named after guardrail.Budget's own max_tokens field",
    ("guardrail/local/calibration.py", "temperature"):
        "a kind of choose calibration (temperature scaling) and its field in guardrail's own calibration file",
    ("guardrail/cli/calibrate.py", "temperature"):
        "guardrail calibrate's --fit temperature (temperature scaling), not a sampling setting",
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions (prose, not code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _literals(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, value) of every string literal in a syntax tree, docstrings left out (comments are not in the
    tree at all)."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def _string_literals(outside: tuple[str, ...]) -> Iterator[tuple[str, int, str]]:
    """(module path, line, value) of every string literal in guardrail's source outside the given folders."""
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in outside:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, value in _literals(tree):
            yield f"guardrail/{relative.as_posix()}", line, value


def test_wire_keys_only_in_vendors() -> None:
    """No module outside guardrail/vendors/ (and the emulator) builds or reads a vendor's request or response
    fields: each endpoint owns its format, everything else speaks guardrail's own types."""
    leaks = sorted(f"{module}:{line}: {value!r}" for module, line, value in _string_literals(WIRE_FOLDERS)
                   if value in WIRE_KEYS and (module, value) not in WIRE_KEYS_ALLOWED)
    assert leaks == [], "vendor wire keys outside guardrail/vendors/ (move the code into the endpoint):\n" + \
        "\n".join(leaks)


def test_wire_keys_allow_list_has_no_stale_entries() -> None:
    """Every allow-list entry is still needed: a fixed module must leave the list too."""
    seen = {(module, value) for module, _, value in _string_literals(WIRE_FOLDERS)}
    assert sorted(set(WIRE_KEYS_ALLOWED) - seen) == []


def test_wire_keys_scan_sees_a_leak() -> None:
    """The scan reads string literals, not prose: a key in a docstring or comment passes, one in code is found."""
    source = '"""Sets response_format."""\n# tool_choice\nrequest = {"tool_choice": "auto"}\n'
    found = [value for _, value in _literals(ast.parse(source)) if value in WIRE_KEYS]
    assert found == ["tool_choice"]


# -- the layers point one way: vendors/ never reaches up into call/ ----------------------------------------------

def _imported_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) of every import in a syntax tree, those under ``if TYPE_CHECKING:`` and inside functions
    included (a lazy import is still a dependency)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def test_vendors_import_nothing_from_call() -> None:
    """Endpoints, capability profiles and plans sit below the call path: a vendor module that imported
    ``guardrail.call`` would make the layering run backwards (and invite import cycles)."""
    upward = sorted(f"guardrail/vendors/{path.relative_to(PACKAGE / 'vendors').as_posix()}:{line}: {module}"
                    for path in (PACKAGE / "vendors").rglob("*.py")
                    for line, module in _imported_modules(ast.parse(path.read_text(encoding="utf-8")))
                    if module == "guardrail.call" or module.startswith("guardrail.call."))
    assert upward == []


def test_import_scan_sees_lazy_and_type_checking_imports() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from guardrail.call.engine import Call\n"
              "def f():\n    import guardrail.call.retry\n")
    assert [module for _, module in _imported_modules(ast.parse(source))] == [
        "typing", "guardrail.call.engine", "guardrail.call.retry"]
