"""The sections on what the machines spend beside the speedups: CPU threads, the peers, device
memory, allocation, energy, and what did not run.

A section's rows come from `analysis` and the declarations in `topics`; `thread_cases`,
`memory_rows`, `agreement_figures` and `energy_pairs` are data, the `*_section` functions say it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..table import num
from . import analysis
from .context import Context
from .speedups import MachineTopic
from .topics import ENERGY, LARGEST_BATCH, LARGEST_BATCH_NAMES, PEERS, TOPICS
from .topics import MEMORY_AGREEMENT, MEMORY_FAMILIES, EnergyTopic, Topic
from .words import say, section, short_benchmark, table_of

# --- CPU thread scaling ----------------------------------------------------------------------


def thread_cases(scaling: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Of analysis.thread_scaling, with each benchmark's short name (`benchmark`): the largest
    case of each workload and data set (its longest 1-thread time), where threads have work to
    share, as the chart's lines (a line per GEMM size would not read); and every benchmark at
    its most threads, the table's rows."""
    scaling = scaling.assign(benchmark=scaling["base_name"].map(short_benchmark))
    kind = [column for column in ("workload", "data") if column in scaling]
    largest = scaling.loc[scaling.groupby(kind, dropna=False)["time_1"].idxmax(), "base_name"]
    most = scaling["threads"] == scaling.groupby("base_name")["threads"].transform("max")
    return scaling[scaling["base_name"].isin(largest)], scaling[most]


def threads_section(ctx: Context, scaling: pd.DataFrame) -> dict[str, Any] | None:
    """analysis.thread_scaling as a chart of each workload's largest case and a table."""
    if scaling.empty:
        return None
    shown, top = thread_cases(scaling)
    said = say("threads", top["efficiency"].min(), top["efficiency"].max())
    chart = ctx.chart("threads", shown, subtitle=ctx.subtitle(gpu=False))
    table = table_of("threads_table", top.sort_values("efficiency"))
    return section("threads", said, [chart], [table])


# --- against PyTorch -------------------------------------------------------------------------


def peers_section(ctx: Context) -> dict[str, Any] | None:
    """The suite's own paths against the same work in PyTorch, where a run has its rows."""
    tables = []
    for peer in PEERS:
        ours, theirs = (analysis.select(ctx.summary, rows) for rows in (peer.ours, peer.peer))
        keys = [k for k in peer.keys if k in ours and k in theirs]
        # Pair with the curve of the answer: "cpu" is the peer, "gpu" is ours, so the
        # speedup is PyTorch's time over ours.
        both = pd.concat([theirs.assign(side="peer"), ours.assign(side="ours")])
        curve = analysis.speedup_curve(
            both, {"side": "peer"}, {"side": "ours"}, keys, peer.time_col
        )
        if len(curve):
            tables.append(table_of("peer_table", peer, keys, curve))
    return section("peers", say("peers"), [], tables) if tables else None


# --- device memory ---------------------------------------------------------------------------


def memory_rows(ctx: Context) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """analysis.memory_agreement with each row's `family` (MEMORY_FAMILIES by its workload), the
    largest-batch rows (benchmarks/largest_batch.cpp), and the problems of those that did not
    run (a batch that did not fit); a largest-batch row has every figure its line states
    (NaN where it lacks one)."""
    agreement = analysis.memory_agreement(ctx.summary)
    workload = agreement["workload"].fillna("other")
    agreement = agreement.assign(family=workload.map(lambda w: MEMORY_FAMILIES.get(w, w)))
    skipped = ctx.table.problems
    skipped = skipped[skipped["name"].astype(str).str.startswith(LARGEST_BATCH_NAMES)]
    batches = analysis.select(ctx.summary, LARGEST_BATCH)
    said = ("batch_largest", "device_bytes_free", "device_bytes_peak", "t_step")
    return agreement, batches.assign(**{c: batches.get(c, math.nan) for c in said}), skipped


def memory_section(ctx: Context) -> dict[str, Any] | None:
    """Measured peak device memory against the model's bytes, and the largest batches."""
    agreement, batches, skipped = memory_rows(ctx)
    largest = say("largest_batches", batches, skipped)
    if agreement.empty:
        return section("memory", largest) if largest else None
    by_distance, figures = agreement_figures(agreement)
    chart, table = ctx.chart("memory", agreement), table_of("memory_table", by_distance)
    return section("memory", say("memory", figures) + largest, [chart], [table])


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
        "agreement": MEMORY_AGREEMENT,
        "within": int(ratios.between(1 / MEMORY_AGREEMENT, MEMORY_AGREEMENT).sum()),
        "families": families.to_dict("records"),
        "worst": by_distance.iloc[0].to_dict(),
    }
    return by_distance, figures


# --- allocation ------------------------------------------------------------------------------


def _allocation_sentences(ctx: Context, costs: pd.DataFrame) -> list[str]:
    """Each call's cost at the smallest and largest size, what a pool saves, the worst tail."""
    machines = [
        {"where": ctx.labels[int(machine)]["gpu_where"],
         "calls": [{"call": call, "first": c.iloc[0].to_dict(),
                    "last": c.iloc[-1].to_dict() if len(c) > 1 else None}
                   for call, c in rows.groupby("call", sort=False)]}  # fmt: skip
        for machine, rows in costs.groupby("machine", sort=False)
    ]
    ratio = costs["slowest_decile_s"] / costs["time_s"]
    worst = ratio.notna().any()
    tail = {**costs.loc[ratio.idxmax()].to_dict(), "ratio": ratio.max()} if worst else None
    return say("allocation", machines, analysis.pool_savings(costs), tail)


def allocation_section(ctx: Context, costs: pd.DataFrame) -> dict[str, Any] | None:
    """What a cudaMalloc, cudaFree or pinned allocation costs the host per call, against the
    warm pool of cudaMallocAsync (what a caching allocator saves)."""
    if costs.empty:
        return None
    said, table = _allocation_sentences(ctx, costs), table_of("allocation_table", costs)
    return section("allocation", said, [ctx.chart("allocation", costs)], [table])


# --- energy ----------------------------------------------------------------------------------


def _joules(rows: pd.DataFrame, counter: str, energy: EnergyTopic) -> pd.Series:
    """Joules per unit of work: the counter over the units per iteration (one where none)."""
    units = num(rows, energy.per)
    return num(rows, counter) / units.where(units > 0, 1.0)


def energy_pairs(
    ctx: Context, topics: dict[str, list[MachineTopic]], energy: EnergyTopic = ENERGY
) -> list[tuple[Topic, pd.DataFrame]]:
    """Per topic of the energy topic, from its pairs (`topics`: speedups.topic_pairs by topic
    id): the fastest GPU row of its last path at each machine and size where it has energy,
    with its `gpu_j`, and the `cpu_j` of the CPU row its speedup pairs it with (NaN without
    one), sorted by machine and size."""
    s = ctx.summary
    if energy.gpu_counter not in s or not s[energy.gpu_counter].notna().any():
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


def _cpu_energy_absent(ctx: Context, energy: EnergyTopic) -> str:
    """Why no CPU row has energy, in the CPU runs' own words where their context says."""
    key = energy.cpu_absent_context
    reasons = {
        str(c[key]) for c in ctx.table.machines["context"] if isinstance(c, dict) and c.get(key)
    }
    said = sorted(r.removeprefix("unavailable: ") for r in reasons if r.startswith("unavailable"))
    return "".join(say("cpu_energy_absent", said, energy.cpu_absent))


def energy_section(
    ctx: Context, pairs: list[tuple[Topic, pd.DataFrame]], energy: EnergyTopic = ENERGY
) -> dict[str, Any] | None:
    """Joules per unit of work on each side of the energy pairs; the CPU side's energy where
    recorded, else why not."""
    if not pairs:
        return None
    compared = sum(int(frame["cpu_j"].notna().sum()) for _, frame in pairs)
    unit, absent = energy.unit_name, _cpu_energy_absent(ctx, energy)
    said = say("energy", unit, compared, sum(len(frame) for _, frame in pairs), absent)
    rows = [(topic, frame.to_dict("records")) for topic, frame in pairs]
    table = table_of("energy_table", unit, rows)
    return section(energy.id, said, [], [table], title=energy.title)


# --- what did not run ------------------------------------------------------------------------


def problems_section(ctx: Context) -> dict[str, Any] | None:
    """The failed, skipped and invalid benchmarks, a list for each file, status and reason."""
    problems = ctx.table.problems
    if problems.empty:
        return None
    groups = problems.groupby(["file", "status", "reason"])
    counts = groups.size().reset_index(name="count")
    counts["file"] = counts["file"].map(lambda f: ctx.file_names[str(f)])
    summaries = say("problem_groups", counts)
    details = [{"summary": s, "items": sorted(g["name"])} for s, (_, g) in zip(summaries, groups)]
    return section("problems", say("problems", len(problems)), details=details)
