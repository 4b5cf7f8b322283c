"""Where the GPU time goes: the four parts of each GPU time by topic, a training step operation
by operation, and the model of the fixed costs with its error.

Each section selects its rows (the topics' declarations) and computes its numbers before it
says them, and asks for its charts (`Drawing`); `gpu_time` is the step build runs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..overhead_model import OverheadModel, build_model, gemm_rows, gpu_peak
from ..units import fmt_size
from .analysis import ID, PARTS
from .context import Context, Drawing
from .topics import COPY_PROBES, MODEL_ERROR_SAID, TRAINING_WORKLOADS, PartsChart, StepProfile
from .words import named, path_name, say, section, short_benchmark, table_of

# Size bands for the model's error: below 256 a GEMM is all fixed costs (launch, copy latency,
# library call), from 1024 it is bandwidth and FLOP bound; between, both matter.
SIZE_BANDS = (256.0, 1024.0)
# Kernel-only GEMMs up to this size do next to no work (n = 64: 0.5 MFLOP, < 10 ns at an H100's
# fp32 peak), so their time is the cuBLAS call's fixed cost.
LIBRARY_COST_MAX_SIZE = 64.0


def gpu_time(ctx: Context) -> list[dict[str, Any]]:
    """The breakdown, the step profiles and the model, in that order (those that have rows)."""
    sections = [breakdown_section(ctx), *profile_sections(ctx)]
    sections.append(model_section(ctx, fixed_costs(ctx)))
    return [s for s in sections if s is not None]


def breakdown_section(ctx: Context) -> dict[str, Any] | None:
    """A chart and a table per topic that declares its parts, with sentences where by size."""
    if ctx.breakdown.empty:
        return None
    charts, paragraphs, tables = [], [], []
    for view in (t.parts for t in ctx.topics if t.parts is not None):
        shown = _bars(ctx, view)
        if shown is None:
            continue
        rows, title = shown
        paragraphs += [] if view.size is None else _largest_parts(view, rows)
        # A row without a flop count or a peak stacks its compute time unsplit, so that no bar
        # leaves part of its time out of its 100%.
        rows = rows.assign(unsplit=rows["compute"].where(rows["parts"] == 3))
        parts = [(p, named("part_labels", p)) for p in PARTS]
        unsplit = rows["unsplit"].notna().any()
        parts += [("unsplit", named("part_labels", "compute"))] if unsplit else []
        facet = "pair" if ctx.several else None  # a panel per machine
        given = dict(view=view, title=title, parts=tuple(parts), facet=facet)
        charts.append(Drawing("parts", rows, given))
        tables.append(table_of("parts_table", parts=rows, size=view.size))
    return section("breakdown", paragraphs, charts, tables, notes=say("breakdown_note"))


def _bars(ctx: Context, view: PartsChart) -> tuple[pd.DataFrame, str] | None:
    """The view's rows, a bar each, with their machine (`pair`) and the bar's name (`bar`: its
    size, smallest first, or its GPU path and variant), and the chart's title; None without
    any."""
    rows, title, size = ctx.select(view.rows, parts=True), view.title, view.size
    if size is not None and view.sizes:
        rows = rows[rows[size].isin(view.sizes)] if size in rows else rows[:0]
    if rows.empty and view.any_training_title is not None:
        rows = ctx.breakdown[ctx.breakdown["workload"].isin(TRAINING_WORKLOADS)].head(12)
        title = view.any_training_title
    if rows.empty:
        return None
    if size is not None:
        bar = named("chart_names", "size")
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
    ranges = [dominant_by_range(r, size) for r in (rows, compute)]
    return say("largest_parts", lead=view.lead, size=size, ranges=ranges[0], compute=ranges[1])


# --- a training step, operation by operation ------------------------------------------------


def operation_kind(column: str, kinds: tuple[tuple[str, str], ...]) -> str:
    """`t_op:<layer>.<operation>` -> its kind by the profile's declared rules (StepProfile.kinds),
    else its layer: the profile's operations grouped by what they do."""
    operation = column.split(":", 1)[1]
    matches = (kind for pattern, kind in kinds if re.search(pattern, operation))
    return next(matches, operation.partition(".")[0])


def step_parts(ctx: Context, profile: StepProfile) -> tuple[float, pd.DataFrame] | None:
    """The profiled batch (the one nearest `profile.batch_near`) and per profiled row at it: its
    `t_op:` counters summed by kind (a column per kind), its `path`, `name` and `machine`; None
    without any."""
    columns = [c for c in ctx.summary.columns if c.startswith("t_op:")]
    rows = ctx.select(profile.rows).dropna(subset=columns[:1])
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
        profiled = step_parts(ctx, profile)
        if profiled is None:
            continue
        batch, parts = profiled
        kinds = [c for c in parts.columns if c not in ("name", "machine", "path")]
        given = dict(profile=profile, batch=fmt_size(batch), title=profile.chart_title,
                     parts=tuple((k, k) for k in kinds))  # fmt: skip
        chart = Drawing("profile", parts, given)
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
    bias: ModelBias


def fixed_costs(ctx: Context) -> FixedCosts | None:
    """The fixed costs of the summary's GPU rows; None without a probe to build a model from."""
    gpu = ctx.select({"backend": "gpu"})
    model = build_model(gpu) if len(gpu) else None
    if model is None or model.empty:
        return None
    copies = ctx.select({"backend": "gpu"}, COPY_PROBES).dropna(subset=["bytes_per_s"])
    if len(copies):
        copies = copies.assign(few=copies["_flagged"]).sort_values("bytes")
    return FixedCosts(model, copies, model_bias(ctx.summary, model))


def model_section(ctx: Context, fixed: FixedCosts | None) -> dict[str, Any] | None:
    """The fixed GPU costs the probes measured, the copies' bandwidth, and the model's error."""
    if fixed is None:
        return None
    model, copies, bias = fixed.model, fixed.copies, fixed.bias
    copy_fits = sorted(model.copies.items())
    tables = [table_of("costs_table", launch=model.launch.items(), copies=copy_fits)]
    charts, paragraphs = [], []
    if len(copies) and not ctx.several:
        copy = named("chart_names", "copy")
        probes = copies[["probe", "host"]].fillna("").values
        names = [copy.format(probe=probe.upper(), host=host) for probe, host in probes]
        charts.append(Drawing("copies", copies.assign(copy=names)))
    if len(bias.before):
        paragraphs = bias_sentence(bias)
        keys = ["dtype", "host", "band"]
        bands = bias.before.merge(bias.after, on=keys, how="left", suffixes=("", "_after"))
        tables.append(table_of("bias_table", bands=bands))
    return section("model", paragraphs, charts, tables, notes=say("model_note"))


def bias_sentence(bias: ModelBias) -> list[str]:
    """Where the model under- or over-predicts, from its per-band signed error: of the GEMMs
    topics.MODEL_ERROR_SAID names where the run has them (the table has all)."""
    said = pd.Series(MODEL_ERROR_SAID)
    before, after = (b[(b[said.index] == said).all(axis=1)] for b in (bias.before, bias.after))
    if before.empty:
        before, after = bias.before, bias.after
    cost = bias.library_cost_s
    return say("bias", said=MODEL_ERROR_SAID, before=before, after=after, library_cost=cost)


def dominant_by_range(breakdown_rows: pd.DataFrame, x: str) -> pd.DataFrame:
    """Consecutive runs of `x` (sorted) with the same dominant part: `dominant`, `x_from`,
    `x_to`, `rows` (for "transfer dominates n <= 64, work at peak from n = 1024")."""
    rows = breakdown_rows.dropna(subset=[x]).sort_values(x)
    run = (rows["dominant"] != rows["dominant"].shift()).cumsum()
    ranges = {"dominant": ("dominant", "first"), "x_from": (x, "min"), "x_to": (x, "max")}
    return rows.groupby(run).agg(**ranges, rows=(x, "size")).reset_index(drop=True)


@dataclass(frozen=True)
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
    return (rows["m"] * rows["n"] * rows["k"]) ** (1.0 / 3.0)


def _bands(rows: pd.DataFrame, error: str) -> pd.DataFrame:
    lo, hi = SIZE_BANDS
    labels = [f"n < {lo:g}", f"{lo:g} <= n < {hi:g}", f"n >= {hi:g}"]
    band = pd.cut(rows["size"], [0, lo, hi, np.inf], right=False, labels=labels)
    grouped = rows.assign(band=band).groupby(["dtype", "host", "band"], observed=True)[error]
    out = grouped.agg(median="median", low="min", high="max", rows="size").reset_index()
    under = np.where(out["median"] < 0, "under", "over")
    return out.assign(direction=under, magnitude=out["median"].abs())


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
    rows = e2e[[c for c in ID if c in e2e]].assign(
        size=_size(e2e),
        measured=e2e["t_wall"].fillna(e2e["time_s"]),
        predicted=np.asarray(pred, dtype=float),
    )
    rows = rows[rows["predicted"].notna() & (rows["measured"] > 0)]
    rows["error"] = (rows["predicted"] - rows["measured"]) / rows["measured"]

    kernel = gemm_rows(summary, e2e=False)
    kernel = kernel[_size(kernel) <= LIBRARY_COST_MAX_SIZE]
    work = kernel["flop"] / gpu_peak(kernel, kernel["dtype"])
    fixed = kernel["t_compute"].fillna(kernel["time_s"]) - work
    cost = float(fixed.median()) if fixed.notna().any() else None
    calls = e2e["kernels"].reindex(rows.index).fillna(1.0)
    rows["predicted_after"] = rows["predicted"] + calls * (cost or 0.0)
    rows["error_after"] = (rows["predicted_after"] - rows["measured"]) / rows["measured"]
    bands = (_bands(rows, "error"), _bands(rows, "error_after"))
    return ModelBias(rows.reset_index(drop=True), *bands, cost)
