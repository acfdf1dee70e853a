"""Tests of ``guardrail.chain``: the degradation chain over vendor tiers, the circuit breaker over every store, and
the rule engine with the shipped rule sets (the repository's ``fallbacks/``).

Nothing is shared here beyond ``tests/conftest.py`` (``emu``, ``emulators``, ``redis_url``).
"""
