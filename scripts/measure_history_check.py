#!/usr/bin/env python3
"""Measure the history check on real runs of unchanged code: false alarms and planted slowdowns.

    scripts/measure_history_check.py DIR --collect 20     # run bench 20 times into DIR, then measure
    scripts/measure_history_check.py DIR                  # measure the run*.json already in DIR

The runs are stored, in file-name order, as consecutive commits r01, r02, ... of one machine.

False alarms: every run is judged as if it were the newest (what a check after each `add` would
say); every regression found is a false alarm, since the code never changed.

Planted slowdown: for every pair of consecutive runs that the check can judge and every
benchmark, that benchmark's times in the two runs are multiplied by FACTOR (in memory, the rest
of the history untouched) and the check is asked about the second run of the pair.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from gpubench_tools.history.check import (  # noqa: E402
    NOT_ENOUGH_HISTORY,
    REGRESSION,
    RULE_RANGES,
    CheckRule,
    judge,
    rolling_regressions,
)
from gpubench_tools.history.ingest import read_run  # noqa: E402
from gpubench_tools.history.words import stored  # noqa: E402
from gpubench_tools.cli import ArgumentParser, Number  # noqa: E402
from gpubench_tools.history.store import History, HistoryStore  # noqa: E402

# Seven single-threaded OpenBLAS GEMMs from 0.2 us to 0.7 ms: launch-bound to compute-bound.
FILTER = (
    "matmul/cpu/openblas/dtype:(fp32/m:(16|64|128|256)/n:(16|64|128|256)/k:(16|64|128|256)"
    "|fp64/m:(64|256)/n:(64|256)/k:(64|256))/threads:1"
)


def collect(out: Path, count: int, bench: str, pause_s: float) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE", "Haswell"))
    for i in range(1, count + 1):
        path = out / f"run{i:02d}.json"
        subprocess.run(
            [
                bench,
                f"--benchmark_filter={FILTER}",
                "--benchmark_repetitions=5",
                "--benchmark_enable_random_interleaving=true",
                "--benchmark_min_time=0.05",
                f"--benchmark_out={path}",
                "--benchmark_out_format=json",
            ],
            check=True,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # the context banner, once per run
        )
        print(f"wrote {path}", flush=True)
        if i < count:
            time.sleep(pause_s)  # CI runs are minutes apart, not back to back


def load(files: list[Path]) -> History:
    builds: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        with HistoryStore.open(os.path.join(tmp, "history.db"), create=True) as store:
            for i, path in enumerate(files, start=1):
                record = stored(read_run(str(path), commit=f"r{i:02d}"))
                builds.add(str(record.context.get("gpubench_git_commit")))
                store.add_run(record)
            history = History.load(store)
    if len(builds) > 1:
        # Runs of different builds are not runs of unchanged code: their differences may be real.
        print(f"WARNING: the runs come from {len(builds)} builds: {', '.join(sorted(builds))}")
    return history


def _benchmarks_of(history: History, machine_id: int) -> list[str]:
    return [name for (machine, name) in history.series if machine == machine_id]


def false_alarms(history: History, rule: CheckRule) -> None:
    flagged = rolling_regressions(history, rule)
    judged_pairs = 0
    judged_runs: set[int] = set()
    for machine_id in history.runs_by_machine:
        for name in _benchmarks_of(history, machine_id):
            series = history.series[(machine_id, name)]
            for index, run in enumerate(series):
                if judge(history, series[: index + 1], name, rule).verdict != NOT_ENOUGH_HISTORY:
                    judged_pairs += 1
                    judged_runs.add(run.id)
    runs_alarmed = len({run_id for run_id, _ in flagged})
    print(
        f"  time={rule.time}: {len(flagged)} false alarms in {judged_pairs} judged (run, benchmark) "
        f"pairs; {runs_alarmed} of {len(judged_runs)} judged runs would have failed the check"
    )
    for (run_id, name), v in sorted(flagged.items()):
        ratios = ", ".join(f"{c.ratio:.2f}x p={c.p_value:.2g}" for c in v.newest)
        print(f"    run {v.newest[0].run.git_commit}: {name}: {ratios}")


def planted(history: History, rule: CheckRule, factor: float) -> None:
    (machine_id, runs), *_ = history.runs_by_machine.items()
    names = _benchmarks_of(history, machine_id)
    caught: dict[str, int] = {name: 0 for name in names}
    tries = 0
    for second in range(rule.min_history + 1, len(runs)):
        first = second - 1
        tries += 1
        for name in names:
            times = dict(history.times)
            for run in (runs[first], runs[second]):
                times[(run.id, name)] = [
                    (real * factor, cpu * factor)  # a missing CPU time stays NaN
                    for real, cpu in history.times[(run.id, name)]
                ]
            trial = dataclasses.replace(history, times=times)
            verdict = judge(trial, runs[: second + 1], name, rule).verdict
            caught[name] += verdict == REGRESSION
    total = sum(caught.values())
    print(
        f"  time={rule.time}: caught {total} of {tries * len(names)} planted {factor}x slowdowns "
        f"({tries} pairs of consecutive runs x {len(names)} benchmarks)"
    )
    for name, hits in caught.items():
        print(f"    {hits:3d} of {tries}: {name}")


def main() -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path, help="folder of run*.json files")
    runs, pause = Number(1, 10_000, integer=True), Number(0.0, 86_400.0, unit="seconds")
    factor = Number(1.0, 100.0, low_open=True)
    parser.add_argument("--collect", type=runs, metavar="N", help="first run bench N times")
    parser.add_argument("--bench", default=str(REPO / "build" / "benchmarks" / "bench"))
    parser.add_argument("--pause-s", type=pause, default=20.0, help="pause between runs")
    parser.add_argument("--factor", type=factor, default=1.3, help="planted slowdown")
    alpha, min_ratio = RULE_RANGES["alpha"], RULE_RANGES["min_ratio"]
    parser.add_argument("--alpha", type=alpha, default=CheckRule().alpha, help="rule's alpha")
    parser.add_argument(
        "--min-ratio",
        type=min_ratio,
        default=CheckRule().min_ratio,
        help="rule's effect-size floor",
    )
    args = parser.parse_args()
    if args.collect:
        collect(args.dir, args.collect, args.bench, args.pause_s)
    files = sorted(args.dir.glob("run*.json"))
    if not files:
        parser.error(f"no run*.json in {args.dir}")
    history = load(files)
    print(f"{len(files)} runs of unchanged code in {args.dir}")
    for clock in ("auto", "real"):
        rule = CheckRule(min_ratio=args.min_ratio, alpha=args.alpha, time=clock)
        print(f"rule: {rule}")
        print("false alarms:")
        false_alarms(history, rule)
        print("planted slowdowns:")
        planted(history, rule, args.factor)
    return 0


if __name__ == "__main__":
    sys.exit(main())
