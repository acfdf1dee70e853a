"""The response cache's key: a SHA-256 of the canonical JSON of everything that can change a call's answer.

What goes in (:func:`request_key`): the endpoint (provider, API, self-hosted server kind), every request keyword
the caller gave except the transport-only ones in :data:`TRANSPORT_ONLY` (so ``model``, ``messages``/``input``,
``system``, ``temperature``, ``tools``, ``max_tokens``, ``extra_body``... all count), the contract's schema hash,
the identity of every semantic rule (:func:`rule_identity`), the field aliases, the modes guardrail would try
(a forced ``mode=`` changes them), the caller's ``prompt_version``, and, only when the call has them, its few-shot
``examples`` and its text constraint (a regex or grammar: every such call has the same ``str`` schema).

Canonical JSON: object keys sorted, no whitespace, tuples as lists, integral floats written as integers (``1.0``
and ``1`` send the same request), SDK "not given" sentinels dropped (they mean "absent"), pydantic models as their
JSON dump. A request holding anything else (bytes, a file, NaN, a non-string key, an arbitrary object) has no key:
such a call is not cached rather than risking two different requests sharing one entry. The encoding is
injective on what it accepts, so two requests share a key only when they would send the same JSON.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from guardrail.errors import Signal
from guardrail.gates.semantic import Rule
from guardrail.vendors.base import TRANSPORT_KEYWORDS

__all__ = ["KEY_VERSION", "TRANSPORT_ONLY", "canonical_json", "request_key", "rule_identity"]

#: Bumped when the key's contents or encoding change, so old entries are never read under new rules.
KEY_VERSION = 1

#: Request keywords that never change the answer (transport, billing, logging, streaming): left out of the key.
TRANSPORT_ONLY = TRANSPORT_KEYWORDS

#: Largest integer a float holds exactly; integral floats inside it are written as integers.
_EXACT_INT = 2**53


class Uncacheable(Signal, ValueError):
    """A request holds a value with no canonical JSON form (internal: the call simply is not cached)."""


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value`` (see the module docstring); :class:`Uncacheable` if it has none."""
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def _canonical(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)  # an IntEnum or other int subclass: its number
    if isinstance(value, float):
        if not math.isfinite(value):
            raise Uncacheable(f"a non-finite number ({value!r})")
        return int(value) if value.is_integer() and abs(value) <= _EXACT_INT else value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise Uncacheable(f"a mapping key that is not a string ({key!r})")
            if not _absent(item):
                out[key] = _canonical(item)
        return out
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(type(value), "model_fields"):  # a pydantic model given as an SDK parameter
        return _canonical(dump(mode="json", by_alias=True, exclude_unset=True))
    raise Uncacheable(f"a {type(value).__name__} value")


def _absent(value: Any) -> bool:
    """The SDKs' "not given" sentinels (``NOT_GIVEN``, ``omit``): the same as leaving the keyword out."""
    return type(value).__name__ in {"NotGiven", "Omit"}


def rule_identity(rule: Rule) -> dict[str, Any]:
    """What identifies a semantic rule across processes: its name, failure policy, kind and its check's code.

    The code is named by module and qualified name and digested (bytecode, names, constants), so editing a rule's
    body changes the key. State a rule holds elsewhere (closure cells, an object's attributes) is not part of it:
    a hit is re-checked against the current rules anyway, so two rules sharing an identity can never let an answer
    through that the rules in force reject.
    """
    check = rule.check
    function = getattr(check, "__func__", check)  # a bound method: its function
    code = getattr(function, "__code__", None)
    if code is None:  # a callable object: its class's __call__
        function = type(check).__call__
        code = getattr(function, "__code__", None)
    owner = function if code is not None else check
    name = f"{getattr(owner, '__module__', '?')}.{getattr(owner, '__qualname__', type(check).__qualname__)}"
    return {"name": rule.name, "on_fail": rule.on_fail, "kind": rule.kind, "check": name,
            "code": _code_digest(code) if code is not None else None}


@functools.lru_cache(maxsize=1024)
def _code_digest(code: Any) -> str:
    digest = hashlib.sha256()
    _feed_code(digest, code)
    return digest.hexdigest()


def _feed_code(digest: Any, code: Any) -> None:
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            _feed_code(digest, const)  # a nested function or comprehension
        elif const is None or isinstance(const, (bool, int, float, str, bytes)):
            digest.update(repr(const).encode())
        else:
            digest.update(type(const).__name__.encode())  # a frozenset/tuple of constants: order may vary


def request_key(*, provider: str, api: str, server: str | None, kwargs: Mapping[str, Any], schema_hash: str,
                rules: Iterable[Rule] = (), aliases: Mapping[str, str] | None = None, modes: Iterable[str] = (),
                prompt_version: str | None = None, examples: Iterable[Any] = (),
                constraint: Mapping[str, Any] | None = None) -> str:
    """The cache key (64 hex digits) of one structured call; :class:`Uncacheable` if the request has no
    canonical form. Equal requests give equal keys; a difference in any field that can change the answer gives a
    different key (see the module docstring for what is left out)."""
    document = {
        "v": KEY_VERSION,
        "endpoint": [provider, api, server],
        "request": {key: value for key, value in kwargs.items() if key not in TRANSPORT_ONLY},
        "schema": schema_hash,
        "rules": [rule_identity(each) for each in rules],
        "aliases": dict(aliases or {}),
        "modes": list(modes),
        "prompt_version": prompt_version,
    }
    shown = list(examples)
    if shown:  # only when given, so the keys of calls without examples stay as they were
        document["examples"] = shown
    if constraint is not None:
        document["constraint"] = dict(constraint)
    # surrogatepass: a lone surrogate in a message is valid request text (the SDKs send it escaped)
    return hashlib.sha256(canonical_json(document).encode("utf-8", "surrogatepass")).hexdigest()
