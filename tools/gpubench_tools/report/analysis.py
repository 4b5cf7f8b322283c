"""The numbers every section shares, as pure functions over the report's summary (`summary`:
`table.summarize()` with every counter a column and the flags of its medians, computed once).

Every function returns a DataFrame (or a small frozen record of them): no text, no charts. Times
are seconds. Training rows (the workloads of topics.TRAINING_WORKLOADS) are compared per SGD step
(`t_step`), since the CPU and GPU runs of one case may train different numbers of steps. The
numbers only one section states are computed in its own module (gpu_time, resources).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from ..conditions import DISTURBED
from ..overhead_model import gemm_rows, gpu_peak
from ..roofline import placed
from ..schema import COUNTERS
from ..table import per_step, summarize
from .topics import TRAINING_STEP_WORK, TRAINING_WORKLOADS, GpuPath, Topic

# A median over fewer repetitions has no spread to speak of: 1 or 2 samples cannot tell a
# typical run from an outlier (Google Benchmark's own aggregates start being useful at 3).
FEW_REPETITIONS = 3
# (max - min) / median above 25 %: the band is wider than most differences the report calls
# out (a "1.3x" speedup means nothing when either side moves by a quarter between repetitions);
# the committed 2-core CI run's steadiest GEMMs stay around 0.2.
NOISY_SPREAD = 0.25
PARTS = ("transfer", "overhead", "under_utilisation", "work_at_peak", "memory_bandwidth")
# A training row's counters of its GPU time (and its kernels), totals over the run in its file.
_PER_STEP = ["t_h2d", "t_d2h", "t_compute", "t_overhead", "flop", "bytes_moved", "kernels"]
# Label columns a result carries along so a caller can filter or print it.
ID = ["machine", "name", "label", "workload", "backend", "variant", "dtype", "precision", "shape"]
ID += ["host", "input", "data", "m", "n", "k", "batch", "hidden", "threads", "steps"]
# The summary's columns whatever a file holds: every counter (and a step's band), and the name
# parts counted (`threads` of a CPU row, `nodes` of a graph probe).
COLUMNS = (*COUNTERS, "t_step_min", "t_step_max", "threads", "nodes")


def short_benchmark(name: str) -> str:
    """A benchmark name without the suffixes every row of its kind shares."""
    return name.replace("/manual_time", "").replace("/readback:1", "")


def path_name(name: str) -> str:
    """A GPU training row's path and variant: "eager readback:0 input:pinned"."""
    parts = name.split("/")
    return " ".join([parts[2], *(p for p in parts[3:] if p.startswith(("readback:", "input:")))])


def summary_of(rows: pd.DataFrame) -> pd.DataFrame:
    """The report's summary of the table's rows (table.summarize), typed (`typed`), each row
    placed under its machine's roofs (roofline.placed)."""
    return placed(typed(summarize(rows)), TRAINING_STEP_WORK)


def typed(summary: pd.DataFrame) -> pd.DataFrame:
    """A summary with every one of COLUMNS (NaN where no row has it), so that no reader asks,
    and each median's flags, once: `_few`, the report's one rule for a thin median (fewer than
    FEW_REPETITIONS repetitions; a row that does not say how many it has is one draw);
    `_disturbed`, a median that includes repetitions measured while disturbed (too few
    undisturbed ones remained: table.summarize, policy.HEADLINE_RULE), marked wherever shown;
    and `_flagged`, drawn hollow: either, or a spread over NOISY_SPREAD."""
    summary = summary.assign(**dict.fromkeys([c for c in COLUMNS if c not in summary], np.nan))
    few = summary["repetitions"].fillna(1) < FEW_REPETITIONS
    shaken = summary["conditions"] == DISTURBED
    flagged = few | (summary["spread"] > NOISY_SPREAD) | shaken
    return summary.assign(_few=few, _disturbed=shaken, _flagged=flagged)


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


def _with_band(rows: pd.DataFrame, time_col: str) -> pd.DataFrame:
    """`_t`, `_lo`, `_hi` (the repetitions' median, min, max of `time_col`) and the flags."""
    suffixes = ("_min_s", "_max_s") if time_col == "time_s" else ("_min", "_max")
    low, high = (time_col.removesuffix("_s") + suffix for suffix in suffixes)
    t = rows[time_col]
    lo, hi = rows[low].fillna(t), rows[high].fillna(t)
    # Repetitions, not iterations, are the samples: a training row's one iteration is a whole
    # training run (thousands of steps), and Google Benchmark times a short kernel over many
    # iterations until min_time; either way one repetition is one draw from the machine.
    return rows.assign(_t=t, _lo=lo, _hi=hi, _noisy=(hi - lo) / t > NOISY_SPREAD)


def _either(frame: pd.DataFrame, one: str, other: str) -> dict[str, pd.Series]:
    """The flags of a ratio of two medians, the columns `one` and `other` formats name: each
    flag where either median has it (`few_samples`, `noisy`, `disturbed`), and `flagged`."""
    flags = {
        flag: frame[one.format(name)].astype(bool) | frame[other.format(name)].astype(bool)
        for flag, name in (("few_samples", "few"), ("noisy", "noisy"), ("disturbed", "disturbed"))
    }
    return {**flags, "flagged": flags["few_samples"] | flags["noisy"] | flags["disturbed"]}


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
    `cpu_few` and `gpu_few` say which side's median is thin (`_few`, typed).
    """
    keys = (["machine"] if "machine" in summary and "machine" not in keys else []) + list(keys)
    sides = []
    for side, filt in (("cpu", cpu), ("gpu", gpu)):
        rows = _with_band(select(summary, filt), time_col).dropna(subset=["_t", *keys])
        # One row per key; the fastest (on the GPU side there should be only one anyway).
        rows = rows.sort_values("_t").drop_duplicates(keys, keep="first")
        rows = rows.assign(row=rows.index, measured_on=rows.get("measured_on"))
        names = _SIDE | ({"threads": "threads"} if side == "cpu" else {})
        columns = {column: f"{side}_{name}" for column, name in names.items()}
        sides.append(rows[keys + list(columns)].rename(columns=columns))
    curve = sides[0].merge(sides[1], on=keys, how="inner").sort_values(keys)
    curve["speedup"] = curve["cpu_time"] / curve["gpu_time"]
    curve["speedup_low"] = curve["cpu_low"] / curve["gpu_high"]
    curve["speedup_high"] = curve["cpu_high"] / curve["gpu_low"]
    return curve.assign(**_either(curve, "cpu_{}", "gpu_{}")).reset_index(drop=True)


@dataclass(frozen=True)
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
    pts = curve[[x, speedup]].dropna()  # typed: both numbers already
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
    context.discovered_topics).

    Parts (seconds): `transfer` = t_h2d + t_d2h; `overhead` = t_overhead (launch, API,
    synchronisation: wall time no CUDA event covers; clipped at 0, since the events of a CUDA
    graph overlap and can add up to a hair more than the wall); the time at the roof,
    max(flop / peak, bytes / bandwidth) (peak: the GPU's for the row's dtype, training rows
    their `precision`; bandwidth: roofline.placed's), is `work_at_peak` where the compute roof
    binds and `memory_bandwidth` where the memory roof does; `under_utilisation` = t_compute -
    the time at the roof (clipped at 0). Without a flop count or a
    peak the last two are one `compute` part (`parts` 3, `why` says which is missing).
    """
    steps = summary[summary["workload"].isin(list(training)) & (summary["backend"] == "gpu")]
    # The GPU trainers write their phase counters as totals over the run (t_step is per step):
    # per step where t_wall / steps is t_step (table.per_step); their dtype is their precision.
    steps = per_step(steps.assign(dtype=steps.get("precision", "fp32")), _PER_STEP)
    rows = pd.concat([gemm_rows(summary, e2e=True), steps, *(select(summary, f) for f in own)])
    rows = rows[rows["t_compute"].notna()]
    if rows.empty:
        return pd.DataFrame(columns=[*PARTS, "compute", "total", "dominant", "parts", "why"])
    # A row without a dtype (a workload of the public API's) is measured against the peak bench
    # used for its own pct_peak: flop / t_wall / (pct_peak / 100).
    flop = rows["flop"]
    implied = flop / rows["t_wall"] / (rows["pct_peak"] / 100)
    dtype = rows["dtype"]
    peak = gpu_peak(rows, dtype).fillna(implied.where(dtype.isna()))
    work = (flop / peak).where(flop > 0)
    # The other roof (roofline.placed): the row's bytes at its machine's memory bandwidth. The
    # time at the roof is the larger; where memory binds, it is memory bandwidth, not work at peak.
    moving = (rows["bytes_moved"] / rows["bytes_per_s_roof"]).where(work.notna())
    memory_binds = moving > work
    at_roof = np.fmax(work, moving)
    out = rows[[c for c in ID if c in rows]].copy()
    # A public-API workload's own axes (`axis:<name>` counters), under their names.
    for column in (c for c in rows if str(c).startswith("axis:")):
        out[column.removeprefix("axis:")] = rows[column]
    out["transfer"] = rows["t_h2d"].fillna(0) + rows["t_d2h"].fillna(0)
    out["overhead"] = rows["t_overhead"].fillna(0).clip(lower=0)
    out["compute"] = rows["t_compute"]
    out["work_at_peak"] = work.where(~memory_binds, 0.0)
    out["memory_bandwidth"] = at_roof.where(memory_binds, 0.0).where(work.notna())
    out["under_utilisation"] = (out["compute"] - at_roof).clip(lower=0)
    out["total"] = out["transfer"] + out["overhead"] + out["compute"]
    four = work.notna()
    out["parts"], out["split"] = np.where(four, 4, 3), four
    why = np.where(~(flop > 0), "no flop count", "no GPU peak for " + dtype.astype(str))
    out["why"] = np.where(four, None, why)
    three = out[["transfer", "overhead", "compute"]].fillna(0).idxmax(axis=1)
    out["dominant"] = out[list(PARTS)].fillna(-1).idxmax(axis=1).where(four, three)
    return out.reset_index(drop=True)


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


def thread_scaling(summary: pd.DataFrame) -> pd.DataFrame:
    """CPU rows measured at several thread counts for otherwise the same benchmark (the name
    without its `threads:` part): speedup over the 1-thread row, ideal (= threads) and
    efficiency (speedup / threads). Training rows compare `t_step`, other rows `time_s`."""
    cpu = summary[(summary["backend"] == "cpu") & summary["threads"].notna()]
    if cpu.empty:
        return pd.DataFrame(columns=["base_name", "threads", "speedup", "ideal", "efficiency"])
    step = cpu["t_step"].notna()
    rows = pd.concat([_with_band(cpu[step], "t_step"), _with_band(cpu[~step], "time_s")]).assign(
        threads=cpu["threads"], base_name=cpu["name"].map(lambda s: re.sub(r"/threads:\d+", "", s))
    )
    group = ["machine", "base_name", "label"]
    rows = rows[rows.groupby(group, dropna=False)["threads"].transform("nunique") > 1]
    one = rows[rows["threads"] == 1].set_index(group)
    one = one[["_t", "_lo", "_hi", "_few", "_noisy", "_disturbed"]].add_suffix("_1")
    rows = rows.join(one, on=group)
    rows = rows[rows["_t_1"].notna()]
    out = rows[[c for c in ID if c in rows] + ["base_name"]].assign(
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


@dataclass(frozen=True)
class PathCurve:
    """One GPU path of a topic against the CPU on one machine: `gpu` its fastest GPU row at each
    size (None without any), the side the speedup and the energy pair with the CPU. Without
    pairs `curve` and `facts` are None. With them: `curve` is speedup_curve with the GPU row's
    `gpu_variant`; `facts` what the answer states of the sizes it speaks for (a topic with
    series: its longest, `series`): where the GPU wins (`wins`, at `every` size, or `beyond` the
    last loss), where it crosses 1 (`cross`), the speedups at the `first` and `last` size, the
    part of the GPU time that is largest most often (`dominant`) and the CPU `threads`."""

    path: GpuPath
    gpu: pd.DataFrame | None = None
    curve: pd.DataFrame | None = None
    facts: dict[str, Any] | None = None


@dataclass(frozen=True)
class MachineTopic:
    """A topic on one machine: a PathCurve per declared GPU path (without CPU rows, their fastest
    GPU rows alone), or none where the machine has no GPU rows; `missing_side` names the side
    without rows."""

    machine: int
    missing_side: str = ""  # "CPU" or "GPU": the side without rows
    paths: tuple[PathCurve, ...] = ()


def path_curve(
    parts: pd.DataFrame, topic: Topic, path: GpuPath, cpu: pd.DataFrame, gpu: pd.DataFrame
) -> PathCurve:
    """One GPU path's rows (`gpu`) against the CPU's; `parts`: the breakdown of the GPU rows."""
    if gpu.empty:
        return PathCurve(path)
    keys, x = list(topic.keys), topic.x
    gpu = fastest(gpu, keys, topic.time_col)
    both = pd.concat([cpu, gpu])
    curve = speedup_curve(both, {"backend": "cpu"}, {"backend": "gpu"}, keys, topic.time_col)
    if curve.empty:
        return PathCurve(path, gpu)
    variants = gpu[keys + ["variant"]].rename(columns={"variant": "gpu_variant"})
    curve = curve.merge(variants, on=keys, how="left").sort_values(keys)
    # A topic with series (a training sweep's hidden widths) answers for its longest series:
    # the one that spans the most sizes.
    if topic.series is None:
        value, main = None, curve
    else:
        value, main = max(curve.groupby(topic.series), key=lambda item: len(item[1]))
    if len(parts):
        parts = parts[parts["name"].isin(gpu["name"])].drop(columns=keys, errors="ignore")
        parts = parts.merge(gpu[["name"] + keys], on="name")
    wins, losses = main.loc[main["speedup"] > 1, x], main.loc[main["speedup"] <= 1, x]
    # How many times slower the GPU is where it loses (None where it does not).
    loses = (main["speedup"] > 0) & (main["speedup"] < 1)
    main = main.assign(slower=(1 / main["speedup"]).astype(object).where(loses, None))
    first, last = main.iloc[0], main.iloc[-1]
    facts = dict(
        wins=list(wins),
        wins_from=wins.min() if len(wins) else None,
        every=len(wins) == len(main),
        beyond=len(wins) > 0 and wins.min() > losses.max(),
        series=value,
        cross=crossover(main, x),
        first=first.to_dict(),
        last=last.to_dict() if last[x] != first[x] else None,
        dominant=dominant_part(main, parts, keys),
        threads=list(main["cpu_threads"]),
    )
    return PathCurve(path, gpu, curve, facts)
