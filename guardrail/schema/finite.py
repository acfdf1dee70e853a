"""The finite-number screen of a JSON Schema contract: a second schema that looks only where infinity could hide.

JSON text cannot spell infinity, but ``1e400`` parses to it, and ``jsonschema-rs`` lets an infinite float
through any slot that no ``type`` keyword judges (``{}``, ``true``, an object's undescribed members). A value
holding one is not JSON data, so the fast paths refuse it. Walking the whole value for one costs as much as
validating it; this module builds, once per contract, a schema that walks only the *untyped slots* of the
contract and checks the full subtree there (``FINITE``: every number finite).

Soundness, for a value ``x`` the contract accepts (the screen runs only after the contract validator said so):
every node ``n`` of the contract that ``x`` (or a part of it) satisfies maps to a screen ``S(n)`` such that
``S(n)`` refuses the part whenever it holds a non-finite number, and accepts every part with none:

- ``true``/untyped node, ``not``/``if`` only, anything not understood: ``S = FINITE`` (the whole subtree).
- ``false``, ``enum``, ``const``: ``S = true`` (nothing, or only listed JSON values, can satisfy it).
- ``$ref``: ``S(target)``: the part satisfies the target in every draft (siblings are not relied on, since
  drafts 04-07 ignore them). Only ``#`` and ``#/json/pointer`` references in a document with no nested
  ``$id``/``id``/anchors/``$schema`` are followed; any other reference screens with ``FINITE``.
- only ``allOf``/``anyOf``/``oneOf``: ``allOf`` of the screens of all branches. The part satisfies at least
  one branch, whose screen refuses a non-finite number; a branch it does not satisfy only adds a check that
  passes every finite value.
- a ``type`` keyword: the part itself is one of the JSON types, so not a non-finite number (the validator
  refuses those for every ``type``). Its members are exactly those ``properties``/``patternProperties``/
  ``additionalProperties`` describe (``FINITE`` for the rest when ``additionalProperties`` is absent); its
  items are those ``prefixItems``/``items`` (or the draft 04-2019 ``items``/``additionalItems``) describe
  (``FINITE`` for the rest).

The screen is written in Draft 2020-12 with no keyword that reads annotations, so its meaning does not depend
on the contract's draft. A screen that ends up checking nothing is ``None``: the contract needs no screen.

The screen also bounds nesting, so the fast path need not count brackets: an untyped slot inside ``k``
containers gets ``FINITE`` limited to ``MAX_DEPTH - k`` more levels, and a typed part nests only as deep as
the schema spells it. ``bounded`` says whether that holds for every value the screen passes (not for a
recursive schema, nor one spelled deeper than ``MAX_DEPTH``): then no value passing both the contract and the
screen nests deeper than ``MAX_DEPTH``.
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple
from urllib.parse import unquote

from guardrail.parse.state import MAX_DEPTH
from guardrail.schema.jsonschema_view import subschemas

#: Any JSON value with every number finite: ``type`` refuses an infinite float (it is no JSON type).
FINITE_DEF: Final = {"type": ["null", "boolean", "string", "number", "array", "object"],
                     "items": {"$ref": "#/$defs/finite"}, "additionalProperties": {"$ref": "#/$defs/finite"}}
_FINITE_REF: Final = {"$ref": "#/$defs/finite"}
_SCALAR_TYPES: Final = ["null", "boolean", "string", "number"]


class Screen(NamedTuple):
    """What :func:`finite_screen` builds: the screen document (``None``: nothing to check) and whether every
    value passing the contract and the screen nests at most ``MAX_DEPTH`` deep."""

    document: dict[str, Any] | None
    bounded: bool
_DRAFT_2020: Final = "https://json-schema.org/draft/2020-12/schema"
#: Keywords that move the base URI or the dialect of a subschema: pointers can no longer be followed simply.
_RESOURCE_KEYS: Final = ("$id", "id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$schema")
_MAX_NODES: Final = 20_000


def finite_screen(document: dict[str, Any]) -> Screen:
    """The screen for ``document`` (see the module docstring)."""
    draft = document.get("$schema")
    # Drafts 04-2019 spell tuples as an ``items`` list (+ ``additionalItems``); 2020-12 (the default) does not.
    old_items = isinstance(draft, str) and ("2019-09" in draft or any(f"draft-0{n}" in draft for n in "34567"))
    builder = _Builder(document, follow_refs=_plain_document(document), old_items=old_items)
    root = builder.screen(document, 0)
    if root is True:
        return Screen(None, builder.bounded)
    defs: dict[str, Any] = {"finite": FINITE_DEF, **builder.limited_defs(), **builder.defs}
    return Screen({"$schema": _DRAFT_2020, "$defs": defs, "allOf": [root]}, builder.bounded)


def _plain_document(document: dict[str, Any]) -> bool:
    """No subschema below the root moves the base URI or dialect, so ``#/...`` pointers mean the root."""
    pending: list[Any] = [child for _, child in subschemas(document)]
    seen = 0
    while pending:
        node = pending.pop()
        seen += 1
        if seen > _MAX_NODES:
            return False
        if isinstance(node, dict):
            if any(isinstance(node.get(key), str) for key in _RESOURCE_KEYS):
                return False
            pending.extend(child for _, child in subschemas(node))
    return True


class _Builder:
    def __init__(self, document: dict[str, Any], *, follow_refs: bool, old_items: bool) -> None:
        self.document = document
        self.follow_refs = follow_refs
        self.old_items = old_items
        #: (id of a reference target, level) -> its name in ``defs`` (targets are where cycles can close).
        self.names: dict[tuple[int, int], str] = {}
        self.building: set[int] = set()
        self.defs: dict[str, Any] = {}
        self.nodes = 0
        #: Whether the nesting bound holds (see :class:`Screen`); cleared by recursion or too deep a schema.
        self.bounded = True
        #: The most levels any depth-limited FINITE below needs (``-1``: none used).
        self.deepest_limit = -1

    def anything(self, level: int) -> Any:
        """FINITE for an untyped slot inside ``level`` containers: at most ``MAX_DEPTH - level`` more."""
        if level > MAX_DEPTH:
            self.bounded = False
            return _FINITE_REF
        room = MAX_DEPTH - level
        self.deepest_limit = max(self.deepest_limit, room)
        return {"$ref": f"#/$defs/finite{room}"}

    def limited_defs(self) -> dict[str, Any]:
        """``finite0`` (scalars only) ... ``finiteN``: FINITE with at most N more levels of containers."""
        defs: dict[str, Any] = {}
        if self.deepest_limit >= 0:
            defs["finite0"] = {"type": _SCALAR_TYPES}
        for room in range(1, self.deepest_limit + 1):
            inner = {"$ref": f"#/$defs/finite{room - 1}"}
            defs[f"finite{room}"] = {"type": FINITE_DEF["type"], "items": inner, "additionalProperties": inner}
        return defs

    def screen(self, node: Any, level: int) -> Any:
        """``S(node)`` for a value inside ``level`` containers: ``True`` (nothing to check) or a screen."""
        self.nodes += 1
        if self.nodes > _MAX_NODES:  # a huge schema: the rest is screened whole
            return self.anything(level)
        if node is False:
            return True
        if not isinstance(node, dict):
            return self.anything(level)
        if "$ref" in node:
            return self._reference(node["$ref"], level)
        if any(key in node for key in ("$dynamicRef", "$recursiveRef")):
            return self.anything(level)
        if "enum" in node or "const" in node:
            enum = node.get("enum")
            listed: list[Any] = list(enum) if isinstance(enum, list) else []
            if "const" in node:
                listed.append(node["const"])
            if level + max((_nesting(value) for value in listed), default=0) > MAX_DEPTH:
                self.bounded = False
            return True
        declared = node.get("type")
        if isinstance(declared, str) or (isinstance(declared, list) and declared
                                         and all(isinstance(t, str) for t in declared)):
            types = {declared} if isinstance(declared, str) else set(declared)
            return self._typed(node, types, level)
        branches = [b for key in ("allOf", "anyOf", "oneOf") if isinstance(node.get(key), list)
                    for b in node[key]]
        if not branches:
            return self.anything(level)
        screens = [s for s in (self.screen(b, level) for b in branches) if s is not True]
        if not screens:
            return True
        return screens[0] if len(screens) == 1 else {"allOf": screens}

    def _reference(self, ref: Any, level: int) -> Any:
        target = self._resolve(ref) if self.follow_refs and isinstance(ref, str) else None
        if target is None:
            return self.anything(level)
        if target is True or target is False:
            return self.screen(target, level)
        key = (id(target), level)
        name = self.names.get(key)
        if name is None and id(target) in self.building:
            # A cycle: the screen of an enclosing use (shallower, so less strict on depth) stands in, and
            # nothing bounds the depth any more (the fast path counts brackets again).
            self.bounded = False
            name = next(n for (ident, _), n in reversed(self.names.items()) if ident == id(target))
        if name is None:
            name = self.names[key] = f"s{len(self.names)}"
            self.defs[name] = _FINITE_DEF_PLACEHOLDER  # a cycle back here refers to the name
            self.building.add(id(target))
            self.defs[name] = self.screen(target, level)
            self.building.discard(id(target))
        if self.defs[name] is True:
            return True
        return {"$ref": f"#/$defs/{name}"}

    def _resolve(self, ref: str) -> Any:
        """The node a ``#``/``#/pointer`` reference names in the document, or ``None``."""
        if ref == "#":
            return self.document
        if not ref.startswith("#/"):
            return None
        node: Any = self.document
        for token in ref[2:].split("/"):
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
        return node if isinstance(node, (dict, bool)) else None

    def _typed(self, node: dict[str, Any], types: set[str], level: int) -> Any:
        out: dict[str, Any] = {}
        if types & {"object", "array"}:
            if level + 1 > MAX_DEPTH:  # the schema itself is spelled deeper than the limit
                self.bounded = False
            level += 1  # the members and items of this value are one container deeper
        if "object" in types:
            props = node.get("properties")
            patterns = node.get("patternProperties")
            extra = (self.screen(node["additionalProperties"], level) if "additionalProperties" in node
                     else self.anything(level))
            checked = extra is not True
            if isinstance(props, dict) and props:
                screens = {name: self.screen(sub, level) for name, sub in props.items()}
                checked = checked or any(s is not True for s in screens.values())
                out["properties"] = screens
            if isinstance(patterns, dict) and patterns:
                screens = {pattern: self.screen(sub, level) for pattern, sub in patterns.items()}
                checked = checked or any(s is not True for s in screens.values())
                out["patternProperties"] = screens
            if extra is not True:
                out["additionalProperties"] = extra
            if not checked:
                out.pop("properties", None)
                out.pop("patternProperties", None)
        if "array" in types:
            items = node.get("items")
            if self.old_items or isinstance(items, list):  # drafts 04-2019: items (a list: a tuple), additionalItems
                if isinstance(items, list):
                    prefix = [self.screen(sub, level) for sub in items]
                    rest = (self.screen(node["additionalItems"], level) if "additionalItems" in node
                            else self.anything(level))
                else:
                    prefix, rest = [], self.screen(items, level) if "items" in node else self.anything(level)
            else:
                tuple_form = node.get("prefixItems")
                prefix = [self.screen(sub, level) for sub in tuple_form] if isinstance(tuple_form, list) else []
                rest = self.screen(items, level) if "items" in node else self.anything(level)
            if any(s is not True for s in prefix) or (prefix and rest is not True):
                out["prefixItems"] = prefix  # also when only the rest is screened: it starts after them
            if rest is not True:
                out["items"] = rest
        return out or True


#: Stands in for a reference target's screen while it is being built (a cycle refers to it by name).
_FINITE_DEF_PLACEHOLDER: Final = _FINITE_REF


def _nesting(value: Any) -> int:
    """How many containers deep a listed (``enum``/``const``) JSON value nests."""
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    return 0
