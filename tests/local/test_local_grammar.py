"""The llguidance compile report, keyword by keyword: what the engine enforces while decoding (checked by feeding
tokens of a freshly trained byte-level BPE tokenizer to a matcher), what guardrail lowers, what it removes from the
copy the engine compiles (the grammar then still allows every valid instance; post-validation checks the rest),
and what it rejects."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")
llguidance = pytest.importorskip("llguidance")

from guardrail.local.grammar import (  # noqa: E402
    Built,
    GrammarError,
    build_grammar,
    clear_caches,
    closed,
    compile_grammar,
    engine_version,
    lltokenizer,
)
from guardrail.schema.report import CompileReport  # noqa: E402

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT7 = "http://json-schema.org/draft-07/schema#"


@pytest.fixture(scope="module")
def lltok(tok: Any) -> Any:
    return lltokenizer(tok, len(tok))


def build(schema: dict[str, Any], lltok: Any) -> Built:
    before = json.dumps(schema, sort_keys=True)
    built = build_grammar(schema, lltok)
    assert json.dumps(schema, sort_keys=True) == before  # the input is never mutated
    return built


def accepts(built: Built, tok: Any, lltok: Any, text: str) -> bool:
    """Feed the tokens of ``text`` to a matcher; true when all are consumed and EOS is then allowed."""
    matcher = llguidance.LLMatcher(lltok, built.grammar, log_level=0)
    tokens = tok.encode(text, add_special_tokens=False)
    return bool(matcher.consume_tokens(tokens) and matcher.is_accepting() and matcher.consume_token(lltok.eos_token))


def action(report: CompileReport, path: str, keyword: str) -> str:
    found = [e.action for e in report.entries if e.path == path and e.keyword == keyword]
    assert len(found) == 1, f"{keyword} at {path or '/'}: {found}\n{report.summary()}"
    return found[0]


# --- enforced while decoding -----------------------------------------------------------------------------

ENFORCED: list[tuple[str, dict[str, Any], list[tuple[str, str]], list[str], list[str]]] = [
    ("type", {"type": "integer"}, [("", "type")], ["12", "-3"], ['"12"', "1.5", "null"]),
    ("type-list", {"type": ["string", "null"]}, [("", "type")], ["null", '"a"'], ["1", "true"]),
    ("enum", {"enum": ["a", 1, None, {"k": [1]}]}, [("", "enum")], ['"a"', "1", "null", '{"k":[1]}'],
     ['"b"', "2", '{"k":[2]}']),
    ("const", {"const": {"x": "안녕"}}, [("", "const")], ['{"x":"안녕"}'], ['{"x":"안녕하"}', '{"y":"안녕"}']),
    ("anyOf", {"anyOf": [{"type": "integer", "minimum": 10}, {"type": "string", "maxLength": 1}]},
     [("", "anyOf"), ("/anyOf/0", "minimum"), ("/anyOf/1", "maxLength")], ["10", '"a"'], ["9", '"ab"']),
    ("allOf", {"allOf": [{"type": "string", "minLength": 2}, {"pattern": "^a"}]},
     [("", "allOf"), ("/allOf/0", "minLength"), ("/allOf/1", "pattern")], ['"ab"'], ['"a"', '"ba"']),
    ("ref-recursive", {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
                       "$ref": "#/$defs/node"},
     [("", "$ref"), ("/$defs/node/properties/next", "$ref")], ['{"next":{"next":{}}}', "{}"], ['{"next":1}']),
    ("items", {"type": "array", "items": {"type": "boolean"}}, [("", "items")], ["[true,false]", "[]"], ["[1]"]),
    ("prefixItems", {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
     [("", "prefixItems"), ("", "items")], ['[1,"a"]', "[1]"], ['["a"]', '[1,"a",2]']),
    ("items-tuple-draft4", {"$schema": DRAFT4, "type": "array", "items": [{"type": "integer"}],
                            "additionalItems": {"type": "string"}},
     [("", "items"), ("", "additionalItems")], ['[1,"x"]', "[1]"], ["[1,2]", '["x"]']),
    ("min-maxItems", {"type": "array", "minItems": 1, "maxItems": 2}, [("", "minItems"), ("", "maxItems")],
     ["[1]", "[1,2]"], ["[]", "[1,2,3]"]),
    ("properties-order-fixed", {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}},
                                "required": ["a", "b"]},
     [("", "properties"), ("", "required")], ['{"b":1,"a":2}'], ['{"a":2,"b":1}', '{"b":1}']),
    ("additionalProperties", {"type": "object", "properties": {"a": {"type": "string"}},
                              "additionalProperties": {"type": "integer"}},
     [("", "additionalProperties")], ['{"a":"x","z":1}', '{"z":1}'], ['{"a":"x","z":"y"}', '{"z":1,"a":"x"}']),
    ("patternProperties", {"type": "object", "patternProperties": {"^x_": {"type": "integer"}},
                           "additionalProperties": False},
     [("", "patternProperties"), ("", "additionalProperties")], ['{"x_1":1}', "{}"], ['{"x_1":"a"}', '{"y":1}']),
    ("required", {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["b"]}, [("", "required")],
     ['{"b":1}', '{"a":1,"b":2}'], ['{"a":1}', "{}"]),
    ("length-code-points", {"type": "string", "minLength": 2, "maxLength": 3},
     [("", "minLength"), ("", "maxLength")], ['"배송"', '"a😀b"', '"\\n\\t"'], ['"배"', '"배송이늦"', '"😀"']),
    ("pattern", {"type": "string", "pattern": "^[a-z]+-\\d{2}$"}, [("", "pattern")], ['"ab-12"'],
     ['"ab-1"', '"AB-12"']),
    ("format-uuid", {"type": "string", "format": "uuid"}, [("", "format")],
     ['"123e4567-e89b-12d3-a456-426614174000"'], ['"123"']),
    ("format-ipv4", {"type": "string", "format": "ipv4"}, [("", "format")], ['"10.0.0.1"'], ['"10.0.0.256"']),
    ("format-email", {"type": "string", "format": "email"}, [("", "format")], ['"kim@example.com"'], ['"kim"']),
    ("minimum-maximum", {"type": "integer", "minimum": -5, "maximum": 5}, [("", "minimum"), ("", "maximum")],
     ["-5", "5", "0"], ["-6", "6"]),
    ("exclusive-integer", {"type": "integer", "exclusiveMinimum": 0.5, "exclusiveMaximum": 10},
     [("", "exclusiveMinimum"), ("", "exclusiveMaximum")], ["1", "9"], ["0", "10", "1.5"]),
    ("float-bounds-short", {"type": "number", "minimum": -0.25, "maximum": 0.1},
     [("", "minimum"), ("", "maximum")], ["-0.25", "0.1", "0", "-0.2499"], ["-0.2500001", "0.1000000001", "-1"]),
    ("multipleOf", {"type": "number", "multipleOf": 0.25}, [("", "multipleOf")], ["0.75", "2"], ["0.3"]),
    ("min-maxProperties-all-required", {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"],
                                        "additionalProperties": {"type": "integer"}, "minProperties": 3,
                                        "maxProperties": 3},
     [("", "minProperties"), ("", "maxProperties")], ['{"a":1,"b":2,"c":3}'], ['{"a":1,"b":2}',
                                                                               '{"a":1,"b":2,"c":3,"d":4}']),
]


@pytest.mark.parametrize(("schema", "entries", "good", "bad"), [c[1:] for c in ENFORCED], ids=[c[0] for c in ENFORCED])
def test_enforced_keywords_hold_while_decoding(tok: Any, lltok: Any, schema: dict[str, Any],
                                               entries: list[tuple[str, str]], good: list[str],
                                               bad: list[str]) -> None:
    built = build(schema, lltok)
    for path, keyword in entries:
        assert action(built.report, path, keyword) == "enforced"
    assert built.report.ok and not built.report.post_validated
    for text in good:
        assert accepts(built, tok, lltok, text), text
    for text in bad:
        assert not accepts(built, tok, lltok, text), text


def test_properties_are_generated_in_schema_order_and_the_report_says_so(lltok: Any) -> None:
    built = build({"type": "object", "properties": {"z": {}, "a": {}}}, lltok)
    entry = next(e for e in built.report.entries if e.keyword == "properties")
    assert "schema order" in entry.detail


# --- lowered: guardrail rewrites, the engine enforces the rewrite ------------------------------------------


def test_oneof_is_compiled_as_anyof_and_reported_lowered(tok: Any, lltok: Any) -> None:
    built = build({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]}, lltok)
    assert action(built.report, "", "oneOf") == "lowered"
    assert "exactly one" in next(e.detail for e in built.report.lowered)
    assert accepts(built, tok, lltok, "5")  # matches both branches: only post-validation can refuse it
    assert accepts(built, tok, lltok, "1.5")
    assert not accepts(built, tok, lltok, "-1.5")
    assert not accepts(built, tok, lltok, '"a"')


def test_objects_are_closed_to_extra_keys(tok: Any, lltok: Any) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"},
                                               "inner": {"type": "object", "properties": {"b": {}}}}}
    built = build(schema, lltok)
    assert action(built.report, "", "additionalProperties") == "lowered"
    assert action(built.report, "/properties/inner", "additionalProperties") == "lowered"
    assert built.engine_schema["additionalProperties"] is False
    assert "additionalProperties" not in schema  # only the copy changed
    assert accepts(built, tok, lltok, '{"a":1,"inner":{"b":2}}')
    assert not accepts(built, tok, lltok, '{"a":1,"b":2}')
    assert not accepts(built, tok, lltok, '{"inner":{"c":2}}')


@pytest.mark.parametrize(("schema", "text"), [
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": True}, '{"a":1,"b":2}'),  # extra="allow"
    ({"allOf": [{"properties": {"a": {"type": "integer"}}}, {"properties": {"b": {"type": "string"}}}],
      "required": ["a", "b"]}, '{"a":1,"b":"x"}'),  # members are intersected: closing one would forbid the other's keys
    ({"type": "object", "properties": {"kind": {"type": "string"}}, "anyOf": [{"properties": {"n": {}}}]},
     '{"kind":"x","n":1}'),
    ({"$defs": {"base": {"properties": {"a": {}}}}, "$ref": "#/$defs/base", "properties": {"b": {}}},
     '{"a":1,"b":2}'),
    ({"type": "object", "properties": {"a": {}}, "required": ["a", "b"]}, '{"a":1,"b":2}'),  # b is not listed
    ({"type": "object", "properties": {"a": {}}, "patternProperties": {"^x": {}}}, '{"a":1,"x1":2,"y":3}'),
], ids=["allow", "allOf-members", "anyOf-next-to-properties", "ref-next-to-properties", "required-unlisted",
        "patternProperties"])
def test_objects_stay_open_where_closing_would_clash(tok: Any, lltok: Any, schema: dict[str, Any], text: str) -> None:
    built = build(schema, lltok)
    assert not [e for e in built.report.lowered if e.keyword == "additionalProperties"]
    assert accepts(built, tok, lltok, text)


def test_closing_is_undone_when_it_leaves_no_valid_value(tok: Any, lltok: Any) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "const": {"a": 1, "b": 2}}
    built = build(schema, lltok)
    assert not [e for e in built.report.lowered if e.keyword == "additionalProperties"] and built.report.ok
    assert accepts(built, tok, lltok, '{"a":1,"b":2}')


def test_closed_copies_only_schema_positions() -> None:
    # a property called "properties" is a name, not a keyword: its map must not get additionalProperties
    schema = {"type": "object", "properties": {"properties": {"type": "object", "properties": {"x": {}}}}}
    out = closed(schema)
    assert out["additionalProperties"] is False
    assert set(out["properties"]) == {"properties"}
    assert out["properties"]["properties"]["additionalProperties"] is False
    assert "additionalProperties" not in schema


def test_engine_options_in_the_schema_are_ignored(tok: Any, lltok: Any) -> None:
    built = build({"type": "object", "properties": {"a": {"type": "integer"}},
                   "x-guidance": {"whitespace_flexible": True, "lenient": True}}, lltok)
    assert action(built.report, "", "x-guidance") == "lowered"
    assert accepts(built, tok, lltok, '{"a":1}')
    assert not accepts(built, tok, lltok, '{ "a": 1}')  # compact JSON only


def test_keywords_next_to_ref_are_dropped_before_draft_2019(tok: Any, lltok: Any) -> None:
    schema = {"$schema": DRAFT7, "definitions": {"s": {"type": "string"}},
              "type": "object", "properties": {"a": {"$ref": "#/definitions/s", "maxLength": 1}}}
    built = build(schema, lltok)
    assert action(built.report, "/properties/a", "maxLength") == "lowered"  # draft-07 validators ignore it
    assert accepts(built, tok, lltok, '{"a":"long"}')


def test_references_become_root_pointers_anchors_and_non_ascii_names_included(tok: Any, lltok: Any) -> None:
    schema = {"$defs": {"항목": {"$anchor": "item", "type": "integer"}}, "type": "object",
              "properties": {"x": {"$ref": "#item"}, "y": {"$ref": "#/$defs/항목"}}}
    built = build(schema, lltok)
    refs = {p: built.engine_schema["properties"][p]["$ref"] for p in ("x", "y")}
    assert refs["x"] == refs["y"] and refs["x"].isascii() and refs["x"].startswith("#/$defs/")
    assert action(built.report, "/properties/x", "$ref") == "enforced"
    assert accepts(built, tok, lltok, '{"x":1,"y":2}')
    assert not accepts(built, tok, lltok, '{"x":"a"}')


def test_a_pydantic_contract_is_fully_reported(lltok: Any) -> None:
    from typing import Annotated, Literal

    from pydantic import BaseModel, Field

    from guardrail.contract import compile_contract
    from guardrail.schema.dialects import CONSTRAINTS
    from guardrail.schema.tree import walk

    class Cat(BaseModel):
        kind: Literal["cat"]
        lives: int = Field(ge=0, le=9)

    class Dog(BaseModel):
        kind: Literal["dog"]
        tags: set[str]

    class Pet(BaseModel):
        name: str = Field(pattern=r"^[a-z]+$", max_length=12)
        friends: list[Pet] = Field(default_factory=list, max_length=3)
        animal: Annotated[Cat | Dog, Field(discriminator="kind")]

    schema = compile_contract(Pet).schema
    built = build(schema, lltok)
    reported = {(e.path, e.keyword) for e in built.report.entries}
    for node, path in walk(schema, ""):
        for keyword in node:
            if keyword in CONSTRAINTS and keyword not in ("default", "discriminator"):
                assert (path, keyword) in reported, (path, keyword)
    assert action(built.report, "/$defs/Dog/properties/tags", "uniqueItems") == "post_validated"
    assert action(built.report, "/$defs/Pet/properties/animal", "oneOf") == "lowered"


# --- removed from the engine's copy, checked after parsing ---------------------------------------------

POST_VALIDATED: list[tuple[str, dict[str, Any], list[tuple[str, str]], list[str], list[str]]] = [
    # (id, schema, entries reported post_validated, accepted although the removed keyword forbids it, rejected)
    ("not", {"type": "integer", "not": {"const": 3}}, [("", "not")], ["3", "4"], ['"a"']),
    ("if-then-else", {"type": "object", "properties": {"k": {"type": "string"}, "n": {"type": "integer"}},
                      "if": {"properties": {"k": {"const": "a"}}}, "then": {"required": ["n"]}, "else": {}},
     [("", "if"), ("", "then"), ("", "else")], ['{"k":"a"}'], ['{"k":1}']),
    ("uniqueItems", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, [("", "uniqueItems")],
     ["[1,1]"], ['["a"]']),
    ("contains", {"type": "array", "contains": {"const": 1}, "minContains": 2, "maxContains": 3},
     [("", "contains"), ("", "minContains"), ("", "maxContains")], ["[]", "[2]"], ["{}"]),
    ("dependentRequired", {"type": "object", "properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}},
     [("", "dependentRequired")], ['{"a":1}'], ['{"c":1}']),
    ("dependentSchemas", {"type": "object", "properties": {"a": {}}, "dependentSchemas": {"a": {"required": ["b"]}}},
     [("", "dependentSchemas")], ['{"a":1}'], ["[]"]),
    ("dependencies", {"$schema": DRAFT7, "type": "object", "properties": {"a": {}},
                      "dependencies": {"a": ["b"]}}, [("", "dependencies")], ['{"a":1}'], ["[]"]),
    ("propertyNames", {"type": "object", "propertyNames": {"maxLength": 2}}, [("", "propertyNames")],
     ['{"long":1}'], ["1"]),
    ("minProperties-not-all-required", {"type": "object", "properties": {"a": {}, "b": {}}, "minProperties": 1},
     [("", "minProperties")], ["{}"], ["[]"]),
    ("maxProperties-next-to-allOf", {"type": "object", "allOf": [{"properties": {"a": {}}}], "maxProperties": 0},
     [("", "maxProperties")], ['{"a":1}'], ["[]"]),
    ("unevaluatedProperties", {"type": "object", "properties": {"a": {"type": "integer"}},
                               "unevaluatedProperties": False},
     [("", "unevaluatedProperties")], ['{"a":1,"b":2}'], ['{"a":"x"}']),
    ("unknown-format", {"type": "string", "format": "phone"}, [("", "format")], ['"not a phone"'], ["1"]),
    ("lookaround-pattern", {"type": "string", "pattern": "^(?!admin).*$"}, [("", "pattern")], ['"admin"'], ["1"]),
    ("backreference-pattern", {"type": "string", "pattern": "^(a)\\1$"}, [("", "pattern")], ['"ab"'], ["1"]),
    ("uncompilable-patternProperties", {"type": "object", "patternProperties": {"^(?=x)": {"type": "integer"}},
                                        "additionalProperties": False},
     [("", "patternProperties"), ("", "additionalProperties")], ['{"x":"s"}', '{"y":1}'], ["[]"]),
    # measured on llguidance 1.9.1: this pattern with maxLength 4000+ refuses "a b" (the lexer runs out of budget)
    ("long-length-with-pattern", {"type": "string", "pattern": "^(\\S+\\s+)*\\S+$", "maxLength": 5000},
     [("", "maxLength")], ['"a b"', '"What is the meaning of life?"'], ['"a "', "1"]),
    ("dynamicRef", {"$dynamicRef": "#x"}, [("", "$dynamicRef")], ["1", '"a"'], []),
    ("malformed-required", {"type": "object", "properties": {"a": {}}, "required": True}, [("", "required")],
     ["{}"], ["[]"]),
    # remedies after the engine refused the copy
    ("patternProperties-not-disjoint", {"type": "object", "patternProperties": {"a": {"type": "integer"},
                                                                               "b": {"type": "integer"}}},
     [("", "patternProperties")], ['{"ab":"x"}'], ["[]"]),
    ("recursive-ref-with-siblings", {"$defs": {"n": {"type": "object", "properties": {
        "c": {"$ref": "#/$defs/n", "minProperties": 1}}}}, "$ref": "#/$defs/n"},
     [("/$defs/n/properties/c", "minProperties")], ['{"c":{"c":{}}}', '{"c":{}}'], ['{"c":1}']),
    ("allOf-with-recursive-ref", {"$defs": {"n": {"type": "object", "properties": {
        "c": {"allOf": [{"$ref": "#/$defs/n"}, {"type": "object"}]}}}}, "$ref": "#/$defs/n"},
     [("/$defs/n/properties/c", "allOf")], ['{"c":{"c":{}}}', '{"c":1}'], ["[]"]),
]


@pytest.mark.parametrize(("schema", "entries", "loose", "bad"), [c[1:] for c in POST_VALIDATED],
                         ids=[c[0] for c in POST_VALIDATED])
def test_refused_keywords_are_removed_and_post_validated(tok: Any, lltok: Any, schema: dict[str, Any],
                                                         entries: list[tuple[str, str]], loose: list[str],
                                                         bad: list[str]) -> None:
    built = build(schema, lltok)
    assert built.report.ok
    for path, keyword in entries:
        assert action(built.report, path, keyword) == "post_validated"
    removed = {(e.path, e.keyword) for e in built.report.post_validated}
    assert set(entries) <= removed
    for text in loose:  # the looser grammar still allows it: post-validation must decide
        assert accepts(built, tok, lltok, text), text
    for text in bad:  # what the remaining keywords forbid is still refused while decoding
        assert not accepts(built, tok, lltok, text), text


def test_unknown_keys_are_removed_from_the_copy_without_losing_reference_targets(tok: Any, lltok: Any) -> None:
    schema = {"type": "object", "nullable": True, "x-go-type": "Foo",
              "properties": {"a": {"$ref": "#/components/int", "example": 3}},
              "components": {"int": {"type": "integer", "_format": "int32"}}}
    built = build(schema, lltok)
    assert "nullable" not in built.engine_schema and "x-go-type" not in built.engine_schema
    assert "components" in built.engine_schema  # a reference points into it
    assert "_format" not in built.engine_schema["components"]["int"]
    assert accepts(built, tok, lltok, '{"a":3}') and not accepts(built, tok, lltok, '{"a":"x"}')


# --- rejected ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("schema", "keyword", "words"), [
    ({"$ref": "https://example.com/a.json"}, "$ref", "example.com"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, "$ref", "missing"),
    ({"type": "string", "minLength": 5, "maxLength": 2}, "unsatisfiable", "minLength"),
    ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "unsatisfiable", "incompatible"),
], ids=["remote-ref", "missing-ref", "min-over-max", "incompatible-allOf"])
def test_what_the_engine_cannot_compile_is_a_grammar_error_with_the_report(lltok: Any, schema: dict[str, Any],
                                                                           keyword: str, words: str) -> None:
    before = copy.deepcopy(schema)
    with pytest.raises(GrammarError) as caught:
        build_grammar(schema, lltok)
    report = caught.value.report
    assert report is not None and not report.ok
    assert [e.keyword for e in report.rejected] == [keyword]
    assert words in report.rejected[0].detail and words in str(caught.value)
    assert schema == before


@pytest.mark.parametrize("depth", [200, 20_000])
@pytest.mark.slow
def test_deep_schemas_are_rejected_without_recursion(depth: int) -> None:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    with pytest.raises(GrammarError) as caught:
        build_grammar(schema)
    assert caught.value.report is not None and caught.value.report.rejected[0].keyword == "limits"
    out = closed(schema)  # the closing walk is iterative too
    assert out is not schema


def test_compile_grammar_caches_by_schema_engine_and_tokenizer(tok: Any) -> None:
    clear_caches()
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    first = compile_grammar(schema, "hash-a", tok, len(tok))
    second = compile_grammar(schema, "hash-a", tok, len(tok))
    assert not first.cache_hit and second.cache_hit and second.grammar == first.grammar
    assert first.key == ("hash-a", engine_version(), first.key[2]) and first.key[2].startswith(tok.name_or_path or "")
    assert second.engine_schema == first.engine_schema and first.engine_schema is not None
    assert first.engine_schema["additionalProperties"] is False
    assert second.report == first.report and first.report.dialect == "grammar"
    with pytest.raises(GrammarError):
        compile_grammar({"$ref": "https://example.com/x.json"}, "hash-b", tok, len(tok))


# --- numbers: finite, and inside the contract's range once parsed --------------------------------------------


def _number_entries(report: CompileReport, path: str = "") -> dict[str, tuple[str, str]]:
    return {e.keyword: (e.action, e.detail) for e in report.entries
            if e.path == path and e.keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")}


@pytest.mark.parametrize("schema", [{"type": "number"}, {"type": "integer"}, {"type": ["number", "null"]}])
def test_unbounded_numbers_get_a_finite_engine_range(tok: Any, lltok: Any, schema: dict[str, Any]) -> None:
    built = build(schema, lltok)
    entries = _number_entries(built.report)
    assert {k: a for k, (a, _) in entries.items()} == {"minimum": "lowered", "maximum": "lowered"}
    assert "narrower than the contract" in entries["maximum"][1]
    assert built.engine_schema["maximum"] == 10**15 and built.engine_schema["minimum"] == -(10**15)
    assert accepts(built, tok, lltok, "1000000000000000") and accepts(built, tok, lltok, "-1000000000000000")
    assert accepts(built, tok, lltok, "12")
    for text in ("1" + "0" * 400, "1000000000000001", "-1000000000000001", "1e3536", "1.5e300", "-2E+5"):
        assert not accepts(built, tok, lltok, text), text


@pytest.mark.parametrize("text", ["0.99999999999999999999", "0.99999999999999995", "0." + "0" * 330 + "1", "1", "0",
                                  "0." + "0" * 30, "1.0"])
def test_exclusive_float_bounds_hold_after_parsing(tok: Any, lltok: Any, text: str) -> None:
    built = build({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, lltok)
    value = float(text)
    assert not (0 < value < 1)  # every one of these parses outside (0, 1)
    assert not accepts(built, tok, lltok, text)
    assert accepts(built, tok, lltok, "0.5") and accepts(built, tok, lltok, "0.9999999999")
    entries = _number_entries(built.report)
    assert entries["exclusiveMinimum"][0] == entries["exclusiveMaximum"][0] == "lowered"


@pytest.mark.parametrize(("schema", "outside"), [
    ({"type": "number", "minimum": -0.30000000000000004, "maximum": -0.1},
     ["-0.3000000000000001", "-0.30000000000000011", "-0.09999999999999999", "-0.09999"]),
    ({"type": "number", "maximum": 0.9999999999999999}, ["1", "1.0", "0.99999999999999999999"]),
    ({"type": "number", "minimum": -0.9999999999999999}, ["-1", "-0.99999999999999999999"]),
    ({"type": "number", "minimum": 1e-300}, ["0." + "0" * 320 + "1", "0"]),
    ({"type": "number", "maximum": -1e-300}, ["-0." + "0" * 320 + "1", "0", "-0"]),
    ({"type": "number", "exclusiveMaximum": 0}, ["-0." + "0" * 330 + "1", "0", "-0"]),
    ({"type": "number", "minimum": -0.00000000000366290718409}, ["-0.000000000003662907184090001"]),
])
def test_inclusive_and_negative_bounds_never_let_a_text_parse_outside(tok: Any, lltok: Any, schema: dict[str, Any],
                                                                      outside: list[str]) -> None:
    built = build(schema, lltok)
    low = schema.get("minimum", -math.inf)
    high = schema.get("maximum", schema.get("exclusiveMaximum", math.inf))
    for text in outside:
        value = float(text)
        assert not (low <= value <= high) or value == schema.get("exclusiveMaximum"), text
        assert not accepts(built, tok, lltok, text), text


def test_draft4_boolean_exclusive_minimum_holds_after_parsing(tok: Any, lltok: Any) -> None:
    built = build({"$schema": DRAFT4, "type": "number", "minimum": 0, "exclusiveMinimum": True}, lltok)
    assert "exclusiveMinimum" not in built.engine_schema and built.engine_schema["minimum"] > 0
    assert {k: a for k, (a, _) in _number_entries(built.report).items()} == {
        "minimum": "lowered", "exclusiveMinimum": "lowered", "maximum": "lowered"}
    assert accepts(built, tok, lltok, "0.1")
    for text in ("0", "-1", "0." + "0" * 330 + "1"):
        assert not accepts(built, tok, lltok, text), text


def test_float_bounds_with_few_digits_are_exact_and_reported_enforced(tok: Any, lltok: Any) -> None:
    built = build({"type": "number", "minimum": 0.1, "maximum": 2.5}, lltok)
    assert {k: a for k, (a, _) in _number_entries(built.report).items()} == {"minimum": "enforced",
                                                                             "maximum": "enforced"}
    assert built.engine_schema["minimum"] == 0.1 and built.engine_schema["maximum"] == 2.5
    for text in ("0.1", "2.5", "1"):
        assert accepts(built, tok, lltok, text), text
    for text in ("0.0999999", "2.5000001", "3"):
        assert not accepts(built, tok, lltok, text), text


@pytest.mark.parametrize(("schema", "inside", "outside"), [
    ({"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1}, ["-1000000000000000", "1000000000000000", "0"],
     ["1000000000000001", "9223372036854775807"]),
    ({"type": "number", "minimum": -1e20, "maximum": 1e20}, ["-1000000000000000", "0.5"], ["1e20", "1" + "0" * 20]),
    ({"type": "number", "exclusiveMaximum": 3.4e38}, ["12.5", "-1000000000000000"], ["1" + "0" * 16]),
    ({"type": "integer", "minimum": 2 * 10**15}, ["2000000000000000", "1000000000000000000"], ["1999999999999999",
                                                                                              "1" + "0" * 19]),
])
def test_wide_bounds_compile_within_the_engine_range(tok: Any, lltok: Any, schema: dict[str, Any],
                                                     inside: list[str], outside: list[str]) -> None:
    built = build(schema, lltok)
    actions = {a for a, _ in _number_entries(built.report).values()}
    assert "lowered" in actions and "post_validated" not in actions, built.report.summary()
    for text in inside:
        assert accepts(built, tok, lltok, text), text
    for text in outside:
        assert not accepts(built, tok, lltok, text), text


def test_integer_bounds_beyond_two_to_the_53_are_not_trusted_to_the_engine(tok: Any, lltok: Any) -> None:
    exact = 2**53 + 1
    built = build({"type": "integer", "minimum": exact, "maximum": exact}, lltok)
    entries = _number_entries(built.report)
    assert {k: a for k, (a, _) in entries.items()} == {"minimum": "post_validated", "maximum": "post_validated"}
    assert "2**53" in entries["minimum"][1]
    assert accepts(built, tok, lltok, str(exact))  # the one valid value is not excluded
    assert not accepts(built, tok, lltok, str(exact + 2 ** 20))
    # a bound the engine cannot compile at all is removed, never made unsatisfiable
    far = build({"type": "number", "minimum": 1e20}, lltok)
    assert _number_entries(far.report)["minimum"][0] == "post_validated"
    assert accepts(far, tok, lltok, "1" + "0" * 25)


@pytest.mark.parametrize("schema", [
    {"type": "number", "allOf": [{"minimum": 2e18}]},
    {"minimum": 2e18, "allOf": [{"type": "number"}]},
    {"minimum": 2e18, "anyOf": [{"type": "integer"}, {"type": "string"}]},
    {"type": "integer", "allOf": [{"minimum": 2 * 10**15}, {"type": "integer"}]},
])
def test_no_window_where_the_engine_intersects_numbers(tok: Any, lltok: Any, schema: dict[str, Any]) -> None:
    built = build(schema, lltok)  # a window on one side would ignore the other side's bound: no valid value left
    assert accepts(built, tok, lltok, "3" + "0" * 18)


@pytest.mark.parametrize(("fmt", "good", "loose"), [
    ("date", '"2024-02-29"', '"2023-02-29"'),
    ("date-time", '"2024-01-01T10:00:00Z"', '"2024-01-01T23:59:60Z"'),
    ("time", '"10:00:00Z"', '"10:00:60Z"'),
])
def test_date_formats_are_compiled_as_exact_regexes(tok: Any, lltok: Any, fmt: str, good: str, loose: str) -> None:
    """The engine's own date/time regexes are looser than a calendar; guardrail gives it exact ones instead."""
    built = build({"type": "string", "format": fmt}, lltok)
    assert action(built.report, "", "format") == "lowered"
    assert "format" not in built.engine_schema and built.engine_schema["pattern"].startswith("^")
    assert accepts(built, tok, lltok, good)
    assert not accepts(built, tok, lltok, '"yesterday"')
    assert not accepts(built, tok, lltok, loose)  # what the engine's built-in regex let through


def test_a_date_format_beside_a_pattern_keeps_the_engines_looser_regex(tok: Any, lltok: Any) -> None:
    built = build({"type": "string", "format": "date", "pattern": "^20"}, lltok)
    assert action(built.report, "", "format") == "lowered" and built.engine_schema["format"] == "date"
    assert accepts(built, tok, lltok, '"2023-02-29"')  # post-validation refuses it


def test_exact_date_regexes_allow_exactly_the_real_dates_and_times() -> None:
    """The regexes given to the engine for date / date-time / time agree with Python's calendar, day by day."""
    import datetime as dt
    import re

    from guardrail.local.lowering.engine import EXACT_FORMATS

    date = re.compile(EXACT_FORMATS["date"])
    for year in (0, 1, 4, 100, 400, 1900, 1996, 2000, 2023, 2024, 2100, 9996, 9999):
        for month in range(0, 14):
            for day in range(0, 33):
                text = f"{year:04d}-{month:02d}-{day:02d}"
                try:
                    dt.date.fromisoformat(text)
                    real = year > 0
                except ValueError:
                    real = False
                assert bool(date.match(text)) == real, text
    stamp = re.compile(EXACT_FORMATS["date-time"])
    for text, ok in [("2024-02-29T23:59:59Z", True), ("2024-02-29T23:59:60Z", False), ("2023-02-29T00:00:00Z", False),
                     ("2024-01-01T24:00:00Z", False), ("2024-01-01T12:30:00.123456+09:00", True),
                     ("2024-01-01T12:30:00", False), ("2024-01-01T12:30:00+24:00", False)]:
        assert bool(stamp.match(text)) == ok, text
        if ok:
            dt.datetime.fromisoformat(text)
    assert re.match(EXACT_FORMATS["time"], "23:59:59.5-05:30") and not re.match(EXACT_FORMATS["time"], "23:60:00Z")
