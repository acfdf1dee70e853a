"""URL arguments: may the tool fetch this model-proposed URL?

:func:`check_url` returns ``None`` when the URL's scheme, host and port are allowed by the policy, else a
short reason for the audit log. It parses the URL itself, strictly, instead of trusting
:mod:`urllib.parse` (which strips whitespace, accepts backslashes and splits the authority differently
from the WHATWG parsers that HTTP clients and browsers use): anything that two parsers could read
differently is denied rather than interpreted.

Rules, in order (the first failing one is the reason):

- only ``str`` of at most :data:`MAX_URL_CHARS` (8 KiB) characters; no whitespace, control, format
  (bidi, zero-width) or unassigned characters and no backslash anywhere in the URL;
- ``scheme://authority[/path][?query][#fragment]`` with the scheme in ``schemes`` (compared lower-case);
  ``https:host`` and ``//host`` (no ``//`` or no scheme) are denied;
- the authority (up to the first ``/``, ``?`` or ``#``) has no userinfo (any ``@``), no ``%`` escapes and
  only letters, digits, ``-``, ``.``, the port's ``:`` and an IPv6 literal's brackets;
- a port must be plain decimal (no sign, no leading zero, 1-65535); a port other than the scheme's
  default (:data:`DEFAULT_PORTS`) is allowed only by a ``host:port`` entry;
- host names are compared as ASCII: ASCII letters are lower-cased; non-ASCII names must be valid
  IDNA 2008 U-labels and are converted to punycode *without* UTS 46 mapping, so look-alikes that some
  client would map (fullwidth letters, ``U+3002`` as a dot, soft hyphens, upper-case non-ASCII) are denied
  and homoglyphs (Cyrillic ``а``) become a different ``xn--`` name that does not match;
- one trailing dot is removed before matching (``allowed.com.`` is the fully qualified spelling of
  ``allowed.com`` and names the same DNS host); an empty label (``a..com``, ``a.com..``) is denied;
- a host whose last label is numeric (``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1``) is an IPv4
  literal to WHATWG parsers and ``inet_aton``; only the canonical dotted quad is recognised as an
  address, every other numeric form is denied. IP literals (IPv4 or bracketed IPv6, IPv4-mapped IPv6 too)
  are denied unless ``allow_ip_literals`` is set *and* that exact address is listed in ``hosts``; no
  range or wildcard ever matches an address, so loopback, private, link-local, metadata and unspecified
  addresses are never reachable by accident;
- ``localhost``, ``*.localhost`` and the cloud metadata names in :data:`EXACT_ONLY_NAMES` are allowed only
  by an exact entry (a wildcard never reaches them); single-label names can only match exactly too, since
  a wildcard entry needs at least two labels after ``*.``.

``hosts`` entries: ``example.com`` (that host), ``*.example.com`` (any subdomain at any depth, not
``example.com`` itself), ``example.com:8443`` (that host on that port), ``10.0.0.5``, ``[::1]:8080``.
Entries are lower-cased and IDNA-encoded (with UTS 46 mapping: they are trusted configuration); an entry
that cannot be normalised, a bare ``*`` or a wildcard over a single label (``*.com``) raises
:class:`ValueError`, as do a ``str`` passed where a collection is expected and a non-bool flag.

Nested URLs: a URL carried in the path, query or fragment of the URL (the open-redirect pattern
``https://allowed.example/redirect?to=http://169.254.169.254/``) is denied unless ``allow_nested_urls``: the
path, query and fragment are percent-decoded (up to three rounds, for the search only) and searched for
``scheme:/``, ``scheme:\\`` and, in the query and fragment, a special scheme followed by ``:`` (``http:evil``,
``javascript:``) or a value that starts with ``//`` (protocol-relative).

Canonical form: :func:`canonical_url` returns the URL the tool must receive: the scheme and host lower-case,
the host as checked (ASCII/punycode, no trailing dot, an IPv6 literal compressed), the scheme's default port
dropped, the rest unchanged. Nothing is decoded in it.

Limits: the host is judged by name only: DNS is not resolved here, so a permitted name that resolves to a
private address (or is rebound to one after the check: DNS rebinding) is not caught by this function;
:mod:`guardrail.tools.policy.http` offers an HTTP transport that checks every redirect hop and every address it
connects to.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from urllib.parse import unquote

import idna

from guardrail.errors import ConfigError, Rejected
from guardrail.tools.policy.options import string_set

__all__ = ["DEFAULT_PORTS", "EXACT_ONLY_NAMES", "MAX_URL_CHARS", "address_reason", "canonical_url", "check_url"]

#: Longest URL accepted; longer values are denied without parsing.
MAX_URL_CHARS = 8192
#: The port a scheme uses when the URL names none; a URL naming this port is treated as naming none.
DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
#: Names reachable only through an exact ``hosts`` entry (plus every ``*.localhost`` name).
EXACT_ONLY_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
_METADATA_ADDRESSES = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),
        ipaddress.ip_address("fd00:ec2::254"),
        ipaddress.ip_address("100.100.100.200"),
    }
)

# Fixed, non-backtracking patterns only: linear on any input.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")
_DECIMAL_OCTET = re.compile(r"0|[1-9][0-9]{0,2}")
_PORT = re.compile(r"[1-9][0-9]{0,4}")
_AUTHORITY_END = re.compile(r"[/?#]")
_ASCII_AUTHORITY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:[]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

_IP = ipaddress.IPv4Address | ipaddress.IPv6Address
_NESTED_ANYWHERE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[/\\]")
_NESTED_SPECIAL = re.compile(
    r"(?i)(?:^|[^A-Za-z0-9+.\-])(?:https?|ftp|wss?|file|gopher|dict|ldap|data|javascript|vbscript|jar|smb|sftp|tftp)"
    r"\s*:"
)
_PROTOCOL_RELATIVE = re.compile(r"(?:^|[=&;?#,])\s*[/\\]{2}")


class _Denied(Exception):
    """Internal: carries a deny reason out of the URL parser."""


@dataclass(frozen=True)
class _Hosts:
    """The normalised ``hosts`` collection: what may be reached, and on which ports (``None``: default)."""

    names: dict[str, frozenset[int | None]] = field(default_factory=dict)
    wildcards: dict[str, frozenset[int | None]] = field(default_factory=dict)
    addresses: dict[_IP, frozenset[int | None]] = field(default_factory=dict)


def _ascii_name(host: str) -> str:
    """``host`` (ASCII letters already lower-case) as a validated ASCII DNS name without trailing dot."""
    if host.endswith("."):
        host = host[:-1]
    if len(host) > 253:  # checked before IDNA too: an A-label is never shorter than its U-label
        raise _Denied("host name longer than 253 characters")
    labels = host.split(".")
    if any(not label for label in labels):
        raise _Denied("empty label in host")
    if not host.isascii():
        try:
            host = idna.encode(host, strict=True, uts46=False).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            raise _Denied("host is not a valid internationalised name") from None
        labels = host.split(".")
    for label in labels:
        if _LABEL.fullmatch(label) is None:
            raise _Denied("invalid label in host")
        if label.startswith("xn--"):
            try:
                valid = idna.encode(idna.decode(label, strict=True), strict=True).decode("ascii") == label
            except (idna.IDNAError, UnicodeError, ValueError):
                valid = False
            if not valid:
                raise _Denied("invalid punycode label in host")
    if len(host) > 253:
        raise _Denied("host name longer than 253 characters")
    return host


def _ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The address if ``host`` is a canonical dotted quad; ``_Denied`` for any other numeric host."""
    if host.endswith("."):
        host = host[:-1]
    last = host.rsplit(".", 1)[-1]
    if _NUMERIC_LABEL.fullmatch(last) is None:
        return None
    parts = host.split(".")
    if len(parts) == 4 and all(_DECIMAL_OCTET.fullmatch(part) and int(part) <= 255 for part in parts):
        return ipaddress.IPv4Address(host)
    raise _Denied("non-canonical IPv4 literal (decimal, octal, hex or short form)")


def _ipv6(text: str) -> ipaddress.IPv6Address:
    if not text or any(char not in "0123456789abcdefABCDEF:." for char in text):
        raise _Denied("invalid IPv6 literal")
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        raise _Denied("invalid IPv6 literal") from None


def _split_authority(authority: str) -> tuple[str, bool, str | None]:
    """``(host, bracketed, port text or None)``."""
    if authority.startswith("["):
        close = authority.find("]")
        if close < 0:
            raise _Denied("unterminated IPv6 literal")
        rest = authority[close + 1 :]
        if rest and not rest.startswith(":"):
            raise _Denied("text after IPv6 literal")
        host, port = authority[1:close], (rest[1:] if rest else None)
        if "[" in host or (port is not None and ("[" in port or "]" in port)):
            raise _Denied("misplaced bracket in authority")
        return host, True, port
    if "[" in authority or "]" in authority:
        raise _Denied("misplaced bracket in authority")
    host, sep, port = authority.partition(":")
    if ":" in port:
        raise _Denied("more than one ':' in authority (bare IPv6 or junk)")
    return host, False, (port if sep else None)


def _parse_port(port: str | None) -> int | None:
    if port is None:
        return None
    if _PORT.fullmatch(port) is None or int(port) > 65535:
        raise _Denied("invalid port")
    return int(port)


def _host(host: str, bracketed: bool) -> str | _IP:
    """The normalised host: an ASCII name or an address."""
    if bracketed:
        return _ipv6(host)
    if not host:
        raise _Denied("missing host")
    host = host.translate(_ASCII_LOWER)
    address = _ipv4(host)
    if address is not None:
        return address
    return _ascii_name(host)


def _entry_error(entry: str, why: str) -> ValueError:
    return ValueError(f"URL policy host entry {entry!r}: {why}")


@functools.lru_cache(maxsize=256)
def _compile_hosts(entries: frozenset[str]) -> _Hosts:
    names: dict[str, set[int | None]] = {}
    wildcards: dict[str, set[int | None]] = {}
    addresses: dict[_IP, set[int | None]] = {}
    for entry in entries:
        try:
            host, bracketed, port_text = _split_authority(entry.lower())
            port = _parse_port(port_text)
            wildcard = host.startswith("*.")
            if wildcard:
                host = host[2:]
            if "*" in host:
                raise _Denied("'*' is allowed only as a whole first label ('*.example.com')")
            if not host.isascii():
                host = idna.encode(host, uts46=True).decode("ascii")
            normalised = _host(host, bracketed)
        except _Denied as denied:
            raise _entry_error(entry, str(denied)) from None
        except (idna.IDNAError, UnicodeError) as error:
            raise _entry_error(entry, f"not a valid host name ({error})") from None
        if isinstance(normalised, str):
            if wildcard and "." not in normalised:
                raise _entry_error(entry, "a wildcard over a single label is too broad")
            (wildcards if wildcard else names).setdefault(normalised, set()).add(port)
        else:
            if wildcard:
                raise _entry_error(entry, "an IP address cannot be a wildcard")
            addresses.setdefault(normalised, set()).add(port)

    def frozen(table: dict[str, set[int | None]]) -> dict[str, frozenset[int | None]]:
        return {key: frozenset(value) for key, value in table.items()}

    return _Hosts(frozen(names), frozen(wildcards), {key: frozenset(value) for key, value in addresses.items()})


@functools.lru_cache(maxsize=256)
def _compile_schemes(schemes: frozenset[str]) -> frozenset[str]:
    for scheme in schemes:
        if _SCHEME.fullmatch(scheme) is None:
            raise ConfigError(f"URL policy scheme {scheme!r} is not a valid URL scheme")
    return frozenset(scheme.lower() for scheme in schemes)


def _port_allowed(allowed: frozenset[int | None], port: int | None, scheme: str) -> bool:
    default = DEFAULT_PORTS.get(scheme)
    if port is None or port == default:
        return None in allowed or (default is not None and default in allowed)
    return port in allowed


def _address_kind(address: _IP) -> str:
    inner = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    for candidate in (inner, address):  # an IPv4-mapped address is what it maps
        if candidate is None:
            continue
        if candidate in _METADATA_ADDRESSES:
            return "metadata address"
        for attribute in ("unspecified", "loopback", "link_local", "private", "multicast", "reserved"):
            if getattr(candidate, f"is_{attribute}"):
                return f"{attribute.replace('_', '-')} address"
    return "address"


def _exact_only(name: str) -> bool:
    return name in EXACT_ONLY_NAMES or name.endswith(".localhost") or "." not in name


def _nested_reason(rest: str) -> str | None:
    """Why the path/query/fragment ``rest`` carries another URL, else ``None`` (searched decoded)."""
    decoded = rest
    for _ in range(3):
        if "%" not in decoded:
            break
        decoded = unquote(decoded, errors="replace")
    if unquote(decoded, errors="replace") != decoded:
        return "percent-escapes nested more than three levels deep"
    if _NESTED_ANYWHERE.search(decoded) is not None:
        return "a URL inside the URL (open-redirect pattern)"
    marks = [index for index in (decoded.find("?"), decoded.find("#")) if index >= 0]
    tail = decoded[min(marks):] if marks else ""
    if tail and (_NESTED_SPECIAL.search(tail) is not None or _PROTOCOL_RELATIVE.search(tail) is not None):
        return "a URL inside the URL's query or fragment (open-redirect pattern)"
    return None


def _canonical(scheme: str, host: str | _IP, port: int | None, rest: str) -> str:
    host_text = f"[{host.compressed}]" if isinstance(host, ipaddress.IPv6Address) else str(host)
    shown = "" if port is None or port == DEFAULT_PORTS.get(scheme) else f":{port}"
    return f"{scheme}://{host_text}{shown}{rest}"


def _check(value: str, hosts: _Hosts, schemes: frozenset[str], allow_ip_literals: bool,
           allow_nested_urls: bool = True) -> str:
    if not (value.isprintable() and " " not in value):
        raise _Denied("whitespace, control or format character in URL")
    if "\\" in value:
        raise _Denied("backslash in URL")
    scheme, colon, rest = value.partition(":")
    if not colon or _SCHEME.fullmatch(scheme) is None:
        raise _Denied("missing or invalid scheme")
    scheme = scheme.lower()
    if scheme not in schemes:
        raise _Denied(f"scheme {scheme!r} not allowed")
    if not rest.startswith("//"):
        raise _Denied("no '//' authority after the scheme")
    rest = rest[2:]
    end = _AUTHORITY_END.search(rest)
    authority = rest if end is None else rest[: end.start()]
    if not authority:
        raise _Denied("missing host")
    if "@" in authority:
        raise _Denied("userinfo ('@') in authority")
    if "%" in authority:
        raise _Denied("percent-encoding in authority")
    for char in authority:
        if char not in _ASCII_AUTHORITY_CHARS and (char.isascii() or not char.isalnum()):
            raise _Denied(f"character U+{ord(char):04X} not allowed in authority")
    host_text, bracketed, port_text = _split_authority(authority)
    port = _parse_port(port_text)
    host = _host(host_text, bracketed)
    tail = rest[len(authority):]
    _host_allowed(host, port, scheme, hosts, allow_ip_literals)
    if not allow_nested_urls:
        reason = _nested_reason(tail)
        if reason is not None:
            raise _Denied(reason)
    return _canonical(scheme, host, port, tail)


def _host_allowed(host: str | _IP, port: int | None, scheme: str, hosts: _Hosts, allow_ip_literals: bool) -> None:
    if isinstance(host, str):
        on_port = "its default port" if port is None else f"port {port}"
        ports = hosts.names.get(host)
        if ports is not None and _port_allowed(ports, port, scheme):
            return
        if _exact_only(host):
            if ports is not None:
                raise _Denied(f"host {host} not allowed on {on_port}")
            raise _Denied(f"host {host} is reachable only through an exact entry")
        listed = ports is not None
        labels = host.split(".")
        for start in range(1, len(labels) - 1):
            ports = hosts.wildcards.get(".".join(labels[start:]))
            if ports is not None:
                if _port_allowed(ports, port, scheme):
                    return
                listed = True
        raise _Denied(f"host {host} not allowed on {on_port}" if listed else f"host {host} not allowed")
    kind = _address_kind(host)
    if not allow_ip_literals:
        raise _Denied(f"IP literal ({kind}) not allowed")
    ports = hosts.addresses.get(host)
    if ports is None:
        raise _Denied(f"IP literal ({kind}) not in hosts")
    if not _port_allowed(ports, port, scheme):
        raise _Denied(f"IP literal {host} not allowed" + ("" if port is None else f" on port {port}"))


def _compiled(
    hosts: Collection[str], schemes: Collection[str], flags: tuple[object, ...]
) -> tuple[_Hosts, frozenset[str]]:
    compiled_hosts = _compile_hosts(string_set(hosts, "URL policy hosts"))
    compiled_schemes = _compile_schemes(string_set(schemes, "URL policy schemes"))
    if not all(isinstance(flag, bool) for flag in flags):
        raise ConfigError("URL policy allow_ip_literals and allow_nested_urls must be bool")
    return compiled_hosts, compiled_schemes


def canonical_url(
    value: object,
    *,
    hosts: Collection[str],
    schemes: Collection[str] = ("https",),
    allow_ip_literals: bool = False,
    allow_nested_urls: bool = False,
) -> str:
    """The canonical form of the model-proposed ``value`` (module docs), the URL a tool must be given.

    Raises :class:`~guardrail.errors.Rejected` with the reason when the policy does not allow it, and
    :class:`ValueError` only for a bad policy (``hosts``, ``schemes`` or a flag).
    """
    compiled_hosts, compiled_schemes = _compiled(hosts, schemes, (allow_ip_literals, allow_nested_urls))
    if not isinstance(value, str):
        raise Rejected(f"URL must be a str, not {type(value).__name__}")
    if len(value) > MAX_URL_CHARS:
        raise Rejected(f"URL longer than {MAX_URL_CHARS} characters")
    try:
        return _check(value, compiled_hosts, compiled_schemes, allow_ip_literals, allow_nested_urls)
    except _Denied as denied:
        raise Rejected(str(denied)) from None


def check_url(
    value: object,
    *,
    hosts: Collection[str],
    schemes: Collection[str] = ("https",),
    allow_ip_literals: bool = False,
    allow_nested_urls: bool = True,
) -> str | None:
    """``None`` when the model-proposed ``value`` is a URL the policy allows, else the reason (module docs).

    Raises :class:`ValueError` only for a bad policy (``hosts``, ``schemes`` or a flag); the value itself
    never raises. (Nested URLs are allowed by default here; policies deny them by default.)
    """
    try:
        canonical_url(value, hosts=hosts, schemes=schemes, allow_ip_literals=allow_ip_literals,
                      allow_nested_urls=allow_nested_urls)
    except Rejected as rejected:
        return rejected.reason
    return None


def address_reason(address: str | _IP, allowed: Collection[str] = ()) -> str | None:
    """Why a client must not connect to ``address`` (loopback, private, link-local, metadata, multicast,
    reserved, unspecified), else ``None``. ``allowed`` lists networks (``10.0.0.0/8``, ``127.0.0.1``) that
    are reachable all the same. Used at connect time by :mod:`guardrail.tools.policy.http`."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0]) if isinstance(address, str) else address
    except ValueError:
        return f"not an IP address: {address!r}"
    networks = _networks(frozenset(allowed))
    inner = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    for candidate in (ip, inner):
        if candidate is not None and any(candidate in network for network in networks):
            return None
    kind = _address_kind(ip)
    if kind != "address" or not ip.is_global:
        return f"{kind if kind != 'address' else 'non-global address'} {ip} not allowed"
    return None


@functools.lru_cache(maxsize=64)
def _networks(entries: frozenset[str]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    try:
        return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)
    except ValueError as error:
        raise ConfigError(f"URL policy allowed address {error}") from None
