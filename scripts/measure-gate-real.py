#!/usr/bin/env python3
"""Measures the paired regression gate in real runs on this machine, beside a quiet or a bursty
neighbour: which timing statistic survives the noise, how often the real gate passes unchanged
code, and how often it catches one benchmark slowed by 3, 5 and 10 %. Nothing is resampled.

Phases (all by default; output reports/baselines/gate-real-2core.json, which keeps every figure):

1. statistic: real interleaved A/A rounds of two sampling schemes, in alternating rounds so both
   see the same machine: one repetition of 0.1 s per process (the gate's scheme before this
   measurement), and INNER short repetitions per process with Google Benchmark's random
   interleaving. Per candidate statistic of a process (one repetition; the minimum, a low
   quantile, the median of its inner repetitions; with and without the pairs the conditions mark
   disturbed), per benchmark and condition: the spread of the pair log ratios (MAD), their centre,
   the share of pairs kept. The gate's statistic is the one with the tightest pairs.
2. gates: real `scripts/ci_gate.sh --base-bench A --contender-bench B` gates (the timing lane;
   the instruction lane has its own measurement, scripts/measure-instruction-lane.py). A and B
   are the same bench behind the same LD_PRELOAD shim and identical wrapper scripts; the shim
   makes cblas_sgemm with m = SLOWED_SIZE spin for a fraction of the call's own thread CPU time
   (0 for A; 0, 0.03, 0.05 or 0.10 for B): a real slower binary for ONE benchmark, with the
   same process layout on both sides. Kinds alternate, and each kind alternates quiet and bursty,
   so every kind sees the same spells of the machine. Per gate: exit, verdicts, intervals, pairs,
   wall time, load average before and after.

The bursty neighbour is a process that keeps one core busy for BURST_S and sleeps for BURST_S,
over and over (the pattern of a shared runner's other jobs).

Usage: scripts/measure-gate-real.py [--bench build/benchmarks/bench] [--out FILE.json]
       [--phase statistic|gates ...] [--rounds 30] [--aa-gates 30] [--slowed-gates 20]
       [--from FILE.json] (add phases to a saved file; --markdown re-prints it)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
from scipy.stats import binomtest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gate_sweep import FILTER, ROOT, load, log, pairs_of, short  # noqa: E402
from gpubench_tools.benchjson import BenchJsonError  # noqa: E402
from gpubench_tools.cli import ArgumentParser, Number  # noqa: E402
from gpubench_tools.compare.interleave import PairedRun, _get, _set  # noqa: E402

BURST_S = 1.0
SLOWED_SIZE = 256
SLOWDOWNS = (0.0, 0.03, 0.05, 0.10)
CONDITIONS = ("quiet", "bursty")
# The statistic phase's inner scheme: INNER repetitions of INNER_MIN_TIME_S each per process.
INNER, INNER_MIN_TIME_S = 9, 0.01
NEIGHBOUR = f"""
import time
while True:
    end = time.monotonic() + {BURST_S}
    while time.monotonic() < end:
        pass
    time.sleep({BURST_S})
"""
SHIM_C = r"""
// cblas_sgemm of one size made slower: the real call, then a spin of GPUBENCH_SHIM_SLOWDOWN times
// the call's own thread CPU time, only when m == GPUBENCH_SHIM_SIZE. The thread CPU clock is the
// clock the gate judges (cpu_time), so the planted slowdown is the one asked for.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
static sgemm_fn real_sgemm;
static double slowdown = -1.0;
static int size = -1;
static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  if (!real_sgemm) real_sgemm = (sgemm_fn)dlsym(RTLD_NEXT, "cblas_sgemm");
  if (slowdown < 0) {
    const char *s = getenv("GPUBENCH_SHIM_SLOWDOWN");
    const char *z = getenv("GPUBENCH_SHIM_SIZE");
    slowdown = s ? atof(s) : 0.0;
    size = z ? atoi(z) : -1;
  }
  if (m != size || slowdown <= 0) {
    real_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  double t0 = now();
  real_sgemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  double end = now() + slowdown * (now() - t0);
  while (now() < end) {
  }
}
"""


@contextlib.contextmanager
def neighbour(condition: str) -> Iterator[None]:
    """Nothing for "quiet"; for "bursty", a process busy for BURST_S, idle for BURST_S, repeating."""
    if condition == "quiet":
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", NEIGHBOUR])
    try:
        time.sleep(0.5)
        yield
    finally:
        proc.kill()
        proc.wait()


def mad(values: np.ndarray) -> float:
    return (
        float(1.4826 * np.median(np.abs(values - np.median(values)))) if values.size else math.nan
    )


def wilson(hits: int, n: int) -> list[float]:
    """The 95 % Wilson score interval of hits / n (scipy's binomtest)."""
    if n == 0:
        return [math.nan, math.nan]
    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [float(ci.low), float(ci.high)]


# -- phase 1: the statistic -------------------------------------------------------------------

# A process's candidate statistics: its inner repetitions (times, disturbed marks) -> one value, or
# None when the candidate leaves the process out.
Statistic = Callable[[np.ndarray, np.ndarray], "float | None"]


def _quantile(q: float, skip_disturbed: bool = False, first: int | None = None) -> Statistic:
    def stat(times: np.ndarray, disturbed: np.ndarray) -> float | None:
        t, d = times[:first], disturbed[:first]
        if skip_disturbed:
            t = t[~d]
        return float(np.quantile(t, q, method="lower")) if t.size else None

    return stat


CANDIDATES: dict[str, Statistic] = {
    "one repetition of 0.01 s": _quantile(0.0, first=1),
    "one repetition of 0.01 s, disturbed left out": _quantile(0.0, True, first=1),
    f"minimum of {INNER // 3}": _quantile(0.0, first=INNER // 3),
    f"minimum of {INNER}": _quantile(0.0),
    f"minimum of {INNER}, disturbed left out": _quantile(0.0, True),
    f"lower quartile of {INNER}": _quantile(0.25),
    f"median of {INNER}": _quantile(0.5),
}


class RawRun(PairedRun):
    """A paired run that keeps every inner repetition (the gate keeps each process's fastest):
    repetition j of round r gets index r * inner_repetitions + j."""

    def keep(self, rows: list[Any], r: int) -> list[Any]:
        seen: dict[str, int] = {}
        out = []
        for row in rows:
            name = str(_get(row, "name"))
            j = seen.get(name, 0)
            seen[name] = j + 1
            out.append(_set(row, "repetition_index", r * self.inner_repetitions + j))
        return out


def _per_process(run: PairedRun, reps: int) -> dict[str, dict[str, dict[int, tuple]]]:
    """name -> side -> process (round) -> (times, disturbed marks) of its repetitions."""
    out: dict[str, dict[str, dict[int, tuple]]] = {}
    for side, rows in run.rows.items():
        grouped: dict[tuple[str, int], list[tuple[float, bool]]] = {}
        for row in rows:
            key = (str(_get(row, "name")), int(_get(row, "repetition_index")) // reps)
            grouped.setdefault(key, []).append(
                (float(_get(row, "cpu_time")), bool(_get(row, "disturbed", 0)))
            )
        for (name, process), values in grouped.items():
            times = np.array([v[0] for v in values])
            marks = np.array([v[1] for v in values], dtype=bool)
            out.setdefault(name, {}).setdefault(side, {})[process] = (times, marks)
    return out


def _summary(d: list[float], kept: int, total: int) -> dict[str, Any]:
    values = np.array(d)
    return {
        "pairs": total,
        "kept": kept,
        "pair_spread_mad": mad(values),
        "centre": float(np.median(values)) if values.size else math.nan,
        "worst": float(np.max(np.abs(values))) if values.size else math.nan,
    }


def _judge_candidates(
    processes: dict[str, dict[str, dict[int, tuple]]], candidates: dict[str, Statistic]
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for label, stat in candidates.items():
        per_benchmark = {}
        for name, sides in processes.items():
            common = sorted(set(sides["base"]) & set(sides["contender"]))
            d = []
            for p in common:
                a, b = stat(*sides["base"][p]), stat(*sides["contender"][p])
                if a is not None and b is not None:
                    d.append(math.log(b / a))
            per_benchmark[short(name)] = _summary(d, len(d), len(common))
        out[label] = per_benchmark
    return out


def phase_statistic(bench: str, work: Path, rounds: int, block: int = 3) -> dict:
    """Alternating blocks of quiet and bursty rounds; in each round the single-repetition scheme
    and the inner scheme, in alternating order."""
    runs = {
        (condition, scheme): RawRun(
            [bench],
            [bench],
            work / f"statistic-{condition}-{scheme}",
            FILTER,
            *((0.1, 1) if scheme == "single" else (INNER_MIN_TIME_S, INNER)),
        )
        for condition in CONDITIONS
        for scheme in ("single", "inner")
    }
    loads: dict[str, list[float]] = {c: [] for c in CONDITIONS}
    start = time.monotonic()
    done = 0
    while done < rounds:
        for condition in CONDITIONS:
            with neighbour(condition):
                for i in range(min(block, rounds - done)):
                    loads[condition].append(load()[0])
                    schemes = ("single", "inner") if (done + i) % 2 == 0 else ("inner", "single")
                    for scheme in schemes:
                        runs[(condition, scheme)].run_rounds(1)
        done += min(block, rounds - done)
        log(f"statistic: {done}/{rounds} rounds a condition")
    out: dict[str, Any] = {
        "rounds": rounds,
        "inner_repetitions": INNER,
        "inner_min_time_s": INNER_MIN_TIME_S,
        "seconds": time.monotonic() - start,
        "conditions": {},
    }
    for condition in CONDITIONS:
        single = _per_process(runs[(condition, "single")], 1)
        inner = _per_process(runs[(condition, "inner")], INNER)
        judged = _judge_candidates(
            single,
            {
                "one repetition of 0.1 s (the gate before)": _quantile(0.0),
                "one repetition of 0.1 s, disturbed left out (the gate before)": _quantile(
                    0.0, True
                ),
            },
        )
        judged.update(_judge_candidates(inner, CANDIDATES))
        out["conditions"][condition] = {
            "load": [min(loads[condition]), max(loads[condition])],
            "statistics": judged,
        }
    return out


def statistic_markdown(doc: dict) -> str:
    lines = [
        f"Real A/A rounds, {doc['rounds']} a condition; per process either one repetition of"
        f" 0.1 s or {doc['inner_repetitions']} of {doc['inner_min_time_s']:g} s (random"
        " interleaving). Cells: spread of the pair log ratios (MAD, %) / pairs kept of those run.",
        "",
    ]
    for condition, entry in doc["conditions"].items():
        stats = entry["statistics"]
        names = list(next(iter(stats.values())))
        lines += [
            f"**{condition}** (load {entry['load'][0]:.1f}-{entry['load'][1]:.1f})",
            "",
            "| statistic | " + " | ".join(names) + " | mean spread |",
            "|---|" + "---|" * (len(names) + 1),
        ]
        for label, per in stats.items():
            cells = [f"{per[n]['pair_spread_mad'] * 100:.2f} / {per[n]['kept']}" for n in names]
            mean = np.nanmean([per[n]["pair_spread_mad"] for n in names]) * 100
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {mean:.2f} |")
        lines.append("")
    return "\n".join(lines)


# -- phase 2: real gates ----------------------------------------------------------------------


def _wrappers(bench: str, work: Path) -> dict[float, str]:
    """slowdown -> a wrapper that runs bench with the shim; every wrapper has the same form and
    length, so the base (slowdown 0) and each contender start alike."""
    source, shim = work / "slow_sgemm.c", work / "slow_sgemm.so"
    source.write_text(SHIM_C)
    subprocess.run(
        ["cc", "-O2", "-shared", "-fPIC", "-o", str(shim), str(source), "-ldl"], check=True
    )
    out = {}
    for slowdown in SLOWDOWNS:
        wrapper = work / f"bench-slowed-{slowdown:.3f}"
        wrapper.write_text(
            "#!/bin/sh\n"
            f"GPUBENCH_SHIM_SIZE={SLOWED_SIZE} GPUBENCH_SHIM_SLOWDOWN={slowdown:.3f} "
            f'LD_PRELOAD={shim} exec {bench} "$@"\n'
        )
        wrapper.chmod(0o755)
        out[slowdown] = str(wrapper)
    return out


def gate_run(base: str, contender: str, out_dir: Path) -> dict[str, Any]:
    """One real gate, the timing lane (INSTRUCTIONS=off), as CI runs it."""
    env = dict(os.environ, OUT_DIR=str(out_dir), PYTHON=sys.executable, INSTRUCTIONS="off")
    before, start = load()[0], time.monotonic()
    proc = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts" / "ci_gate.sh"),
            "--base-bench",
            base,
            "--contender-bench",
            contender,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=900,
    )
    seconds = time.monotonic() - start
    verdicts = {}
    with contextlib.suppress(OSError, ValueError):
        for b in json.loads((out_dir / "paired-compare.json").read_text()).get("benchmarks", []):
            verdicts[short(b["name"])] = {
                k: b.get(k) for k in ("verdict", "ratio", "interval", "pairs", "pairs_left_out")
            }
    gate = next((line for line in proc.stdout.splitlines() if line.startswith("gate:")), "")
    # Every pair's log ratio, for the same-binary offset over the pooled pairs.
    log_ratios: dict[str, list[float]] = {}
    with contextlib.suppress(OSError, ValueError, BenchJsonError):
        for name, sides in pairs_of(out_dir / "paired").items():
            common = sorted(set(sides["base"]) & set(sides["contender"]))
            log_ratios[short(name)] = [
                math.log(sides["contender"][i] / sides["base"][i]) for i in common
            ]
    return {
        "log_ratios": log_ratios,
        "exit": proc.returncode,
        "seconds": seconds,
        "load_before": before,
        "load_after": load()[0],
        "gate": gate,
        "verdicts": verdicts,
    }


def phase_gates(bench: str, work: Path, counts: dict[float, int], previous: dict | None) -> dict:
    """Real gates of every kind, kinds and conditions alternating; resumes `previous`."""
    wrappers = _wrappers(bench, work)
    runs: list[dict] = list((previous or {}).get("runs", []))
    done = {k: sum(1 for r in runs if r["slowdown"] == k) for k in SLOWDOWNS}
    while any(done[k] < counts[k] for k in SLOWDOWNS):
        for slowdown in SLOWDOWNS:
            if done[slowdown] >= counts[slowdown]:
                continue
            condition = CONDITIONS[done[slowdown] % 2]
            tag = f"gate-{len(runs) + 1:03d}"
            with neighbour(condition):
                result = gate_run(wrappers[0.0], wrappers[slowdown], work / tag)
            result.update({"slowdown": slowdown, "condition": condition})
            runs.append(result)
            done[slowdown] += 1
            slowed = result["verdicts"].get(f"m:{SLOWED_SIZE}", {})
            log(
                f"{tag} {condition} slowdown {slowdown:.0%}: exit {result['exit']} in "
                f"{result['seconds']:.0f} s; m:{SLOWED_SIZE} {slowed.get('verdict')} "
                f"{slowed.get('ratio')}"
            )
            GATES_PROGRESS({"slowed_size": SLOWED_SIZE, "runs": runs})
    return {"slowed_size": SLOWED_SIZE, "runs": runs}


def _rate(runs: list[dict], hit: Callable[[dict], bool]) -> dict[str, Any]:
    hits = sum(1 for r in runs if hit(r))
    return {"hits": hits, "of": len(runs), "wilson95": wilson(hits, len(runs))}


def pooled_offset(d: np.ndarray) -> tuple[float, float, float]:
    """Hodges-Lehmann estimate of the pooled log ratios and its 95 % signed-rank interval, in %
    (the normal approximation of the rank: the exact one is too slow for hundreds of pairs)."""
    n = d.size
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2.0)
    k = int(n * (n + 1) / 4 - 1.96 * math.sqrt(n * (n + 1) * (2 * n + 1) / 24))
    k = max(k, 1)
    pct = lambda x: (math.exp(float(x)) - 1) * 100  # noqa: E731
    return pct(np.median(walsh)), pct(walsh[k - 1]), pct(walsh[walsh.size - k])


def gates_summary(doc: dict) -> dict[str, Any]:
    """Per kind and condition: gate FAILs, the slowed benchmark's SLOWER, false SLOWER of the
    others, exit statuses, wall times, loads; and the same-binary offset per benchmark."""
    runs = doc["runs"]
    slowed = f"m:{doc['slowed_size']}"
    out: dict[str, Any] = {"kinds": {}}
    for slowdown in SLOWDOWNS:
        for condition in (*CONDITIONS, "all"):
            group = [
                r
                for r in runs
                if r["slowdown"] == slowdown and condition in (r["condition"], "all")
            ]
            if not group:
                continue
            others = [(r, name) for r in group for name in r["verdicts"] if name != slowed]
            out["kinds"][f"{slowdown:.2f} {condition}"] = {
                "gates": len(group),
                "gate_fail": _rate(group, lambda r: r["exit"] == 1),
                "slowed_benchmark_slower": _rate(
                    group, lambda r: r["verdicts"].get(slowed, {}).get("verdict") == "slower"
                ),
                "other_benchmarks_slower": {
                    "hits": sum(1 for r, n in others if r["verdicts"][n]["verdict"] == "slower"),
                    "of": len(others),
                },
                "exits": {str(e): sum(1 for r in group if r["exit"] == e) for e in (0, 1, 2, 3)},
                "seconds": [
                    min(r["seconds"] for r in group),
                    float(np.median([r["seconds"] for r in group])),
                    max(r["seconds"] for r in group),
                ],
                "load": [
                    min(min(r["load_before"], r["load_after"]) for r in group),
                    max(max(r["load_before"], r["load_after"]) for r in group),
                ],
            }
    # The same-binary offset: the Hodges-Lehmann estimate over the pooled pairs of every A/A gate
    # (the gate's own estimator), its 95 % interval, and the range of the gates' own estimates.
    aa = [r for r in runs if r["slowdown"] == 0.0]
    offsets = {}
    for name in sorted({n for r in aa for n in r["verdicts"]}, key=lambda n: int(n[2:])):
        pooled = [d for r in aa for d in r.get("log_ratios", {}).get(name, [])]
        ratios = [
            r["verdicts"][name]["ratio"] for r in aa if r["verdicts"].get(name, {}).get("ratio")
        ]
        entry: dict[str, Any] = {"gates": len(ratios), "pairs": len(pooled)}
        if len(pooled) >= 10:
            centre, low, high = pooled_offset(np.array(pooled))
            entry["pooled_pct"] = centre
            entry["pooled_interval_pct"] = [low, high]
        if ratios:
            entry["gate_estimates_pct"] = [(min(ratios) - 1) * 100, (max(ratios) - 1) * 100]
        offsets[name] = entry
    out["same_binary_offset"] = offsets
    return out


GATES_PROGRESS: Callable[[dict], None] = lambda doc: None


def gates_markdown(gates: dict) -> str:
    summary = gates_summary(gates)
    slowed = f"m = n = k = {gates['slowed_size']}"

    def pct(rate: dict) -> str:
        low, high = rate["wilson95"]
        return f"{rate['hits']} of {rate['of']} ({low * 100:.0f}-{high * 100:.0f} %)"

    lines = [
        f"Real gates (timing lane), one benchmark ({slowed}) slowed by a preloaded shim on the"
        " contender side; cells: count (95 % Wilson interval).",
        "",
        "| slowdown | neighbour | gates | gate FAIL | slowed benchmark SLOWER | other benchmarks"
        " SLOWER | exits 0/1/2/3 | wall s (min/median/max) | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, k in summary["kinds"].items():
        slowdown, condition = key.split()
        exits = "/".join(str(k["exits"][e]) for e in ("0", "1", "2", "3"))
        seconds = "/".join(f"{v:.0f}" for v in k["seconds"])
        lines.append(
            f"| {float(slowdown) * 100:.0f} % | {condition} | {k['gates']} | {pct(k['gate_fail'])}"
            f" | {pct(k['slowed_benchmark_slower'])} | {k['other_benchmarks_slower']['hits']} of"
            f" {k['other_benchmarks_slower']['of']} | {exits} | {seconds} |"
            f" {k['load'][0]:.1f}-{k['load'][1]:.1f} |"
        )
    lines += ["", "Same-binary offset (every A/A gate's pairs pooled; the gate's estimator):", ""]
    lines += [
        "| benchmark | gates | pairs | pooled estimate [95 % interval] | gates' own estimates |",
        "|---|---|---|---|---|",
    ]
    for name, o in summary["same_binary_offset"].items():
        if "pooled_pct" in o:
            low, high = o["pooled_interval_pct"]
            g_low, g_high = o["gate_estimates_pct"]
            lines.append(
                f"| {name} | {o['gates']} | {o['pairs']} | {o['pooled_pct']:+.2f} % [{low:+.2f},"
                f" {high:+.2f}] | {g_low:+.2f} to {g_high:+.2f} % |"
            )
    return "\n".join(lines) + "\n"


def markdown(doc: dict) -> str:
    parts = []
    if "statistic" in doc:
        parts.append(statistic_markdown(doc["statistic"]))
    if "gates" in doc:
        parts.append(gates_markdown(doc["gates"]))
    return "\n".join(parts)


# -- main -------------------------------------------------------------------------------------


def main() -> int:
    parser = ArgumentParser(description=__doc__.split("\n\n")[0])
    count = Number(1, 100_000, integer=True)
    parser.add_argument("--bench", default=str(ROOT / "build" / "benchmarks" / "bench"))
    parser.add_argument(
        "--out", default=str(ROOT / "reports" / "baselines" / "gate-real-2core.json")
    )
    parser.add_argument("--phase", action="append", choices=("statistic", "gates"))
    parser.add_argument("--rounds", type=count, default=30, help="statistic: rounds a condition")
    parser.add_argument("--aa-gates", type=count, default=30, help="gates: unchanged code")
    parser.add_argument(
        "--slowed-gates", type=count, default=20, help="gates: for each of 3, 5 and 10 %%"
    )
    parser.add_argument("--from", dest="from_file", help="add to (or re-print) this saved file")
    parser.add_argument("--markdown", action="store_true", help="only print the saved file")
    args = parser.parse_args()
    doc: dict = json.loads(Path(args.from_file).read_text()) if args.from_file else {}
    if args.markdown:
        print(markdown(doc))
        return 0
    source = Path(args.bench).resolve()
    if not os.access(source, os.X_OK):
        print(
            f"measure-gate-real: error: no bench at {source} (build it, or pass --bench)",
            file=sys.stderr,
        )
        return 2
    work = Path(tempfile.mkdtemp(prefix="gate-real-"))
    log(f"working in {work}")
    # A private copy: a rebuild during the hour this takes must not swap the binary mid-run.
    bench = str(work / "bench")
    shutil.copy2(source, bench)
    doc.update(
        {
            "_about": "The paired gate measured in real runs by scripts/measure-gate-real.py;"
            " docs/regression-gate.md, 'Measured in real runs', reads it.",
            "machine": {"cpus": os.cpu_count(), "cpu": platform.processor() or platform.machine()},
            "bench_sha256": hashlib.sha256(Path(bench).read_bytes()).hexdigest(),
            "filter": FILTER,
            "burst_s": BURST_S,
        }
    )
    phases = args.phase or ["statistic", "gates"]
    if "statistic" in phases:
        doc["statistic"] = phase_statistic(bench, work, args.rounds)
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    if "gates" in phases:
        global GATES_PROGRESS

        def save(gates: dict) -> None:  # every gate is on disk as soon as it ran
            doc["gates"] = gates
            Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")

        GATES_PROGRESS = save
        gates = phase_gates(
            bench,
            work,
            {k: args.aa_gates if k == 0.0 else args.slowed_gates for k in SLOWDOWNS},
            doc.get("gates"),
        )
        gates["summary"] = gates_summary(gates)
        save(gates)
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
