"""Tests of ``guardrail.store``: every protocol operation on memory, a real SQLite file and a real redis-server, the
same keys from many threads, tasks and processes, and typed store errors.

Nothing is shared here beyond ``tests/conftest.py`` (``redis_url``); each module opens its own stores.
"""
