"""What scripts/measure-gate-power.py and scripts/measure-gate-real.py share: the sweep the gate
judges, the load average, the log line, and the pairs of a paired run read back from its files."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from gpubench_tools.benchjson import load_report  # noqa: E402

# The sweep of scripts/ci_gate.sh (single-threaded fp32 GEMMs, launch-bound to compute-bound).
SIZES = (64, 192, 256, 384, 512)
FILTER = (
    "^matmul/cpu/openblas/dtype:fp32/("
    + "|".join(f"m:{s}/n:{s}/k:{s}" for s in SIZES)
    + ")/threads:1$"
)


def load() -> list[float]:
    """The 1-, 5- and 15-minute load averages."""
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {load()[0]:.2f}] {text}", file=sys.stderr, flush=True)


def short(name: str) -> str:
    """The size part of a sweep benchmark's name ("m:256")."""
    return next((p for p in name.split("/") if p.startswith("m:")), name)


def pairs_of(directory: Path, clock: str = "cpu_time") -> dict[str, dict[str, dict[int, float]]]:
    """name -> side -> repetition index -> time of a paired run's two files in `directory`; side
    "disturbed" -> index -> whether either side's repetition carries disturbed=1."""
    out: dict[str, dict[str, dict[int, float]]] = {}
    for side in ("base", "contender"):
        for row in load_report(str(directory / f"{side}.json")).rows:
            if row.run_type == "iteration" and row.usable:
                value = row.cpu_time_s if clock == "cpu_time" else row.real_time_s
                sides = out.setdefault(row.run_name, {})
                sides.setdefault(side, {})[row.repetition_index] = value
                marks = sides.setdefault("disturbed", {})
                hit = bool(row.counters.get("disturbed", 0))
                marks[row.repetition_index] = marks.get(row.repetition_index, False) or hit
    return out
