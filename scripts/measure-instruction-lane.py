#!/usr/bin/env python3
"""Measures the regression gate's instruction lane (python -m gpubench_tools.instructions, the
second lane of scripts/ci_gate.sh's paired gate) in real runs on this machine.

Each round runs two real lanes, in turn:

- A/A: the base bench against itself (two processes of one binary under callgrind): any FAIL is a
  false alarm, and the two counts of every benchmark show how much a count varies between runs;
- slowed: the base against a bench built with the test aid GPUBENCH_TEST_EXTRA_WORK_PCT (CMake;
  its small-matrix CPU training kernel runs about that many percent more instructions, nothing else
  changes): every round must FAIL. The aid is sized on the Digits row (SLOWED_ROW: about 2 %);
  the kernel's other rows change by other amounts, and every row's change is kept.

The output JSON keeps every lane's verdict, counts, exit status, wall time and the load average
before it, and a summary: false alarms, catches, the spread of each benchmark's count over every
base run, the measured change of the slowed row. The binaries are copied aside first, so a rebuild
during the run cannot change them.

Usage: scripts/measure-instruction-lane.py --base-bench build/benchmarks/bench
           --slowed-bench build-slow/benchmarks/bench [--rounds 20]
           [--out reports/baselines/instruction-lane-2core.json]
(build the slowed bench with: cmake -S . -B build-slow -DGPUBENCH_TEST_EXTRA_WORK_PCT=2 &&
 cmake --build build-slow --target bench)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The row the test aid is sized on (its name, less the workload: the small-matrix path on Digits).
SLOWED_ROW = "/cpu/small/data:digits/batch:64/hidden:32/readback:1/threads:1"


def load_average() -> float:
    return os.getloadavg()[0]


def run_lane(base: Path, contender: Path, work: Path, label: str) -> dict[str, Any]:
    """One real lane; its JSON with the exit status, wall time and load added."""
    out = work / label
    json_path = work / f"{label}.json"
    load = load_average()
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpubench_tools.instructions",
            "--base-bench",
            str(base),
            "--contender-bench",
            str(contender),
            "--out-dir",
            str(out),
            "--json",
            str(json_path),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - start
    try:
        doc = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {"error": proc.stderr.strip()[-500:]}
    shutil.rmtree(out, ignore_errors=True)  # the dumps: megabytes a round
    doc.update(exit=proc.returncode, seconds=round(wall, 1), load_before=load)
    return doc


def counts_of(doc: dict[str, Any], key: str) -> dict[str, float]:
    return {b["name"]: b[key] for b in doc.get("benchmarks", []) if b.get(key) is not None}


def summarise(aa: list[dict[str, Any]], slowed: list[dict[str, Any]]) -> dict[str, Any]:
    per_benchmark: dict[str, list[float]] = {}
    for doc in aa:
        for key in ("base_per_iteration", "contender_per_iteration"):
            for name, value in counts_of(doc, key).items():
                per_benchmark.setdefault(name, []).append(value)
    for doc in slowed:
        for name, value in counts_of(doc, "base_per_iteration").items():
            per_benchmark.setdefault(name, []).append(value)
    spread = {
        name: {
            "runs": len(values),
            "min": min(values),
            "max": max(values),
            "spread_pct": (max(values) - min(values)) / min(values) * 100 if min(values) else 0,
        }
        for name, values in per_benchmark.items()
    }
    changes = [
        b["change"]
        for doc in slowed
        for b in doc.get("benchmarks", [])
        if b["name"].endswith(SLOWED_ROW) and b.get("change") is not None
    ]
    others_flagged = sum(
        1
        for doc in slowed
        for b in doc.get("benchmarks", [])
        if "/cpu/small/" not in b["name"] and b["verdict"] != "same"
    )
    return {
        "aa_gates": len(aa),
        "aa_false_alarms": sum(1 for d in aa if d["exit"] == 1),
        "aa_exits": [d["exit"] for d in aa],
        "slowed_gates": len(slowed),
        "slowed_caught": sum(1 for d in slowed if d["exit"] == 1),
        "slowed_exits": [d["exit"] for d in slowed],
        "slowed_row": SLOWED_ROW,
        "slowed_row_change_pct": {
            "min": min(changes) * 100 if changes else None,
            "max": max(changes) * 100 if changes else None,
        },
        "slowed_rows_outside_the_kernel_not_same": others_flagged,
        "slowed_changes_pct_by_row": {
            name: sorted(
                {
                    round(b["change"] * 100, 3)
                    for doc in slowed
                    for b in doc["benchmarks"]
                    if b["name"] == name and b.get("change") is not None
                }
            )
            for name in {b["name"] for doc in slowed for b in doc.get("benchmarks", [])}
        },
        "count_spread_over_base_runs": spread,
        "lane_seconds": {
            "min": min(d["seconds"] for d in aa + slowed),
            "max": max(d["seconds"] for d in aa + slowed),
        },
        "load_before": {
            "min": min(d["load_before"] for d in aa + slowed),
            "max": max(d["load_before"] for d in aa + slowed),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-bench", required=True)
    parser.add_argument("--slowed-bench", required=True)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default="reports/baselines/instruction-lane-2core.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="instruction-lane-"))
    base, slowed_bench = work / "base-bench", work / "slowed-bench"
    shutil.copy2(args.base_bench, base)
    shutil.copy2(args.slowed_bench, slowed_bench)
    aa: list[dict[str, Any]] = []
    slowed: list[dict[str, Any]] = []
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    for r in range(args.rounds):
        # Alternate which kind goes first, so a drift of the machine lands on both.
        kinds = ("aa", "slowed") if r % 2 == 0 else ("slowed", "aa")
        for kind in kinds:
            if kind == "aa":
                aa.append(run_lane(base, base, work, f"aa-{r}"))
                doc = aa[-1]
            else:
                slowed.append(run_lane(base, slowed_bench, work, f"slowed-{r}"))
                doc = slowed[-1]
            print(
                f"round {r + 1}/{args.rounds} {kind}: exit {doc['exit']}, {doc['seconds']} s, "
                f"load {doc['load_before']:.1f}",
                flush=True,
            )
    result = {
        "what": "real runs of the gate's instruction lane: A/A (one binary both sides) and base "
        "against a build with GPUBENCH_TEST_EXTRA_WORK_PCT (small-matrix training kernel slowed)",
        "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "node": platform.node(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
        },
        "base_bench": args.base_bench,
        "slowed_bench": args.slowed_bench,
        "summary": summarise(aa, slowed),
        "aa": aa,
        "slowed": slowed,
    }
    out = ROOT / args.out if not os.path.isabs(args.out) else Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result["summary"], indent=1))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
