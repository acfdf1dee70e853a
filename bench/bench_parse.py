"""Benchmark of the parse layer. Prints medians and ratios against baselines measured in the same run.

    python bench/bench_parse.py            # full run (about a minute)
    python bench/bench_parse.py --quick    # fewer repeats

Targets (issues 2, 14 and 23):
- clean JSON: guardrail.parse at most 1.3x pydantic's own ``validate_json`` on the same inputs;
- dirty JSON: at most 0.2x the time of ``json_repair.loads`` + pydantic validation, per group and over all;
  the groups go beyond the easy cases (fences, a few slips) to long prose around the JSON, many small slips
  spread over large objects, deep nesting, non-ASCII text with smart quotes, multi-line indented answers with
  trailing commas, and string-heavy answers (code, markdown and fences in strings, newlines raw or escaped);
- adversarial inputs: time per MB grows at most 25x when the input grows 10x (linear or better).

Not a test: nothing here asserts on time. Read the table.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from enum import StrEnum
from importlib.metadata import version
from typing import Any

import pydantic
from pydantic import BaseModel, Field, TypeAdapter

import guardrail


class Category(StrEnum):
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


class Node(BaseModel):
    name: str
    weight: float = 0.0
    children: list[Node] = []


class Review(BaseModel):
    author: str
    rating: int
    text: str
    tags: list[str]


class Snippet(BaseModel):
    language: str
    title: str
    code: str
    notes: list[str]
    review: str | None = None


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


def _invoice(n: int) -> dict[str, Any]:
    return {"invoice_id": "INV-2026-0042", "customer": "Hanbit Co. (한빛)", "total": 1234.5, "notes": None,
            "items": [{"sku": f"SKU-{i:04d}", "quantity": i + 1, "unit_price": round(9.99 + i, 2)}
                      for i in range(n)]}


def _segments(n: int) -> list[dict[str, Any]]:
    return [{"scriptText": f"Sentence {i} of the transcript, about the product demo.", "startSeconds": i * 7.5,
             "durationSeconds": 7.5, "keywords": ["demo", "product"]} for i in range(n)]


def _ticket(summary: str) -> dict[str, Any]:
    return {"urgency": 4, "category": "billing", "summary": summary, "tags": ["refund", "invoice"]}


def dirty_inputs() -> dict[str, list[tuple[Any, str]]]:
    """Realistic dirty answers in three groups, from about 150 bytes to 3 KB.

    wrapped: valid JSON inside fences, prose or tags (json_repair strips and calls json.loads, as we do);
    light slips: one to three syntax slips in otherwise clean JSON;
    heavy slips: every member slipped (JavaScript object style, Python dict repr, comments on every line).
    """
    ticket = json.dumps(_ticket("Charged twice for the October invoice; asks for a refund."))
    ticket_ko = json.dumps(_ticket("10월 청구서가 두 번 결제되어 환불을 요청합니다."), ensure_ascii=False)
    invoice = json.dumps(_invoice(12), indent=2)
    segments = json.dumps(_segments(16), indent=2)
    wrapped = [
        (Ticket, f"Sure! Here's the JSON:\n```json\n{ticket}\n```\nHope this helps!"),
        (Ticket, f"네, 요청하신 결과입니다.\n\n```JSON\n{ticket_ko}\n```\n\n추가 질문이 있으면 말씀해 주세요."),
        (Ticket, f"<json>{ticket}</json>"),
        (Invoice, f"Here is the extracted invoice:\n\n```json\n{invoice}\n```\n\nLet me know if anything is off."),
        (list[Segment], f"Segments:\n~~~\n{segments}\n~~~"),
    ]
    light = [
        (Ticket, "```json\n" + ticket.replace('"tags"', '// triage result\n  "tags"').replace('"]}', '",]}') + "\n```"),
        (Ticket, "Here you go: " + ticket.replace(', "category"', ' "category"') + " Thanks!"),
        (Invoice, "```json\n" + invoice.replace("null", "None").replace("}\n  ]", "},\n  ]") + "\n```"),
        (Invoice, invoice.replace('"notes": null', '"notes": null, // none given') + "\n"),
        (list[Segment], "```json\n" + segments.replace("}\n]", "},\n]") + "\n```"),
    ]
    js_ticket = "{urgency: 3, category: 'shipping', summary: 'Parcel lost in transit', tags: ['lost', 'parcel']}"
    py_invoice = repr(_invoice(12))
    js_segments = "[\n" + ",\n".join(
        f"  {{scriptText: 'Sentence {i} of the transcript.', startSeconds: {i * 7.5}, durationSeconds: 7.5, "
        f"keywords: ['demo', 'product']}}" for i in range(16)) + "\n]"
    members = _ticket("Refund request").items()
    commented = "{\n" + "".join(f'  "{k}": {json.dumps(v)}, // {k}\n' for k, v in members) + "}"
    heavy = [
        (Ticket, f"<json>{js_ticket}</json>"),
        (Invoice, f"```python\n{py_invoice}\n```"),
        (list[Segment], js_segments),
        (Ticket, commented),
    ]
    return {"wrapped": wrapped, "light slips": light, "heavy slips": heavy, **varied_inputs()}


_PROSE = ("The customer wrote in twice about the same charge; the first message was polite, the second less so. "
          "I checked the ledger, the payment processor's log and the refund queue before answering. ")
_PROSE_KO = "고객이 같은 결제 건으로 두 번 문의했습니다. 원장과 결제 기록, 환불 대기열을 모두 확인했습니다. "


def _node(depth: int, fanout: int = 2) -> dict[str, Any]:
    if depth == 0:
        return {"name": "leaf", "weight": 0.5, "children": []}
    return {"name": f"level-{depth}", "weight": depth * 1.5, "children": [_node(depth - 1, 1) for _ in range(fanout)]}


def _slipped_items(n: int) -> str:
    """A 60-item invoice in which every few items carry a different small slip, spread over the object."""
    parts = []
    for i in range(n):
        sku, qty, price = f"SKU-{i:04d}", i + 1, round(9.99 + i, 2)
        slip = i % 6
        if slip == 0:
            parts.append(f"{{'sku': '{sku}', 'quantity': {qty}, 'unit_price': {price}}}")
        elif slip == 1:
            parts.append(f'{{"sku": "{sku}", "quantity": {qty}, "unit_price": {price},}}')
        elif slip == 2:
            parts.append(f'{{sku: "{sku}", quantity: {qty}, unit_price: {price}}}  // checked')
        elif slip == 3:
            parts.append(f'{{"sku": "{sku}" "quantity": {qty}, "unit_price": {price}}}')
        else:
            parts.append(json.dumps({"sku": sku, "quantity": qty, "unit_price": price}))
    items = ",\n    ".join(parts)
    return ('{\n  "invoice_id": "INV-2026-0099",\n  "customer": "Hanbit Co.",\n  "total": 4321.5,\n'
            f'  "notes": None,\n  "items": [\n    {items}\n  ]\n}}')


def varied_inputs() -> dict[str, list[tuple[Any, str]]]:
    """Dirty answers unlike the ones above (issue 14: the bench must not flatter).

    long prose: kilobytes of explanation (English and Korean, with Markdown lists, brackets and braces in
    the prose) before and after the JSON; many slips: a large invoice with a slip every few items and a
    Python ``None``; deep nesting: a tree 12 levels deep with slips at the bottom; Unicode: Korean and
    emoji strings with smart quotes and a BOM.
    """
    ticket = json.dumps(_ticket("Charged twice for the October invoice; asks for a refund."))
    prose = (_PROSE * 12 + "\n\n- step one (see [1])\n- step two: {ledger} checked\n\n") + _PROSE_KO * 10
    long_prose = [
        (Ticket, f"{prose}\n\nHere is the ticket:\n\n{ticket}\n\n{_PROSE * 8}"),
        (Ticket, f"{prose}\n```json\n{ticket}\n```\n{_PROSE_KO * 12}"),
        (Invoice, f"{_PROSE * 20}\n{json.dumps(_invoice(30), ensure_ascii=False)}\n{_PROSE * 10}"),
    ]
    many = [
        (Invoice, "```json\n" + _slipped_items(60) + "\n```"),
        (Invoice, "Extracted:\n" + _slipped_items(120) + "\nDone."),
    ]
    tree = json.dumps(_node(12, 1), indent=1)
    deep = [
        (Node, tree.replace('"children": []', '"children": [],').replace("0.5,", "0.5, // leaf")),
        (Node, "```\n" + json.dumps(_node(6, 2)).replace('"weight"', "weight") + "\n```"),
    ]
    reviews = [{"author": f"사용자{i} 🙂", "rating": 1 + i % 5, "text": "배송이 빨랐어요 — “정말” 만족합니다 ✨ " * 3,
                "tags": ["배송", "만족", "✨"]} for i in range(20)]
    review_text = json.dumps(reviews, ensure_ascii=False).replace('"tags"', "\u201ctags\u201d")
    unicode = [
        (list[Review], "\ufeff" + review_text.replace('"rating"', "'rating'")),
        (Review, "“리뷰” 결과입니다:\n" + json.dumps(reviews[0], ensure_ascii=False).replace(
            '"text"', "\u201ctext\u201d").replace("}", ",}") + "\n감사합니다 🙏"),
    ]
    return {"long prose": long_prose, "many slips": many, "deep nesting": deep, "unicode": unicode,
            **widened_inputs()}


_TRAILING: re.Pattern[str] = re.compile(r"(?<=[}\]\"0-9el])(\n[ ]*[}\]])")
_STRING: re.Pattern[str] = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


def _trailing_commas(indented: str) -> str:
    """An indented dump with a comma after the last member or element of every container (JS/Python style)."""
    return _TRAILING.sub(r",\1", indented)


def _raw_newlines(dumped: str) -> str:
    """A dump with the ``\\n`` escapes inside its strings written as raw newlines (what models often do)."""
    return _STRING.sub(lambda m: m.group(0).replace("\\n", "\n"), dumped)


_CODE = [
    "```python\ndef total(items):\n    # sum the prices {not a dict}\n    return sum(i['price'] for i in items)\n```",
    "```sql\nSELECT name FROM users WHERE email = \"a@b.c\" AND path LIKE 'C:\\\\tmp\\\\%';\n```",
    "```json\n{\"example\": [1, 2, 3], \"note\": \"// not a comment\"}\n```",
    "<div class=\"card\">\n  <h3>Title</h3>\n  <p>Here is the JSON: {}</p>\n</div>",
    "# Heading\n\n- item with `code` and [link](http://x.y)\n- item two # not a comment\n\n> quote",
]


def _snippet(i: int) -> dict[str, Any]:
    return {"language": ["python", "sql", "json", "html", "markdown"][i % 5], "title": f"Example {i}: say \"hi\"",
            "code": "\n\n".join(_CODE[(i + k) % 5] for k in range(3)),
            "notes": [f"note {k}: see {{braces}} and [brackets] // and <think>tags</think>" for k in range(3)],
            "review": None if i % 2 else "Looks good.\nShip it."}


def widened_inputs() -> dict[str, list[tuple[Any, str]]]:
    """Dirty answers unlike the bench's own (issue 23): multi-line indented answers with a trailing comma in
    every container, fenced or not, with prose around them; and string-heavy answers whose strings hold code,
    markdown, fences, quotes and backslashes, their newlines escaped or written raw."""
    invoice = _trailing_commas(json.dumps(_invoice(30), indent=2))
    segments = _trailing_commas(json.dumps(_segments(24), indent=4))
    ticket = _trailing_commas(json.dumps(_ticket("Charged twice for the October invoice."), indent=2))
    review_items = [{"author": f"사용자{i}", "rating": 1 + i % 5, "text": "배송이 빨랐어요. " * 4,
                     "tags": ["배송", "만족"]} for i in range(12)]
    reviews = _trailing_commas(json.dumps(review_items, indent=2, ensure_ascii=False))
    indented = [
        (Invoice, f"Here is the invoice I extracted:\n\n```json\n{invoice}\n```\n\nTotals were checked twice."),
        (list[Segment], f"{_PROSE}\n```\n{segments}\n```\n{_PROSE}"),
        (Ticket, f"Sure! The ticket:\n{ticket}\nAnything else?"),
        (list[Review], f"```json\n{reviews}\n```"),
    ]
    one = json.dumps(_snippet(0), indent=2)
    many = json.dumps([_snippet(i) for i in range(6)], indent=2)
    strings = [
        (Snippet, f"Here is the snippet:\n```json\n{one}\n```\nIt compiles."),
        (Snippet, f"Here is the snippet:\n```json\n{_raw_newlines(one)}\n```\nIt compiles."),
        (list[Snippet], f"{_PROSE}\n```json\n{_raw_newlines(many)}\n```"),
        (list[Snippet], f"The snippets:\n{_raw_newlines(many)}\nDone."),
    ]
    return {"indented, trailing commas": indented, "string-heavy": strings}


def adversarial(size: int) -> dict[str, str]:
    return {
        "unclosed fence + spaces": "```json\n" + " " * size,
        "open brackets [": "[" * size,
        "deep {\"a\": nesting": '{"a":' * (size // 5),
        "unclosed string + commas": '{"a": "' + "," * size,
        "braces in prose": "see {note " * (size // 10),
        "quotes": '"' * size,
    }


def _chosen_json(text: str, output_type: Any) -> str:
    """The JSON text of the candidate guardrail chose (the wrapped input without its wrappers)."""
    report = guardrail.parse_report(text, output_type)
    chosen = next(c for c in report.candidates if c.status == "valid")
    return text[chosen.start : chosen.end]


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
        try:
            return adapter(output_type).validate_python(json_repair.loads(text))
        except pydantic.ValidationError:  # json_repair read the wrong thing: its time still counts
            return None

    def repair_then_validate_or_raise(output_type: Any, text: str) -> object:
        return adapter(output_type).validate_python(json_repair.loads(text))

    def ours(output_type: Any, text: str) -> object:
        return guardrail.parse(text, output_type)

    clean, dirty_groups = clean_inputs(), dirty_inputs()
    dirty = [item for group in dirty_groups.values() for item in group]
    for output_type, text in clean + dirty:  # warm caches and check every input really parses
        ours(output_type, text)
    repair_failures = []
    for output_type, text in dirty:
        try:
            repair_then_validate_or_raise(output_type, text)
        except Exception:
            repair_failures.append(text[:40])

    print(f"python {sys.version.split()[0]}, pydantic {pydantic.VERSION}, json_repair {version('json-repair')}")
    print(f"{'case':48} {'baseline':>11} {'guardrail':>11} {'ratio':>7}  target")
    t_base = median_time(run_all(pydantic_json, clean), repeats, inner)
    t_ours = median_time(run_all(ours, clean), repeats, inner)
    print(f"{'clean JSON, ' + str(len(clean)) + ' inputs (cost vs model_validate_json)':48} "
          f"{t_base * 1e6:9.1f}us {t_ours * 1e6:9.1f}us {t_ours / t_base:6.2f}x  <= 1.30x")
    dirty_inner = max(inner // 10, 5)
    totals = [0.0, 0.0]
    for group, items in dirty_groups.items():
        t_base = median_time(run_all(repair_then_validate, items), repeats, dirty_inner)
        t_ours = median_time(run_all(ours, items), repeats, dirty_inner)
        totals[0] += t_base
        totals[1] += t_ours
        label = f"dirty: {group}, {len(items)} inputs (vs json_repair)"
        print(f"{label:48} {t_base * 1e6:9.1f}us {t_ours * 1e6:9.1f}us {t_ours / t_base:6.2f}x  <= 0.20x")
    print(f"{'dirty: all ' + str(len(dirty)) + ' inputs':48} {totals[0] * 1e6:9.1f}us {totals[1] * 1e6:9.1f}us "
          f"{totals[1] / totals[0]:6.2f}x  <= 0.20x")
    # The floor under the wrapped group: pydantic alone on the JSON inside the wrappers (what any parser that
    # validates with pydantic must pay), against the same baseline.
    inner_json = [(output_type, _chosen_json(text, output_type)) for output_type, text in dirty_groups["wrapped"]]
    t_base = median_time(run_all(repair_then_validate, dirty_groups["wrapped"]), repeats, dirty_inner)
    t_floor = median_time(run_all(pydantic_json, inner_json), repeats, dirty_inner)
    print(f"{'  wrapped floor: pydantic on the bare JSON only':48} {t_base * 1e6:9.1f}us {t_floor * 1e6:9.1f}us "
          f"{t_floor / t_base:6.2f}x  (the least reachable)")
    print(f"  (json_repair + pydantic rejected {len(repair_failures)} of {len(dirty)} dirty inputs; guardrail none)")

    print()
    print(f"{'adversarial input':32} {'0.1 MB: ms/MB':>14} {'1 MB: ms/MB':>14} {'growth':>8}  (per-MB growth; "
          "<= 2.5x, i.e. <= 25x total time for 10x input)")
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
