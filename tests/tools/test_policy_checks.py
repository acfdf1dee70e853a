"""Adversarial tests for the policy argument checkers (URLs, paths, SQL, linear-time regexes).

Each checker gets a list of bypass attempts (each must be denied), a list of ordinary values (each must be
allowed, so that a checker denying everything fails), parametrized tests over both, and a summary test
that counts and prints the result ("URL bypasses denied: 83/83"). Property tests feed arbitrary text and
check that nothing raises and the answer is ``None`` or a reason string. Path tests use a real temporary
directory with real symlinks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlglot.dialects.dialect import Dialect
from support.waiting import finishes

from guardrail.tools.policy.paths import check_path, resolve_path
from guardrail.tools.policy.regex import LinearPattern, compile_pattern
from guardrail.tools.policy.sql import MAX_SQL_CHARS, check_sql
from guardrail.tools.policy.urls import check_url

# --------------------------------------------------------------------------------------------------- URLs

URL_HOSTS = ("allowed.com", "*.example.com", "api.allowed.com:8443", "bücher.de", "10.0.0.5", "[fd00::5]")
IP_OK: dict[str, Any] = {"allow_ip_literals": True}

#: (label, value, extra keyword arguments); every one must be denied.
URL_BYPASSES: list[tuple[str, object, dict[str, Any]]] = [
    # schemes
    ("javascript", "javascript:alert(1)", {}),
    ("javascript-slashes", "javascript://allowed.com/%0aalert(1)", {}),
    ("file", "file:///etc/passwd", {}),
    ("data", "data:text/html,<script>alert(1)</script>", {}),
    ("gopher", "gopher://allowed.com:70/_GET", {}),
    ("ftp", "ftp://allowed.com/", {}),
    ("http-not-listed", "http://allowed.com/", {}),
    ("jar", "jar:https://allowed.com!/x", {}),
    ("view-source", "view-source:https://allowed.com", {}),
    ("no-scheme", "//allowed.com/x", {}),
    ("no-slashes", "https:allowed.com", {}),
    ("one-slash", "https:/allowed.com", {}),
    ("empty-authority", "https:///allowed.com", {}),
    # userinfo
    ("userinfo-host", "https://allowed.com@evil.com", {}),
    ("userinfo-password", "https://user:pw@allowed.com", {}),
    ("userinfo-empty", "https://@allowed.com", {}),
    ("userinfo-port-like", "https://allowed.com:443@evil.com", {}),
    ("userinfo-colon", "https://allowed.com:@evil.com", {}),
    # backslashes, whitespace, control, format characters
    ("backslash-at", "https://allowed.com\\@evil.com", {}),
    ("backslash-host", "https:\\\\evil.com", {}),
    ("backslash-path", "https://evil.com\\.allowed.com", {}),
    ("space-in-authority", "https://allowed.com @evil.com", {}),
    ("leading-space", " https://evil.com", {}),
    ("tab", "https://allowed.com\t.evil.com", {}),
    ("newline", "https://allowed.com\n@evil.com", {}),
    ("nul", "https://allowed.com\x00.evil.com", {}),
    ("zero-width-space", "https://allowed\u200b.com", {}),
    ("rtl-override", "https://allowed.com/\u202egnp.exe", {}),
    ("nbsp", "https://allowed.com\u00a0.evil.com", {}),
    # percent-encoding and odd characters in the authority
    ("pct-slash", "https://allowed.com%2f@evil.com", {}),
    ("pct-dot", "https://allowed%2ecom", {}),
    ("pct-at", "https://allowed.com%40evil.com", {}),
    ("pct-nul", "https://evil.com%00.allowed.com", {}),
    ("semicolon", "https://evil.com;.allowed.com", {}),
    ("ampersand", "https://evil.com&.allowed.com", {}),
    ("underscore", "https://evil_.allowed.com", {}),
    # host confusion
    ("suffix-attack", "https://allowed.com.evil.com", {}),
    ("prefix-attack", "https://notallowed.com", {}),
    ("host-in-path", "https://evil.com/allowed.com", {}),
    ("host-in-query", "https://evil.com?.allowed.com", {}),
    ("host-in-fragment", "https://evil.com#.allowed.com", {}),
    ("wildcard-apex", "https://example.com", {}),
    ("double-trailing-dot", "https://allowed.com..", {}),
    ("empty-label", "https://allowed..com", {}),
    ("single-label", "https://intranet/", {}),
    ("ip-in-dns-name", "https://127.0.0.1.nip.io/", {}),
    # Unicode and homoglyphs
    ("cyrillic-a", "https://аllowed.com", {}),
    ("cyrillic-punycode", "https://xn--llowed-2nf.com", {}),
    ("fullwidth-letter", "https://ａllowed.com", {}),
    ("ideographic-dot", "https://allowed。com", {}),
    ("fullwidth-dot", "https://allowed．com", {}),
    ("soft-hyphen", "https://allo\u00adwed.com", {}),
    ("uppercase-non-ascii", "https://BÜCHER.de", {}),
    ("invalid-punycode", "https://xn--zz.com", {}),
    # ports
    ("port-80", "https://allowed.com:80", {}),
    ("port-unlisted", "https://allowed.com:8443", {}),
    ("port-wildcard-unlisted", "https://a.example.com:8443", {}),
    ("port-leading-zero", "https://allowed.com:0443", {}),
    ("port-plus", "https://allowed.com:+443", {}),
    ("port-too-big", "https://allowed.com:65536", {}),
    ("port-zero", "https://allowed.com:0", {}),
    ("port-empty", "https://allowed.com:", {}),
    ("port-twice", "https://allowed.com:443:443", {}),
    ("listed-port-only", "https://api.allowed.com/", {}),
    # IP literals in every form
    ("ipv4-decimal", "https://2130706433/", {}),
    ("ipv4-octal", "https://0177.0.0.1/", {}),
    ("ipv4-hex", "https://0x7f.1/", {}),
    ("ipv4-hex-whole", "https://0x7f000001/", {}),
    ("ipv4-short", "https://127.1/", {}),
    ("ipv4-loopback", "https://127.0.0.1/", {}),
    ("ipv4-loopback-allowed-flag", "https://127.0.0.1/", IP_OK),
    ("ipv4-octal-allowed-flag", "https://012.0.0.5/", IP_OK),
    ("ipv4-too-many-parts", "https://1.2.3.4.5/", IP_OK),
    ("ipv4-out-of-range", "https://256.0.0.1/", IP_OK),
    ("ipv6-loopback", "https://[::1]/", {}),
    ("ipv6-mapped", "https://[::ffff:127.0.0.1]/", IP_OK),
    ("ipv6-mapped-hex", "https://[::ffff:7f00:1]/", IP_OK),
    ("ipv6-mapped-of-listed", "https://[::ffff:10.0.0.5]/", IP_OK),
    ("ipv6-unterminated", "https://[::1/", IP_OK),
    ("ipv6-zone", "https://[fe80::1%25eth0]/", IP_OK),
    ("ipv6-bare", "https://::1/", IP_OK),
    ("ipv6-link-local", "https://[fe80::1]/", IP_OK),
    ("metadata-ipv4", "https://169.254.169.254/latest/meta-data/", IP_OK),
    ("metadata-ipv6", "https://[fd00:ec2::254]/", IP_OK),
    ("unspecified", "https://0.0.0.0/", IP_OK),
    ("private-10", "https://10.0.0.6/", IP_OK),
    ("private-172", "https://172.16.0.1/", IP_OK),
    ("private-192", "https://192.168.1.1/", IP_OK),
    ("listed-ip-flag-off", "https://10.0.0.5/", {}),
    ("listed-ipv6-flag-off", "https://[fd00::5]/", {}),
    # special names
    ("localhost", "https://localhost/", {}),
    ("localhost-dot", "https://localhost./", {}),
    ("sub-localhost", "https://evil.localhost/", {}),
    ("metadata-name", "https://metadata.google.internal/", {"hosts": ("*.google.internal",)}),
    ("metadata-short", "https://metadata/", {}),
    # not a usable string
    ("int", 12345, {}),
    ("none", None, {}),
    ("bytes", b"https://allowed.com/", {}),
    ("empty", "", {}),
    ("too-long", "https://allowed.com/" + "a" * 9000, {}),
]

#: (value, extra keyword arguments); every one must be allowed.
URL_ALLOWED: list[tuple[str, dict[str, Any]]] = [
    ("https://allowed.com", {}),
    ("https://allowed.com/", {}),
    ("https://allowed.com/path/to?q=1&r=2#frag", {}),
    ("HTTPS://Allowed.COM/x", {}),
    ("https://allowed.com./x", {}),
    ("https://allowed.com:443/", {}),
    ("https://allowed.com/users/@me", {}),
    ("https://allowed.com/?next=https://evil.com", {}),
    ("https://a.example.com", {}),
    ("https://a.b.example.com/x", {}),
    ("https://api.allowed.com:8443/v1", {}),
    ("https://bücher.de/", {}),
    ("https://xn--bcher-kva.de/", {}),
    ("https://10.0.0.5/", IP_OK),
    ("https://[fd00::5]/", IP_OK),
    ("https://[FD00:0::5]:443/", IP_OK),
    ("http://allowed.com/", {"schemes": ("http", "https")}),
    ("https://localhost:8080/", {"hosts": ("localhost:8080",)}),
    ("https://api.allowed.com:9/", {"hosts": ("api.allowed.com", "*.allowed.com:9")}),
]


def _url(value: object, kwargs: dict[str, Any]) -> str | None:
    options: dict[str, Any] = {"hosts": URL_HOSTS, **kwargs}
    return check_url(value, **options)


@pytest.mark.parametrize(("value", "kwargs"), [pytest.param(v, k, id=label) for label, v, k in URL_BYPASSES])
def test_url_bypass_denied(value: object, kwargs: dict[str, Any]) -> None:
    reason = _url(value, kwargs)
    assert isinstance(reason, str) and reason


@pytest.mark.parametrize(("value", "kwargs"), URL_ALLOWED)
def test_url_allowed(value: str, kwargs: dict[str, Any]) -> None:
    assert _url(value, kwargs) is None


def test_url_summary(capsys: pytest.CaptureFixture[str]) -> None:
    denied = [label for label, value, kwargs in URL_BYPASSES if _url(value, kwargs) is not None]
    allowed = [value for value, kwargs in URL_ALLOWED if _url(value, kwargs) is None]
    with capsys.disabled():
        print(f"\nURL bypasses denied: {len(denied)}/{len(URL_BYPASSES)}; ", end="")
        print(f"allowed passed: {len(allowed)}/{len(URL_ALLOWED)}")
    assert len(URL_BYPASSES) >= 40
    assert len(denied) == len(URL_BYPASSES)
    assert len(allowed) == len(URL_ALLOWED)


def test_url_reasons_name_the_problem() -> None:
    assert "userinfo" in (_url("https://allowed.com@evil.com", {}) or "")
    assert "non-canonical IPv4" in (_url("https://2130706433", {}) or "")
    assert "loopback" in (_url("https://[::ffff:127.0.0.1]", {}) or "")
    assert "metadata" in (_url("https://169.254.169.254", {}) or "")
    assert "scheme" in (_url("javascript:alert(1)", {}) or "")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"hosts": "allowed.com"},
        {"hosts": ["allowed.com", 3]},
        {"hosts": ["*"]},
        {"hosts": ["*.com"]},
        {"hosts": ["a.*.com"]},
        {"hosts": ["a..b.com"]},
        {"hosts": ["exa mple.com"]},
        {"hosts": ["2130706433"]},
        {"hosts": ["*.10.0.0.5"]},
        {"hosts": ["allowed.com:99999"]},
        {"hosts": ["allowed.com"], "schemes": "https"},
        {"hosts": ["allowed.com"], "schemes": ["ht tp"]},
        {"hosts": ["allowed.com"], "allow_ip_literals": "yes"},
    ],
)
def test_url_bad_policy_raises(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        check_url("https://allowed.com/", **kwargs)


def test_url_entries_are_normalised() -> None:
    assert check_url("https://xn--bcher-kva.de/", hosts=["BÜCHER.DE"]) is None
    assert check_url("https://bücher.de/", hosts=["xn--bcher-kva.de"]) is None
    assert check_url("https://аllowed.com/", hosts=["аllowed.com"]) is None  # listed homoglyph is a real name
    assert check_url("https://allowed.com/", hosts=["аllowed.com"]) is not None


_URL_PIECE = st.text(alphabet="abcxyz019.-:@[]%/\\?#_ \t\u0430\uff41\u3002", max_size=30)


@given(st.text())
def test_url_never_raises_on_text(value: str) -> None:
    result = check_url(value, hosts=URL_HOSTS, allow_ip_literals=True)
    assert result is None or isinstance(result, str)


@given(st.sampled_from(["https", "HTTPS", "http", "javascript", "h"]), _URL_PIECE, _URL_PIECE)
def test_url_never_raises_on_url_shaped_text(scheme: str, authority: str, rest: str) -> None:
    value = f"{scheme}://{authority}{rest}"
    result = check_url(value, hosts=URL_HOSTS, allow_ip_literals=True)
    assert result is None or isinstance(result, str)
    if result is None:  # whatever slipped through is a listed host, by construction
        assert "@" not in authority.split("/")[0] and "\\" not in value


# -------------------------------------------------------------------------------------------------- paths


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``root/base`` (the base) with real files and symlinks, ``root/outside`` and ``root/base2`` next to it."""
    root = tmp_path_factory.mktemp("policy_paths").resolve()
    base, outside, sibling = root / "base", root / "outside", root / "base2"
    for directory in (base / "data", base / "sub", outside, sibling, base / "~"):
        directory.mkdir(parents=True)
    (base / "data" / "file.txt").write_text("ok")
    (base / "data" / "a b.txt").write_text("ok")
    (outside / "secret.txt").write_text("secret")
    (sibling / "secret.txt").write_text("secret")
    (base / "link_out").symlink_to("../outside")
    (base / "link_file_out").symlink_to(outside / "secret.txt")
    (base / "link_abs_out").symlink_to("/etc")
    (base / "link_in").symlink_to("data")
    (base / "link_parent").symlink_to("..")
    (base / "dangling_out").symlink_to("../outside/not_yet.txt")
    (base / "sub" / "deep_out").symlink_to("../../outside")
    (base / "loop_a").symlink_to("loop_b")
    (base / "loop_b").symlink_to("loop_a")
    yield root


def _base(root: Path) -> Path:
    return root / "base"


#: (label, value, extra keyword arguments); ``{base}``/``{root}`` in a str value are filled in.
PATH_BYPASSES: list[tuple[str, object, dict[str, Any]]] = [
    ("dotdot", "../outside/secret.txt", {}),
    ("dotdot-deep", "../../../../../../etc/passwd", {}),
    ("dotdot-after-dir", "data/../../outside/secret.txt", {}),
    ("dotdot-alone", "..", {}),
    ("dotdot-sibling-prefix", "../base2/secret.txt", {}),
    ("absolute", "/etc/passwd", {}),
    ("absolute-allowed-outside", "/etc/passwd", {"allow_absolute": True}),
    ("absolute-inside-flag-off", "{base}/data/file.txt", {}),
    ("absolute-dotdot-out", "{base}/../outside/secret.txt", {"allow_absolute": True}),
    ("absolute-sibling-prefix", "{root}/base2/secret.txt", {"allow_absolute": True}),
    ("double-slash-absolute", "//etc/passwd", {}),
    ("pct-dotdot", "%2e%2e/outside/secret.txt", {}),
    ("pct-dotdot-slash", "%2e%2e%2foutside%2fsecret.txt", {}),
    ("pct-upper", "%2E%2E%2Foutside", {}),
    ("pct-double", "%252e%252e/outside/secret.txt", {}),
    ("pct-triple", "%25252e%25252e/outside/secret.txt", {}),
    ("pct-too-deep", "%2525252e%2525252e/x", {}),
    ("pct-inside-traversal", "data/%2e%2e/data/file.txt", {}),
    ("pct-nul", "data/file.txt%00.png", {}),
    ("pct-backslash", "..%5coutside", {}),
    ("pct-invalid-utf8", "data/%ff.txt", {}),
    ("pct-absolute", "%2fetc%2fpasswd", {}),
    ("windows-dotdot", "..\\outside\\secret.txt", {}),
    ("windows-mixed", "data\\..\\..\\outside", {}),
    ("windows-drive", "C:/Windows/win.ini", {}),
    ("windows-drive-relative", "c:secret", {}),
    ("symlink-dir-out", "link_out/secret.txt", {}),
    ("symlink-dir-itself", "link_out", {}),
    ("symlink-file-out", "link_file_out", {}),
    ("symlink-absolute-out", "link_abs_out/passwd", {}),
    ("symlink-parent", "link_parent/outside/secret.txt", {}),
    ("symlink-then-dotdot", "link_in/../../outside/secret.txt", {}),
    ("symlink-nested-out", "sub/deep_out/secret.txt", {}),
    ("symlink-dangling-out", "dangling_out", {}),
    ("tilde-then-dotdot", "~/../../outside/secret.txt", {}),
    ("nul", "data/file.txt\x00.png", {}),
    ("newline", "data/file.txt\n", {}),
    ("bidi", "data/\u202etxt.exe", {}),
    ("lone-surrogate", "data/\ud800.txt", {}),
    ("missing-must-exist", "data/missing.txt", {"must_exist": True}),
    ("loop-must-exist", "loop_a/x", {"must_exist": True}),
    ("empty", "", {}),
    ("int", 42, {}),
    ("none", None, {}),
    ("bytes", b"data/file.txt", {}),
    ("pathlike", Path("data/file.txt"), {}),
    ("too-long", "a/" * 2100, {}),
    # issue 15: nothing is decoded, so a spelling another layer could read as another path is denied
    ("pct-space", "data/a%20b.txt", {}),
    ("pct-letter", "data/fil%65.txt", {}),
    ("tilde-home", "~/notes.txt", {}),
    ("tilde-user", "~root/.ssh/id_rsa", {}),
    ("tilde-inner-segment", "data/~/x", {}),
    ("fullwidth-dots", "\uff0e\uff0e/outside/secret.txt", {}),
    ("fullwidth-slash", "..\uff0foutside", {}),
    ("one-dot-leader", "\u2024\u2024/outside", {}),
    ("two-dot-leader", "\u2025/outside", {}),
    ("division-slash", "..\u2215outside", {}),
    ("fraction-slash", "..\u2044outside", {}),
    ("big-solidus", "..\u29f8outside", {}),
    ("small-full-stop", "\ufe52\ufe52/outside", {}),
    ("fullwidth-backslash", "..\uff3coutside", {}),
    ("ideographic-full-stop", "\u3002\u3002/outside", {}),
    ("decomposed-accent", "data/cafe\u0301.txt", {}),
]

#: (value, extra keyword arguments, expected path relative to base); every one must be allowed.
PATH_ALLOWED: list[tuple[str, dict[str, Any], str]] = [
    ("data/file.txt", {}, "data/file.txt"),
    ("data/file.txt", {"must_exist": True}, "data/file.txt"),
    ("./data/file.txt", {}, "data/file.txt"),
    ("data//./file.txt", {}, "data/file.txt"),
    ("data/../data/file.txt", {}, "data/file.txt"),
    ("link_in/file.txt", {"must_exist": True}, "data/file.txt"),
    ("sub/../link_in/../data", {}, "data"),
    (".", {}, "."),
    ("sub/", {}, "sub"),
    ("new/not/yet.txt", {}, "new/not/yet.txt"),
    ("data/100%.txt", {}, "data/100%.txt"),
    ("{base}/data/file.txt", {"allow_absolute": True}, "data/file.txt"),
]


def _fill(value: object, root: Path) -> object:
    return value.format(base=_base(root), root=root) if isinstance(value, str) and "{" in value else value


@pytest.mark.parametrize(("value", "kwargs"), [pytest.param(v, k, id=label) for label, v, k in PATH_BYPASSES])
def test_path_bypass_denied(tree: Path, value: object, kwargs: dict[str, Any]) -> None:
    reason = check_path(_fill(value, tree), base=_base(tree), **kwargs)
    assert isinstance(reason, str) and reason


@pytest.mark.parametrize(("value", "kwargs", "expected"), PATH_ALLOWED)
def test_path_allowed(tree: Path, value: str, kwargs: dict[str, Any], expected: str) -> None:
    filled = _fill(value, tree)
    assert isinstance(filled, str)
    assert check_path(filled, base=_base(tree), **kwargs) is None
    assert resolve_path(filled, base=str(_base(tree)), **kwargs) == (_base(tree) / expected).resolve()


def test_path_summary(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _base(tree)
    denied = [label for label, v, k in PATH_BYPASSES if check_path(_fill(v, tree), base=base, **k) is not None]
    allowed = [v for v, k, _ in PATH_ALLOWED if check_path(str(_fill(v, tree)), base=base, **k) is None]
    with capsys.disabled():
        print(f"\nPath bypasses denied: {len(denied)}/{len(PATH_BYPASSES)}; ", end="")
        print(f"allowed passed: {len(allowed)}/{len(PATH_ALLOWED)}")
    assert len(PATH_BYPASSES) >= 25
    assert len(denied) == len(PATH_BYPASSES)
    assert len(allowed) == len(PATH_ALLOWED)


def test_resolve_path_raises_with_reason(tree: Path) -> None:
    with pytest.raises(ValueError, match="outside the base"):
        resolve_path("link_out/secret.txt", base=_base(tree))
    with pytest.raises(ValueError, match="absolute"):
        resolve_path("/etc/passwd", base=_base(tree))


def test_path_sibling_prefix_is_not_inside(tree: Path) -> None:
    """``base2`` starts with the text of ``base`` but is not under it."""
    assert str(tree / "base2").startswith(str(_base(tree)))
    assert check_path("secret.txt", base=tree / "base2") is None
    assert check_path(str(tree / "base2" / "secret.txt"), base=_base(tree), allow_absolute=True) is not None


def test_path_bad_policy_raises(tree: Path) -> None:
    for kwargs in (
        {"base": tree / "missing"},
        {"base": tree / "base" / "data" / "file.txt"},
        {"base": os.fsencode(tree)},
        {"base": ""},
        {"base": tree, "allow_absolute": "no"},
        {"base": tree, "must_exist": 1},
    ):
        with pytest.raises(ValueError):
            check_path("x", **kwargs)


@given(st.text(max_size=60))
def test_path_never_raises_and_stays_inside(tree: Path, value: str) -> None:
    base = _base(tree)
    result = check_path(value, base=base)
    assert result is None or isinstance(result, str)
    if result is None:
        resolved = resolve_path(value, base=base)
        assert resolved == base or base in resolved.parents


_SEGMENTS = ["..", ".", "data", "link_in", "link_out", "link_parent", "sub", "deep_out", "%2e%2e", "%252e", "~", ""]


@given(st.lists(st.sampled_from(_SEGMENTS), max_size=6))
def test_path_segment_soup_stays_inside(tree: Path, segments: list[str]) -> None:
    base = _base(tree)
    value = "/".join(segments)
    if check_path(value, base=base) is None:
        resolved = resolve_path(value, base=base)
        assert resolved == base or base in resolved.parents


# ---------------------------------------------------------------------------------------------------- SQL

SELECT = ("select",)

#: (label, value, dialect, allow, tables); every one must be denied.
SQL_BYPASSES: list[tuple[str, object, str | None, tuple[str, ...], tuple[str, ...] | None]] = [
    # stacked statements
    ("stacked", "SELECT 1; DROP TABLE x", None, SELECT, None),
    ("stacked-after-comment", "SELECT 1; -- \n DROP TABLE x", "sqlite", SELECT, None),
    ("stacked-newline", "SELECT 1;\nDELETE FROM t", "postgres", SELECT, None),
    ("stacked-two-selects", "SELECT * FROM t; SELECT * FROM secrets", "mysql", SELECT, None),
    # other kinds, hidden or not
    ("drop", "DROP TABLE t", "sqlite", SELECT, None),
    ("truncate", "TRUNCATE TABLE t", "postgres", SELECT, None),
    ("update", "UPDATE t SET a = 1", "mysql", SELECT, None),
    ("merge", "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "postgres", SELECT, None),
    ("create-as-select", "CREATE TABLE x AS SELECT * FROM t", "sqlite", SELECT, None),
    ("cte-delete", "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "postgres", SELECT, None),
    ("cte-update", "WITH d AS (UPDATE t SET a = 1 RETURNING *) SELECT * FROM d", "postgres", SELECT, None),
    ("cte-insert", "WITH d AS (INSERT INTO t VALUES (1) RETURNING *) SELECT * FROM d", "postgres", SELECT, None),
    ("insert-select-needs-select", "INSERT INTO t SELECT * FROM u", "sqlite", ("insert",), None),
    ("select-for-update", "SELECT * FROM t FOR UPDATE", "postgres", SELECT, None),
    ("begin", "BEGIN", None, SELECT, None),
    ("grant", "GRANT ALL ON t TO public", "postgres", SELECT, None),
    ("listen-misparsed", "LISTEN x", "postgres", SELECT, None),
    # unparsed passthrough and side effects
    ("call", "CALL do_evil()", None, SELECT, None),
    ("exec", "EXEC xp_cmdshell 'dir'", "tsql", SELECT, None),
    ("vacuum", "VACUUM", "sqlite", SELECT, None),
    ("replace-into", "REPLACE INTO t VALUES (1)", "mysql", ("insert",), None),
    ("explain-analyze", "EXPLAIN ANALYZE DELETE FROM t", "postgres", SELECT, None),
    ("set-role", "SET ROLE admin", "postgres", SELECT, None),
    ("pragma", "PRAGMA writable_schema = 1", "sqlite", SELECT, None),
    ("attach", "ATTACH DATABASE '/tmp/x.db' AS x", "sqlite", SELECT, None),
    ("copy-to-file", "COPY t TO '/tmp/out'", "postgres", SELECT, None),
    ("copy-program", "COPY (SELECT 1) TO PROGRAM 'id'", "postgres", SELECT, None),
    ("into-outfile", "SELECT * FROM t INTO OUTFILE '/tmp/x'", "mysql", SELECT, None),
    ("select-into", "SELECT * INTO newt FROM t", "postgres", ("select", "create"), None),
    ("load-data", "LOAD DATA INFILE '/etc/passwd' INTO TABLE t", "mysql", ("select", "insert"), None),
    ("load-extension", "SELECT load_extension('/tmp/evil.so')", "sqlite", SELECT, None),
    ("pg-read-file", "SELECT pg_catalog.pg_read_file('/etc/passwd')", "postgres", SELECT, None),
    ("load-file", "SELECT LOAD_FILE('/etc/passwd')", "mysql", SELECT, None),
    ("sql-in-string", "SELECT query_to_xml('delete from t', true, true, '')", "postgres", SELECT, None),
    ("sleep-in-union", "SELECT 1 UNION SELECT pg_sleep(10)", "postgres", SELECT, None),
    ("duckdb-read-csv", "SELECT * FROM read_csv('/etc/passwd')", "duckdb", SELECT, None),
    ("duckdb-file-as-table", "SELECT * FROM '/etc/passwd'", "duckdb", SELECT, None),
    ("duckdb-url-as-table", "SELECT * FROM 'https://evil.example/x.csv'", "duckdb", SELECT, None),
    # lexical traps: text one server reads as a comment or a string and another as code
    ("mysql-executable-comment", "SELECT 1 /*! ; DROP TABLE x */", "mysql", SELECT, None),
    ("mariadb-executable-comment", "SELECT 1 /*M!100100 ; DROP TABLE x */", "mysql", SELECT, None),
    ("dashdash-no-space-generic", "SELECT 1 --1; DROP TABLE x", None, SELECT, None),
    ("dashdash-no-space-mysql", "SELECT 1 --1; DROP TABLE x", "mysql", SELECT, None),
    ("lone-cr", "SELECT 1; -- x\r DROP TABLE t", "sqlite", SELECT, None),
    ("nested-comment", "SELECT 1 /* /* */ ; DROP TABLE x; /* */ */", "postgres", SELECT, None),
    ("backslash-quote", "SELECT '\\'; DROP TABLE x; -- '", "mysql", SELECT, None),
    ("dollar-quote", "SELECT $$; DROP TABLE x$$", "postgres", SELECT, None),
    ("dollar-quote-unicode-tag", "SELECT $ä$; DROP TABLE x$ä$", "postgres", SELECT, None),
    ("hash-comment-other-lexers", "SELECT 1 # ; DROP TABLE x\n", "mysql", SELECT, None),
    ("backtick-other-lexers", "SELECT 1 `;DROP TABLE x;`", "mysql", SELECT, None),
    ("nul", "SELECT 1\x00; DROP TABLE t", None, SELECT, None),
    ("line-separator", "SELECT * FROM t\u2028; DROP TABLE x", None, SELECT, None),
    # tables
    ("union-secret-table", "SELECT a FROM t UNION SELECT a FROM secrets", "sqlite", SELECT, ("t",)),
    ("subquery-secret-table", "SELECT * FROM t WHERE id IN (SELECT id FROM secrets)", "postgres", SELECT, ("t",)),
    ("scalar-subquery", "SELECT (SELECT s FROM secrets)", "mysql", SELECT, ("t",)),
    ("join-secret", "SELECT * FROM t JOIN secrets ON true", "postgres", SELECT, ("t",)),
    ("other-schema", "SELECT * FROM other.t", "postgres", SELECT, ("t",)),
    ("unqualified-vs-qualified", "SELECT * FROM users", "postgres", SELECT, ("public.users",)),
    ("quoted-dot-name", 'SELECT * FROM "public.users"', "postgres", SELECT, ("public.users",)),
    ("quoted-other-case", 'SELECT * FROM "T"', "postgres", SELECT, ("t",)),
    ("table-statement", "TABLE secrets", "postgres", SELECT, ("t",)),
    ("parenthesised-secret", "((SELECT * FROM secrets))", "postgres", SELECT, ("t",)),
    ("cte-shadow-own-body", "WITH secrets AS (SELECT * FROM secrets) SELECT * FROM secrets", None, SELECT, ("t",)),
    ("cte-out-of-scope", "SELECT * FROM (WITH s AS (SELECT 1) SELECT * FROM s) AS x, s", None, SELECT, ("t",)),
    ("cte-forward-ref", "WITH b AS (SELECT * FROM a), a AS (SELECT * FROM t) SELECT * FROM b", None, SELECT, ("t",)),
    ("cte-quoted-mismatch", 'WITH "S" AS (SELECT 1) SELECT * FROM s', None, SELECT, ("t",)),
    ("table-function", "SELECT * FROM generate_series(1, 10)", "postgres", SELECT, ("t",)),
    ("sqlite-pragma-function", "SELECT * FROM pragma_table_info('t')", "sqlite", SELECT, ("t",)),
    # not a usable string
    ("empty", "", None, SELECT, None),
    ("semicolon-only", ";", None, SELECT, None),
    ("comment-only", "-- nothing", None, SELECT, None),
    ("unparseable", "SELEC 1", None, SELECT, None),
    ("deep-nesting", "SELECT " + "(" * 5000 + "1" + ")" * 5000, None, SELECT, None),
    ("int", 42, None, SELECT, None),
    ("none", None, None, SELECT, None),
    ("too-long", "SELECT " + "1+" * 33000 + "1", None, SELECT, None),
]

#: (value, dialect, allow, tables); every one must be allowed.
SQL_ALLOWED: list[tuple[str, str | None, tuple[str, ...], tuple[str, ...] | None]] = [
    ("SELECT 1", None, SELECT, None),
    ("SELECT 1;", "sqlite", SELECT, None),
    ("SELECT 1; -- done", "postgres", SELECT, None),
    ("SELECT 1 /* ; DROP TABLE x */", None, SELECT, None),
    ("(SELECT * FROM t)", "sqlite", SELECT, ("t",)),
    ("SELECT 1 -- trailing comment", "mysql", SELECT, None),
    ("select * from t where a = 'it''s' and b like '%x%'", "mysql", SELECT, ("t",)),
    ("SELECT *\r\nFROM t\r\nWHERE a = 1", "postgres", SELECT, ("t",)),
    ("SELECT a FROM t UNION ALL SELECT a FROM u", "sqlite", SELECT, ("t", "u")),
    ("SELECT * FROM t JOIN u ON t.id = u.id WHERE u.x IN (SELECT x FROM t)", "postgres", SELECT, ("t", "u")),
    ("WITH x AS (SELECT * FROM t) SELECT * FROM x", None, SELECT, ("t",)),
    ("WITH a AS (SELECT * FROM t), b AS (SELECT * FROM a) SELECT * FROM b", "postgres", SELECT, ("t",)),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r", None, SELECT, None),
    ("WITH RECURSIVE r AS (SELECT a FROM t UNION ALL SELECT a FROM r) SELECT * FROM r", None, SELECT, ("t",)),
    ("SELECT * FROM public.users", "postgres", SELECT, ("public.users",)),
    ("SELECT * FROM USERS", "postgres", SELECT, ("users",)),
    ('SELECT * FROM "users"', "postgres", SELECT, ("users",)),
    ("SELECT * FROM `t`", "mysql", SELECT, ("t",)),
    ("SELECT `a` FROM t # a comment\n", "mysql", SELECT, ("t",)),
    ("SELECT * FROM t WHERE a = ?", "sqlite", SELECT, ("t",)),
    ("SELECT * FROM t WHERE a = $1 AND b = $2", "postgres", SELECT, ("t",)),
    ("SELECT * FROM t FOR UPDATE", "postgres", ("select", "update"), ("t",)),
    ("INSERT INTO t (a) VALUES (1)", "sqlite", ("insert",), ("t",)),
    ("INSERT INTO t SELECT * FROM u", "postgres", ("insert", "select"), ("t", "u")),
    ("UPDATE t SET a = 1 WHERE id = 2", "mysql", ("UPDATE",), ("t",)),
    ("DELETE FROM t WHERE id = 1", "sqlite", ("delete",), ("t",)),
    ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "postgres", ("select", "delete"), None),
]


def _sql(value: object, dialect: str | None, allow: tuple[str, ...], tables: tuple[str, ...] | None) -> str | None:
    return check_sql(value, allow=allow, dialect=dialect, tables=tables)


@pytest.mark.parametrize(
    ("value", "dialect", "allow", "tables"), [pytest.param(*case[1:], id=case[0]) for case in SQL_BYPASSES]
)
def test_sql_bypass_denied(
    value: object, dialect: str | None, allow: tuple[str, ...], tables: tuple[str, ...] | None
) -> None:
    reason = _sql(value, dialect, allow, tables)
    assert isinstance(reason, str) and reason


@pytest.mark.parametrize(("value", "dialect", "allow", "tables"), SQL_ALLOWED)
def test_sql_allowed(value: str, dialect: str | None, allow: tuple[str, ...], tables: tuple[str, ...] | None) -> None:
    assert _sql(value, dialect, allow, tables) is None


def test_sql_summary(capsys: pytest.CaptureFixture[str]) -> None:
    denied = [case[0] for case in SQL_BYPASSES if _sql(*case[1:]) is not None]
    allowed = [case[0] for case in SQL_ALLOWED if _sql(*case) is None]
    dialects = sorted({case[2] or "generic" for case in SQL_BYPASSES})
    with capsys.disabled():
        print(
            f"\nSQL bypasses denied: {len(denied)}/{len(SQL_BYPASSES)} ({', '.join(dialects)}); "
            f"allowed passed: {len(allowed)}/{len(SQL_ALLOWED)}"
        )
    assert len(SQL_BYPASSES) >= 25
    assert len(denied) == len(SQL_BYPASSES)
    assert len(allowed) == len(SQL_ALLOWED)


def test_sql_reasons_name_the_problem() -> None:
    assert "exactly one statement" in (check_sql("SELECT 1; DROP TABLE x", allow=SELECT) or "")
    assert "'delete'" in (
        check_sql("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", allow=SELECT, dialect="postgres") or ""
    )
    assert "Command" in (check_sql("CALL p()", allow=SELECT) or "")
    assert "secrets" in (check_sql("SELECT * FROM secrets", allow=SELECT, tables=["t"]) or "")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"allow": "select"},
        {"allow": ["selects"]},
        {"allow": [1]},
        {"allow": SELECT, "dialect": "no-such-dialect"},
        {"allow": SELECT, "dialect": 3},
        {"allow": SELECT, "tables": "t"},
        {"allow": SELECT, "tables": ["a..b"]},
        {"allow": SELECT, "tables": ["a.b.c.d"]},
    ],
)
def test_sql_bad_policy_raises(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        check_sql("SELECT 1", **kwargs)


def test_sql_size_limit_is_checked_before_any_lexing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over-long SQL is refused by its length alone: sqlglot never tokenizes (nor parses) a byte of it."""
    tokenized: list[int] = []
    real = Dialect.tokenize

    def counting(self: Dialect, sql: str, **kwargs: Any) -> Any:
        tokenized.append(len(sql))
        return real(self, sql, **kwargs)

    monkeypatch.setattr(Dialect, "tokenize", counting)
    assert check_sql("SELECT 1 " + " " * 70_000, allow=SELECT) == f"SQL longer than {MAX_SQL_CHARS} characters"
    assert tokenized == []
    assert check_sql("SELECT 1", allow=SELECT) is None and tokenized  # the spy does see SQL that is lexed


_SQL_PIECES = st.lists(
    st.sampled_from(
        [
            "SELECT",
            "1",
            "*",
            "FROM",
            "t",
            "secrets",
            ";",
            "--",
            "-- x\n",
            "/*",
            "*/",
            "'",
            '"',
            "`",
            "(",
            ")",
            "WITH",
            "d",
            "AS",
            "DELETE",
            "UNION",
            "INSERT",
            "INTO",
            "DROP",
            "TABLE",
            ",",
            "$$",
            "\\",
            "\n",
            " ",
        ]
    ),
    max_size=14,
)


@given(st.text(max_size=80), st.sampled_from([None, "sqlite", "postgres", "mysql"]))
def test_sql_never_raises_on_text(value: str, dialect: str | None) -> None:
    result = check_sql(value, allow=SELECT, dialect=dialect, tables=["t"])
    assert result is None or isinstance(result, str)


@given(_SQL_PIECES, st.sampled_from([None, "sqlite", "postgres", "mysql"]))
def test_sql_token_soup_never_reaches_secrets(pieces: list[str], dialect: str | None) -> None:
    value = " ".join(pieces)
    result = check_sql(value, allow=SELECT, dialect=dialect, tables=["t"])
    assert result is None or isinstance(result, str)
    if result is None:  # what passed was judged as a SELECT: with nothing allowed, it is denied
        assert check_sql(value, allow=(), dialect=dialect, tables=["t"]) is not None


# -------------------------------------------------------------------------------------------------- regex


def test_regex_catastrophic_pattern_runs_in_linear_time() -> None:
    """``(a+)+$`` on ``"a" * 100_000 + "!"``: exponential for Python's re, instant for RE2."""
    pattern = compile_pattern(r"(a+)+$")
    text = "a" * 100_000 + "!"
    # a backtracking engine would never finish these (2**100000 ways to split the a's): the guard fails it
    assert finishes(lambda: pattern.search(text), "(a+)+$ search") is False
    assert finishes(lambda: pattern.fullmatch(text), "(a+)+$ fullmatch") is False
    assert finishes(lambda: pattern.fullmatch("a" * 100_000), "(a+)+$ fullmatch on a's") is True


def test_regex_basics() -> None:
    slug = LinearPattern(r"[a-z0-9_-]{1,64}")
    assert slug.pattern == r"[a-z0-9_-]{1,64}"
    assert slug.fullmatch("report_2024") is True
    assert slug.fullmatch("report 2024") is False
    assert slug.search("see report 2024") is True
    assert LinearPattern(r"(?i)drop\s+table").search("x; DROP  TABLE y") is True
    assert compile_pattern(r"[a-z]+") is compile_pattern(r"[a-z]+")


def test_regex_semantics_that_differ_from_python_re() -> None:
    assert LinearPattern(r"[a-z]+$").search("abc\n") is False  # Python's re: True
    assert LinearPattern(r"\d").search("٣") is False  # ASCII-only classes; Python's re: True
    assert LinearPattern(r"\p{N}").search("٣") is True
    assert LinearPattern(r".").fullmatch("\ud800") is True  # a lone surrogate matches as U+FFFD
    assert LinearPattern(r"[a-z]+").fullmatch("ab\ud800") is False


@pytest.mark.parametrize(
    ("pattern", "hint"),
    [
        (r"(a)\1", "backreference"),
        (r"(?=a)b", "lookaround"),
        (r"(?<!a)b", "lookaround"),
        (r"a++", "repetition"),
        (r"\Z", r"\\z"),
        (r"a{1001}", "repetition"),
        (r"[", "missing"),
    ],
)
def test_regex_unsupported_patterns_raise_value_error(pattern: str, hint: str) -> None:
    with pytest.raises(ValueError, match=hint):
        compile_pattern(pattern)


def test_regex_rejects_non_str() -> None:
    with pytest.raises(ValueError):
        compile_pattern(b"abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LinearPattern("a").fullmatch(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LinearPattern("a").search(b"a")  # type: ignore[arg-type]


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=80))
def test_regex_agrees_with_python_re_on_a_simple_pattern(text: str) -> None:
    source = r"[a-z0-9_.-]{1,64}"
    assert LinearPattern(source).fullmatch(text) is (re.fullmatch(source, text) is not None)
    assert LinearPattern(source).search(text) is (re.search(source, text) is not None)


def test_one_locator_finds_lines_for_policy_files_and_rule_sets() -> None:
    from guardrail.problems import Locator

    text = ('tool = "x"\n\n[args.q]\nsql = { allow = ["select"] }\n\n'
            '[[allow]]\nid = "a"\n\n[[allow]]\nid = "b"\nwhen = 1\n')
    where = Locator(text)
    assert where.line("tool") == 1
    assert where.line("args.q") == 3 and where.line("args.q.sql") == 4 and where.line("args.q.sql.allow") == 4
    assert where.line_of(("allow", 1, "when")) == 11 and where.line_of(("allow", 0)) == 6
    assert where.line("missing") is None and where.line("") is None
