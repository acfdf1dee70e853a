"""Plans are computed once per (contract schema, name, capabilities, mode): the hot path pays a lookup."""

from __future__ import annotations

import gc

import pytest
from pydantic import BaseModel

from guardrail.call.modes import capabilities, plans
from guardrail.contract import compile_contract


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
