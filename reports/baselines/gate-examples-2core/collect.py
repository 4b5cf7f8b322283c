"""Collects the real gates of the example programs (run.sh) into one JSON: per gate its example,
kind (aa: the same program on both sides; slow: a copy whose CPU function does about 5 % more
work), exit status, seconds, the load average after it, both lanes' gate lines, the timing lane's
verdicts with their intervals and the instruction lane's counts per row.
Usage: python collect.py GATES_DIR SUMMARY.txt OUT.json"""
import json
import re
import sys
from pathlib import Path

gates_dir, summary, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
runs = []
for line in summary.read_text().splitlines():
    m = re.match(r"(\S+) (\S+) (\S+) exit=(\d+) seconds=(\d+) load=(\S+) line=(.*)", line)
    if not m:
        continue
    name, example, kind, code, seconds, load, gate = m.groups()
    kind = "aa" if kind == "base" else kind  # run.sh names the contender: the base itself, or slow
    folder = gates_dir / name
    timing = json.loads((folder / "paired-compare.json").read_text())
    lane = json.loads((folder / "instructions-compare.json").read_text())
    runs.append(
        {
            "name": name, "example": example, "kind": kind, "exit": int(code),
            "seconds": int(seconds), "load_after": float(load), "gate": gate,
            "timing_gate": timing.get("gate"), "instructions_gate": lane.get("gate"),
            "timing": [
                {k: b.get(k) for k in ("name", "verdict", "ratio", "interval", "pairs")}
                for b in timing.get("benchmarks", [])
            ],
            "instructions": [
                {k: b.get(k) for k in ("name", "verdict", "base_per_iteration",
                                       "contender_per_iteration", "change")}
                for b in lane.get("benchmarks", [])
            ],
        }
    )
doc = {"_about": __doc__.split("Usage")[0].strip(), "runs": runs}
out.write_text(json.dumps(doc, indent=1) + "\n")
print(f"{len(runs)} gates -> {out}")
