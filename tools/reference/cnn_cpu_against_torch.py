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
the JSON keeps every round: both sides, the load average, and how many cores other processes kept
busy while each side ran (Linux).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from reference_options import ReferenceParser, number

HERE = Path(__file__).resolve().parent


def step_seconds(path: Path, name_part: str) -> float:
    rows = json.loads(path.read_text())["benchmarks"]
    found = [row for row in rows if name_part in row["name"] and not row.get("error_occurred")]
    if not found:
        raise SystemExit(f"no row with '{name_part}' in {path}")
    return float(found[0]["t_step"])


def busy_cpu_seconds() -> float | None:
    """CPU seconds the whole machine has been busy (Linux /proc/stat), or None elsewhere."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:8]]
    except (OSError, ValueError):
        return None
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def run_measured(command: list[str]) -> float | None:
    """Runs `command` and returns how many cores other processes kept busy meanwhile (the
    machine's busy time less the command's own), or None where that cannot be read."""
    busy_before = busy_cpu_seconds()
    own_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.perf_counter() - start
    busy_after = busy_cpu_seconds()
    own_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if busy_before is None or busy_after is None:
        return None
    own = (own_after.ru_utime + own_after.ru_stime) - (own_before.ru_utime + own_before.ru_stime)
    return max(0.0, (busy_after - busy_before) - own) / wall


def main() -> int:
    parser = ReferenceParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", default="build/benchmarks/bench")
    parser.add_argument("--batch", type=number(1, 1 << 24, integer=True), default=64)
    parser.add_argument("--threads", type=number(1, 4096, integer=True), default=1)
    parser.add_argument("--rounds", type=number(1, 1000, integer=True), default=5)
    parser.add_argument("--out", help="write the rounds and the median ratio as JSON")
    args = parser.parse_args()
    suffix = f"batch:{args.batch}/readback:1/threads:{args.threads}"
    ratios = []
    rounds = []
    with tempfile.TemporaryDirectory() as folder:
        ours_json = Path(folder) / "ours.json"
        torch_json = Path(folder) / "torch.json"
        for round_index in range(args.rounds):
            others_ours = run_measured(
                [
                    args.bench,
                    f"--benchmark_filter=^cnn/cpu/openblas/data:[a-z0-9]+/{suffix}$",
                    "--benchmark_min_time=2",
                    f"--benchmark_out={ours_json}",
                    "--benchmark_out_format=json",
                ]
            )
            others_torch = run_measured(
                [
                    sys.executable,
                    str(HERE / "torch_cnn.py"),
                    f"--out={torch_json}",
                    f"--cpu-batches={args.batch}",
                    f"--threads={args.threads}",
                    "--no-cuda",
                    "--seconds=2",
                ]
            )
            ours = step_seconds(ours_json, suffix)
            theirs = step_seconds(torch_json, suffix)
            ratios.append(theirs / ours)
            rounds.append(
                {
                    "ours_t_step": ours,
                    "torch_t_step": theirs,
                    "load_average_1min": os.getloadavg()[0],
                    # Cores other processes kept busy while each side ran: a sharded step waits
                    # for the scheduler whenever another process holds one of its cores.
                    "other_processes_cores_ours": others_ours,
                    "other_processes_cores_torch": others_torch,
                }
            )
            busy = (
                f", other processes {others_ours:.2f} / {others_torch:.2f} cores"
                if others_ours is not None and others_torch is not None
                else ""
            )
            print(
                f"round {round_index + 1}: ours {ours * 1e3:.2f} ms, PyTorch {theirs * 1e3:.2f} ms "
                f"per step, PyTorch / ours {ratios[-1]:.3f}{busy}"
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
