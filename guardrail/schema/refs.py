"""``$ref`` resolution and recursion detection over one schema document.

Lowering must know, for every reference, what it points at and whether following it can lead back to
itself: a recursive target cannot be inlined (the copy would never end), and some dialects cannot
express recursion at all. Supported: JSON Pointer fragments (``#``, ``#/$defs/X``, ``#/any/path``, with
``~0``/``~1`` and percent escapes) and plain-name anchors (``#name`` from ``$anchor`` or a ``$id`` of
``#name``). Anything else (remote or relative URIs) is unresolvable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from guardrail.schema.tree import DEF_CONTAINERS, unescape, walk

Target = tuple[Mapping[str, Any], str]


class RefIndex:
    """Resolves references in ``root`` and answers whether a target is recursive (on a ``$ref`` cycle)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self._cache: dict[str, Target | None] = {}
        self._anchors: dict[str, str] | None = None
        self._recursive: frozenset[str] | None = None

    def resolve(self, ref: Any) -> Target | None:
        """The schema a ``$ref`` value points at and its pointer, or ``None`` when it cannot be resolved."""
        if not isinstance(ref, str):
            return None
        if ref not in self._cache:
            self._cache[ref] = self._resolve(ref)
        return self._cache[ref]

    def _resolve(self, ref: str) -> Target | None:
        if not ref.startswith("#"):
            return None
        fragment = unquote(ref[1:])
        if fragment and not fragment.startswith("/"):
            path = self._anchor_map().get(fragment)
            return None if path is None else self._follow(path)
        return self._follow(fragment)

    def _follow(self, pointer: str) -> Target | None:
        node: Any = self.root
        if pointer:
            for token in (unescape(t) for t in pointer[1:].split("/")):
                if isinstance(node, Mapping):
                    if token not in node:
                        return None
                    node = node[token]
                elif isinstance(node, (list, tuple)) and token.isdigit() and int(token) < len(node):
                    node = node[int(token)]
                else:
                    return None
        return (node, pointer) if isinstance(node, Mapping) else None

    def _anchor_map(self) -> dict[str, str]:
        if self._anchors is None:
            self._anchors = {}
            for node, path in walk(self.root, ""):
                for key, prefix in (("$anchor", ""), ("$id", "#"), ("id", "#")):
                    name = node.get(key)
                    if isinstance(name, str) and name.startswith(prefix) and len(name) > len(prefix):
                        self._anchors.setdefault(name[len(prefix):], path)
        return self._anchors

    def recursive(self, pointer: str) -> bool:
        """Whether the schema at ``pointer`` can reach itself again through references it evaluates."""
        if self._recursive is None:
            self._recursive = self._find_cycles()
        return pointer in self._recursive

    def _find_cycles(self) -> frozenset[str]:
        """Targets on a cycle of the reference graph (Tarjan's SCC, iterative).

        An edge T -> U means a ``$ref`` to U sits in T's subtree at an evaluated position (definition
        containers excluded: they are reached only through their own references). Conservative: a cycle
        through a keyword a dialect removes (``not``...) still counts.
        """
        edges: dict[str, list[str]] = {}
        pending: list[Target] = [(self.root, "#root")]  # the document itself, to find the first references
        while pending:
            node, name = pending.pop()
            found: list[str] = []
            for sub, _ in walk(node, "", defs=name == "#root"):
                target = self.resolve(sub.get("$ref"))
                if target is not None:
                    found.append(target[1])
                    if target[1] not in edges:
                        edges[target[1]] = []
                        pending.append(target)
            if name != "#root":
                edges[name] = found
        return cyclic(edges)


def cyclic(edges: Mapping[str, list[str]]) -> frozenset[str]:
    """Nodes of ``edges`` on a cycle: members of a strongly connected component of size > 1, or self-loops."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    scc_stack: list[str] = []
    out: set[str] = set()
    counter = 0
    for start in edges:
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                scc_stack.append(node)
                on_stack.add(node)
            succ = edges.get(node, [])
            if i < len(succ):
                work.append((node, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = scc_stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, []):
                    out.update(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return frozenset(out)


def root_def_name(pointer: str) -> str | None:
    """The definition name when ``pointer`` is a direct entry of a root ``$defs``/``definitions``."""
    for container in DEF_CONTAINERS:
        prefix = "/" + container + "/"
        if pointer.startswith(prefix) and "/" not in pointer[len(prefix):]:
            return unescape(pointer[len(prefix):])
    return None
