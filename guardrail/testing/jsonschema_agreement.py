"""The held-out measure of JSON Schema contracts: MaskBench schemas with valid and invalid instances, judged by
guardrail and by the reference ``jsonschema`` validator (formats asserted), per collection.

For each schema: compile it as a contract (a :class:`~guardrail.errors.ContractError` counts as unsupported).
For each instance, written as JSON text:

- the contract's validator alone (``Contract.validate_json``) must agree with the reference;
- ``guardrail.parse_report`` must return every reference-valid instance unchanged, with no fix (an *altered*
  valid instance is the worst outcome: the caller's valid data silently changed);
- an instance the reference refuses may be accepted only after a recorded, lossless repair (``"true"`` for a
  boolean...), and the repaired value must be valid for the reference; accepted with no fix is a *wrong accept*.

Used by ``tests/schema/test_jsonschema_contracts.py`` (thresholds asserted) and ``bench/maskbench_jsonschema.py``
(the table printed). Needs the ``jsonschema`` package (the ``dev`` extra) for the reference.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["Counts", "measure", "table"]


@dataclass
class Counts:
    """What one collection (or the total) gave."""

    schemas: int = 0
    supported: int = 0
    instances: int = 0
    reference_valid: int = 0
    #: The contract's validator and the reference gave the same verdict.
    agree: int = 0
    #: parse_report's outcomes.
    accepted_as_is: int = 0
    repaired: int = 0
    refused: int = 0
    altered_valid: int = 0
    refused_valid: int = 0
    wrong_accepts: int = 0
    #: An accepted value the reference refuses (repaired into something still invalid, or a wrong accept).
    invalid_outputs: int = 0

    def add(self, other: Counts) -> None:
        for item in fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))

    @property
    def agreement(self) -> float:
        return self.agree / self.instances if self.instances else 1.0

    @property
    def support(self) -> float:
        return self.supported / self.schemas if self.schemas else 1.0


def _reference(schema: Any) -> Any:
    """The reference validator for the schema (its draft, formats asserted), or ``None`` if it refuses it."""
    import importlib

    jsonschema: Any = importlib.import_module("jsonschema")  # untyped; only the reference needs it
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        return cls(schema, format_checker=cls.FORMAT_CHECKER)
    except Exception:  # the reference cannot use it either: not part of the measure
        return None


def _judge(validator: Any, value: Any) -> bool:
    try:
        return bool(validator.is_valid(value))
    except Exception:  # the reference crashing on a value (a bad regex at run time...) counts as a refusal
        return False


def measure_entry(entry: Mapping[str, Any]) -> Counts:
    """The counts of one corpus entry (``{"schema": ..., "tests": [{"data": ..., "valid": ...}]}``)."""
    from guardrail.contract import compile_contract
    from guardrail.errors import ContractError
    from guardrail.parse.pipeline import parse_report

    counts = Counts()
    schema = entry["schema"]
    reference = _reference(schema) if isinstance(schema, dict) else None
    if reference is None:
        return counts
    counts.schemas = 1
    try:
        contract = compile_contract(schema)
    except ContractError:
        return counts
    counts.supported = 1
    for test in entry.get("tests", ()):
        data = test["data"]
        try:
            text = json.dumps(data)
        except ValueError:
            continue
        counts.instances += 1
        valid = _judge(reference, data)
        counts.reference_valid += valid
        try:
            contract.validate_json(text)
            verdict = True
        except ValueError:  # pydantic's ValidationError
            verdict = False
        counts.agree += verdict == valid
        report = parse_report(text, schema)
        if report.error is not None:
            counts.refused += 1
            counts.refused_valid += valid
            continue
        same = json.dumps(report.value, sort_keys=True) == json.dumps(data, sort_keys=True)
        if valid and (not same or report.fixes):
            counts.altered_valid += 1
        elif not valid and not report.fixes:
            counts.wrong_accepts += 1
        if same and not report.fixes:
            counts.accepted_as_is += 1
        else:
            counts.repaired += 1
        counts.invalid_outputs += not _judge(reference, report.value)
    return counts


def measure(entries: Mapping[str, Iterable[Mapping[str, Any]]]) -> dict[str, Counts]:
    """Counts per collection of ``entries`` (as :func:`guardrail.testing.corpora.load` reads them)."""
    out: dict[str, Counts] = {}
    for collection, items in entries.items():
        total = out.setdefault(collection, Counts())
        for entry in items:
            total.add(measure_entry(entry))
    return out


def table(results: Mapping[str, Counts]) -> str:
    """A plain-text table of the results, one row per collection and a total."""
    total = Counts()
    for counts in results.values():
        total.add(counts)
    head = (f"{'collection':<22}{'schemas':>8}{'support':>9}{'inst':>7}{'agree':>8}{'as-is':>7}{'repair':>7}"
            f"{'refuse':>7}{'altered':>8}{'wrongacc':>9}{'badout':>7}")
    rows = [head, "-" * len(head)]
    for name, counts in [*sorted(results.items()), ("TOTAL", total)]:
        rows.append(f"{name:<22}{counts.schemas:>8}{counts.support:>9.1%}{counts.instances:>7}"
                    f"{counts.agreement:>8.2%}{counts.accepted_as_is:>7}{counts.repaired:>7}{counts.refused:>7}"
                    f"{counts.altered_valid:>8}{counts.wrong_accepts:>9}{counts.invalid_outputs:>7}")
    return "\n".join(rows)
