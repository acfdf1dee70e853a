"""``guardrail eval CASES.jsonl --contract MODULE:Type --model MODEL``: the experiment matrix over your cases.

Every case runs under every ``--modes`` x ``--model``, ``--concurrency`` at a time, through the client the
environment configures (so the emulator, any compatible server or the real vendors), or through a decorated
function (``--function``), and in the ``local`` mode through a local model (``--local-model``); the report says,
per run and per slice, how many cases were valid, repaired locally, re-asked or failed, what they cost and how
long they took, and how the values compare with the cases' expected ones (:mod:`guardrail.evals`).
``--budget-usd``/``--budget-tokens`` bound the whole run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from guardrail.cli.common import HOSTED_VENDORS, at_least, target
from guardrail.cli.common import env_client as _client
from guardrail.cli.common import write_output as _write
from guardrail.errors import CommandLineError

DESCRIPTION = """\
Run every case of CASES.jsonl (one {"messages": [...], "id"?, "slice"?, "expected"?} per line) under every mode
and model, and report per run and per slice: valid, locally_repaired, reasked, failed (by kind), vendor_calls,
tokens, cost_usd, latency p50/p99, semantic rejections by rule, empty-but-valid values, and exact-match and
per-field accuracy against "expected". The client comes from the environment (OPENAI_API_KEY / ANTHROPIC_API_KEY,
OPENAI_BASE_URL / ANTHROPIC_BASE_URL, GUARDRAIL_VENDOR). Each finished case is appended to a state file
(--state, or OUT.cases.jsonl with --json OUT), so a run stopped with Ctrl-C keeps its results and --resume runs
only the rest.

--function MODULE:fn runs a @guardrail.structured function instead: each case is {"input": ...} (a JSON object:
its keyword arguments; another value: its one argument); the contract, prompt and rules are the function's own,
--model replaces its model per run, and its client is its own unless --vendor is given. --modes local adds one
run through a local transformers model with constrained decoding (--local-model: a save_pretrained directory or
a Hugging Face id), with vendor_calls 0 and cost 0. --budget-usd/--budget-tokens bound the whole run: once the
finished cases spent it, no case starts; the rest are reported as skipped_budget (the calls in flight finish).

exit status: 0 the report was made; 1 the cases, contract, function or client cannot be used; 2 usage error;
3 the report was made but the budget cut the run (skipped_budget > 0; --resume runs the rest);
130 interrupted (the state file keeps what was done).
"""

MODES = ("auto", "native", "tool", "json", "prompt", "local")
#: The exit status of a run the budget cut: the report was made, some cases were not run.
CUT_BY_BUDGET = 3


def register(commands: Any) -> None:
    """Add ``eval`` to the subcommands."""
    parser = commands.add_parser("eval", help="run your cases under each mode x model and report (an experiment)",
                                 description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", metavar="CASES.jsonl", help="one case per line")
    parser.add_argument("--contract", default=None, metavar="MODULE:Type",
                        help="the contract, e.g. myapp.models:Ticket, or a JSON Schema file (not with --function)")
    parser.add_argument("--function", default=None, type=target, metavar="MODULE:fn",
                        help="a @guardrail.structured function; the cases give its arguments as \"input\"")
    parser.add_argument("--model", action="append", default=[], metavar="MODEL",
                        help="a model (repeatable; needed by every mode but local)")
    parser.add_argument("--vendor", choices=HOSTED_VENDORS, default=None,
                        help="the vendor SDK (default: GUARDRAIL_VENDOR, else whichever API key is set)")
    parser.add_argument("--api", choices=("chat", "responses", "messages", "gemini"), default=None,
                        help="the API to call (default: the client's own)")
    parser.add_argument("--modes", type=_modes, default=["auto"], metavar="MODE,...",
                        help=f"modes to compare, from {', '.join(MODES)} (default: auto, guardrail's choice)")
    parser.add_argument("--local-model", default=None, metavar="PATH_OR_ID",
                        help="the local mode's model: a transformers save_pretrained directory or a Hub id")
    parser.add_argument("--budget-usd", type=_dollars, default=None, metavar="X",
                        help="stop starting cases once the run has spent X US dollars")
    parser.add_argument("--budget-tokens", type=at_least(1), default=None, metavar="N",
                        help="stop starting cases once the run has used N tokens (input + output)")
    parser.add_argument("--rules", action="append", default=[], type=target, metavar="MODULE:attr",
                        help="semantic rules every answer must meet: a Rule or a list of them (repeatable)")
    parser.add_argument("--prompt-version", default=None, metavar="V",
                        help="recorded with each call (with --function, the function's own version= is)")
    parser.add_argument("--max-tokens", type=at_least(1), default=None, metavar="N", help="output-token limit")
    parser.add_argument("--concurrency", type=at_least(1), default=4, metavar="N", help="calls at a time (default 4)")
    parser.add_argument("--json", metavar="OUT", default=None, help="write the JSON report to OUT ('-': stdout)")
    parser.add_argument("--html", metavar="OUT.html", default=None,
                        help="write the report as one self-contained HTML page (charts, worst cases)")
    parser.add_argument("--state", metavar="PATH", default=None,
                        help="where finished cases are appended (default: OUT.cases.jsonl with --json OUT)")
    parser.add_argument("--resume", action="store_true", help="keep the state file's results; run only the rest")
    parser.set_defaults(run=run, prog=parser.prog)


def _modes(text: str) -> list[str]:
    found = [part.strip() for part in text.split(",") if part.strip()]
    wrong = [mode for mode in found if mode not in MODES]
    if wrong or not found:
        raise argparse.ArgumentTypeError(f"unknown mode {wrong[0] if wrong else text!r}; use {', '.join(MODES)}")
    return list(dict.fromkeys(found))


def _dollars(text: str) -> float:
    try:
        number = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of dollars") from None
    if not 0 <= number < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not 0 or more dollars")
    return number


def _check(args: argparse.Namespace) -> None:
    """What argparse cannot check alone: which options go together."""
    if (args.contract is None) == (args.function is None):
        raise CommandLineError("give --contract MODULE:Type (messages cases) or --function MODULE:fn (input cases)")
    if args.function is not None and args.rules:
        raise CommandLineError("--rules is for messages cases: a decorated function carries its own rules")
    if any(mode != "local" for mode in args.modes) and not args.model:
        raise CommandLineError(f"the modes {', '.join(m for m in args.modes if m != 'local')} need --model MODEL")
    if ("local" in args.modes) != (args.local_model is not None):
        raise CommandLineError("--modes local and --local-model PATH_OR_ID go together")


def run(args: argparse.Namespace) -> int:
    """Run the matrix and write the report."""
    from guardrail.cli.common import import_target
    from guardrail.cli.replay import load_contract, load_rules
    from guardrail.evals.cases import load_cases
    from guardrail.evals.report import build_report
    from guardrail.evals.run import run_matrix
    from guardrail.outcome import Budget
    from guardrail.replay.record import contract_name

    _check(args)
    state = args.state or (f"{args.json}.cases.jsonl" if args.json not in (None, "-") else None)
    if args.resume and state is None:
        raise CommandLineError("--resume needs the state file: give --state PATH or --json OUT")
    cases = load_cases(args.cases)
    function = None
    if args.function is not None:
        from guardrail.evals.function import structured_function

        function = structured_function(import_target(args.function), args.function)
        contract = function.output_type
    else:
        contract = load_contract(args.contract)
    rules = load_rules(args.rules)
    vendor_modes = any(mode != "local" for mode in args.modes)
    client = _client(args.vendor) if vendor_modes and (function is None or args.vendor is not None) else None
    local_model = None
    if args.local_model is not None:
        from guardrail.local.load import load_local_model

        local_model = load_local_model(args.local_model)
    budget = None
    if args.budget_usd is not None or args.budget_tokens is not None:
        budget = Budget(max_tokens=args.budget_tokens, max_usd=args.budget_usd)
    if state is not None and not args.resume and Path(state).exists():
        Path(state).unlink()  # a fresh run starts a fresh state file
    show = _progress if sys.stderr.isatty() else None
    results = run_matrix(client, cases, None if function is not None else contract, models=args.model,
                         modes=args.modes, api=args.api, rules=rules, prompt_version=args.prompt_version,
                         max_tokens=args.max_tokens, concurrency=args.concurrency, state=state, resume=args.resume,
                         progress=show, function=function, local_model=local_model,
                         local_name=args.local_model or "local", budget=budget)
    if show is not None:
        print(file=sys.stderr)
    report = build_report(results, contract=contract_name(contract), cases=str(args.cases),
                          function=args.function, prompt_version=args.prompt_version, state=state,
                          budget={"max_usd": args.budget_usd, "max_tokens": args.budget_tokens} if budget else None)
    status = CUT_BY_BUDGET if report["cut_by_budget"] else 0
    if report["cut_by_budget"]:
        print(f"guardrail eval: the budget cut the run: {report['skipped_budget']} cases were not run "
              "(skipped_budget; --resume with a larger budget runs them)", file=sys.stderr)
    text = json.dumps(report, ensure_ascii=False, indent=2)
    if args.html is not None:
        from guardrail.evals.html import render_html

        _write(args.html, render_html(report, results))
    if args.json == "-":
        print(text)
        return status
    _print(report)
    if args.json is not None:
        _write(args.json, text + "\n")
    return status


def _progress(done: int, total: int) -> None:
    print(f"\rguardrail eval: {done}/{total} cases", end="", file=sys.stderr, flush=True)


def _print(report: dict[str, Any]) -> None:
    columns = ("mode", "model", "cases", "valid", "locally_repaired", "reasked", "failed", "vendor_calls",
               "latency_p50_s", "exact_match", *(("skipped_budget",) if report["cut_by_budget"] else ()))
    rows = [[_cell(run.get(name)) for name in columns] for run in report["runs"]]
    widths = [max(len(name), *(len(row[i]) for row in rows)) for i, name in enumerate(columns)]
    print("  ".join(name.ljust(width) for name, width in zip(columns, widths, strict=True)))
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
