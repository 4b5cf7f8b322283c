"""Instructions per iteration per benchmark, from the regions bench dumped (dumps.read_dumps).

Google Benchmark calls a fixture more than once while it picks the iteration count, and once per
repetition after that; each call's timed loop is a region. A loop's count is its iterations' plus
a fixed cost of entering and leaving the loop (Google Benchmark's timers), so the regions with the
most iterations carry the least of that fixed cost: they are the ones counted (the brief's
"the run with the most iterations"), and when there are several (repetitions), their agreement is
reported as the spread, which is zero for deterministic code. The lane runs each benchmark with
one iteration (--benchmark_min_time far below one iteration's time), so the fixed cost is in every
count, the same in base and contender: the counts then compare like for like.

Only single-threaded rows are counted: callgrind counts the thread that opened the region, and
OpenBLAS's worker threads, which do the rest of a multi-threaded row, spin for a time that depends
on scheduling. A region whose dump gives its thread count after the name (``ROW;threads=T``: the
public API's CPU rows, whose names have a threads part only with cpu_threads) is judged by that
count, the others by a ``threads:1`` part in the name; the count is not part of the row's name.
"""

from __future__ import annotations

import re

import pandas as pd

_THREADS = re.compile(r"(?:^|/)threads:(\d+)(?:/|$)")
# harness/instruction_region.hpp's suffix; no row name has a '=', so it is never part of a name.
_DUMPED_THREADS = re.compile(r";threads=(\d+)$")
COUNT_COLUMNS = ["name", "regions", "iterations", "instructions_per_iteration", "spread_pct"]


def single_threaded(name: str) -> bool:
    """Whether a region's name says it ran on one thread: its dumped count (``ROW;threads=1``),
    else the name's part (``.../threads:1``)."""
    match = _DUMPED_THREADS.search(name) or _THREADS.search(name)
    return match is not None and int(match.group(1)) == 1


def per_iteration(regions: pd.DataFrame) -> pd.DataFrame:
    """One row per single-threaded benchmark: how many regions it dumped, the iterations of the
    largest, the instructions per iteration (median over the regions with that many iterations)
    and their spread, (max - min) / median in percent. Regions of zero iterations (a fixture that
    stopped before its loop) are not counts."""
    frame = regions[regions["iterations"] > 0]
    frame = frame[frame["name"].map(single_threaded).astype(bool)]
    frame = frame.assign(name=frame["name"].str.replace(_DUMPED_THREADS, "", regex=True))
    rows = []
    for name, group in frame.groupby("name", sort=False):
        most = int(group["iterations"].max())
        top = group[group["iterations"] == most]
        per = top["instructions"].astype(float) / most
        median = float(per.median())
        spread = (float(per.max()) - float(per.min())) / median * 100 if median > 0 else 0.0
        rows.append([name, len(group), most, median, spread])
    return pd.DataFrame(rows, columns=COUNT_COLUMNS)
