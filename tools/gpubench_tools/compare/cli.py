"""The command line of gpubench-compare (`python -m gpubench_tools.compare`: the same program).
What is compared and the exit status: engine.py. Unusable input or usage and an unexpected error
are exit 2 with one line on stderr (the traceback with --debug), never exit 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from dataclasses import replace
from typing import Sequence

from ..benchjson import BenchJsonError, BenchReport, load_report
from .. import output
from ..cli import EXIT_UNRESOLVED, EXIT_UNUSABLE, ArgumentParser, UnusableInput, add_debug_flag
from ..cli import program_name
from ..cli import run_main
from .config import DEFAULT_CONFIG_RESOURCE, THRESHOLD_RANGES, TIME_FIELDS, ConfigError
from .config import load_config
from .engine import CompareResult, UsageError, compare_reports
from .paired import compare_cli as paired_compare
from .paired import is_pair
from .render import render_markdown, render_markdown_error, render_terminal

MODULE = "gpubench_tools.compare"


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=prog,
        description=(
            "Compare a contender bench JSON against a baseline. Exit 0 pass; 1 a significant "
            "slowdown beyond threshold, a benchmark that now fails, has invalid times or is "
            "missing; 2 unusable input, or nothing could be judged (too few repetitions)."
        ),
    )
    add = parser.add_argument
    add("baseline", help="bench JSON of the reference run")
    add("contender", help="bench JSON of the run to judge")
    defaults = f"gpubench_tools/compare/{DEFAULT_CONFIG_RESOURCE}"
    config_help = f"thresholds file (JSON), read over the packaged defaults ({defaults})"
    add("--config", metavar="FILE", help=config_help)
    add("--markdown", metavar="OUT.md", help="also write a Markdown report")
    add("--json", metavar="OUT.json", help="also write the result as JSON")
    add(
        "--allow-missing",
        action="store_true",
        help="list baseline benchmarks missing from the contender instead of failing "
        "(for a run filtered on purpose); by default they fail the gate",
    )
    add(
        "--fail-on-missing",
        action="store_true",
        help="no effect: failing on missing benchmarks is the default (accepted so older "
        "invocations keep working)",
    )
    add(
        "--counters",
        help="comma-separated counters to compare (default from the config: FLOP/s,pct_peak,"
        "t_epoch); '' for none",
    )
    add("--time", choices=TIME_FIELDS, help="clock to compare (default from the config: real_time)")
    for key, what in (("max_ratio", "max_ratio"), ("alpha", "U-test alpha"), ("max_cv", "max_cv")):
        kind = THRESHOLD_RANGES[key]
        add(
            f"--{key.replace('_', '-')}",
            type=kind,
            help=f"override the global {what} ({kind.range.replace('%', '%%')})",
        )
    loudness = parser.add_mutually_exclusive_group()
    quiet_help = "print only the failures and one summary line"
    loudness.add_argument("--quiet", action="store_true", help=quiet_help)
    verbose_help = "also list the names under each grouped line (skipped, not judged, new, ...)"
    loudness.add_argument("--verbose", action="store_true", help=verbose_help)
    add_debug_flag(parser)
    return parser


def _compare(
    args: argparse.Namespace, reports: tuple[BenchReport, BenchReport] | None
) -> CompareResult:
    config = load_config(args.config)
    # Each checked by its argparse type: the range a --config file's value meets too.
    cli = {k: v for k in THRESHOLD_RANGES if (v := getattr(args, k)) is not None}
    if cli:
        config.thresholds = replace(config.thresholds, **cli)
    config.time = args.time or config.time
    counters = None
    if args.counters is not None:
        counters = [c.strip() for c in args.counters.split(",") if c.strip()]
    baseline, contender = reports or (load_report(args.baseline), load_report(args.contender))
    return compare_reports(baseline, contender, config, counters, args.allow_missing)


def _run(prog: str, argv: Sequence[str] | None) -> int:
    args = _parser(prog).parse_args(argv)
    try:
        reports: tuple[BenchReport, BenchReport] | None = (
            load_report(args.baseline),
            load_report(args.contender),
        )
    except BenchJsonError:
        reports = None  # _compare reads them again and says why, the usual way
    # The two files of one interleaved run (scripts/ci_gate.sh) are judged pair by pair.
    if reports is not None and is_pair(*reports):
        return paired_compare(prog, args, *reports)
    try:
        result = _compare(args, reports)
    except Exception as exc:  # noqa: BLE001 - the contract: one line and exit 2, never exit 1
        expected = isinstance(exc, (BenchJsonError, ConfigError, UsageError))
        what = f"comparing {args.baseline} with {args.contender}: unexpected {type(exc).__name__}: "
        line = " ".join(f"{'' if expected else what}{exc}".split())
        output.decide(EXIT_UNUSABLE)
        # The PR comment and the JSON say why nothing was compared (best effort).
        error_doc = {"exit_code": EXIT_UNUSABLE, "error": line}
        problems = output.write_reports(
            args.markdown, lambda: render_markdown_error(line), args.json, lambda: error_doc
        )
        for problem in problems:
            output.warn(f"{prog}: {problem}")
        if not expected and args.debug:
            traceback.print_exc()
        hint = "" if expected or args.debug else " (rerun with --debug for the traceback)"
        raise UnusableInput(line + hint) from None
    # The verdict is decided before anything is written; no output can change it (output.py).
    code = output.decide(result.exit_code)
    color = sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
    terminal = render_terminal(result, color=color, quiet=args.quiet, verbose=args.verbose)
    output.say(*terminal.splitlines())
    if result.cannot_judge is not None and code == EXIT_UNUSABLE:
        output.warn(f"{prog}: error: {result.cannot_judge}")
    elif result.cannot_judge is not None and code == EXIT_UNRESOLVED:
        output.warn(f"{prog}: not resolved: the machine was busy: {result.cannot_judge}")
    output.write_after_verdict(
        prog, code, args.markdown, lambda: render_markdown(result), args.json, result.as_dict
    )
    return code


def main(argv: Sequence[str] | None = None) -> int:
    prog = program_name(MODULE)
    return run_main(prog, lambda args: _run(prog, args), argv)
