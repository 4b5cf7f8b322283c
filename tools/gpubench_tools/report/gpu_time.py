"""Where the GPU time goes: the four parts of each GPU time by topic, a training step operation
by operation, and the model of the fixed costs with its error.

Each section selects its rows (analysis, the topics' declarations) before it says them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..overhead_model import OverheadModel, build_model
from ..units import fmt_size
from . import analysis
from .context import Context
from .topics import MODEL_ERROR_SAID, TRAINING_WORKLOADS, PartsChart, StepProfile
from .words import named, path_name, say, section, short_benchmark, table_of


def breakdown_section(ctx: Context) -> dict[str, Any] | None:
    """A chart and a table per topic that declares its parts, with sentences where by size."""
    parts = ctx.breakdown
    if parts.empty:
        return None
    charts, paragraphs, tables = [], [], []
    for view in (t.parts for t in ctx.topics if t.parts is not None):
        if view.size is not None:
            rows = _size_rows(view, parts)
            if rows is None:
                continue
            paragraphs += _largest_parts(view, rows)
            size, bar = str(view.size), named("chart_names")["size"]
            bars = rows[size].map(lambda v: bar.format(key=size, value=fmt_size(v)))
            rows = rows.assign(size=bars, pair=ctx.pairs(rows))
            charts.append(_parts_chart(ctx, view, view.title, "size", view.size_label, rows))
            tables.append(table_of("parts_table", rows, size, size))
        else:
            shown = _path_rows(view, parts)
            if shown is None:
                continue
            rows, title = shown
            # One bar per path: a net measured at several sizes shows its first.
            rows = rows.assign(pair=ctx.pairs(rows)).drop_duplicates(["pair", "path"])
            charts.append(_parts_chart(ctx, view, title, "path", "", rows))
            tables.append(table_of("parts_table", rows, "path"))
    return section("breakdown", paragraphs, charts, tables, notes=say("breakdown_note"))


def _size_rows(view: PartsChart, parts: pd.DataFrame) -> pd.DataFrame | None:
    """The view's rows at the sizes it shows, smallest first; None without any."""
    size = str(view.size)
    rows = analysis.select(parts, view.rows)
    if view.sizes:
        rows = rows[rows[size].isin(view.sizes)] if size in rows else rows[:0]
    return None if rows.empty else rows.sort_values(size)


def _path_rows(view: PartsChart, parts: pd.DataFrame) -> tuple[pd.DataFrame, str] | None:
    """The view's rows with their GPU path and variant (`path`), and the chart's title; None
    without any."""
    rows, title = analysis.select(parts, view.rows), view.title
    if rows.empty and view.any_training_title is not None:
        rows = parts[parts["workload"].isin(TRAINING_WORKLOADS)].head(12)
        title = view.any_training_title
    if rows.empty:
        return None
    precision = rows["precision"].where(rows["precision"] != "fp32", "")
    path = rows["name"].map(path_name) + " " + precision.fillna("")
    return rows.assign(path=path.str.strip()), title


def _largest_parts(view: PartsChart, rows: pd.DataFrame) -> list[str]:
    """Which part is the largest over which range of sizes, and which half of the compute."""
    size = str(view.size)
    larger = rows["work_at_peak"] > rows["under_utilisation"]
    compute = rows.assign(dominant=np.where(larger, "work_at_peak", "under_utilisation"))
    ranges = [analysis.dominant_by_range(r, size) for r in (rows, compute)]
    return say("largest_parts", view.lead, size, *ranges)


def _parts_chart(
    ctx: Context, view: PartsChart, title: str, x: str, x_label: str, rows: pd.DataFrame
) -> dict[str, str]:
    """The four parts as shares of each bar, one panel per machine where there are several.
    A row without a flop count or a peak stacks its compute time unsplit, so that no bar
    leaves part of its time out of its 100%."""
    rows = rows.assign(unsplit=rows["compute"].where(rows["parts"] == 3))
    labels = named("part_labels")
    parts = [(p, labels[p]) for p in analysis.PARTS]
    if rows["unsplit"].notna().any():
        parts.append(("unsplit", labels["compute"]))
    facet = "pair" if ctx.several else None
    return ctx.chart("parts", rows, view=view, title=title, x=x, x_label=x_label,
                     parts=tuple(parts), facet=facet)  # fmt: skip


# --- a training step, operation by operation ------------------------------------------------


def operation_kind(column: str, kinds: tuple[tuple[str, str], ...]) -> str:
    """`t_op:<layer>.<operation>` -> its kind by the profile's declared rules (StepProfile.kinds),
    else its layer: the profile's operations grouped by what they do."""
    operation = column.split(":", 1)[1]
    return next(
        (kind for pattern, kind in kinds if re.search(pattern, operation)),
        operation.partition(".")[0],
    )


def step_parts(summary: pd.DataFrame, profile: StepProfile) -> tuple[float, pd.DataFrame] | None:
    """The profiled batch (the one nearest `profile.batch_near`) and per profiled row at it: its
    `t_op:` counters summed by kind (a column per kind), its `path`, `name` and `machine`; None
    without any."""
    columns = [c for c in summary.columns if c.startswith("t_op:")]
    rows = analysis.select(summary, profile.rows).dropna(subset=columns[:1])
    if not columns or rows.empty:
        return None
    batch = min(rows["batch"].unique(), key=lambda b: abs(math.log(b / profile.batch_near)))
    rows = rows[rows["batch"] == batch]
    kinds: dict[str, list[str]] = {}
    for column in columns:
        kinds.setdefault(operation_kind(column, profile.kinds), []).append(column)
    return batch, rows[["name", "machine"]].assign(
        **{kind: rows[cols].sum(axis=1, min_count=1) for kind, cols in kinds.items()},
        path=rows["name"].map(lambda n: short_benchmark(n).split("/", 1)[1]),
    )


def profile_sections(ctx: Context) -> list[dict[str, Any]]:
    """The step profile of every topic that declares one: where one step goes, by kind."""
    sections = []
    for profile in (t.profile for t in ctx.topics if t.profile is not None):
        profiled = step_parts(ctx.summary, profile)
        if profiled is None:
            continue
        batch, parts = profiled
        kinds = [c for c in parts.columns if c not in ("name", "machine", "path")]
        chart = ctx.chart("profile", parts, profile=profile, batch=fmt_size(batch),
                          title=profile.chart_title, parts=tuple((k, k) for k in kinds))  # fmt: skip
        sections.append(section(profile.id, charts=[chart], title=profile.title))
    return sections


# --- the model of the fixed costs -------------------------------------------------------------


@dataclass(frozen=True)
class FixedCosts:
    """The model of the GPU's fixed costs (overhead_model) built from the probes, the copy
    probes that measured a bandwidth (`few`: flagged, by size), and the model's error against
    the end-to-end GEMMs."""

    model: OverheadModel
    copies: pd.DataFrame
    bias: analysis.ModelBias


def fixed_costs(summary: pd.DataFrame) -> FixedCosts | None:
    """The fixed costs of the summary's GPU rows; None without a probe to build a model from."""
    gpu = summary[summary["backend"] == "gpu"]
    if gpu.empty:
        return None
    model = build_model(gpu)
    if model.empty:
        return None
    copies = analysis.select(gpu, {"probe": ("h2d", "d2h")}).dropna(subset=["bytes_per_s"])
    if len(copies):
        copies = copies.assign(few=analysis.flagged(copies)).sort_values("bytes")
    return FixedCosts(model, copies, analysis.model_bias(summary, model))


def model_section(ctx: Context, fixed: FixedCosts | None) -> dict[str, Any] | None:
    """The fixed GPU costs the probes measured, the copies' bandwidth, and the model's error."""
    if fixed is None:
        return None
    copies = sorted(fixed.model.copies.items())
    tables = [table_of("costs_table", fixed.model.launch.items(), copies)]
    charts = []
    if len(fixed.copies) and not ctx.several:
        probes, hosts = fixed.copies["probe"].str.upper(), fixed.copies["host"].fillna("")
        copy = named("chart_names")["copy"]
        names = [copy.format(probe=p, host=h) for p, h in zip(probes, hosts)]
        charts.append(ctx.chart("copies", fixed.copies.assign(copy=names)))
    bias = fixed.bias
    paragraphs = bias_sentence(bias) if len(bias.before) else []
    keys = ["dtype", "host", "band"]
    bands = bias.before.merge(bias.after, on=keys, how="left", suffixes=("", "_after"))
    tables += [table_of("bias_table", bands)] if len(bias.before) else []
    return section("model", paragraphs, charts, tables, notes=say("model_note"))


def bias_sentence(bias: analysis.ModelBias) -> list[str]:
    """Where the model under- or over-predicts, from its per-band signed error: of the GEMMs
    topics.MODEL_ERROR_SAID names where the run has them (the table has all)."""
    before, after = (analysis.select(b, MODEL_ERROR_SAID) for b in (bias.before, bias.after))
    if before.empty:
        before, after = bias.before, bias.after
    return say("bias", MODEL_ERROR_SAID, before, after, bias.library_cost_s)
