"""Plans are computed once per (contract schema, name, capabilities, mode): the hot path pays a lookup."""

from __future__ import annotations

import gc

import openai
import pytest
from pydantic import BaseModel

import guardrail
from guardrail.contract import compile_contract
from guardrail.testing import Emulator, reply
from guardrail.vendors.plans import plans
from guardrail.vendors.profiles import capabilities


class Order(BaseModel):
    order_id: str
    quantity: int
    note: str | None = None


def test_the_same_contract_gets_the_same_plans_without_lowering_again() -> None:
    contract = compile_contract(Order)
    caps = capabilities("openai", "gpt-4o-mini")
    first = plans(contract.schema, "Order", caps)
    second = plans(contract.schema, "Order", caps)
    assert [p.mode for p in first] == [p.mode for p in second]
    assert all(a is b for a, b in zip(first, second, strict=True))  # the very same Plan objects: nothing redone
    assert first is not second  # a fresh list each call, so a caller cannot change the cached sequence


def test_other_arguments_and_other_schemas_get_their_own_plans() -> None:
    contract = compile_contract(Order)
    openai_caps, anthropic_caps = capabilities("openai", "gpt-4o-mini"), capabilities("anthropic", "claude-sonnet-4-5")
    assert plans(contract.schema, "Order", openai_caps)[0].report.dialect == "openai_strict"
    assert plans(contract.schema, "Order", anthropic_caps)[0].report.dialect == "anthropic_strict"
    forced = plans(contract.schema, "Order", openai_caps, forced="prompt")
    assert [p.mode for p in forced] == ["prompt"]
    equal_copy = dict(contract.schema)  # equal content, another object: computed for itself, and the same
    assert [p.schema for p in plans(equal_copy, "Order", openai_caps)] == \
        [p.schema for p in plans(contract.schema, "Order", openai_caps)]


@pytest.mark.slow
def test_a_schema_freed_and_replaced_at_the_same_address_is_never_served_stale_plans() -> None:
    caps = capabilities("openai", "gpt-4o-mini")
    seen = []
    for size in range(30):  # new dicts, freed each round: ids get reused, content differs
        schema = {"type": "object", "properties": {f"f{i}": {"type": "integer"} for i in range(size + 1)},
                  "required": [f"f{i}" for i in range(size + 1)]}
        native = plans(schema, "T", caps)[0]
        assert set(native.schema["properties"]) == set(schema["properties"])
        seen.append(id(schema))
        del schema
        gc.collect()


def test_a_wrapped_client_prepares_each_shape_of_call_once_and_keeps_shapes_apart() -> None:
    """The wrapper remembers the contract, capabilities and plans per (contract, model, mode, thinking); calls
    differing in any of them must not share what was prepared for another."""
    class Other(BaseModel):
        label: str

    with Emulator() as emu:
        client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="k", max_retries=0))
        ask = {"messages": [{"role": "user", "content": "x"}]}
        emu.script(*[reply.answer('{"order_id": "A", "quantity": 1}')] * 3, reply.answer('{"label": "l"}'),
                   reply.answer('{"order_id": "A", "quantity": 1}'))
        assert client.chat.completions.create(model="gpt-4o-mini", response_model=Order, **ask).quantity == 1
        client.chat.completions.create(model="gpt-4o-mini", response_model=Order, mode="tool", **ask)
        client.chat.completions.create(model="gpt-3.5-turbo", response_model=Order, **ask)  # no strict mode there
        assert client.chat.completions.create(model="gpt-4o-mini", response_model=Other, **ask).label == "l"
        client.chat.completions.create(model="gpt-4o-mini", response_model=Order, **ask)
        native, tool, older, other, again = emu.requests
        assert native.body["response_format"]["json_schema"]["name"] == "Order" and not native.tools
        assert tool.forced_tool == "Order"
        assert older.body.get("response_format", {}).get("type") != "json_schema"
        assert other.body["response_format"]["json_schema"]["name"] == "Other"
        assert again.body["response_format"] == native.body["response_format"]
