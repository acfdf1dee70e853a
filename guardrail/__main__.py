"""``python -m guardrail``: the ``guardrail`` command (see :mod:`guardrail.cli`)."""

from guardrail.cli.app import main

if __name__ == "__main__":
    raise SystemExit(main())
