"""Where a value came from: the content of one agent run, each piece marked trusted or not, as the trusted runtime
says; policies ask whether a value in a tool call appears in it.

A value an attacker planted in a web page, a review or an e-mail reaches a tool call through the model: the tool
and the recipient are fine, the URL in the message body or the IBAN is not. The application knows what the user
wrote and what came from elsewhere, so it says so, around the agent's work::

    with guardrail.identity(tenant="acme", user="u-1"), run_context(system=PROMPT, user=message) as run:
        ...                                  # the agent loop
        run.user(next_message)               # trusted: what the user writes later
        run.untrusted(page, source="web")    # untrusted: content fed to the model outside guardrail's tools
        execute_tool_call(name, arguments)   # a tool's result is recorded here itself, as "tool:<name>"

Trusted content is what the application vouches for: the user's messages (source ``"user"``) and the system
prompt (``"system"``), and any source it adds as trusted. Results of tools run through
:func:`~guardrail.tools.execute.run_tool_call` are recorded automatically as source ``"tool:<name>"``,
untrusted unless the tool was registered with ``trusted_results=True`` (a tool reading the user's own address
book). The model's own words are never content: a value only the model wrote appears nowhere.

The policy keys that read it (``source``, ``not_source``, ``untrusted_only``, ``find``) are in
:mod:`guardrail.tools.policy.model`; how a value is found in a text (normal forms, word boundaries, URLs,
e-mail addresses, IBANs) in :mod:`guardrail.tools.policy.finders`. The run lives in a
``contextvars.ContextVar`` like the identity: nothing the model writes can add to it or mark anything trusted,
and it follows ``contextvars.copy_context`` threads and asyncio tasks. The text is held in memory only, never in a
store or an audit record (the audit keeps a hash of the value and where it was seen: source and piece number).

Limits (see docs/tools-and-policies.md): a value appears only if it is written out in one piece of content
(a paraphrase, "my landlord's IBAN", or a value split across two messages is not found); whole values compare
after case folding and white-space folding, found items by their kind's normal form, nothing more.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from guardrail.errors import ConfigError, GuardrailError, UsageError
from guardrail.tools.policy.finders import Needle, find_items, normal_text, whole_item
from guardrail.tools.policy.regex import matchable

__all__ = ["GROUPS", "MAX_RUN_CHARS", "MAX_SCAN_CHARS", "Piece", "RunContext", "ScanBudget", "content_text",
           "current_run", "record_result", "run_context"]

#: Source names that stand for every trusted, or every untrusted, source (not usable as a source's own name).
GROUPS = ("trusted", "untrusted")
#: Content a run holds at most (characters, all pieces together); beyond it nothing more is kept and every
#: provenance condition of the run counts as unjudgeable (a policy then refuses, as with no run at all).
MAX_RUN_CHARS = 20_000_000
#: Content one call may search for whole values, in characters: each value not judged by its items costs the
#: run's size (200 values on a 1 MB run, 10 on a full one). Past it a value cannot be judged (fail closed).
MAX_SCAN_CHARS = 200_000_000
_MAX_SOURCE_CHARS = 200

_current: ContextVar[RunContext | None] = ContextVar("guardrail_run", default=None)


@dataclass(frozen=True, slots=True)
class Piece:
    """One piece of content: its number in the run (from 0), its source and trust, its normal text and the
    normal forms of the items found in it (``(kind, value)``)."""

    index: int
    source: str
    trusted: bool
    text: str
    items: frozenset[tuple[str, str]]


def _check_source(source: str) -> None:
    if not isinstance(source, str):
        raise UsageError(f"a source is named by a str, not {type(source).__name__}")
    if not source or len(source) > _MAX_SOURCE_CHARS or source in GROUPS:
        raise ConfigError(f"a source name has 1 to {_MAX_SOURCE_CHARS} characters and is not one of {GROUPS}: "
                          f"{source[:40]!r}")


class ScanBudget:
    """How much content one call may still search for whole values (:data:`MAX_SCAN_CHARS` characters), so that
    a call with thousands of values on a long run ends in time: each search spends the run's size."""

    __slots__ = ("left",)

    def __init__(self, chars: int = MAX_SCAN_CHARS) -> None:
        self.left = chars

    def spend(self, chars: int) -> bool:
        """Take ``chars`` from what is left; ``False`` (nothing taken) when not that much is left."""
        if chars > self.left:
            return False
        self.left -= chars
        return True


class _Source:
    """The pieces of one source, their normal texts joined by ``\\n`` (which no normal text holds, so a value is
    never found across two pieces), searched once per value whatever the number of pieces."""

    __slots__ = ("joined", "parts", "pieces", "size", "starts", "trusted")

    def __init__(self, trusted: bool) -> None:
        self.trusted = trusted
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.pieces: list[Piece] = []
        self.size = 0
        self.joined: str | None = ""

    def add(self, piece: Piece) -> None:
        self.starts.append(self.size)
        self.parts.append(matchable(piece.text))
        self.pieces.append(piece)
        self.size += len(piece.text) + 1
        self.joined = None

    def text(self) -> str:
        if self.joined is None:
            self.joined = "\n".join(self.parts)
        return self.joined

    def first(self, needle: Needle) -> Piece | None:
        at = needle.first(self.text())
        return None if at is None else self.pieces[bisect.bisect_right(self.starts, at) - 1]


class RunContext:
    """The content of one agent run (module docstring); thread-safe. Make one with :func:`run_context`.

    Each found item is indexed (the first piece of each source that holds it), so a call's items are judged
    whatever the run's length; a whole value is searched for once per source (:data:`MAX_SCAN_CHARS`)."""

    def __init__(self, *, max_chars: int = MAX_RUN_CHARS) -> None:
        self._pieces: list[Piece] = []
        self._trust: dict[str, bool] = {}
        self._sources: dict[str, _Source] = {}
        self._items: dict[tuple[str, str], dict[str, Piece]] = {}
        self._chars = 0
        self._max_chars = max_chars
        self._complete = True
        self._lock = threading.Lock()

    def add(self, text: str, *, source: str, trusted: bool) -> int:
        """Record ``text`` from ``source``; its piece number (``-1``: over the run's limit, not kept). A source
        keeps the trust it was first given."""
        if not isinstance(text, str):
            raise UsageError(f"content is a str, not {type(text).__name__}")
        _check_source(source)
        with self._lock:
            known = self._trust.setdefault(source, trusted)
            if known is not trusted:
                raise ConfigError(f"source {source!r} was recorded as {'trusted' if known else 'untrusted'} "
                                  "earlier in this run")
            if self._chars + len(text) > self._max_chars:
                self._complete = False  # what was not kept could hold anything: provenance is not judged any more
                return -1
            self._chars += len(text)  # reserved now: the text is read outside the lock
        normal, items = normal_text(text), frozenset((item.kind, item.value) for item in find_items(text))
        with self._lock:
            piece = Piece(len(self._pieces), source, trusted, normal, items)
            self._pieces.append(piece)
            self._sources.setdefault(source, _Source(trusted)).add(piece)
            for item in items:
                self._items.setdefault(item, {}).setdefault(source, piece)
            return piece.index

    def user(self, text: str) -> int:
        """Record a message the user wrote (trusted, source ``"user"``)."""
        return self.add(text, source="user", trusted=True)

    def system(self, text: str) -> int:
        """Record the system prompt, or any instruction the application wrote (trusted, source ``"system"``)."""
        return self.add(text, source="system", trusted=True)

    def untrusted(self, text: str, *, source: str = "untrusted content") -> int:
        """Record content from elsewhere that the model read (untrusted): a web page, a document, an e-mail."""
        return self.add(text, source=source, trusted=False)

    def mark_incomplete(self) -> None:
        """Note that some content the model read could not be recorded: from now on provenance is not judged in
        this run (what was missed could hold anything)."""
        with self._lock:
            self._complete = False

    @property
    def complete(self) -> bool:
        """False once some content was not kept (over ``max_chars``): provenance is then never judged."""
        return self._complete

    def pieces(self) -> list[Piece]:
        """The pieces recorded so far, in order."""
        with self._lock:
            return list(self._pieces)

    def trusted(self, source: str) -> bool | None:
        """Whether ``source`` is trusted in this run (``None``: nothing came from it yet)."""
        with self._lock:
            return self._trust.get(source)

    def sightings(self, value: str, kinds: Iterable[str] = (), budget: ScanBudget | None = None
                  ) -> list[tuple[str, str, list[Piece]]] | None:
        """What of ``value`` is judged, and where each part was seen: ``(kind, normal form, pieces)``, the pieces
        being the first of each source that holds it, in order.

        With ``kinds`` (``url``, ``email``, ``iban``), each item of those kinds found inside ``value``, seen
        where a piece holds the same item (a bare host under an uncommon top-level domain counts only where some
        piece holds it as a URL). Else the whole value (kind ``"value"``, at most
        :data:`~guardrail.tools.policy.finders.MAX_NEEDLE_CHARS` long), seen in a trusted piece only where it
        stands as itself: the same item, when the value is one URL, e-mail address or IBAN, else its normal text
        not glued to a longer token (:class:`~guardrail.tools.policy.finders.Needle`); in an untrusted piece also
        where it is glued to one (``bob@x.com`` in ``alice.bob@x.com``), so that trusted content vouches for no
        more than it says and untrusted content shows all it may have planted. Searching the pieces spends
        ``budget`` (``None`` when not enough is left: it cannot be judged). An empty value, or a text without the
        items asked for, has nothing to judge: ``[]``."""
        wanted = tuple(kinds)
        if wanted:
            found: dict[tuple[str, str], list[Piece]] = {}  # each item once, in order
            for item in find_items(value, wanted, uncommon=True):
                seen = self._holding((item.kind, item.value))
                if seen or not item.uncommon:  # evil.zz counts where content wrote https://evil.zz
                    found.setdefault((item.kind, item.value), seen)
            return [(kind, normal, seen) for (kind, normal), seen in found.items()]
        text = normal_text(value)
        if not text:
            return []
        one = whole_item(value)
        held = [] if one is None else self._holding((one.kind, one.value))
        needles = {False: Needle(text, loose=True), True: None if one else Needle(text)}  # by the source's trust
        first = {piece.source: piece for piece in reversed(held)}
        with self._lock:
            sources = [(name, source) for name, source in self._sources.items() if needles[source.trusted]]
            if budget is not None and not budget.spend(sum(source.size for _, source in sources)):
                return None
            for name, source in sources:
                piece = source.first(needles[source.trusted])  # type: ignore[arg-type]
                if piece is not None and (name not in first or piece.index < first[name].index):
                    first[name] = piece
        return [("value", text, sorted(first.values(), key=lambda piece: piece.index))]

    def _holding(self, item: tuple[str, str]) -> list[Piece]:
        """The first piece of each source that holds ``item``, in order."""
        with self._lock:
            return sorted(self._items.get(item, {}).values(), key=lambda piece: piece.index)


@contextmanager
def run_context(*, system: str | None = None, user: str | Iterable[str] = (),
                run: RunContext | None = None) -> Iterator[RunContext]:
    """Make ``run`` (or a fresh :class:`RunContext`) the current run for the code inside the ``with`` block,
    after recording ``system`` and the ``user`` message(s) in it; the previous run is restored afterwards."""
    current = run if run is not None else RunContext()
    if system is not None:
        current.system(system)
    for message in ([user] if isinstance(user, str) else user):
        current.user(message)
    token = _current.set(current)
    try:
        yield current
    finally:
        _current.reset(token)


def current_run() -> RunContext | None:
    """The run set by the innermost ``with run_context(...)``, or ``None``."""
    return _current.get()


def record_result(tool: str, result: Any, *, trusted: bool) -> None:
    """Record a tool's result in the current run (if any) as content the model read: source ``tool:<name>``,
    untrusted unless the tool says its results are trusted. A result that cannot be recorded (the application
    recorded that source with the other trust) makes the run incomplete: provenance is not judged any more."""
    run = current_run()
    if run is not None:
        try:
            run.add(content_text(to_jsonable_python(result, fallback=str)), source=f"tool:{tool}", trusted=trusted)
        except GuardrailError:  # the source was recorded with the other trust: the tool ran, so do not raise
            run.mark_incomplete()


def content_text(value: Any) -> str:
    """A tool's result as the text recorded for provenance: a string as it is; the keys, strings and numbers of a
    JSON-like result one per line (not JSON text, whose escapes would glue ``\\n`` to the next word)."""
    if isinstance(value, str):
        return value
    lines: list[str] = []
    pending: list[Any] = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            lines.append(current)
        elif isinstance(current, Mapping):
            for key, item in reversed(list(current.items())):
                pending.extend((item, str(key)))
        elif isinstance(current, (list, tuple)):
            pending.extend(reversed(current))
        elif current is not None and not isinstance(current, bool):
            lines.append(str(current))
    return "\n".join(lines)
