"""The command line of gpubench-compare (`python -m gpubench_tools.compare`: the same program).
The two files of one interleaved run are judged pair by pair (paired.py), any other two as
independent repetitions (engine.py); the exit status is the judgement's (verdict.py), and emit is
the one way a judgement reaches the terminal and the side outputs (render.py, output.py).
Unusable input or usage and an unexpected error are exit 2 with one line on stderr (the
traceback with --debug), never exit 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from dataclasses import replace
from typing import Sequence

from ..benchjson import BenchJsonError, load_report
from .. import output
from ..cli import EXIT_UNRESOLVED, EXIT_UNUSABLE, ArgumentParser, UnusableInput
from ..cli import add_debug_flag, program_name, run_main
from .config import DEFAULT_CONFIG_RESOURCE, THRESHOLD_RANGES, TIME_FIELDS, ConfigError, load_config
from .engine import compare_reports
from .paired import is_pair, judge_reports
from .stats import rules_from
from .render import as_doc, render_error, render_markdown, render_terminal, warning
from .verdict import Judgement
from .words import error_line

MODULE = "gpubench_tools.compare"


def _parser(prog: str) -> argparse.ArgumentParser:
    about = "Compare a contender bench JSON against a baseline. Exit 0 pass; 1 a significant "
    about += "slowdown beyond threshold, a benchmark that now fails, has invalid times or is "
    about += "missing; 2 unusable input, or nothing could be judged (too few repetitions)."
    parser = ArgumentParser(prog=prog, description=about)
    add = parser.add_argument
    add("baseline", help="bench JSON of the reference run")
    add("contender", help="bench JSON of the run to judge")
    defaults = f"gpubench_tools/compare/{DEFAULT_CONFIG_RESOURCE}"
    config_help = f"thresholds file (JSON), read over the packaged defaults ({defaults})"
    add("--config", metavar="FILE", help=config_help)
    add("--markdown", metavar="OUT.md", help="also write a Markdown report")
    add("--json", metavar="OUT.json", help="also write the result as JSON")
    missing = "list baseline benchmarks missing from the contender instead of failing (for a run "
    missing += "filtered on purpose); by default they fail the gate"
    add("--allow-missing", action="store_true", help=missing)
    missing = "no effect: failing on missing benchmarks is the default (accepted so older "
    add("--fail-on-missing", action="store_true", help=missing + "invocations keep working)")
    counters = "comma-separated counters to compare (default from the config: FLOP/s,pct_peak,"
    add("--counters", help=counters + "t_epoch); '' for none")
    add("--time", choices=TIME_FIELDS, help="clock to compare (default from the config: real_time)")
    for key, what in (("max_ratio", "max_ratio"), ("alpha", "U-test alpha"), ("max_cv", "max_cv")):
        kind, flag = THRESHOLD_RANGES[key], f"--{key.replace('_', '-')}"
        add(flag, type=kind, help=f"override the global {what} ({kind.range.replace('%', '%%')})")
    loudness = parser.add_mutually_exclusive_group()
    quiet_help = "print only the failures and one summary line"
    loudness.add_argument("--quiet", action="store_true", help=quiet_help)
    verbose_help = "also list the names under each grouped line (skipped, not judged, new, ...)"
    loudness.add_argument("--verbose", action="store_true", help=verbose_help)
    add_debug_flag(parser)
    return parser


def _judge(args: argparse.Namespace) -> Judgement:
    """The judgement of the two files: the two files of one interleaved run (scripts/ci_gate.sh)
    pair by pair (the paired rules, with --max-ratio as 1 + margin and --alpha), any other two
    as independent repetitions."""
    try:
        reports = load_report(args.baseline), load_report(args.contender)
    except BenchJsonError:
        reports = None  # read again below, after the config, to say why the usual way
    if reports is not None and is_pair(*reports):
        margin = None if args.max_ratio is None else args.max_ratio - 1.0
        return judge_reports(*reports, rules_from(margin, args.alpha), args.time)
    config = load_config(args.config)
    # Each checked by its argparse type: the range a --config file's value meets too.
    cli = {k: v for k in THRESHOLD_RANGES if (v := getattr(args, k)) is not None}
    config.thresholds = replace(config.thresholds, **cli)
    config.time, given = args.time or config.time, args.counters
    counters = None if given is None else [c.strip() for c in given.split(",") if c.strip()]
    baseline, contender = reports or (load_report(args.baseline), load_report(args.contender))
    return compare_reports(baseline, contender, config, counters, args.allow_missing)


def _run(prog: str, argv: Sequence[str] | None) -> int:
    args = _parser(prog).parse_args(argv)
    try:
        judgement = _judge(args)
    except Exception as exc:  # noqa: BLE001 - the contract: one line and exit 2, never exit 1
        expected = isinstance(exc, (BenchJsonError, ConfigError, UnusableInput))
        what = f"comparing {args.baseline} with {args.contender}: unexpected {type(exc).__name__}: "
        line = " ".join(f"{'' if expected else what}{error_line(exc)}".split())
        emit_error(prog, line, EXIT_UNUSABLE, args, paired=False)
        if not expected and args.debug:
            traceback.print_exc()
        hint = "" if expected or args.debug else " (rerun with --debug for the traceback)"
        raise UnusableInput(line + hint) from None
    return emit(prog, judgement, args)


def emit(prog: str, j: Judgement, args: argparse.Namespace) -> int:
    """The verdict is decided before anything is written; no output can change it (output.py):
    the terminal text (args.quiet, args.verbose where the command has it), the line on stderr for
    what was not judged, then args.markdown and args.json."""
    code = output.decide(j.exit_code)
    # Colour only on a terminal, never in a file or pipe; NO_COLOR (set, not empty) turns it off.
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    verbose = getattr(args, "verbose", False)
    text = render_terminal(j, color=color, quiet=args.quiet, verbose=verbose)
    output.write_lines(*text.splitlines(), color=color)
    if code in (EXIT_UNUSABLE, EXIT_UNRESOLVED):
        output.warn(f"{prog}: {warning(j)}")
    markdown, doc = lambda: render_markdown(j), lambda: as_doc(j)
    output.write_after_verdict(prog, code, args.markdown, markdown, args.json, doc)
    return code


def emit_error(prog: str, line: str, code: int, args: argparse.Namespace, paired: bool) -> None:
    """The args.markdown and args.json outputs when no judgement could be made (best effort:
    the caller says `line` itself on stderr)."""
    output.decide(code)
    text, doc = render_error(line, code, paired)
    for problem in output.write_reports(args.markdown, lambda: text, args.json, lambda: doc):
        output.warn(f"{prog}: {problem}")


def main(argv: Sequence[str] | None = None) -> int:
    prog = program_name(MODULE)
    return run_main(prog, lambda args: _run(prog, args), argv)
