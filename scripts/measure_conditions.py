#!/usr/bin/env python3
"""Measure what recording the conditions costs, and how many rows an idle machine marks disturbed.

    scripts/measure_conditions.py [--bench BUILD/benchmarks/bench] [--pairs 10] [--out FILE]
    scripts/measure_conditions.py --sweep [--out FILE]     # also: a default sweep, rows disturbed
    scripts/measure_conditions.py --sweep --busy --pairs 0 # and the same sweep beside a busy core

Cost: the smallest rows (the 16^3 fp32 OpenBLAS GEMM on one thread; on a machine with a GPU also
the launch round trip, the cheapest GPU probe) are run by bench with the conditions on and off
(GPUBENCH_CONDITIONS=off), in pairs whose order alternates (on-off, off-on, ...) so a drift of the
machine falls on both sides alike. Each run has several repetitions; a pair's ratio is the median
time with conditions over the median without, and the figure is the median of the pairs' ratios
with the range of the middle half. The target is at most 1.02.

Sweep: one default sweep with the conditions on, with the quick start's flags (5 repetitions of
0.01 s); the share of its rows the rule marks disturbed (at most 2% on an idle machine), and which.

Busy (--busy, with --sweep): the same sweep again while another process keeps one core busy for
its whole duration; how many of its one-thread and all-thread CPU rows are marked, whether the
report's first screen (its first 40 lines of Markdown) says the run was disturbed, and compare's
exit code and verdict for the idle run against the busy one (it must not be 1: disturbance alone
is never a regression).

The load average is printed at the start and end of each part: a figure from a busy machine says
what the sampler costs there, not what it costs. Exit code 0, or 2 when bench cannot be run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from gpubench_tools.cli import ArgumentParser, Number  # noqa: E402

CPU_ROW = "matmul/cpu/openblas/dtype:fp32/m:16/n:16/k:16/threads:1"
GPU_ROW = "overhead/launch/roundtrip/manual_time"
TARGET_RATIO = 1.02


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} on {os.cpu_count()} CPUs"


QUICK_START_FLAGS = ["--benchmark_repetitions=5", "--benchmark_min_time=0.01s"]


def run_bench(bench: str, arguments: list[str], conditions: bool, keep: Path | None = None) -> dict:
    env = dict(os.environ, GPUBENCH_CONDITIONS="on" if conditions else "off")
    with tempfile.TemporaryDirectory() as folder:
        out = keep or Path(folder) / "run.json"
        subprocess.run(
            [bench, *arguments, f"--benchmark_out={out}", "--benchmark_out_format=json"],
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # Google Benchmark writes NaN for the spread of an all-zero counter: Python reads it.
        return json.loads(out.read_text())


def median_time(document: dict, row: str) -> float:
    times = [
        r["real_time"]
        for r in document["benchmarks"]
        if r.get("run_type") == "iteration" and r["name"] == row and not r.get("error_occurred")
    ]
    if not times:
        raise ValueError(f"bench wrote no repetition of {row}")
    return statistics.median(times)


def quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    low, _, high = statistics.quantiles(values, n=4)
    return low, high


def measure_cost(bench: str, row: str, pairs: int, repetitions: int) -> dict:
    arguments = [f"--benchmark_filter=^{row}$", f"--benchmark_repetitions={repetitions}"]
    ratios = []
    for pair in range(pairs):
        order = (True, False) if pair % 2 == 0 else (False, True)
        medians = {on: median_time(run_bench(bench, arguments, on), row) for on in order}
        ratios.append(medians[True] / medians[False])
    low, high = quartiles(ratios)
    return {
        "row": row,
        "pairs": pairs,
        "repetitions_per_run": repetitions,
        "ratio_on_over_off": statistics.median(ratios),
        "ratio_middle_half": [low, high],
        "pair_ratios": ratios,
    }


def measure_sweep(bench: str, keep: Path | None = None) -> dict:
    document = run_bench(bench, QUICK_START_FLAGS, True, keep)
    rows = [
        r
        for r in document["benchmarks"]
        if r.get("run_type") == "iteration" and not r.get("error_occurred")
    ]
    with_verdict = [r for r in rows if "disturbed" in r]
    disturbed = [r for r in with_verdict if r["disturbed"] == 1]
    cpu_rows = [r for r in with_verdict if "/cpu/" in r["name"] and "blas_threads" in r]
    all_threads = max((r["blas_threads"] for r in cpu_rows), default=0)
    by_threads = {}
    for label, keep_row in (
        ("one_thread", lambda r: r["blas_threads"] == 1),
        ("all_threads", lambda r: r["blas_threads"] == all_threads and all_threads > 1),
    ):
        chosen = [r for r in cpu_rows if keep_row(r)]
        by_threads[label] = {
            "rows": len(chosen),
            "disturbed": len([r for r in chosen if r["disturbed"] == 1]),
        }
    return {
        "rows": len(rows),
        "cpu_rows_by_threads": by_threads,
        "rows_with_verdict": len(with_verdict),
        "disturbed": len(disturbed),
        "share_disturbed": len(disturbed) / len(with_verdict) if with_verdict else None,
        "disturbed_rows": [
            {
                "name": r["name"],
                "disturbed_by": r.get("disturbed_by"),
                "cpu_wait_cores": r.get("cpu_wait_cores"),
                "cpu_other_cores": r.get("cpu_other_cores"),
                "cpu_steal_cores": r.get("cpu_steal_cores"),
            }
            for r in disturbed
        ],
    }


class BusyCore:
    """Another process that keeps one CPU busy until the block ends."""

    def __enter__(self) -> "BusyCore":
        self.process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *_: object) -> None:
        self.process.kill()
        self.process.wait()


def tool(module: str, arguments: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "tools"))
    return subprocess.run(
        [sys.executable, "-m", module, *arguments], env=env, capture_output=True, text=True
    )


def measure_busy(bench: str, idle_json: Path, folder: Path) -> dict:
    busy_json = folder / "busy.json"
    with BusyCore():
        sweep = measure_sweep(bench, busy_json)
    report = tool("gpubench_tools.report", [str(busy_json), "--out", str(folder / "report")])
    markdown = folder / "report" / "report.md"
    first_screen = markdown.read_text().splitlines()[:40] if markdown.exists() else []
    compare = tool("gpubench_tools.compare", [str(idle_json), str(busy_json)])
    verdict = [line for line in compare.stdout.splitlines() if line.strip()][-3:]
    return {
        "sweep": sweep,
        "report_exit_code": report.returncode,
        "report_first_screen_says_disturbed": any("disturbed" in line for line in first_screen),
        "report_disturbed_lines": [line for line in first_screen if "disturbed" in line][:3],
        "compare_exit_code": compare.returncode,
        "compare_last_lines": verdict,
    }


def print_sweep(title: str, sweep: dict) -> None:
    share = sweep["share_disturbed"]
    print(
        f"{title}: {sweep['disturbed']} of {sweep['rows_with_verdict']} rows disturbed"
        + (f" ({100 * share:.1f}%)" if share is not None else "")
        + f"; {load()}",
        flush=True,
    )
    for label, counts in sweep["cpu_rows_by_threads"].items():
        print(f"  {label} CPU rows: {counts['disturbed']} of {counts['rows']} disturbed")


def main() -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default=str(REPO / "build" / "benchmarks" / "bench"))
    pairs, repetitions = Number(0, 10_000, integer=True), Number(1, 10_000, integer=True)
    parser.add_argument(
        "--pairs", type=pairs, default=10, help="on/off pairs per row (10; 0: none)"
    )
    parser.add_argument(
        "--repetitions", type=repetitions, default=5, help="repetitions per run (5)"
    )
    parser.add_argument("--sweep", action="store_true", help="also run one default sweep")
    parser.add_argument(
        "--busy", action="store_true", help="with --sweep: the sweep again beside one busy core"
    )
    parser.add_argument("--out", type=Path, help="write the results as JSON here too")
    args = parser.parse_args()
    if args.busy and not args.sweep:
        print("measure_conditions.py: --busy needs --sweep", file=sys.stderr)
        return 2
    try:
        listing = subprocess.run(
            [args.bench, "--benchmark_list_tests"], check=True, capture_output=True, text=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"measure_conditions.py: cannot run {args.bench}: {error}", file=sys.stderr)
        return 2
    rows = [row for row in (CPU_ROW, GPU_ROW) if row in listing] if args.pairs > 0 else []
    results: dict = {"cost": [], "load": []}
    for row in rows:
        results["load"].append(f"before {row}: {load()}")
        print(f"{row}: {load()}", flush=True)
        cost = measure_cost(args.bench, row, args.pairs, args.repetitions)
        results["cost"].append(cost)
        low, high = cost["ratio_middle_half"]
        verdict = "within" if cost["ratio_on_over_off"] <= TARGET_RATIO else "above"
        print(
            f"{row}: with conditions / without = {cost['ratio_on_over_off']:.4f} "
            f"(middle half {low:.4f}..{high:.4f}, {args.pairs} pairs of {args.repetitions} "
            f"repetitions; {verdict} the {TARGET_RATIO} target); {load()}",
            flush=True,
        )
    if args.sweep:
        folder = Path(tempfile.mkdtemp(prefix="measure_conditions."))
        idle_json = folder / "idle.json"
        results["load"].append(f"before the sweep: {load()}")
        print(f"default sweep: {load()}", flush=True)
        sweep = measure_sweep(args.bench, idle_json)
        results["sweep"] = sweep
        print_sweep("default sweep", sweep)
        for row in sweep["disturbed_rows"]:
            figures = ", ".join(
                f"{key} {row[key]:.2f}"
                for key in ("cpu_wait_cores", "cpu_other_cores", "cpu_steal_cores")
                if row[key] is not None
            )
            print(f"  {row['name']}: disturbed_by {row['disturbed_by']:.0f}, {figures}", flush=True)
        if args.busy:
            results["load"].append(f"before the busy sweep: {load()}")
            busy = measure_busy(args.bench, idle_json, folder)
            results["busy"] = busy
            print_sweep("the same sweep beside one busy core", busy["sweep"])
            print(
                "  report's first screen says disturbed: "
                f"{busy['report_first_screen_says_disturbed']}"
            )
            for line in busy["report_disturbed_lines"]:
                print(f"    {line}")
            print(f"  compare idle -> busy: exit {busy['compare_exit_code']}")
            for line in busy["compare_last_lines"]:
                print(f"    {line}")
        print(f"(files kept in {folder})")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
