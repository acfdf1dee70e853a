"""What each vendor dialect accepts: keyword tables, formats, regex features.

Facts from the shared vendor notes (VENDORS.md) and the vendor SDK sources: OpenAI strict
(``openai.lib._pydantic``) and Anthropic strict (``anthropic.lib._parse._transform``). The strict walker
reads these tables; the rules that rewrite schemas (required, additionalProperties, unions, tuples,
references) live in the walker itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: The constraint keywords the report lists (annotations such as title/description/examples are not).
CONSTRAINTS: Final = frozenset({
    "type", "enum", "const", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "prefixItems", "required",
    "additionalProperties", "patternProperties", "propertyNames", "anyOf", "oneOf", "allOf", "not", "if", "then",
    "else", "dependentRequired", "dependentSchemas", "$ref", "default", "discriminator", "contains",
    "minProperties", "maxProperties",
    # older drafts and 2019+ keywords with the same standing
    "dependencies", "additionalItems", "unevaluatedProperties", "unevaluatedItems", "minContains", "maxContains",
    "$recursiveRef", "$dynamicRef",
})
#: Annotations a strict schema keeps (both vendors accept them); every other non-constraint key is dropped.
KEPT_ANNOTATIONS: Final = ("title", "description")
JSON_TYPES: Final = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
#: References no dialect here can follow.
DYNAMIC_REFS: Final = frozenset({"$recursiveRef", "$dynamicRef"})

#: Keywords strict dialects remove because the vendor cannot enforce them; guardrail checks them afterwards.
_ALWAYS_REMOVED: Final = frozenset({
    "minLength", "maxLength", "uniqueItems", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
    "dependencies", "propertyNames", "contains", "minContains", "maxContains", "minProperties", "maxProperties",
    "unevaluatedProperties", "unevaluatedItems",
})
_NUMERIC: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})


@dataclass(frozen=True)
class StrictRules:
    """One strict dialect: what it keeps as-is, what it removes, and its structural choices."""

    name: str
    #: Keywords kept and enforced by the vendor as they stand.
    kept: frozenset[str]
    #: Keywords removed from the sent schema and post-validated.
    removed: frozenset[str]
    formats: frozenset[str]
    #: OpenAI: every property must be required (optional ones become required + nullable).
    all_required: bool
    #: Anthropic keeps ``default``; OpenAI historically rejects non-null defaults.
    keep_default: bool
    recursion: bool
    #: Largest ``minItems`` enforced (None: any); larger values are post-validated.
    max_min_items: int | None
    #: Patterns with backreferences, lookaround or ``\b`` are not accepted.
    simple_patterns: bool
    #: ``enum``/``const`` values must be scalars.
    scalar_enums: bool


OPENAI: Final = StrictRules(
    name="openai_strict",
    kept=frozenset({"type", "enum", "const", "pattern", "minItems", "maxItems"}) | _NUMERIC,
    removed=_ALWAYS_REMOVED,
    formats=frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}),
    all_required=True,
    keep_default=False,
    recursion=True,
    max_min_items=None,
    simple_patterns=False,
    scalar_enums=False,
)

ANTHROPIC: Final = StrictRules(
    name="anthropic_strict",
    kept=frozenset({"type", "enum", "const", "pattern", "minItems"}),
    removed=_ALWAYS_REMOVED | _NUMERIC | {"maxItems"},
    formats=frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}),
    all_required=False,
    keep_default=True,
    recursion=False,
    max_min_items=1,
    simple_patterns=True,
    scalar_enums=True,
)

#: Gemini's ``response_json_schema`` (ai.google.dev/gemini-api/docs/structured-output, "JSON Schema support"):
#: type (type lists and null too), title, description, enum, anyOf, $ref/$defs, properties, required,
#: additionalProperties, items, prefixItems, minItems, maxItems, minimum, maximum, format date-time/date/time.
#: Other keywords are ignored by the API (not enforced), so they are removed here and post-validated. Recursion
#: and map-like objects are left to the tool and prompt modes (kept conservative: not verified against the API).
GEMINI: Final = StrictRules(
    name="gemini",
    kept=frozenset({"type", "enum", "const", "minimum", "maximum", "minItems", "maxItems"}),
    removed=_ALWAYS_REMOVED | {"pattern", "multipleOf", "exclusiveMinimum", "exclusiveMaximum"},
    formats=frozenset({"date-time", "date", "time"}),
    all_required=False,
    keep_default=False,
    recursion=False,
    max_min_items=None,
    simple_patterns=False,
    scalar_enums=True,
)

#: What the generic ``grammar`` dialect (guardrail's local llguidance backend) compiles; the rest is kept but not
#: relied on. Each self-hosted server has its own table below (:data:`GRAMMARS`).
GRAMMAR_ENFORCED: Final = frozenset({
    "type", "required", "enum", "const", "anyOf", "oneOf", "$ref", "prefixItems", "additionalProperties",
    "minItems", "maxItems", "pattern", "minLength", "maxLength", "minimum", "maximum", "format",
})
GRAMMAR_FORMATS: Final = frozenset({"date", "date-time", "time", "email", "uuid", "ipv4", "ipv6"})


@dataclass(frozen=True)
class GrammarRules:
    """What one self-hosted server's JSON-schema compiler enforces (the schema is sent unchanged; the report says,
    keyword by keyword, whether the server's decoder holds the model to it or guardrail checks it afterwards).

    Attributes:
        name: the dialect.
        enforced: keywords the compiler turns into the grammar.
        formats: ``format`` values it compiles.
        integer_bounds_only: ``minimum``/``maximum``/``exclusive*`` hold for ``"type": "integer"`` only.
        anchored_patterns: a ``pattern`` is compiled only when written ``^...$``.
        lengths_beside_pattern: ``minLength``/``maxLength`` still hold on a string that also has a ``pattern`` or
            ``format`` (xgrammar compiles the pattern and drops the lengths).
        source: where the facts came from.
    """

    name: str
    enforced: frozenset[str]
    formats: frozenset[str]
    integer_bounds_only: bool = False
    anchored_patterns: bool = False
    lengths_beside_pattern: bool = True
    source: str = ""


_STRUCTURE: Final = frozenset({"type", "required", "enum", "const", "anyOf", "oneOf", "$ref", "additionalProperties"})
#: The numeric bounds (llama.cpp compiles them for integers only).
BOUNDS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
#: xgrammar's string formats (vLLM's STRING_SUPPORTED_FORMATS, from xgrammar's json_schema_converter.cc).
_XGRAMMAR_FORMATS: Final = frozenset({
    "email", "date", "time", "date-time", "duration", "ipv4", "ipv6", "hostname", "uuid", "uri", "uri-reference",
    "uri-template", "json-pointer", "relative-json-pointer",
})
_XGRAMMAR: Final = _STRUCTURE | BOUNDS | {"prefixItems", "minItems", "maxItems", "pattern", "minLength", "maxLength",
                                           "format"}

#: SGLang: xgrammar (its default grammar backend), no fallback.
SGLANG: Final = GrammarRules(
    name="sglang", enforced=_XGRAMMAR, formats=_XGRAMMAR_FORMATS, lengths_beside_pattern=False,
    source="docs.sglang.ai structured outputs (xgrammar default backend); xgrammar json_schema_converter.cc: "
           "multipleOf, uniqueItems, contains, patternProperties, propertyNames are not compiled, and a string's "
           "lengths are dropped beside its pattern/format (vllm/v1/structured_output/backend_xgrammar.py notes it)")
#: vLLM's default ``auto`` backend: xgrammar, and guidance (llguidance) for a schema xgrammar cannot hold, which
#: then compiles multipleOf and a pattern together with lengths (checked against llguidance 1.9).
VLLM: Final = GrammarRules(
    name="vllm", enforced=_XGRAMMAR | {"multipleOf"}, formats=_XGRAMMAR_FORMATS,
    source="docs.vllm.ai structured outputs; vllm/v1/structured_output/backend_xgrammar.py "
           "has_xgrammar_unsupported_json_features (falls back to guidance); llguidance rejects uniqueItems, "
           "contains, not (vLLM then answers 400 and the call walks down)")
#: llama.cpp's json-schema-to-grammar converter, used by llama-server's ``json_schema`` and by Ollama's ``format``.
LLAMACPP: Final = GrammarRules(
    name="llamacpp", enforced=(_STRUCTURE | BOUNDS | {"minItems", "maxItems", "pattern", "minLength", "maxLength",
                                                       "format"}),
    formats=frozenset({"date", "time", "date-time", "uuid"}), integer_bounds_only=True, anchored_patterns=True,
    source="llama.cpp grammars/README.md, JSON Schemas -> GBNF: bounds for integers only, patterns must be ^...$, "
           "prefixItems broken, no uri/email formats, no uniqueItems/contains/not/if/patternProperties; Ollama "
           "converts its format schema with the same code")
#: The server dialects, by name.
GRAMMARS: Final = {rules.name: rules for rules in (VLLM, SGLANG, LLAMACPP)}


def unsupported_regex(pattern: str) -> str | None:
    """The first feature of ``pattern`` Anthropic's strict mode does not accept, or ``None``.

    Backreferences (``\\1``, ``\\k<name>``), lookaround (``(?=``, ``(?!``, ``(?<=``, ``(?<!``) and word
    boundaries (``\\b``, ``\\B``). Escaped backslashes are skipped, so ``\\\\b`` (a literal backslash and b) passes.
    """
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in "123456789" or (nxt == "k" and pattern.startswith("<", i + 2)):
                return "backreference"
            if nxt in "bB":
                return "word boundary"
            i += 2
            continue
        if ch == "(" and pattern.startswith(("?=", "?!", "?<=", "?<!"), i + 1):
            return "lookaround"
        i += 1
    return None
