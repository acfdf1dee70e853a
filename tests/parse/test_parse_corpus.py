"""Third-party JSON-repair suites, each case labelled by us.

``tests/parse/data/repair_corpus.json`` holds the inputs of the test suites of the ``json-repair`` (PyPI) and
``jsonrepair`` (npm) packages, vendored with their sources, commits and licences (nothing is fetched here).
Each case is labelled ``one`` (exactly one reading: the value guardrail must return under the case's contract)
or ``ambiguous`` (must be refused: two readings, the text ends inside a value, no value at all). Those suites
repair everything; guardrail returns a value only where one reading exists.

Checked for every case: an ``ambiguous`` case is never given a value; a ``one`` case gives exactly its value,
through ``parse`` and ``parse_report`` alike, except the few in ``STILL_REFUSED`` (each with the reason), which
must still be refused (a case that starts working is moved out of it). Goal: ``STILL_REFUSED`` empty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from guardrail import ParseError, parse, parse_report
from guardrail.parse.tokens import same_json

CORPUS = json.loads((Path(__file__).parent / "data" / "repair_corpus.json").read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = CORPUS["cases"]
#: The names a case's contract may use (a Python type expression), or the case gives a JSON Schema object.
NAMES = {"Any": Any, "str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict, "None": None}

#: One-reading answers guardrail still refuses, and why.
STILL_REFUSED = {
    '\n        Here is the tuple payload:\n\n        ```json\n        (1, 2)\n        ```\n        ':
        "a tuple in prose (the fence is indented past CommonMark's three spaces, so it is prose): parentheses "
        "are read only as a whole reply, a whole fenced block or a value inside JSON",
    '{ "content": "[LINK]("https://google.com")" }':
        "the // between the unescaped inner quotes starts a comment, so the text reads as ending inside the value",
}


def contract_of(case: dict[str, Any]) -> Any:
    contract = case["contract"]
    return contract if isinstance(contract, dict) else eval(contract, {"__builtins__": {}}, NAMES)


def _id(case: dict[str, Any]) -> str:
    return f"{case['source']}-{CASES.index(case)}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_a_labelled_case_gets_its_label(case: dict[str, Any]) -> None:
    text, contract = case["input"], contract_of(case)
    report = parse_report(text, contract)
    try:
        direct: Any = ("value", parse(text, contract))
    except ParseError as error:
        direct = ("error", error.kind)
    if case["label"] == "ambiguous" or text in STILL_REFUSED:
        assert not report.ok, f"{text!r} ({case['note']}) read as {report.value!r}"
        assert direct == ("error", report.error.kind)  # type: ignore[union-attr]
        return
    assert report.ok, f"{text!r} ({case['note']}) refused: {report.error!r}"
    assert same_json(report.value, case["expected"]), f"{text!r} read as {report.value!r}"
    assert direct[0] == "value" and same_json(direct[1], case["expected"])


def test_the_corpus_is_labelled_and_every_still_refused_case_is_in_it() -> None:
    inputs = {case["input"] for case in CASES}
    assert len(inputs) == len(CASES)  # one label an input
    assert all(case["label"] in ("one", "ambiguous") and case["note"] for case in CASES)
    assert all("expected" in case for case in CASES if case["label"] == "one")
    assert set(STILL_REFUSED) <= {case["input"] for case in CASES if case["label"] == "one"}
    assert {"json_repair", "jsonrepair"} == {case["source"] for case in CASES} == set(CORPUS["meta"]["sources"])
    assert all(source["license_text"] and source["commit"] for source in CORPUS["meta"]["sources"].values())
