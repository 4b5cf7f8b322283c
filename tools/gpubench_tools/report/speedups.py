"""The answer and a section per topic: the GPU against the CPU, path by path, size by size.

`topic_pairs` is the data (per machine and GPU path: analysis.path_curve, the speedup curve,
where it crosses 1, what dominates the GPU time); `topic_curves` is what the topic's section
shows of it (`pages` says both: the answer's rows and the section); `speedups` is the step
build runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .analysis import MachineTopic, path_curve
from .context import Context, Thin
from .topics import Topic


@dataclass(frozen=True)
class TopicCurves:
    """A topic against the CPU: its pairs (topic_pairs: the answer's rows), and what its section
    shows (None where no machine has a curve of its last GPU path): every machine's curve of the
    last path with the other paths' columns (_with_other_paths: `others`, by name), whether a
    sweep over two sizes is shown as a heatmap, and the kernel utilisation rows it charts."""

    topic: Topic
    machines: list[MachineTopic]
    curve: pd.DataFrame | None = None
    others: list[str] = field(default_factory=list)
    heatmap: bool = False
    kernel: pd.DataFrame | None = None


@dataclass(frozen=True)
class Speedups:
    """Every topic's curves (the answer's rows and sections, in the topics' order), each topic's
    pairs by its id (what the energy section pairs), and whose thin medians they state."""

    topics: list[TopicCurves]
    pairs: dict[str, list[MachineTopic]]
    thin: Thin


def speedups(ctx: Context) -> Speedups:
    """Every topic against the CPU: its pairs and what its section shows."""
    found, pairs, thin = [], {}, set()
    for topic in ctx.topics:
        machines = pairs[topic.id] = topic_pairs(ctx, topic)
        for curve in (pc.curve for m in machines for pc in m.paths if pc.curve is not None):
            thin |= ctx.thin(curve["cpu_row"], "cpu") | ctx.thin(curve["gpu_row"], "gpu")
        found.append(topic_curves(ctx, topic, machines))
    return Speedups(found, pairs, thin)


def topic_pairs(ctx: Context, topic: Topic) -> list[MachineTopic]:
    """Per machine with rows on either side of the topic: its GPU paths against the CPU (a
    machine without CPU rows: its GPU paths' fastest rows alone)."""
    machines = []
    # Each machine's rows of a side are its own of the side's rows.
    cpus, gpus = ctx.select(topic.cpu), ctx.select(topic.gpu)
    paths_rows = [ctx.select(topic.gpu, p.gpu) for p in topic.paths]
    for machine in ctx.summary["machine"].drop_duplicates().sort_values():
        cpu, gpu = cpus[cpus["machine"] == machine], gpus[gpus["machine"] == machine]
        if gpu.empty:
            machines += [MachineTopic(int(machine), "GPU")] if len(cpu) else []
            continue
        mine = (rows[rows["machine"] == machine] for rows in paths_rows)
        paths = tuple(
            path_curve(ctx.breakdown, topic, p, cpu, rows) for p, rows in zip(topic.paths, mine)
        )
        machines.append(MachineTopic(int(machine), "CPU" if cpu.empty else "", paths))
    return machines


def _with_other_paths(
    curve: pd.DataFrame, topic: Topic, others: dict[str, list[pd.DataFrame]]
) -> pd.DataFrame:
    """The other GPU paths the answer states (eager beside the fastest), as columns of the
    curve: `<path>_time` (also its `_low` and `_high`: no band), `<path>_speedup`; and each
    line's `_hollow` medians (_hollow)."""
    on = ["machine", *topic.keys]
    for path, curves in others.items():
        other = pd.concat(curves)
        time = other["gpu_time"]
        other = other.assign(time=time, low=time, high=time, hollow=_hollow(other, "gpu"))
        named = {c: f"{path}_{c}" for c in ("time", "low", "high", "speedup", "hollow")}
        curve = curve.merge(other[on + list(named)].rename(columns=named), on=on, how="left")
    return curve.assign(cpu_hollow=_hollow(curve, "cpu"), gpu_hollow=_hollow(curve, "gpu"))


def topic_curves(ctx: Context, topic: Topic, machines: list[MachineTopic]) -> TopicCurves:
    """What the topic's section shows: its curves, a heatmap or not, its kernel utilisation."""
    curves = [mt.paths[-1].curve for mt in machines if mt.paths]
    if all(c is None for c in curves):
        return TopicCurves(topic, machines)
    # The GPU paths before the last one, by name, each with its curves on every machine: the
    # table's columns.
    others: dict[str, list[pd.DataFrame]] = {}
    for pc in (pc for mt in machines for pc in mt.paths[:-1] if pc.curve is not None):
        others.setdefault(pc.path.name, []).append(pc.curve)
    curve = _with_other_paths(pd.concat(curves, ignore_index=True), topic, others)
    heatmap = topic.series is not None and not ctx.several and curve[topic.series].nunique() > 1
    use, kernel = topic.utilisation, None
    if use is not None and not ctx.several:
        kernel = ctx.select(use.rows).dropna(subset=["pct_peak"])
        kernel = kernel.sort_values(use.x).assign(few_samples=kernel["_flagged"])
        kernel = kernel if len(kernel) else None
    return TopicCurves(topic, machines, curve, list(others), bool(heatmap), kernel)


def _hollow(curve: pd.DataFrame, side: str) -> pd.Series:
    """A side's medians a chart draws hollow: too few repetitions, or a wide spread."""
    return curve[f"{side}_few"] | curve[f"{side}_noisy"]
