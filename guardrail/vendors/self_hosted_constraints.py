"""Constraints beyond JSON on OpenAI-compatible self-hosted servers: a regex or a grammar, in each server's fields.

``client.chat.completions.create(..., response_model=guardrail.local.Regex(r"..."))`` (or ``Grammar(text)``) on a
client wrapped with ``server=`` asks the server to decode under the constraint with its own request fields, and
the answer **text** is the value, checked against the constraint afterwards whatever the server did
(:mod:`guardrail.call.text_constraints`): a text that does not match is re-asked, never returned.

=========  ===============================================  ===============================================
server     Regex                                            Grammar
=========  ===============================================  ===============================================
vllm       ``structured_outputs: {"regex": pattern}``       ``structured_outputs: {"grammar": text}`` (vLLM
                                                            >= 0.12; ``guided_regex``/``guided_grammar`` were
                                                            removed; EBNF/GBNF or Lark, as its backend reads)
sglang     ``regex: pattern``                               ``ebnf: text`` (GBNF-style ``::=`` rules only; a
                                                            Lark grammar is post-checked only)
llamacpp   not taken (no regex field): post-checked only    ``grammar: text`` (GBNF only; Lark: post-checked)
ollama     not taken (``format`` is JSON or a JSON Schema   not taken: post-checked only
           only): post-checked only
=========  ===============================================  ===============================================

Every field travels in ``extra_body`` (the openai SDK does not know them). Where the server takes the
constraint the call's plans are the ``native`` mode (these fields and the constraint stated in the system
prompt, as for a JSON Schema) and then ``prompt`` (the words only); where it does not, and on every other
endpoint (OpenAI itself, Anthropic, Gemini), ``prompt`` only. The plan's compile report says which: one entry
(``pattern`` or ``grammar``) ``enforced`` by the server or ``post_validated`` by guardrail alone.
"""

from __future__ import annotations

from typing import Any

from guardrail.errors import ConfigError
from guardrail.schema.report import CompileEntry, CompileReport, Dialect
from guardrail.vendors.plans import Plan
from guardrail.vendors.profiles import Mode

__all__ = ["constraint_fields", "constraint_instruction", "constraint_plans"]

#: Where ``native_fields`` is asked about a constraint: the modes a text constraint can be asked in.
_TEXT_MODES: tuple[Mode, ...] = ("native", "prompt")


def _is_regex(constraint: Any) -> bool:
    return hasattr(constraint, "pattern")


def _gbnf(constraint: Any) -> bool:
    """Whether a grammar is GBNF-style (``name ::= ...`` rules), which SGLang and llama.cpp read."""
    syntax = getattr(constraint, "syntax", "auto")
    return syntax == "gbnf" or (syntax == "auto" and "::=" in constraint.text)


def constraint_fields(server: str | None, constraint: Any) -> dict[str, Any] | None:
    """The SDK keywords (an ``extra_body``) asking ``server`` to decode under ``constraint``; ``None`` where the
    server has no field for it (then the answer is checked after it arrives, only)."""
    if _is_regex(constraint):
        fields = {"vllm": {"structured_outputs": {"regex": constraint.pattern}},
                  "sglang": {"regex": constraint.pattern}}.get(server or "")
    elif server == "vllm":
        fields = {"structured_outputs": {"grammar": constraint.text}}
    elif server in ("sglang", "llamacpp") and _gbnf(constraint):
        fields = {"sglang": {"ebnf": constraint.text}, "llamacpp": {"grammar": constraint.text}}[server]
    else:
        fields = None
    return None if fields is None else {"extra_body": fields}


def constraint_instruction(constraint: Any) -> str:
    """The system-prompt text asking for a text of the constraint's language (every mode states it: a grammar
    decoder constrains the tokens but never shows the model what it is for)."""
    if _is_regex(constraint):
        return ("Reply with the text only, nothing before or after it: no quotes, no code fences, no JSON. The whole "
                f"text must match this regular expression:\n{constraint.pattern}")
    return ("Reply with the text only, nothing before or after it: no quotes, no code fences, no JSON. The whole "
            f"text must be a sentence of this grammar (its start rule):\n{constraint.text}")


def constraint_plans(server: str | None, constraint: Any, forced: Mode | None) -> tuple[Plan, ...]:
    """The plans for a text constraint on an endpoint of ``server`` (``None``: not a self-hosted one), strongest
    first (``forced`` keeps only that mode; ``ConfigError`` when it cannot carry a text constraint)."""
    keyword = "pattern" if _is_regex(constraint) else "grammar"
    if forced is not None and forced not in _TEXT_MODES:
        raise ConfigError(f"mode {forced!r} asks for JSON; a {keyword} constraint is asked in the native mode "
                          "(a self-hosted server's own field) or the prompt mode")
    fields = constraint_fields(server, constraint)
    out: list[Plan] = []
    if fields is not None and forced in (None, "native"):
        dialect: Dialect = "llamacpp" if server in ("llamacpp", "ollama") else server  # type: ignore[assignment]
        sent = ", ".join(f"{key}.{inner}" if isinstance(value, dict) else key
                         for key, value in fields["extra_body"].items() for inner in (value or {key: 0}))
        out.append(_plan("native", constraint, keyword, dialect, "enforced",
                         f"sent to {server} as {sent}; the answer is checked against it too"))
    if forced in (None, "prompt"):
        why = "no field of this server takes it" if server is not None else "only self-hosted servers take it"
        out.append(_plan("prompt", constraint, keyword, "advisory", "post_validated",
                         f"stated in the prompt ({why}); the answer is checked against it by guardrail"))
    if not out:
        raise ConfigError(f"mode 'native' is not available for a {keyword} constraint on "
                          f"{server or 'this vendor'}: no request field of it takes one (use mode='prompt')")
    return tuple(out)


def _plan(mode: Mode, constraint: Any, keyword: str, dialect: Dialect, action: Any, detail: str) -> Plan:
    report = CompileReport(dialect, (CompileEntry("", keyword, action, detail),), True)
    return Plan(mode, mode == "native", {"type": "string"}, report, None, False, keyword, constraint=constraint)
