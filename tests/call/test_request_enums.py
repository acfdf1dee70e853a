"""A contract built per request (an enum of the IDs retrieved for this call) sent to OpenAI in strict mode: as an
``enum`` while it fits OpenAI's documented limits (1,000 values in all, 15,000 characters for an enum over 250
values), else left out of the strict schema (the field keeps its type, the rest stays strict), said so in the
compile report, and checked after parsing: an answer outside the IDs is re-asked, never returned."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, create_model
from support.calls import api_method, wrapped_client

from guardrail.schema.limits import OPENAI_MAX_ENUM_VALUES
from guardrail.testing import Emulator, reply


def per_request(ids: list[str]) -> type[BaseModel]:
    model: type[BaseModel] = create_model("Pick", product_id=(Literal[tuple(ids)], ...), note=(str, ...))
    return model


def call(emu: Emulator, contract: Any) -> Any:
    method = api_method(wrapped_client(emu, "chat"), "chat")
    return method.create_with_result(response_model=contract, model="gpt-4o",
                                     messages=[{"role": "user", "content": "pick one"}])


@pytest.mark.parametrize("count", [10, 300])
def test_an_enum_within_the_limits_is_sent_as_an_enum(emu: Emulator, count: int) -> None:
    ids = [f"SKU-{i:05d}" for i in range(count)]
    emu.script(reply.answer('{"product_id": "SKU-00007", "note": "ok"}'))
    result = call(emu, per_request(ids))
    assert result.value.product_id == "SKU-00007"
    (request,) = emu.requests
    assert request.mode_fields["strict"] is True
    assert request.schema is not None and request.schema["properties"]["product_id"]["enum"] == ids


@pytest.mark.parametrize("count", [OPENAI_MAX_ENUM_VALUES + 1, 10_000])
def test_an_enum_over_the_limits_is_left_out_reported_and_post_checked(emu: Emulator, count: int) -> None:
    ids = [f"SKU-{i:05d}" for i in range(count)]
    emu.script(reply.answer('{"product_id": "SKU-99999x", "note": "made up"}'),
               reply.answer(f'{{"product_id": "{ids[-1]}", "note": "ok"}}'))
    result = call(emu, per_request(ids))
    assert result.value.product_id == ids[-1]  # the invented ID was refused and re-asked
    first = emu.requests[0]
    assert first.mode_fields["strict"] is True  # the rest of the contract stays strict
    sent = first.schema["properties"]["product_id"] if first.schema else {}
    assert sent["type"] == "string" and "enum" not in sent
    assert len(emu.requests) == 2
    report = result.compile_report
    assert report is not None and report.ok
    (entry,) = [e for e in report.post_validated if e.keyword == "enum"]
    assert entry.path == "/properties/product_id" and f"{count} values" in entry.detail
