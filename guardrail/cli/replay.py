"""``guardrail replay RECORDING --contract MODULE:Type``: gate a contract change on recorded answers.

Re-reads every answer a recording holds (``wrap(client, record=...)``, :mod:`guardrail.replay`) under the new
contract and rules, without calling any vendor, prints the counts and the regressions (each path and message),
and exits 1 when there are more regressions than ``--max-regressions``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from guardrail.cli.common import at_least, import_target, importable_cwd, target
from guardrail.errors import CommandError

DESCRIPTION = """\
Re-read every answer of a recording (made with guardrail.wrap(client, record=PATH)) under a new contract and,
with --rules, semantic rules, without calling any vendor. Reports the records, those still valid (and how many
values changed), the regressions (valid then, failing now: each path and message), those newly valid, and those
still failing. The recording is read one line at a time. MODULE is imported from the current directory or the
installed packages; --contract also takes a JSON Schema file (*.json).

exit status: 0 regressions within --max-regressions; 1 more regressions than that, or the recording or the
contract cannot be read, or the recording holds no record; 2 usage error.
"""

#: Regressions printed in the text report (the JSON report holds as many as --keep).
SHOWN = 20


def register(commands: Any) -> None:
    """Add ``replay`` to the subcommands."""
    parser = commands.add_parser("replay", help="re-read a recording's answers under a new contract (a CI gate)",
                                 description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recording", metavar="RECORDING", help="a JSONL recording (wrap(client, record=PATH))")
    parser.add_argument("--contract", required=True, metavar="MODULE:Type",
                        help="the new contract, e.g. myapp.models:Ticket, or a JSON Schema file")
    parser.add_argument("--rules", action="append", default=[], type=target, metavar="MODULE:attr",
                        help="semantic rules to hold the answers to: a Rule or a list of them (repeatable)")
    parser.add_argument("--json", metavar="OUT", default=None, help="write the JSON report to OUT ('-': stdout)")
    parser.add_argument("--max-regressions", type=at_least(0), default=0, metavar="N",
                        help="exit 1 only when there are more regressions than this (default 0)")
    parser.add_argument("--keep", type=at_least(0), default=100, metavar="N",
                        help="records of each kind of change kept in the JSON report (default 100)")
    parser.set_defaults(run=run, prog=parser.prog)


def run(args: argparse.Namespace) -> int:
    """Replay the recording; 1 when the regressions pass ``--max-regressions``."""
    from guardrail.replay.replaying import replay

    recording = Path(args.recording)
    if not recording.is_file():
        raise CommandError(f"{args.recording}: {'is a directory' if recording.is_dir() else 'does not exist'}")
    contract = load_contract(args.contract)
    rules = load_rules(args.rules)
    try:
        report = replay(recording, contract, rules=rules, keep=args.keep)
    except OSError as error:
        raise CommandError(f"{args.recording}: cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:  # pragma: no cover - surrogateescape reads any bytes
        raise CommandError(f"{args.recording}: cannot be read: {error}") from None
    if report.records == 0:
        raise CommandError(f"{args.recording}: holds no record ({report.unreadable} unreadable lines); "
                           "nothing to replay")
    data = report.to_dict()
    data["recording"] = str(args.recording)
    if args.json == "-":
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        _print(report, args.recording)
        if args.json is not None:
            try:
                Path(args.json).write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
            except OSError as error:
                raise CommandError(f"{args.json}: cannot be written: {error.strerror or error}") from None
    over = report.regressions > args.max_regressions
    if over:
        print(f"{args.prog}: {report.regressions} regressions, more than --max-regressions {args.max_regressions}",
              file=sys.stderr)
    return 1 if over else 0


def load_contract(text: str) -> Any:
    """The contract ``--contract`` names: ``MODULE:Type``, or a JSON Schema file."""
    if ":" not in text or text.endswith(".json"):
        path = Path(text)
        if not path.is_file():
            raise CommandError(f"--contract {text!r}: neither MODULE:Type nor a JSON Schema file that exists")
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise CommandError(f"--contract {text}: not a JSON Schema file: {error}") from None
        if not isinstance(schema, dict):
            raise CommandError(f"--contract {text}: a JSON Schema is an object, not {type(schema).__name__}")
        return schema
    from guardrail.cli.schema import contract_type

    with importable_cwd():
        return contract_type(text)


def load_rules(targets: Sequence[str]) -> tuple[Any, ...]:
    """Every rule the ``--rules`` targets name (each a Rule or a sequence of them)."""
    from guardrail.gates.semantic import Rule

    found: list[Rule] = []
    for text in targets:
        value = import_target(text)
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if not isinstance(item, Rule):
                raise CommandError(f"--rules {text}: {type(item).__name__} is not a guardrail Rule "
                                   "(make one with guardrail.rule or the built-ins in guardrail.gates.semantic)")
            found.append(item)
    return tuple(found)


def _print(report: Any, recording: str) -> None:
    print(f"replayed {report.records} records of {recording} under {report.contract}")
    print(f"  still valid    {report.still_valid} ({report.changed} with a changed value)")
    print(f"  regressions    {report.regressions}")
    print(f"  newly valid    {report.newly_valid}")
    print(f"  still failing  {report.still_failing}")
    print(f"  skipped        {report.skipped} (no answer to re-read: vendor errors, refusals, cut-off answers)")
    if report.unreadable:
        print(f"  unreadable     {report.unreadable} lines (first: {report.unreadable_lines[:5]})")
    for each in report.regressed[:SHOWN]:
        problems = "; ".join(f"{problem.path}: {problem.message}" for problem in each.after.problems) or "-"
        print(f"regression at line {each.line} (trace {each.trace_id or '-'}): {each.after.kind}: {problems}")
    if report.regressions > min(len(report.regressed), SHOWN):
        print(f"... and {report.regressions - min(len(report.regressed), SHOWN)} more (see --json)")
