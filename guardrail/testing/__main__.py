"""Run the vendor emulator in the foreground: ``python -m guardrail.testing --port 8080``.

``--script FILE`` queues the behaviours in a JSON script (see :mod:`guardrail.testing.script`); once they are
used up, requests get "script exhausted" errors unless ``--answer`` or ``--faults`` is also given. Without a
script, every request gets a minimal valid instance of its schema (``"{}"`` without one), or the fixed
``--answer``; ``--faults SEED`` serves a :class:`~guardrail.testing.FaultProfile` instead. Ctrl-C stops.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Sequence

from guardrail.testing.behaviours import Reply, answer
from guardrail.testing.emulator import Emulator
from guardrail.testing.faults import FaultProfile, default_answer
from guardrail.testing.recording import RecordedRequest
from guardrail.testing.script import load_script


def main(argv: Sequence[str] | None = None, prog: str = "python -m guardrail.testing") -> int:
    """Parse arguments, serve until interrupted, return the exit status."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds to wait before every answer")
    parser.add_argument("--answer", default=None, help="answer every request with this text")
    parser.add_argument("--faults", type=int, default=None, metavar="SEED", help="serve a seeded FaultProfile")
    parser.add_argument("--no-check-schemas", action="store_true", help="accept schemas vendors would refuse")
    parser.add_argument("--script", default=None, metavar="FILE", help="a JSON file of behaviours to serve in order")
    args = parser.parse_args(argv)
    try:
        scripted = load_script(args.script) if args.script else []
    except (OSError, ValueError) as error:
        parser.error(str(error))

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
    with emulator:
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
