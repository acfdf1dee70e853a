"""Tests of ``guardrail.vendors``: output modes and their plans on every endpoint (repair turns each vendor accepts,
schema 400s walking down the modes, refused modes) and the plan cache.

Nothing is shared here beyond ``tests/conftest.py`` (``emu``) and ``tests/support/calls.py`` (the printer ticket).
"""
