"""Constraints in words: what a dialect cannot enforce is restated in the field's ``description``.

A strict vendor dialect removes the keywords it cannot enforce (Anthropic has no numeric bounds, OpenAI no
string lengths) and a grammar decoder ignores some it is sent; guardrail checks all of them after parsing,
but a model that never hears of a bound learns it only from the feedback after a wrong first answer, a paid
extra call. So lowering restates each such keyword, in short plain words, in the ``description`` of the very
node that held it: ``"How urgent"`` with ``minimum: 1, maximum: 5`` becomes ``"How urgent (an integer from 1
to 5)"``; a node without a description gets the words alone (``"An integer from 1 to 5"``).

Rules: the user's description is kept whole, as the prefix; only keywords the dialect does not enforce are put
in words (an enforced keyword is sent as itself and not said twice); the wording depends only on the keyword
values (no set or dict ordering), so equal schemas give equal descriptions and the plan cache and request
hashes stay stable. :data:`DESCRIBED` lists the keywords that have words; the others a dialect removes are
structural and carry no rule the model could follow (``discriminator``: the branch choice; ``additionalProperties``
and ``patternProperties``: extra keys are not produced; ``default``: applied after parsing; ``oneOf``
exclusivity and tuple positions are rewritten, see the compile report).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from guardrail.schema.report import ReportBuilder

__all__ = ["DESCRIBED", "FORMAT_WORDS", "describe_into", "merge_description", "restate"]

#: Keywords that have words; a dialect that drops one of them restates it in the node's description.
DESCRIBED: Final = frozenset({
    "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems", "contains", "minContains",
    "maxContains", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies",
    "propertyNames", "not", "if", "then", "else",
})

#: How each well-known ``format`` is said. Other formats are not said: a validator ignores a format it does not
#: know (as the specification says), so they constrain nothing.
FORMAT_WORDS: Final[Mapping[str, str]] = {
    "date": "a date, YYYY-MM-DD",
    "date-time": "a date and time, RFC 3339 (YYYY-MM-DDThh:mm:ssZ or with an offset)",
    "time": "a time of day, hh:mm:ss (RFC 3339, with an offset)",
    "duration": "an ISO 8601 duration, e.g. P3DT4H",
    "email": "an email address",
    "idn-email": "an email address",
    "hostname": "a host name",
    "idn-hostname": "a host name",
    "ipv4": "an IPv4 address",
    "ipv6": "an IPv6 address",
    "uri": "an absolute URI",
    "uri-reference": "a URI reference",
    "iri": "an absolute IRI",
    "iri-reference": "an IRI reference",
    "uuid": "a UUID",
    "regex": "a regular expression",
    "json-pointer": "a JSON Pointer",
    "relative-json-pointer": "a relative JSON Pointer",
    "uri-template": "a URI template",
    # formats pydantic types emit (checked by pydantic against the type)
    "multi-host-uri": "a URI (one or more hosts)",
    "ipvanyaddress": "an IPv4 or IPv6 address",
    "ipvanyinterface": "an IPv4 or IPv6 interface, e.g. 10.0.0.1/24",
    "ipvanynetwork": "an IPv4 or IPv6 network, e.g. 10.0.0.0/24",
    "ipv4network": "an IPv4 network, e.g. 10.0.0.0/24",
    "ipv6network": "an IPv6 network, e.g. 2001:db8::/32",
    "ipv4interface": "an IPv4 interface, e.g. 10.0.0.1/24",
    "ipv6interface": "an IPv6 interface, e.g. 2001:db8::1/64",
    "uuid1": "a UUID (version 1)",
    "uuid3": "a UUID (version 3)",
    "uuid4": "a UUID (version 4)",
    "uuid5": "a UUID (version 5)",
    "base64": "base64-encoded",
}

_NOUNS: Final = {"integer": "an integer", "number": "a number"}
#: Tuple keywords (2020-12 ``prefixItems``, draft 4's list-form ``items``): said where a strict dialect sends the
#: items as one ``anyOf`` and so loses their order (the caller passes them only then).
_TUPLES: Final = ("prefixItems", "items")


def restate(node: Mapping[str, Any], keywords: Iterable[str],
            also: Mapping[str, Sequence[Any]] | None = None) -> list[tuple[str, frozenset[str]]]:
    """The phrases that say ``keywords`` of ``node`` in words, each with the keywords it says, in a fixed order
    (empty when none has words).

    ``node`` holds the keyword values (the original schema node, or a merged one); ``also`` holds further
    values of a keyword that several merged members gave differently (each one applies). Keywords outside
    :data:`DESCRIBED`, and values of an unexpected form, are skipped.
    """
    said = frozenset(k for k in keywords if (k in DESCRIBED or k in _TUPLES) and k in node)
    extra = also or {}
    out: list[tuple[str, frozenset[str]]] = []

    def values(kw: str) -> list[Any]:
        return [node[kw], *extra.get(kw, ())]

    def add(phrase: str, *covered: str) -> None:
        if phrase:
            out.append((phrase, said & frozenset(covered)))

    if "const" in said:
        add(" and ".join(f"exactly {_json(v)}" for v in values("const")), "const")
    if "enum" in said and isinstance(node["enum"], (list, tuple)):
        add("one of " + ", ".join(_json(v) for v in node["enum"]), "enum")
    bounds = _bounds(node, said)
    if bounds:
        declared = node.get("type")
        noun = _NOUNS.get(declared) if isinstance(declared, str) else None
        joiner = " of " if noun and bounds.startswith(("at least", "at most")) else " "
        add(f"{noun}{joiner}{bounds}" if noun else bounds, "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    if "multipleOf" in said:
        add("a multiple of " + " and of ".join(_number(v) for v in values("multipleOf")), "multipleOf")
    add(_count(node, said, "minLength", "maxLength", "character", "characters"), "minLength", "maxLength")
    if "pattern" in said:
        add(" and ".join(f"matches the pattern {v}" if isinstance(v, str) else f"matches {_json(v)}"
                         for v in values("pattern")), "pattern")
    if "format" in said:
        add(" and ".join(w for w in (_format(v) for v in values("format")) if w), "format")
    for kw in _TUPLES:
        if kw in said and isinstance(node[kw], (list, tuple)):
            add("items in this order: " + ", ".join(_json(_plain(s)) for s in node[kw]), kw)
    add(_count(node, said, "minItems", "maxItems", "item", "items"), "minItems", "maxItems")
    if "uniqueItems" in said and node["uniqueItems"] is True:
        add("no duplicate items", "uniqueItems")
    add(_contains(node, said), "contains", "minContains", "maxContains")
    add(_count(node, said, "minProperties", "maxProperties", "property", "properties"), "minProperties",
        "maxProperties")
    for kw in ("dependentRequired", "dependencies", "dependentSchemas"):
        if kw in said:
            add("; ".join(_dependencies(v) for v in values(kw) if isinstance(v, Mapping) and v), kw)
    if "propertyNames" in said:
        add("; ".join(f"property names match {_json(v)}" for v in values("propertyNames")), "propertyNames")
    if "not" in said:
        add("; ".join(f"does not match {_json(v)}" for v in values("not")), "not")
    if said & {"if", "then", "else"} and "if" in node:
        add(_conditional(node), "if", "then", "else")
    return out


def describe_into(out: dict[str, Any], node: Mapping[str, Any], keywords: Iterable[str], report: ReportBuilder,
                  where: str | Callable[[str], str], also: Mapping[str, Sequence[Any]] | None = None) -> None:
    """Restate ``keywords`` of ``node`` in the description of ``out`` (the node as sent; its description, if any,
    is the user's) and record the words in ``report`` at the keyword's original pointer: ``where``, or
    ``where(keyword)`` for a merged node whose keywords came from several places."""
    phrases = restate(node, keywords, also)
    text = merge_description(out.get("description"), [p for p, _ in phrases])
    if text is None:
        return
    out["description"] = text
    for phrase, said in phrases:
        for kw in said:
            report.describe(where if isinstance(where, str) else where(kw), kw, phrase)


def merge_description(given: Any, phrases: Sequence[str]) -> str | None:
    """The description with ``phrases`` added: ``"<given> (<p1>; <p2>)"``, or the phrases alone (first letter
    capitalised) when there is no description (or a blank one, kept in front); ``None`` when there is nothing to
    add. ``given`` is kept whole, as the prefix."""
    if not phrases:
        return None
    words = "; ".join(phrases)
    if isinstance(given, str) and given.strip():
        return f"{given} ({words})"
    blank = given if isinstance(given, str) else ""  # kept too: the user's text is always the prefix
    return blank + words[:1].upper() + words[1:]


# -- the parts -------------------------------------------------------------------------------------------


def _bounds(node: Mapping[str, Any], said: frozenset[str]) -> str:
    """``from 1 to 5``, ``at least 1``, ``greater than 0 and at most 5``...: only the bounds in ``said``."""
    low = _bound(node, said, "minimum", "exclusiveMinimum", "at least", "greater than")
    high = _bound(node, said, "maximum", "exclusiveMaximum", "at most", "less than")
    if low and high and low[0] == "at least" and high[0] == "at most":
        return f"from {low[1]} to {high[1]}"
    return " and ".join(f"{word} {value}" for word, value in (low, high) if word)


def _bound(node: Mapping[str, Any], said: frozenset[str], inclusive: str, exclusive: str, soft: str,
           hard: str) -> tuple[str, str]:
    """The tighter of one side's bounds, when one of them is to be said: ("at least", "1") or ("", "")."""
    if inclusive not in said and exclusive not in said:
        return "", ""
    value, flag = node.get(inclusive), node.get(exclusive)
    if isinstance(flag, bool):  # draft 4: exclusiveMinimum: true makes minimum exclusive
        return ((hard if flag else soft), _number(value)) if _is_number(value) else ("", "")
    candidates: list[tuple[Any, bool]] = []
    if _is_number(value) and inclusive in said:
        candidates.append((value, False))
    if _is_number(flag) and exclusive in said:
        candidates.append((flag, True))
    if not candidates:
        return "", ""
    upper = soft == "at most"
    best = candidates[0]
    for value, strict in candidates[1:]:
        tighter = value < best[0] if upper else value > best[0]
        if tighter or (value == best[0] and strict):
            best = (value, strict)
    return (hard if best[1] else soft), _number(best[0])


def _count(node: Mapping[str, Any], said: frozenset[str], low_kw: str, high_kw: str, one: str, many: str) -> str:
    """``2 to 5 items``, ``at least 1 item``, ``at most 80 characters``, ``exactly 3 characters``."""
    low = node.get(low_kw) if low_kw in said and _is_count(node.get(low_kw)) else None
    high = node.get(high_kw) if high_kw in said and _is_count(node.get(high_kw)) else None
    if low is not None and high is not None:
        if low == high:
            return f"exactly {_number(low)} {one if low == 1 else many}"
        return f"{_number(low)} to {_number(high)} {many}"
    if low is not None:
        return f"at least {_number(low)} {one if low == 1 else many}"
    if high is not None:
        return f"at most {_number(high)} {one if high == 1 else many}"
    return ""


def _contains(node: Mapping[str, Any], said: frozenset[str]) -> str:
    if "contains" not in said and not said & {"minContains", "maxContains"}:
        return ""
    if "contains" not in node:
        return ""
    low, high = node.get("minContains", 1), node.get("maxContains")
    low = low if _is_count(low) else 1
    if _is_count(high):
        many = f"{_number(low)} to {_number(high)} items" if low != high else f"exactly {_number(low)} item(s)"
    else:
        many = "at least one item" if low == 1 else f"at least {_number(low)} items"
    return f"{many} matching {_json(node['contains'])}"


def _dependencies(value: Mapping[str, Any]) -> str:
    parts = []
    for name in value:
        then = value[name]
        if isinstance(then, (list, tuple)):
            parts.append(f"if {_json(name)} is given, so are {', '.join(_json(n) for n in then)}"
                         if len(then) != 1 else f"if {_json(name)} is given, so is {_json(then[0])}")
        else:
            parts.append(f"if {_json(name)} is given, the object matches {_json(then)}")
    return "; ".join(parts)


def _conditional(node: Mapping[str, Any]) -> str:
    cond = _json(node["if"])
    then = _json(node["then"]) if "then" in node else None
    other = _json(node["else"]) if "else" in node else None
    if then is not None and other is not None:
        return f"if it matches {cond}, it matches {then}; otherwise it matches {other}"
    if then is not None:
        return f"if it matches {cond}, it matches {then}"
    if other is not None:
        return f"if it does not match {cond}, it matches {other}"
    return ""


def _plain(schema: Any) -> Any:
    """A tuple member as said: its annotations (``title``, ``description``) left out, the constraints kept."""
    if isinstance(schema, Mapping):
        return {k: v for k, v in schema.items() if k not in ("title", "description")}
    return schema


def _format(value: Any) -> str:
    return FORMAT_WORDS.get(value, "") if isinstance(value, str) else ""


def _number(value: Any) -> str:
    return json.dumps(value) if _is_number(value) else _json(value)


def _json(value: Any) -> str:
    """Compact, key-sorted JSON (deterministic), non-ASCII kept."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
