"""CPU per call on the hot path: ``guardrail.wrap`` against the raw openai SDK + ``model_validate_json``.

The vendor is an emulator in a *separate process* answering at once, so the CPU measured here
(``time.process_time`` of this process) is the client's alone: the SDK's request building and HTTP, and on
top of it guardrail's planning, lowering, parsing and validation. Both sides send the same strict
``json_schema`` request and get the same answer. Two contracts: a 3-field model and a 30-field nested model.

    python bench/bench_hotpath.py [--calls 300] [--rounds 5]

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
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
        print(f"{'contract':8} {'raw SDK + validate':>20} {'guardrail.wrap':>16} {'ratio':>7}  (CPU per call, "
              f"median of {args.rounds} rounds x {args.calls} calls)")
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

            assert raw_call() == guarded_call()  # same answer both ways, and everything warmed
            raws, guards = [], []
            for _ in range(args.rounds):  # interleaved so both see the same machine state
                raws.append(cpu_per_call(raw_call, args.calls))
                guards.append(cpu_per_call(guarded_call, args.calls))
            r, g = statistics.median(raws), statistics.median(guards)
            print(f"{model.__name__:8} {r * 1000:17.3f} ms {g * 1000:13.3f} ms {g / r:6.2f}x   (target <= 1.25x)")
    finally:
        stop.set()
        server.join(timeout=10)


if __name__ == "__main__":
    main()
