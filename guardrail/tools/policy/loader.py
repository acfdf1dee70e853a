"""Loading policy files (``policies/*.toml``) with errors that name the file, the line and the key.

``load_policy(path)`` reads one file; ``load_policies(directory)`` reads every ``*.toml`` in a directory and
refuses two files for one tool; ``check_policies(directory)`` returns every problem instead of stopping at the
first (what ``guardrail policy check`` prints). A file's name does not have to match its ``tool``, but the
``tool`` key is required and matched exactly.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from guardrail.errors import PolicyError
from guardrail.problems import Locator, Problem
from guardrail.tools.policy.model import Policy

#: Policy files larger than this are refused unread.
MAX_POLICY_BYTES = 1024 * 1024


def parse_policy(text: str, source: str = "<policy>", *, base_dir: str | Path | None = None) -> Policy:
    """Parse and validate one policy's TOML text; :class:`PolicyError` on any problem.

    A relative ``path`` base is anchored at ``base_dir`` (:func:`load_policy` passes the file's directory;
    default: the current directory at the time of parsing, never at the time of a call).
    """
    anchor = Path(base_dir) if base_dir is not None else Path.cwd()
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise PolicyError([Problem(source, None, "", "nested too deeply")]) from None
    except tomllib.TOMLDecodeError as error:
        line = getattr(error, "lineno", None) or _line_from_message(str(error))
        raise PolicyError([Problem(source, line, "", f"not valid TOML: {error}")]) from None
    try:
        return Policy.model_validate(data, context={"policy_dir": anchor.absolute()}).located(source, text)
    except RecursionError:
        raise PolicyError([Problem(source, None, "", "nested too deeply")]) from None
    except ValidationError as error:
        problems = []
        for item in error.errors():
            key = ".".join(str(part) for part in item["loc"])
            problems.append(Problem(source, Locator(text).line_of(item["loc"]), key, _message(item)))
        raise PolicyError(problems) from None


def load_policy(path: str | Path) -> Policy:
    """Read and validate one policy file."""
    file = Path(path)
    try:
        size = file.stat().st_size
    except OSError as error:
        raise PolicyError([Problem(str(file), None, "", f"cannot be read: {error.strerror or error}")]) from None
    if size > MAX_POLICY_BYTES:
        raise PolicyError([Problem(str(file), None, "", f"larger than {MAX_POLICY_BYTES} bytes")])
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise PolicyError([Problem(str(file), None, "", f"not UTF-8: {error}")]) from None
    except OSError as error:
        raise PolicyError([Problem(str(file), None, "", f"cannot be read: {error.strerror or error}")]) from None
    return parse_policy(text, str(file), base_dir=file.absolute().parent)


def check_policies(directory: str | Path) -> tuple[dict[str, Policy], list[Problem]]:
    """Every valid policy in ``directory`` by tool name, and every problem found (all files are read)."""
    found: dict[str, Policy] = {}
    where: dict[str, str] = {}
    problems: list[Problem] = []
    files = sorted(Path(directory).glob("*.toml"))
    if not Path(directory).is_dir():
        return found, [Problem(str(directory), None, "", "not a directory")]
    for file in files:
        try:
            policy = load_policy(file)
        except PolicyError as error:
            problems.extend(error.problems)
            continue
        if policy.tool in found:
            problems.append(Problem(str(file), Locator(file.read_text(encoding="utf-8")).line("tool"), "tool",
                                    f"tool {policy.tool!r} already has a policy in {where[policy.tool]}"))
            continue
        found[policy.tool] = policy
        where[policy.tool] = str(file)
    return found, problems


def load_policies(directory: str | Path) -> dict[str, Policy]:
    """Every policy in ``directory`` by tool name; :class:`PolicyError` listing every problem if any."""
    found, problems = check_policies(directory)
    if problems:
        raise PolicyError(problems)
    return found


def _message(item: Any) -> str:
    message = str(item.get("msg", "invalid"))
    if item.get("type") == "extra_forbidden":
        return "unknown key (check the spelling; see guardrail.tools.policy.model for the keys)"
    return message


def _line_from_message(message: str) -> int | None:
    match = re.search(r"line (\d+)", message)
    return int(match.group(1)) if match else None
