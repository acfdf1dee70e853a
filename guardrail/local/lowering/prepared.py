"""The engine's copy of a schema while it is being lowered: the copy, its report, and the edits still pending.

Shared by every step of the lowering (:mod:`.keywords`, :mod:`.objects`, :mod:`.numbers`): each decides about
its keywords and records the decision here; :func:`apply_edits` changes the copy once the walk is over, so no
step sees a node another step already changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from guardrail.schema.report import Action, ReportBuilder
from guardrail.schema.tree import unescape

__all__ = ["DELETE", "Prepared", "Visit", "apply_edits", "node_at"]

#: The value of a pending edit that removes the keyword.
DELETE: Final = object()


@dataclass
class Prepared:
    """The copy to compile, its report so far, and the pointers of the objects guardrail closed."""

    schema: dict[str, Any]
    report: ReportBuilder
    closed: list[str] = field(default_factory=list)
    #: ``(path, keyword)`` removed from the copy (remedies after a failed compile add to it).
    removed: set[tuple[str, str]] = field(default_factory=set)
    #: Pending changes to the copy while :func:`.prepare.prepare` walks: (path, keyword, new value or DELETE).
    edits: list[tuple[str, str, Any]] = field(default_factory=list)
    #: Whether numbers were given the finite engine range (see :func:`.numbers.number_bounds`).
    narrowed: bool = True

    def drop(self, path: str, keyword: str, detail: str, action: Action = "post_validated") -> None:
        """Schedule the removal of ``keyword`` at ``path`` (applied at the end of :func:`.prepare.prepare`)."""
        self.edits.append((path, keyword, DELETE))
        self.removed.add((path, keyword))
        self.report.add(path, keyword, action, detail)

    def strip(self, path: str, keyword: str, detail: str, action: Action = "post_validated") -> bool:
        """Remove ``keyword`` from the copy's node at ``path`` and report it; false if it was not there."""
        node = node_at(self.schema, path)
        if not isinstance(node, dict) or keyword not in node:
            return False
        del node[keyword]
        self.removed.add((path, keyword))
        self.report.add(path, keyword, action, detail)
        return True


def node_at(doc: Any, pointer: str) -> Any:
    """The value at a JSON Pointer in ``doc``, or None."""
    node = doc
    if pointer:
        for token in (unescape(t) for t in pointer[1:].split("/")):
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
    return node


@dataclass
class Visit:
    """One subschema the walk reached, and the subschemas the engine merges with it."""

    node: Mapping[str, Any]
    intersected: list[str] = field(default_factory=list)  # allOf members: always intersected with the node
    branches: list[str] = field(default_factory=list)  # anyOf/oneOf members and the $ref target


def apply_edits(doc: dict[str, Any], edits: list[tuple[str, str, Any]]) -> None:
    """Apply edits to the copy: every target node is looked up before any of them changes."""
    targets = [(node_at(doc, path), kw, value) for path, kw, value in edits]
    for node, kw, value in targets:
        if not isinstance(node, dict):
            continue
        if value is DELETE:
            node.pop(kw, None)
        else:
            node[kw] = value

