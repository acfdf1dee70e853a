"""CPU per call on the hot path: ``guardrail.wrap`` against the raw openai SDK + ``model_validate_json``.

The vendor is an emulator in a *separate process* answering at once, so the CPU measured here
(``time.process_time`` of this process) is the client's alone: the SDK's request building and HTTP, and on
top of it guardrail's planning, lowering, parsing and validation. Both sides send the same strict
``json_schema`` request and get the same answer. Two contracts: a 3-field model and a 30-field nested model.

    python bench/bench_hotpath.py [--blocks 100] [--block 10]

The two sides run in alternating blocks of ``--block`` calls (raw, guardrail, raw, ...), ``--blocks`` each, and
the ratio is of the median CPU per call over the blocks (the mean ratio is printed beside it). Alternating
finely pairs the two sides in time: a machine whose speed drifts (a shared VM's steal time, frequency scaling)
shifts both alike, where long rounds of one side then the other measured the drift as much as the code.

Target (issue 18): guardrail's CPU per call <= 1.25x the raw baseline on both models.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from typing import Any

import openai
from pydantic import BaseModel, Field

import guardrail
from guardrail.schema.lower import lower


class Small(BaseModel):
    name: str
    quantity: int
    urgent: bool


class Address(BaseModel):
    street: str
    city: str
    postcode: str
    country: str = Field(min_length=2, max_length=2)


class Line(BaseModel):
    sku: str
    quantity: int = Field(ge=1)
    unit_price: float
    note: str | None = None


class Contact(BaseModel):
    name: str
    email: str
    phone: str | None = None


class Big(BaseModel):
    order_id: str
    placed_at: str
    customer: Contact
    billing: Address
    shipping: Address
    lines: list[Line]
    priority: int = Field(ge=1, le=5)
    gift: bool
    gift_message: str | None = None
    channel: str
    currency: str
    subtotal: float
    tax: float
    total: float
    tags: list[str]


def example(model: type[BaseModel]) -> str:
    if model is Small:
        return json.dumps({"name": "widget", "quantity": 3, "urgent": False})
    address = {"street": "1 Main St", "city": "Seoul", "postcode": "04524", "country": "KR"}
    return json.dumps({
        "order_id": "ORD-1", "placed_at": "2026-12-01T10:00:00Z",
        "customer": {"name": "Kim Min-jun", "email": "kim@example.com", "phone": None},
        "billing": address, "shipping": address,
        "lines": [{"sku": f"SKU-{i}", "quantity": i + 1, "unit_price": 9.5 + i, "note": None} for i in range(3)],
        "priority": 2, "gift": False, "gift_message": None, "channel": "web", "currency": "KRW",
        "subtotal": 40.5, "tax": 4.05, "total": 44.55, "tags": ["repeat", "vip"]})


def serve(port_queue: Any, stop: Any) -> None:
    """The emulator in its own process: answers every request with the example of its schema's contract."""
    from guardrail.testing import Emulator, reply

    with Emulator(check_schemas=False) as emu:
        def answer(request: Any) -> Any:
            schema = request.schema or {}
            return reply.answer(example(Big if "order_id" in json.dumps(schema) else Small))
        emu.responder = answer
        port_queue.put(emu.openai_base_url)
        stop.wait()


def cpu_per_call(fn: Any, calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - started) / calls


def paired(first: Any, second: Any, blocks: int, block: int) -> tuple[list[float], list[float]]:
    """CPU per call of ``first`` and ``second`` over ``blocks`` alternating blocks of ``block`` calls each."""
    ones: list[float] = []
    twos: list[float] = []
    for _ in range(blocks):
        ones.append(cpu_per_call(first, block))
        twos.append(cpu_per_call(second, block))
    return ones, twos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=100, help="blocks per side (default 100)")
    parser.add_argument("--block", type=int, default=10, help="calls per block (default 10)")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    port_queue, stop = context.Queue(), context.Event()
    server = context.Process(target=serve, args=(port_queue, stop), daemon=True)
    server.start()
    base_url = port_queue.get(timeout=60)
    try:
        raw = openai.OpenAI(base_url=base_url, api_key="test", max_retries=0)
        wrapped = guardrail.wrap(openai.OpenAI(base_url=base_url, api_key="test", max_retries=0))
        messages = [{"role": "user", "content": "Extract the order."}]
        print(f"{'contract':8} {'raw SDK + validate':>20} {'guardrail.wrap':>16} {'ratio':>7} {'mean ratio':>11}  "
              f"(CPU per call, median of {args.blocks} alternating blocks of {args.block} calls each)")
        for model in (Small, Big):
            strict = lower(model.model_json_schema(), "openai_strict").schema
            response_format = {"type": "json_schema",
                               "json_schema": {"name": model.__name__, "schema": strict, "strict": True}}

            def raw_call(model: type[BaseModel] = model, response_format: dict[str, Any] = response_format) -> Any:
                completion = raw.chat.completions.create(model="gpt-4o-mini", messages=messages,
                                                         response_format=response_format)
                return model.model_validate_json(completion.choices[0].message.content or "")

            def guarded_call(model: type[BaseModel] = model) -> Any:
                return wrapped.chat.completions.create(model="gpt-4o-mini", messages=messages, response_model=model)

            assert raw_call() == guarded_call()  # same answer both ways
            paired(raw_call, guarded_call, 5, args.block)  # warm both
            raws, guards = paired(raw_call, guarded_call, args.blocks, args.block)
            r, g = statistics.median(raws), statistics.median(guards)
            mean = statistics.mean(guards) / statistics.mean(raws)
            print(f"{model.__name__:8} {r * 1000:17.3f} ms {g * 1000:13.3f} ms {g / r:6.2f}x {mean:10.2f}x  "
                  "(target <= 1.25x)")
    finally:
        stop.set()
        server.join(timeout=10)


if __name__ == "__main__":
    main()
