"""The ``guardrail`` parser and :func:`main`, which turns every user error into one line and an exit code."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from guardrail.cli import batch, calibrate, checks, demo, emulator, evaluate, replay, schema
from guardrail.cli.common import (
    DISTRIBUTION,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_USAGE,
    Parser,
    missing_extra,
)
from guardrail.errors import CommandError, GuardrailError, MissingExtra

DESCRIPTION = """\
guardrail turns LLM output into valid, permitted, typed values. This command runs the demo, shows what a
contract becomes for each vendor, serves the vendor emulator, and checks policy files and rule sets.
"""

EPILOG = """\
examples:
  guardrail demo                                   triage sample inquiries (bundled emulator when no API key)
  guardrail schema myapp.models:Ticket --vendor anthropic
  guardrail emulator --port 8080                   point OPENAI_BASE_URL / ANTHROPIC_BASE_URL at it
  guardrail policy check policies/                 or one file: guardrail policy check policies/refund.toml
  guardrail rules check fallbacks/ --contract ticket_triage=myapp.models:Ticket
  guardrail replay calls.jsonl --contract myapp.models:TicketV2   re-read recorded answers (a CI gate)
  guardrail eval cases.jsonl --contract myapp.models:Ticket --model gpt-4o-mini --modes native,json --json out.json
  guardrail calibrate labelled.jsonl --choose myapp.judge:backend --save cal.json --target-precision 0.95
  guardrail batch submit requests.jsonl --contract myapp.models:Ticket --store jobs.db

exit status: 0 all good; 1 invalid input or a failed check; 2 usage error; 130 interrupted (Ctrl-C).
Run 'guardrail COMMAND --help' for a command's options.
"""


def version() -> str:
    """The installed distribution's version, or the package's own when it is not installed (a source checkout)."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        from guardrail._version import __version__

        return __version__


class _Version(argparse.Action):
    """``--version``: reads the version only when asked (importing the package is not free)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(f"guardrail {version()}")
        parser.exit()


def build_parser() -> Parser:
    """The full ``guardrail`` parser, every subcommand registered."""
    parser = Parser(prog="guardrail", description=DESCRIPTION, epilog=EPILOG,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    demo.register(commands)
    schema.register(commands)
    emulator.register(commands)
    checks.register_policy(commands)
    checks.register_rules(commands)
    replay.register(commands)
    evaluate.register(commands)
    calibrate.register(commands)
    batch.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); returns the exit status (never raises it).

    A user error is one line on stderr, prefixed with the subcommand (``guardrail schema: ...``), and status 1
    (2 for a malformed command line, from the parser); Ctrl-C is one line and 130; a reader that goes away
    (``guardrail schema ... --json | head``) ends the command quietly with 141.
    """
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        except SystemExit as done:  # --help, --version, or a usage error already printed on one line
            return done.code if isinstance(done.code, int) else EXIT_USAGE
        prog: str = args.prog
        try:
            code: int = args.run(args)
        except CommandError as error:
            print(f"{prog}: {_one_line(str(error))}", file=sys.stderr)
            return error.code
        except ModuleNotFoundError as error:
            message = missing_extra(error)
            if message is None:
                raise
            print(f"{prog}: {message}", file=sys.stderr)
            return EXIT_INVALID
        except MissingExtra as error:  # its message names the extra to install
            print(f"{prog}: {error}", file=sys.stderr)
            return EXIT_INVALID
        except GuardrailError as error:
            print(f"{prog}: {type(error).__name__}: {_one_line(str(error))}", file=sys.stderr)
            return EXIT_INVALID
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below, not at interpreter exit
        return code
    except KeyboardInterrupt:
        print("guardrail: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE


def _one_line(text: str) -> str:
    """``text`` with its line breaks folded into spaces: an error is one line, whatever it quotes."""
    return " ".join(text.split())


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real file descriptor (stdout replaced): nothing left to flush anyway
        pass
