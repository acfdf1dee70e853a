"""Tests of ``guardrail.testing``: the vendor emulator, driven by the real openai and anthropic SDK clients.

Nothing is shared here beyond ``tests/conftest.py`` (``emu``, the pytest plugin's ``guardrail_emulator``).
"""
