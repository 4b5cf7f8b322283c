"""The report's content: from the table to the document the templates render.

The order is the reader's: the answer (one table, a row per workload: who wins where, by how
much, and why), then a section per workload with its charts and numbers, then the GPU's fixed
costs and the model built from them, CPU thread scaling, what did not run, and the hardware.
Every number says whose measurement it is (this run or the reference run) and carries its
noise: the spread of the repetitions where there are several, a mark where there are too few.
Nothing here formats markup: the templates escape every text for HTML or Markdown.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..overhead_model import build_model
from ..table import num
from ..benchjson import (
    CONDITION_FIGURES,
    DISTURBED,
    UNKNOWN,
    describe_conditions,
    unknown_conditions_note,
)
from ..policy import HEADLINE_RULE
from ..table import REFERENCE_RUN, THIS_RUN, Table, short_cpu_name, short_gpu_name, summarize
from ..units import approx, fmt_bytes, fmt_flops, fmt_pct, fmt_rate, fmt_ratio, fmt_size, fmt_time
from . import analysis
from .charts import Chart, draw
from .topics import (
    ENERGY,
    ALLOCATION_PROBES,
    CONTEXT_NAMES,
    MEMORY_AGREEMENT,
    MEMORY_FAMILIES,
    PART_LABELS,
    PART_MEANINGS,
    PEERS,
    TOPICS,
    TRAINING_WORKLOADS,
    EnergyTopic,
    PartsChart,
    StepProfile,
    Topic,
    committed_gpu_reference,
)

__all__ = ["build_document"]

PARTS = analysis.PARTS
# Marks in tables: a median of fewer than 3 repetitions is one draw from a noisy machine, not
# a measurement to act on; a wide spread says the same.
FEW_MARK, NOISY_MARK = "†", "~"
# A median that includes repetitions measured while disturbed (fewer than MIN_UNDISTURBED
# undisturbed ones remained: policy.HEADLINE_RULE).
DISTURBED_MARK = "‡"


def _fastest(rows: pd.DataFrame, keys: list[str], time_col: str) -> pd.DataFrame:
    """The fastest row at each key: the best GPU path (eager, graph, fused) of a size."""
    rows = rows.dropna(subset=[time_col])
    return rows.loc[rows.groupby(keys, dropna=False)[time_col].idxmin()] if len(rows) else rows


def _machine_labels(table: Table) -> dict[int, dict[str, str]]:
    """Per machine: its CPU and GPU names and whose measurement each side is."""
    labels = {}
    for index, m in table.machines.iterrows():
        tag = f" ({m['tag']})" if m.get("tag") else ""
        gpu_where = (
            f"{REFERENCE_RUN}, {m['gpu_date'] or 'undated'}" if m["gpu_reference"] else THIS_RUN
        )
        gpu = short_gpu_name(m["gpu"]) if m["gpu"] else "no GPU"
        cpu = short_cpu_name(m["cpu"])
        labels[int(index)] = {
            "cpu": cpu + tag,
            "gpu": gpu + tag,
            "gpu_where": gpu_where,
            "cpu_where": THIS_RUN,
            "pair": f"{cpu} vs {gpu}{tag}",
        }
    return labels


def _noise_mark(row: pd.Series) -> str:
    few = bool(row.get("few_samples", False))
    noisy = bool(row.get("noisy", False))
    disturbed = bool(row.get("disturbed", False))
    return (
        (FEW_MARK if few else "")
        + (NOISY_MARK if noisy else "")
        + (DISTURBED_MARK if disturbed else "")
    )


def _threads_text(threads: Any) -> str:
    if threads is None or (isinstance(threads, float) and math.isnan(threads)):
        return "CPU"
    n = int(threads)
    return f"{n} thread{'' if n == 1 else 's'}"


def _speedup_text(speedup: float, mark: str = "") -> str:
    """A speedup as a ratio; below 1 also as how many times slower the GPU is, the way people
    say it ("0.024x (42x slower)")."""
    text = fmt_ratio(speedup) + mark
    if 0 < speedup < 1:
        text += f" ({fmt_ratio(1 / speedup).removesuffix('x')}x slower)"
    return text


def _ends(first: pd.Series, last: pd.Series, topic: Topic) -> str:
    """The speedup at the smallest and the largest size, each with its noise mark."""

    def at(row: pd.Series, name: str) -> str:
        # Training topics take the fastest GPU path at each size: say which one it was.
        path = f" ({row['gpu_variant']})" if topic.time_col == "t_step" else ""
        return f"{_speedup_text(row['speedup'], _noise_mark(row))} at {name}{fmt_size(row[topic.x])}{path}"

    text = at(first, f"{topic.x_name} ")
    if last[topic.x] != first[topic.x]:
        text += " → " + at(last, "")
    return text


def _wins_at(curve: pd.DataFrame, x: str, x_name: str) -> str:
    wins = curve.loc[curve["speedup"] > 1, x]
    if wins.empty:
        return "no size measured"
    if len(wins) == len(curve):
        return "every size measured"
    if wins.min() > curve.loc[curve["speedup"] <= 1, x].max():
        return f"{x_name} ≥ {fmt_size(wins.min())}"
    return ", ".join(f"{x_name} {fmt_size(v)}" for v in wins)


def _dominant(curve: pd.DataFrame, parts: pd.DataFrame, keys: list[str]) -> str:
    """The part of the GPU time that is largest most often: over the sizes where the GPU
    loses when it loses somewhere (what to remove to win there), else over every size."""
    if parts.empty:
        return "no breakdown (the GPU rows have no parts)"
    slower = curve[curve["speedup"] < 1]
    where = slower if len(slower) else curve
    joined = where[keys].merge(parts, on=keys, how="inner")
    if joined.empty:
        return "no breakdown at these sizes"
    name = joined["dominant"].mode().iloc[0]
    text = PART_MEANINGS.get(name, name)
    return text + (" (where it loses)" if 0 < len(slower) < len(curve) else "")


class _Builder:
    def __init__(self, table: Table, out: Path) -> None:
        self.table, self.out = table, out
        self.summary = summarize(table.rows)
        self.labels = _machine_labels(table)
        self.sections: list[dict[str, Any]] = []
        self.answer: list[dict[str, Any]] = []
        self.breakdown = analysis.breakdown(self.summary) if len(self.summary) else pd.DataFrame()
        # (whose: this run or the reference run, side: cpu or gpu, file) of every median of
        # fewer than FEW_REPETITIONS repetitions the report states.
        self.thin: set[tuple[str, str, str]] = set()
        files = [f for m in table.machines.itertuples() for f in m.files]
        files += [f for m in table.machines.itertuples() if m.gpu_reference for f in m.gpu_files]
        if len(table.rows):
            files += list(table.rows["file"].unique())
        if len(table.problems):
            files += list(table.problems["file"].unique())
        self.file_names = distinct_names([str(f) for f in files])
        # Per topic, the paths before its last one and their curves (the section's table).
        self.other_paths: dict[str, list[tuple[Any, pd.DataFrame]]] = {}

    @property
    def few_samples(self) -> bool:
        return bool(self.thin)

    def subtitle(self, gpu: bool = True) -> str:
        """Whose numbers a chart shows: both sides of one machine, or the machines overlaid."""
        if len(self.labels) > 1:
            return "Machines: " + "; ".join(n["pair"] for n in self.labels.values())
        (n,) = self.labels.values()
        cpu = f"CPU: {n['cpu']} ({n['cpu_where']})"
        return f"{cpu} · GPU: {n['gpu']} ({n['gpu_where']})" if gpu else cpu

    def _pairs(self, rows: pd.DataFrame) -> pd.Series:
        """Each row's machine, by its device names (the facet of charts of several machines)."""
        return rows["machine"].map(lambda m: self.labels[int(m)]["pair"])

    def chart(self, chart: Chart, data: pd.DataFrame, caption: str) -> dict[str, str]:
        stem = draw(chart, data, self.out)
        return {"png": f"{stem}.png", "svg": f"{stem}.svg", "alt": chart.title, "caption": caption}

    # --- the workloads ----------------------------------------------------------------------

    def topic(self, topic: Topic) -> None:
        curves = []
        for machine, rows in self.summary.groupby("machine"):
            curve = self._machine_topic(topic, int(machine), rows)
            if curve is not None:
                curves.append(curve)
        if curves:
            curve = pd.concat(curves, ignore_index=True)
            self.sections.append(self._topic_section(topic, curve))

    def _machine_topic(self, topic: Topic, machine: int, rows: pd.DataFrame) -> pd.DataFrame | None:
        """One machine's answer row for a topic, a line per GPU path the topic declares, and
        the speedup curve of its last path (None without one). The row's own fields are the
        last path's; the other paths' curves are kept for the section's table."""
        cpu, gpu = analysis.select(rows, topic.cpu), analysis.select(rows, topic.gpu)
        if cpu.empty and gpu.empty:
            return None
        title = topic.title + (f" ({self.labels[machine]['pair']})" if len(self.labels) > 1 else "")
        row: dict[str, Any] = {"workload": title, "anchor": topic.id, "paths": []}
        self.answer.append(row)
        if cpu.empty or gpu.empty:
            missing = "CPU" if cpu.empty else "GPU"
            row.update(wins="—", crossover="—", ends="—", why=f"no {missing} rows to compare")
            return None
        curve = None
        for path in topic.gpu_paths:
            line, curve = self._path_line(topic, path, machine, cpu, analysis.select(gpu, path.gpu))
            row["paths"].append(line)
            if curve is not None and path != topic.gpu_paths[-1]:
                self.other_paths.setdefault(topic.id, []).append((path, curve))
        row.update({k: v for k, v in row["paths"][-1].items() if k not in ("path", "meaning")})
        return curve

    def _path_line(
        self, topic: Topic, path: Any, machine: int, cpu: pd.DataFrame, gpu: pd.DataFrame
    ) -> tuple[dict[str, Any], pd.DataFrame | None]:
        """One GPU path of a topic against the CPU: its line of the answer, and its curve."""
        line: dict[str, Any] = {"path": path.name, "meaning": path.meaning}
        if gpu.empty:
            line.update(wins="—", crossover="—", ends="—", why=f"no {path.name} GPU rows")
            return line, None
        keys = list(topic.keys)
        gpu = _fastest(gpu, keys, topic.time_col)
        curve = analysis.speedup_curve(
            pd.concat([cpu, gpu]), {"backend": "cpu"}, {"backend": "gpu"}, keys, topic.time_col
        )
        if curve.empty:
            line.update(wins="—", crossover="—", ends="—", why="no size measured on both sides")
            return line, None
        variants = gpu[keys + ["variant"]].rename(columns={"variant": "gpu_variant"})
        curve = curve.merge(variants, on=keys, how="left").sort_values(keys).assign(machine=machine)
        self._note_thin(curve)
        # A topic with series (a training sweep's hidden widths) answers for its longest
        # series: the one that spans the most sizes.
        if topic.series is None:
            value, main = None, curve
        else:
            value, main = max(curve.groupby(topic.series), key=lambda item: len(item[1]))
        cross = analysis.crossover(main, topic.x)
        series_text = "" if value is None else f" ({topic.series} {fmt_size(value)})"
        first, last = main.iloc[0], main.iloc[-1]
        parts = self.breakdown
        if len(parts):
            parts = parts[parts["name"].isin(gpu["name"])].drop(columns=keys, errors="ignore")
            parts = parts.merge(gpu[["name"] + keys], on="name")
        line.update(
            wins=_wins_at(main, topic.x, topic.x_name) + series_text,
            crossover=self._crossover_text(cross, topic),
            ends=_ends(first, last, topic),
            why=_dominant(main, parts, keys),
            cpu_config="best of "
            + ", ".join(sorted({_threads_text(t) for t in main["cpu_threads"]})),
            measured=f"CPU: {first['cpu_measured_on']} · GPU: {first['gpu_measured_on']}",
        )
        return line, curve

    def _note_rows_thin(self, names: pd.Series, side: str) -> None:
        """A section's thin rows by benchmark name: their files and whose they are."""
        rows = self.summary[self.summary["name"].isin(set(names))]
        for where, file in zip(rows["measured_on"], rows["file"]):
            self.thin.add((str(where), side, str(file)))

    def _note_thin(self, curve: pd.DataFrame) -> None:
        """Remember whose rows are medians of too few repetitions: the † footnote says so."""
        for side in ("cpu", "gpu"):
            few = curve[curve[f"{side}_repetitions"].fillna(1) < analysis.FEW_REPETITIONS]
            for where, file in zip(few[f"{side}_measured_on"], few[f"{side}_file"]):
                self.thin.add((str(where), side, str(file)))

    def _crossover_text(self, cross: Any, topic: Topic) -> str:
        if cross.kind == "cross" and cross.x is not None:
            return f"{topic.x_name} ≈ {approx(cross.x)}"
        return {
            "always_faster": "none: GPU faster at every size",
            "never_faster": "none: CPU faster at every size",
        }.get(cross.kind, "—")

    def _topic_section(self, topic: Topic, curve: pd.DataFrame) -> dict[str, Any]:
        several = len(self.labels) > 1
        curve = curve.assign(line=curve["machine"].map(lambda m: self.labels[m]["pair"]))
        series = topic.series
        if series is not None:
            named = curve[series].map(lambda v: f"{series} {fmt_size(v)}")
            curve = curve.assign(line=(curve["line"] + " · " + named) if several else named)
        chart = Chart(
            kind="lines",
            stem=f"speedup_{topic.id}",
            title=f"{topic.title}: GPU speedup over the CPU",
            subtitle=self.subtitle(),
            x=topic.x,
            y="speedup",
            series="line" if several or series else None,
            y_low="speedup_low",
            y_high="speedup_high",
            flag="flagged",
            log_x=True,
            log_y=True,
            hline=(1.0, "same speed"),
            x_label=topic.x_name,
            y_label=f"CPU / GPU wall time per {topic.time_name}",
            y_unit="ratio",
        )
        caption = (
            f"Above 1 the GPU is faster: {topic.cpu_time_name} / {topic.gpu_time_name}. "
            f"GPU: {topic.gpu_paths[-1].meaning}; CPU: the fastest thread count measured at each "
            f"size. Bands: min..max over repetitions; hollow markers: fewer than 3 repetitions, "
            f"a spread over 25%, or measured while disturbed."
        )
        # The other GPU paths the answer states (eager beside the fastest), as columns.
        others = self.other_paths.get(topic.id, [])
        on = ["machine", *topic.keys]
        for path, other in others:
            columns = other[on + ["gpu_time", "speedup", "gpu_repetitions", "gpu_noisy"]]
            columns = columns.assign(
                few=(columns["gpu_repetitions"] < analysis.FEW_REPETITIONS) | columns["gpu_noisy"]
            )
            columns = columns[on + ["gpu_time", "speedup", "few"]].rename(
                columns={
                    "gpu_time": f"{path.name}_time",
                    "speedup": f"{path.name}_speedup",
                    "few": f"{path.name}_few",
                }
            )
            curve = curve.merge(columns, on=on, how="left")
        table_rows = [
            ([r["line"]] if several or series else [])
            + [
                fmt_size(r[topic.x]),
                f"{fmt_time(r['cpu_time'])} ({_threads_text(r['cpu_threads'])})",
                f"{fmt_time(r['gpu_time'])} ({r['gpu_variant']})",
                f"{fmt_ratio(r['speedup'])} [{fmt_ratio(r['speedup_low'])}–"
                f"{fmt_ratio(r['speedup_high'])}]",
            ]
            + [
                f"{fmt_time(r[f'{p.name}_time'])}, {fmt_ratio(r[f'{p.name}_speedup'])}"
                if pd.notna(r[f"{p.name}_time"]) else "—"
                for p, _ in others
            ]  # fmt: skip
            + [f"{int(r['cpu_repetitions'])} / {int(r['gpu_repetitions'])}{_noise_mark(r)}"]
            for _, r in curve.iterrows()
        ]
        mine = [a for a in self.answer if a["anchor"] == topic.id and "cpu_config" in a]
        paragraphs = [
            " ".join(
                f"{a['workload']}, {line['path']} GPU path ({line['meaning']}): the GPU wins "
                f"at {line['wins']}; crossover: {line['crossover']}; speedup {line['ends']}; "
                f"most of the GPU time is {line['why']}."
                for line in a["paths"]
                if "cpu_config" in line
            )
            + f" CPU side: {a['cpu_config']}."
            for a in mine
        ]
        headers = (
            (["line"] if several or series else [])
            + [topic.x_name, "CPU time", "GPU time (path)", "speedup [min–max]"]
            + [f"{p.name} GPU time, speedup" for p, _ in others]
            + ["repetitions CPU / GPU"]
        )
        return {
            "id": topic.id,
            "title": topic.title,
            "paragraphs": paragraphs,
            "charts": [self.chart(chart, curve, caption)] + self._extra_charts(topic, curve),
            "tables": [
                {
                    "caption": f"Time per {topic.time_name} (medians) and speedups",
                    "headers": headers,
                    "rows": table_rows,
                }
            ],
        }

    def _extra_charts(self, topic: Topic, curve: pd.DataFrame) -> list[dict[str, str]]:
        """A sweep over two sizes (batch x hidden) as a heatmap; the topic's kernel utilisation
        chart where it declares one."""
        charts = [self._time_chart(topic, curve)]
        if topic.series is not None and len(self.labels) == 1 and curve[topic.series].nunique() > 1:
            heat = Chart(
                kind="heatmap",
                stem=f"heatmap_{topic.id}",
                title=f"{topic.title}: speedup by {topic.x_name} and {topic.series}",
                subtitle=self.subtitle(),
                x=topic.x,
                y=topic.series,
                value="speedup",
                x_label=topic.x_name,
                y_label=topic.series,
                value_label=f"CPU / GPU wall time per {topic.time_name}",
            )
            caption = "Blue: the GPU is faster; red: the CPU is. Each cell is one size pair."
            charts.append(self.chart(heat, curve, caption))
        utilisation = topic.utilisation
        if utilisation is not None:
            kernel = analysis.select(self.summary, utilisation.rows).dropna(
                subset=["pct_peak"] if "pct_peak" in self.summary else []
            )
            if len(kernel) and len(self.labels) == 1:
                chart = Chart(
                    kind="lines",
                    stem=f"utilisation_{topic.id}",
                    title=utilisation.title,
                    subtitle=self.subtitle(),
                    x=utilisation.x,
                    y="pct_peak",
                    series=utilisation.series,
                    flag="few_samples",
                    log_x=True,
                    log_y=True,
                    x_label=utilisation.x,
                    y_label="% of the precision's peak",
                    y_unit="count",
                )
                charts.append(
                    self.chart(
                        chart,
                        kernel.sort_values(utilisation.x).assign(
                            few_samples=analysis.flagged(kernel)
                        ),
                        utilisation.caption,
                    )
                )
        return charts

    def _time_chart(self, topic: Topic, curve: pd.DataFrame) -> dict[str, str]:
        """Both sides' times against size: what the speedup is a ratio of."""
        sides = []
        several_paths = topic.series is None and len(topic.gpu_paths) > 1
        last = f"GPU, {topic.gpu_paths[-1].name}" if several_paths else "GPU"
        for side, name in (("cpu", "CPU (fastest threads)"), ("gpu", last)):
            part = curve.assign(
                side=curve["line"] + " · " + name if "line" in curve else name,
                time=curve[f"{side}_time"],
                low=curve[f"{side}_low"],
                high=curve[f"{side}_high"],
                few=(curve[f"{side}_repetitions"] < analysis.FEW_REPETITIONS)
                | curve[f"{side}_noisy"],
            )
            sides.append(part)
        # The other paths the answer states (eager), as lines of their own: their medians,
        # without bands. A sweep with series already has a line per width and side; its
        # table carries the other paths instead.
        others = self.other_paths.get(topic.id, []) if topic.series is None else []
        for path, _ in others:
            time = curve[f"{path.name}_time"]
            name = f"GPU, {path.name}"
            sides.append(
                curve.assign(
                    side=curve["line"] + " · " + name if "line" in curve else name,
                    time=time,
                    low=time,
                    high=time,
                    few=curve[f"{path.name}_few"].fillna(False).astype(bool),
                ).dropna(subset=["time"])
            )
        times = pd.concat(sides, ignore_index=True)
        if topic.series is None and len(self.labels) == 1:
            times["side"] = times["side"].str.split(" · ").str[-1]
        chart = Chart(
            kind="lines",
            stem=f"time_{topic.id}",
            title=f"{topic.title}: time per {topic.time_name}",
            subtitle=self.subtitle(),
            x=topic.x,
            y="time",
            series="side",
            y_low="low",
            y_high="high",
            flag="few",
            log_x=True,
            log_y=True,
            x_label=topic.x_name,
            y_label=f"time per {topic.time_name}",
            y_unit="s",
        )
        return self.chart(chart, times, "Medians; bands: min..max over repetitions.")

    # --- where the GPU time goes -----------------------------------------------------------

    def breakdown_section(self) -> None:
        parts = self.breakdown
        if parts.empty:
            return
        charts, paragraphs, tables = [], [], []
        for topic in TOPICS:
            if topic.parts is not None:
                if topic.parts.size is not None:
                    self._parts_by_size(topic.parts, parts, charts, paragraphs, tables)
                else:
                    self._parts_by_path(topic.parts, parts, charts, tables)
        self.sections.append(
            {
                "id": "breakdown",
                "title": "Where the GPU time goes",
                "paragraphs": paragraphs,
                "charts": charts,
                "tables": tables,
                "notes": [
                    "Four parts: transfer = t_h2d + t_d2h; overhead = t_overhead (launch, "
                    "synchronisation, API calls); under-utilisation = t_compute − flop / peak; "
                    "work at peak = flop / peak, with the GPU's peak for the row's precision. "
                    "Rows without a flop count or peak keep three parts (compute unsplit)."
                ],
            }
        )

    def _parts_by_size(
        self, view: PartsChart, parts: pd.DataFrame, charts: list[dict[str, str]],
        paragraphs: list[str], tables: list[dict[str, Any]],
    ) -> None:  # fmt: skip
        """A bar per size of the view's rows, and which part is the largest where."""
        size = str(view.size)
        rows = analysis.select(parts, view.rows)
        if view.sizes:
            rows = rows[rows[size].isin(view.sizes)] if size in rows else rows[:0]
        if rows.empty:
            return
        rows = rows.sort_values(size)
        ranges = analysis.dominant_by_range(rows, size)
        paragraphs.append(
            f"{view.lead}: "
            + "; ".join(
                f"{PART_LABELS[r['dominant']]} is the largest part for {size} "
                f"{fmt_size(r['x_from'])}–{fmt_size(r['x_to'])}"
                for _, r in ranges.iterrows()
            )
            + "."
        )
        compute = rows.assign(
            dominant=np.where(
                rows["work_at_peak"] > rows["under_utilisation"],
                "work_at_peak",
                "under_utilisation",
            )
        )
        paragraphs.append(
            "Within the compute time: "
            + "; ".join(
                f"{PART_LABELS[r['dominant']]} is larger for {size} {fmt_size(r['x_from'])}–"
                f"{fmt_size(r['x_to'])}"
                for _, r in analysis.dominant_by_range(compute, size).iterrows()
            )
            + "."
        )
        rows = rows.assign(
            size=rows[size].map(lambda v: f"{size}={fmt_size(v)}"), pair=self._pairs(rows)
        )
        charts.append(
            self._parts_chart(
                view.stem, view.title, "size", view.size_label, view.y_label, rows, view.caption
            )
        )
        tables.append(self._parts_table(rows, size, size))

    def _parts_by_path(
        self, view: PartsChart, parts: pd.DataFrame, charts: list[dict[str, str]],
        tables: list[dict[str, Any]],
    ) -> None:  # fmt: skip
        """A bar per GPU path and variant of the view's rows."""
        rows, title = analysis.select(parts, view.rows), view.title
        if rows.empty and view.any_training_title is not None:
            rows = parts[parts["workload"].isin(TRAINING_WORKLOADS)].head(12)
            title = view.any_training_title
        if rows.empty:
            return
        precision = rows["precision"].where(rows["precision"] != "fp32", "")
        path = rows["name"].map(_path_name) + " " + precision.fillna("")
        # One bar per path: a net measured at several sizes shows its first.
        rows = rows.assign(path=path.str.strip(), pair=self._pairs(rows))
        rows = rows.drop_duplicates(["pair", "path"])
        charts.append(
            self._parts_chart(view.stem, title, "path", "", view.y_label, rows, view.caption)
        )
        tables.append(self._parts_table(rows, "path", "GPU path"))

    def _parts_chart(
        self, stem: str, title: str, x: str, x_label: str, y_label: str, rows: pd.DataFrame,
        caption: str,
    ) -> dict[str, str]:  # fmt: skip
        """The four parts as shares of each bar, one panel per machine where there are several.
        A row without a flop count or a peak stacks its compute time unsplit, so that no bar
        leaves part of its time out of its 100%."""
        rows = rows.assign(unsplit=rows["compute"].where(rows["parts"] == 3))
        parts = [(p, PART_LABELS[p]) for p in PARTS]
        if rows["unsplit"].notna().any():
            parts.append(("unsplit", PART_LABELS["compute"]))
        chart = Chart(
            kind="stacked",
            stem=stem,
            title=title,
            subtitle=self.subtitle(),
            x=x,
            parts=tuple(parts),
            normalize=True,
            facet="pair" if len(self.labels) > 1 else None,
            x_label=x_label,
            y_label=y_label,
        )
        return self.chart(chart, rows, caption)

    def _parts_table(self, parts: pd.DataFrame, x: str, x_head: str) -> dict[str, Any]:
        rows = []
        for _, r in parts.iterrows():
            rows.append(
                [str(r[x]) if not isinstance(r[x], float) else fmt_size(r[x])]
                + [fmt_time(r["transfer"]), fmt_time(r["overhead"])]
                + (
                    [fmt_time(r["under_utilisation"]), fmt_time(r["work_at_peak"])]
                    if r["parts"] == 4
                    # Three parts: the compute time stands unsplit, with the reason.
                    else [f"{fmt_time(r['compute'])} compute, not split: {r['why']}", "—"]
                )
                + [
                    fmt_time(r["total"]),
                    PART_LABELS.get(r["dominant"], r["dominant"]),
                ]
            )
        return {
            "caption": "The four parts of the GPU time (per call or per step)",
            "headers": [x_head, "transfer", "overhead", "under-utilisation", "work at peak",
                        "total", "largest"],  # fmt: skip
            "rows": rows,
        }

    # --- the model of the fixed costs --------------------------------------------------------

    def model_section(self) -> None:
        gpu = self.summary[self.summary["backend"] == "gpu"]
        if gpu.empty:
            return
        model = build_model(gpu)
        if model.empty:
            return
        paragraphs, tables = [], []
        costs = [[name, fmt_time(v)] for name, v in model.launch.items()]
        costs += [
            [f"copy {d} ({host}): fixed cost alpha, bandwidth beta",
             f"{fmt_time(fit.alpha_s)}, {fit.beta_bytes_per_s / 1e9:.3g} GB/s"]  # fmt: skip
            for (d, host), fit in sorted(model.copies.items())
        ]
        tables.append(
            {
                "caption": "Fixed GPU costs measured by the probes",
                "headers": ["cost", "value"],
                "rows": costs,
            }
        )
        charts = []
        copies = analysis.select(gpu, {"probe": ("h2d", "d2h")}).dropna(subset=["bytes_per_s"])
        if len(copies) and len(self.labels) == 1:
            copies = copies.assign(
                copy=copies["probe"].str.upper() + " " + copies["host"].fillna(""),
                few=analysis.flagged(copies),
            ).sort_values("bytes")
            chart = Chart(
                kind="lines",
                stem="copies",
                title="Host-device copies: bandwidth against size",
                subtitle=self.subtitle(),
                x="bytes",
                y="bytes_per_s",
                series="copy",
                flag="few",
                log_x=True,
                log_y=True,
                x_label="bytes per copy",
                y_label="bandwidth",
                x_unit="bytes",
                y_unit="bytes/s",
            )
            charts.append(
                self.chart(
                    chart, copies, "Below alpha x beta bytes the fixed cost alpha dominates."
                )
            )
        bias = analysis.model_bias(self.summary, model)
        if len(bias.before):
            paragraphs.append(bias_sentence(bias))
            tables.append(_bias_table(bias))
        self.sections.append(
            {
                "id": "model",
                "title": "The overhead model and its error",
                "paragraphs": paragraphs,
                "charts": charts,
                "tables": tables,
                "notes": [
                    "Predicted end-to-end GEMM time = copies (alpha + bytes / beta each way) + "
                    "flop / (utilisation × peak) + one launch + one synchronisation. Signed "
                    "error = (predicted − measured) / measured: negative means the model "
                    "under-predicts."
                ],
            }
        )

    # --- a training step, operation by operation ----------------------------------------------

    def profile_sections(self) -> None:
        """The step profile of every topic that declares one."""
        for topic in TOPICS:
            if topic.profile is not None:
                self._profile_section(topic.profile)

    def _profile_section(self, profile: StepProfile) -> None:
        """Where one step goes, from the `t_op:<layer>.<operation>` counters, by kind."""
        columns = [c for c in self.summary.columns if c.startswith("t_op:")]
        rows = analysis.select(self.summary, profile.rows).dropna(subset=columns[:1])
        if not columns or rows.empty:
            return
        batch = min(rows["batch"].unique(), key=lambda b: abs(math.log(b / profile.batch_near)))
        rows = rows[rows["batch"] == batch]
        kinds: dict[str, list[str]] = {}
        for column in columns:
            kinds.setdefault(_operation_kind(column, profile.kinds), []).append(column)
        parts = rows[["name", "machine"]].assign(
            **{kind: rows[cols].sum(axis=1, min_count=1) for kind, cols in kinds.items()},
            path=rows["name"].map(lambda n: _short_benchmark(n).split("/", 1)[1]),
        )
        chart = Chart(
            kind="stacked",
            stem=profile.stem,
            title=profile.chart_title.format(batch=fmt_size(batch)),
            subtitle=self.subtitle(),
            x="path",
            parts=tuple((kind, kind) for kind in kinds),
            normalize=True,
            y_label="share of the profiled step",
        )
        self.sections.append(
            {
                "id": profile.id,
                "title": profile.title,
                "paragraphs": [],
                "charts": [self.chart(chart, parts, "From the per-operation counters, by kind.")],
                "tables": [],
            }
        )

    # --- CPU thread scaling --------------------------------------------------------------------

    def threads_section(self) -> None:
        scaling = analysis.thread_scaling(self.summary)
        if scaling.empty:
            return
        # One line per workload and data set: its largest case (longest 1-thread time), where
        # threads have work to share; a line per GEMM size would not read.
        data = scaling["data"] if "data" in scaling else pd.Series("", index=scaling.index)
        kind = scaling["workload"].astype(str) + " " + data.fillna("").astype(str)
        scaling = scaling.assign(
            kind=kind.str.strip(), benchmark=scaling["base_name"].map(_short_benchmark)
        )
        largest = scaling.loc[scaling.groupby("kind")["time_1"].idxmax(), "base_name"]
        shown = scaling[scaling["base_name"].isin(largest)]
        self._note_rows_thin(scaling.loc[scaling["few_samples"].astype(bool), "name"], "cpu")
        chart = Chart(
            kind="lines",
            stem="cpu_threads",
            title="CPU speedup with threads (the largest case of each workload)",
            subtitle=self.subtitle(gpu=False),
            x="threads",
            y="speedup",
            series="benchmark",
            y_low="speedup_low",
            y_high="speedup_high",
            flag="flagged",
            diagonal=True,
            x_label="threads",
            y_label="time with 1 thread / time",
            y_unit="ratio",
            x_ticks="data",
        )
        top = scaling[
            scaling["threads"] == scaling.groupby("base_name")["threads"].transform("max")
        ]
        rows = [
            [r["benchmark"], str(int(r["threads"])), fmt_ratio(r["speedup"]),
             fmt_pct(r["efficiency"]) + _noise_mark(r)]  # fmt: skip
            for _, r in top.sort_values("efficiency").iterrows()
        ]
        worst, best = top["efficiency"].min(), top["efficiency"].max()
        self.sections.append(
            {
                "id": "threads",
                "title": "The CPU on all its cores",
                "paragraphs": [
                    "Every speedup above compares the GPU with the fastest CPU thread count "
                    "measured at that size. With all its threads, each CPU benchmark measured at "
                    f"several thread counts reaches {fmt_pct(worst)} to {fmt_pct(best)} of ideal "
                    "scaling (efficiency = speedup over 1 thread / threads)."
                ],
                "charts": [self.chart(chart, shown, "The dashed diagonal is ideal scaling.")],
                "tables": [
                    {
                        "caption": "Every benchmark at its most threads, least efficient first",
                        "headers": ["benchmark", "threads", "speedup", "efficiency"],
                        "rows": rows,
                    }
                ],
            }
        )

    # --- against PyTorch ---------------------------------------------------------------------

    def peers_section(self) -> None:
        """The suite's own paths against the same work in PyTorch, where a run has its rows."""
        tables = []
        for peer in PEERS:
            ours, theirs = analysis.select(self.summary, peer.ours), analysis.select(
                self.summary, peer.peer
            )
            if ours.empty or theirs.empty:
                continue
            keys = [k for k in peer.keys if k in ours and k in theirs]
            # Pair with the curve of the answer: "cpu" is the peer, "gpu" is ours, so the
            # speedup is PyTorch's time over ours.
            both = pd.concat([theirs.assign(side="peer"), ours.assign(side="ours")])
            curve = analysis.speedup_curve(
                both, {"side": "peer"}, {"side": "ours"}, keys, peer.time_col
            )
            if curve.empty:
                continue
            rows = [
                [" ".join(f"{k}={_cell(r[k])}" for k in keys),
                 fmt_time(r["gpu_time"]), fmt_time(r["cpu_time"]),
                 f"{fmt_ratio(r['speedup'])}{_noise_mark(r)}"]  # fmt: skip
                for _, r in curve.iterrows()
            ]
            tables.append(
                {
                    "caption": peer.title,
                    "headers": ["case", peer.names[0], peer.names[1],
                                f"{peer.names[1]} / {peer.names[0]}"],  # fmt: skip
                    "rows": rows,
                }
            )
        if tables:
            self.sections.append(
                {
                    "id": "peers",
                    "title": "Against PyTorch, and mixed precision against fp32",
                    "paragraphs": [
                        "The same work two ways, each ratio the second time over the first: "
                        "PyTorch (tools/reference/, measured in the same session as the suite's "
                        "rows) over the suite, above 1x the suite is faster; fp32 over bf16 or "
                        "fp16 on the same path, above 1x mixed precision pays."
                    ],
                    "charts": [],
                    "tables": tables,
                }
            )

    # --- device memory ------------------------------------------------------------------------

    def memory_section(self) -> None:
        """Measured peak device memory against the model's bytes, and the largest batches."""
        agreement = analysis.memory_agreement(self.summary)
        workload = agreement["workload"].fillna("other")
        agreement = agreement.assign(family=workload.map(lambda w: MEMORY_FAMILIES.get(w, w)))
        largest = self._largest_batch_lines()
        if agreement.empty and not largest:
            return
        paragraphs, charts, tables = [], [], []
        if not agreement.empty:
            # Largest disagreement first, either way: 2x over and 2x under are as far from 1.
            distance = np.log(agreement["ratio"]).abs()
            by_distance = agreement.loc[distance.sort_values(ascending=False, kind="stable").index]
            ratios = agreement["ratio"]
            within = ratios.between(1 / MEMORY_AGREEMENT, MEMORY_AGREEMENT)
            families = "; ".join(
                f"{family} {fmt_ratio(r.median())}"
                + (f" ({fmt_ratio(r.min())} to {fmt_ratio(r.max())}, {len(r)} rows)"
                   if len(r) > 1 else "")
                for family, r in ratios.groupby(agreement["family"], sort=False)
            )  # fmt: skip
            worst = by_distance.iloc[0]
            paragraphs += [
                f"Over {len(agreement)} GPU benchmarks the measured peak (cudaMemGetInfo around "
                f"the benchmark) is {fmt_ratio(ratios.median())} the bytes its shapes call for "
                f"at the median, within {fmt_pct(MEMORY_AGREEMENT - 1)} of them in "
                f"{int(within.sum())}. Measured over model, by workload: {families}.",
                f"The largest disagreement is {_short_benchmark(worst['name'])}: "
                f"{fmt_bytes(worst['device_bytes_peak'])} measured against "
                f"{fmt_bytes(worst['device_bytes_model'])} modelled "
                f"({fmt_ratio(worst['ratio'])}).",
            ]
            chart = Chart(
                kind="lines",
                stem="memory_model",
                title="Peak device memory: measured against the model",
                subtitle=self.subtitle(),
                x="device_bytes_model",
                y="device_bytes_peak",
                series="family",
                connect=False,
                diagonal=True,
                diagonal_label="measured = model",
                log_x=True,
                log_y=True,
                x_unit="bytes",
                y_unit="bytes",
                x_label="model (bytes the shapes call for)",
                y_label="measured peak",
            )
            caption = "One marker per benchmark; above the diagonal it held more than modelled."
            charts.append(self.chart(chart, agreement, caption))
            tables.append(
                {
                    "caption": "Device memory: model and measured peak, largest disagreement first",
                    "headers": ["benchmark", "model", "measured peak", "measured over model",
                                "measured on"],  # fmt: skip
                    "rows": [
                        [_short_benchmark(r["name"]), fmt_bytes(r["device_bytes_model"]),
                         fmt_bytes(r["device_bytes_peak"]), fmt_ratio(r["ratio"]),
                         r["measured_on"]]  # fmt: skip
                        for _, r in by_distance.iterrows()
                    ],
                }
            )
        self.sections.append(
            {
                "id": "memory",
                "title": "Device memory",
                "paragraphs": paragraphs + largest,
                "charts": charts,
                "tables": tables,
            }
        )

    def _largest_batch_lines(self) -> list[str]:
        """The largest-batch rows (benchmarks/largest_batch.cpp): the batch the model says fits,
        the batch that trained and its peak, and the ones that did not fit."""
        rows = analysis.select(self.summary, {"variant": "largest_batch"})
        lines = []
        for _, r in rows.iterrows():
            text = f"{_short_benchmark(r['name'])}: the model puts the largest batch at "
            text += fmt_size(r.get("batch_largest", math.nan))
            free, peak = r.get("device_bytes_free", math.nan), r.get("device_bytes_peak", math.nan)
            if pd.notna(free):
                text += f" in {fmt_bytes(free)} of free device memory"
            text += f"; it trained at batch {fmt_size(r['batch'])}"
            if pd.notna(peak):
                text += f" with a measured peak of {fmt_bytes(peak)}"
                if pd.notna(free) and free > 0:
                    text += f" ({fmt_pct(peak / free)} of the free memory)"
            if pd.notna(r.get("t_step", math.nan)):
                text += f", {fmt_time(r['t_step'])} per step"
            lines.append(text + f" ({r['measured_on']}).")
        problems = self.table.problems
        if not problems.empty:
            skipped = problems[problems["name"].str.startswith("memory/")]
            lines += [f"{p['name']} did not run: {p['reason']}." for _, p in skipped.iterrows()]
        return lines

    # --- allocation -----------------------------------------------------------------------------

    def allocation_section(self) -> None:
        """What a cudaMalloc, cudaFree or pinned allocation costs the host per call, against the
        warm pool of cudaMallocAsync (what a caching allocator saves)."""
        costs = analysis.allocation_costs(self.table.rows)
        if costs.empty:
            return
        costs = costs.assign(
            call=costs["probe"].map(lambda p: ALLOCATION_PROBES.get(p, p)),
            few_samples=costs["repetitions"] < analysis.FEW_REPETITIONS,
        )
        # The declared order of the calls; a probe the report does not know yet goes last.
        order = {probe: position for position, probe in enumerate(ALLOCATION_PROBES)}
        costs["order"] = costs["probe"].map(order).fillna(len(order))
        costs = costs.sort_values(["machine", "order", "bytes"])
        thin = costs.loc[costs["few_samples"].astype(bool)]
        probes = self.summary["name"].str.extract(analysis.ALLOC_NAME)
        for machine, probe, size in zip(thin["machine"], thin["probe"], thin["bytes"]):
            at = (probes["probe"] == probe) & (pd.to_numeric(probes["bytes"]) == size)
            at &= self.summary["machine"] == machine
            self._note_rows_thin(self.summary.loc[at, "name"], "gpu")
        paragraphs = []
        for machine, rows in costs.groupby("machine", sort=False):
            ends = []
            for call, c in rows.groupby("call", sort=False):
                first, last = c.iloc[0], c.iloc[-1]
                ends.append(f"{call} {_alloc_cost(first)}"
                            + (f", {_alloc_cost(last)}" if len(c) > 1 else ""))  # fmt: skip
            where = self.labels[int(machine)]["gpu_where"]
            paragraphs.append(
                f"Host time per call, median over repetitions ({where}): " + "; ".join(ends) + "."
            )
        savings = analysis.pool_savings(costs)
        if not savings.empty:
            text = ", ".join(
                f"{fmt_ratio(r['saving'])} at {fmt_bytes(r['bytes'])}"
                for _, r in savings.iterrows()
            )
            paragraphs.append(
                "A warm pool's allocate-and-free (cudaMallocAsync + cudaFreeAsync) against "
                f"cudaMalloc + cudaFree, (cudaMalloc + cudaFree) / pool: {text}. Above 1x a "
                "caching allocator saves that factor per buffer a step allocates."
            )
        tails = costs.dropna(subset=["slowest_decile_s"])
        if not tails.empty:
            tail_ratio = tails["slowest_decile_s"] / tails["time_s"]
            tail = tails.loc[tail_ratio.idxmax()]
            paragraphs.append(
                f"The slowest decile is at most {fmt_ratio(tail_ratio.max())} "
                f"the median ({tail['call']} at {fmt_bytes(tail['bytes'])}: "
                f"{fmt_time(tail['slowest_decile_s'])} against {fmt_time(tail['time_s'])})."
            )
        chart = Chart(
            kind="lines",
            stem="allocation",
            title="What an allocation costs the host, per call",
            subtitle=self.subtitle(),
            x="bytes",
            y="time_s",
            series="call",
            y_low="time_s",
            y_high="slowest_decile_s",
            band_label="median to slowest decile",
            flag="few_samples",
            flag_label="hollow marker: fewer than 3 repetitions",
            log_x=True,
            log_y=True,
            x_unit="bytes",
            y_unit="s",
            x_label="bytes per allocation",
            y_label="host time per call",
        )
        table_rows = [
            [r["call"], fmt_bytes(r["bytes"]), fmt_time(r["time_s"])
             + (FEW_MARK if r["few_samples"] else ""),
             fmt_time(r["slowest_decile_s"]) if pd.notna(r["slowest_decile_s"]) else "—",
             str(int(r["repetitions"]))]  # fmt: skip
            for _, r in costs.iterrows()
        ]
        self.sections.append(
            {
                "id": "allocation",
                "title": "What allocation costs",
                "paragraphs": paragraphs,
                "charts": [self.chart(chart, costs, "The band runs up to the slowest decile.")],
                "tables": [
                    {
                        "caption": "Host time per call",
                        "headers": ["call", "bytes", "median", "slowest decile", "repetitions"],
                        "rows": table_rows,
                    }
                ],
            }
        )

    # --- what did not run ---------------------------------------------------------------------

    def problems_section(self) -> None:
        problems = self.table.problems
        if problems.empty:
            return
        details = [
            {
                "summary": f"{len(group)} {status} in {self.file_names[str(file)]}: {reason}",
                "items": sorted(group["name"]),
            }
            for (file, status, reason), group in problems.groupby(["file", "status", "reason"])
        ]
        self.sections.append(
            {
                "id": "problems",
                "title": "Failed, skipped and invalid benchmarks",
                "paragraphs": [
                    f"{len(problems)} benchmarks have no measurement: a failed row reported an "
                    "error, a skipped one did not fit or is not supported on this machine, an "
                    "invalid one wrote values that cannot be a time."
                ],
                "charts": [],
                "tables": [],
                "details": details,
            }
        )

    def energy_section(self, energy: EnergyTopic = ENERGY) -> None:
        """Joules per unit of work on each side of the energy topic's pairs, where a GPU row
        has energy; the CPU side's energy where recorded, else why not."""
        s = self.summary
        if energy.gpu_counter not in s or not s[energy.gpu_counter].notna().any():
            return

        def joules(rows: pd.DataFrame, counter: str) -> pd.Series:
            if counter not in rows:
                return pd.Series(math.nan, index=rows.index)
            per = (
                num(rows, energy.per).where(num(rows, energy.per) > 0, 1.0)
                if energy.per in rows
                else 1.0
            )
            return num(rows, counter) / per

        table_rows, compared = [], 0
        for topic in (t for t in TOPICS if t.id in energy.topics):
            gpu = analysis.select(s, topic.gpu)
            gpu = gpu[gpu[energy.gpu_counter].notna()]
            if gpu.empty:
                continue
            keys = ["machine", *topic.keys]
            gpu = _fastest(gpu, keys, topic.time_col).assign(
                _j=lambda r: joules(r, energy.gpu_counter)
            )
            cpu = analysis.select(s, topic.cpu)
            cpu = _fastest(cpu, keys, topic.time_col) if len(cpu) else cpu
            cpu = (
                cpu.assign(_j=joules(cpu, energy.cpu_counter))[keys + ["_j"]] if len(cpu) else None
            )
            pairs = (
                gpu if cpu is None else gpu.merge(cpu, on=keys, how="left", suffixes=("", "_cpu"))
            )
            for _, r in pairs.sort_values(keys).iterrows():
                cpu_j = r.get("_j_cpu", math.nan)
                has_cpu = pd.notna(cpu_j)
                compared += bool(has_cpu)
                size = ", ".join(f"{k} {_key_text(r[k])}" for k in topic.keys if pd.notna(r.get(k)))
                table_rows.append(
                    [
                        topic.title,
                        size,
                        str(r.get("variant") or "—"),
                        f"{r['_j']:.3g} J",
                        f"{cpu_j:.3g} J" if has_cpu else "not recorded",
                        fmt_ratio(cpu_j / r["_j"]) if has_cpu and r["_j"] > 0 else "—",
                    ]
                )
        if not table_rows:
            return
        cpu_said = (
            f"CPU energy: {self._cpu_energy_absent(energy)}."
            if not compared
            else f"CPU energy compared at {compared} of {len(table_rows)} sizes."
        )
        self.sections.append(
            {
                "id": energy.id,
                "title": energy.title,
                "paragraphs": [
                    f"Joules per {energy.unit_name}: the GPU's energy counter (NVML) over each "
                    f"repetition's timed loop, per {energy.unit_name}, at the fastest GPU path of "
                    f"each size (as in the speedups). {cpu_said}"
                ],
                "charts": [],
                "tables": [
                    {
                        "caption": f"Energy per {energy.unit_name} (median over repetitions)",
                        "headers": ["workload", "size", "GPU path", f"GPU J/{energy.unit_name}",
                                    f"CPU J/{energy.unit_name}", "CPU / GPU energy"],  # fmt: skip
                        "rows": table_rows,
                    }
                ],
            }
        )

    def _cpu_energy_absent(self, energy: EnergyTopic) -> str:
        """Why no CPU row has energy, in the CPU runs' own words where their context says."""
        reasons = {
            str(m["context"].get(energy.cpu_absent_context))
            for _, m in self.table.machines.iterrows()
            if isinstance(m["context"], dict) and m["context"].get(energy.cpu_absent_context)
        }
        said = sorted(
            r.removeprefix("unavailable: ") for r in reasons if r.startswith("unavailable")
        )
        return f"not recorded ({'; '.join(said)})" if said else energy.cpu_absent

    # --- the hardware ---------------------------------------------------------------------

    def appendix(self) -> dict[str, Any]:
        columns: list[tuple[str, dict[str, Any]]] = []
        names = self.file_names
        for _, m in self.table.machines.iterrows():
            files = ", ".join(names[f] for f in m["files"])
            columns.append((f"{short_cpu_name(m['cpu'])} ({files})", m["context"]))
            if m["gpu_reference"]:
                gpu_files = ", ".join(names[f] for f in m["gpu_files"])
                columns.append(
                    (
                        f"{short_gpu_name(m['gpu'] or '')} ({REFERENCE_RUN}: {gpu_files})",
                        m["gpu_context"],
                    )
                )
        rows = []
        for name, key, unit in CONTEXT_NAMES:
            values = [_context_text(ctx.get(key), unit) for _, ctx in columns]
            if any(values):
                rows.append([name] + [v or "—" for v in values])
        raw = [
            {
                "summary": f"All context keys: {header}",
                "text": json.dumps(ctx, indent=1, sort_keys=True),
            }
            for header, ctx in columns
        ]
        return {"headers": [""] + [h for h, _ in columns], "rows": rows, "raw": raw}


def _alloc_cost(row: pd.Series) -> str:
    tail = row["slowest_decile_s"]
    decile = f", slowest decile {fmt_time(tail)}" if pd.notna(tail) else ""
    return f"{fmt_time(row['time_s'])} at {fmt_bytes(row['bytes'])}{decile}"


def _cell(value: Any) -> str:
    return fmt_size(value) if isinstance(value, float) else str(value)


# A context value in its unit, as a person reads it (85017493504 bytes: "79.2 GiB").
_UNIT_FORMATS = {
    "bytes": fmt_bytes,
    "bytes/s": fmt_rate,
    "flop/s": fmt_flops,
    "Hz": lambda hz: f"{hz / 1e9:.3g} GHz" if hz >= 1e8 else f"{hz / 1e6:.3g} MHz",
}


def _context_text(value: Any, unit: str = "") -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    text = str(value)
    try:
        number = float(text)
    except ValueError:
        return text
    if unit in _UNIT_FORMATS and math.isfinite(number) and number > 0:
        return _UNIT_FORMATS[unit](number)
    return f"{number:.4g}" if abs(number) >= 1e5 else text


def distinct_names(paths: list[str]) -> dict[str, str]:
    """Each path by its shortest distinct tail: the file name where that tells the files apart,
    else as many parent folders as it takes (two runs' `bench.json` as `a/bench.json` and
    `b/bench.json`)."""
    parts = {p: Path(p).parts or (p,) for p in dict.fromkeys(paths)}
    names: dict[str, str] = {}
    for path, own in parts.items():
        for depth in range(1, len(own) + 1):
            tail = own[-depth:]
            if all(other[-depth:] != tail for o, other in parts.items() if o != path):
                break
        names[path] = str(Path(*tail))
    return names


def _key_text(value: object) -> str:
    """A size key's value for a sentence: a number as fmt_size writes it, a value that is not one
    as the name has it (hidden 4096x2: a width and a depth)."""
    try:
        return fmt_size(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


def _operation_kind(column: str, kinds: tuple[tuple[str, str], ...]) -> str:
    """`t_op:<layer>.<operation>` -> its kind by the profile's declared rules (StepProfile.kinds),
    else its layer: the profile's operations grouped by what they do."""
    operation = column.split(":", 1)[1]
    return next(
        (kind for pattern, kind in kinds if re.search(pattern, operation)),
        operation.partition(".")[0],
    )


def _short_benchmark(name: str) -> str:
    """A benchmark name without the suffixes every row of its kind shares."""
    return name.replace("/manual_time", "").replace("/readback:1", "")


def _path_name(name: str) -> str:
    """A GPU training row's path and variant: "eager readback:0 input:pinned"."""
    parts = name.split("/")
    keep = [parts[2]] + [p for p in parts[3:] if p.startswith(("readback:", "input:"))]
    return " ".join(keep)


def _band_name(band: pd.Series) -> str:
    return f"{band['dtype']} {band['host']}, {band['band']}"


def bias_sentence(bias: analysis.ModelBias) -> str:
    """Where the model under- or over-predicts, from its per-band signed error."""
    # The sentence tells the fp32 pinned-memory GEMMs (the speedup curve's); the table has all.
    before = bias.before[(bias.before["dtype"] == "fp32") & (bias.before["host"] == "pinned")]
    after_rows = bias.after[(bias.after["dtype"] == "fp32") & (bias.after["host"] == "pinned")]
    if before.empty:
        before, after_rows = bias.before, bias.after
    words = [
        f"{b['band']}: {b['direction']}-predicts by {fmt_pct(abs(b['median']))} "
        f"(from {b['low']:+.0%} to {b['high']:+.0%})"
        for _, b in before.iterrows()
    ]
    text = "Signed model error of the fp32 pinned GEMMs, per size band: " + "; ".join(words) + "."
    if bias.library_cost_s:
        after = "; ".join(f"{b['band']}: {b['median']:+.0%}" for _, b in after_rows.iterrows())
        text += (
            f" The model under-predicts most where the work is least: the likely missing term "
            f"is a fixed cost per GEMM call beyond the launch ({fmt_time(bias.library_cost_s)}, "
            f"the median kernel-only time less flop / peak at the smallest sizes). Added once "
            f"per call, the median error becomes {after}."
        )
    return text


def _bias_table(bias: analysis.ModelBias) -> dict[str, Any]:
    keys = ["dtype", "host", "band"]
    merged = bias.before.merge(bias.after, on=keys, how="left", suffixes=("", "_after"))
    rows = [
        [_band_name(b), str(int(b["rows"])), f"{b['median']:+.0%}",
         f"{b['low']:+.0%} to {b['high']:+.0%}",
         f"{b['median_after']:+.0%}" if pd.notna(b.get("median_after")) else "—",
         f"{b['low_after']:+.0%} to {b['high_after']:+.0%}"
         if pd.notna(b.get("low_after")) else "—"]  # fmt: skip
        for _, b in merged.iterrows()
    ]
    return {
        "caption": "Signed error of the model, before and after the per-call library term",
        "headers": ["GEMMs", "count", "median error", "range", "median after", "range after"],
        "rows": rows,
    }


def _reference_files(machine: pd.Series) -> str:
    return ", ".join(Path(f).name for f in machine["gpu_files"])


def _reference_date(machine: pd.Series) -> str:
    return machine["gpu_date"] or "on an unknown date"


def _reference_where(machine: pd.Series) -> str:
    return "on this host" if machine["gpu_same_host"] else "on another machine"


def reference_warning(table: Table) -> list[str]:
    """Said first on the terminal: that every GPU number of the report is another run's, or
    that it has none and how to borrow the committed run's."""
    machine = table.machines.iloc[0]
    if not machine["gpu_reference"]:
        return no_gpu_suggestion(table)
    return [
        f"GPU numbers come from the reference run {_reference_files(machine)} "
        f"({machine['gpu']}, recorded {_reference_date(machine)} {_reference_where(machine)})"
    ]


def _made_by_hand(table: Table) -> list[str]:
    """Test data says so in its context (`generated_by`); the report says it first."""
    said = []
    for _, m in table.machines.iterrows():
        for ctx in (m["context"], m["gpu_context"]):
            note = ctx.get("generated_by")
            if note and f"Not a measurement: {note}" not in said:
                said.append(f"Not a measurement: {note}")
    return said


def _counts(table: Table) -> str:
    """How many benchmarks were measured, and how many did not run or gave no measurement."""
    measured = table.rows[["machine", "name", "label"]].drop_duplicates()
    text = f"{len(measured)} benchmarks measured"
    for status, n in table.problems["status"].value_counts().sort_index().items():
        text += f", {n} {status}"
    return text


def _thin_text(builder: _Builder) -> str:
    """Whose medians have too few repetitions (which run, which side, which files), and what
    can be done about it: this run's rows can be rerun; the reference run's cannot, from here."""
    said = []
    machine = builder.table.machines.iloc[0]
    for where in (THIS_RUN, REFERENCE_RUN):
        mine = sorted(t for t in builder.thin if t[0] == where)
        if not mine:
            continue
        sides = " and ".join(sorted({side.upper() for _, side, _ in mine}))
        files = ", ".join(sorted({builder.file_names.get(f, Path(f).name) for *_, f in mine}))
        if where == THIS_RUN:
            said.append(
                f"this run's {sides} rows ({files}): rerun bench with "
                f"--benchmark_repetitions=5 before acting on them"
            )
        elif machine["gpu_same_host"]:
            said.append(
                f"the reference run's {sides} rows ({files}), recorded on this host: rerun its "
                f"GPU sweep with --benchmark_repetitions=5 before acting on them"
            )
        else:
            said.append(
                f"the reference run's {sides} rows ({files}): another machine's single "
                f"recording, which cannot be rerun from here; read those speedups as indicative"
            )
    return "Thin here: " + "; ".join(said) + "." if said else ""


def conditions_text(table: Table, summary: pd.DataFrame) -> str:
    """The report's first line on the measurement conditions: the run was disturbed (how many
    repetitions, by what, by how much, and what the numbers are made of), or "conditions
    unknown" once for files without condition counters; "" for a quiet run."""
    rows = table.rows
    if rows.empty or "conditions" not in rows:
        return ""
    counters = [
        {
            k: r[k]
            for k in ("disturbed", "disturbed_by", *CONDITION_FIGURES)
            if k in r and pd.notna(r[k])
        }
        for _, r in rows.iterrows()
    ]
    said = []
    line = describe_conditions(counters)
    if line is not None:
        marked = int((summary["conditions"] == DISTURBED).sum()) if len(summary) else 0
        cleaned = int((summary["disturbed_left_out"] > 0).sum()) if len(summary) else 0
        said.append(
            f"Measured while disturbed: {line}. {HEADLINE_RULE[0].upper()}{HEADLINE_RULE[1:]} "
            f"({DISTURBED_MARK}): {cleaned} benchmark(s) from undisturbed repetitions only, "
            f"{marked} marked {DISTURBED_MARK}. Stop what else runs and measure again, or start "
            "bench with --wait-idle=SECONDS."
        )
    unknown = sorted(set(rows.loc[rows["conditions"] == UNKNOWN, "file"]))
    if unknown:
        what = f"{len(unknown)} file(s)" if len(unknown) > 1 else "the file"
        said.append(unknown_conditions_note(f"the repetitions of {what}").capitalize() + ".")
    return " ".join(said)


def _speedup_definition(answer: list[dict[str, Any]]) -> str:
    """What each side of the answer's speedups is, once per kind of compared time."""
    shown = {a["anchor"] for a in answer}
    definitions = dict.fromkeys(
        f"{t.cpu_time_name} / {t.gpu_time_name}" for t in TOPICS if t.id in shown
    )
    return "Speedup = " + "; ".join(definitions) + " (above 1x the GPU is faster)"


def no_gpu_suggestion(table: Table) -> list[str]:
    """A report without any GPU row: the one line that gets the committed GPU side."""
    if len(table.rows) and (table.rows["backend"] == "gpu").any():
        return []
    inputs = " ".join(str(f) for m in table.machines.itertuples() for f in m.files)
    reference = " ".join(committed_gpu_reference())
    return [
        f"no GPU rows: to set this CPU against the committed H100 run, rerun as "
        f"gpubench-report {inputs} --gpu-reference {reference}"
    ]


def build_document(table: Table, out: Path) -> dict[str, Any]:
    """Every chart written into `out`, and the document (plain data) for the templates."""
    builder = _Builder(table, out)
    for topic in TOPICS:
        builder.topic(topic)
    builder.breakdown_section()
    builder.profile_sections()
    builder.model_section()
    builder.threads_section()
    builder.peers_section()
    builder.memory_section()
    builder.allocation_section()
    builder.energy_section()
    builder.problems_section()
    # An answer row links to its section only where there is one: a workload with rows on one
    # side only has none.
    sections = {s["id"] for s in builder.sections}
    for row in builder.answer:
        row["link"] = row["anchor"] if row["anchor"] in sections else None
    machine = table.machines.iloc[0]
    reference = ""
    if machine["gpu_reference"]:
        commit = machine["gpu_commit"]
        files = ", ".join(builder.file_names[f] for f in machine["gpu_files"])
        reference = (
            f"The GPU side is the reference run of {builder.labels[0]['gpu']} "
            f"({files}, recorded {_reference_date(machine)}"
            + (f" at commit {commit[:12]}" if commit else "")
            + f", {_reference_where(machine)}): not measured by this run."
        )
    files = list(dict.fromkeys(table.rows["file"])) if len(table.rows) else []
    return {
        "title": "gpubench report",
        "headline": "; ".join(n["pair"] for n in builder.labels.values()),
        "inputs": f"Inputs: {', '.join(sorted(builder.file_names[f] for f in files))}; "
        f"{_counts(table)}.",
        "reference": reference,
        "suggestion": "; ".join(no_gpu_suggestion(table)),
        # A run that did not finish is said first, before the answer it limits.
        "cut_off": table.cut_off,
        "warnings": _made_by_hand(table) + [w for w in table.warnings if w not in table.cut_off],
        "answer": builder.answer,
        "few_samples": builder.few_samples,
        "thin": _thin_text(builder),
        "speedup_definition": _speedup_definition(builder.answer),
        "marks": {"few": FEW_MARK, "noisy": NOISY_MARK, "disturbed": DISTURBED_MARK},
        "conditions": conditions_text(table, builder.summary),
        "sections": builder.sections,
        "appendix": builder.appendix(),
    }
