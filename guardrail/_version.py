"""The version of guardrail, written once: pyproject.toml reads it from here (``[tool.setuptools.dynamic]``)."""

__version__ = "0.2.0"
