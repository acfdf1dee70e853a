"""Type-aware deep equality for comparing parsed values with the values they must equal."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def same(a: Any, b: Any) -> bool:
    """Type-aware deep equality: ``True`` is not ``1``, ``1.0`` is not ``1``, ``-0.0`` is not ``0.0``,
    NaN equals NaN, object key order counts, models compare by class, fields and fields set."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return repr(a) == repr(b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, BaseModel):
        return same(a.__dict__, b.__dict__) and a.model_fields_set == b.model_fields_set
    return bool(a == b)
