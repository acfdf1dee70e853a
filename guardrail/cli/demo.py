"""``guardrail demo``: triage sample customer inquiries through the whole pipeline (see :mod:`guardrail.cli.triage`)."""

from __future__ import annotations

import argparse
from typing import Any

from guardrail.cli import common
from guardrail.cli.common import HOSTED_VENDORS, install_hint
from guardrail.errors import CommandError

DESCRIPTION = """\
Triage English and Korean customer inquiries into typed tickets and show what each layer did (repairs,
feedback rounds, transport retries). Uses OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY when one is set
(GUARDRAIL_VENDOR picks between them), otherwise the bundled vendor emulator replaying realistic vendor answers:
no key, no network. Needs the SDK of the vendor it drives:
  {openai}
  {anthropic}
  {gemini}
""".format(openai=install_hint("openai"), anthropic=install_hint("anthropic"), gemini=install_hint("gemini"))


def register(commands: Any) -> None:
    """Add ``demo`` to the subcommands."""
    parser = commands.add_parser("demo", help="triage sample customer inquiries through the whole pipeline",
                                 description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vendor", choices=HOSTED_VENDORS, default="openai",
                        help="which SDK to drive against the emulator (default: openai)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON on stdout")
    parser.set_defaults(run=run, prog=parser.prog)


def run(args: argparse.Namespace) -> int:
    """Run the demo; 0 when it ran (a row that failed is part of what it shows)."""
    from guardrail.cli import triage as demo

    console = common.console(stderr=args.json)
    try:
        live = demo.live_config()
    except ValueError as error:  # GUARDRAIL_VENDOR names no vendor
        raise CommandError(str(error)) from None
    server = None
    if live is not None:
        config, source = live
    else:
        server, config = demo.emulated(args.vendor)
        source = (f"No OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY set: running against the bundled vendor "
                  f"emulator (real {args.vendor} SDK, local HTTP server) replaying recorded vendor answers.")
    try:
        console.print(f"[bold]{source}[/bold]")
        with console.status("Triaging inquiries..."):
            rows = demo.run(config)
    finally:
        if server is not None:
            server.stop()
    if args.json:
        print(demo.as_json(rows, "live" if live else "emulator"))
        return 0
    console.print(table(rows))
    ok = sum(row.result is not None for row in rows)
    console.print(f"{ok}/{len(rows)} inquiries became valid tickets.")
    return 0


def table(rows: list[Any]) -> Any:
    """The rich table of a demo run: inquiry, what the vendor returned, what guardrail did, the typed result."""
    from rich.table import Table

    out = Table(title="guardrail demo: customer inquiries -> typed tickets", show_lines=True)
    out.add_column("inquiry", max_width=28)
    out.add_column("the vendor returned", max_width=40, overflow="fold")
    out.add_column("what guardrail did", max_width=44)
    out.add_column("typed result", max_width=38)
    for row in rows:
        result = (f"urgency={row.result.urgency}\ncategory={row.result.category.value}\n{row.result.summary}"
                  if row.result else f"[red]{row.error}[/red]")
        out.add_row(row.inquiry, _short(row.raw), "\n".join(row.steps), result)
    return out


def _short(text: str, limit: int = 200) -> str:
    text = text.replace("\n", "⏎")
    return text if len(text) <= limit else text[: limit - 1] + "…"
