"""Per-keyword decisions while lowering one subschema: enforce it (queueing its subschemas) or remove it.

Grouped by keyword family: ``type``/``enum``/``const``; strings (length counts, ``pattern``, ``format``);
numbers (only checked for usability here, bounds are :mod:`.numbers`'s); arrays (``items`` and the list
keywords ``prefixItems``/``allOf``/``anyOf``/``oneOf``); object keys (``properties``, ``patternProperties``,
``additionalProperties``, ``required``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from guardrail.local.lowering.engine import EXACT_FORMATS, LONG_WITH_REGEX, LOOSE_FORMATS, format_known, regex_problem
from guardrail.local.lowering.prepared import DELETE, Prepared, Visit
from guardrail.schema.dialects import JSON_TYPES
from guardrail.schema.tree import join

__all__ = ["KeywordStep"]

_COUNTS: Final = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
_BOUNDS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})


@dataclass
class KeywordStep:
    """Decisions for the keywords of one subschema: enforce (and queue subschemas) or remove a refused form."""

    path: str
    node: Mapping[str, Any]
    prepared: Prepared
    visit: Visit
    found: list[tuple[Mapping[str, Any], str]]

    def drop(self, kw: str, detail: str) -> None:
        self.prepared.drop(self.path, kw, detail)

    def sub(self, value: Any, *tokens: object) -> None:
        if isinstance(value, Mapping):
            self.found.append((value, join(self.path, *tokens)))

    def enforce(self, kw: str, detail: str = "") -> None:
        self.prepared.report.add(self.path, kw, "enforced", detail)

    def keyword(self, kw: str, val: Any) -> None:
        if kw == "type":
            names = [val] if isinstance(val, str) else val
            if isinstance(names, list) and names and all(isinstance(n, str) and n in JSON_TYPES for n in names):
                self.enforce(kw)
            else:
                self.drop(kw, f"type {str(val)[:40]!r} is not a JSON type: removed")
        elif kw == "enum":
            self.enforce(kw) if isinstance(val, list) else self.drop(kw, "enum is not an array: removed")
        elif kw == "const":
            self.enforce(kw)
        elif kw in _COUNTS:
            self._count(kw, val)
        elif kw in _BOUNDS:
            draft4 = kw.startswith("exclusive") and isinstance(val, bool)
            number = isinstance(val, (int, float)) and not isinstance(val, bool)
            if kw == "multipleOf" and number and val > 0:
                self.enforce(kw)
            elif draft4 or (number and kw != "multipleOf" and (isinstance(val, int) or math.isfinite(val))):
                pass  # minimum/maximum/exclusive*: decided per node by number_bounds
            else:
                self.drop(kw, f"{kw} {str(val)[:20]!r} is not a usable number: removed")
        elif kw == "pattern":
            problem = regex_problem(val) if isinstance(val, str) else "not a string"
            if problem:
                self.drop(kw, f"the engine cannot compile this regex ({problem}): removed")
            else:
                self.enforce(kw, "Rust regex dialect")
        elif kw == "format":
            if isinstance(val, str) and val in EXACT_FORMATS and "pattern" not in self.node:
                self.prepared.edits.append((self.path, "format", DELETE))
                self.prepared.edits.append((self.path, "pattern", EXACT_FORMATS[val]))
                self.prepared.report.add(self.path, kw, "lowered", f"{val}: compiled as an exact regex (calendar "
                                         "dates, years 0001-9999, no leap second, up to 6 fraction digits, an "
                                         "offset required); a narrower form than the format allows")
            elif isinstance(val, str) and val in LOOSE_FORMATS and format_known(val):
                self.prepared.report.add(self.path, kw, "lowered", LOOSE_FORMATS[val])
            elif isinstance(val, str) and format_known(val):
                self.enforce(kw, f"{val}: the engine's built-in regex")
            else:
                self.drop(kw, f"format {str(val)[:40]!r} is unknown to the engine: removed")
        elif kw in ("properties", "patternProperties", "additionalProperties"):
            self._keys(kw, val)
        elif kw == "required":
            if isinstance(val, list) and all(isinstance(n, str) for n in val):
                self.enforce(kw)
            else:
                self.drop(kw, "required is not an array of names: removed")
        elif kw in ("items", "additionalItems") and isinstance(val, (Mapping, bool)):
            self.enforce(kw)
            self.sub(val, kw)
        elif isinstance(val, list) and (val or kw in ("items", "prefixItems")):
            self._list(kw, val)
        else:
            self.drop(kw, f"{kw} is malformed: removed")

    def _count(self, kw: str, val: Any) -> None:
        if isinstance(val, float) and val.is_integer() and val >= 0:
            self.prepared.edits.append((self.path, kw, int(val)))  # the engine wants an integer; 2.0 is 2
        elif not isinstance(val, int) or isinstance(val, bool) or val < 0:
            self.drop(kw, f"{kw} {str(val)[:20]!r} is not a non-negative integer: removed")
            return
        regex = "pattern" in self.node or "format" in self.node
        if kw in ("minLength", "maxLength") and val > LONG_WITH_REGEX and regex:
            self.drop(kw, f"above {LONG_WITH_REGEX} next to a pattern/format the engine's lexer runs out of budget "
                          "and refuses valid strings: removed")
            return
        if kw not in ("minProperties", "maxProperties"):  # decided with the object (see object_bounds)
            self.enforce(kw, "code points" if kw in ("minLength", "maxLength") else "")

    def _keys(self, kw: str, val: Any) -> None:
        if kw == "additionalProperties":
            if _pattern_problems(self.node):
                self.drop(kw, "removed with patternProperties (which keys it covers depends on their patterns)")
            else:
                self.enforce(kw)
                self.sub(val, kw)
            return
        if not isinstance(val, Mapping):
            self.drop(kw, f"{kw} is not an object: removed")
            return
        if kw == "patternProperties" and _pattern_problems(self.node):
            self.drop(kw, "the engine cannot compile " + "; ".join(_pattern_problems(self.node)) + ": removed")
            return
        self.enforce(kw, "keys generated in schema order" if kw == "properties" else "")
        for name, child in val.items():
            self.sub(child, kw, name)

    def _list(self, kw: str, val: list[Any]) -> None:
        if kw == "oneOf":
            self.prepared.report.add(self.path, kw, "lowered",
                            "compiled as anyOf; that exactly one branch matches is checked after parsing")
        else:
            self.enforce(kw, "draft-4 tuple form" if kw == "items" else
                         "branches intersected by the engine" if kw == "allOf" else "")
        for i, child in enumerate(val):
            self.sub(child, kw, i)
            if kw == "allOf":
                self.visit.intersected.append(join(self.path, kw, i))
            elif kw in ("anyOf", "oneOf"):
                self.visit.branches.append(join(self.path, kw, i))


def _pattern_problems(node: Mapping[str, Any]) -> list[str]:
    patterns = node.get("patternProperties")
    if not isinstance(patterns, Mapping):
        return []
    return [f"{p[:40]!r}: {regex_problem(p)}" for p in patterns if regex_problem(p)]
