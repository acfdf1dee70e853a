"""``guardrail policy check`` and ``guardrail rules check``: validate configuration files before they are used.

Both take a directory (every ``*.toml`` in it) or a single file, print each problem as
``file:line: key: message`` and a summary, and exit 1 on any problem. A path that does not exist and a
directory with nothing to check are errors too (one line, exit 1): a check that read nothing must not pass.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from guardrail.cli.common import importable_cwd, named_target, toml_files
from guardrail.errors import CommandError

POLICY_DESCRIPTION = """\
Validate per-tool policy files: every *.toml in a directory, or one file. Each problem is printed with its
file, line and key; exit status 1 if there is any, or if the path does not exist or holds no *.toml file;
2 on a usage error.
"""

RULES_DESCRIPTION = """\
Validate the rule engine's rule sets: every *.toml in a directory, or one file. Each problem is printed with
its file, line and key. With --contract NAME=MODULE:Type, the rule set named NAME is also checked against that
contract (unknown fields, values the contract refuses, required fields nothing sets); MODULE is imported from
the current directory or the installed packages. Exit status 1 if there is any problem, or if the path does
not exist or holds no *.toml file; 2 on a usage error (such as --contract without NAME=).
"""


def register_policy(commands: Any) -> None:
    """Add ``policy check`` to the subcommands."""
    policy = commands.add_parser("policy", help="check per-tool policy files (policy check PATH)",
                                 description="Work with per-tool policy files.")
    actions = policy.add_subparsers(dest="action", required=True, metavar="ACTION", title="actions")
    check = actions.add_parser("check", help="validate a policy file, or every *.toml policy in a directory",
                               description=POLICY_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("path", nargs="?", default="policies", metavar="PATH",
                       help="a directory of *.toml policies or one policy file (default: policies)")
    check.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    check.set_defaults(run=run_policy_check, prog=check.prog)


def register_rules(commands: Any) -> None:
    """Add ``rules check`` to the subcommands."""
    rules = commands.add_parser("rules", help="check the rule engine's rule sets (rules check PATH)",
                                description="Work with the rule engine's rule sets (the last tier of the "
                                "degradation chain).")
    actions = rules.add_subparsers(dest="action", required=True, metavar="ACTION", title="actions")
    check = actions.add_parser("check", help="validate a rule set, or every *.toml rule set in a directory",
                               description=RULES_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("path", nargs="?", default="fallbacks", metavar="PATH",
                       help="a directory of *.toml rule sets or one rule-set file (default: fallbacks)")
    check.add_argument("--contract", action="append", default=[], type=named_target, metavar="NAME=MODULE:Type",
                       help="check the rule set NAME against this contract (repeatable)")
    check.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    check.set_defaults(run=run_rules_check, prog=check.prog)


def run_policy_check(args: argparse.Namespace) -> int:
    """Check the policies at ``args.path``; 1 on any problem."""
    from guardrail.errors import PolicyError
    from guardrail.problems import print_check
    from guardrail.tools.policy.loader import check_policies, load_policy

    toml_files(args.path, "policy files")
    path = Path(args.path)
    try:
        if path.is_dir():
            found, problems = check_policies(path)
            tools = list(found)
        else:
            try:
                tools, problems = [load_policy(path).tool], []
            except PolicyError as error:
                tools, problems = [], error.problems
    except OSError as error:  # unreadable file, a directory named *.toml
        raise CommandError(f"{error.filename or args.path}: cannot be read: {error.strerror or error}") from None
    return print_check(tools, problems, noun=("policy", "policies"), key="tools", as_json=args.json,
                       out=sys.stdout, err=sys.stderr)


def run_rules_check(args: argparse.Namespace) -> int:
    """Check the rule sets at ``args.path`` (and their contracts); 1 on any problem."""
    from guardrail.chain.fallback import rules_check

    toml_files(args.path, "rule sets")
    with importable_cwd():
        return rules_check(args.path, dict(args.contract), as_json=args.json)
