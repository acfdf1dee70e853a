"""Tests of ``guardrail.tools``: a tool call through every gate (parse, validate, semantic rules, authorization,
approval, limits, idempotent execution, audit), the gate as a list of steps, policies (loading, argument checkers,
conditions, approval rules, allow-lists, provenance), quotas, idempotency across threads, processes and crashes,
and adversarial reviews of each.

Nothing is shared here beyond ``tests/conftest.py`` (``env``, a private registry and store; ``redis_url``) and
``tests/support/tool_env.py`` (``ToolEnv``, the policy snippets ``OPEN``/``APPROVAL``, ``audits``). The policy files
these tests load are in ``policies/`` next to them (the shipped ones are the repository's ``policies/``);
``idempotency_worker.py`` is the process that ``test_idempotency_faults.py`` starts, crashes and stalls.
"""
