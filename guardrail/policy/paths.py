"""Path arguments: is a model-proposed path inside the directory the tool may touch?

:func:`resolve_path` turns a model-controlled path into the real, absolute path it names and raises
:class:`ValueError` (with the reason) unless that path is the base directory or lies under it;
:func:`check_path` is the same check as ``None`` / reason string, for the policy layer.

How a value is judged, in order:

1. only ``str`` of at most :data:`MAX_PATH_CHARS` (4096) characters, not empty; no NUL, no control or
   format characters (bidi overrides, zero-width), no lone surrogates;
2. percent-escapes are decoded up to :data:`MAX_DECODE_ROUNDS` (3) times (``%252e`` -> ``%2e`` -> ``.``);
   escapes left after that are denied, and so is a decoded path with a ``..`` segment: encoded traversal
   (``%2e%2e/``) is refused even where it would stay inside the base. What is resolved (and returned) is the
   decoded path; a file whose real name contains ``%2e`` cannot be addressed, by design;
3. backslashes are denied outright (``..\\`` is traversal on Windows and a plain character on POSIX, so
   the two readings disagree), and so are Windows drive prefixes (``C:``);
4. ``~`` is never expanded: ``~/x`` is the directory named ``~`` inside the base;
5. absolute paths are denied unless ``allow_absolute``, and then must still resolve inside the base;
6. the base and the candidate are both passed through :func:`os.path.realpath`, which follows every
   symlink (also a dangling one, also one reached through ``..``), and the result must be the base or
   under it, compared component by component (``/srv/data2`` is not under ``/srv/data``);
7. with ``must_exist``, the resolved path must exist.

Limits: the check is point in time. A symlink created between the check and the use (TOCTOU) is not seen;
callers should open the *returned* resolved path, not the model's string, and where an attacker can write
inside the base, open with ``O_NOFOLLOW`` / ``openat``-style APIs as well. On case-insensitive file systems a
path spelled in another case than the base is denied (safe side). Hard links and bind mounts that lead
out of the base are not visible in the path and are not detected. The rules are POSIX-minded; on Windows,
reserved device names (``NUL``, ``CON``) and alternate data streams are not judged.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

__all__ = ["MAX_DECODE_ROUNDS", "MAX_PATH_CHARS", "check_path", "resolve_path"]

#: Longest path value accepted (PATH_MAX on Linux); longer values are denied without further work.
MAX_PATH_CHARS = 4096
#: How many times percent-escapes are decoded; escapes still present afterwards are denied.
MAX_DECODE_ROUNDS = 3

# Only fixed, non-backtracking patterns here: linear on any input.
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_DRIVE = re.compile(r"[A-Za-z]:")
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _base_dir(base: str | os.PathLike[str], allow_absolute: object, must_exist: object) -> str:
    """The real path of the configured base directory; ``ValueError`` for a bad policy."""
    if not isinstance(allow_absolute, bool) or not isinstance(must_exist, bool):
        raise ValueError("path policy allow_absolute and must_exist must be bool")
    if not isinstance(base, str | os.PathLike):
        raise ValueError(f"path policy base must be a str or os.PathLike, not {type(base).__name__}")
    raw = os.fspath(base)
    if not isinstance(raw, str):
        raise ValueError("path policy base must be a text path, not bytes")
    if not raw or "\x00" in raw:
        raise ValueError(f"path policy base {raw!r} is empty or contains NUL")
    real = os.path.realpath(raw)
    if not os.path.isdir(real):
        raise ValueError(f"path policy base {raw!r} is not an existing directory")
    return real


def _decode(value: str) -> tuple[str, str | None]:
    """``value`` with percent-escapes decoded (bounded rounds), or a reason to deny it."""
    decoded = value
    for _ in range(MAX_DECODE_ROUNDS):
        if _ESCAPE.search(decoded) is None:
            return decoded, None
        try:
            decoded = unquote(decoded, errors="strict")
        except UnicodeDecodeError:
            return decoded, "percent-escapes do not decode to UTF-8"
    if _ESCAPE.search(decoded) is not None:
        return decoded, f"percent-escapes still present after {MAX_DECODE_ROUNDS} decoding rounds"
    return decoded, None


def _characters_reason(text: str) -> str | None:
    if "\x00" in text:
        return "NUL byte in path"
    if "\\" in text:
        return "backslash in path"
    for char in text:
        if unicodedata.category(char) in _BAD_CATEGORIES:
            return f"control or format character U+{ord(char):04X} in path"
    return None


def _resolve(value: object, base_real: str, allow_absolute: bool, must_exist: bool) -> Path | str:
    """The resolved path, or the reason to deny (a str)."""
    if not isinstance(value, str):
        return f"path must be a str, not {type(value).__name__}"
    if not value:
        return "empty path"
    if len(value) > MAX_PATH_CHARS:
        return f"path longer than {MAX_PATH_CHARS} characters"
    reason = _characters_reason(value)
    if reason is not None:
        return reason
    decoded, reason = _decode(value)
    if reason is not None:
        return reason
    if decoded != value:
        reason = _characters_reason(decoded)
        if reason is not None:
            return f"percent-encoded {reason}"
        if ".." in decoded.split("/"):
            return "percent-encoded traversal (..)"
    if _DRIVE.match(decoded):
        return "Windows drive prefix in path"
    if os.path.isabs(decoded):
        if not allow_absolute:
            return "absolute path not allowed"
        candidate = decoded
    else:
        candidate = os.path.join(base_real, decoded)
    try:
        real = os.path.realpath(candidate)
    except (OSError, ValueError, RecursionError) as error:  # unreadable component, deep link chain
        return f"path cannot be resolved: {type(error).__name__}"
    prefix = base_real if base_real.endswith(os.sep) else base_real + os.sep
    if real != base_real and not real.startswith(prefix):
        return "path resolves outside the base directory"
    if must_exist and not os.path.exists(real):
        return "path does not exist"
    return Path(real)


def resolve_path(
    value: str, *, base: str | os.PathLike[str], allow_absolute: bool = False, must_exist: bool = False
) -> Path:
    """The real, absolute path ``value`` names inside ``base``.

    Raises :class:`ValueError` whose message is the reason when the value is denied (see the module
    docstring for the rules), and also for a bad policy: ``base`` is not an existing directory, or a flag is
    not a bool.
    Open the returned path, not ``value``: it is what was checked.
    """
    base_real = _base_dir(base, allow_absolute, must_exist)
    result = _resolve(value, base_real, allow_absolute, must_exist)
    if isinstance(result, str):
        raise ValueError(result)
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
