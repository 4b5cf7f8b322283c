"""The command line of gpubench-compare (`python -m gpubench_tools.compare`: the same program).
What is compared and the exit status: engine.py. Unusable input or usage and an unexpected error
are exit 2 with one line on stderr (the traceback with --debug), never exit 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import traceback
from dataclasses import replace
from typing import Sequence

from ..benchjson import BenchJsonError, load_report
from ..cli import EXIT_UNUSABLE, UnusableInput, add_debug_flag, program_name, run_main
from .config import DEFAULT_CONFIG_RESOURCE, THRESHOLD_RULES, TIME_FIELDS, ConfigError, load_config
from .engine import CompareResult, UsageError, compare_reports
from .paired import compare_cli as paired_compare
from .render import render_markdown, render_markdown_error, render_terminal

MODULE = "gpubench_tools.compare"


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    add("--max-ratio", type=float, help="override the global max_ratio")
    add("--alpha", type=float, help="override the global U-test alpha")
    add("--max-cv", type=float, help="override the global max_cv")
    loudness = parser.add_mutually_exclusive_group()
    quiet_help = "print only the failures and one summary line"
    loudness.add_argument("--quiet", action="store_true", help=quiet_help)
    verbose_help = "also list the names under each grouped line (skipped, not judged, new, ...)"
    loudness.add_argument("--verbose", action="store_true", help=verbose_help)
    add_debug_flag(parser)
    return parser


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _compare(args: argparse.Namespace) -> CompareResult:
    config = load_config(args.config)
    cli = {k: v for k in THRESHOLD_RULES if (v := getattr(args, k)) is not None}
    for key, value in cli.items():
        unusable, rule = THRESHOLD_RULES[key]
        if math.isnan(value) or unusable(value):  # a NaN threshold would judge nothing
            raise UsageError(f"--{key.replace('_', '-')} {rule}")
    if cli:
        config.thresholds = replace(config.thresholds, **cli)
    config.time = args.time or config.time
    counters = None
    if args.counters is not None:
        counters = [c.strip() for c in args.counters.split(",") if c.strip()]
    baseline, contender = load_report(args.baseline), load_report(args.contender)
    return compare_reports(baseline, contender, config, counters, args.allow_missing)


def _run(prog: str, argv: Sequence[str] | None) -> int:
    args = _parser(prog).parse_args(argv)
    # The two files of one interleaved run (scripts/ci_gate.sh) are judged pair by pair.
    paired_exit = paired_compare(prog, args)
    if paired_exit is not None:
        return paired_exit
    try:
        result = _compare(args)
    except Exception as exc:  # noqa: BLE001 - the contract: one line and exit 2, never exit 1
        expected = isinstance(exc, (BenchJsonError, ConfigError, UsageError))
        what = f"comparing {args.baseline} with {args.contender}: unexpected {type(exc).__name__}: "
        line = " ".join(f"{'' if expected else what}{exc}".split())
        try:  # the PR comment and the JSON say why nothing was compared (best effort)
            if args.markdown:
                _write(args.markdown, render_markdown_error(line))
            if args.json:
                _write(args.json, json.dumps({"exit_code": EXIT_UNUSABLE, "error": line}) + "\n")
        except OSError:
            pass
        if not expected and args.debug:
            traceback.print_exc()
        hint = "" if expected or args.debug else " (rerun with --debug for the traceback)"
        raise UnusableInput(line + hint) from None
    try:
        if args.markdown:
            _write(args.markdown, render_markdown(result))
        if args.json:
            _write(args.json, json.dumps(result.as_dict(), indent=2) + "\n")
    except OSError as exc:
        raise UnusableInput(f"cannot write output: {exc}") from None
    color = sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
    sys.stdout.write(render_terminal(result, color=color, quiet=args.quiet, verbose=args.verbose))
    sys.stdout.flush()
    if result.cannot_judge is not None and result.exit_code == EXIT_UNUSABLE:
        print(f"{prog}: error: {result.cannot_judge}", file=sys.stderr)
    return result.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    prog = program_name(MODULE)
    return run_main(prog, lambda args: _run(prog, args), argv)
