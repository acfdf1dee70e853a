"""``guardrail batch submit|status|collect``: validated batch jobs (:mod:`guardrail.batch`) from the command line.

The client is the vendor SDK's own, configured from its environment variables (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``; ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``; ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``,
``GOOGLE_GEMINI_BASE_URL``); the job's state lives in ``--store`` (a
SQLite file, or a ``redis://`` URL), so ``status`` and ``collect`` need only the job id.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from guardrail.cli import common
from guardrail.cli.common import EXIT_INVALID, EXIT_OK, HOSTED_VENDORS, target
from guardrail.errors import CommandError, CommandLineError

DESCRIPTION = """\
Run many structured calls at a vendor's batch discount (OpenAI Batch, Anthropic Message Batches, Gemini batch
mode): every answer is parsed, repaired and validated against the contract as a live call's is, and the items
that fail are asked again.

  submit REQUESTS.jsonl   one create(...) call's keywords per line (Gemini: generate_content's), each with a
                          "custom_id"; prints the job id
  status JOB              the current round and its vendor batches
  collect JOB             waits for the job and writes one JSON line per item: its value or its error

exit status: 0 all good; 1 invalid input, or (collect) some items ended without a value; 2 usage error.
"""


def register(commands: Any) -> None:
    """Add ``batch`` and its subcommands."""
    parser = commands.add_parser("batch", help="submit, watch and collect validated batch jobs",
                                 description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP", title="steps")

    submit = steps.add_parser("submit", help="submit a JSONL file of requests", description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    submit.add_argument("requests", metavar="REQUESTS.jsonl", help="one request per line ('-': standard input)")
    submit.add_argument("--contract", metavar="MODULE:Type", type=target, required=True,
                        help="the type every answer must satisfy, e.g. myapp.models:Ticket")
    submit.add_argument("--vendor", choices=HOSTED_VENDORS, default="openai", help="default: openai")
    submit.add_argument("--api", choices=tuple(_API_VENDOR), default=None,
                        help="the API to batch (default: the vendor's first)")
    submit.add_argument("--mode", choices=("native", "tool", "json", "prompt"), default=None)
    submit.add_argument("--max-attempts", type=_positive, default=None, help="model attempts per item")
    submit.add_argument("--live-threshold", type=_count, default=None,
                        help="re-ask failed items live when at most this many failed (default 10)")
    submit.add_argument("--job-id", default=None, help="the job's id (default: a new one)")
    _store_argument(submit)
    submit.set_defaults(run=run_submit, prog=submit.prog)

    status = steps.add_parser("status", help="show where a job stands")
    status.add_argument("job", metavar="JOB")
    _store_argument(status)
    status.add_argument("--json", action="store_true", help="print one JSON object")
    status.set_defaults(run=run_status, prog=status.prog)

    collect = steps.add_parser("collect", help="wait for a job and write each item's value or error")
    collect.add_argument("job", metavar="JOB")
    _store_argument(collect)
    collect.add_argument("--contract", metavar="MODULE:Type", type=target, default=None,
                         help="the job's contract (default: the one it recorded, when importable)")
    collect.add_argument("--out", default="-", help="the JSONL file to write ('-', the default: standard output)")
    collect.add_argument("--poll-interval", type=_seconds, default=30.0, help="seconds between polls (default 30)")
    collect.add_argument("--timeout", type=_seconds, default=None, help="give up waiting for a round after this")
    collect.set_defaults(run=run_collect, prog=collect.prog)


#: The vendor of each ``--api``.
_API_VENDOR = {"chat": "openai", "responses": "openai", "messages": "anthropic", "gemini": "gemini"}


def _store_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", required=True, metavar="PATH|redis://...",
                        help="where the job's state lives: a SQLite file or a Redis URL")


def _number(text: str, kind: type[int] | type[float], least: float, what: str) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not value >= least:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def _positive(text: str) -> int:
    return int(_number(text, int, 1, "a whole number of 1 or more"))


def _count(text: str) -> int:
    return int(_number(text, int, 0, "a whole number of 0 or more"))


def _seconds(text: str) -> float:
    return float(_number(text, float, 0, "a number of seconds, 0 or more"))


@contextmanager
def _store(location: str) -> Iterator[Any]:
    from guardrail.store import RedisStore, SQLiteStore

    if location.startswith(("redis://", "rediss://", "unix://")):
        store: Any = RedisStore(location)
    else:
        if not Path(location).parent.exists():
            raise CommandError(f"{location}: its folder does not exist")
        store = SQLiteStore(location)
    try:
        yield store
    finally:
        store.close()


def _client(vendor: str) -> Any:
    """The vendor SDK's client, configured by its own environment variables (``vendor``: a ``--vendor`` choice,
    or the SDK module a job recorded)."""
    if vendor == "anthropic":
        import anthropic

        return anthropic.Anthropic()
    if vendor in ("gemini", "google.genai"):
        from guardrail._optional import require

        genai = require("google.genai", "gemini", "guardrail batch --vendor gemini")
        try:
            return genai.Client()
        except ValueError as error:  # no API key in the environment
            raise CommandError(str(error)) from None
    import openai

    try:
        return openai.OpenAI()
    except openai.OpenAIError as error:  # no API key in the environment
        raise CommandError(str(error)) from None


def _count_lines(path: Path, name: str) -> int:
    with path.open(encoding="utf-8") as source:
        return sum(1 for _ in _lines(source, name))  # every line checked before anything is sent


def _progress(what: str) -> Any:
    """A progress bar on standard error (drawn only on a terminal)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = common.console(stderr=True)
    return Progress(TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                    disable=not console.is_terminal, transient=False)


def _lines(source: IO[str], name: str) -> Iterator[dict[str, Any]]:
    try:
        yield from _requests(source, name)
    except UnicodeDecodeError as error:
        raise CommandError(f"{name}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def _requests(source: IO[str], name: str) -> Iterator[dict[str, Any]]:
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as error:
            raise CommandError(f"{name}:{number}: not JSON ({error})") from None
        if not isinstance(request, dict):
            raise CommandError(f"{name}:{number}: a request is a JSON object of create(...) keywords")
        yield request


def run_submit(args: argparse.Namespace) -> int:
    import guardrail.batch
    from guardrail.cli.schema import contract_type

    contract = contract_type(args.contract)
    if args.requests != "-" and not Path(args.requests).is_file():
        raise CommandError(f"{args.requests}: does not exist")
    if args.api is not None and _API_VENDOR[args.api] != args.vendor:
        raise CommandLineError(f"--api {args.api} is not an API of {args.vendor}")
    client = _client(args.vendor)
    extra: dict[str, Any] = {}
    if args.live_threshold is not None:
        extra["live_threshold"] = args.live_threshold
    total = None if args.requests == "-" else _count_lines(Path(args.requests), args.requests)
    bar = _progress("writing requests")
    with _store(args.store) as store, bar, (sys.stdin if args.requests == "-"
                                            else open(args.requests, encoding="utf-8")) as source:
        task = bar.add_task("submit", total=total)

        def counted() -> Iterator[dict[str, Any]]:
            for request in _lines(source, args.requests):
                yield request
                bar.advance(task)

        job = guardrail.batch.submit(client, counted(), response_model=contract, store=store, mode=args.mode,
                                     max_attempts=args.max_attempts, api=args.api, job_id=args.job_id, **extra)
    print(job.id)
    return EXIT_OK


def _resume(args: argparse.Namespace, store: Any) -> Any:
    import guardrail.batch
    from guardrail.batch.records import Records
    from guardrail.cli.schema import contract_type

    record = Records(store, args.job).job()
    contract = contract_type(args.contract) if getattr(args, "contract", None) else None
    return guardrail.batch.resume(_client(record.sdk), args.job, store=store, response_model=contract)


def run_status(args: argparse.Namespace) -> int:
    with _store(args.store) as store:
        job = _resume(args, store)
        status = job.status()
    if args.json:
        print(json.dumps({"job": status.job_id, "round": status.round, "ended": status.ended, "total": status.total,
                          "done": status.done, "errored": status.errored, "items": job.total,
                          "batches": [{"id": s.id, "status": s.status, "total": s.total, "done": s.done,
                                       "errored": s.errored} for s in status.batches]}))
        return EXIT_OK
    state = "ended" if status.ended else "running"
    print(f"{status.job_id}: round {status.round} {state}, {status.done}/{status.total} done, {status.errored} "
          f"errored ({job.total} items in the job)")
    for batch in status.batches:
        print(f"  {batch.id}: {batch.status} {batch.done}/{batch.total}")
    return EXIT_OK


def run_collect(args: argparse.Namespace) -> int:
    from guardrail.outcome import Result

    failed = written = 0
    with _store(args.store) as store:
        job = _resume(args, store)
        bar, total = _progress("collecting"), job.total or None
        out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")  # noqa: SIM115
        try:
            with bar:
                task = bar.add_task("collect", total=total)
                for custom_id, outcome in job.results(poll_interval=args.poll_interval, timeout=args.timeout):
                    out.write(json.dumps(_line(custom_id, outcome)) + "\n")  # ASCII: a value may hold anything
                    written += 1
                    failed += not isinstance(outcome, Result)
                    bar.advance(task)
        finally:
            if out is not sys.stdout:
                out.close()
    if failed:
        print(f"{args.prog}: {failed} of {written} items ended without a value (see their \"error\")",
              file=sys.stderr)
        return EXIT_INVALID
    return EXIT_OK


def _line(custom_id: str, outcome: Any) -> dict[str, Any]:
    from pydantic import TypeAdapter

    from guardrail.outcome import Result

    if isinstance(outcome, Result):
        value = TypeAdapter(Any).dump_python(outcome.value, mode="json")
        return {"custom_id": custom_id, "value": value, "attempts": len(outcome.attempts),
                "usage": dataclasses.asdict(outcome.usage)}
    return {"custom_id": custom_id, "error": type(outcome).__name__, "message": " ".join(str(outcome).split()),
            "attempts": len(outcome.outcome.attempts)}
