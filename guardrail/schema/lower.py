"""Schema lowering: rewrite a contract's JSON Schema into what one vendor mode accepts, with a report.

Before a structured-output request is sent, the schema pydantic generates must fit the chosen mode:

- ``openai_strict``: OpenAI chat ``response_format`` json_schema strict, Responses ``text.format`` strict,
  strict function tools (one subset). Object root, every property required (optional -> nullable),
  ``additionalProperties: false`` everywhere, no ``oneOf``/``allOf``/defaults, recursion allowed.
- ``anthropic_strict``: Anthropic ``output_config.format`` json_schema and strict tools. Object root,
  ``additionalProperties: false``, optional properties allowed, no recursion, no numeric/length bounds.
- ``gemini``: Gemini ``response_json_schema``. Object root, optional properties allowed, bounds on numbers and
  item counts kept, no string lengths/patterns, no recursion; ``const`` is sent as a one-value ``enum``.
- ``grammar``: a constrained decoder compiling (nearly) full JSON Schema (guardrail's local llguidance backend).
  Sent unchanged (but for the words restating what the decoder does not enforce), any root.
- ``vllm``, ``sglang``, ``llamacpp`` (llama.cpp's server and Ollama): self-hosted servers' compilers, sent
  unchanged (but for those words), any root; the report says enforced only what each compiles
  (:data:`~guardrail.schema.dialects.GRAMMARS`).
- ``advisory``: the schema is only shown to the model (a prompt, a non-strict tool). Sent unchanged
  (a non-object root is wrapped on request); everything is checked after parsing.

:class:`CompileReport` lists every constraint keyword with what happened to it, so nothing is dropped
silently. A keyword the dialect does not enforce (removed by a strict dialect, ignored by a grammar decoder)
is also restated in words in the ``description`` of its node (:mod:`guardrail.schema.describe`), so the model
hears of it before its first answer; the report's ``described`` holds the words. guardrail always
validates the parsed output with pydantic against the ORIGINAL type, so every removed constraint
("post_validated") is still checked; a "rejected" one means the mode cannot be used for this contract and the
caller must fall back to a weaker mode.

Input safety: :func:`lower` is pure (no I/O, the input is never mutated, equal inputs give equal
outputs) and never recurses on the schema: walks use explicit stacks, ``$ref`` cycles are detected and
never inlined. Limits: a schema nested more than :data:`MAX_DEPTH` containers deep is not lowered (one
"limits" rejection, the schema is returned unchanged; advisory still reports it, but serialising it
with ``json`` would hit Python's recursion limit); lowering stops after ``strict.MAX_NODES`` subschemas
(inlining can multiply a schema) with a "limits" rejection. A Python structure that contains itself
raises ``ValueError``; a non-mapping schema raises ``TypeError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from guardrail.errors import ConfigError, UsageError
from guardrail.schema.describe import describe_into
from guardrail.schema.dialects import ANTHROPIC, GEMINI, GRAMMARS, OPENAI
from guardrail.schema.inventory import inventory
from guardrail.schema.limits import anthropic_limits, openai_limits, shed_enums
from guardrail.schema.refs import RefIndex, root_def_name
from guardrail.schema.report import DIALECTS, CompileEntry, CompileReport, Dialect, ReportBuilder
from guardrail.schema.strict import StrictLowerer
from guardrail.schema.tree import DEF_CONTAINERS, at_pointer, copy_json, measure, walk

__all__ = ["MAX_DEPTH", "CompileEntry", "CompileReport", "Dialect", "Lowered", "lower"]

#: Deepest container nesting :func:`lower` rewrites (JSON encoders and vendors choke on deeper documents).
MAX_DEPTH: Final = 256


@dataclass(frozen=True)
class Lowered:
    """The schema to send, the report, and what the caller must undo or interpret after parsing.

    ``wrapped``: the key a non-object root was wrapped under (``{"result": <root>}``), else None.
    ``absent_as_null``: optional properties were made required + nullable (OpenAI strict); the model sends
    null for "absent", and a null for a non-nullable optional field must be read as absent.
    """

    schema: dict[str, Any]
    report: CompileReport
    wrapped: str | None
    absent_as_null: bool


def lower(schema: Mapping[str, Any], dialect: Dialect, *, wrap_key: str = "result",
          wrap_root: bool = False) -> Lowered:
    """Rewrite ``schema`` (a JSON Schema, e.g. ``TypeAdapter(T).json_schema()``) for ``dialect``.

    ``wrap_key`` names the property a non-object root is wrapped under (strict dialects always wrap such a
    root; ``advisory`` only when ``wrap_root`` is true, for non-strict tools that need an object root;
    ``grammar`` never). Raises ``TypeError`` for a non-mapping schema and ``ValueError`` for an unknown
    dialect, an empty ``wrap_key`` or a self-containing structure. Never mutates ``schema``.
    """
    if not isinstance(schema, Mapping):
        raise UsageError(f"schema must be a mapping (a JSON Schema object), not {type(schema).__name__}")
    if dialect not in DIALECTS:
        raise ConfigError(f"unknown dialect {dialect!r}; expected one of {sorted(DIALECTS)}")
    if not isinstance(wrap_key, str) or not wrap_key:
        raise ConfigError("wrap_key must be a non-empty string")
    depth = measure(schema)
    report = ReportBuilder(dialect)
    if depth > MAX_DEPTH and dialect != "advisory":
        report.add("", "limits", "rejected", f"schema nested {depth} containers deep (max {MAX_DEPTH})")
        return Lowered(copy_json(schema), report.build(), None, False)
    if dialect in ("grammar", "advisory") or dialect in GRAMMARS:
        unenforced = inventory(schema, report)
        out: dict[str, Any] = copy_json(schema)
        _describe_in_place(schema, out, unenforced, report)
        wrapped = None
        if dialect == "advisory" and wrap_root:
            out, wrapped = _object_root(out, wrap_key, report)
        return Lowered(out, report.build(), wrapped, False)
    return _strict(schema, dialect, wrap_key, report)


def _strict(schema: Mapping[str, Any], dialect: Dialect, wrap_key: str, report: ReportBuilder) -> Lowered:
    openai = dialect == "openai_strict"
    rules = OPENAI if openai else GEMINI if dialect == "gemini" else ANTHROPIC
    lowerer = StrictLowerer(schema, rules, report)
    body = lowerer.run()
    wrapped = None
    if not _is_object(body):
        body = _wrapper(wrap_key, body)
        wrapped = wrap_key
        report.add("", "root", "lowered", f"non-object root wrapped as {{{wrap_key!r}: ...}}; unwrap after parsing")
    if lowerer.defs:
        body["$defs"] = lowerer.defs
    if rules is GEMINI:
        _const_as_enum(body)
    else:
        for path, count in shed_enums(body) if openai else ():
            report.add(path, "enum", "post_validated", f"{count} values exceed OpenAI's enum limits: left out of "
                                                       "the strict schema, the value is checked against them after "
                                                       "parsing")
        for problem in (openai_limits if openai else anthropic_limits)(body):
            report.add("", "limits", "rejected", problem)
    return Lowered(body, report.build(), wrapped, lowerer.made_required)


def _const_as_enum(body: dict[str, Any]) -> None:
    """Gemini's schema has ``enum`` and no ``const``: each ``const`` becomes a one-value ``enum`` (in place)."""
    for node in [node for node, _ in walk(body, "")]:
        if isinstance(node, dict) and "const" in node:
            value = node.pop("const")
            node.setdefault("enum", [value])


def _describe_in_place(schema: Mapping[str, Any], out: dict[str, Any], unenforced: dict[str, list[str]],
                       report: ReportBuilder) -> None:
    """Grammar: the schema is sent whole, but the keywords the decoder does not enforce are also restated in
    words in the description of their node (``out`` is a copy of ``schema``, so the pointers are the same)."""
    for path in sorted(unenforced):
        node, target = at_pointer(schema, path), at_pointer(out, path)
        if isinstance(node, Mapping) and isinstance(target, dict):
            describe_into(target, node, unenforced[path], report, path)


def _is_object(node: Mapping[str, Any]) -> bool:
    declared = node.get("type")
    return declared == "object" or declared == ["object"]


def _wrapper(key: str, inner: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {key: inner}, "required": [key], "additionalProperties": False}


def _object_root(doc: dict[str, Any], wrap_key: str, report: ReportBuilder) -> tuple[dict[str, Any], str | None]:
    """Advisory with an object root required: inline a root ``$ref`` to an object definition, else wrap."""
    if _is_object(doc):
        return doc, None
    target = RefIndex(doc).resolve(doc.get("$ref"))
    if target is not None and root_def_name(target[1]) is not None and _is_object(target[0]) and all(
            k in ("$ref", "$schema", "title", "description", *DEF_CONTAINERS) for k in doc):
        inlined = {k: v for k, v in doc.items() if k != "$ref"}
        inlined.update(copy_json(target[0]))
        report.add("", "root", "lowered", "root $ref to an object definition inlined")
        return inlined, None
    hoisted: dict[str, Any] = {k: doc.pop(k) for k in ("$schema", *DEF_CONTAINERS) if k in doc}
    wrapper: dict[str, Any] = {**_wrapper(wrap_key, doc), **hoisted}
    prefix = "#/properties/" + wrap_key.replace("~", "~0").replace("/", "~1")
    for node, _ in walk(wrapper, ""):
        ref = node.get("$ref")
        if isinstance(node, dict) and isinstance(ref, str) and (ref == "#" or ref.startswith("#/")) and not any(
                ref.startswith(f"#/{c}/") for c in DEF_CONTAINERS):
            node["$ref"] = prefix + ref[1:]
    report.add("", "root", "lowered", f"non-object root wrapped as {{{wrap_key!r}: ...}}; unwrap after parsing")
    return wrapper, wrap_key
