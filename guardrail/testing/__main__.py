"""Run the vendor emulator in the foreground: ``python -m guardrail.testing --port 8080``.

The same command as ``guardrail emulator`` (options, help and errors live in :mod:`guardrail.cli.emulator`):
``--script FILE`` queues the behaviours of a JSON script (see :mod:`guardrail.testing.script`), ``--answer``
fixes the text, ``--faults SEED`` serves a :class:`~guardrail.testing.FaultProfile`. Ctrl-C stops.
"""

from __future__ import annotations

from guardrail.cli.emulator import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
