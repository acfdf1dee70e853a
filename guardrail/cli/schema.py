"""``guardrail schema MODULE:Type``: the JSON Schema a vendor would get for a contract, and its CompileReport."""

from __future__ import annotations

import argparse
import json
from typing import Any

from guardrail.cli import common
from guardrail.cli.common import HOSTED_VENDORS, import_target, is_type_expression, target
from guardrail.errors import CommandError

#: The hosted vendors, then the self-hosted server kinds (each lowered for its own dialect): the kinds of
#: ``guardrail.vendors.profiles.SERVER_KINDS``, written out so that ``--help`` does not load the profiles
#: (tests/cli/test_cli.py checks they agree).
VENDORS = (*HOSTED_VENDORS, "vllm", "sglang", "llamacpp", "ollama")
#: ``--vendor`` names that are not the provider's own name (its ``gen_ai.provider.name``), and the model each is
#: lowered for without ``--model`` (Gemini's rows are by model family: no model would be an unknown one).
_PROVIDERS = {"gemini": "gcp.gemini"}
_DEFAULT_MODELS = {"gemini": "gemini-2.5-flash"}

DESCRIPTION = """\
Print the JSON Schema guardrail would send for a contract type, and the CompileReport: which keywords the
vendor enforces, which guardrail lowers or checks after the answer (post_validated), and which make a mode
unusable (rejected). MODULE is imported from the current directory or the installed packages.

exit status: 0 the chosen mode can carry the contract; 1 it cannot (rejected), or MODULE:Type cannot be
imported or is not a type; 2 usage error.
"""


def register(commands: Any) -> None:
    """Add ``schema`` to the subcommands."""
    parser = commands.add_parser("schema", help="show the lowered schema and CompileReport for a contract",
                                 description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="MODULE:Type", type=target, help="the contract, e.g. myapp.models:Ticket")
    parser.add_argument("--vendor", choices=VENDORS, default="openai", help="the vendor to lower for (default: openai)")
    parser.add_argument("--model", default="", help="model name (capabilities differ by model family; gemini: "
                        "default gemini-2.5-flash)")
    parser.add_argument("--mode", choices=("native", "tool", "json", "prompt"), default=None,
                        help="the mode to lower for (default: the strongest that works)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.set_defaults(run=run, prog=parser.prog)


def contract_type(text: str) -> Any:
    """The type named by ``MODULE:Type``; :class:`CommandError` if it is missing or not a type."""
    value = import_target(text)
    if not is_type_expression(value):
        raise CommandError(f"{text!r} is a {type(value).__name__}, not a type (a pydantic model, dataclass, "
                           "TypedDict or a typing form such as list[Item])")
    return value


def run(args: argparse.Namespace) -> int:
    """Print the lowered schema and report; 1 when the mode cannot carry the contract."""
    from guardrail.contract import compile_contract
    from guardrail.schema.lower import lower
    from guardrail.schema.order import late_reasoning
    from guardrail.vendors.plans import plans, schema_name
    from guardrail.vendors.profiles import capabilities

    output_type = contract_type(args.target)
    try:
        contract = compile_contract(output_type)
        name = schema_name(output_type)
    except Exception as error:  # pydantic cannot build a schema for it (an arbitrary class, a forward reference)
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise CommandError(f"{args.target!r} cannot be a contract: {first_line}") from None
    caps = capabilities(_PROVIDERS.get(args.vendor, args.vendor), args.model or _DEFAULT_MODELS.get(args.vendor, ""))
    chosen = plans(contract.schema, name, caps)
    mode = args.mode or chosen[0].mode
    if mode == "native":
        lowered = lower(contract.schema, caps.native_dialect)
    elif mode == "tool" and caps.strict_tool:
        lowered = lower(contract.schema, caps.native_dialect)
        if not lowered.report.ok:
            lowered = lower(contract.schema, "advisory", wrap_root=True)
    else:
        lowered = lower(contract.schema, "advisory", wrap_root=mode in {"tool", "json"})
    payload: dict[str, Any] = {"target": args.target, "vendor": args.vendor, "mode": mode,
                               "modes_available": [p.mode for p in chosen], "schema": lowered.schema,
                               "wrapped": lowered.wrapped, "report": lowered.report.to_dict(),
                               "warnings": [str(late) for late in late_reasoning(contract.schema)]}
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        _print_table(payload, lowered.report)
    return 0 if lowered.report.ok else 1


def _print_table(payload: dict[str, Any], report: Any) -> None:
    from rich.table import Table

    console = common.console()
    console.print(f"[bold]{payload['target']}[/bold] for {payload['vendor']}, mode [bold]{payload['mode']}[/bold] "
                  f"(guardrail would try: {', '.join(payload['modes_available'])})")
    console.print_json(json.dumps(payload["schema"], ensure_ascii=False))
    table = Table(title=f"CompileReport ({report.dialect}): "
                  f"{'ok' if report.ok else 'REJECTED - this mode cannot carry the contract'}")
    for column in ("path", "keyword", "action", "detail", "described"):
        table.add_column(column, overflow="fold")
    colours = {"enforced": "green", "lowered": "yellow", "post_validated": "cyan", "rejected": "red"}
    for entry in report.entries:
        table.add_row(entry.path or "/", entry.keyword, f"[{colours[entry.action]}]{entry.action}[/]", entry.detail,
                      entry.described)
    console.print(table)
    for warning in payload["warnings"]:
        console.print(f"[yellow]warning:[/] {warning}", markup=True, highlight=False)
