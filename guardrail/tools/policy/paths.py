"""Path arguments: is a model-proposed path inside the directory the tool may touch, and which file is it?

:func:`resolve_path` turns a model-controlled path into the real, absolute path it names and raises
:class:`ValueError` (with the reason) unless that path is the base directory or lies under it;
:func:`check_path` is the same check as ``None`` / reason string. The policy layer hands the tool the
*resolved* path (a ``str``), never the model's spelling, and :func:`open_inside` opens it so that a symlink
swapped in after the check cannot lead out of the base.

Nothing is decoded. A spelling that some layer between the check and the file system could read as another
path is denied instead of interpreted, so the checker and the tool can never judge two different paths:

1. only ``str`` of at most :data:`MAX_PATH_CHARS` (4096) characters, not empty; no NUL, no control or
   format characters (bidi overrides, zero-width), no lone surrogates;
2. no percent-escapes (``%2e``, ``%2F``, ``%25``...): a tool or library that decodes them would open another
   path than the one checked. A ``%`` not followed by two hex digits is an ordinary character;
3. no text that Unicode compatibility normalisation (NFKC) would change (fullwidth ``．``/``／``, the one-dot
   leader ``․``, ligatures...) and none of the slash and dot look-alikes that NFKC keeps (:data:`LOOKALIKES`:
   division slash ``∕``, fraction slash ``⁄``, big solidus ``⧸``, ideographic full stop ``。``, set minus...);
4. backslashes are denied (``..\\`` is traversal on Windows and a plain character on POSIX), and so are
   Windows drive prefixes (``C:``);
5. no segment may start with ``~`` (``~``, ``~root``, ``~/x``): shells and ``expanduser`` read them as home
   directories, the file system as a plain name;
6. absolute paths are denied unless ``allow_absolute``, and then must still resolve inside the base;
7. the base and the candidate are both passed through :func:`os.path.realpath`, which follows every
   symlink (also a dangling one, also one reached through ``..``), and the result must be the base or
   under it, compared component by component (``/srv/data2`` is not under ``/srv/data``);
8. with ``must_exist``, the resolved path must exist.

Time of check to time of use: the resolved path has no symlink left in it at check time. :func:`open_inside`
walks it again from the base directory one component at a time with ``O_NOFOLLOW`` (``openat``), so a
component replaced by a symlink between the check and the open makes the open fail instead of following it.
Hard links and bind mounts that lead out of the base are not visible in the path and are not detected. On
case-insensitive file systems a path spelled in another case than the base is denied (safe side).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import unicodedata
from pathlib import Path
from typing import IO, Any

from guardrail.errors import ConfigError, PathRejected

__all__ = ["LOOKALIKES", "MAX_PATH_CHARS", "check_path", "open_inside", "resolve_path"]

#: Longest path value accepted (PATH_MAX on Linux); longer values are denied without further work.
MAX_PATH_CHARS = 4096
#: Characters that look like ``/``, ``\\`` or ``.`` and that NFKC normalisation leaves alone (NFKC-changed
#: look-alikes such as fullwidth ``／`` or the one-dot leader are denied by rule 3 already).
LOOKALIKES = frozenset(
    "\u2215\u2044\u29f8\u29f9\u2216\u2571\u2572\u3033\u30fb\u3002\uff61\u0701\u0702\u06d4\u2e31\u2e33"
    "\u00b7\u0387\u16eb\u2027\u2219\u22c5\u02d9\u2cf9\u2cfe\ua60e\ua4f8\u1427\u2e3c\u2396"
)

# Only fixed, non-backtracking patterns here: linear on any input.
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_DRIVE = re.compile(r"[A-Za-z]:")
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _base_dir(base: str | os.PathLike[str], allow_absolute: object, must_exist: object) -> str:
    """The real path of the configured base directory; ``ValueError`` for a bad policy."""
    if not isinstance(allow_absolute, bool) or not isinstance(must_exist, bool):
        raise ConfigError("path policy allow_absolute and must_exist must be bool")
    if not isinstance(base, str | os.PathLike):
        raise ConfigError(f"path policy base must be a str or os.PathLike, not {type(base).__name__}")
    raw = os.fspath(base)
    if not isinstance(raw, str):
        raise ConfigError("path policy base must be a text path, not bytes")
    if not raw or "\x00" in raw:
        raise ConfigError(f"path policy base {raw!r} is empty or contains NUL")
    real = os.path.realpath(raw)
    if not os.path.isdir(real):
        raise ConfigError(f"path policy base {raw!r} is not an existing directory")
    return real


def _spelling_reason(text: str) -> str | None:
    """Why ``text`` could be read as another path by some layer (rules 1-5), else ``None``."""
    if "\x00" in text:
        return "NUL byte in path"
    if "\\" in text:
        return "backslash in path"
    for char in text:
        if unicodedata.category(char) in _BAD_CATEGORIES:
            return f"control or format character U+{ord(char):04X} in path"
    if _ESCAPE.search(text) is not None:
        return "percent-escape in path (paths are never decoded)"
    if not text.isascii():
        for char in text:
            if char in LOOKALIKES:
                return f"look-alike of '/', '\\' or '.' (U+{ord(char):04X}) in path"
        if unicodedata.normalize("NFKC", text) != text:
            return "path changes under Unicode NFKC normalisation (fullwidth or compatibility characters)"
    if any(segment.startswith("~") for segment in text.split("/")):
        return "'~' at the start of a path segment (home-directory spelling)"
    if _DRIVE.match(text):
        return "Windows drive prefix in path"
    return None


def _resolve(value: object, base_real: str, allow_absolute: bool, must_exist: bool) -> Path | str:
    """The resolved path, or the reason to deny (a str)."""
    if not isinstance(value, str):
        return f"path must be a str, not {type(value).__name__}"
    if not value:
        return "empty path"
    if len(value) > MAX_PATH_CHARS:
        return f"path longer than {MAX_PATH_CHARS} characters"
    reason = _spelling_reason(value)
    if reason is not None:
        return reason
    if os.path.isabs(value):
        if not allow_absolute:
            return "absolute path not allowed"
        candidate = value
    else:
        candidate = os.path.join(base_real, value)
    try:
        real = os.path.realpath(candidate)
    except (OSError, ValueError, RecursionError) as error:  # unreadable component, deep link chain
        return f"path cannot be resolved: {type(error).__name__}"
    if not _inside(real, base_real):
        return "path resolves outside the base directory"
    if must_exist and not os.path.exists(real):
        return "path does not exist"
    return Path(real)


def _inside(real: str, base_real: str) -> bool:
    prefix = base_real if base_real.endswith(os.sep) else base_real + os.sep
    return real == base_real or real.startswith(prefix)


def resolve_path(
    value: str, *, base: str | os.PathLike[str], allow_absolute: bool = False, must_exist: bool = False
) -> Path:
    """The real, absolute path ``value`` names inside ``base``.

    Raises :class:`~guardrail.errors.PathRejected` (a ``ValueError``) whose message is the reason
    when the value is denied (see the module docstring for the rules), and
    :class:`~guardrail.errors.ConfigError` (also a ``ValueError``) for a bad policy: ``base`` is not an existing
    directory, or a flag is not a bool.
    Open the returned path (with :func:`open_inside`), not ``value``: it is what was checked.
    """
    base_real = _base_dir(base, allow_absolute, must_exist)
    result = _resolve(value, base_real, allow_absolute, must_exist)
    if isinstance(result, str):
        raise PathRejected(result)
    return result


def check_path(
    value: object, *, base: str | os.PathLike[str], allow_absolute: bool = False, must_exist: bool = False
) -> str | None:
    """``None`` when ``value`` names a path inside ``base`` (see :func:`resolve_path`), else the reason.

    Raises :class:`ValueError` only for a bad policy: ``base`` is not an existing directory, or a flag is not
    a bool.
    """
    base_real = _base_dir(base, allow_absolute, must_exist)
    result = _resolve(value, base_real, allow_absolute, must_exist)
    return result if isinstance(result, str) else None


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _open_flags(mode: str) -> int:
    plain = mode.replace("b", "").replace("t", "")
    table = {"r": os.O_RDONLY, "r+": os.O_RDWR, "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
             "w+": os.O_RDWR | os.O_CREAT | os.O_TRUNC, "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
             "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND, "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
             "x+": os.O_RDWR | os.O_CREAT | os.O_EXCL}
    if plain not in table:
        raise ConfigError(f"unsupported open mode {mode!r}")
    return table[plain] | _CLOEXEC


def open_inside(path: str | os.PathLike[str], *, base: str | os.PathLike[str], mode: str = "r",
                **kwargs: Any) -> IO[Any]:
    """Open ``path`` (a resolved path inside ``base``, or one relative to it) without following any symlink.

    Each directory below the base is opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's file
    descriptor, and the file itself with ``O_NOFOLLOW``: a component that became a symlink after the check
    raises :class:`OSError` (``ELOOP``) instead of being followed, and ``..`` components are refused. The
    path is re-checked with the rules of :func:`check_path` first (``allow_absolute`` for paths under the
    base). ``mode`` is an :func:`open` mode; ``kwargs`` go to :func:`os.fdopen` (``encoding=``...).
    Raises :class:`PermissionError` for a path outside the base.
    """
    base_real = _base_dir(base, False, False)
    text = os.fspath(path)
    if not isinstance(text, str):
        raise PermissionError("open_inside takes a text path")
    if os.path.isabs(text):
        if not _inside(os.path.normpath(text), base_real):
            raise PermissionError(errno.EACCES, "path is outside the base directory", text)
        text = os.path.relpath(os.path.normpath(text), base_real)
    reason = _spelling_reason(text) if text != "." else None
    if reason is not None:
        raise PermissionError(errno.EACCES, reason, text)
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise PermissionError(errno.EACCES, "not a file path below the base directory", text)
    if not _NOFOLLOW or os.open not in os.supports_dir_fd:
        raise OSError(errno.ENOSYS, "this platform cannot open without following symlinks (O_NOFOLLOW, openat)")
    directory = os.open(base_real, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts[:-1]:
            child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=directory)
            os.close(directory)
            directory = child
        fd = os.open(parts[-1], _open_flags(mode) | _NOFOLLOW, 0o666, dir_fd=directory)
    finally:
        os.close(directory)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", text)
        return os.fdopen(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise
