"""The cases of an experiment: one JSON object per line of a ``CASES.jsonl`` file.

Each line: ``{"messages": [...]}`` (chat messages, as ``create(messages=...)`` takes them) or ``{"input": ...}``
(the arguments of a decorated function, ``guardrail eval --function``: a JSON object is its keyword arguments, any
other value its one positional argument), optional ``"id"`` (the
line number otherwise; ids must be unique, since ``--resume`` keys on them), optional ``"slice"`` (a tag the report
breaks every figure down by) and optional ``"expected"`` (the value the answer should be, as JSON, for exact-match
and per-field accuracy).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from guardrail.errors import CommandError

__all__ = ["Case", "json_objects", "load_cases", "parse_cases", "read_jsonl"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Case:
    """One case: its id, the chat messages (or the function's ``input``), the slice it belongs to (``None``: none)
    and the expected value."""

    id: str
    messages: Sequence[Mapping[str, Any]]
    slice: str | None = None
    expected: Any = None
    has_expected: bool = False
    input: Any = None
    has_input: bool = False


def load_cases(path: str | os.PathLike[str]) -> list[Case]:
    """The cases of a ``CASES.jsonl`` file; :class:`~guardrail.errors.CommandError` naming the line of the first
    problem (a case that cannot be read must not be skipped silently: the counts would mislead)."""
    return read_jsonl(path, parse_cases)


def read_jsonl(path: str | os.PathLike[str], parse: Callable[[Iterable[str], str], T]) -> T:
    """``parse(lines, name)`` over the lines of a UTF-8 file; :class:`~guardrail.errors.CommandError` when it does
    not exist, is a directory or is not UTF-8."""
    location = Path(path)
    if not location.is_file():
        raise CommandError(f"{path}: {'is a directory' if location.is_dir() else 'does not exist'}")
    try:
        with location.open(encoding="utf-8") as lines:
            return parse(lines, str(path))
    except UnicodeDecodeError as error:
        raise CommandError(f"{path}: not UTF-8 text ({error.reason})") from None


def json_objects(lines: Iterable[str], name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; :class:`~guardrail.errors.CommandError` naming the line
    of one that is not a JSON object."""
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except ValueError as error:
            raise CommandError(f"{name}:{number}: not JSON ({error})") from None
        if not isinstance(data, dict):
            raise CommandError(f"{name}:{number}: a case is a JSON object, not {type(data).__name__}")
        yield number, data


def parse_cases(lines: Iterable[str], name: str = "cases") -> list[Case]:
    """The cases of these JSONL lines (blank lines skipped); see :func:`load_cases`."""
    cases: list[Case] = []
    seen: set[str] = set()
    for number, data in json_objects(lines, name):
        if ("messages" in data) == ("input" in data):
            raise CommandError(f"{name}:{number}: a case has \"messages\" (chat messages) or \"input\" (a decorated "
                               "function's arguments), one of them")
        messages = data.get("messages", [])
        if "messages" in data and (not isinstance(messages, list) or not messages
                                   or not all(isinstance(m, dict) for m in messages)):
            raise CommandError(f"{name}:{number}: \"messages\" must be a non-empty list of message objects")
        case_id = str(data.get("id", number))
        if case_id in seen:
            raise CommandError(f"{name}:{number}: the id {case_id!r} is used twice")
        seen.add(case_id)
        tag = data.get("slice")
        if tag is not None and not isinstance(tag, str):
            raise CommandError(f"{name}:{number}: \"slice\" must be a string")
        cases.append(Case(case_id, messages, tag, data.get("expected"), "expected" in data, data.get("input"),
                          "input" in data))
    if not cases:
        raise CommandError(f"{name}: holds no case")
    return cases
