"""``python -m guardrail.cli``: the ``guardrail`` command."""

from guardrail.cli.app import main

if __name__ == "__main__":
    raise SystemExit(main())
