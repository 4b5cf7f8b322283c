"""gpubench-compare: compare two bench JSON files and gate on regressions.

    python -m gpubench_tools.compare BASELINE.json CONTENDER.json [--config FILE]
        [--markdown OUT.md] [--json OUT.json] [--fail-on-missing] [--counters FLOP/s,pct_peak,t_epoch]

Per benchmark (repetitions grouped by run_name; Google Benchmark's own aggregate rows are ignored
and everything is recomputed from the raw repetitions): median ratio, spread, Mann-Whitney U test
and a verdict (faster / slower / same / noisy), for the time and for chosen counters.

Exit status: 1 when a benchmark is significantly slower beyond its threshold (or its work
changed, or it now fails), 0 otherwise, 2 when the input is unusable (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from typing import Sequence

from ..benchjson import BenchJsonError, load_report
from .config import TIME_FIELDS, ConfigError, load_config
from .engine import UsageError, compare_reports
from .model import EXIT_UNUSABLE
from .render import render_markdown, render_markdown_error, render_terminal

__all__ = ["DEFAULT_CONFIG_PATH", "main"]

# Where the default thresholds live in a checkout: tools/compare-thresholds.json.
DEFAULT_CONFIG_PATH = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "compare-thresholds.json",
)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gpubench_tools.compare",
        description=(
            "Compare a contender bench JSON against a baseline. Exit 1 on a significant "
            "slowdown beyond threshold, 0 otherwise, 2 on unusable input."
        ),
    )
    parser.add_argument("baseline", help="bench JSON of the reference run")
    parser.add_argument("contender", help="bench JSON of the run to judge")
    parser.add_argument(
        "--config",
        help=(
            "threshold file (JSON); default: tools/compare-thresholds.json when present, "
            "else built-in defaults"
        ),
    )
    parser.add_argument("--markdown", metavar="OUT.md", help="also write a Markdown report")
    parser.add_argument("--json", metavar="OUT.json", help="also write the result as JSON")
    parser.add_argument(
        "--fail-on-missing",
        action="store_true",
        help="exit 1 when a baseline benchmark is missing from the contender",
    )
    parser.add_argument(
        "--counters",
        help="comma-separated counters to compare (default from the config: FLOP/s,pct_peak,t_epoch); "
        "'' for none",
    )
    parser.add_argument(
        "--time",
        choices=TIME_FIELDS,
        help="clock to compare (default from the config: real_time)",
    )
    parser.add_argument("--max-ratio", type=float, help="override the global max_ratio")
    parser.add_argument("--alpha", type=float, help="override the global U-test alpha")
    parser.add_argument("--max-cv", type=float, help="override the global max_cv")
    parser.add_argument(
        "--quiet", action="store_true", help="print only the summary line and failures"
    )
    return parser.parse_args(argv)


def _write(path: str, text: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        config_path = args.config
        if config_path is None and os.path.exists(DEFAULT_CONFIG_PATH):
            config_path = DEFAULT_CONFIG_PATH
        config = load_config(config_path)
        cli = {
            k: v
            for k, v in (
                ("max_ratio", args.max_ratio),
                ("alpha", args.alpha),
                ("max_cv", args.max_cv),
            )
            if v is not None
        }
        if cli:
            if args.max_ratio is not None and args.max_ratio < 1.0:
                raise UsageError("--max-ratio must be >= 1 (1.05 = 5 % slower)")
            config.thresholds = replace(config.thresholds, **cli)
        if args.time is not None:
            config.time = args.time
        counters = None
        if args.counters is not None:
            counters = [c.strip() for c in args.counters.split(",") if c.strip()]
        baseline = load_report(args.baseline)
        contender = load_report(args.contender)
        result = compare_reports(baseline, contender, config, counters, args.fail_on_missing)
    except (BenchJsonError, ConfigError, UsageError) as exc:
        line = str(exc).replace("\n", " ")
        print(f"gpubench compare: error: {line}", file=sys.stderr)
        try:
            if args.markdown:
                _write(args.markdown, render_markdown_error(line))
            if args.json:
                _write(args.json, json.dumps({"exit_code": EXIT_UNUSABLE, "error": line}) + "\n")
        except OSError:
            pass  # the stderr line above is the message that matters
        return EXIT_UNUSABLE

    try:
        if args.markdown:
            _write(args.markdown, render_markdown(result))
        if args.json:
            _write(args.json, json.dumps(result.as_dict(), indent=2) + "\n")
    except OSError as exc:
        print(f"gpubench compare: error: cannot write output: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    color = sys.stdout.isatty() and os.environ.get("NO_COLOR") is None
    sys.stdout.write(render_terminal(result, color=color, quiet=args.quiet))
    return result.exit_code
