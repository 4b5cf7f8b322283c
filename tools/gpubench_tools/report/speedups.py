"""The answer and a section per topic: the GPU against the CPU, path by path, size by size.

`topic_pairs` is the data (per machine and GPU path: the speedup curve, where it crosses 1, what
dominates the GPU time); `answer_rows` and `topic_section` say it, the latter with its charts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..table import num
from ..units import fmt_size
from . import analysis
from .context import Context
from .topics import GpuPath, Topic
from .words import named, say, section, table_of


@dataclass(frozen=True)
class PathCurve:
    """One GPU path of a topic against the CPU on one machine: `gpu` its fastest GPU row at each
    size (None without any), the side the speedup and the energy pair with the CPU. Without
    pairs `curve` and `facts` are None. With them: `curve` is analysis.speedup_curve with the GPU
    row's `gpu_variant`; `facts` what the answer states of the sizes it speaks for (a topic with
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


def _path_curve(
    parts: pd.DataFrame, topic: Topic, path: GpuPath, cpu: pd.DataFrame, gpu: pd.DataFrame
) -> PathCurve:
    """One GPU path's rows (`gpu`) against the CPU's; `parts`: the breakdown of the GPU rows."""
    if gpu.empty:
        return PathCurve(path)
    keys, x = list(topic.keys), topic.x
    gpu = analysis.fastest(gpu, keys, topic.time_col)
    curve = analysis.speedup_curve(
        pd.concat([cpu, gpu]), {"backend": "cpu"}, {"backend": "gpu"}, keys, topic.time_col
    )
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
    first, last = main.iloc[0], main.iloc[-1]
    facts = dict(
        wins=list(wins),
        every=len(wins) == len(main),
        beyond=len(wins) > 0 and wins.min() > losses.max(),
        series=value,
        cross=analysis.crossover(main, x),
        first=first.to_dict(),
        last=last.to_dict() if last[x] != first[x] else None,
        dominant=analysis.dominant_part(main, parts, keys),
        threads=list(main["cpu_threads"]),
    )
    return PathCurve(path, gpu, curve, facts)


def topic_pairs(ctx: Context, topic: Topic) -> list[MachineTopic]:
    """Per machine with rows on either side of the topic: its GPU paths against the CPU (a
    machine without CPU rows: its GPU paths' fastest rows alone)."""
    machines = []
    for machine, rows in ctx.summary.groupby("machine"):
        cpu, gpu = analysis.select(rows, topic.cpu), analysis.select(rows, topic.gpu)
        if gpu.empty:
            machines += [MachineTopic(int(machine), "GPU")] if len(cpu) else []
            continue
        paths = tuple(
            _path_curve(ctx.breakdown, topic, p, cpu, analysis.select(gpu, p.gpu))
            for p in topic.paths
        )
        machines.append(MachineTopic(int(machine), "CPU" if cpu.empty else "", paths))
    return machines


_ANSWER = ("wins", "crossover", "ends", "why", "cpu_config", "measured")


def _path_line(topic: Topic, pc: PathCurve) -> dict[str, Any]:
    """One GPU path of a topic against the CPU: its line of the answer."""
    if pc.facts is None:
        said = say("answer_gap", "", pc.path.name if pc.gpu is None else "")
    else:
        said = say("answer_line", topic, pc.facts)
    return {"path": pc.path.name, "meaning": pc.path.meaning, **dict(zip(_ANSWER, said))}


def answer_rows(ctx: Context, topic: Topic, machines: list[MachineTopic]) -> list[dict[str, Any]]:
    """The topic's rows of the answer table, one per machine, a line per GPU path. The row's own
    fields are its last path's."""
    rows = []
    for mt in machines:
        title = topic.title + (f" ({ctx.labels[mt.machine]['pair']})" if ctx.several else "")
        row: dict[str, Any] = {"workload": title, "anchor": topic.id, "paths": []}
        if mt.missing_side:
            row.update(zip(_ANSWER, say("answer_gap", mt.missing_side, "")))
        else:
            row["paths"] = [_path_line(topic, pc) for pc in mt.paths]
            row.update({k: v for k, v in row["paths"][-1].items() if k not in ("path", "meaning")})
        rows.append(row)
    return rows


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


def topic_section(
    ctx: Context, topic: Topic, machines: list[MachineTopic], answer: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The topic's section: its speedup and time charts and table, and the answer's lines as
    sentences; None where no machine has a curve of the topic's last GPU path."""
    curves = [mt.paths[-1].curve for mt in machines if mt.paths]
    if all(c is None for c in curves):
        return None
    # The GPU paths before the last one, by name, each with its curves on every machine: the
    # table's columns.
    others: dict[str, list[pd.DataFrame]] = {}
    for pc in (pc for mt in machines for pc in mt.paths[:-1] if pc.curve is not None):
        others.setdefault(pc.path.name, []).append(pc.curve)
    curve = pd.concat(curves, ignore_index=True)
    line = ctx.pairs(curve)
    series = topic.series
    if series is not None:
        names = named("chart_names")
        width = curve[series].map(lambda v: names["series"].format(key=series, value=fmt_size(v)))
        line = line + names["between"] + width if ctx.several else width
    curve = _with_other_paths(curve.assign(line=line), topic, others)
    paragraphs = say("topic_paragraphs", answer)
    lines = ctx.several or series is not None
    speedup = ctx.chart(
        "speedup", curve, topic=topic, path=topic.paths[-1], series="line" if lines else None
    )
    charts = [speedup] + _extra_charts(ctx, topic, curve, list(others))
    table = table_of("curve_table", topic, curve, list(others), lines)
    return section(topic.id, paragraphs, charts, [table], title=topic.title)


def _extra_charts(
    ctx: Context, topic: Topic, curve: pd.DataFrame, others: list[str]
) -> list[dict[str, str]]:
    """Both sides' times; a sweep over two sizes (batch x hidden) as a heatmap; the topic's
    kernel utilisation chart where it declares one."""
    charts = [_time_chart(ctx, topic, curve, others)]
    if topic.series is not None and not ctx.several and curve[topic.series].nunique() > 1:
        charts.append(ctx.chart("heatmap", curve, topic=topic))
    use = topic.utilisation
    if use is None or ctx.several:
        return charts
    kernel = analysis.select(ctx.summary, use.rows)
    kernel = kernel[num(kernel, "pct_peak").notna()]
    if len(kernel):
        kernel = kernel.sort_values(use.x).assign(few_samples=analysis.flagged(kernel))
        charts.append(ctx.chart("utilisation", kernel, topic=topic, use=use))
    return charts


def _time_chart(
    ctx: Context, topic: Topic, curve: pd.DataFrame, others: list[str]
) -> dict[str, str]:
    """Both sides' times against size: what the speedup is a ratio of."""
    names = named("chart_names")
    several_paths = topic.series is None and len(topic.paths) > 1
    gpu = names["gpu_path" if several_paths else "gpu"].format(path=topic.paths[-1].name)
    # A line's machine (and width) go before its side where they tell the lines apart.
    several = topic.series is not None or ctx.several
    before = curve["line"] + names["between"] if several else ""
    # The other paths the answer states (eager), as lines of their own: their medians,
    # without bands. A sweep with series already has a line per width and side; its
    # table carries the other paths instead.
    sides = [("cpu", names["cpu"]), ("gpu", gpu)]
    if topic.series is None:
        sides += [(path, names["gpu_path"].format(path=path)) for path in others]
    lines = []
    for side, name in sides:
        line = curve.assign(side=before + name, hollow=curve[f"{side}_hollow"].eq(True))
        line = line.assign(**{c: curve[f"{side}_{c}"] for c in ("time", "low", "high")})
        lines.append(line.dropna(subset=["time"]))
    return ctx.chart("time", pd.concat(lines, ignore_index=True), topic=topic)


def _hollow(curve: pd.DataFrame, side: str) -> pd.Series:
    """A side's medians a chart draws hollow: too few repetitions, or a wide spread."""
    return curve[f"{side}_few"] | curve[f"{side}_noisy"]
