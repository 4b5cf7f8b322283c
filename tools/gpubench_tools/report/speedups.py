"""The answer and a section per topic: the GPU against the CPU, path by path, size by size.

`topic_pairs` is the data (per machine and GPU path: analysis.path_curve, the speedup curve,
where it crosses 1, what dominates the GPU time); `answer_rows` and `topic_section` say it, the
latter with the charts it asks for; `speedups` is the step build runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..units import fmt_size
from .analysis import MachineTopic, PathCurve, path_curve
from .context import Context, Drawing, Thin
from .topics import Topic
from .words import named, say, section, table_of, threads_text


@dataclass(frozen=True)
class Speedups:
    """The answer's rows, a section per topic that has a curve, each topic's pairs by its id
    (what the energy section pairs), and whose thin medians they state."""

    answer: list[dict[str, Any]]
    sections: list[dict[str, Any]]
    pairs: dict[str, list[MachineTopic]]
    thin: Thin


def speedups(ctx: Context) -> Speedups:
    """Every topic against the CPU: its pairs, its answer rows and its section."""
    answer, sections, pairs, thin = [], [], {}, set()
    for topic in ctx.topics:
        machines = pairs[topic.id] = topic_pairs(ctx, topic)
        rows = answer_rows(ctx, topic, machines)
        answer += rows
        for curve in (pc.curve for m in machines for pc in m.paths if pc.curve is not None):
            thin |= ctx.thin(curve["cpu_row"], "cpu") | ctx.thin(curve["gpu_row"], "gpu")
        section = topic_section(ctx, topic, machines, rows)
        sections += [section] if section is not None else []
    return Speedups(answer, sections, pairs, thin)


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


_ANSWER = ("wins", "crossover", "ends", "why", "cpu_config", "measured")


def _path_line(topic: Topic, pc: PathCurve) -> dict[str, Any]:
    """One GPU path of a topic against the CPU: its line of the answer."""
    if pc.facts is None:
        said = say("answer_gap", side="", path=pc.path.name if pc.gpu is None else "")
    else:
        threads = sorted({threads_text(t) for t in pc.facts["threads"]}, key=str.lower)
        said = say("answer_line", topic=topic, f=pc.facts, threads=threads)
    return {"path": pc.path.name, "meaning": pc.path.meaning, **dict(zip(_ANSWER, said))}


def answer_rows(ctx: Context, topic: Topic, machines: list[MachineTopic]) -> list[dict[str, Any]]:
    """The topic's rows of the answer table, one per machine, a line per GPU path. The row's own
    fields are its last path's."""
    rows = []
    for mt in machines:
        title = topic.title + (f" ({ctx.labels[mt.machine]['pair']})" if ctx.several else "")
        row: dict[str, Any] = {"workload": title, "anchor": topic.id, "paths": []}
        if mt.missing_side:
            row.update(zip(_ANSWER, say("answer_gap", side=mt.missing_side, path="")))
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
    line = curve["machine"].map(ctx.pair_of)
    series = topic.series
    if series is not None:
        name = named("chart_names", "series")
        width = curve[series].map(lambda v: name.format(key=series, value=fmt_size(v)))
        line = line + named("chart_names", "between") + width if ctx.several else width
    curve = _with_other_paths(curve.assign(line=line), topic, others)
    # The paragraphs state the rows and lines that have a CPU side.
    stated = [a | {"paths": [p for p in a["paths"] if "cpu_config" in p]} for a in answer]
    paragraphs = say("topic_paragraphs", answer=[a for a in stated if "cpu_config" in a])
    lines = ctx.several or series is not None
    given = dict(topic=topic, path=topic.paths[-1], series="line" if lines else None)
    speedup = Drawing("speedup", curve, given)
    charts = [speedup] + _extra_charts(ctx, topic, curve, list(others))
    table = table_of("curve_table", topic=topic, curve=curve, others=list(others), lines=lines)
    return section(topic.id, paragraphs, charts, [table], title=topic.title)


def _extra_charts(
    ctx: Context, topic: Topic, curve: pd.DataFrame, others: list[str]
) -> list[Drawing]:
    """Both sides' times; a sweep over two sizes (batch x hidden) as a heatmap; the topic's
    kernel utilisation chart where it declares one."""
    charts = [_time_chart(ctx, topic, curve, others)]
    if topic.series is not None and not ctx.several and curve[topic.series].nunique() > 1:
        charts.append(Drawing("heatmap", curve, dict(topic=topic)))
    use = topic.utilisation
    if use is None or ctx.several:
        return charts
    kernel = ctx.select(use.rows)
    kernel = kernel[kernel["pct_peak"].notna()]
    if len(kernel):
        kernel = kernel.sort_values(use.x).assign(few_samples=kernel["_flagged"])
        charts.append(Drawing("utilisation", kernel, dict(topic=topic, use=use)))
    return charts


def _time_chart(ctx: Context, topic: Topic, curve: pd.DataFrame, others: list[str]) -> Drawing:
    """Both sides' times against size: what the speedup is a ratio of."""
    names = {k: named("chart_names", k) for k in ("cpu", "gpu", "gpu_path", "between")}
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
    return Drawing("time", pd.concat(lines, ignore_index=True), dict(topic=topic))


def _hollow(curve: pd.DataFrame, side: str) -> pd.Series:
    """A side's medians a chart draws hollow: too few repetitions, or a wide spread."""
    return curve[f"{side}_few"] | curve[f"{side}_noisy"]
