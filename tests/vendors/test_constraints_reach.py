"""Every constraint of a contract reaches the model, on every endpoint, vendor dialect and mode: as a keyword in a
schema the model is shown, or restated in words in the description of that very field where the vendor cannot
enforce it; and it is still checked after the answer and listed in the compile report.

The requests are read back as the real SDK sent them to the emulator (``guardrail.testing.reach``); the same
measurement prints a table in ``bench/constraints_reach.py``.
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from support.constrained import CONTRACTS, ROUTES, Order, Route, ask, measure

import guardrail
from guardrail.contract import compile_contract
from guardrail.testing import Emulator, reply
from guardrail.testing.reach import carried_schemas, constraints, locate, said_in_words

#: Routes where the vendor enforces what it is sent, so a keyword sent is not also said in words.
STRICT_ROUTES = [r for r in ROUTES if r.server is None and (r.mode == "native" or (
    r.mode == "tool" and r.model != "claude-3-5-haiku"))]


@pytest.mark.parametrize("name", sorted(CONTRACTS))
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.label)
def test_every_constraint_reaches_the_model(emu: Emulator, route: Route, name: str) -> None:
    reached = measure(emu, route, name)
    assert len(reached) == {"Order": 33, "Settings": 22}[name]
    missing = [str(c) for c, how in reached.items() if how == "missing"]
    assert missing == [], f"{route.label}: {missing}"


@pytest.mark.parametrize("name", sorted(CONTRACTS))
@pytest.mark.parametrize("route", STRICT_ROUTES, ids=lambda r: r.label)
def test_what_the_vendor_enforces_is_not_also_said_in_words(emu: Emulator, route: Route, name: str) -> None:
    contract, answer = CONTRACTS[name]
    _, body = ask(emu, route, contract, answer)
    (sent, shown), = [(s, shown) for s, shown in carried_schemas(body) if shown]
    assert shown
    for constraint in constraints(compile_contract(contract).schema):
        for node in locate(sent, constraint.location):
            if node.get(constraint.keyword) == constraint.value:
                assert not said_in_words(constraint, node.get("description")), str(constraint)


@pytest.mark.parametrize("api", ["messages", "chat"])
def test_the_user_description_is_kept_and_the_range_follows_it(emu: Emulator, api: str) -> None:
    route = Route(api, "claude-sonnet-5-5" if api == "messages" else "gpt-4o", "native")
    _, body = ask(emu, route, Order, CONTRACTS["Order"][1])
    (sent, _), = carried_schemas(body)
    urgency = sent["properties"]["urgency"]
    title = sent["properties"]["title"]
    if api == "messages":  # Anthropic enforces no numeric bounds
        assert urgency["description"] == "How urgent (an integer from 1 to 5)" and "minimum" not in urgency
    else:  # OpenAI enforces them: sent as keywords, the description untouched
        assert urgency["description"] == "How urgent" and (urgency["minimum"], urgency["maximum"]) == (1, 5)
    assert title["description"] == "At most 80 characters" and "maxLength" not in title  # neither enforces it
    line = sent["$defs"]["Line"]["properties"]
    assert line["sku"]["description"].startswith("Stock code")


def test_a_described_constraint_is_still_checked_after_the_answer_and_reported(emu: Emulator) -> None:
    bad = CONTRACTS["Order"][1].replace('"urgency": 3', '"urgency": 9')
    emu.script(reply.answer(bad), reply.answer(CONTRACTS["Order"][1]))
    client = guardrail.wrap(anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="test"))
    result: Any = client.messages.create_with_result(
        model="claude-sonnet-5-5", max_tokens=1024, messages=[{"role": "user", "content": "Fill it in."}],
        response_model=Order)
    assert result.value.urgency == 3 and len(result.attempts) == 2
    assert "$.urgency" in (result.attempts[0].feedback or "")
    entries = {(e.path, e.keyword): e for e in result.compile_report.entries}
    maximum = entries[("/properties/urgency", "maximum")]
    assert maximum.action == "post_validated" and maximum.described == "an integer from 1 to 5"
    assert entries[("/properties/urgency", "type")].described == ""  # enforced: nothing said
    assert "[described: an integer from 1 to 5]" in result.compile_report.summary()
    assert result.compile_report.to_dict()["entries"] and any(
        e.get("described") for e in result.compile_report.to_dict()["entries"])
