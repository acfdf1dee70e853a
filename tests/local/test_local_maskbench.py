"""Schema coverage of the llguidance grammar on MaskBench (JSONSchemaBench): every schema of the corpus compiled
(or rejected for a known reason), every test instance fed to a matcher as tokens. Every valid instance must be
accepted and every invalid one rejected, unless the compile report explains the difference and the explanation
checks out (see bench/maskbench_harness.py). The whole corpus runs (about 20-40 s on two cores); the
per-collection table is printed (``pytest -s``) and by ``python bench/maskbench_coverage.py``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("transformers")
pytest.importorskip("llguidance")
pytest.importorskip("jsonschema")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))  # the harness lives with the benches
from maskbench_harness import Counts, check_schema, coverage, emit, table

from guardrail.local.grammar import lltokenizer
from guardrail.testing.corpora import find_corpus, load

MASKBENCH = find_corpus()
if MASKBENCH is None and os.environ.get("CI"):  # CI must not lose this coverage silently
    pytest.fail("MaskBench corpus not found (../shared/corpora) and CI is set", pytrace=False)

#: Schemas llguidance 1.9.1 cannot compile even after guardrail's remedies, by id. Both are Handwritten stress
#: schemas whose recursive references are intersected with other schemas in many places ("circular references
#: with sibling keys are not supported"). Asserted exactly: a change either way must be looked at.
KNOWN_REJECTIONS = {
    "maskbench/Handwritten---testwp9": "circular references with sibling keys",
    "maskbench/Handwritten---testwp98": "circular references with sibling keys",
}
#: Unexplained mismatches accepted as engine bugs, by (schema id, valid): none.
ALLOWLIST: dict[tuple[str, bool], str] = {}


def _encode(tok: Any) -> Any:
    return lambda text: list(tok.encode(text, add_special_tokens=False))


@pytest.mark.skipif(MASKBENCH is None, reason="MaskBench corpus not found")
@pytest.mark.slow
def test_maskbench_has_no_unexplained_mismatch(tok: Any) -> None:
    assert MASKBENCH is not None
    entries = load(MASKBENCH)
    assert sum(len(v) for v in entries.values()) > 5000 and len(entries) >= 14
    results = coverage(entries, tok)
    print("\n" + table(results))
    total = Counts()
    for counts in results.values():
        total.add(counts)
    unexplained = {(m.schema_id, m.valid): m.why for m in total.mismatches}
    assert set(unexplained) == set(ALLOWLIST), "\n".join(f"{k}: {v}" for k, v in unexplained.items())
    # every schema is accounted for, and the rejections are exactly the known ones
    assert total.compiled + total.rejected == total.schemas == sum(len(v) for v in entries.values())
    assert set(total.rejected_ids) == set(KNOWN_REJECTIONS)
    assert all(any(why in reason for why in KNOWN_REJECTIONS.values()) for reason in total.rejected_by)
    # the corpus really exercised both directions
    assert total.valid_accepted > 5000 and total.invalid_rejected > 5000
    assert total.valid_rejected_explained > 0 and total.invalid_accepted_explained > 0
    for name, counts in results.items():
        assert counts.valid_accepted > 0, name


# --- the checker itself --------------------------------------------------------------------------------


def _entry(schema: dict[str, Any], *tests: tuple[bool, Any]) -> dict[str, Any]:
    return {"id": "synthetic", "schema": schema, "tests": [{"valid": v, "data": d} for v, d in tests]}


def test_a_wrong_label_is_an_unexplained_mismatch(tok: Any) -> None:
    lltok = lltokenizer(tok, len(tok))
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}}, "required": ["n"]}
    counts = check_schema(_entry(schema, (False, {"n": 1}), (True, {"n": 9})), lltok, _encode(tok))
    assert counts.invalid_accepted_unexplained == 1 and counts.valid_rejected_unexplained == 1
    assert {m.valid for m in counts.mismatches} == {True, False}
    assert counts.unexplained == 2


def test_explanations_are_checked_not_assumed(tok: Any) -> None:
    lltok = lltokenizer(tok, len(tok))
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                                        "uniqueItems": True}}}
    counts = check_schema(_entry(schema,
                                 (True, {"tags": ["a"]}),
                                 (True, {"tags": ["a"], "extra": 1}),  # closed object: lowered, explained
                                 (False, {"tags": ["a", "a"]}),  # uniqueItems removed: post-validation catches it
                                 (False, {"tags": [1]})), lltok, _encode(tok))
    assert counts.compiled == 1
    assert counts.valid_accepted == 1 and counts.valid_rejected_explained == 1
    assert counts.invalid_accepted_explained == 1 and counts.invalid_rejected == 1
    assert counts.explained_by == {"additionalProperties": 1, "uniqueItems": 1}
    assert counts.unexplained == 0


def test_rejected_schemas_are_counted_with_their_reason(tok: Any) -> None:
    lltok = lltokenizer(tok, len(tok))
    counts = check_schema(_entry({"$ref": "https://example.com/x.json"}, (True, 1)), lltok, _encode(tok))
    assert counts.rejected == 1 and counts.untested == 1 and counts.compiled == 0
    assert list(counts.rejected_by) == ["$ref: unresolvable reference …"]


def test_sampling_is_deterministic_and_spread(tok: Any) -> None:
    schema = {"type": "integer"}
    entries = {"c": [_entry(schema, (True, i)) | {"id": str(i)} for i in range(10)]}
    first = coverage(entries, tok, sample=3)
    assert first["c"].schemas == 3 and first["c"].valid_accepted == 3
    assert coverage(entries, tok, sample=3)["c"].schemas == 3
    assert "TOTAL" in table(first)


# --- writing an instance as the decoder would ------------------------------------------------------------


def test_emit_writes_compact_json_with_keys_in_grammar_order(tok: Any) -> None:
    schema = {"type": "object", "properties": {"b": {}, "a": {"type": "object", "properties": {"y": {}, "x": {}}}},
              "required": ["a", "z"]}
    value = {"extra": 1, "z": 0, "a": {"x": 1, "y": 2}, "b": "설명\n"}
    text = emit(value, schema)
    assert text == '{"b":"설명\\n","a":{"y":2,"x":1},"z":0,"extra":1}'
    assert json.loads(text) == value  # same members: only the order of keys differs
    assert _grammar_accepts(tok, schema | {"additionalProperties": True}, text)


def _grammar_accepts(tok: Any, schema: dict[str, Any], text: str) -> bool:
    import llguidance

    from guardrail.local.grammar import build_grammar

    lltok = lltokenizer(tok, len(tok))
    matcher = llguidance.LLMatcher(lltok, build_grammar(schema, lltok).grammar, log_level=0)
    return bool(matcher.consume_tokens(_encode(tok)(text)) and matcher.is_accepting())


def test_emit_follows_references_allof_and_the_matching_branch(tok: Any) -> None:
    schema = {"$defs": {"base": {"properties": {"id": {}}}},
              "$ref": "#/$defs/base",
              "allOf": [{"properties": {"kind": {}}}],
              "anyOf": [{"properties": {"n": {"type": "integer"}}, "required": ["n"]},
                        {"properties": {"s": {"type": "string"}, "n": {}}, "required": ["s"]}],
              "properties": {"name": {}}}

    def branch_ok(branch: Any, data: Any) -> bool:
        return all(key in data for key in branch.get("required", []))

    # document order: $ref, allOf, anyOf (the first branch whose required keys are present), own properties
    cases = {'{"id":7,"kind":"k","n":1,"name":"x","s":"t"}': {"name": "x", "s": "t", "n": 1, "kind": "k", "id": 7},
             '{"id":7,"kind":"k","s":"t","name":"x"}': {"name": "x", "s": "t", "kind": "k", "id": 7}}
    for text, value in cases.items():
        assert emit(value, schema, branch_ok) == text
        assert _grammar_accepts(tok, schema, text)  # the engine's own order, not a guess
        assert not _grammar_accepts(tok, schema, json.dumps(value, separators=(",", ":")))


def test_emit_puts_own_properties_where_additional_properties_stands(tok: Any) -> None:
    first = {"additionalProperties": False, "oneOf": [{"properties": {"b": {}}}], "properties": {"a": {}, "b": {}}}
    last = {"oneOf": [{"properties": {"b": {}}}], "properties": {"a": {}, "b": {}}, "additionalProperties": False}
    assert emit({"b": 1, "a": 2}, first) == '{"a":2,"b":1}'
    assert emit({"a": 2, "b": 1}, last) == '{"b":1,"a":2}'
    assert _grammar_accepts(tok, first, '{"a":2,"b":1}') and not _grammar_accepts(tok, first, '{"b":1,"a":2}')
    assert _grammar_accepts(tok, last, '{"b":1,"a":2}') and not _grammar_accepts(tok, last, '{"a":2,"b":1}')


def test_emit_writes_numbers_in_plain_decimal() -> None:
    assert emit([1.0, -0.0, 1e-05, 2.5, 1e24, True, None, 10**30], {}) == (
        "[1,0,0.00001,2.5,1000000000000000000000000,true,null,1000000000000000000000000000000]")


def test_emit_orders_const_and_enum_objects_like_the_literal(tok: Any) -> None:
    schema = {"enum": [3, {"q": 1, "p": {"k": 2, "j": [{"z": 0, "y": 1}]}}]}
    text = emit({"p": {"j": [{"y": 1, "z": 0}], "k": 2}, "q": 1}, schema)
    assert text == '{"q":1,"p":{"k":2,"j":[{"z":0,"y":1}]}}'
    assert _grammar_accepts(tok, schema, text)


def test_emit_is_iterative() -> None:
    value: Any = 0
    for _ in range(50_000):
        value = [value]
    assert emit(value, {}).count("[") == 50_000
