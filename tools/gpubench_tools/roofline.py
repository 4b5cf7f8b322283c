"""Each row's time against the roof it can reach: the roofline model (Williams, Waterman and
Patterson, CACM 2009) applied to measured times, the same rule for the CPU and the GPU.

A row that does known work (`flop`, `bytes`: the minimum-traffic model of docs/workloads.md) cannot
take less than `t_roof = max(flop / compute roof, bytes / memory roof)`; the larger term names the
roof that binds. Its measured time splits into *at the roof* (`min(t_roof, t)`) and *below the
roof* (the rest: launches, latency, too little work to fill the machine); a cache-resident row
(below) beat the memory roof, so it has neither part. The row is named by
where most of its time is:

- `compute` or `memory`: at least half of the time is at the roof that binds;
- `below`: more than half of it is below both roofs (under-utilisation);
- `cache`: the row moved its bytes more than CACHE_MARGIN faster than the memory roof allows, so
  its data were served from a cache: it is not shown as more than 100 % of a roof (its share is
  left empty). A row above the roof by less than that is at the memory roof (100 %).

The roofs are measured on the machine that ran the row (the context's ceilings), so a row is only
ever read against its own machine.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from .overhead_model import gpu_peak

COMPUTE, MEMORY, CACHE, BELOW = "compute", "memory", "cache", "below"
# Half the time at the roof: below that, the time is mostly something the roofs do not explain.
AT_ROOF_SHARE = 0.5
# How far above the memory roof a row may stream and still be read as at it, not cache-resident.
# The roof is one kernel's best of a few trials, a row another kernel's median: on the 2-core EPYC
# VM SAXPY over 256 MiB ran at 0.93-1.09x the one-thread triad in five runs, and over 32 MiB (its
# data the size of the L3) at 1.17-1.31x (reports/baselines/roofline-2core).
CACHE_MARGIN = 1.125
PLACED = [
    "t_compute_roof",
    "t_memory_roof",
    "t_roof",
    "roof",
    "t_at_roof",
    "t_below_roof",
    "share_of_roof",
    "bound",
]


def place(
    flop: pd.Series, bytes_moved: pd.Series, seconds: pd.Series, flop_per_s: pd.Series,
    bytes_per_s: pd.Series,
) -> pd.DataFrame:  # fmt: skip
    """The columns PLACED for rows of `flop` and `bytes_moved` that took `seconds`, under roofs of
    `flop_per_s` and `bytes_per_s` (one value per row). A row without work or without both roofs
    gets NaN times and no bound."""
    t_compute_roof = (flop / flop_per_s).where((flop > 0) & (flop_per_s > 0))
    t_memory_roof = (bytes_moved / bytes_per_s).where((bytes_moved > 0) & (bytes_per_s > 0))
    known = t_compute_roof.notna() & t_memory_roof.notna() & (seconds > 0)
    t_roof = np.fmax(t_compute_roof, t_memory_roof).where(known)
    roof = pd.Series(np.where(t_compute_roof >= t_memory_roof, COMPUTE, MEMORY), index=flop.index)
    t_at_roof = np.fmin(t_roof, seconds).where(known)
    above_memory_roof = known & (seconds * CACHE_MARGIN < t_memory_roof)
    at_roof = known & (t_at_roof >= AT_ROOF_SHARE * seconds)
    bound = np.select([above_memory_roof, at_roof, known], [CACHE, roof, BELOW], default=None)
    shown = known & ~above_memory_roof  # a cache-resident row: no share, no time at or below
    return pd.DataFrame(
        {
            "t_compute_roof": t_compute_roof,
            "t_memory_roof": t_memory_roof,
            "t_roof": t_roof,
            "roof": roof.where(known),
            "t_at_roof": t_at_roof.where(shown),
            "t_below_roof": (seconds - t_at_roof).where(shown),
            "share_of_roof": (t_roof / seconds).where(shown).clip(upper=1.0),
            "bound": pd.Series(bound, index=flop.index, dtype=object),
        }
    )


# Derived work: rows written before the suite counted bytes are given the same minimum-traffic model
# (docs/workloads.md, "Work: flop and bytes") from their names, and labelled derived.
DTYPE_BYTES: dict[str, int] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp64": 8}
# The GPU's memory roof, in order of preference: the device triad bench measured, else the
# driver's theoretical figure (older files name it gpu_memory_bandwidth_bytes_per_s).
GPU_BANDWIDTH_KEYS = (
    "gpu_bandwidth_measured_bytes_per_s",
    "gpu_bandwidth_theoretical_bytes_per_s",
    "gpu_memory_bandwidth_bytes_per_s",
)


def cpu_bandwidth(one_thread: Any, all_cores: Any, threads: Any) -> Any:
    """The host's memory roof at `threads`: the one-thread triad for one thread, else the
    all-cores triad, or the one-thread triad times the threads where that is less (a few threads
    do not reach the socket's bandwidth). Numbers or series; NaN where the triads are unknown."""
    return np.where(threads > 1, np.fmin(one_thread * threads, all_cores), one_thread)


def gemm_bytes(m: float, n: float, k: float, dtype: str) -> float:
    """A, B read once and C written once (beta = 0), in the dtype's element size."""
    return (m * k + k * n + m * n) * DTYPE_BYTES[dtype]


def _name_part(names: pd.Series, key: str) -> pd.Series:
    """`key:value` of each benchmark name, None where the name has none."""
    return names.str.extract(rf"(?:^|/){key}:([^/]+)", expand=False)


# A training workload's model of one step from a row's name: (flop, bytes) per step, or None.
StepWork = Callable[[str], "tuple[float, float] | None"]


def derived_bytes(rows: pd.DataFrame, training_steps: Mapping[str, StepWork] = {}) -> pd.Series:
    """The minimum-traffic bytes of rows that predate `bytes_moved`, from their names and `flop`
    (NaN where no model applies): a GEMM's three matrices; a training row's iteration is `flop` /
    step flop steps, each moving the step's bytes (`training_steps`: each workload's model by the
    first part of its names, declared with the workload, report/topics.py)."""
    names, flop = rows["name"].astype(str), rows["flop"]
    out = pd.Series(np.nan, index=rows.index, dtype=float)
    dims = {k: pd.to_numeric(_name_part(names, k), errors="coerce") for k in ("m", "n", "k")}
    dtype = _name_part(names, "dtype").fillna("fp32")
    gemm = names.str.startswith("matmul/") & dims["m"].notna() & dtype.isin(list(DTYPE_BYTES))
    for i in rows.index[gemm]:
        out[i] = gemm_bytes(dims["m"][i], dims["n"][i], dims["k"][i], dtype[i])
    for prefix, step_work in training_steps.items():
        for i in rows.index[names.str.startswith(prefix + "/") & (flop > 0)]:
            work = step_work(names[i])
            if work is not None:
                out[i] = flop[i] / work[0] * work[1]
    return out


def _context(rows: pd.DataFrame, key: str) -> pd.Series:
    column = f"context.{key}"
    if column not in rows:
        return pd.Series(np.nan, index=rows.index, dtype=float)
    return rows[column].where(rows[column] > 0)  # typed at load (table._NUMERIC_CONTEXT)


def roofs(rows: pd.DataFrame) -> pd.DataFrame:
    """Each row's two roofs from its own machine's context: `flop_per_s` and `bytes_per_s`, and
    `bandwidth_source` (which ceiling the memory roof is).

    - CPU rows: the FMA peak per core times the row's threads (at most the cores), in fp64 for
      fp64 rows and fp32 otherwise (the bf16 paths compute in fp32); `cpu_bandwidth`.
    - GPU rows: the peak of the row's dtype (training rows: its precision; fp32 where it names
      none); the measured device triad, else the driver's theoretical figure.
    """
    names = rows["name"].astype(str)
    dtype = _name_part(names, "dtype").fillna(_name_part(names, "precision")).fillna("fp32")
    gpu = names.str.split("/").str[1].eq("gpu")
    threads = pd.to_numeric(_name_part(names, "threads"), errors="coerce").fillna(1)
    cores = _context(rows, "cpu_physical_cores")
    fp32, fp64 = (_context(rows, f"cpu_peak_{w}_flops") for w in ("fp32", "fp64"))
    cpu_peak = fp64.where(dtype.eq("fp64"), fp32)  # the bf16 paths compute in fp32
    one, every = (
        _context(rows, f"cpu_bandwidth_{k}_bytes_per_s") for k in ("1thread", "all_cores")
    )
    gpu_bandwidth = _context(rows, GPU_BANDWIDTH_KEYS[0])
    for key in GPU_BANDWIDTH_KEYS[1:]:
        gpu_bandwidth = gpu_bandwidth.fillna(_context(rows, key))
    measured = _context(rows, GPU_BANDWIDTH_KEYS[0]).notna()
    cpu_source = np.where(threads > 1, "CPU triad, all cores", "CPU triad, 1 thread")
    gpu_source = np.where(measured, "device triad (measured)", "theoretical (driver)")
    return pd.DataFrame(
        {
            "flop_per_s": np.where(
                gpu, gpu_peak(rows, dtype), cpu_peak / cores * np.fmin(threads, cores)
            ),
            "bytes_per_s": np.where(gpu, gpu_bandwidth, cpu_bandwidth(one, every, threads)),
            "bandwidth_source": np.where(gpu, gpu_source, cpu_source),
        },
        index=rows.index,
    )


def placed(summary: pd.DataFrame, training_steps: Mapping[str, StepWork] = {}) -> pd.DataFrame:
    """The summary with each row's work and its place under its own roofs, once, for every
    section: `bytes_moved` (the row's own, else derived from its name: `work_derived`),
    `arithmetic_intensity` (flop per byte), the roofs (`flop_per_s_roof`, `bytes_per_s_roof`,
    `bandwidth_source`), `t_placed` (the time it is placed by) and PLACED. A GPU row is placed
    by its compute time (`t_compute`: the copies and the launch overhead are parts of their
    own), a CPU row by its whole time."""
    derived = derived_bytes(summary, training_steps)
    own = summary["bytes_moved"] if "bytes_moved" in summary else derived * np.nan
    moved = own.where(own > 0, derived)
    gpu = summary["name"].astype(str).str.split("/").str[1].eq("gpu")
    compute = summary["t_compute"] if "t_compute" in summary else summary["time_s"] * np.nan
    seconds = compute.where(gpu & (compute > 0), summary["time_s"])
    roof = (
        roofs(summary)
        .add_suffix("_roof")
        .rename(columns={"bandwidth_source_roof": "bandwidth_source"})
    )
    where = place(
        summary["flop"], moved, seconds, roof["flop_per_s_roof"], roof["bytes_per_s_roof"]
    )
    return summary.assign(
        bytes_moved=moved,
        work_derived=~(own > 0) & derived.notna(),
        arithmetic_intensity=(summary["flop"] / moved).where(moved > 0),
        t_placed=seconds,
        **{c: roof[c] for c in roof},
        **{c: where[c] for c in PLACED},
    )
