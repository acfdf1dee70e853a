"""The gates a validated value passes after parsing: meaning (semantic) and permission (authz)."""
