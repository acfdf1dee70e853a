"""The audit trail: one structured record per decision on a tool call, secrets redacted.

Records go to the logger ``guardrail.audit`` as the event ``"guardrail.audit"`` with the fields below:
through the application's structlog pipeline once structlog is configured (render them as JSON with
structlog's ``JSONRenderer`` and ship them wherever the application keeps its audit log), else to the stdlib
logger ``guardrail.audit`` at INFO (see :mod:`guardrail.observe.telemetry`: enable it, or the records are not kept).
Every record passes through :func:`guardrail.observe.redact.redact` first, with the arguments the policy marks
``secret`` removed by name.

========================  =================================================================================
request_id                the id of the request that triggered the call (given, or generated)
tool                      the tool name as proposed
arguments                 the parsed arguments (redacted), with the defaults of what the model left out
omitted                   the arguments the model left out (``cc``, ``items[1].sku``), judged by presence only
identity                  tenant, user, roles from the trusted runtime (``None`` when anonymous)
decision                  allowed, denied, pending_approval, invalid, executed, replayed, conflict, failed
rule                      the rule that decided (``allow.<id>``, ``deny.<id>``, ``args.<name>``, ``limits.rate``...)
reason                    the internal detail (never sent to the model)
policy_version            the policy file's ``version``
lists                     each list read (``{"list": name, "version": n}``) and, after an approved call, what
                          ``[[after_approval]]`` added: the version after the add and ``"added"``, how many
                          values it was given (members already there count too), or ``"error"``
provenance                each provenance check: the argument, the check (``source=user``...), the kind
                          (``value``, ``url``, ``email``, ``iban``), the value's ``sha256`` (its first 32 hex
                          digits; ``None`` for a secret argument), ``seen`` (``[source, piece number]``, the first
                          five) and whether it held (``met``); never the value or the content
idempotency_key           the key used, if any
result / error            what the tool returned (redacted) or the error's type and message
========================  =================================================================================
"""

from __future__ import annotations

from typing import Any

from guardrail.observe import metrics
from guardrail.observe.redact import redact
from guardrail.observe.telemetry import get_logger
from guardrail.tools.identity import Identity

_log = get_logger("guardrail.audit")


def record(*, request_id: str, tool: str, decision: str, rule: str = "", reason: str = "",
           arguments: Any = None, identity: Identity | None = None, policy_version: str = "",
           idempotency_key: str | None = None, result: Any = None, error: BaseException | None = None,
           secret_args: frozenset[str] = frozenset(), omitted: list[str] | None = None,
           lists: list[dict[str, Any]] | None = None, provenance: list[dict[str, Any]] | None = None
           ) -> dict[str, Any]:
    """Write one audit record (redacted) and return it."""
    entry: dict[str, Any] = {
        "request_id": request_id, "tool": tool, "decision": decision, "rule": rule, "reason": reason,
        "arguments": arguments, "omitted": omitted, "identity": identity.as_dict() if identity else None,
        "policy_version": policy_version, "lists": lists or None, "provenance": provenance or None,
        "idempotency_key": idempotency_key, "result": result,
        "error": f"{type(error).__name__}: {error}" if error is not None else None,
    }
    values: list[str] = []
    if isinstance(arguments, dict):
        values = [str(arguments[name]) for name in secret_args if name in arguments and arguments[name] is not None
                  and len(str(arguments[name])) >= 3]
    clean: dict[str, Any] = redact(entry, secret_args, tuple(sorted(values, key=len, reverse=True)))
    if decision == "denied":
        metrics.tool_denied(rule, tool)
    _log.info("guardrail.audit", **clean)
    return clean
