"""``guardrail calibrate CASES.jsonl --choose MODULE:backend``: how well ``guardrail.choose``'s probabilities are
calibrated on your labelled cases, a calibration that fixes them, and the threshold for a target precision
(:mod:`guardrail.evals.calibrate`, :mod:`guardrail.local.calibration`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from guardrail.cli.common import at_least, env_client, import_target, target, write_output
from guardrail.errors import CommandError, CommandLineError, GuardrailError

DESCRIPTION = """\
Run guardrail.choose on every case of CASES.jsonl (one {"prompt": "...", "options": [...], "label": "...", "id"?}
per line) and report accuracy, expected calibration error (equal-width bins), Brier score, NLL and a
reliability diagram, before and after a calibration: fitted on the cases (--fit temperature, the default, or
isotonic) and written with --save, or an existing one applied (--calibration FILE: check it on held-out cases).
With --target-precision P, suggest the lowest threshold on the (calibrated) top probability whose accepted
cases are right at least P of the time, and its coverage. Pass the fitted file to
guardrail.choose(..., calibration=FILE).

The backend: --choose MODULE:attr (a guardrail.local.LocalModel or LogprobBackend, or a function of no
arguments that returns one), or --model MODEL (a LogprobBackend over the OpenAI client the environment
configures: OPENAI_API_KEY, OPENAI_BASE_URL).

exit status: 0 the report was made; 1 the cases, backend or calibration cannot be used; 2 usage error.
"""


def register(commands: Any) -> None:
    """Add ``calibrate`` to the subcommands."""
    parser = commands.add_parser("calibrate", help="calibrate guardrail.choose's probabilities on labelled cases",
                                 description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", metavar="CASES.jsonl", help="one labelled case per line")
    backend = parser.add_mutually_exclusive_group(required=True)
    backend.add_argument("--choose", type=target, metavar="MODULE:attr",
                         help="the choose backend, or a function of no arguments that returns it")
    backend.add_argument("--model", metavar="MODEL", help="an OpenAI model scored from its logprobs")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--fit", choices=("temperature", "isotonic", "none"), default="temperature",
                     help="the calibration to fit on the cases (default temperature)")
    how.add_argument("--calibration", metavar="FILE", default=None,
                     help="apply this calibration instead of fitting one (check it on held-out cases)")
    parser.add_argument("--save", metavar="OUT.json", default=None, help="write the fitted calibration to OUT.json")
    parser.add_argument("--bins", type=at_least(1), default=10, metavar="N", help="ECE bins (default 10)")
    parser.add_argument("--target-precision", type=_probability, default=None, metavar="P",
                        help="suggest the lowest threshold whose precision is at least P (0 < P <= 1)")
    parser.add_argument("--json", metavar="OUT", default=None, help="write the JSON report to OUT ('-': stdout)")
    parser.add_argument("--html", metavar="OUT.html", default=None,
                        help="write the report as one self-contained HTML page (reliability diagrams)")
    parser.set_defaults(run=run, prog=parser.prog)


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{value} is not a precision in (0, 1]")
    return value


def run(args: argparse.Namespace) -> int:
    """Score the cases, fit or apply the calibration, write the report."""
    from guardrail.evals.calibrate import build_report, load_choice_cases, score_cases
    from guardrail.local.calibration import Calibration

    if args.save is not None and (args.calibration is not None or args.fit == "none"):
        raise CommandLineError("--save writes a fitted calibration: it goes with --fit temperature|isotonic")
    cases = load_choice_cases(args.cases)
    given = Calibration.load(args.calibration) if args.calibration is not None else None
    backend = _backend(args)
    done = [0]

    def progress(count: int, total: int) -> None:
        done[0] = count
        if sys.stderr.isatty():
            _progress(count, total)

    try:
        scored = score_cases(cases, backend, progress)
    except Exception as error:  # a transport error, a prompt too long for the model: one line naming the case
        where = f"case {cases[done[0]].id!r}" if done[0] < len(cases) else "choose"
        kind = "" if isinstance(error, CommandError) else f"{type(error).__name__}: "
        raise CommandError(f"{where}: {kind}{error}") from None
    if sys.stderr.isatty():
        print(file=sys.stderr)
    fit = None if args.fit == "none" else args.fit
    report, calibration = build_report(scored, bins=args.bins, fit=fit, calibration=given,
                                       target_precision=args.target_precision, cases=str(args.cases))
    if args.save is not None and calibration is not None:
        calibration.save(args.save)
    if args.html is not None:
        from guardrail.evals.calibrate_html import render_calibration_html

        write_output(args.html, render_calibration_html(report))
    text = json.dumps(report, ensure_ascii=False, indent=2)
    if args.json == "-":
        print(text)
        return 0
    _print(report)
    if args.json is not None:
        write_output(args.json, text + "\n")
    return 0


def _backend(args: argparse.Namespace) -> Any:
    if args.model is not None:
        from guardrail.local.choose_api import LogprobBackend

        return LogprobBackend(env_client("openai"), args.model)
    from guardrail.local.choose_api import LogprobBackend

    found = import_target(args.choose)
    is_backend = isinstance(found, LogprobBackend) or (hasattr(found, "model") and hasattr(found, "tokenizer"))
    if callable(found) and not is_backend:
        try:
            found = found()
        except GuardrailError:
            raise
        except Exception as error:  # the user's factory failed: one line
            raise CommandError(f"{args.choose}() failed: {type(error).__name__}: {error}") from None
    return found


def _progress(done: int, total: int) -> None:
    print(f"\rguardrail calibrate: {done}/{total} cases", end="", file=sys.stderr, flush=True)


def _print(report: dict[str, Any]) -> None:
    after = report.get("calibrated")
    print(f"{report['count']} cases ({report['no_option_matched']} with no option in the reply), "
          f"ECE over {report['bins']} equal-width bins")
    print(f"{'':16}{'before':>10}" + (f"{'after':>10}" if after else ""))
    for name in ("accuracy", "mean_confidence", "ece", "brier", "nll"):
        row = f"{name:16}{_cell(report['raw'][name]):>10}"
        print(row + (f"{_cell(after[name]):>10}" if after else ""))
    if report.get("calibration") is not None:
        from guardrail.local.calibration import Calibration

        print(f"calibration: {Calibration.from_dict(report['calibration']).describe()}")
    target = report.get("target_precision")
    if target is not None:
        found = (after or report["raw"])["threshold"]
        if found is None:
            print(f"threshold: none reaches precision {target:g} on these cases")
        else:
            print(f"threshold: {found['threshold']:.4f} (precision {found['precision']:.4f}, "
                  f"coverage {found['coverage']:.1%})")


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"
