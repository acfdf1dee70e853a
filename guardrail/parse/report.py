"""Records the parse layer hands back: fixes, violations, candidates and the report that holds them.

They are plain frozen/slotted dataclasses so they can be logged, compared in tests and serialised for an
audit trail without dragging parser internals along.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from guardrail.errors import ParseError

T = TypeVar("T")

CandidateStatus = Literal["valid", "invalid", "truncated", "syntax_error", "ambiguous"]


class Fix:
    """One change the parser made to the model's text or value, with where it was made.

    ``kind`` names the repair (``"strip_fence"``, ``"trailing_comma"``, ``"alias"``, ``"coerce_integer"``
    ...), ``path`` is a JSON path such as ``$.items[2].price``, ``before``/``after`` show the change.
    The path may be given as location parts or as a function that finds it; either is turned into the
    path string on first access, because a dirty answer can carry hundreds of fixes that nobody reads.
    """

    __slots__ = ("_loc", "_path", "after", "before", "kind")

    def __init__(self, kind: str, path: str | tuple[str | int, ...] | Callable[[], str], before: Any = None,
                 after: Any = None) -> None:
        self.kind = kind
        self.before = before
        self.after = after
        self._path: str | None = None
        self._loc: tuple[str | int, ...] | Callable[[], str] = ()
        if path.__class__ is str:
            self._path = path
        else:
            self._loc = path  # type: ignore[assignment]

    @property
    def path(self) -> str:
        if self._path is None:
            loc = self._loc
            self._path = loc() if callable(loc) else json_path(loc)
        return self._path

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fix):
            return NotImplemented
        return (self.kind, self.path, self.before, self.after) == (other.kind, other.path, other.before, other.after)

    def __hash__(self) -> int:
        return hash((self.kind, self.path))

    def __repr__(self) -> str:
        return f"Fix(kind={self.kind!r}, path={self.path!r}, before={self.before!r}, after={self.after!r})"


@dataclass(frozen=True, slots=True)
class Violation:
    """One reason a value does not satisfy the contract, phrased for the model."""

    path: str
    message: str


@dataclass(slots=True)
class Candidate:
    """One JSON value (or an attempt at one) found in the text.

    ``start``/``end`` are character offsets into the original text (``text[start:end]`` is what was
    read); ``source`` says where it was found (``"text"``, ``"fence"``, ``"tag"``). ``data`` is the JSON
    value read (after syntax repair, then updated by name normalization and coercion), ``value`` the
    validated contract value when ``status == "valid"``. ``message``/``path`` say what went wrong for the
    other statuses (``path`` is the duplicated key's path for an ``ambiguous`` one). ``tokens`` counts
    keys and scalars read, which tells a cut-off answer apart from a stray brace in prose.
    ``json_text``, when set, is strict JSON for ``data``: the candidate's own text, or that text after a
    few C-speed patches.
    """

    start: int
    end: int
    source: str
    status: CandidateStatus
    data: Any = None
    value: Any = None
    fixes: list[Fix] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    message: str = ""
    path: str = "$"
    tokens: int = 0
    tag: str = ""
    json_text: str = ""
    #: For a ``syntax_error``: the character offset in the text where the value broke.
    position: int = -1
    #: Unquoted words ``data`` holds as member values (``parse.tokens.BareWord``, positions in the text):
    #: coercion makes each a string where the contract takes only one, or the value broke there.
    bare_words: list[Any] = field(default_factory=list)


@dataclass(slots=True)
class ParseReport(Generic[T]):
    """Everything one parse did: the value or the error, the fixes applied and the candidates weighed.

    ``parse_report`` never raises for bad model output; it returns this. ``unwrap()`` gives the value or
    raises the error, which is what ``guardrail.parse`` does.
    """

    text: str
    value: T | None = None
    error: ParseError | None = None
    fixes: list[Fix] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    fast_path: bool = False

    @property
    def ok(self) -> bool:
        """True when a value was produced."""
        return self.error is None

    def unwrap(self) -> T:
        """Return the value, or raise the typed :class:`ParseError` that explains why there is none."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


def json_path(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """Format a location as a JSON path: ``("items", 2, "price")`` -> ``$.items[2].price``."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part.isidentifier():
            out.append(f".{part}")
        else:
            out.append("[" + _quote(part) + "]")
    return "".join(out)


def _quote(key: str) -> str:
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
