"""``guardrail emulator``: the vendor emulator as a standalone server, in the foreground until Ctrl-C.

Also what ``python -m guardrail.testing`` runs (:func:`main`).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from typing import Any

from guardrail.cli.common import EXIT_OK, Parser, port
from guardrail.errors import CommandError

DESCRIPTION = """\
Serve OpenAI- and Anthropic-compatible endpoints on a local port, for tests and offline demos: point
OPENAI_BASE_URL or ANTHROPIC_BASE_URL at the base URLs it prints.

Without --script, every request gets a minimal valid instance of its schema ("{}" without one), or the fixed
--answer text; --faults SEED serves a seeded mix of vendor faults instead. --script FILE queues the
behaviours of a JSON script first (a list such as [{"answer": "..."}, {"rate_limited": {"retry_after": 1}}]);
once they are used up, requests get "script exhausted" errors unless --answer or --faults is also given.

Ctrl-C stops it (exit status 0). Exit status 1: the script file is invalid or the port cannot be listened on;
2: usage error.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The emulator's options (shared by ``guardrail emulator`` and ``python -m guardrail.testing``)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=port, default=0, help="port to listen on, 0-65535 (default 0: a free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before every answer")
    parser.add_argument("--answer", default=None, help="answer every request with this text")
    parser.add_argument("--faults", type=int, default=None, metavar="SEED", help="serve a seeded FaultProfile")
    parser.add_argument("--no-check-schemas", action="store_true", help="accept schemas vendors would refuse")
    parser.add_argument("--script", default=None, metavar="FILE", help="a JSON file of behaviours to serve in order")


def register(commands: Any) -> None:
    """Add ``emulator`` to the subcommands."""
    parser = commands.add_parser("emulator", help="run the vendor emulator as a standalone server",
                                 description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.set_defaults(run=run, prog=parser.prog)


def load(path: str) -> list[Any]:
    """The behaviours of a script file; :class:`CommandError` naming the file and what is wrong."""
    from guardrail.testing.script import load_script

    try:
        return load_script(path)
    except FileNotFoundError:
        raise CommandError(f"{path}: does not exist") from None
    except OSError as error:
        raise CommandError(f"{path}: cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise CommandError(f"{path}: not UTF-8 text") from None
    except ValueError as error:
        message = str(error)
        raise CommandError(message if message.startswith(f"{path}:") else f"{path}: {message}") from None


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; 0 when stopped with Ctrl-C."""
    from guardrail.testing.behaviours import Reply, answer
    from guardrail.testing.emulator import Emulator
    from guardrail.testing.faults import FaultProfile, default_answer
    from guardrail.testing.recording import RecordedRequest

    scripted = load(args.script) if args.script else []
    fixed: str | None = args.answer

    def answer_text(request: RecordedRequest) -> str:
        return fixed if fixed is not None else default_answer(request)

    def respond(request: RecordedRequest) -> Reply:
        return answer(answer_text(request))

    emulator = Emulator(latency=args.latency, check_schemas=not args.no_check_schemas, host=args.host, port=args.port)
    emulator.responder = FaultProfile(seed=args.faults, answer=answer_text) if args.faults is not None else respond
    if scripted:
        emulator.script(*scripted)
        if args.faults is None and args.answer is None:
            emulator.responder = None
    try:
        emulator.start()
    except OSError as error:  # address in use, no such host, permission denied for a low port
        reason = error.strerror or str(error)
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {reason}") from None
    try:
        print(f"guardrail vendor emulator on {emulator.base_url}", flush=True)
        print(f"  OpenAI:    base_url={emulator.openai_base_url}", flush=True)
        print(f"  Anthropic: base_url={emulator.anthropic_base_url}", flush=True)
        if scripted:
            print(f"  script:    {len(scripted)} behaviours from {args.script}", flush=True)
        print("Ctrl-C stops.", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("stopped", flush=True)
    finally:
        emulator.stop()
    return EXIT_OK


def main(argv: Sequence[str] | None = None, prog: str = "python -m guardrail.testing") -> int:
    """The emulator alone, as ``python -m guardrail.testing``: the same options and errors as ``guardrail emulator``."""
    parser = Parser(prog=prog, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    try:
        return run(args)
    except CommandError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return error.code
