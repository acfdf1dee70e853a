"""Tests of ``guardrail.gates``: the semantic gate, over validated answers and over tool calls.

Nothing is shared here beyond ``tests/conftest.py`` (``emu``, ``env``).
"""
