"""Tests of ``guardrail.cli``: the ``guardrail`` command (demo, schema, emulator, policy and rule checks), run as a
user would, in a subprocess, and through its ``main``.

Nothing is shared here beyond ``tests/conftest.py``.
"""
