"""Contracts with many kinds of constraints, and a valid answer for each: what the constraint-reach measurement
(``tests/vendors/test_constraints_reach.py``, ``bench/constraints_reach.py``) asks every vendor and mode for.

:class:`Order` is a pydantic contract (bounds, exclusive bounds, lengths, counts, patterns, formats, a
multipleOf, uniqueItems, an Optional field, a tuple, a nested model and a list of models kept in ``$defs``);
:data:`SETTINGS` is a JSON Schema contract with what pydantic types do not produce (``const``,
``minProperties``/``maxProperties``, exclusive bounds on both sides, a ``$ref`` to a constrained string).
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from guardrail.contract import compile_contract
from guardrail.schema.dialects import GRAMMAR_ENFORCED, GRAMMAR_FORMATS
from guardrail.testing import Emulator, reply
from guardrail.testing.reach import Constraint, Reach, carried_schemas, constraints, reach


class Line(BaseModel):
    """An order line: kept in ``$defs`` and referenced from a list."""

    sku: str = Field(pattern=r"^[A-Z]{3}-\d+$", description="Stock code")
    qty: int = Field(gt=0, le=99)
    unit_price: float = Field(ge=0, multiple_of=0.5)


class Address(BaseModel):
    postcode: str = Field(min_length=4, max_length=10)
    country: str = Field(min_length=2, max_length=2, pattern=r"^[A-Z]{2}$", description="ISO 3166 code")


class Order(BaseModel):
    urgency: int = Field(ge=1, le=5, description="How urgent")
    title: str = Field(max_length=80)
    ref: uuid.UUID
    due: datetime.date
    placed: datetime.datetime
    discount: float = Field(gt=0, lt=1)
    step: float = Field(multiple_of=0.5)
    tags: list[str] = Field(min_length=2, max_length=5)
    labels: set[Annotated[str, Field(min_length=1)]] = Field(max_length=3)
    score: float | None = Field(default=None, ge=0, le=10)
    note: str | None = Field(default=None, max_length=200, description="Free text")
    lines: list[Line] = Field(min_length=1, max_length=20)
    address: Address
    channel: Literal["email", "phone"]
    parcel: tuple[int, str]  # weight in grams, size class: a tuple of different items


ORDER_ANSWER = ('{"urgency": 3, "title": "Late parcel", "ref": "12345678-1234-5678-1234-567812345678", '
                '"due": "2026-12-24", "placed": "2026-12-01T10:00:00Z", "discount": 0.5, "step": 1.5, '
                '"tags": ["a", "b"], "labels": ["x"], "score": null, "note": null, '
                '"lines": [{"sku": "ABC-1", "qty": 2, "unit_price": 9.5}], '
                '"address": {"postcode": "1234", "country": "NO"}, "channel": "email", '
                '"parcel": [1200, "M"]}')

SETTINGS: dict[str, Any] = {
    "title": "Settings",
    "type": "object",
    "properties": {
        "version": {"const": 2},
        "level": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10, "description": "Log level"},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1, "multipleOf": 0.25},
        "host": {"type": "string", "format": "hostname", "maxLength": 253},
        "email": {"type": "string", "format": "email"},
        "ports": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 65535},
                  "minItems": 1, "maxItems": 4, "uniqueItems": True},
        "limits": {"type": "object", "properties": {"cpu": {"type": "number", "exclusiveMinimum": 0},
                                                    "memory": {"type": "integer", "minimum": 64}},
                   "minProperties": 1, "maxProperties": 2, "additionalProperties": False},
        "mode": {"enum": ["fast", "safe"]},
        "code": {"$ref": "#/$defs/Code"},
    },
    "required": ["version", "level", "ratio", "host", "email", "ports", "limits", "mode", "code"],
    "additionalProperties": False,
    "$defs": {"Code": {"type": "string", "pattern": r"^[a-z]{2}\d{2}$", "minLength": 4, "maxLength": 4}},
}

SETTINGS_ANSWER = ('{"version": 2, "level": 3, "ratio": 0.5, "host": "db.example.org", "email": "ops@example.org", '
                   '"ports": [5432], "limits": {"memory": 128}, "mode": "safe", "code": "ab12"}')

#: name -> (contract, a valid answer)
CONTRACTS: dict[str, tuple[Any, str]] = {"Order": (Order, ORDER_ANSWER), "Settings": (SETTINGS, SETTINGS_ANSWER)}


# ------------------------------------------------------------------------------------ every vendor dialect and mode


@dataclass(frozen=True)
class Route:
    """One way a contract is asked for: the endpoint (``chat``, ``responses``, ``messages``, ``gemini``), model,
    self-hosted server kind (``None``: the hosted vendor) and forced mode."""

    api: str
    model: str
    mode: str
    server: str | None = None

    @property
    def label(self) -> str:
        return f"{self.server or self.api}/{self.model}/{self.mode}"


ROUTES: tuple[Route, ...] = (
    *(Route("chat", "gpt-4o", m) for m in ("native", "tool", "json", "prompt")),
    *(Route("responses", "gpt-4o", m) for m in ("native", "tool", "json", "prompt")),
    *(Route("messages", "claude-sonnet-5-5", m) for m in ("native", "tool", "prompt")),
    Route("messages", "claude-3-5-haiku", "tool"),  # no strict tools: an advisory tool schema
    *(Route("chat", "local", m, server) for server in ("vllm", "sglang", "ollama") for m in ("native", "tool",
                                                                                              "json", "prompt")),
    *(Route("chat", "local", m, "llamacpp") for m in ("native", "json", "prompt")),
    *(Route("gemini", "gemini-2.5-flash", m) for m in ("native", "tool", "json", "prompt")),
)


def ask(emu: Emulator, route: Route, contract: Any, answer: str) -> tuple[Any, dict[str, Any]]:
    """One structured call on ``route`` through the real SDK client at ``emu``, answered with ``answer``: the
    result record and the body of the request the SDK sent."""
    import anthropic
    import openai

    import guardrail

    emu.script(reply.answer(answer))
    if route.api == "gemini":
        from google import genai

        gemini = guardrail.wrap(genai.Client(api_key="test", http_options={"base_url": emu.gemini_base_url}))
        result = gemini.models.generate_content_with_result(model=route.model, contents="Fill it in.",
                                                            response_model=contract, mode=route.mode)
        return result, emu.requests[-1].body
    raw: Any = (anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test", max_retries=0)
                if route.api == "messages" else
                openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0))
    client = guardrail.wrap(raw, **({"server": route.server} if route.server else {}))
    user = [{"role": "user", "content": "Fill it in."}]
    if route.api == "messages":
        result = client.messages.create_with_result(model=route.model, max_tokens=1024, messages=user,
                                                    response_model=contract, mode=route.mode)
    elif route.api == "responses":
        result = client.responses.create_with_result(model=route.model, input="Fill it in.",
                                                     response_model=contract, mode=route.mode)
    else:
        result = client.chat.completions.create_with_result(model=route.model, messages=user,
                                                            response_model=contract, mode=route.mode)
    return result, emu.requests[-1].body


def measure(emu: Emulator, route: Route, name: str) -> dict[Constraint, Reach]:
    """How each constraint of the contract ``name`` (of :data:`CONTRACTS`) reaches the model on ``route``."""
    contract, answer = CONTRACTS[name]
    schema = compile_contract(contract).schema
    _, body = ask(emu, route, contract, answer)
    carried = carried_schemas(body, self_hosted=route.server is not None)
    enforces = (GRAMMAR_ENFORCED - {"format"}) | {f"format:{f}" for f in GRAMMAR_FORMATS} if route.server else \
        frozenset()
    return {c: reach(c, carried, enforces) for c in constraints(schema)}
