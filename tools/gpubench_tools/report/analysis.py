"""The report's numbers, as pure functions over `table.summarize()` output.

Every function returns a DataFrame (or a small dataclass of them): no text, no charts. Times are
seconds. Training rows (the workloads of topics.TRAINING_WORKLOADS) are compared per SGD step
(`t_step`), since the CPU and GPU runs of one case may train different numbers of steps.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..conditions import DISTURBED
from ..overhead_model import OverheadModel, gemm_rows, gpu_peak
from ..table import num, per_step
from .topics import ALLOCATION_PROBES, POOL, TRAINING_WORKLOADS

# A median over fewer repetitions has no spread to speak of: 1 or 2 samples cannot tell a
# typical run from an outlier (Google Benchmark's own aggregates start being useful at 3).
FEW_REPETITIONS = 3
# (max - min) / median above 25 %: the band is wider than most differences the report calls
# out (a "1.3x" speedup means nothing when either side moves by a quarter between repetitions);
# the committed 2-core CI run's steadiest GEMMs stay around 0.2.
NOISY_SPREAD = 0.25
# Size bands for the model's error: below 256 a GEMM is all fixed costs (launch, copy latency,
# library call), from 1024 it is bandwidth and FLOP bound; between, both matter.
SIZE_BANDS = (256.0, 1024.0)
# Kernel-only GEMMs up to this size do next to no work (n = 64: 0.5 MFLOP, < 10 ns at an H100's
# fp32 peak), so their time is the cuBLAS call's fixed cost.
LIBRARY_COST_MAX_SIZE = 64.0
PARTS = ("transfer", "overhead", "under_utilisation", "work_at_peak")
# A training row's counters of its GPU time (and its kernels), totals over the run in its file.
_PER_STEP = ["t_h2d", "t_d2h", "t_compute", "t_overhead", "flop", "kernels"]
# Label columns a result carries along so a caller can filter or print it.
_ID = ["machine", "name", "label", "workload", "backend", "variant", "dtype", "precision", "shape"]
_ID += ["host", "input", "data", "m", "n", "k", "batch", "hidden", "threads", "steps"]


def select(summary: pd.DataFrame, filt: dict[str, Any]) -> pd.DataFrame:
    """Rows whose columns match the filter: a scalar matches equal values, a tuple or list any
    of its values, and None an empty column (the GPU rows that read no host input are
    {"input": (None, "resident")}: older files have no `input` label at all)."""
    keep = pd.Series(True, index=summary.index)
    for column, wanted in filt.items():
        values = summary[column] if column in summary else pd.Series(None, index=summary.index)
        options = wanted if isinstance(wanted, (list, tuple, set)) else (wanted,)
        match = values.isin([o for o in options if o is not None])
        keep &= match | (values.isna() & (None in options))
    return summary[keep]


def fastest(rows: pd.DataFrame, keys: list[str], time_col: str) -> pd.DataFrame:
    """The fastest row at each key: the best GPU path (eager, graph, fused) of a size."""
    rows = rows.dropna(subset=[time_col])
    return rows.loc[rows.groupby(keys, dropna=False)[time_col].idxmin()] if len(rows) else rows


def few_repetitions(rows: pd.DataFrame) -> pd.Series:
    """Medians of fewer than FEW_REPETITIONS repetitions: the report's one rule for a thin
    median (a row that does not say how many it has is one draw)."""
    return (num(rows, "repetitions").fillna(1) < FEW_REPETITIONS).astype(bool)


def _with_band(rows: pd.DataFrame, time_col: str) -> pd.DataFrame:
    """`_t`, `_lo`, `_hi` (the repetitions' median, min, max of `time_col`) and the flags."""
    suffixes = ("_min_s", "_max_s") if time_col == "time_s" else ("_min", "_max")
    low, high = (time_col.removesuffix("_s") + suffix for suffix in suffixes)
    t = num(rows, time_col)
    lo, hi = num(rows, low).fillna(t), num(rows, high).fillna(t)
    # Repetitions, not iterations, are the samples: a training row's one iteration is a whole
    # training run (thousands of steps), and Google Benchmark times a short kernel over many
    # iterations until min_time; either way one repetition is one draw from the machine.
    return rows.assign(
        _t=t,
        _lo=lo,
        _hi=hi,
        _few=few_repetitions(rows),
        _noisy=(hi - lo) / t > NOISY_SPREAD,
        _disturbed=disturbed(rows),
    )


def _either(frame: pd.DataFrame, one: str, other: str) -> dict[str, pd.Series]:
    """The flags of a ratio of two medians, the columns `one` and `other` formats name: each
    flag where either median has it (`few_samples`, `noisy`, `disturbed`), and `flagged`."""
    flags = {
        flag: frame[one.format(name)].astype(bool) | frame[other.format(name)].astype(bool)
        for flag, name in (("few_samples", "few"), ("noisy", "noisy"), ("disturbed", "disturbed"))
    }
    return {**flags, "flagged": flags["few_samples"] | flags["noisy"] | flags["disturbed"]}


def disturbed(summary: pd.DataFrame) -> pd.Series:
    """Summary rows whose median includes repetitions measured while disturbed (too few
    undisturbed ones remained: table.summarize, policy.HEADLINE_RULE): marked wherever shown."""
    if "conditions" not in summary:
        return pd.Series(False, index=summary.index)
    return (summary["conditions"] == DISTURBED).astype(bool)


# A side's columns in a speedup curve, each as `<side>_<name>`.
_SIDE = {"_t": "time", "_lo": "low", "_hi": "high", "repetitions": "repetitions"}
_SIDE |= {"measured_on": "measured_on", "row": "row", "_few": "few", "_noisy": "noisy"}
_SIDE |= {"_disturbed": "disturbed"}


def speedup_curve(
    summary: pd.DataFrame,
    cpu: dict[str, Any],
    gpu: dict[str, Any],
    keys: list[str],
    time_col: str = "time_s",
) -> pd.DataFrame:
    """CPU rows matching `cpu` against GPU rows matching `gpu`, paired on `keys`.

    At each key the CPU side is its fastest thread configuration (lowest median time; the
    curve says which in `cpu_threads`): a GPU compared with a deliberately slow CPU flatters
    the GPU. `speedup_low`/`speedup_high` pair the slowest CPU repetition with the fastest GPU
    one and back, the widest band the repetitions allow. Use time_col="t_step" for training
    rows. Rows pair within a machine (`machine` joins the keys where the table has it).
    `cpu_row` and `gpu_row` are the labels of the `summary` rows paired, for what else they hold;
    `cpu_few` and `gpu_few` say which side's median is thin (few_repetitions).
    """
    keys = (["machine"] if "machine" in summary and "machine" not in keys else []) + list(keys)
    sides = []
    for side, filt in (("cpu", cpu), ("gpu", gpu)):
        rows = _with_band(select(summary, filt), time_col).dropna(subset=["_t", *keys])
        # One row per key; the fastest (on the GPU side there should be only one anyway).
        rows = rows.sort_values("_t").drop_duplicates(keys, keep="first")
        rows = rows.assign(
            row=rows.index,
            repetitions=num(rows, "repetitions"),
            measured_on=rows.get("measured_on"),
            threads=num(rows, "threads"),
        )
        names = _SIDE | ({"threads": "threads"} if side == "cpu" else {})
        columns = {column: f"{side}_{name}" for column, name in names.items()}
        sides.append(rows[keys + list(columns)].rename(columns=columns))
    curve = sides[0].merge(sides[1], on=keys, how="inner").sort_values(keys)
    curve["speedup"] = curve["cpu_time"] / curve["gpu_time"]
    curve["speedup_low"] = curve["cpu_low"] / curve["gpu_high"]
    curve["speedup_high"] = curve["cpu_high"] / curve["gpu_low"]
    return curve.assign(**_either(curve, "cpu_{}", "gpu_{}")).reset_index(drop=True)


def flagged(summary: pd.DataFrame) -> pd.Series:
    """Summary rows a chart draws hollow: fewer than FEW_REPETITIONS repetitions, or a spread
    over NOISY_SPREAD of the median."""
    noisy = num(summary, "spread") > NOISY_SPREAD
    return (few_repetitions(summary) | noisy | disturbed(summary)).astype(bool)


@dataclass
class Crossover:
    """kind "cross": `x` is the size (interpolated) beyond which the GPU stays ahead;
    "always_faster": ahead at every measured size; "never_faster": behind at the largest
    measured size; "no_data": no usable point."""

    kind: Literal["cross", "always_faster", "never_faster", "no_data"]
    x: float | None = None


def crossover(curve: pd.DataFrame, x: str, speedup: str = "speedup") -> Crossover:
    """Where the speedup crosses 1, on the *last* upward crossing so that noise around 1 at
    small sizes does not report a crossover after which the GPU falls behind again.

    Interpolation is linear in (log size, log speedup): GEMM times follow power laws in the
    size, so a straight line in log-log space is the natural curve between two measurements.
    """
    pts = curve[[x, speedup]].apply(pd.to_numeric, errors="coerce").dropna()
    pts = pts[(pts[x] > 0) & (pts[speedup] > 0)].groupby(x)[speedup].median()
    if pts.empty:
        return Crossover("no_data")
    xs, s = pts.index.to_numpy(float), pts.to_numpy(float)
    if (s >= 1).all():
        return Crossover("always_faster")
    if s[-1] < 1:
        return Crossover("never_faster")
    i = int(np.flatnonzero(s < 1)[-1])
    lx, ls = np.log(xs[i : i + 2]), np.log(s[i : i + 2])
    cross = float(np.exp(lx[0] - ls[0] * (lx[1] - lx[0]) / (ls[1] - ls[0])))
    return Crossover("cross", cross)


def breakdown(
    summary: pd.DataFrame,
    training: Iterable[str] = TRAINING_WORKLOADS,
    own: Iterable[dict[str, Any]] = (),
) -> pd.DataFrame:
    """Where each GPU row's time goes: end-to-end GEMM rows (a `host` label) per call, the GPU
    rows of the `training` workloads (the topics' training workloads) per step, and the rows each
    filter of `own` selects per call (the end-to-end rows of workloads only their rows describe,
    discovered.py).

    Parts (seconds): `transfer` = t_h2d + t_d2h; `overhead` = t_overhead (launch, API,
    synchronisation: wall time no CUDA event covers; clipped at 0, since the events of a CUDA
    graph overlap and can add up to a hair more than the wall); `work_at_peak` = flop / peak
    (peak: the GPU's for the row's dtype, training rows their `precision`) and
    `under_utilisation` = t_compute - work_at_peak (clipped at 0). Without a flop count or a
    peak the last two are one `compute` part (`parts` 3, `why` says which is missing).
    """
    steps = summary[summary["workload"].isin(list(training)) & (summary["backend"] == "gpu")]
    # The GPU trainers write their phase counters as totals over the run (t_step is per step):
    # per step where t_wall / steps is t_step (table.per_step); their dtype is their precision.
    steps = per_step(steps.assign(dtype=steps.get("precision", "fp32")), _PER_STEP)
    rows = pd.concat([gemm_rows(summary, e2e=True), steps, *(select(summary, f) for f in own)])
    rows = rows[num(rows, "t_compute").notna()]
    if rows.empty:
        return pd.DataFrame(columns=[*PARTS, "compute", "total", "dominant", "parts", "why"])
    # A row without a dtype (a workload of the public API's) is measured against the peak bench
    # used for its own pct_peak: flop / t_wall / (pct_peak / 100).
    flop = num(rows, "flop")
    implied = flop / num(rows, "t_wall") / (num(rows, "pct_peak") / 100)
    dtype = rows["dtype"] if "dtype" in rows else pd.Series(None, index=rows.index)
    peak = gpu_peak(rows, dtype).fillna(implied.where(dtype.isna()))
    work = (flop / peak).where(flop > 0)
    out = rows[[c for c in _ID if c in rows]].copy()
    # A public-API workload's own axes (`axis:<name>` counters), under their names.
    for column in (c for c in rows if str(c).startswith("axis:")):
        out[column.removeprefix("axis:")] = num(rows, column)
    out["transfer"] = num(rows, "t_h2d").fillna(0) + num(rows, "t_d2h").fillna(0)
    out["overhead"] = num(rows, "t_overhead").fillna(0).clip(lower=0)
    out["compute"] = num(rows, "t_compute")
    out["work_at_peak"] = work
    out["under_utilisation"] = (out["compute"] - work).clip(lower=0)
    out["total"] = out["transfer"] + out["overhead"] + out["compute"]
    four = work.notna()
    out["parts"] = np.where(four, 4, 3)
    why = np.where(
        flop.isna() | (flop <= 0), "no flop count", "no GPU peak for " + dtype.astype(str)
    )
    out["why"] = np.where(four, None, why)
    three = out[["transfer", "overhead", "compute"]].fillna(0).idxmax(axis=1)
    out["dominant"] = out[list(PARTS)].fillna(-1).idxmax(axis=1).where(four, three)
    return out.reset_index(drop=True)


def dominant_by_range(breakdown_rows: pd.DataFrame, x: str) -> pd.DataFrame:
    """Consecutive runs of `x` (sorted) with the same dominant part: `dominant`, `x_from`,
    `x_to`, `rows` (for "transfer dominates n <= 64, work at peak from n = 1024")."""
    rows = breakdown_rows.dropna(subset=[x]).sort_values(x)
    run = (rows["dominant"] != rows["dominant"].shift()).cumsum()
    ranges = {"dominant": ("dominant", "first"), "x_from": (x, "min"), "x_to": (x, "max")}
    return rows.groupby(run).agg(**ranges, rows=(x, "size")).reset_index(drop=True)


@dataclass(frozen=True)
class Dominant:
    """The part of the GPU time (the breakdown's `dominant`) that is largest most often over a
    speedup curve's sizes. `part` None: the GPU rows have no parts (`no_parts`), or none at
    these sizes; `where_it_loses`: counted over the sizes where the GPU loses only."""

    part: str | None
    where_it_loses: bool = False
    no_parts: bool = False


def dominant_part(curve: pd.DataFrame, parts: pd.DataFrame, keys: list[str]) -> Dominant:
    """Over the sizes where the GPU loses when it loses somewhere (what to remove to win there),
    else over every size; `parts` are the breakdown rows of the curve's GPU rows, with `keys`."""
    if parts.empty:
        return Dominant(None, no_parts=True)
    slower = curve[curve["speedup"] < 1]
    where = slower if len(slower) else curve
    joined = where[keys].merge(parts, on=keys, how="inner")
    if joined.empty:
        return Dominant(None)
    return Dominant(joined["dominant"].mode().iloc[0], 0 < len(slower) < len(curve))


@dataclass
class ModelBias:
    """The overhead model against the measured end-to-end GEMMs.

    `rows`: one row per e2e GEMM (`size`, `measured`, `predicted`, `error`, `predicted_after`,
    `error_after`); `before` / `after`: per dtype, host and size band the median, min and max
    signed error and `direction` ("under" or "over"), without and with the library term;
    `library_cost_s`: the per-call cost added."""

    rows: pd.DataFrame
    before: pd.DataFrame
    after: pd.DataFrame
    library_cost_s: float | None


def _size(rows: pd.DataFrame) -> pd.Series:
    """A GEMM's size: n for a square one, the cube root of m n k (its geometric mean) else."""
    return (num(rows, "m") * num(rows, "n") * num(rows, "k")) ** (1.0 / 3.0)


def _bands(rows: pd.DataFrame, error: str) -> pd.DataFrame:
    lo, hi = SIZE_BANDS
    labels = [f"n < {lo:g}", f"{lo:g} <= n < {hi:g}", f"n >= {hi:g}"]
    band = pd.cut(rows["size"], [0, lo, hi, np.inf], right=False, labels=labels)
    grouped = rows.assign(band=band).groupby(["dtype", "host", "band"], observed=True)[error]
    out = grouped.agg(median="median", low="min", high="max", rows="size").reset_index()
    return out.assign(direction=np.where(out["median"] < 0, "under", "over"))


def model_bias(summary: pd.DataFrame, model: OverheadModel) -> ModelBias:
    """Signed relative error (predicted - measured) / measured of the model per e2e GEMM, per
    size band; then the same with a per-call library cost added.

    The missing term: the model's launch term is an empty kernel's, but a cuBLAS call also
    pays a fixed host and device cost (handle, heuristics, a kernel far larger than a no-op).
    Kernel-only GEMMs up to LIBRARY_COST_MAX_SIZE do next to no work, so their time less
    flop / peak estimates it; it is added once per kernel of each e2e row.
    """
    e2e = gemm_rows(summary, e2e=True)
    pred = [getattr(model.predict(r), "total", np.nan) for _, r in e2e.iterrows()]
    rows = e2e[[c for c in _ID if c in e2e]].assign(
        size=_size(e2e),
        measured=num(e2e, "t_wall").fillna(num(e2e, "time_s")),
        predicted=np.asarray(pred, dtype=float),
    )
    rows = rows[rows["predicted"].notna() & (rows["measured"] > 0)]
    rows["error"] = (rows["predicted"] - rows["measured"]) / rows["measured"]

    kernel = gemm_rows(summary, e2e=False)
    kernel = kernel[_size(kernel) <= LIBRARY_COST_MAX_SIZE]
    work = num(kernel, "flop") / gpu_peak(kernel, kernel["dtype"])
    fixed = num(kernel, "t_compute").fillna(num(kernel, "time_s")) - work
    cost = float(fixed.median()) if fixed.notna().any() else None
    calls = num(e2e, "kernels").reindex(rows.index).fillna(1.0)
    rows["predicted_after"] = rows["predicted"] + calls * (cost or 0.0)
    rows["error_after"] = (rows["predicted_after"] - rows["measured"]) / rows["measured"]
    bands = (_bands(rows, "error"), _bands(rows, "error_after"))
    return ModelBias(rows.reset_index(drop=True), *bands, cost)


def thread_scaling(summary: pd.DataFrame) -> pd.DataFrame:
    """CPU rows measured at several thread counts for otherwise the same benchmark (the name
    without its `threads:` part): speedup over the 1-thread row, ideal (= threads) and
    efficiency (speedup / threads). Training rows compare `t_step`, other rows `time_s`."""
    cpu = summary[(summary["backend"] == "cpu") & num(summary, "threads").notna()]
    if cpu.empty:
        return pd.DataFrame(columns=["base_name", "threads", "speedup", "ideal", "efficiency"])
    step = num(cpu, "t_step").notna()
    rows = pd.concat([_with_band(cpu[step], "t_step"), _with_band(cpu[~step], "time_s")]).assign(
        threads=num(cpu, "threads"),
        base_name=cpu["name"].map(lambda s: re.sub(r"/threads:\d+", "", s)),
    )
    group = ["machine", "base_name", "label"]
    rows = rows[rows.groupby(group, dropna=False)["threads"].transform("nunique") > 1]
    one = rows[rows["threads"] == 1].set_index(group)
    one = one[["_t", "_lo", "_hi", "_few", "_noisy", "_disturbed"]].add_suffix("_1")
    rows = rows.join(one, on=group)
    rows = rows[rows["_t_1"].notna()]
    out = rows[[c for c in _ID if c in rows] + ["base_name"]].assign(
        time=rows["_t"], time_1=rows["_t_1"], speedup=rows["_t_1"] / rows["_t"], row=rows.index
    )
    out["ideal"] = out["threads"]
    out["efficiency"] = out["speedup"] / out["threads"]
    out = out.assign(**_either(rows, "_{}", "_{}_1"))
    # The widest band the repetitions allow: the slowest 1-thread repetition over the fastest
    # one at this thread count, and back. The 1-thread row is the reference itself: exactly 1.
    reference = out["threads"] == 1
    out["speedup_low"] = (rows["_lo_1"] / rows["_hi"]).where(~reference, 1.0)
    out["speedup_high"] = (rows["_hi_1"] / rows["_lo"]).where(~reference, 1.0)
    return out.sort_values(["base_name", "threads"]).reset_index(drop=True)


def memory_agreement(summary: pd.DataFrame) -> pd.DataFrame:
    """Every GPU row with a device-memory model and a measured peak: `ratio` = measured peak /
    model bytes (above 1 the benchmark held more than its shapes call for: library workspaces,
    the allocator's 2 MiB pages, the context's own reservations)."""
    columns = ["device_bytes_model", "device_bytes_peak"]
    if not set(columns) <= set(summary.columns):
        return pd.DataFrame(columns=[*_ID, *columns, "ratio"])
    rows = summary.dropna(subset=columns)
    rows = rows[rows["device_bytes_model"] > 0]
    keep = [c for c in [*_ID, "measured_on"] if c in rows] + columns
    return rows[keep].assign(ratio=rows["device_bytes_peak"] / rows["device_bytes_model"])


# `overhead/alloc/<probe>/bytes:<B>/...` (benchmarks/alloc_probes.cpp): the probe is
# `malloc/device`, `free/device`, `async`, `malloc/pinned` or `free/pinned`.
ALLOC_NAME = r"^overhead/alloc/(?P<probe>.+?)/bytes:(?P<bytes>\d+)"


def allocation_costs(rows: pd.DataFrame) -> pd.DataFrame:
    """Per machine, allocation probe and size, from the per-repetition rows of the table (not
    the summary: the tail needs every sample): `time_s` the median host seconds per call,
    `slowest_decile_s` the 90th percentile, `repetitions`, `few_samples` (few_repetitions) and
    `call`, what the probe is (topics.ALLOCATION_PROBES; a probe the report does not know yet
    under its own name); in the declared order of the calls per machine (an unknown probe
    last), then by size.

    Allocation times have a long tail (the driver and the OS reclaiming pages), which a median
    hides and a maximum overstates; the slowest decile is what one call in ten pays. It is the
    inverted-CDF quantile (a value that was measured, never an interpolation between two), and
    NaN where a file holds one value per probe (aggregates only)."""
    columns = ["machine", "probe", "bytes", "time_s", "slowest_decile_s", "repetitions"]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    parts = rows["name"].str.extract(ALLOC_NAME)
    probes = rows.assign(probe=parts["probe"], bytes=pd.to_numeric(parts["bytes"]))
    probes = probes.dropna(subset=["probe"])
    if probes.empty:
        return pd.DataFrame(columns=columns)

    def decile(times: pd.Series) -> float:
        return float(np.quantile(times, 0.9, method="inverted_cdf")) if len(times) > 1 else math.nan

    grouped = probes.groupby(["machine", "probe", "bytes"], sort=True)["real_time_s"]
    out = grouped.agg(time_s="median", slowest_decile_s=decile, repetitions="size").reset_index()
    order = {probe: position for position, probe in enumerate(ALLOCATION_PROBES)}
    out = out.assign(
        call=out["probe"].map(lambda p: ALLOCATION_PROBES.get(p, p)),
        few_samples=few_repetitions(out),
        order=out["probe"].map(order).fillna(len(order)),
    )
    return out.sort_values(["machine", "order", "bytes"])


def pool_savings(costs: pd.DataFrame) -> pd.DataFrame:
    """Per machine and size: (cudaMalloc + cudaFree) / the warm pool's cudaMallocAsync +
    cudaFreeAsync, medians; above 1 a caching allocator saves that factor per buffer."""
    wide = costs.pivot_table(index=["machine", "bytes"], columns="probe", values="time_s")
    if wide.empty or not set(POOL) <= set(wide.columns):
        return pd.DataFrame(columns=["machine", "bytes", "saving"])
    malloc, free, pool = POOL
    saving = (wide[malloc] + wide[free]) / wide[pool]
    return saving.rename("saving").dropna().reset_index()
