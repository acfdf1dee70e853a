"""The compile report: what lowering a schema to a vendor dialect did with each constraint.

Every constraint keyword of the original schema gets one entry saying who is responsible for it: the
vendor (``enforced``), the vendor in a rewritten form (``lowered``), guardrail after parsing
(``post_validated``: guardrail validates the parsed value with pydantic against the original type, so a
removed constraint is still checked), or nobody (``rejected``: the dialect cannot express it and the caller
must fall back to a weaker mode). The report exists so that nothing is dropped silently.

Who enforces a keyword and what the model is told of it are separate: a keyword the vendor does not enforce
is restated in words in the field's ``description`` (see :mod:`guardrail.schema.describe`), and its entry's
``described`` holds those words; an entry that is ``post_validated`` with ``described`` empty was not told.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final, Literal, get_args

#: ``grammar`` is the generic constrained decoder (guardrail's local llguidance backend); ``vllm``, ``sglang`` and
#: ``llamacpp`` (llama.cpp's server and Ollama, which share its converter) are what each self-hosted server compiles.
Dialect = Literal["openai_strict", "anthropic_strict", "gemini", "grammar", "advisory", "vllm", "sglang", "llamacpp"]
Action = Literal["enforced", "lowered", "post_validated", "rejected"]

DIALECTS: Final[frozenset[str]] = frozenset(get_args(Dialect))
ACTIONS: Final[tuple[str, ...]] = get_args(Action)


@dataclass(frozen=True)
class CompileEntry:
    """One constraint keyword at one place in the original schema, and what lowering did with it.

    ``path`` is a JSON Pointer into the ORIGINAL schema (``""`` for the root); ``keyword`` is the JSON
    Schema keyword, or ``"root"`` (the root was wrapped) or ``"limits"`` (a size limit of the dialect).
    ``described``: the words the keyword was restated in, in the sent schema's ``description`` of that node,
    where the dialect does not enforce it (empty when it is enforced, or not said).
    """

    path: str
    keyword: str
    action: Action
    detail: str
    described: str = ""


@dataclass(frozen=True)
class CompileReport:
    """All entries of one lowering; ``ok`` is false when any entry is ``rejected``."""

    dialect: Dialect
    entries: tuple[CompileEntry, ...]
    ok: bool

    def by_action(self, action: Action) -> tuple[CompileEntry, ...]:
        """The entries with this action, in report order."""
        return tuple(e for e in self.entries if e.action == action)

    @property
    def rejected(self) -> tuple[CompileEntry, ...]:
        return self.by_action("rejected")

    @property
    def enforced(self) -> tuple[CompileEntry, ...]:
        return self.by_action("enforced")

    @property
    def post_validated(self) -> tuple[CompileEntry, ...]:
        return self.by_action("post_validated")

    @property
    def lowered(self) -> tuple[CompileEntry, ...]:
        return self.by_action("lowered")

    @property
    def described(self) -> tuple[CompileEntry, ...]:
        """The entries restated in words in the sent schema (a description), in report order."""
        return tuple(e for e in self.entries if e.described)

    def summary(self) -> str:
        """A compact table: a header with the counts, then one line per entry."""
        counts = ", ".join(f"{len(self.by_action(a))} {a}" for a in ACTIONS)  # type: ignore[arg-type]
        lines = [f"{self.dialect}: {'ok' if self.ok else 'REJECTED'} ({counts})"]
        width = max((len(e.path or "/") for e in self.entries), default=1)
        for e in self.entries:
            tail = f"  {e.detail}" if e.detail else ""
            tail += f"  [described: {e.described}]" if e.described else ""
            lines.append(f"  {e.action:<14} {(e.path or '/'):<{width}}  {e.keyword}{tail}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable form (for audit records and logs)."""
        return {
            "dialect": self.dialect,
            "ok": self.ok,
            "entries": [{"path": e.path, "keyword": e.keyword, "action": e.action, "detail": e.detail,
                         **({"described": e.described} if e.described else {})} for e in self.entries],
        }


class ReportBuilder:
    """Collects entries while a schema is lowered: one per (path, keyword), the most cautious action winning.

    Lowering may visit one original node several times (a definition inlined at two places, kept as a
    reference elsewhere). Each (path, keyword) is reported once; when two visits disagree the entry with
    the later action in ``enforced < lowered < post_validated < rejected`` stays, and different details
    for the same action are joined. ``limits`` entries (several per root) are kept one per distinct detail.
    """

    def __init__(self, dialect: Dialect) -> None:
        self.dialect: Dialect = dialect
        self._entries: dict[tuple[str, str, str], CompileEntry] = {}
        self._described: dict[tuple[str, str], str] = {}

    def add(self, path: str, keyword: str, action: Action, detail: str = "") -> None:
        key = (path, keyword, detail if keyword == "limits" else "")
        known = self._entries.get(key)
        if known is None or ACTIONS.index(action) > ACTIONS.index(known.action):
            self._entries[key] = CompileEntry(path, keyword, action, detail)
        elif known.action == action and detail and detail not in known.detail:
            joined = f"{known.detail}; {detail}" if known.detail else detail
            self._entries[key] = CompileEntry(path, keyword, action, joined)

    def describe(self, path: str, keyword: str, words: str) -> None:
        """Record that ``keyword`` at ``path`` was restated as ``words`` in the sent description."""
        self._described[(path, keyword)] = words

    def build(self) -> CompileReport:
        """The report, entries sorted by path then keyword (stable, so equal inputs give equal reports).

        A keyword is ``described`` only where the vendor does not enforce it, or not all of it: ``post_validated``,
        or ``lowered`` (a tuple sent as one ``anyOf`` of its items, whose order is then said in words)."""
        entries = tuple(sorted(
            (replace(e, described=self._described.get((e.path, e.keyword), ""))
             if e.action in ("post_validated", "lowered") else e for e in self._entries.values()),
            key=lambda e: (e.path, e.keyword)))
        return CompileReport(self.dialect, entries, not any(e.action == "rejected" for e in entries))
