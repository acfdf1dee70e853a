"""The ``gemini`` dialect: what Gemini's ``response_json_schema`` takes, and the profile rows that choose it.

Checked against the emulator's independent checker (:func:`guardrail.testing.strictness.gemini_schema_problems`,
written from Gemini's documented keyword list, not from the lowering): a schema the dialect accepts is one the
checker accepts, for every contract shape hypothesis draws.
"""

from __future__ import annotations

import datetime
from typing import Any, Literal

from hypothesis import given, settings
from pydantic import BaseModel, Field
from support.random_contracts import Spec, specs

from guardrail.contract import compile_contract
from guardrail.schema.lower import lower
from guardrail.testing.strictness import gemini_schema_problems
from guardrail.vendors.plans import plans
from guardrail.vendors.profiles import capabilities


class Job(BaseModel):
    kind: Literal["print"]
    copies: int = Field(ge=1, le=99)
    code: str = Field(pattern="^[A-Z]+$", min_length=2)
    share: float = Field(gt=0, multiple_of=0.5)
    when: datetime.date
    tags: list[str] = Field(default=[], max_length=3)
    note: str | None = None


class Node(BaseModel):
    name: str
    children: list[Node] = []


def test_bounds_and_counts_are_sent_lengths_and_patterns_are_left_to_guardrail() -> None:
    lowered = lower(compile_contract(Job).schema, "gemini")
    assert lowered.report.ok and gemini_schema_problems(lowered.schema) == []
    props = lowered.schema["properties"]
    assert (props["copies"]["minimum"], props["copies"]["maximum"]) == (1, 99)
    assert props["tags"]["maxItems"] == 3 and props["when"]["format"] == "date"
    assert props["kind"]["enum"] == ["print"] and "const" not in props["kind"]  # Gemini has enum, not const
    assert "pattern" not in props["code"] and "minLength" not in props["code"]
    assert "exclusiveMinimum" not in props["share"] and "multipleOf" not in props["share"]
    left = {(entry.keyword) for entry in lowered.report.post_validated}
    assert {"pattern", "minLength", "exclusiveMinimum", "multipleOf"} <= left
    assert lowered.schema.get("required") == ["kind", "copies", "code", "share", "when"]  # optional stays optional


def test_a_recursive_or_map_like_contract_starts_at_the_tool_mode() -> None:
    caps = capabilities("gcp.gemini", "gemini-2.5-flash")
    assert plans(compile_contract(Node).schema, "Node", caps)[0].mode == "tool"
    assert plans(compile_contract(dict[str, int]).schema, "Counts", caps)[0].mode == "tool"
    assert plans(compile_contract(Job).schema, "Job", caps)[0].mode == "native"


def test_profile_rows() -> None:
    for provider in ("gcp.gemini", "gcp.vertex_ai"):
        current = capabilities(provider, "gemini-2.5-pro")
        assert current.native and current.tool and current.json_mode and not current.strict_tool
        assert current.native_dialect == "gemini" and current.temperature
        assert not capabilities(provider, "gemini-3-pro-preview").temperature  # keep Gemini 3 at its default
        assert capabilities(provider, "gemini-3-pro-preview").native
        older = capabilities(provider, "gemini-2.0-flash")
        assert not older.native and older.tool and older.json_mode
        assert not capabilities(provider, "gemma-3-27b-it").native  # no row: the prompt mode only
    assert capabilities("gcp.gemini", "models/gemini-2.5-flash").native


@settings(max_examples=150, deadline=None)
@given(spec=specs)
def test_every_schema_the_dialect_accepts_is_one_gemini_accepts(spec: Spec) -> None:
    schema: dict[str, Any] = compile_contract(spec.build()).schema
    lowered = lower(schema, "gemini")
    if lowered.report.ok:
        assert gemini_schema_problems(lowered.schema) == [], (schema, lowered.schema)
        assert lowered.schema.get("type") == "object"
