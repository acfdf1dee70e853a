"""The semantic gate a validated value passes after parsing: rules over its meaning (:mod:`.semantic`).

The permission gate for tool calls lives with the tools, in :mod:`guardrail.tools.authz`.
"""
