"""JSON Schema utilities: walking a contract's schema (view); lowering to vendor subsets comes later."""
