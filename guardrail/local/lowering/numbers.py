"""Numeric bounds for the engine: sound for the parsed value, finite, and within what the engine compiles.

The contract is checked on the parsed double or int, the engine on the text; :func:`number_bounds` turns each
bound into one whose every text parses inside the contract's range, and gives unbounded numbers a finite
window, reporting each change as enforced, lowered or post-validated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any, Final

from guardrail.local.lowering.prepared import DELETE, Prepared, Visit
from guardrail.schema.report import Action

__all__ = ["BOUND_DIGITS", "BOUND_PLACES", "EXACT_INTEGER", "NUMBER_LIMIT", "NUMBER_RANGE", "combined_numbers",
           "number_bounds"]

#: The range (±) the engine copy gives a number the contract leaves unbounded: the engine's unbounded number
#: lets a model write 400 digits or an exponent like ``e3536``, which is no finite double (nor an int64).
#: 1e15 is an exact double, and every integer up to it too.
NUMBER_RANGE: Final = 10**15
#: The widest range the engine builds a regex for (llguidance 1.9.1: ±1e18 compiles, ±1e19 does not); bounds
#: beyond it are removed from the copy (post-validated).
NUMBER_LIMIT: Final = 10**18
#: The engine reads bounds as doubles: an integer bound beyond this is rounded (2**53 + 1 becomes 2**53).
EXACT_INTEGER: Final = 2**53
#: Float bounds given to the engine are rounded inward to this many significant digits and decimal places: the
#: engine's range regex is built with double arithmetic and lets texts past a bound with more digits through
#: (``maximum: 0.9999999999999999`` accepts ``1``; ``minimum: -0.00000000000366290718409`` accepts
#: ``-0.000000000003662907184090001``); 10 digits were exact in every probe, and 30 places still compile
#: (``minimum: 5e-324`` does not).
BOUND_DIGITS: Final = 10
BOUND_PLACES: Final = 30
_NUMBER_WORDS: Final = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum")


def combined_numbers(visits: Mapping[str, Visit]) -> set[str]:
    """Pointers of subschemas whose numbers the engine intersects with another schema's: no window added there.

    A window on one side of an intersection ignores the other side's bounds: ``{"minimum": 2e18, "allOf":
    [{"type": "number"}]}`` would get ``±1e15`` from its member and no valid value. So nodes that combine
    (``allOf``/``anyOf``/``oneOf``/``$ref``), ``allOf`` members, and branches of a node with bounds of its own
    keep only their own bounds.
    """
    combined: set[str] = set()
    for path, visit in visits.items():
        if any(k in visit.node for k in ("allOf", "anyOf", "oneOf", "$ref")):
            combined.add(path)
        combined.update(visit.intersected)
        if any(k in visit.node for k in _NUMBER_WORDS):
            combined.update(visit.branches)
    return combined


def number_bounds(path: str, node: Mapping[str, Any], narrow: bool, prepared: Prepared) -> None:
    """The engine's bounds for a number schema: sound after parsing, finite, and compilable.

    The contract is checked on the *parsed* value (a double, or a Python int), the engine checks the *text*;
    each side's bound is turned into an inclusive engine bound ``D`` whose every text parses inside the
    contract's range. Rounding to the nearest double is monotonic, so a text ``t <= D`` parses to
    ``r(t) <= r(D)``; it suffices that ``r(D)`` is a double inside the range:

    - floats: an inclusive bound ``m`` becomes ``m`` itself when it has few digits (then no valid double is
      lost: *enforced*), an exclusive one the next double inside (``lt=1``: texts such as
      ``0.99999999999999999999`` parse to 1.0, and ``gt=0``: ``0.`` + 330 zeros + ``1`` parses to 0.0), then
      ``D`` is rounded *inward* to :data:`BOUND_DIGITS` significant digits and :data:`BOUND_PLACES` places (the
      engine's regex is exact only for such bounds); when that excludes valid doubles the bound is *lowered*;
    - integers: ``gt``/``lt`` become the integer inside; bounds beyond :data:`EXACT_INTEGER` are rounded by
      the engine to doubles, so the copy gets the nearest double *outside* (looser: *post_validated*);
    - a number the contract leaves unbounded on a side gets ``±NUMBER_RANGE`` there (*lowered*: the grammar is
      narrower than the contract; the engine's unbounded number writes values no double or int64 holds). If
      the valid range lies entirely beyond ``±NUMBER_RANGE`` the window is ``±NUMBER_LIMIT``; if it lies
      beyond that too, the bounds are removed (*post_validated*) rather than making the grammar unsatisfiable,
      and so are single bounds beyond ``NUMBER_LIMIT`` (the engine cannot build their regex: int64 range,
      ``lt=3.4e38``);
    - with ``narrow`` false (a remedy when narrowing made the schema unsatisfiable, and for nodes the engine
      intersects with other schemas, see :func:`combined_numbers`), nodes with ``enum`` or ``const``, and
      untyped nodes without bounds, no window is added.

    Texts just *outside* a bound that round onto it are refused (a narrowing nobody notices: the value has a
    shorter spelling inside); texts inside it never parse outside, for either sign. Bounds on a node whose
    ``type`` excludes numbers constrain nothing that is generated: *enforced* as given.
    """
    present = [kw for kw in _NUMBER_WORDS if kw in node and (path, kw) not in prepared.removed]
    declared = node.get("type") if (path, "type") not in prepared.removed else None
    names = {declared} if isinstance(declared, str) else set(declared) if isinstance(declared, list) else set()
    numeric = bool(names & {"number", "integer"})
    report = prepared.report
    if names and not numeric:
        for kw in present:
            report.add(path, kw, "enforced", "applies to numbers only: none is generated here")
        return
    clamp = narrow and "enum" not in node and "const" not in node and (numeric or bool(present))
    if not present and not clamp:
        return
    integer = numeric and "number" not in names
    sides = [_bound(node, present, "minimum", "exclusiveMinimum", True),
             _bound(node, present, "maximum", "exclusiveMaximum", False)]
    exact: list[Any] = []
    for value, exclusive, _ in sides:
        if value is None:
            exact.append(None)
        elif integer:
            exact.append(_int_inside(value, exclusive, lower=len(exact) == 0))
        else:
            exact.append(_double_inside(value, exclusive, lower=len(exact) == 0))
    low, high = exact
    if low is not None and high is not None and low > high:
        for kw in present:  # an unsatisfiable contract: the engine says so
            report.add(path, kw, "enforced", "")
        return
    window = _window(low, high) if clamp else None
    if window is None:  # no window: keep what the engine can compile, remove the rest
        window = (low if low is not None and abs(low) <= NUMBER_LIMIT else None,
                  high if high is not None and abs(high) <= NUMBER_LIMIT else None)
    engine: list[Any] = []
    actions: list[tuple[Action, str]] = []
    for i, (bound, wanted) in enumerate(zip(exact, window, strict=True)):
        lower = i == 0
        word = "minimum" if lower else "maximum"
        if wanted is None:
            engine.append(None)
            actions.append(("post_validated", f"beyond ±{NUMBER_LIMIT:.0e}, where the engine cannot build the "
                            "range's regex: removed, checked after parsing") if bound is not None else ("enforced", ""))
            continue
        if integer:
            value, action, detail = _int_engine(bound, wanted, lower)
        else:
            value, action, detail = _float_engine(bound, wanted, lower)
        if bound is None:
            action, detail = "lowered", (f"unbounded {'below' if lower else 'above'}: the engine is given {word} "
                                         f"{value} (the grammar is narrower than the contract: beyond it the "
                                         "engine's numbers are not finite doubles)")
        engine.append(value)
        actions.append((action, detail))
    if integer is False and engine[0] is not None and engine[1] is not None and engine[0] > engine[1]:
        # rounding inward left nothing: round outward instead (looser, so checked after parsing)
        engine = [_decimal_bound(window[0], ROUND_FLOOR), _decimal_bound(window[1], ROUND_CEILING)]
        actions = [("post_validated", f"too narrow for the engine's precision: widened to {engine[0]}..{engine[1]}, "
                    "checked after parsing")] * 2
    for kw in present:
        prepared.edits.append((path, kw, DELETE))
    for i, (_, _, kws) in enumerate(sides):
        word = "minimum" if i == 0 else "maximum"
        action, detail = actions[i]
        if engine[i] is not None:
            prepared.edits.append((path, word, engine[i]))
        for kw in kws or ([word] if engine[i] is not None else []):
            report.add(path, kw, action, detail)
            if action == "post_validated":
                prepared.removed.add((path, kw))


def _bound(node: Mapping[str, Any], present: list[str], plain: str, strict: str,
           lower: bool) -> tuple[Any, bool, list[str]]:
    """A side's tightest bound: (value or None, exclusive, the keywords that state it)."""
    kws = [k for k in (plain, strict) if k in present]
    flag = node.get(strict) if strict in present else None
    best: tuple[Any, bool] | None = None
    if plain in present:
        best = (node[plain], flag is True)
    if strict in present and not isinstance(flag, bool) and (
            best is None or (flag >= best[0] if lower else flag <= best[0])):
        best = (flag, True)
    return (best[0], best[1], kws) if best is not None else (None, False, kws)


def _int_inside(value: Any, exclusive: bool, lower: bool) -> int:
    """The integer nearest ``value`` on the inside of the bound."""
    if lower:
        return int(math.floor(value) + 1 if exclusive else math.ceil(value))
    return int(math.ceil(value) - 1 if exclusive else math.floor(value))


def _double_inside(value: Any, exclusive: bool, lower: bool) -> float:
    """The double nearest ``value`` on the inside of the bound (``value`` itself when inclusive and a double)."""
    try:
        found = float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf
    toward = math.inf if lower else -math.inf
    if (found < value if lower else found > value) or (exclusive and found == value):
        found = math.nextafter(found, toward)
    return found


def _window(low: Any, high: Any) -> tuple[Any, Any] | None:
    """The contract's range intersected with ±NUMBER_RANGE, else ±NUMBER_LIMIT; None if it misses both."""
    for reach in (NUMBER_RANGE, NUMBER_LIMIT):
        start = -reach if low is None else max(low, -reach)
        end = reach if high is None else min(high, reach)
        if start <= end:
            return start, end
    return None


def _int_engine(bound: int | None, wanted: int, lower: bool) -> tuple[int, Action, str]:
    word = "minimum" if lower else "maximum"
    if abs(wanted) > EXACT_INTEGER:  # the engine rounds it to a double: give it the double outside
        double = float(wanted)
        if (double > wanted) if lower else (double < wanted):
            double = math.nextafter(double, -math.inf if lower else math.inf)
        return int(double), "post_validated", (f"the engine rounds integer bounds beyond 2**53 to doubles: given "
                                               f"{word} {int(double)} (looser), checked after parsing")
    if bound is not None and bound != wanted:
        return wanted, "lowered", f"beyond the engine's range: the engine is given {word} {wanted} (narrower)"
    return wanted, "enforced", f"as {word} {wanted}"


def _float_engine(bound: float | None, wanted: float, lower: bool) -> tuple[float, Action, str]:
    word = "minimum" if lower else "maximum"
    value = _decimal_bound(wanted, ROUND_CEILING if lower else ROUND_FLOOR)
    if bound is not None and value == bound:  # the same double: no valid value is lost
        return value, "enforced", ""
    why = "beyond the engine's range" if bound is not None and wanted != bound else \
        "rounded inward to a bound the engine's regex holds exactly, so every text parses inside"
    return value, "lowered", f"{why}: the engine is given {word} {value!r} (narrower)"


def _decimal_bound(value: float, rounding: str) -> float:
    """``value``'s shortest spelling rounded (``rounding``) to BOUND_DIGITS significant digits and BOUND_PLACES
    places, as a double whose shortest spelling is that decimal (rounding the spelling, which parses to
    ``value``, keeps every text beyond it parsing beyond ``value``)."""
    exact = Decimal(repr(value))
    if exact == 0:
        return 0.0
    step = max(exact.adjusted() - BOUND_DIGITS + 1, -BOUND_PLACES)
    rounded = exact.quantize(Decimal(1).scaleb(step), rounding=rounding)
    return float(rounded) + 0.0  # no -0.0
