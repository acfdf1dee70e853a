"""Tests of ``guardrail.schema``: lowering JSON Schemas to each vendor's dialect with a report, and JSON Schema
documents as contracts (validated by jsonschema-rs, held against the MaskBench corpus of the shared folder).

Nothing is shared here beyond ``tests/conftest.py``; vendor calls go to emulators each test starts itself.
"""
