"""Finding values in text: the URLs, e-mail addresses and IBANs inside a free-text argument or a message, and the
normal forms under which two spellings of one value compare equal.

Provenance (:mod:`guardrail.tools.provenance`) asks whether a value the model put in a tool call appears in
content the application trusts. Two comparisons serve it:

- a whole value appears in a text when its :func:`normal_text` occurs in the text's :func:`normal_text` with no
  letter or digit glued to either end, nor glued through a joining character (``.``, ``-``, ``_``, ``/``, ``@``,
  ``+``, ``%``, and ``,`` between digits) followed by a letter or digit: ``"Bob"`` is not in ``"Bobby"``,
  ``bob@x.com`` not in ``alice.bob@x.com``, ``99`` not in ``12.99`` (a :class:`Needle`, at most
  :data:`MAX_NEEDLE_CHARS` long). The normal form is Unicode NFKC, case-folded, invisible characters (format
  characters such as zero-width and bidi marks, variation selectors: :func:`visible`) dropped, every run of white
  space one space;
- a found item (:func:`find_items`) compares by its kind's normal form: a URL without an ``http``/``https``
  scheme (so ``http://example.com`` and ``https://EXAMPLE.com/`` are one URL, ``www.example.com`` another host),
  read as a browser reads it (a backslash before the query is a slash), its host lower-case without a trailing
  dot or a default port, ideographic full stops as dots and ``xn--`` labels decoded (so the punycode and the
  Unicode spelling of a host are one host), an empty path as ``/``; an e-mail address lower-case, its domain as
  a URL's host; an IBAN upper-case without spaces. Items are found in the :func:`visible` text (NFKC, invisible
  characters dropped), so full-width letters and zero-width characters hide nothing.

What counts as an item (kinds ``url``, ``email``, ``iban``), found left to right without overlap:

- ``url``: ``scheme://...`` up to white space, a quote, an angle or square bracket (``[text](url)`` in markdown is
  two links), ``www.`` followed by a host, or a bare host whose last label is a common top-level domain
  (:data:`COMMON_TLDS`: ``evil.com``, ``pay-here.io/x``), with sentence punctuation after it left off (``.``,
  ``,``, ``;``, ``:``, ``!``, ``?``, quotes, a closing bracket that opens nowhere inside it). A ``scheme://``
  inside a URL (``?next=https://...``, also percent-encoded, or a link glued on by a comma) starts another item,
  up to :data:`MAX_NESTED` of them: a redirect through a good site leads where it points;
- ``email``: ``local@domain.tld`` (letters, digits and ``._%+-'`` before the ``@``, not starting with ``'``:
  ``o'brien@x.com`` is one address, ``'bob@x.com'`` quotes ``bob@x.com``; a quoted local part such as
  ``"john doe"@x.com`` is not found);
- ``iban``: two letters, two digits, then 11 to 30 letters or digits, in groups of four that one space may
  separate (``DE89 3704 0044 0532 0130 00``); for a country in :data:`IBAN_LENGTHS`, exactly that country's
  length (a capitalised word after the last group, ``... 0130 00 BANK``, is not taken in). Written in capitals, no
  checksum is asked (test data is rarely valid); written with any lower-case letter, only a valid checksum makes
  it an IBAN (``gb29 nwbk ...`` is one, an ordinary word after ``ab12`` is not).

The patterns run on RE2 (linear time on any text the model or a web page sends). A bare host with another
top-level domain (``report.pdf``, ``evil.zz``) is not taken for a URL in content; in an argument it is, when
the same URL was found in some content with its scheme or ``www.`` (``find_items(..., uncommon=True)`` marks
such hosts for that match). That keeps file names out; the rest is a limit documented in
docs/tools-and-policies.md.
"""

from __future__ import annotations

import contextlib
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

import re2  # type: ignore[import-untyped]

from guardrail.errors import ConfigError
from guardrail.tools.policy.regex import matchable

__all__ = ["COMMON_TLDS", "IBAN_LENGTHS", "KINDS", "MAX_NEEDLE_CHARS", "Item", "Needle", "find_items", "normal_item",
           "normal_text", "visible", "whole_item"]

#: The kinds of value :func:`find_items` finds.
KINDS = ("url", "email", "iban")

#: Top-level domains under which a bare host (no scheme, no ``www.``) is taken for a URL: the generic ones most
#: used (and abused), and the country codes of most registrations. Left out on purpose: those that are also
#: file-name extensions (``zip``, ``mov``, ``py``, ``md``, ``rs``, ``sh``, ``pl``, ``ps``, ``so``), so that
#: ``report.zip`` or ``setup.py`` in prose is no link; written with a scheme or ``www.``, any host is one.
COMMON_TLDS = frozenset((
    "com", "net", "org", "info", "biz", "io", "co", "app", "dev", "xyz", "online", "site", "top", "link", "click",
    "me", "ly", "to", "gl", "ai", "us", "uk", "de", "fr", "eu", "ru", "cn", "tk", "ml", "ga", "cf", "gq", "shop",
    "store", "live", "cloud", "page", "gov", "edu", "mil", "int", "mobi", "name", "pro", "tel", "asia", "cc", "tv",
    "ws", "pw", "su", "icu", "buzz", "work", "fit", "rest", "cam", "sbs", "cfd", "bond", "lol", "mom", "win", "bid",
    "loan", "men", "party", "review", "trade", "date", "faith", "science", "download", "racing",
    "country", "kim", "gdn", "quest", "monster", "support", "help", "email", "services", "digital", "network",
    "tech", "website", "space", "fun", "today", "world", "news", "blog", "club", "vip", "zone", "center", "company",
    "solutions", "agency", "media", "group", "global", "life", "bank", "finance", "money", "pay", "login", "secure",
    "ca", "au", "nz", "in", "jp", "kr", "tw", "hk", "sg", "my", "id", "ph", "th", "vn", "br", "ar", "mx", "cl", "pe",
    "za", "ng", "ke", "eg", "ae", "sa", "il", "tr", "ir", "pk", "bd", "nl", "be", "ch", "at", "se", "no", "dk", "fi",
    "ie", "es", "it", "pt", "cz", "sk", "hu", "ro", "bg", "gr", "ua", "by", "kz", "lt", "lv", "ee", "is", "lu", "li",
    "mc", "ms", "vc", "gg", "im", "sc", "la", "st", "fm", "nu", "tl", "cx", "ac"))

#: The length of an IBAN by country (the IBAN registry), so that a capitalised word after one is not read as part
#: of it; an IBAN of another country is taken as written (15 to 34 characters).
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "BY": 28,
    "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
    "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "LY": 25, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24,
    "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24,
    "XK": 20,
}

_LABEL = r"[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?"
_TAIL = r"""(?:[/?#][^\s<>"'`]*)?"""
_PATTERN = (
    r"(?i)(?P<email>[\p{L}\p{N}._%+-][\p{L}\p{N}._%+'-]*@(?:" + _LABEL + r"\.)+\p{L}{2,63})"
    r"|(?P<url>[a-z][a-z0-9+.-]{0,15}://(?:\[[0-9a-f:.]+\][^\s<>\"'`\[\]]*|[^\s<>\"'`\[\]]+)"  # scheme://...
    rf"|\bwww\.{_LABEL}(?:\.{_LABEL})+{_TAIL}"                          # www.host...
    rf"|(?P<host>\b(?:{_LABEL}\.)+{_LABEL}){_TAIL})"                    # host.tld... (a common TLD: below)
    r"|(?P<iban>\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b)"  # any case: see find_items
)


class Item(NamedTuple):
    """An item found in a text: its kind, its normal form, and where it stands (``visible(text)[start:end]``).
    ``uncommon`` marks a bare host under a top-level domain not in :data:`COMMON_TLDS` (found only on request)."""

    kind: str
    value: str
    start: int
    end: int
    uncommon: bool = False


def _options() -> object:
    options = re2.Options()
    options.log_errors = False
    return options


def _compile() -> object:
    return re2.compile(_PATTERN, _options())


_FINDER = _compile()
_NESTED = re2.compile(r"(?i)[a-z][a-z0-9+.-]{0,15}://", _options())
#: URLs nested in one URL that are found as items of their own (a redirect's target, a link glued on).
MAX_NESTED = 16
_TRAILING = ".,;:!?'\")]}>"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}


#: Invisible characters that are not format characters (category Cf) but show nothing either: the combining
#: grapheme joiner, Hangul and Khmer fillers, Mongolian and other variation selectors (IDNA maps them away).
_INVISIBLE = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u3164\uffa0"
                       + "".join(map(chr, range(0xFE00, 0xFE10))) + "".join(map(chr, range(0xE0100, 0xE01F0))))


def _shown(char: str) -> bool:
    return char not in _INVISIBLE and unicodedata.category(char) != "Cf"


def visible(text: str) -> str:
    """``text`` in Unicode NFKC without invisible characters (format characters such as zero-width spaces, soft
    hyphens and bidi marks, variation selectors, fillers): what a reader sees, and where items are found."""
    shown = unicodedata.normalize("NFKC", text)
    return shown if shown.isascii() else "".join(filter(_shown, shown))


def normal_text(text: str) -> str:
    """``text`` as whole values are compared: NFKC, case-folded, invisible characters dropped (:func:`visible`),
    white space runs as one space, stripped."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if not folded.isascii():
        folded = "".join(filter(_shown, folded))
    return " ".join(folded.split())


#: Longest whole value looked for in content (after :func:`normal_text`), in characters; a longer one is free
#: text, whose URLs, addresses and IBANs ``find`` judges instead.
MAX_NEEDLE_CHARS = 1000


#: Characters that join two runs of letters and digits into one token (``alice.bob``, ``notice-2024``, ``a/b``);
#: between digits, ``,`` too (``1,500``).
_JOINERS = "._/@+%-"


def _edge(char: str, *, before: bool) -> str:
    """The RE2 text that must stand next to a value whose edge character is ``char`` (empty: nothing is asked):
    the start or end, or a character that is neither a letter nor a digit and does not join the value to one."""
    if not char.isalnum():
        return ""
    joiners = _JOINERS + ("," if char.isdigit() else "")
    apart = r"[^\p{L}\p{N}" + re2.escape(joiners) + "]"
    joiner = "[" + re2.escape(joiners) + "]"
    if before:
        return rf"(?:^|{apart}|(?:^|[^\p{{L}}\p{{N}}]){joiner})"
    return rf"(?:$|{apart}|{joiner}(?:$|[^\p{{L}}\p{{N}}]))"


class Needle:
    """A whole value to look for in texts (both :func:`normal_text`): it occurs where no letter or digit is glued
    to either end of it, directly or through a joining character (module docstring). ``loose=True`` asks only
    that no letter or digit be glued directly (``bob@x.com`` occurs in ``alice.bob@x.com``): how untrusted
    content is read, so that a value planted inside a longer token still counts as shown there. An RE2 search,
    linear in the text whatever the value and the text hold."""

    __slots__ = ("_regexp", "text")

    def __init__(self, text: str, *, loose: bool = False) -> None:
        if not text or len(text) > MAX_NEEDLE_CHARS:
            raise ConfigError(f"a value to look for has 1 to {MAX_NEEDLE_CHARS} characters, got {len(text)}")
        self.text = text
        if loose:
            before = r"(?:^|[^\p{L}\p{N}])" if text[0].isalnum() else ""
            after = r"(?:$|[^\p{L}\p{N}])" if text[-1].isalnum() else ""
        else:
            before, after = _edge(text[0], before=True), _edge(text[-1], before=False)
        self._regexp = re2.compile(before + "(" + re2.escape(matchable(text)) + ")" + after, _options())

    def within(self, haystack: str) -> bool:
        """Whether the value occurs in ``haystack``."""
        return self.first(matchable(haystack)) is not None

    def first(self, haystack: str) -> int | None:
        """Where the value first occurs in ``haystack`` (already :func:`~guardrail.tools.policy.regex.matchable`),
        else ``None``."""
        found = self._regexp.search(haystack)
        return None if found is None else int(found.start(1))


def _trim_url(url: str) -> str:
    """A URL found in prose without the sentence punctuation after it (a closing bracket stays when it closes
    one opened inside the URL)."""
    while url and url[-1] in _TRAILING:
        closer = url[-1]
        if closer in _CLOSERS and url.count(_CLOSERS[closer]) >= url.count(closer):
            break
        url = url[:-1]
    return url


def _iban_as_long_as_its_country(value: str) -> str:
    """An IBAN found in prose cut to its country's length (``""`` when it is shorter: not an IBAN); one written with
    a lower-case letter only when its checksum holds (``""`` otherwise: a word, not an IBAN)."""
    value = _iban_cut(value)
    if value != value.upper() and not _iban_checksum_holds(value.replace(" ", "").upper()):
        return ""
    return value


def _iban_checksum_holds(iban: str) -> bool:
    """ISO 13616: the country and check digits moved to the end, letters as 10..35, the number mod 97 is 1."""
    try:
        digits = "".join(str(int(char, 36)) for char in iban[4:] + iban[:4])
    except ValueError:  # a character that is no ASCII letter or digit
        return False
    return int(digits) % 97 == 1


def _iban_cut(value: str) -> str:
    expected = IBAN_LENGTHS.get(value[:2].upper())
    if expected is None:
        return value if len(value.replace(" ", "")) >= 15 else ""
    count = 0
    for index, char in enumerate(value):
        if char != " ":
            count += 1
            if count == expected:
                return value[:index + 1]
    return ""


def normal_item(kind: str, value: str) -> str:
    """``value`` (an item of ``kind``) in the form two spellings of it share (module docstring)."""
    value = visible(value)
    if kind == "email":
        local, _, domain = value.rpartition("@")
        return f"{local.lower()}@{_normal_host(domain)}"
    if kind == "iban":
        return value.replace(" ", "").upper()
    return _normal_url(value)


#: Schemes whose URLs a browser parses as "special" (WHATWG): a backslash is a slash there, and any run of
#: slashes and backslashes after the scheme leads to the host.
_SPECIAL_SCHEMES = ("http", "https", "ws", "wss", "ftp")


def _normal_host(host: str) -> str:
    """A host as a browser reaches it (WHATWG, IDNA): percent-escapes decoded, lower case, ideographic full stops
    as dots, no trailing dot, each ``xn--`` label decoded to the Unicode it spells (so both spellings of one host
    compare equal), an IPv4 address in any of its spellings (``0x7f.1``, ``2130706433``) as dotted decimal."""
    labels = []
    for label in visible(unquote(host)).replace("\u3002", ".").lower().rstrip(".").split("."):
        if label.startswith("xn--"):
            with contextlib.suppress(UnicodeError, ValueError):  # not punycode after all: compare it as written
                label = label[4:].encode("ascii").decode("punycode").lower()
        labels.append(label)
    return _ipv4(labels) or ".".join(labels)


def _ipv4(labels: list[str]) -> str | None:
    """The dotted-decimal address a browser reads in ``labels`` (WHATWG IPv4 parser: up to four parts, decimal,
    ``0x`` hex or ``0`` octal, the last part filling the remaining bytes), else ``None``."""
    numbers = [_number(label) for label in labels]
    if not labels or len(labels) > 4 or numbers[-1] is None:
        return None
    parts = [number for number in numbers if number is not None]
    if len(parts) < len(labels) or any(part > 255 for part in parts[:-1]) or parts[-1] >= 256 ** (5 - len(parts)):
        return None
    address = parts[-1] + sum(part << (8 * (3 - index)) for index, part in enumerate(parts[:-1]))
    return ".".join(str((address >> shift) & 255) for shift in (24, 16, 8, 0))


def _number(label: str) -> int | None:
    """A part of an IPv4 address (decimal, ``0x`` hex, ``0`` octal), else ``None``."""
    if label[:2] in ("0x", "0X"):
        digits = label[2:]
        return int(digits or "0", 16) if all(char in "0123456789abcdefABCDEF" for char in digits) else None
    if not label.isascii() or not label.isdigit():
        return None
    if len(label) > 1 and label.startswith("0"):
        return int(label, 8) if all(char in "01234567" for char in label) else None
    return int(label)


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _normal_path(path: str) -> str:
    """A path, query or fragment with the percent-escapes of unreserved characters decoded and the rest in upper
    case (RFC 3986 6.2.2: ``/%61cme`` is ``/acme``)."""
    if "%" not in path:
        return path
    out, index = [], 0
    while index < len(path):
        escape = path[index + 1:index + 3]
        if path[index] == "%" and len(escape) == 2 and all(c in "0123456789abcdefABCDEF" for c in escape):
            char = chr(int(escape, 16))
            out.append(char if char in _UNRESERVED else "%" + escape.upper())
            index += 3
        else:
            out.append(path[index])
            index += 1
    return "".join(out)


def _normal_url(value: str) -> str:
    text = value.strip()
    scheme, separator, rest = text.partition("://")
    if not separator:
        scheme, rest = "http", text
    if scheme.lower() in _SPECIAL_SCHEMES:  # as a browser reads it: https://evil.com\@good.com/ visits evil.com
        end = min(index for index in (rest.find("?"), rest.find("#"), len(rest)) if index >= 0)
        rest = rest[:end].replace("\\", "/").lstrip("/") + rest[end:]
    text = f"{scheme}://{rest}"
    try:
        parts = urlsplit(text)
        host = _normal_host(parts.hostname or "")
        port = parts.port
    except ValueError:  # a bracket or a port that does not parse: compare the text as it is
        return text.casefold()
    scheme = parts.scheme.lower()
    default = {"http": 80, "https": 443}.get(scheme)
    host = f"[{host}]" if ":" in host else host  # an IPv6 address keeps its brackets
    netloc = host if port is None or port == default else f"{host}:{port}"
    prefix = "" if scheme in ("http", "https") else f"{scheme}://"
    tail = (parts.path or "/") + (f"?{parts.query}" if parts.query else "") + \
        (f"#{parts.fragment}" if parts.fragment else "")
    return f"{prefix}{netloc}{_normal_path(tail)}"


def find_items(text: str, kinds: Iterable[str] = KINDS, *, uncommon: bool = False) -> list[Item]:
    """Every item of ``kinds`` in the :func:`visible` form of ``text``, left to right (positions are in that
    form); with ``uncommon``, bare hosts under any top-level domain too (marked: the caller keeps those it can
    match with an item found elsewhere)."""
    wanted = frozenset(kinds)
    found: list[Item] = []
    for match in _FINDER.finditer(matchable(visible(text))):  # type: ignore[attr-defined]
        host = match.group("host")
        odd = host is not None and host.rsplit(".", 1)[-1].lower() not in COMMON_TLDS
        if odd and (not uncommon or not any(char.isalpha() for char in host.rsplit(".", 1)[-1])):
            continue  # report.pdf, e.g., 1.5: not taken for a host
        for kind in KINDS:
            value = match.group(kind)
            if value is None:
                continue
            start = match.start()
            if kind == "url":
                value = _trim_url(value)
            elif kind == "iban":
                value = _iban_as_long_as_its_country(value)
            if value and kind in wanted:
                found.append(Item(kind, normal_item(kind, value), start, start + len(value),
                                  odd and kind == "url"))
                if kind == "url" and "://" in value:
                    found.extend(_nested(value, start))
    return found


def _nested(url: str, start: int) -> list[Item]:
    """The URLs inside ``url`` after its own ``scheme://`` (``?next=https://...``, also percent-encoded, or a
    link glued on with a comma), each to the end of ``url``: a redirect through a good site, or a second link,
    leads there too. At most :data:`MAX_NESTED`."""
    rest = url[url.index("://") + 3:]
    found: list[Item] = []
    for text in dict.fromkeys((rest, unquote(rest))):  # as written, and percent-decoded once
        for match in _NESTED.finditer(matchable(text)):
            if len(found) == MAX_NESTED:
                return found
            inner = _trim_url(text[match.start():])
            if inner.partition("://")[2]:
                found.append(Item("url", normal_item("url", inner), start, start + len(url)))
    return found


def whole_item(value: str) -> Item | None:
    """The one URL, e-mail address or IBAN that ``value`` is (white space around it aside), else ``None``."""
    shown = visible(value)
    items = find_items(shown)
    if len(items) == 1 and items[0].start == len(shown) - len(shown.lstrip()) and items[0].end == len(shown.rstrip()):
        return items[0]
    return None
