"""The ``guardrail`` command line: ``demo``, ``schema``, ``emulator``, ``policy check``, ``rules check``.

One module per subcommand (each with a ``register`` that adds its parser and a ``run`` that does the work);
:mod:`guardrail.cli.app` builds the parser and turns every user error into one line on stderr and an exit
code (0 ok, 1 invalid input or a failed check, 2 usage error, 130 interrupted), never a traceback.
The console script ``guardrail`` is :func:`main`; ``python -m guardrail`` and ``python -m guardrail.cli`` run it too.
"""

from guardrail.cli.app import main

__all__ = ["main"]
