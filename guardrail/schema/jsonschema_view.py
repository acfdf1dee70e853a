"""A :class:`SchemaView` over a hand-written JSON Schema, so the lenient parse stages walk it as they walk
pydantic's.

Pydantic's schemas are regular: object nodes, ``$ref`` only to ``#/$defs/Name``, ``prefixItems`` for tuples.
Schemas written by people (MCP ``inputSchema``, OpenAPI components, draft-04 files) are not: boolean
subschemas (``"items": true``), the draft-04..07 array form of ``items``, ``$ref`` by JSON Pointer into any
part of the document, by ``$id`` or ``id`` with a relative URI, or by ``$anchor``. This module builds, once
per contract, a copy the view can walk (booleans as objects, ``items`` arrays as ``prefixItems``) and a
table from every ``$ref`` node to its target in that copy. An unresolvable reference resolves to "anything",
which only makes the stages less helpful: the real validator still decides every value.

It also answers the two questions the fast paths ask of a contract: may a float occur anywhere (then text is
screened for ``NaN``/``1e400`` before an exact check), and which JSON shapes may the root take.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import unquote, urldefrag, urljoin

from guardrail.schema.view import ANY, Schema, SchemaView

#: Keywords whose value is one subschema, a list of subschemas, or a map of name -> subschema.
_ONE: Final = ("additionalProperties", "additionalItems", "contains", "not", "if", "then", "else",
               "propertyNames", "unevaluatedProperties", "unevaluatedItems", "items")
_MANY: Final = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP: Final = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
#: What a ``false`` subschema becomes in the walked copy (it admits nothing; the validator says so).
_NOTHING: Final[Schema] = {"not": {}}
_MAX_NODES: Final = 200_000


def subschemas(node: Schema) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Each (relative path, subschema) directly under ``node``; subschemas may be booleans."""
    for key in _ONE:
        value = node.get(key)
        if isinstance(value, (dict, bool)):
            yield (key,), value
    for key in _MANY:
        value = node.get(key)
        if isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, (dict, bool)):
                    yield (key, index), item
    for key in _MAP:
        value = node.get(key)
        if isinstance(value, dict):
            for name, item in value.items():
                if isinstance(item, (dict, bool)):  # draft-04 "dependencies" may also hold name lists
                    yield (key, name), item


class JsonSchemaView(SchemaView):
    """A view over a walkable copy of a hand-written schema, with ``$ref`` resolved by a prebuilt table."""

    def __init__(self, document: Schema) -> None:
        #: id of a node of ``document`` -> its walkable copy (the document is kept alive by the contract).
        self._copies: dict[int, Schema] = {}
        self.document = document
        root = self._walkable(document, 0)
        super().__init__(root)
        self._targets: dict[int, Schema] = {}
        self._link(document, "", set())

    def _walkable(self, node: Any, depth: int) -> Schema:
        """The copy the stages walk: booleans as objects, ``items`` arrays as ``prefixItems`` (draft <= 2019)."""
        if node is True:
            return {}
        if not isinstance(node, dict):
            return dict(_NOTHING)
        if depth > 200 or len(self._copies) > _MAX_NODES:
            return {}
        copy: Schema = dict(node)
        self._copies[id(node)] = copy
        for key in _ONE:
            if isinstance(node.get(key), (dict, bool)):
                copy[key] = self._walkable(node[key], depth + 1)
        for key in _MANY:
            if isinstance(node.get(key), list):
                copy[key] = [self._walkable(item, depth + 1) for item in node[key]]
        for key in _MAP:
            if isinstance(node.get(key), dict):
                copy[key] = {name: self._walkable(item, depth + 1) if isinstance(item, (dict, bool)) else item
                             for name, item in node[key].items()}
        if isinstance(copy.get("items"), list):  # the draft-04..2019 tuple form
            copy.setdefault("prefixItems", copy["items"])
            extra = copy.get("additionalItems")
            copy["items"] = extra if isinstance(extra, dict) else {}
        return copy

    def _link(self, document: Schema, base: str, seen: set[int]) -> None:
        """Fill the ``$ref`` table: every reference node's copy -> its target's copy (or "anything")."""
        resources: dict[str, Any] = {}
        pending: list[tuple[Any, str]] = [(document, base)]
        refs: list[tuple[Schema, str]] = []
        while pending:
            node, uri = pending.pop()
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            own = node.get("$id", node.get("id"))
            if isinstance(own, str) and not own.startswith("#"):
                uri = urljoin(uri, own)
                resources[urldefrag(uri)[0]] = node
            anchor = node.get("$anchor")
            if isinstance(anchor, str):
                resources[f"{urldefrag(uri)[0]}#{anchor}"] = node
            if isinstance(own, str) and own.startswith("#") and len(own) > 1:  # draft-04..07 plain-name id
                resources[f"{urldefrag(uri)[0]}{own}"] = node
            if isinstance(node.get("$ref"), str):
                refs.append((node, urljoin(uri, node["$ref"])))
            pending.extend((child, uri) for _, child in subschemas(node))
        resources.setdefault(urldefrag(base)[0], document)
        for node, target_uri in refs:
            target = self._lookup(resources, target_uri)
            copy = self._copies.get(id(node))
            if copy is not None:
                self._targets[id(copy)] = self._copy_of(target)

    @staticmethod
    def _lookup(resources: dict[str, Any], uri: str) -> Any:
        if uri in resources:
            return resources[uri]
        where, fragment = urldefrag(uri)
        node = resources.get(where)
        if node is None or (fragment and not fragment.startswith("/")):
            return None
        for token in fragment.split("/")[1:]:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict):
                node = node.get(token)
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
        return node

    def _copy_of(self, target: Any) -> Schema:
        if target is True or target is None:
            return ANY  # unresolvable: "anything" (the validator still decides)
        if target is False:
            return _NOTHING
        return self._copies.get(id(target), ANY) if isinstance(target, dict) else ANY

    def resolve(self, schema: Schema) -> Schema:
        """Follow ``$ref`` (by the prebuilt table) and single-member ``allOf`` wrappers.

        A node of the original document (the stages start from ``Contract.schema``, the schema as given)
        is first replaced by its walkable copy.
        """
        return super().resolve(self._copies.get(id(schema), schema))

    def _ref_target(self, schema: Schema) -> Schema | None:
        """A reference's target by the prebuilt table (every ``$ref`` copy is in it, unresolvable ones as
        "anything"); ``None`` for any other node."""
        return self._targets.get(id(schema))


def holds_floats(document: Schema, *, typed: bool = True) -> bool:
    """Whether a non-integer number may appear anywhere in a valid value (conservative: unknown means yes).

    A node admits numbers unless its ``type`` excludes ``number`` or it lists its values (``enum``/``const``:
    ``NaN`` and infinity equal no listed value). Combinators and references are followed through the
    document, so a node that is only ``{"$ref": ...}`` or ``{"anyOf": [...]}`` defers to what it names. An
    object without ``additionalProperties`` (or an array without ``items`` for the rest) has members nothing
    describes: untyped slots. With ``typed=False`` only untyped slots count: where ``type`` says ``number``
    the validator itself refuses an infinite float (it is not a JSON number).
    """
    pending: list[Any] = [document]
    seen = 0
    while pending:
        node = pending.pop()
        seen += 1
        if seen > _MAX_NODES or node is True:
            return True
        if not isinstance(node, dict):
            continue
        if node.get("enum") is not None or "const" in node:
            continue  # only the listed values: never NaN or infinity
        declared = node.get("type")
        types = {declared} if isinstance(declared, str) else set(declared) if isinstance(declared, list) else set()
        if not types and not any(key in node for key in ("$ref", "anyOf", "oneOf", "allOf")):
            return True
        if typed and "number" in types:
            return True
        if "object" in types and "additionalProperties" not in node and "unevaluatedProperties" not in node:
            return True
        if "array" in types and "unevaluatedItems" not in node and (
                "items" not in node or (isinstance(node["items"], list) and "additionalItems" not in node)):
            return True
        pending.extend(child for _, child in subschemas(node))
    return False


def root_shapes(view: SchemaView) -> str:
    """``"{"``, ``"["`` or ``"{["`` when the root's ``type`` admits only objects and/or arrays, else ``""``."""
    root = view.resolve(view.root)
    declared = root.get("type")
    types = {declared} if isinstance(declared, str) else set(declared) if isinstance(declared, list) else set()
    if not types or not types <= {"object", "array"}:
        return ""
    return "".join(shape for kind, shape in (("object", "{"), ("array", "[")) if kind in types)
