"""Per-tool policies: the model, the TOML loader and the argument checkers."""
