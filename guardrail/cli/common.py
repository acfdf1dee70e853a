"""What every subcommand shares: exit codes, one-line errors, argument types, importing ``MODULE:Type``.

The rule for exit codes: **2** when the command line itself is malformed (an unknown option, a port out of
range, ``MODULE:Type`` without the colon), found without looking at anything outside it; **1** when it is well
formed but what it names is wrong (a path that does not exist, a module that does not import, a policy file
with problems, a port already in use); **0** when all is well. Either way the user sees one line, never a
traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

from guardrail.errors import CommandError

#: The distribution on the Python Package Index (the import name is ``guardrail``).
DISTRIBUTION = "guardrail-llm"

#: The hosted vendors a command's ``--vendor`` names (a client made from the environment, guardrail.Config).
HOSTED_VENDORS = ("openai", "anthropic", "gemini")

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a producer whose reader went away

#: Top-level module of an optional dependency -> the extra that installs it.
EXTRAS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "redis": "redis",
    "torch": "local",
    "transformers": "local",
    "tokenizers": "local",
    "llguidance": "local",
}


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr and exit status 2 (argparse prints the usage too)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def install_hint(extra: str) -> str:
    """The command that installs an extra, e.g. ``pip install 'guardrail-llm[openai]'``."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """The one-line message for a missing optional dependency that was imported without
    :func:`guardrail._optional.require` (which raises :class:`~guardrail.errors.MissingExtra` itself), or ``None``
    when the module is not an optional dependency."""
    top = (error.name or "").partition(".")[0]
    extra = EXTRAS.get(top)
    if extra is None:
        return None
    return f"this command needs {top!r}, which is not installed: {install_hint(extra)}"


def port(text: str) -> int:
    """An argparse type: a TCP port number, 0 (any free port) to 65535."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port number (0-65535)")
    return number


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number, ``minimum`` or more."""

    def whole_number(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"{number} is less than {minimum}")
        return number

    return whole_number


def target(text: str) -> str:
    """An argparse type: ``MODULE:Type`` (e.g. ``myapp.models:Ticket``), checked for form only."""
    module_name, colon, attribute = text.partition(":")
    if not colon or not module_name or not attribute:
        raise argparse.ArgumentTypeError(f"expected MODULE:Type such as myapp.models:Ticket, got {text!r}")
    return text


def named_target(text: str) -> tuple[str, str]:
    """An argparse type: ``NAME=MODULE:Type``, as ``(NAME, MODULE:Type)``."""
    name, equals, rest = text.partition("=")
    if not equals or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=MODULE:Type such as ticket_triage=myapp:Ticket, got {text!r}")
    return name.strip(), target(rest)


@contextlib.contextmanager
def importable_cwd() -> Iterator[None]:
    """Within the block, modules in the current directory can be imported, as under ``python -m`` (the console
    script does not put the current directory on ``sys.path``); ``sys.path`` is restored afterwards."""
    cwd = os.getcwd()
    if cwd in sys.path or "" in sys.path:
        yield
        return
    sys.path.insert(0, cwd)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(cwd)


def import_target(text: str) -> Any:
    """The object named by ``MODULE:Attribute`` (dotted attributes allowed); :class:`CommandError` if there is none.

    The module is imported from the current directory or the installed packages; an error raised while the
    module runs (a syntax error, an exception at import) is reported with its type, as one line.
    """
    module_name, _, attribute = target(text).partition(":")
    try:
        with importable_cwd():
            value: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and (module_name == error.name or module_name.startswith(error.name + ".")):
            raise CommandError(f"cannot import {module_name!r}: no such module in the current directory or "
                               "the installed packages") from None
        raise CommandError(f"cannot import {module_name!r}: {error}") from None
    except Exception as error:  # whatever the user's module raises while it runs
        raise CommandError(f"cannot import {module_name!r}: {type(error).__name__}: {error}") from None
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise CommandError(f"{module_name!r} has no attribute {attribute!r}") from None
    return value


def is_type_expression(value: Any) -> bool:
    """Whether ``value`` can be a contract: a class or a typing form such as ``list[Item]`` or ``Annotated[...]``."""
    return isinstance(value, type) or typing.get_origin(value) is not None


def toml_files(path: str, what: str) -> list[Path]:
    """The ``*.toml`` files to check at ``path`` (a directory, or one file of any name).

    :class:`CommandError` when the path does not exist or is a directory without any ``*.toml`` file: a check
    that read nothing must not pass. ``what`` names the files in the message (``"policy files"``).
    """
    location = Path(path)
    if not location.exists():
        raise CommandError(f"{path}: does not exist")
    if not location.is_dir():
        return [location]
    files = sorted(location.glob("*.toml"))
    if not files:
        raise CommandError(f"{path}: no {what} (*.toml) in this directory; nothing to check")
    return files


def console(stderr: bool = False) -> Any:
    """A rich console for a command's output whose closed pipe ends the command like print's does (status 141).

    rich's own reaction to a reader that went away is exit status 1, which would read as "invalid input".
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console(stderr=stderr)


def write_output(path: str, text: str) -> None:
    """Write a report to ``path``; :class:`CommandError` (one line) when it cannot be written."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"{path}: cannot be written: {error.strerror or error}") from None


def env_client(vendor: str | None) -> Any:
    """The sync SDK client the environment configures (``vendor`` overrides ``GUARDRAIL_VENDOR``)."""
    from guardrail.call.config import Config
    from guardrail.errors import GuardrailError

    environ = dict(os.environ)
    if vendor is not None:
        environ["GUARDRAIL_VENDOR"] = vendor
    try:
        client = Config.from_env(environ).client
    except (GuardrailError, ImportError):
        raise
    except Exception as error:  # the SDK refusing to build a client (no API key...): one line, not a traceback
        raise CommandError(f"cannot make the {environ.get('GUARDRAIL_VENDOR') or 'vendor'} client: "
                           f"{type(error).__name__}: {error}") from None
    if client is None:
        raise CommandError("no vendor configured: set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY (and "
                           "*_BASE_URL for a compatible server or the emulator), or pass --vendor")
    return client
