"""The ``guardrail`` command: ``demo``, ``schema``, ``emulator``.

    guardrail demo                      triage sample inquiries through the whole pipeline (emulator without keys)
    guardrail schema MODULE:Type        the schema a vendor would get for a contract, and the CompileReport
    guardrail emulator --port 8080      the vendor emulator as a standalone server (--script FILE)
    guardrail policy check policies/    validate every per-tool policy file (exit 1 on any problem)
    guardrail rules check fallbacks/    validate every rule set of the rule engine (exit 1 on any problem)

``--json`` gives machine-readable output for ``demo`` and ``schema``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

import structlog
from rich.console import Console
from rich.table import Table

VENDORS = ("openai", "anthropic", "vllm", "sglang", "llamacpp", "ollama")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="guardrail", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser("demo", help="triage sample customer inquiries through the whole pipeline",
                               description="Triage English and Korean customer inquiries into typed tickets and show "
                               "what each layer did. Uses OPENAI_API_KEY / ANTHROPIC_API_KEY when set, otherwise the "
                               "bundled vendor emulator replaying realistic vendor answers.")
    demo.add_argument("--vendor", choices=("openai", "anthropic"), default="openai",
                      help="which SDK to drive against the emulator (default openai)")
    demo.add_argument("--json", action="store_true", help="print the rows as JSON")

    schema = commands.add_parser("schema", help="show the lowered schema and CompileReport for a contract",
                                 description="Print the JSON Schema guardrail would send for a contract type, and "
                                 "what the vendor enforces, what guardrail post-validates and what was rejected.")
    schema.add_argument("target", metavar="MODULE:Type", help="e.g. myapp.models:Ticket")
    schema.add_argument("--vendor", choices=VENDORS, default="openai")
    schema.add_argument("--model", default="", help="model name (capabilities differ by model family)")
    schema.add_argument("--mode", choices=("native", "tool", "json", "prompt"), default=None,
                        help="the mode to lower for (default: the strongest that works)")
    schema.add_argument("--json", action="store_true", help="print JSON")

    policy = commands.add_parser("policy", help="work with per-tool policy files")
    policy_commands = policy.add_subparsers(dest="policy_command", required=True, metavar="ACTION")
    check = policy_commands.add_parser("check", help="validate every *.toml policy in a directory",
                                       description="Validate every policy file; print each problem with its file, "
                                       "line and key; exit 1 if there is any.")
    check.add_argument("directory", nargs="?", default="policies")
    check.add_argument("--json", action="store_true", help="print the problems as JSON")

    rules = commands.add_parser("rules", help="work with the rule engine's rule sets (fallbacks/)")
    rules_commands = rules.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    rules_check = rules_commands.add_parser("check", help="validate every *.toml rule set in a directory",
                                            description="Validate every rule set; print each problem with its "
                                            "file, line and key; exit 1 if there is any.")
    rules_check.add_argument("directory", nargs="?", default="fallbacks")
    rules_check.add_argument("--contract", action="append", default=[], metavar="NAME=MODULE:Type",
                             help="check the rule set NAME against this contract (repeatable)")
    rules_check.add_argument("--json", action="store_true", help="print the problems as JSON")

    commands.add_parser("emulator", help="run the vendor emulator as a standalone server (--script FILE; "
                        "see guardrail emulator --help)", add_help=False)

    # guardrail logs a structlog event per call and attempt; the command shows its own output instead.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
                        logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["emulator"]:  # its own parser and --help
        from guardrail.testing.__main__ import main as emulator_main

        return emulator_main(given[1:], prog="guardrail emulator")
    args = parser.parse_args(given)
    if args.command == "schema":
        return _schema(args)
    if args.command == "policy":
        return _policy_check(args)
    if args.command == "rules":
        from guardrail.rules import rules_check as run_rules_check

        contracts = dict(item.split("=", 1) for item in args.contract if "=" in item)
        return run_rules_check(args.directory, contracts, as_json=args.json)
    return _demo(args)


def _policy_check(args: argparse.Namespace) -> int:
    from guardrail.policy.loader import check_policies

    found, problems = check_policies(args.directory)
    if args.json:
        print(json.dumps({"ok": not problems, "tools": sorted(found),
                          "problems": [{"file": p.file, "line": p.line, "key": p.key, "message": p.message}
                                       for p in problems]}, indent=2))
    else:
        for problem in problems:
            print(str(problem), file=sys.stderr)
        print(f"{len(found)} valid policies ({', '.join(sorted(found)) or 'none'}); {len(problems)} problems")
    return 1 if problems else 0


def _demo(args: argparse.Namespace) -> int:
    from guardrail import demo

    console = Console(stderr=args.json)
    live = demo.live_config()
    server = None
    if live is not None:
        config, source = live
    else:
        server, config = demo.emulated(args.vendor)
        source = (f"No OPENAI_API_KEY or ANTHROPIC_API_KEY set: running against the bundled vendor emulator "
                  f"(real {args.vendor} SDK, local HTTP server) replaying recorded vendor answers.")
    console.print(f"[bold]{source}[/bold]")
    try:
        with console.status("Triaging inquiries..."):
            rows = demo.run(config)
    finally:
        if server is not None:
            server.stop()
    if args.json:
        print(demo.as_json(rows, "live" if live else "emulator"))
        return 0
    table = Table(title="guardrail demo: customer inquiries -> typed tickets", show_lines=True)
    table.add_column("inquiry", max_width=28)
    table.add_column("the vendor returned", max_width=40, overflow="fold")
    table.add_column("what guardrail did", max_width=44)
    table.add_column("typed result", max_width=38)
    for row in rows:
        result = (f"urgency={row.result.urgency}\ncategory={row.result.category.value}\n{row.result.summary}"
                  if row.result else f"[red]{row.error}[/red]")
        table.add_row(row.inquiry, _short(row.raw), "\n".join(row.steps), result)
    console.print(table)
    ok = sum(row.result is not None for row in rows)
    console.print(f"{ok}/{len(rows)} inquiries became valid tickets.")
    return 0


def _short(text: str, limit: int = 200) -> str:
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _schema(args: argparse.Namespace) -> int:
    from guardrail.contract import compile_contract
    from guardrail.modes import capabilities, plans, schema_name
    from guardrail.schema.lower import lower

    output_type = _import(args.target)
    contract = compile_contract(output_type)
    provider = args.vendor
    caps = capabilities(provider, args.model)
    chosen = plans(contract.schema, schema_name(output_type), caps)
    mode = args.mode or chosen[0].mode
    if mode == "native":
        lowered = lower(contract.schema, caps.native_dialect)
    elif mode == "tool" and caps.strict_tool:
        lowered = lower(contract.schema, caps.native_dialect)
        if not lowered.report.ok:
            lowered = lower(contract.schema, "advisory", wrap_root=True)
    else:
        lowered = lower(contract.schema, "advisory", wrap_root=mode in {"tool", "json"})
    payload: dict[str, Any] = {"target": args.target, "vendor": provider, "mode": mode,
                               "modes_available": [p.mode for p in chosen], "schema": lowered.schema,
                               "wrapped": lowered.wrapped, "report": lowered.report.to_dict()}
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=2))
        return 0 if lowered.report.ok else 1
    console = Console()
    console.print(f"[bold]{args.target}[/bold] for {provider}, mode [bold]{mode}[/bold] "
                  f"(guardrail would try: {', '.join(payload['modes_available'])})")
    console.print_json(json.dumps(lowered.schema, ensure_ascii=False))
    table = Table(title=f"CompileReport ({lowered.report.dialect}): "
                  f"{'ok' if lowered.report.ok else 'REJECTED - this mode cannot carry the contract'}")
    for column in ("path", "keyword", "action", "detail"):
        table.add_column(column, overflow="fold")
    colours = {"enforced": "green", "lowered": "yellow", "post_validated": "cyan", "rejected": "red"}
    for entry in lowered.report.entries:
        table.add_row(entry.path or "/", entry.keyword, f"[{colours[entry.action]}]{entry.action}[/]", entry.detail)
    console.print(table)
    return 0 if lowered.report.ok else 1


def _import(target: str) -> Any:
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise SystemExit(f"guardrail schema: expected MODULE:Type, got {target!r}")
    sys.path.insert(0, "")
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise SystemExit(f"guardrail schema: cannot import {module_name!r}: {error}") from None
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise SystemExit(f"guardrail schema: {module_name!r} has no {attribute!r}") from None
    return value


if __name__ == "__main__":
    raise SystemExit(main())
