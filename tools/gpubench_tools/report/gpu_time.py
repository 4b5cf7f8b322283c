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
from .topics import COPY_PROBES, MODEL_ERROR_SAID, TRAINING_WORKLOADS, PartsChart, StepProfile
from .words import named, path_name, say, section, short_benchmark, table_of


def breakdown_section(ctx: Context) -> dict[str, Any] | None:
    """A chart and a table per topic that declares its parts, with sentences where by size."""
    if ctx.breakdown.empty:
        return None
    charts, paragraphs, tables = [], [], []
    labels = named("part_labels")
    for view in (t.parts for t in ctx.topics if t.parts is not None):
        shown = _bars(ctx, view)
        if shown is None:
            continue
        rows, title = shown
        paragraphs += [] if view.size is None else _largest_parts(view, rows)
        # A row without a flop count or a peak stacks its compute time unsplit, so that no bar
        # leaves part of its time out of its 100%.
        rows = rows.assign(unsplit=rows["compute"].where(rows["parts"] == 3))
        parts = [(p, labels[p]) for p in analysis.PARTS]
        parts += [("unsplit", labels["compute"])] if rows["unsplit"].notna().any() else []
        facet = "pair" if ctx.several else None  # a panel per machine
        charts.append(ctx.chart("parts", rows, view=view, title=title, parts=tuple(parts),
                                facet=facet))  # fmt: skip
        tables.append(table_of("parts_table", rows, view.size))
    return section("breakdown", paragraphs, charts, tables, notes=say("breakdown_note"))


def _bars(ctx: Context, view: PartsChart) -> tuple[pd.DataFrame, str] | None:
    """The view's rows, a bar each, with their machine (`pair`) and the bar's name (`bar`: its
    size, smallest first, or its GPU path and variant), and the chart's title; None without
    any."""
    rows, title, size = analysis.select(ctx.breakdown, view.rows), view.title, view.size
    if size is not None and view.sizes:
        rows = rows[rows[size].isin(view.sizes)] if size in rows else rows[:0]
    if rows.empty and view.any_training_title is not None:
        rows = ctx.breakdown[ctx.breakdown["workload"].isin(TRAINING_WORKLOADS)].head(12)
        title = view.any_training_title
    if rows.empty:
        return None
    rows = rows.assign(pair=ctx.pairs(rows))
    if size is not None:
        bar = named("chart_names")["size"]
        bars = rows[size].map(lambda v: bar.format(key=size, value=fmt_size(v)))
        return rows.assign(bar=bars).sort_values(size), title
    precision = rows["precision"].where(rows["precision"] != "fp32", "")
    path = (rows["name"].map(path_name) + " " + precision.fillna("")).str.strip()
    # One bar per path: a net measured at several sizes shows its first.
    return rows.assign(bar=path).drop_duplicates(["pair", "bar"]), title


def _largest_parts(view: PartsChart, rows: pd.DataFrame) -> list[str]:
    """Which part is the largest over which range of sizes, and which half of the compute."""
    size = str(view.size)
    larger = rows["work_at_peak"] > rows["under_utilisation"]
    compute = rows.assign(dominant=np.where(larger, "work_at_peak", "under_utilisation"))
    ranges = [analysis.dominant_by_range(r, size) for r in (rows, compute)]
    return say("largest_parts", view.lead, size, *ranges)


# --- a training step, operation by operation ------------------------------------------------


def operation_kind(column: str, kinds: tuple[tuple[str, str], ...]) -> str:
    """`t_op:<layer>.<operation>` -> its kind by the profile's declared rules (StepProfile.kinds),
    else its layer: the profile's operations grouped by what they do."""
    operation = column.split(":", 1)[1]
    matches = (kind for pattern, kind in kinds if re.search(pattern, operation))
    return next(matches, operation.partition(".")[0])


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
    kinds = [operation_kind(column, profile.kinds) for column in columns]
    parts = rows[columns].T.groupby(kinds, sort=False).sum(min_count=1).T
    path = rows["name"].map(lambda n: short_benchmark(n).split("/", 1)[1])
    return batch, rows[["name", "machine"]].join(parts).assign(path=path)


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
    model = build_model(gpu) if len(gpu) else None
    if model is None or model.empty:
        return None
    copies = analysis.select(gpu, COPY_PROBES).dropna(subset=["bytes_per_s"])
    if len(copies):
        copies = copies.assign(few=analysis.flagged(copies)).sort_values("bytes")
    return FixedCosts(model, copies, analysis.model_bias(summary, model))


def model_section(ctx: Context, fixed: FixedCosts | None) -> dict[str, Any] | None:
    """The fixed GPU costs the probes measured, the copies' bandwidth, and the model's error."""
    if fixed is None:
        return None
    model, copies, bias = fixed.model, fixed.copies, fixed.bias
    tables = [table_of("costs_table", model.launch.items(), sorted(model.copies.items()))]
    charts, paragraphs = [], []
    if len(copies) and not ctx.several:
        copy = named("chart_names")["copy"]
        probes = copies[["probe", "host"]].fillna("").values
        names = [copy.format(probe=probe.upper(), host=host) for probe, host in probes]
        charts.append(ctx.chart("copies", copies.assign(copy=names)))
    if len(bias.before):
        paragraphs = bias_sentence(bias)
        keys = ["dtype", "host", "band"]
        bands = bias.before.merge(bias.after, on=keys, how="left", suffixes=("", "_after"))
        tables.append(table_of("bias_table", bands))
    return section("model", paragraphs, charts, tables, notes=say("model_note"))


def bias_sentence(bias: analysis.ModelBias) -> list[str]:
    """Where the model under- or over-predicts, from its per-band signed error: of the GEMMs
    topics.MODEL_ERROR_SAID names where the run has them (the table has all)."""
    before, after = (analysis.select(b, MODEL_ERROR_SAID) for b in (bias.before, bias.after))
    if before.empty:
        before, after = bias.before, bias.after
    return say("bias", MODEL_ERROR_SAID, before, after, bias.library_cost_s)
