"""Which constraints of a contract reach the model, read off the request a wrapped client actually sent.

The measurement behind "tell the model what the vendor cannot enforce" (docs/json-schema.md): a constraint
keyword of the contract's JSON Schema (a bound, a length, a count, a pattern, a format...) reaches the model

- as a ``keyword``: a schema the model is shown (the vendor's structured-output or tool schema, or the schema
  in the prompt) carries it, with the same value, at that field;
- ``enforced``: a self-hosted grammar decoder is sent it and enforces it (the model is not shown that schema);
- in ``words``: a description the model is shown, at that field, states it.

Otherwise it is ``missing``: the model learns of it only from the feedback after a wrong answer.

Fields are matched by their *data location* (property names and ``[]`` for array items), never by schema
pointers, so the check does not trust the lowering it measures: references are followed, union branches and
nullable wrappers looked through, in the contract's schema and in each sent schema alike. The words are
recognised by their own cues (the value's digits and a phrase such as "at most" or "characters"), not by
calling the code that wrote them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

__all__ = ["MEASURED", "Constraint", "Reach", "carried_schemas", "constraints", "locate", "reach", "said_in_words"]

#: The constraint keywords measured (``type``/``required`` are structure every mode carries).
MEASURED: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
                   "maxLength", "pattern", "format", "minItems", "maxItems", "uniqueItems", "minProperties",
                   "maxProperties", "enum", "const", "prefixItems")
Reach = Literal["keyword", "enforced", "words", "missing"]
_PROMPT_MARK: Final = "It must match this JSON Schema:"
_UNIONS: Final = ("anyOf", "oneOf", "allOf")


@dataclass(frozen=True)
class Constraint:
    """One constraint of the contract: where the data is (``("lines", "[]", "qty")``), keyword and value."""

    location: tuple[str, ...]
    keyword: str
    value: Any = field(compare=False)  # (location, keyword) is unique; a value may be a list

    def __str__(self) -> str:
        return f"{'.'.join(self.location) or '$'} {self.keyword}={json.dumps(self.value)}"


def constraints(schema: Mapping[str, Any]) -> list[Constraint]:
    """Every :data:`MEASURED` keyword of ``schema`` by data location (``uniqueItems: false`` is no constraint)."""
    found: dict[tuple[tuple[str, ...], str], Constraint] = {}
    for location, node in _nodes(schema):
        for kw in MEASURED:
            if kw in node and not (kw == "uniqueItems" and node[kw] is not True):
                found.setdefault((location, kw), Constraint(location, kw, node[kw]))
    return list(found.values())


def locate(schema: Mapping[str, Any], location: tuple[str, ...]) -> list[Mapping[str, Any]]:
    """The nodes of ``schema`` at a data location: references followed, unions and wrappers looked through."""
    return [node for where, node in _nodes(schema) if where == location]


def carried_schemas(body: Mapping[str, Any], *, self_hosted: bool = False) -> list[tuple[Mapping[str, Any], bool]]:
    """The schemas a request body carries, each with whether the model is shown it.

    Hosted vendors show their structured-output and tool schemas to the model; a self-hosted grammar decoder's
    schema (``response_format``, ``structured_outputs``, ``json_schema``, ``format``) is not shown. A schema in
    the prompt (the instruction of the json and prompt modes) is always shown."""
    out: list[tuple[Mapping[str, Any], bool]] = []
    for node in _dicts(body):
        for text in (v for v in node.values() if isinstance(v, str) and _PROMPT_MARK in v):
            start = text.index(_PROMPT_MARK) + len(_PROMPT_MARK)
            try:
                shown, _ = json.JSONDecoder().raw_decode(text[start:].lstrip())
            except ValueError:
                continue
            if isinstance(shown, dict):
                out.append((shown, True))
        if node.get("type") == "json_schema" and isinstance(node.get("schema"), Mapping):
            out.append((node["schema"], not self_hosted))  # Responses text.format, Anthropic output_config.format
        wrapped = node.get("json_schema") if node.get("type") == "json_schema" else None
        if isinstance(wrapped, Mapping) and isinstance(wrapped.get("schema"), Mapping):
            out.append((wrapped["schema"], not self_hosted))  # chat response_format
        for key in ("parameters", "input_schema", "parametersJsonSchema", "parameters_json_schema"):
            # function tools (chat, Responses), Anthropic tools, Gemini function declarations
            if isinstance(node.get(key), Mapping) and isinstance(node.get("name"), str):
                out.append((node[key], True))
        if isinstance(node.get("responseJsonSchema"), Mapping):  # Gemini's generationConfig
            out.append((node["responseJsonSchema"], True))
    if self_hosted:
        extra = [body.get("json_schema"), body.get("format"), (body.get("structured_outputs") or {}).get("json")]
        out.extend((s, False) for s in extra if isinstance(s, Mapping))
    return out


def reach(constraint: Constraint, carried: list[tuple[Mapping[str, Any], bool]],
          decoder_enforces: frozenset[str] = frozenset()) -> Reach:
    """How ``constraint`` reaches the model through the ``carried`` schemas (see the module docstring);
    ``decoder_enforces``: the keywords a self-hosted decoder enforces (``format:<name>`` for each format)."""
    best: Reach = "missing"
    for schema, shown in carried:
        root = _unwrap(schema, constraint.location)
        for node in locate(schema, (*root, *constraint.location)):
            if constraint.keyword in node and _same(constraint.keyword, node[constraint.keyword], constraint.value):
                if shown:
                    return "keyword"
                if constraint.keyword in decoder_enforces or (
                        constraint.keyword == "format" and f"format:{constraint.value}" in decoder_enforces):
                    best = "enforced"
            if shown and constraint.keyword == "const" and node.get("enum") == [constraint.value]:
                return "keyword"  # a one-value enum says the same (Gemini's schema has enum, not const)
            if shown and constraint.keyword == "prefixItems" and _one_item_schema(constraint.value) and isinstance(
                    node.get("items"), Mapping):
                return "keyword"  # a tuple of one item schema: sent as items of that schema, no order to tell
            if shown and said_in_words(constraint, node.get("description")) and best == "missing":
                best = "words"
    return best


def said_in_words(constraint: Constraint, description: Any) -> bool:
    """Whether ``description`` states ``constraint`` in words (the value and a cue for the keyword)."""
    if not isinstance(description, str):
        return False
    text, kw, value = description.lower(), constraint.keyword, constraint.value
    number = re.escape(json.dumps(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
    if kw in _BOUNDS and number:
        return _bound_said(text, kw, float(value))
    cues: dict[str, str] = {
        "multipleOf": rf"multiple of {number}\b",
        "minLength": rf"(at least {number} char|{number} to \d+ char|exactly {number} char)",
        "maxLength": rf"(at most {number} char|\d+ to {number} char|exactly {number} char)",
        "minItems": rf"(at least {number} item|{number} to \d+ item|exactly {number} item)",
        "maxItems": rf"(at most {number} item|\d+ to {number} item|exactly {number} item)",
        "minProperties": rf"(at least {number} propert|{number} to \d+ propert|exactly {number} propert)",
        "maxProperties": rf"(at most {number} propert|\d+ to {number} propert|exactly {number} propert)",
        "uniqueItems": r"no duplicate",
    }
    if kw in cues:
        return bool((number or kw == "uniqueItems") and re.search(cues[kw], text))
    if kw == "pattern":
        return isinstance(value, str) and value in description
    if kw == "format":
        words = {"date": "yyyy-mm-dd", "date-time": "date and time", "time": "time", "email": "email",
                 "uuid": "uuid", "uri": "uri", "ipv4": "ipv4", "ipv6": "ipv6", "hostname": "host name",
                 "duration": "duration"}
        return isinstance(value, str) and words.get(value, value) in text
    if kw == "prefixItems" and isinstance(value, list):  # the order of a tuple's items
        members = [{k: v for k, v in m.items() if k not in ("title", "description")} if isinstance(m, dict) else m
                   for m in value]
        return "order" in text and all(json.dumps(m, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
                                       .lower() in text for m in members)
    if kw == "enum" and isinstance(value, list):
        return ("one of " + ", ".join(_compact(v) for v in value)).lower() in text
    if kw == "const":
        return re.search(rf"exactly {re.escape(_compact(value).lower())}(?=$|[;)]| and )", text) is not None
    return False


_BOUNDS: Final = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_NUMBER: Final = r"(-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)"


def _bound_said(text: str, keyword: str, value: float) -> bool:
    """A bound is said when the words state it or a tighter one (``less than 0`` says ``maximum: 0``)."""
    said: list[tuple[str, float]] = []
    for word, number in re.findall(rf"(at least|greater than|at most|less than|from|to) {_NUMBER}\b", text):
        said.append((word, float(number)))
    for word, bound in said:
        if keyword == "minimum" and ((word in ("at least", "from") and bound >= value)
                                     or (word == "greater than" and bound >= value)):
            return True
        if keyword == "exclusiveMinimum" and ((word == "greater than" and bound >= value)
                                              or (word in ("at least", "from") and bound > value)):
            return True
        if keyword == "maximum" and ((word in ("at most", "to") and bound <= value)
                                     or (word == "less than" and bound <= value)):
            return True
        if keyword == "exclusiveMaximum" and ((word == "less than" and bound <= value)
                                              or (word in ("at most", "to") and bound < value)):
            return True
    return False


# -- walking by data location ------------------------------------------------------------------------------


def _nodes(schema: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], Mapping[str, Any]]]:
    """Every (data location, node) of ``schema``; each reference target is entered once per location."""
    stack: list[tuple[tuple[str, ...], Any, frozenset[str]]] = [((), schema, frozenset())]
    while stack:
        location, node, refs = stack.pop()
        if not isinstance(node, Mapping):
            continue
        yield location, node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#") and ref not in refs:
            stack.append((location, _resolve(schema, ref), refs | {ref}))
        for kw in _UNIONS:
            branches = node.get(kw)
            if isinstance(branches, list):
                stack.extend((location, b, refs) for b in branches)
        props = node.get("properties")
        if isinstance(props, Mapping):
            stack.extend(((*location, str(name)), sub, frozenset()) for name, sub in props.items())
        items = node.get("items")
        if isinstance(items, Mapping):
            stack.append(((*location, "[]"), items, frozenset()))
        for sub in node.get("prefixItems") or ():
            stack.append(((*location, "[]"), sub, frozenset()))


def _resolve(schema: Mapping[str, Any], ref: str) -> Any:
    node: Any = schema
    for token in ref[1:].split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        node = node.get(token) if isinstance(node, Mapping) else None
    return node


def _unwrap(schema: Mapping[str, Any], location: tuple[str, ...]) -> tuple[str, ...]:
    """The location prefix of a wrapped root (``{"result": <contract>}``), else ``()``."""
    props = schema.get("properties")
    if isinstance(props, Mapping) and list(props) == ["result"] and (not location or location[0] != "result"):
        return ("result",)
    return ()


def _dicts(value: Any) -> Iterator[Mapping[str, Any]]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _one_item_schema(members: Any) -> bool:
    plain = {json.dumps({k: v for k, v in m.items() if k not in ("title", "description")}, sort_keys=True)
             if isinstance(m, Mapping) else json.dumps(m) for m in members} if isinstance(members, list) else set()
    return len(plain) == 1


def _same(keyword: str, sent: Any, given: Any) -> bool:
    """The sent value says the given one; an ``enum`` may have gained a ``null`` (optional made nullable)."""
    if keyword == "enum" and isinstance(sent, list) and isinstance(given, list) and None not in given:
        sent = [v for v in sent if v is not None]
    if keyword == "prefixItems":  # subschemas: their descriptions may have gained words
        sent, given = _undescribed(sent), _undescribed(given)
    return json.dumps(sent, sort_keys=True) == json.dumps(given, sort_keys=True)


def _undescribed(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _undescribed(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [_undescribed(v) for v in value]
    return value
