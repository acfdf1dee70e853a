"""Benchmark of JSON Schema contracts: ``guardrail.parse(text, schema)`` against the validator alone.

    python bench/bench_jsonschema.py            # full run (about a minute)
    python bench/bench_jsonschema.py --quick    # fewer repeats

Inputs: hand-written schemas (a ticket, an invoice with ``$ref``, a list of segments, an MCP-style tool input with
formats) with clean instances, plus valid MaskBench instances when the corpus is found (``--corpus``,
``$GUARDRAIL_CORPORA/maskbench`` or ``../shared/corpora/maskbench``). Each row is the time for the whole set,
the median of several repeats; ratios are against baselines measured in the same run:

- ``jsonschema-rs + json.loads``: the chosen validator alone, as it is used on model text
  (``validator.is_valid(json.loads(text))``). Target (issue 14): guardrail's clean path <= 1.0x this.
- ``jsonschema-rs + from_json``: the same validator fed by pydantic-core's faster JSON parser (the parser
  guardrail uses), the floor of what any wrapper could cost.
- ``jsonschema (Python)``: the pure-Python reference, formats asserted: why jsonschema-rs was chosen.

Dirty inputs (fences, prose, slips, strings for numbers) are timed too, against ``json_repair.loads`` + the
validator. Not a test: nothing here asserts on time. Read the table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jsonschema_rs
from pydantic_core import from_json

import guardrail

TICKET = {
    "title": "Ticket", "type": "object", "additionalProperties": False,
    "properties": {"urgency": {"type": "integer", "minimum": 1, "maximum": 5},
                   "category": {"enum": ["billing", "shipping", "account", "other"]},
                   "summary": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["urgency", "category", "summary"],
}
INVOICE = {
    "title": "Invoice", "type": "object",
    "$defs": {"item": {"type": "object", "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"},
                                                        "unit_price": {"type": "number"}},
                       "required": ["sku", "quantity", "unit_price"]}},
    "properties": {"invoice_id": {"type": "string", "pattern": "^INV-[0-9]{4}-[0-9]{4}$"},
                   "customer": {"type": "string"}, "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
                   "total": {"type": "number"}, "notes": {"type": ["string", "null"]}},
    "required": ["invoice_id", "customer", "items", "total"],
}
SEGMENTS = {
    "type": "array",
    "items": {"type": "object", "properties": {"scriptText": {"type": "string"}, "startSeconds": {"type": "number"},
                                               "durationSeconds": {"type": "number"},
                                               "keywords": {"type": "array", "items": {"type": "string"}}},
              "required": ["scriptText", "startSeconds", "durationSeconds", "keywords"]},
}
BOOKING = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "book_meeting", "type": "object",
    "properties": {"attendee": {"type": "string", "format": "email"}, "day": {"type": "string", "format": "date"},
                   "minutes": {"type": "integer", "enum": [15, 30, 60]}, "room": {"type": "string"}},
    "required": ["attendee", "day", "minutes"], "additionalProperties": False,
}


def clean_inputs() -> list[tuple[dict[str, Any], str]]:
    tickets = [{"urgency": 4, "category": "billing", "summary": "Charged twice for the October invoice.",
                "tags": ["refund", "invoice"]},
               {"urgency": 2, "category": "shipping", "summary": "배송이 일주일째 지연되고 있습니다.",
                "tags": ["배송"]},
               {"urgency": 5, "category": "account", "summary": "Locked out after password reset; payroll due."}]
    invoice = {"invoice_id": "INV-2026-0042", "customer": "Hanbit Co.", "total": 1234.5, "notes": None,
               "items": [{"sku": f"SKU-{i}", "quantity": i + 1, "unit_price": 9.99 + i} for i in range(12)]}
    segments = [{"scriptText": f"Sentence number {i} of the transcript.", "startSeconds": i * 7.5,
                 "durationSeconds": 7.5, "keywords": ["intro", "demo"]} for i in range(20)]
    booking = {"attendee": "ada@example.com", "day": "2026-12-05", "minutes": 30, "room": "Lovelace"}
    return [*((TICKET, json.dumps(t, ensure_ascii=False)) for t in tickets), (INVOICE, json.dumps(invoice)),
            (SEGMENTS, json.dumps(segments)), (BOOKING, json.dumps(booking))]


def dirty_inputs() -> list[tuple[dict[str, Any], str]]:
    return [
        (TICKET, 'Sure! Here is the ticket:\n```json\n{"urgency": "4", "category": "Billing", '
                 '"summary": "Charged twice.", "tags": ["refund",],}\n```\nLet me know.'),
        (INVOICE, "The invoice:\n" + json.dumps({"invoice_id": "INV-2026-0042", "customer": "Hanbit Co.",
                                                 "total": "1234.5", "items": [{"sku": "A", "quantity": "2",
                                                                                "unit_price": 3.5}]})[:-1] + ",}"),
        (BOOKING, "<answer>{'attendee': 'ada@example.com', 'day': '2026-12-05', 'minutes': '30'}</answer>"),
    ]


def corpus_inputs(directory: Path | None, limit: int) -> list[tuple[dict[str, Any], str]]:
    """Valid MaskBench instances (by jsonschema-rs), spread evenly over the corpus, at most ``limit``."""
    from guardrail.testing.corpora import find_corpus, load

    directory = directory or find_corpus()
    if directory is None:
        return []
    pairs: list[tuple[dict[str, Any], str]] = []
    for entries in load(directory).values():
        for entry in entries:
            try:
                validator = jsonschema_rs.validator_for(entry["schema"], validate_formats=True, offline=True)
            except Exception:  # a schema jsonschema-rs refuses is not a clean-path input
                continue
            pairs.extend((entry["schema"], json.dumps(test["data"])) for test in entry["tests"]
                         if test["valid"] and validator.is_valid(test["data"]))
    step = max(1, len(pairs) // limit)
    return pairs[::step][:limit]


def timed(run: Callable[[], object], repeats: int, loops: int) -> float:
    """Median seconds of one ``run()`` over ``repeats`` samples of ``loops`` calls each."""
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(loops):
            run()
        samples.append((time.perf_counter() - started) / loops)
    return statistics.median(samples)


def suite(pairs: list[tuple[dict[str, Any], str]], repeats: int, loops: int) -> dict[str, float]:
    """Total seconds for the whole set, per contender."""
    import jsonschema

    rows: dict[str, float] = {}
    compiled = [(jsonschema_rs.validator_for(s, validate_formats=True, offline=True), s, t) for s, t in pairs]
    py = []
    for schema, text in pairs:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        py.append((cls(schema, format_checker=cls.FORMAT_CHECKER), text))
    for _, schema, text in compiled:
        guardrail.parse(text, schema)  # compile and cache every contract first
    rows["guardrail.parse(text, schema)"] = sum(
        timed(lambda s=schema, t=text: guardrail.parse(t, s), repeats, loops) for _, schema, text in compiled)
    rows["jsonschema-rs + json.loads"] = sum(
        timed(lambda v=v, t=text: v.is_valid(json.loads(t)), repeats, loops) for v, _, text in compiled)
    rows["jsonschema-rs + from_json"] = sum(
        timed(lambda v=v, t=text: v.is_valid(from_json(t)), repeats, loops) for v, _, text in compiled)
    rows["jsonschema (Python) + json.loads"] = sum(
        timed(lambda v=v, t=text: v.is_valid(json.loads(t)), repeats, max(1, loops // 10)) for v, text in py)
    return rows


def dirty_suite(pairs: list[tuple[dict[str, Any], str]], repeats: int, loops: int) -> dict[str, float]:
    import json_repair

    rows: dict[str, float] = {}
    compiled = [(jsonschema_rs.validator_for(s, validate_formats=True, offline=True), s, t) for s, t in pairs]
    for _, schema, text in compiled:
        guardrail.parse(text, schema)  # each must parse (the bench is meaningless otherwise)
    rows["guardrail.parse(text, schema)"] = sum(
        timed(lambda s=schema, t=text: guardrail.parse(t, s), repeats, loops) for _, schema, text in compiled)
    rows["json_repair.loads + jsonschema-rs"] = sum(
        timed(lambda v=v, t=text: v.is_valid(json_repair.loads(t)), repeats, loops) for v, _, text in compiled)
    return rows


def show(title: str, rows: dict[str, float], base: str) -> None:
    print(f"\n{title}")
    for name, seconds in rows.items():
        print(f"  {name:<36} {seconds * 1e6:10.1f} us   {seconds / rows[base]:6.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--corpus", type=Path, default=None, help="the maskbench directory")
    parser.add_argument("--sample", type=int, default=300, help="MaskBench instances in the corpus set")
    args = parser.parse_args()
    repeats, loops = (3, 100) if args.quick else (7, 400)
    print(f"python {sys.version.split()[0]}, jsonschema-rs {version('jsonschema-rs')}, "
          f"jsonschema {version('jsonschema')}")
    hand = suite(clean_inputs(), repeats, loops)
    show(f"clean, hand-written schemas ({len(clean_inputs())} inputs, total per pass)", hand,
         "jsonschema-rs + json.loads")
    corpus = corpus_inputs(args.corpus, args.sample)
    if corpus:
        rows = suite(corpus, repeats, max(10, loops // 10))
        show(f"clean, MaskBench valid instances ({len(corpus)} inputs, total per pass)", rows,
             "jsonschema-rs + json.loads")
    else:
        print("\n(MaskBench corpus not found: corpus rows skipped)")
    show(f"dirty ({len(dirty_inputs())} inputs)", dirty_suite(dirty_inputs(), repeats, loops),
         "json_repair.loads + jsonschema-rs")
    print("\ntarget: clean guardrail.parse <= 1.00x 'jsonschema-rs + json.loads' (the validator alone)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
