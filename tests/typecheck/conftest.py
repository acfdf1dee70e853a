"""The public API as users type it: ``wrap_types.py`` and ``decorator_types.py`` are checked by mypy in CI
(``mypy guardrail tests/typecheck``), and ``test_wrap_types_checked.py`` runs mypy on deliberate mistakes, each of
which must be reported.

Nothing is shared here beyond ``tests/conftest.py``.
"""
