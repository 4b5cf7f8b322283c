"""The sections on what the machines spend beside the speedups: CPU threads, the peers, device
memory, allocation, energy, and what did not run.

A section's rows come from the summary and the declarations in `topics`; each `*_section`
function computes its frozen record (rows, numbers, names; None where it has none), which
`pages` words; `resources` is the step build runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .analysis import FEW_REPETITIONS, ID, MachineTopic, short_benchmark, speedup_curve
from .analysis import thread_scaling
from .context import Context, Thin
from .topics import ALLOCATION_PROBES, ENERGY, LARGEST_BATCH, LARGEST_BATCH_NAMES, PEERS, POOL
from .topics import MEMORY_AGREEMENT, MEMORY_FAMILIES, TOPICS, EnergyTopic, Peer, Topic


def resources(ctx: Context, pairs: dict[str, list[MachineTopic]]) -> tuple[list[Any], Thin]:
    """Threads, peers, memory, allocation, energy and what did not run, in that order (those
    that have rows), and whose thin medians they state (the thread counts', the probes').
    `pairs`: each topic's, by its id (speedups.topic_pairs)."""
    scaling = thread_scaling(ctx.summary)
    thin = ctx.thin(scaling.get("row", []), "cpu")
    probes = ctx.summary["name"].str.match(ALLOC_NAME)
    thin |= ctx.thin(ctx.summary.index[probes], "gpu")
    sections = [threads_section(ctx, scaling), peers_section(ctx), memory_section(ctx)]
    sections.append(allocation_section(ctx, allocation_costs(ctx.table.rows)))
    sections.append(energy_section(ctx, energy_pairs(ctx, pairs)))
    sections.append(problems_section(ctx))
    return [s for s in sections if s is not None], thin


# --- CPU thread scaling ----------------------------------------------------------------------


@dataclass(frozen=True)
class Threads:
    """Of analysis.thread_scaling, with each benchmark's short name (`benchmark`): the largest
    case of each workload and data set (its longest 1-thread time), where threads have work to
    share, as the chart's lines (`shown`: a line per GEMM size would not read); and every
    benchmark at its most threads, least efficient first, the table's rows (`top`)."""

    shown: pd.DataFrame
    top: pd.DataFrame


def threads_section(ctx: Context, scaling: pd.DataFrame) -> Threads | None:
    """analysis.thread_scaling as a chart of each workload's largest case and a table."""
    if scaling.empty:
        return None
    scaling = scaling.assign(benchmark=scaling["base_name"].map(short_benchmark))
    kind = [column for column in ("workload", "data") if column in scaling]
    largest = scaling.loc[scaling.groupby(kind, dropna=False)["time_1"].idxmax(), "base_name"]
    most = scaling["threads"] == scaling.groupby("base_name")["threads"].transform("max")
    shown = scaling[scaling["base_name"].isin(largest)]
    return Threads(shown, scaling[most].sort_values("efficiency"))


# --- against PyTorch -------------------------------------------------------------------------


@dataclass(frozen=True)
class Peers:
    """Per peer with rows on both sides: the peer, the keys its rows pair on, and its curve."""

    tables: list[tuple[Peer, list[str], pd.DataFrame]]


def peers_section(ctx: Context) -> Peers | None:
    """The suite's own paths against the same work in PyTorch, where a run has its rows."""
    tables = []
    for peer in PEERS:
        ours, theirs = ctx.select(peer.ours), ctx.select(peer.peer)
        keys = [k for k in peer.keys if k in ours and k in theirs]
        # Pair with the curve of the answer: "cpu" is the peer, "gpu" is ours, so the
        # speedup is PyTorch's time over ours.
        both = pd.concat([theirs.assign(side="peer"), ours.assign(side="ours")])
        curve = speedup_curve(both, {"side": "peer"}, {"side": "ours"}, keys, peer.time_col)
        if len(curve):
            tables.append((peer, keys, curve))
    return Peers(tables) if tables else None


# --- device memory ---------------------------------------------------------------------------


def memory_agreement(summary: pd.DataFrame) -> pd.DataFrame:
    """Every GPU row with a device-memory model and a measured peak: `ratio` = measured peak /
    model bytes (above 1 the benchmark held more than its shapes call for: library workspaces,
    the allocator's 2 MiB pages, the context's own reservations), and its `family`
    (MEMORY_FAMILIES by its workload)."""
    columns = ["device_bytes_model", "device_bytes_peak"]
    rows = summary.dropna(subset=columns)
    rows = rows[rows["device_bytes_model"] > 0]
    keep = [c for c in [*ID, "measured_on"] if c in rows] + columns
    family = rows["workload"].fillna("other").map(lambda w: MEMORY_FAMILIES.get(w, w))
    return rows[keep].assign(ratio=rows[columns[1]] / rows[columns[0]], family=family)


@dataclass(frozen=True)
class Memory:
    """memory_agreement (as measured), the same farthest first and their figures
    (agreement_figures; None without any), the largest-batch rows (benchmarks/largest_batch.cpp,
    each with every figure its line states, NaN where it lacks one) and the problems of those that
    did not run (a batch that did not fit)."""

    agreement: pd.DataFrame
    by_distance: pd.DataFrame | None
    figures: dict[str, Any] | None
    batches: pd.DataFrame
    skipped: pd.DataFrame


def memory_section(ctx: Context) -> Memory | None:
    """Measured peak device memory against the model's bytes, and the largest batches."""
    agreement = memory_agreement(ctx.summary)
    skipped = ctx.table.problems
    skipped = skipped[skipped["name"].astype(str).str.startswith(LARGEST_BATCH_NAMES)]
    batches = ctx.select(LARGEST_BATCH)
    free, peak = batches["device_bytes_free"], batches["device_bytes_peak"]
    batches = batches.assign(share_of_free=(peak / free).where(free > 0))
    if agreement.empty and batches.empty and skipped.empty:
        return None
    shown = agreement_figures(agreement) if len(agreement) else (None, None)
    return Memory(agreement, *shown, batches, skipped)


def agreement_figures(agreement: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The agreement rows farthest from the model first, and what the memory section states of
    them: how many (`count`), their `median` ratio, how many agree within MEMORY_AGREEMENT
    (`within`), each family's median, range and rows (`families`), and the farthest (`worst`)."""
    ratios = agreement["ratio"]
    # Largest disagreement first, either way: 2x over and 2x under are as far from 1.
    distance = np.log(ratios).abs()
    by_distance = agreement.loc[distance.sort_values(ascending=False, kind="stable").index]
    families = agreement.groupby("family", sort=False)["ratio"]
    families = families.agg(median="median", low="min", high="max", rows="size").reset_index()
    figures = {
        "count": len(agreement),
        "median": ratios.median(),
        "margin": MEMORY_AGREEMENT - 1,
        "within": int(ratios.between(1 / MEMORY_AGREEMENT, MEMORY_AGREEMENT).sum()),
        "families": families.assign(several=families["rows"] > 1).to_dict("records"),
        "worst": by_distance.iloc[0].to_dict(),
    }
    return by_distance, figures


# --- allocation ------------------------------------------------------------------------------


# `overhead/alloc/<probe>/bytes:<B>/...` (benchmarks/alloc_probes.cpp): the probe is
# `malloc/device`, `free/device`, `async`, `malloc/pinned` or `free/pinned`.
ALLOC_NAME = r"^overhead/alloc/(?P<probe>.+?)/bytes:(?P<bytes>\d+)"


def allocation_costs(rows: pd.DataFrame) -> pd.DataFrame:
    """Per machine, allocation probe and size, from the per-repetition rows of the table (not
    the summary: the tail needs every sample): `time_s` the median host seconds per call,
    `slowest_decile_s` the 90th percentile, `repetitions`, `few_samples` (fewer than
    FEW_REPETITIONS) and `call`, what the probe is (topics.ALLOCATION_PROBES; a probe the report
    does not know yet under its own name); in the declared order of the calls per machine (an
    unknown probe last), then by size.

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
        few_samples=out["repetitions"] < FEW_REPETITIONS,
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


@dataclass(frozen=True)
class Allocation:
    """allocation_costs; per machine (its index) each call's rows of `costs` (by label) at the
    smallest and largest size (`last`: None with one size); pool_savings; the worst tail (the
    row whose slowest decile is farthest above its median, and that ratio; None without
    deciles)."""

    costs: pd.DataFrame
    machines: list[tuple[int, list[tuple[str, Any, Any]]]]
    savings: pd.DataFrame
    tail: tuple[Any, float] | None


def allocation_section(ctx: Context, costs: pd.DataFrame) -> Allocation | None:
    """What a cudaMalloc, cudaFree or pinned allocation costs the host per call, against the
    warm pool of cudaMallocAsync (what a caching allocator saves)."""
    if costs.empty:
        return None
    machines = [
        (int(machine), [(call, c.index[0], c.index[-1] if len(c) > 1 else None)
                        for call, c in rows.groupby("call", sort=False)])  # fmt: skip
        for machine, rows in costs.groupby("machine", sort=False)
    ]
    ratio = costs["slowest_decile_s"] / costs["time_s"]
    tail = (ratio.idxmax(), ratio.max()) if ratio.notna().any() else None
    return Allocation(costs, machines, pool_savings(costs), tail)


# --- energy ----------------------------------------------------------------------------------


def _joules(rows: pd.DataFrame, counter: str, energy: EnergyTopic) -> pd.Series:
    """Joules per unit of work: the counter over the units per iteration (one where none)."""
    units = rows[energy.per]
    return rows[counter] / units.where(units > 0, 1.0)


def energy_pairs(
    ctx: Context, topics: dict[str, list[MachineTopic]], energy: EnergyTopic = ENERGY
) -> list[tuple[Topic, pd.DataFrame]]:
    """Per topic of the energy topic, from its pairs (`topics`: speedups.topic_pairs by topic
    id): the fastest GPU row of its last path at each machine and size where it has energy,
    with its `gpu_j`, and the `cpu_j` of the CPU row its speedup pairs it with (NaN without
    one), sorted by machine and size."""
    s = ctx.summary
    if not s[energy.gpu_counter].notna().any():
        return []
    pairs = []
    for topic in (t for t in TOPICS if t.id in energy.topics):
        keys, frames = list(topic.keys), []
        for path in (m.paths[-1] for m in topics[topic.id] if m.paths):
            if path.gpu is None:
                continue
            gpu = path.gpu[path.gpu[energy.gpu_counter].notna()]
            gpu = gpu.assign(gpu_j=_joules(gpu, energy.gpu_counter, energy))
            if path.curve is None:
                frames.append(gpu.assign(cpu_j=math.nan))
                continue
            cpu_j = _joules(s.loc[path.curve["cpu_row"]], energy.cpu_counter, energy)
            paired = path.curve[keys].assign(cpu_j=cpu_j.to_numpy())
            frames.append(gpu.merge(paired, on=keys, how="left"))
        both = pd.concat(frames) if frames else pd.DataFrame()
        if len(both):
            pairs.append((topic, both.sort_values(["machine", *keys])))
    return pairs


@dataclass(frozen=True)
class Energy:
    """energy_pairs, each row with its CPU over GPU joules (`ratio`, where both are positive);
    how many sizes have a CPU side (`compared`) of how many (`sizes`); why no CPU row has energy,
    in the CPU runs' own words where their context says (`reasons`)."""

    energy: EnergyTopic
    pairs: list[tuple[Topic, pd.DataFrame]]
    compared: int
    sizes: int
    reasons: list[str]
    # GPU rows whose repetitions were too short for NVML's energy counter (bench left their
    # energy out: docs/timing-method.md), and the window a repetition needs (the context's).
    too_short: int = 0
    min_window_s: float | None = None


def energy_section(
    ctx: Context, pairs: list[tuple[Topic, pd.DataFrame]], energy: EnergyTopic = ENERGY
) -> Energy | None:
    """Joules per unit of work on each side of the energy pairs; the CPU side's energy where
    recorded, else why not; and how many GPU rows were too short to measure energy."""
    summary = ctx.summary
    short = summary[summary.get("gpu_energy_too_short", pd.Series(dtype=float)) > 0]
    window = short.get("context.gpu_energy_min_window_s", pd.Series(dtype=float)).dropna()
    if not pairs and short.empty:
        return None
    key = energy.cpu_absent_context
    reasons = {str(c.get(key)) for c in ctx.table.machines["context"] if isinstance(c, dict)}
    said = sorted(r.removeprefix("unavailable: ") for r in reasons if r.startswith("unavailable"))
    rows = [(t, f.assign(ratio=(f["cpu_j"] / f["gpu_j"]).where(f["gpu_j"] > 0))) for t, f in pairs]
    compared = sum(int(frame["cpu_j"].notna().sum()) for _, frame in pairs)
    sizes = sum(len(frame) for _, frame in pairs)
    too_short = len(short), float(window.max()) if len(window) else None
    return Energy(energy, rows, compared, sizes, said, *too_short)


# --- what did not run ------------------------------------------------------------------------


@dataclass(frozen=True)
class Problems:
    """How many benchmarks did not run, and per file (by its short name), status and reason:
    how many (`groups`) and which (`names`, sorted, a list per group)."""

    count: int
    groups: pd.DataFrame
    names: list[list[str]]


def problems_section(ctx: Context) -> Problems | None:
    """The failed, skipped and invalid benchmarks, a list for each file, status and reason."""
    problems = ctx.table.problems
    if problems.empty:
        return None
    groups = problems.groupby(["file", "status", "reason"])
    counts = groups.size().reset_index(name="count")
    counts["file"] = counts["file"].map(lambda f: ctx.file_names[str(f)])
    return Problems(len(problems), counts, [sorted(g["name"]) for _, g in groups])
