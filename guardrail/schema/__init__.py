"""JSON Schema utilities: walking a contract's schema (view) and lowering it to each vendor's subset (lower)."""
