#!/usr/bin/env python3
"""Measures the paired regression gate (scripts/ci_gate.sh --base-bench/--against) on this machine:
how often it fails unchanged code, how often it catches a slowdown, and how long it takes.

RESAMPLED: the power stated here comes from shuffling one pool of quiet rounds (the bursts of a
shared host are gone) and planting slowdowns by multiplying samples. The gate's real power, in real
gates beside a quiet and a bursty neighbour, is scripts/measure-gate-real.py's, and the pool here
uses the earlier scheme, one repetition of 0.1 s per process. (The committed file's "schemes",
"hog" and "real" entries were measured by an earlier version of this script.)

Phases (both by default; the output keeps what each measured, with the load average around it):

1. pool: real interleaved A/A rounds (the same bench on both sides), one repetition a round.
2. simulate: gate runs resampled from the pool (each draws its rounds without replacement and
   takes more for a benchmark still AMBIGUOUS, as the gate does), judged by the gate's own code
   (gpubench_tools.compare.paired): the false FAIL rate; then the same with one benchmark's
   contender times scaled by 1.03, 1.05, 1.10, 1.20 (power: the share of runs that FAIL it).

Usage: scripts/measure-gate-power.py [--bench build/benchmarks/bench] [--out FILE.json]
       [--markdown FILE.md] [--pool-rounds 120] [--gate-runs 1000] [--skip PHASE]
       [--from FILE.json]  (re-simulate from a saved pool instead of measuring one)
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate_sweep import FILTER, ROOT, load, log, pairs_of, short  # noqa: E402
from gpubench_tools.cli import ArgumentParser, Number  # noqa: E402
from gpubench_tools.compare import paired  # noqa: E402
from gpubench_tools.compare.engine import natural_key  # noqa: E402
from gpubench_tools.compare.interleave import PairedRun  # noqa: E402

SHIFTS = (0.03, 0.05, 0.10, 0.20)


def phase_pool(bench: str, work: Path, rounds: int) -> dict:
    run = PairedRun([bench], [bench], work / "pool", FILTER, 0.1, 1)
    before, start = load(), time.monotonic()
    step = 10
    while run.rounds_done < rounds:
        run.run_rounds(min(step, rounds - run.rounds_done))
        log(f"pool: {run.rounds_done}/{rounds} rounds")
    run.write()
    data = {}
    for name, sides in pairs_of(run.out_dir).items():
        idx = sorted(set(sides["base"]) & set(sides["contender"]))
        data[name] = {
            "base_s": [sides["base"][i] for i in idx],
            "contender_s": [sides["contender"][i] for i in idx],
            "disturbed": [sides["disturbed"][i] for i in idx],
        }
    return {
        "rounds": rounds,
        "seconds": time.monotonic() - start,
        "load_before": before,
        "load_after": load(),
        "clock": "cpu_time",
        "benchmarks": data,
    }


def simulate_gate(
    pool: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
    rules: paired.PairedRules,
    rng: np.random.Generator,
    slowed: str | None = None,
    factor: float = 1.0,
) -> dict[str, tuple[str, int]]:
    """One resampled gate run, as interleave.py runs it: start_pairs rounds, then more rounds in
    steps of half of that for a benchmark that may be slower (AMBIGUOUS, paired.possibly_slower)
    or short of pairs because pairs were left out as disturbed, up to max_pairs rounds, or
    SLOWER on fewer than confirm_pairs pairs (paired.needs_confirmation).
    """
    rounds = len(next(iter(pool.values()))[0])
    order = rng.permutation(rounds)
    step = max(1, -(-rules.start_pairs // 2))
    out = {}
    for name, (base, cont, disturbed) in pool.items():
        cont = cont * factor if name == slowed else cont
        n = rules.start_pairs
        while True:
            drawn = order[:n]
            kept = drawn[~disturbed[drawn]]
            verdict, est = paired.judge_values(base[kept], cont[kept], rules, False)
            maybe_slower = verdict == paired.AMBIGUOUS and paired.possibly_slower(est, rules)
            short_of_pairs = verdict == paired.FEW and kept.size < drawn.size
            confirm = verdict == paired.SLOWER and paired.needs_confirmation(n, rules)
            if not (maybe_slower or short_of_pairs or confirm) or n >= rules.max_pairs:
                break
            n = min(rules.max_pairs, n + step)
        out[name] = (verdict, n, verdict == paired.AMBIGUOUS and maybe_slower)
    return out


def phase_simulate(pool_doc: dict, rules: paired.PairedRules, runs: int, seed: int = 0) -> dict:
    pool = {
        name: (
            np.array(v["base_s"]),
            np.array(v["contender_s"]),
            np.array(v.get("disturbed", [False] * len(v["base_s"])), dtype=bool),
        )
        for name, v in pool_doc["benchmarks"].items()
    }
    names = sorted(pool, key=natural_key)
    rng = np.random.default_rng(seed)
    fails = ambiguous = few = loud = 0
    rounds_used = []
    for _ in range(runs):
        res = simulate_gate(pool, rules, rng)
        fails += any(v == paired.SLOWER for v, _, _ in res.values())
        ambiguous += any(v == paired.AMBIGUOUS for v, _, _ in res.values())
        loud += any(flag for _, _, flag in res.values())
        few += any(v == paired.FEW for v, _, _ in res.values())
        rounds_used.append(max(n for _, n, _ in res.values()))
    out = {
        "gate_runs": runs,
        "false_fail": fails / runs,
        "false_fails": fails,
        "ambiguous_runs": ambiguous / runs,
        "possibly_slower_ambiguous_runs": loud / runs,
        "runs_with_a_benchmark_not_judged_disturbed": few / runs,
        "pairs_disturbed": float(np.mean([p[2].mean() for p in pool.values()])),
        "mean_rounds": float(np.mean(rounds_used)),
        "max_rounds": int(max(rounds_used)),
        "power": {},
    }
    per = max(1, runs // len(names))
    for shift in SHIFTS:
        caught = {}
        for name in names:
            hits = sum(
                simulate_gate(pool, rules, rng, name, 1 + shift)[name][0] == paired.SLOWER
                for _ in range(per)
            )
            caught[short(name)] = hits / per
        out["power"][f"{shift:.2f}"] = {
            "runs": per * len(names),
            "caught": float(np.mean(list(caught.values()))),
            "by_benchmark": caught,
        }
        log(f"simulate: {shift:.0%} caught {out['power'][f'{shift:.2f}']['caught']:.3f}")
    return out


def markdown(doc: dict) -> str:
    sim, rules = doc.get("simulate"), doc["rules"]
    lines = []
    if sim:
        pool = doc["pool"]
        lines += [
            f"Resampled from {pool['rounds']} real interleaved A/A rounds (load average "
            f"{pool['load_before'][0]:.1f} before, {pool['load_after'][0]:.1f} after, on "
            f"{doc['machine']['cpus']} CPUs); {sim['gate_runs']} gate runs per row; margin "
            f"{rules['margin'] * 100:g} %, alpha {rules['alpha']:g}, {rules['start_pairs']} to "
            f"{rules['max_pairs']} pairs.",
            "",
            "| planted slowdown of one benchmark | gate FAILs | per benchmark (m = n = k) |",
            "|---|---|---|",
            f"| none (A/A): false FAIL | {sim['false_fail'] * 100:.1f} % "
            f"({sim['false_fails']} of {sim['gate_runs']}) | an AMBIGUOUS row in "
            f"{sim['ambiguous_runs'] * 100:.0f} % of runs, the loud possibly-slower line in "
            f"{sim['possibly_slower_ambiguous_runs'] * 100:.1f} % (exit 0); mean "
            f"{sim['mean_rounds']:.1f} rounds; a benchmark not judged as "
            f"disturbed in {sim['runs_with_a_benchmark_not_judged_disturbed'] * 100:.0f} % "
            f"({sim['pairs_disturbed'] * 100:.0f} % of pairs disturbed) |",
        ]
        for shift, p in sim["power"].items():
            per = ", ".join(f"{k[2:]}: {v * 100:.0f} %" for k, v in p["by_benchmark"].items())
            lines.append(f"| {float(shift) * 100:.0f} % | {p['caught'] * 100:.1f} % | {per} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    count = Number(1, 1_000_000, integer=True)
    parser.add_argument("--bench", default=str(ROOT / "build" / "benchmarks" / "bench"))
    parser.add_argument(
        "--out", default=str(ROOT / "reports" / "baselines" / "gate-power-2core.json")
    )
    parser.add_argument("--markdown")
    parser.add_argument("--pool-rounds", type=count, default=120)
    parser.add_argument("--gate-runs", type=count, default=1000)
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        choices=("pool", "simulate"),
    )
    parser.add_argument("--from", dest="from_file", help="re-use the pool (and more) of this file")
    args = parser.parse_args()
    source = Path(args.bench).resolve()
    if not os.access(source, os.X_OK):
        print(
            f"measure-gate-power: error: no bench at {source} (build it, or pass --bench)",
            file=sys.stderr,
        )
        return 2
    work = Path(tempfile.mkdtemp(prefix="gate-power-"))
    log(f"working in {work}")
    # A private copy: a rebuild of the build folder during the hour this takes must not swap the
    # binary under one side of an A/A run.
    bench = str(work / "bench")
    shutil.copy2(source, bench)
    rules = paired.DEFAULT_RULES
    doc: dict = json.loads(Path(args.from_file).read_text()) if args.from_file else {}
    measured_by = {k: doc[k] for k in ("machine", "bench", "bench_sha256") if k in doc}
    doc.update(
        {
            "_about": "The paired gate measured on this machine by scripts/measure-gate-power.py;"
            " docs/regression-gate.md, 'Paired gate', reads it.",
            "machine": {"cpus": os.cpu_count(), "cpu": platform.processor() or platform.machine()},
            # Where the bench lies relative to the checkout (an absolute path says only where
            # one machine kept it); its hash says which build it was.
            "bench": os.path.relpath(source, ROOT),
            "bench_sha256": hashlib.sha256(Path(bench).read_bytes()).hexdigest(),
            "filter": FILTER,
            "rules": rules.as_dict(),
        }
    )
    # Re-simulated from a saved pool: the pool's machine and bench stay the ones that measured it.
    doc.update(measured_by)
    if "pool" not in args.skip and not args.from_file:
        doc["pool"] = phase_pool(bench, work, args.pool_rounds)
    if "simulate" not in args.skip and "pool" in doc:
        doc["simulate"] = phase_simulate(doc["pool"], rules, args.gate_runs)
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    table = markdown(doc)
    if args.markdown:
        Path(args.markdown).write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
