"""Benchmark of the parse layer. Prints medians and ratios against baselines measured in the same run.

    python bench/bench_parse.py            # full run (about a minute)
    python bench/bench_parse.py --quick    # fewer repeats

Targets (issue 2):
- clean JSON: guardrail.parse at most 1.3x pydantic's own ``validate_json`` on the same inputs;
- dirty JSON (fences, prose, syntax slips): at least 5x faster than ``json_repair.loads`` + pydantic validation;
- adversarial inputs: time per MB stays flat (or falls) as the input grows 10x.

Not a test: nothing here asserts on time. Read the table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from enum import Enum
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter

import guardrail


class Category(str, Enum):
    billing = "billing"
    shipping = "shipping"
    account = "account"
    other = "other"


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    category: Category
    summary: str
    tags: list[str] = []


class LineItem(BaseModel):
    sku: str
    quantity: int
    unit_price: float


class Invoice(BaseModel):
    invoice_id: str
    customer: str
    items: list[LineItem]
    total: float
    notes: str | None = None


class Segment(BaseModel):
    scriptText: str
    startSeconds: float
    durationSeconds: float
    keywords: list[str]


def clean_inputs() -> list[tuple[Any, str]]:
    tickets = [
        Ticket(urgency=4, category=Category.billing, summary="Charged twice for the October invoice.",
               tags=["refund", "invoice"]),
        Ticket(urgency=2, category=Category.shipping, summary="배송이 일주일째 지연되고 있습니다.", tags=["배송"]),
        Ticket(urgency=5, category=Category.account, summary="Locked out after password reset; payroll due today."),
    ]
    invoice = Invoice(invoice_id="INV-2026-0042", customer="Hanbit Co.", total=1234.5, notes=None,
                      items=[LineItem(sku=f"SKU-{i}", quantity=i + 1, unit_price=9.99 + i) for i in range(12)])
    segments = [Segment(scriptText=f"Sentence number {i} of the transcript.", startSeconds=i * 7.5,
                        durationSeconds=7.5, keywords=["intro", "demo"]) for i in range(20)]
    out: list[tuple[Any, str]] = [(Ticket, t.model_dump_json()) for t in tickets]
    out.append((Invoice, invoice.model_dump_json()))
    out.append((list[Segment], json.dumps([s.model_dump() for s in segments])))
    return out


def dirty_inputs() -> list[tuple[Any, str]]:
    ticket = '{"urgency": 4, "category": "billing", "summary": "Charged twice for October.", "tags": ["refund"]}'
    items = ",\n    ".join(f"{{'sku': 'SKU-{i}', 'quantity': {i + 1}, 'unit_price': {9.99 + i:.2f},}}"
                           for i in range(12))
    return [
        (Ticket, f"Sure! Here's the JSON:\n```json\n{ticket}\n```\nHope this helps!"),
        (Ticket, f"네, 요청하신 결과입니다.\n\n```JSON\n{ticket}\n```\n\n추가 질문이 있으면 말씀해 주세요."),
        (Ticket, '```json\n{\n  // triage result\n  "urgency": 4,\n  "category": "billing",\n'
                 '  "summary": "Charged twice",\n  "tags": ["refund", "invoice",],\n}\n```'),
        (Ticket, "<json>{urgency: 3, category: 'shipping', summary: 'Parcel lost', tags: ['lost']}</json>"),
        (Ticket, 'Here you go: {"urgency": 2 "category": "account" "summary": "Cannot log in", "tags": []} Thanks'),
        (Invoice, "```python\n{'invoice_id': 'INV-1', 'customer': 'Hanbit', 'notes': None,\n  'items': [\n    "
                  + items + "\n  ],\n  'total': 1234.5,\n}\n```"),
        (list[Segment], "Segments:\n```json\n" + json.dumps(
            [{"scriptText": f"Line {i}.", "startSeconds": i * 5, "durationSeconds": 5, "keywords": ["k"]}
             for i in range(20)], indent=2).replace("}\n  ]", "},\n  ]") + "\n```"),
    ]


def adversarial(size: int) -> dict[str, str]:
    return {
        "unclosed fence + spaces": "```json\n" + " " * size,
        "open brackets [": "[" * size,
        "deep {\"a\": nesting": '{"a":' * (size // 5),
        "unclosed string + commas": '{"a": "' + "," * size,
        "braces in prose": "see {note " * (size // 10),
        "quotes": '"' * size,
    }


def median_time(fn: Callable[[], object], repeats: int, inner: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def run_all(fn: Callable[[Any, str], object], inputs: list[tuple[Any, str]]) -> Callable[[], None]:
    def go() -> None:
        for output_type, text in inputs:
            fn(output_type, text)
    return go


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    repeats, inner = (5, 50) if args.quick else (15, 200)

    import json_repair

    adapters: dict[Any, TypeAdapter[Any]] = {}

    def adapter(output_type: Any) -> TypeAdapter[Any]:
        if output_type not in adapters:
            adapters[output_type] = TypeAdapter(output_type)
        return adapters[output_type]

    def pydantic_json(output_type: Any, text: str) -> object:
        if isinstance(output_type, type) and issubclass(output_type, BaseModel):
            return output_type.model_validate_json(text)
        return adapter(output_type).validate_json(text)

    def repair_then_validate(output_type: Any, text: str) -> object:
        return adapter(output_type).validate_python(json_repair.loads(text))

    def ours(output_type: Any, text: str) -> object:
        return guardrail.parse(text, output_type)

    clean, dirty = clean_inputs(), dirty_inputs()
    for output_type, text in clean + dirty:  # warm caches and check every input really parses
        ours(output_type, text)
    ok_repair = 0
    for output_type, text in dirty:
        try:
            repair_then_validate(output_type, text)
            ok_repair += 1
        except Exception:
            pass

    print(f"python {sys.version.split()[0]}, pydantic {guardrail.compile_contract.__module__ and ''}"
          f"{__import__('pydantic').VERSION}, json_repair {getattr(json_repair, '__version__', '?')}")
    print(f"{'case':44} {'baseline':>12} {'guardrail':>12} {'ratio':>8}  target")
    t_base = median_time(run_all(pydantic_json, clean), repeats, inner)
    t_ours = median_time(run_all(ours, clean), repeats, inner)
    print(f"{'clean JSON, ' + str(len(clean)) + ' inputs (vs model_validate_json)':44} "
          f"{t_base * 1e6:10.1f}us {t_ours * 1e6:10.1f}us {t_ours / t_base:7.2f}x  <= 1.30x")
    t_base = median_time(run_all(repair_then_validate, dirty), repeats, max(inner // 10, 5))
    t_ours = median_time(run_all(ours, dirty), repeats, max(inner // 10, 5))
    print(f"{'dirty JSON, ' + str(len(dirty)) + ' inputs (vs json_repair+pydantic)':44} "
          f"{t_base * 1e6:10.1f}us {t_ours * 1e6:10.1f}us {t_base / t_ours:7.2f}x  >= 5x faster "
          f"(json_repair+pydantic accepted {ok_repair}/{len(dirty)}; guardrail {len(dirty)}/{len(dirty)})")

    print()
    print(f"{'adversarial input':32} {'0.1 MB: ms/MB':>14} {'1 MB: ms/MB':>14} {'growth':>8}")
    small, large = adversarial(100_000), adversarial(1_000_000)
    for name in small:
        per_mb = []
        for text in (small[name], large[name]):
            report_time = median_time(lambda t=text: guardrail.parse_report(t, Ticket), 3, 1)
            per_mb.append(report_time / (len(text.encode()) / 1e6) * 1e3)
        print(f"{name:32} {per_mb[0]:14.2f} {per_mb[1]:14.2f} {per_mb[1] / per_mb[0]:7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
