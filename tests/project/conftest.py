"""Tests of the project as a whole: the public surface (every ``__all__``), the error tree, the layout rules, no
reach into another module's private names, packaging, and the code of the docs and examples run as a reader would.

Nothing is shared here beyond ``tests/conftest.py``; these tests read the repository from its root.
"""
