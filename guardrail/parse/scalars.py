"""A whole reply that is one bare scalar, read against a scalar contract when exactly one reading exists.

Models asked for an enum, a bool, a number or a string often answer with the bare thing: ``Billing``,
``TRUE``, ``Null``, ``.5``, ``hello``, `` `hello` ``. None of these is JSON, but when the contract's root is
a scalar and exactly one of its alternatives reads the whole reply, the meaning is not in doubt:

- an enum or ``Literal`` member, matched ignoring case, accents and surrounding space (or through the
  caller's alias table), when exactly one member matches (fix ``bare_enum``);
- ``true``/``false`` in any case where a boolean is allowed, ``null``/``None`` in any case where null
  is (fix ``bare_literal``);
- a number, also ``.5`` and ``1.``, where a number is allowed (fix ``bare_number``);
- a single unquoted token (no spaces) where a plain string is allowed (fix ``bare_string``), or any
  one-line text in backticks, triple backticks, triple quotes or single quotes (fix ``backtick_quotes``,
  ``triple_quotes``, ``single_quotes``) where a string is allowed, ``Any`` included (an unquoted word
  under ``Any`` has two readings at least, ``True`` or ``"True"``, and is refused).

Two readings that differ (``True`` under ``bool | str``) make the reply ambiguous; no reading leaves it
``no_json``. Only a reply of one line without brackets is considered, and only when no JSON value was
found anywhere in it; the whole reply is the value or nothing is.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any, Final

from guardrail.parse.report import Candidate, Fix
from guardrail.parse.tokens import same_json, unescape
from guardrail.schema.view import Schema, SchemaView

_MAX_LEN: Final = 200
_NUMBER: Final = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+\-]?[0-9]+)?")
#: (opening mark, closing mark, fix kind) of the quotes a whole one-line reply may stand in.
_QUOTES: Final = (("```", "```", "triple_quotes"), ('"""', '"""', "triple_quotes"), ("'''", "'''", "triple_quotes"),
                  ("`", "`", "backtick_quotes"), ("'", "'", "single_quotes"), ("\u201c", "\u201d", "smart_quotes"),
                  ("\u2018", "\u2019", "smart_quotes"))


def fold(text: str) -> str:
    """Case-, accent- and space-insensitive form of a label: ``" Café "`` -> ``"cafe"``."""
    decomposed = unicodedata.normalize("NFKD", text.strip())
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def read_bare(inner: str, start: int, schema: Schema, view: SchemaView, aliases: Mapping[str, str]) -> Candidate | None:
    """A candidate for the whole reply ``inner`` (already stripped of fences and tags), or ``None``."""
    if not inner or len(inner) > _MAX_LEN or "\n" in inner or "{" in inner or "[" in inner:
        return None
    text, quote_fix = inner, ""
    for opener, closer, kind in _QUOTES:
        if len(inner) > len(opener) + len(closer) and inner.startswith(opener) and inner.endswith(closer):
            if kind == "smart_quotes" and "\\" in inner:
                break  # an escape, or a character (as in the lexer): no reading
            text, quote_fix = inner[len(opener) : -len(closer)], kind
            if opener == "'":
                text = unescape(text)  # as inside JSON: \' is a quote, \n a newline
            break
    readings: list[tuple[Any, str]] = []
    for node in view.branches(schema):
        reading = _read(text, bool(quote_fix), node, view, aliases)
        if reading is not None and not any(same_json(reading[0], r[0]) and type(reading[0]) is type(r[0])
                                           for r in readings):
            readings.append(reading)
    if not readings:
        return None
    end = start + len(inner)
    if len(readings) > 1:
        shown = " or ".join(repr(r[0]) for r in readings[:3])
        return Candidate(start, end, "text", "ambiguous", message=f"the reply {inner!r} reads as {shown}; reply "
                         "with exactly one JSON value", path="$", tokens=1)
    value, kind = readings[0]
    fixes = [Fix(quote_fix, "$", inner, text)] if quote_fix else []
    if kind != "bare_string" or not quote_fix:
        fixes.append(Fix(kind, "$", text, value))
    return Candidate(start, end, "text", "invalid", data=value, fixes=fixes, tokens=1)


def _read(text: str, quoted: bool, node: Schema, view: SchemaView,
          aliases: Mapping[str, str]) -> tuple[Any, str] | None:
    """The one reading of ``text`` this branch of the contract gives, if any."""
    members = node.get("enum") if "enum" in node else [node["const"]] if "const" in node else None
    if isinstance(members, list):
        target = aliases.get(text.strip(), text)
        matches = [m for m in members if isinstance(m, str) and fold(m) == fold(target)]
        return (matches[0], "bare_enum") if len(matches) == 1 else None
    types = view.types(node)
    word = text.strip()
    if not quoted:
        lowered = word.lower()
        if "boolean" in types and lowered in ("true", "false"):
            return lowered == "true", "bare_literal"
        if "null" in types and lowered in ("null", "none"):
            return None, "bare_literal"
        if types & {"integer", "number"} and _NUMBER.fullmatch(word):
            if not any(c in word for c in ".eE"):
                return int(word), "bare_number"
            if "number" in types:
                return float(word), "bare_number"
    if not types and quoted:  # any value allowed: a quoted line is a string by the only reading it has
        return text, "bare_string"
    if "string" in types and (quoted or (word and not any(c.isspace() for c in word)
                                         and word[0] not in _QUOTE_MARKS and '"' not in word)):
        return text if quoted else word, "bare_string"
    return None


#: Marks that open (or close) a quoted string: a token that starts with one, or holds a double quote, opened a
#: string it never closed (``"unterminated``, ``"abc\"``) or closed one early (``"a"b``): no bare word.
_QUOTE_MARKS: Final = frozenset("\"'`\u201c\u201d\u2018\u2019")
