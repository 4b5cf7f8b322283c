"""Our CPU CNN step against PyTorch's eager CPU training step of the same network, as ratios
measured in one run: the two alternate, round after round, on the same machine, so load that
comes and goes hits both (absolute times on shared machines are noisy; their ratio much less).

Usage: python3 tools/reference/cnn_cpu_against_torch.py [--bench build/benchmarks/bench]
       [--batch 64] [--threads 1] [--rounds 5] [--out ratios.json]

`--threads N` runs both sides on N cores: the suite's `threads:N` row (its thread rule,
kernels/cnn/cnn_cpu.hpp) and PyTorch with torch.set_num_threads(N) and
torch.set_num_interop_threads(N) (tools/reference/torch_cnn.py).

Needs PyTorch (Debian: `apt-get install python3-torch`, then run this with /usr/bin/python3).
Prints each round's t_step of both and PyTorch / ours (above 1: ours is faster), then the medians;
the JSON keeps every round (both sides and the machine's load average before the round).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def step_seconds(path: Path, name_part: str) -> float:
    rows = json.loads(path.read_text())["benchmarks"]
    found = [row for row in rows if name_part in row["name"] and not row.get("error_occurred")]
    if not found:
        raise SystemExit(f"no row with '{name_part}' in {path}")
    return float(found[0]["t_step"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default="build/benchmarks/bench")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", help="write the rounds and the median ratio as JSON")
    args = parser.parse_args()
    suffix = f"batch:{args.batch}/readback:1/threads:{args.threads}"
    ratios = []
    rounds = []
    with tempfile.TemporaryDirectory() as folder:
        ours_json = Path(folder) / "ours.json"
        torch_json = Path(folder) / "torch.json"
        for round_index in range(args.rounds):
            subprocess.run(
                [
                    args.bench,
                    f"--benchmark_filter=^cnn/cpu/openblas/data:[a-z0-9]+/{suffix}$",
                    "--benchmark_min_time=2",
                    f"--benchmark_out={ours_json}",
                    "--benchmark_out_format=json",
                ],
                check=True,
                capture_output=True,
            )
            subprocess.run(
                [
                    sys.executable,
                    str(HERE / "torch_cnn.py"),
                    f"--out={torch_json}",
                    f"--cpu-batches={args.batch}",
                    f"--threads={args.threads}",
                    "--no-cuda",
                    "--seconds=2",
                ],
                check=True,
                capture_output=True,
            )
            ours = step_seconds(ours_json, suffix)
            theirs = step_seconds(torch_json, suffix)
            ratios.append(theirs / ours)
            rounds.append(
                {
                    "ours_t_step": ours,
                    "torch_t_step": theirs,
                    "load_average_1min": os.getloadavg()[0],
                }
            )
            print(
                f"round {round_index + 1}: ours {ours * 1e3:.2f} ms, PyTorch {theirs * 1e3:.2f} ms "
                f"per step, PyTorch / ours {ratios[-1]:.3f}"
            )
    median = statistics.median(ratios)
    ours_median = statistics.median(r["ours_t_step"] for r in rounds)
    torch_median = statistics.median(r["torch_t_step"] for r in rounds)
    print(
        f"median over {args.rounds} rounds: ours {ours_median * 1e3:.2f} ms, PyTorch "
        f"{torch_median * 1e3:.2f} ms, PyTorch / ours {median:.3f} (of the medians: "
        f"{torch_median / ours_median:.3f})"
    )
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "batch": args.batch,
                    "threads": args.threads,
                    "cpus": os.cpu_count(),
                    "rounds": rounds,
                    "median_torch_over_ours": median,
                    "median_ours_t_step": ours_median,
                    "median_torch_t_step": torch_median,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
