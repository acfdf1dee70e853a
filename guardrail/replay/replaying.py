"""Replaying a recording under a new contract: which recorded answers it still accepts, without calling any vendor.

:func:`replay` reads a recording (:mod:`guardrail.replay.record`) one line at a time, so a recording of any size
replays in memory bounded by the largest record and the ``keep`` details kept per list. Each record's answers
(those the attempt loop read as a whole; a field re-ask's is the merged whole) are parsed again, in order, by the
same parse layer and under the same aliases as when they were recorded, with the new contract and, when given,
semantic rules over the recorded context. As the attempt loop would, the first answer the new contract accepts
gives the record's new value. Each record then lands in exactly one bucket:

================  ===================================================================================================
``still_valid``   it gave a value then and gives one now (``changed``: how many of them give a different value, as
                  JSON, redacted alike)
``regressions``   it gave a value then and none now; the details say why (the error kind, each path and message,
                  of the answer the call had accepted)
``newly_valid``   it failed then and gives a value now
``still_failing`` it failed then and fails now
``skipped``       it holds no answer to re-read (a vendor error, a refusal, a cut-off answer, a budget stop)
================  ===================================================================================================

Lines that are not records (not JSON, an unknown format version, a line cut short by a crash) are counted in
``unreadable`` with their line numbers (the first ``keep``), never a crash. A rule or validator that raises while
an answer is re-read fails that answer with the error's class as its kind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guardrail.call.options import wrapped_answer_type
from guardrail.contract import Contract, compile_contract, validation_context
from guardrail.errors import GuardrailError
from guardrail.gates.semantic import Rule, evaluate
from guardrail.observe.redact import redact
from guardrail.parse.absent import ABSENT_AS_NULL_STAGES
from guardrail.parse.pipeline import parse_report
from guardrail.parse.report import ParseReport, Violation
from guardrail.replay.record import RECORD_VERSION, contract_name, value_json

__all__ = ["Judged", "ReplayReport", "Replayed", "judge_answer", "read_records", "replay"]

#: Details kept per list (regressions, newly valid, changed, unreadable lines) unless the caller says otherwise.
KEEP = 100


@dataclass(frozen=True, slots=True)
class Judged:
    """What a contract makes of one recorded answer: a value (``ok``, the value as JSON, redacted) or the error's
    ``kind`` (``schema_violation``, ``no_json``, ``semantic_violation``, ``declined``...) and its problems."""

    ok: bool
    value: Any = None
    kind: str | None = None
    problems: tuple[Violation, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        if self.ok:
            return {"ok": True, "value": self.value}
        return {"ok": False, "kind": self.kind,
                "problems": [{"path": problem.path, "message": problem.message} for problem in self.problems]}


@dataclass(frozen=True, slots=True)
class Replayed:
    """One record's replay, as the report keeps it: where it is (``line`` in the recording), which call it was
    (``request_hash``, ``trace_id``), what it gave then (``before``: the value as JSON, or the error's kind) and
    what it gives now (``after``)."""

    line: int
    request_hash: str | None
    trace_id: str | None
    before: Any
    after: Judged

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "request_hash": self.request_hash, "trace_id": self.trace_id,
                "before": self.before, "after": self.after.to_dict()}


@dataclass
class ReplayReport:
    """The counts of a replay (see the module docstring) and the first ``keep`` records of each kind of change."""

    contract: str
    records: int = 0
    still_valid: int = 0
    changed: int = 0
    regressions: int = 0
    newly_valid: int = 0
    still_failing: int = 0
    skipped: int = 0
    unreadable: int = 0
    keep: int = KEEP
    regressed: list[Replayed] = field(default_factory=list)
    fixed: list[Replayed] = field(default_factory=list)
    changes: list[Replayed] = field(default_factory=list)
    unreadable_lines: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data (what ``guardrail replay --json`` writes)."""
        return {"contract": self.contract, "records": self.records, "still_valid": self.still_valid,
                "changed": self.changed, "regressions": self.regressions, "newly_valid": self.newly_valid,
                "still_failing": self.still_failing, "skipped": self.skipped, "unreadable": self.unreadable,
                "details": {"regressions": [each.to_dict() for each in self.regressed],
                            "newly_valid": [each.to_dict() for each in self.fixed],
                            "changed": [each.to_dict() for each in self.changes],
                            "unreadable_lines": list(self.unreadable_lines)},
                "details_kept": self.keep}

    def _note(self, into: list[Any], item: Any) -> None:
        if len(into) < self.keep:
            into.append(item)


def replay(source: str | os.PathLike[str] | Iterable[str], contract: Any, *, rules: Sequence[Rule] = (),
           keep: int = KEEP) -> ReplayReport:
    """Replay a recording under ``contract`` (and ``rules``); see the module docstring.

    ``source`` is a recording's path, or its lines. ``contract`` is any contract ``response_model=`` takes.
    Nothing is sent to any vendor.
    """
    if isinstance(contract, Mapping):  # a JSON Schema document: its hashable form, as the chain uses
        from guardrail.schema.jsonschema_contract import as_output_type

        contract = as_output_type(contract)
    compiled = compile_contract(contract)
    report = ReplayReport(contract_name(contract), keep=keep)
    for line, record in read_records(source):
        if record is None:
            report.unreadable += 1
            report._note(report.unreadable_lines, line)
            continue
        report.records += 1
        _replay_one(report, line, record, compiled, tuple(rules))
    return report


def read_records(source: str | os.PathLike[str] | Iterable[str]) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """Each line of a recording with its number: the record, or ``None`` for a line that is not one (blank lines
    are skipped). A path is read as UTF-8, one line at a time."""
    if isinstance(source, (str, os.PathLike)):
        with Path(source).open(encoding="utf-8", errors="surrogateescape") as lines:
            yield from _records(lines)
    else:
        yield from _records(source)


def _records(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any] | None]]:
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except ValueError:
            yield number, None
            continue
        ok = (isinstance(record, dict) and record.get("guardrail_record") == RECORD_VERSION
              and isinstance(record.get("attempts"), list) and isinstance(record.get("outcome"), dict))
        yield number, record if ok else None


def _replay_one(report: ReplayReport, line: int, record: dict[str, Any], contract: Contract[Any],
                rules: tuple[Rule, ...]) -> None:
    """Put one record in its bucket."""
    outcome = record["outcome"]
    was_ok = outcome.get("ok") is True
    before = outcome.get("value") if was_ok else outcome.get("kind") or outcome.get("error")
    aliases = record.get("aliases")
    aliases = {key: name for key, name in aliases.items() if isinstance(name, str)} if isinstance(aliases, dict) \
        else None
    context = record.get("context") if isinstance(record.get("context"), dict) else None
    judged: Judged | None = None
    for text, read in _answers(record["attempts"]):
        judged = judge_answer(text, contract.output_type, wrapped=read.get("wrapped"),
                              absent_as_null=read.get("absent_as_null") is True, aliases=aliases, rules=rules,
                              context=context)
        if judged.ok:
            break
    if judged is None:
        report.skipped += 1
        return
    seen = Replayed(line, _text(record.get("request_hash")), _text(record.get("trace_id")), before, judged)
    if was_ok and judged.ok:
        report.still_valid += 1
        if judged.value != before:
            report.changed += 1
            report._note(report.changes, seen)
    elif was_ok:
        report.regressions += 1
        report._note(report.regressed, seen)
    elif judged.ok:
        report.newly_valid += 1
        report._note(report.fixed, seen)
    else:
        report.still_failing += 1


def _answers(attempts: list[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The recorded answers read as a whole, in order: (the text read, how it was read)."""
    for attempt in attempts:
        if not isinstance(attempt, dict) or not isinstance(attempt.get("answer"), dict):
            continue
        read = attempt["answer"]
        text = read.get("text", attempt.get("raw"))
        if isinstance(text, str):
            yield text, read


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def judge_answer(text: str, output_type: Any, *, wrapped: Any = None, absent_as_null: bool = False,
                 aliases: Mapping[str, str] | None = None, rules: Sequence[Rule] = (),
                 context: Mapping[str, Any] | None = None) -> Judged:
    """What ``output_type`` (and ``rules``, over ``context``) makes of one answer's text, read as the attempt
    loop reads it: the parse layer with ``aliases``, unwrapped from ``wrapped`` when a non-object root was sent
    wrapped, absent optional fields as null when the plan said so. Never raises for any text."""
    key = wrapped if isinstance(wrapped, str) and wrapped else None
    try:
        with validation_context(context):
            answer_type = output_type if key is None else wrapped_answer_type(output_type, key)
            report = parse_report(text, answer_type, aliases=aliases,
                                  stages=ABSENT_AS_NULL_STAGES if absent_as_null else None)
            if report.error is not None:
                return Judged(False, kind=report.error.kind, problems=_problems(report))
            value = getattr(report.value, key) if key is not None else report.value
            if rules:
                verdict = evaluate(rules, value, dict(context or {}))
                if verdict.declined is not None:
                    return Judged(False, kind="declined", problems=verdict.violations)
                if not verdict.ok:
                    return Judged(False, kind="semantic_violation", problems=verdict.violations)
            return Judged(True, redact(value_json(compile_contract(output_type), value)))
    except GuardrailError as error:  # a rule that cannot be evaluated, a contract that cannot compile
        return Judged(False, kind=str(getattr(error, "kind", None) or type(error).__name__),
                      problems=(Violation("$", str(error)[:500]),))
    except Exception as error:  # a validator of the user's that raised something pydantic does not wrap
        return Judged(False, kind=type(error).__name__, problems=(Violation("$", str(error)[:500]),))


def _problems(report: ParseReport[Any]) -> tuple[Violation, ...]:
    """Each path and message of a failed parse: the invalid candidates' violations, else the error's feedback."""
    found: list[Violation] = []
    for candidate in report.candidates:
        for violation in candidate.violations:
            if violation not in found:
                found.append(violation)
    if not found and report.error is not None:
        found.append(Violation("$", report.error.feedback))
    return tuple(found)
