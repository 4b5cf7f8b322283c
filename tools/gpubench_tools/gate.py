"""`gpubench-gate`: the paired regression gate of two bench-compatible programs, the suite's bench
or any program built with the public API (docs/your-own-workload.md, "Gate a change"), from the
installed tools, with no source checkout.

It runs the two lanes of docs/regression-gate.md one after the other and states their verdict:

1. the timing lane (compare/interleave.py): both programs in one job, a process of each per round
   in random order, each process's fastest repetition judged pair by pair;
2. the instruction lane (instructions/lane.py): both once under valgrind's callgrind, the
   instructions per iteration of single-threaded CPU rows compared;
3. the gate (instructions/combine.py): a regression in either lane fails; otherwise the timing
   lane's status stands.

The rows: `--benchmark_filter` selects both lanes' (every row of the program where none is given;
the instruction lane counts the single-threaded CPU rows among them), `--instructions-filter` the
instruction lane's where they should differ. scripts/ci_gate.sh's paired modes call this.

Exit: 0 pass, 1 regression, 2 cannot judge, 3 not resolved. Files under --out-dir: paired/ and
instructions/ (each side's runs and logs), paired-compare.{md,json},
instructions-compare.{md,json}, gate.md (both lanes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from . import output
from .cli import ArgumentParser, add_debug_flag, program_name, run_main
from .compare import interleave
from .instructions import combine, lane

MODULE = "gpubench_tools.gate"


def _parser(prog: str) -> argparse.ArgumentParser:
    about = (
        "Gate a contender program against a base: the timing lane (interleaved runs) and the "
        "instruction lane (callgrind) of every selected row, and their combined verdict. Exit 0 "
        "pass; 1 a regression in either lane; 2 cannot judge; 3 not resolved."
    )
    parser = ArgumentParser(prog=prog, description=about)
    add = parser.add_argument
    add("--base-bench", required=True, metavar="CMD", help="the reference program (or a wrapper)")
    add("--contender-bench", required=True, metavar="CMD", help="the program to judge")
    add("--benchmark_filter", "--benchmark-filter", dest="filter", metavar="REGEX",
        help="the rows of both lanes (default: every row)")  # fmt: skip
    add("--instructions-filter", metavar="REGEX", help="the instruction lane's rows, if other")
    add("--instructions", choices=("on", "off"), default="on", help="run the instruction lane")
    add("--instructions-max-change", type=lane.MAX_CHANGE, metavar="FRACTION",
        help="the instruction lane's threshold (0.01)")  # fmt: skip
    add("--pairs", type=interleave.PAIRS, help="timing lane: rounds to start with")
    add("--max-pairs", type=interleave.PAIRS, help="timing lane: at most this many, AMBIGUOUS")
    add("--inner-repetitions", type=interleave.REPS, help="timing lane: repetitions per process")
    add("--min-time", type=interleave.MIN_TIME, help="timing lane: seconds of each repetition")
    add("--time", choices=("cpu_time", "real_time"),
        help="timing lane: the clock of CPU rows (cpu_time; GPU rows: their GPU clock)")  # fmt: skip
    add("--timing-base-bench", metavar="CMD",
        help="the timing lane's base where it is not --base-bench (ci_gate.sh --against runs the "
        "base's binary there, and its wrapper in the instruction lane)")  # fmt: skip
    add("--base-data-dir", metavar="DIR", help="timing lane: the base's data folder")
    add("--contender-data-dir", metavar="DIR", help="timing lane: the contender's data folder")
    add("--out-dir", default="gate", help="where both lanes' files go (./gate)")
    add_debug_flag(parser)
    return parser


def _given(args: argparse.Namespace, names: dict[str, str]) -> list[str]:
    """`--option=value` for each option of `names` (attribute: option) the user gave: one word,
    so that a value starting with '-' (a negative filter) is not read as an option."""
    pairs = [(option, getattr(args, name)) for name, option in names.items()]
    return [f"{option}={value}" for option, value in pairs if value is not None]


def _gate(prog: str, argv: Sequence[str] | None) -> int:
    args = _parser(prog).parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sides = ["--contender-bench", args.contender_bench]
    timing_md, timing_json = out / "paired-compare.md", out / "paired-compare.json"
    timing = interleave.main(
        ["--base-bench", args.timing_base_bench or args.base_bench, *sides]
        + _given(args, {"filter": "--benchmark_filter", "pairs": "--pairs"})
        + _given(args, {"max_pairs": "--max-pairs", "inner_repetitions": "--inner-repetitions"})
        + _given(args, {"min_time": "--min-time", "base_data_dir": "--base-data-dir"})
        + _given(args, {"contender_data_dir": "--contender-data-dir", "time": "--time"})
        + ["--out-dir", str(out / "paired"), "--markdown", str(timing_md)]
        + ["--json", str(timing_json)]
    )
    output.write_lines(f"{prog}: timing lane exit {timing}; report in {timing_md}")
    lane_md, lane_json = out / "instructions-compare.md", out / "instructions-compare.json"
    combined = ["--timing-exit", str(timing), "--timing-json", str(timing_json)]
    combined += ["--timing-markdown", str(timing_md), "--markdown", str(out / "gate.md")]
    if args.instructions == "on":
        lane_filter = args.instructions_filter or args.filter or "."
        for stale in (lane_md, lane_json):
            stale.unlink(missing_ok=True)
        counted = lane.main(
            ["--base-bench", args.base_bench, *sides, f"--benchmark_filter={lane_filter}"]
            + _given(args, {"instructions_max_change": "--max-change"})
            + ["--out-dir", str(out / "instructions"), "--markdown", str(lane_md)]
            + ["--json", str(lane_json)]
        )
        output.write_lines(f"{prog}: instruction lane exit {counted}; report in {lane_md}")
        combined += ["--instructions-exit", str(counted), "--instructions-json", str(lane_json)]
        combined += ["--instructions-markdown", str(lane_md)]
    else:
        output.write_lines(f"{prog}: instruction lane not run (--instructions off)")
    code = combine.main(combined)
    output.write_lines(f"{prog}: gate exit {code}; report in {out / 'gate.md'}")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    prog = program_name(MODULE)
    return run_main(prog, lambda a: _gate(prog, a), argv)


if __name__ == "__main__":
    sys.exit(main())
