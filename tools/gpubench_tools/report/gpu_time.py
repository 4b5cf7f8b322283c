"""Where the GPU time goes: the four parts of each GPU time by topic, a training step operation
by operation, and the model of the fixed costs with its error.

Each section selects its rows (the topics' declarations) and computes its numbers as a frozen
record, which `pages` words with the charts it asks for; `gpu_time` is the step build runs.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
import numpy as np
import pandas as pd

from ..overhead_model import OverheadModel, build_model, gemm_rows, gpu_peak
from .analysis import ID, path_name, short_benchmark
from .context import Context
from .topics import COPY_PROBES, MODEL_ERROR_SAID, TRAINING_WORKLOADS, PartsChart, StepProfile

# Size bands for the model's error: below 256 a GEMM is all fixed costs (launch, copy latency,
# library call), from 1024 it is bandwidth and FLOP bound; between, both matter.
SIZE_BANDS = (256.0, 1024.0)
# Kernel-only GEMMs up to this size do next to no work (n = 64: 0.5 MFLOP, < 10 ns at an H100's
# fp32 peak), so their time is the cuBLAS call's fixed cost.
LIBRARY_COST_MAX_SIZE = 64.0


def gpu_time(ctx: Context) -> list[Breakdown | Profile | FixedCosts]:
    """The breakdown, the step profiles and the model, in that order (those that have rows)."""
    sections = [breakdown_section(ctx), *profile_sections(ctx), fixed_costs(ctx)]
    return [s for s in sections if s is not None]


@dataclass(frozen=True)
class PartsView:
    """A topic's parts chart and table: its bars (`rows`, smallest size first, or by GPU path:
    `bar`), the chart's `title`, the ranges of sizes where each part and each half of the compute
    is the largest (by size only: dominant_by_range), and whether a bar stacks its compute time
    unsplit (a row without a flop count or a peak: `unsplit`, so that no bar leaves part of its
    time out of its 100%)."""

    view: PartsChart
    rows: pd.DataFrame
    title: str
    ranges: tuple[pd.DataFrame, pd.DataFrame] | None
    unsplit: bool


@dataclass(frozen=True)
class Breakdown:
    """The four parts of the GPU time, a view per topic that declares them and has rows."""

    views: list[PartsView]


def breakdown_section(ctx: Context) -> Breakdown | None:
    """A chart and a table per topic that declares its parts, with sentences where by size."""
    if ctx.breakdown.empty:
        return None
    views = []
    for view in (t.parts for t in ctx.topics if t.parts is not None):
        shown = _bars(ctx, view)
        if shown is None:
            continue
        rows, title = shown
        ranges = None if view.size is None else _largest_parts(view, rows)
        rows = rows.assign(unsplit=rows["compute"].where(rows["parts"] == 3))
        views.append(PartsView(view, rows, title, ranges, bool(rows["unsplit"].notna().any())))
    return Breakdown(views)


def _bars(ctx: Context, view: PartsChart) -> tuple[pd.DataFrame, str] | None:
    """The view's rows, a bar each (by size, smallest first, or with its GPU path and variant:
    `bar`), and the chart's title; None without any."""
    rows, title, size = ctx.select(view.rows, parts=True), view.title, view.size
    if size is not None and view.sizes:
        rows = rows[rows[size].isin(view.sizes)] if size in rows else rows[:0]
    if rows.empty and view.any_training_title is not None:
        rows = ctx.breakdown[ctx.breakdown["workload"].isin(TRAINING_WORKLOADS)].head(12)
        title = view.any_training_title
    if rows.empty:
        return None
    if size is not None:
        return rows.sort_values(size), title
    precision = rows["precision"].where(rows["precision"] != "fp32", "")
    path = (rows["name"].map(path_name) + " " + precision.fillna("")).str.strip()
    # One bar per path: a net measured at several sizes shows its first.
    return rows.assign(bar=path).drop_duplicates(["machine", "bar"]), title


def _largest_parts(view: PartsChart, rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Which part is the largest over which range of sizes, and which half of the compute."""
    at_roof = rows["work_at_peak"] + rows["memory_bandwidth"]
    roof = np.where(rows["memory_bandwidth"] > 0, "memory_bandwidth", "work_at_peak")
    larger = at_roof > rows["under_utilisation"]
    compute = rows.assign(dominant=np.where(larger, roof, "under_utilisation"))
    return dominant_by_range(rows, str(view.size)), dominant_by_range(compute, str(view.size))


# --- a training step, operation by operation ------------------------------------------------


def operation_kind(column: str, kinds: tuple[tuple[str, str], ...]) -> str:
    """`t_op:<layer>.<operation>` -> its kind by the profile's declared rules (StepProfile.kinds),
    else its layer: the profile's operations grouped by what they do."""
    operation = column.split(":", 1)[1]
    matches = (kind for pattern, kind in kinds if re.search(pattern, operation))
    return next(matches, operation.partition(".")[0])


@dataclass(frozen=True)
class Profile:
    """A topic's step profile at its profiled batch (the one nearest `profile.batch_near`): per
    profiled row at it, its `t_op:` counters summed by kind (`parts`: a column per kind, in
    `kinds`), its `path`, `name` and `machine`."""

    profile: StepProfile
    batch: float
    parts: pd.DataFrame
    kinds: list[str]


def profile_sections(ctx: Context) -> list[Profile]:
    """The step profile of every topic that declares one: where one step goes, by kind."""
    sections = []
    columns = [c for c in ctx.summary.columns if c.startswith("t_op:")]
    for profile in (t.profile for t in ctx.topics if t.profile is not None):
        rows = ctx.select(profile.rows).dropna(subset=columns[:1])
        if not columns or rows.empty:
            continue
        batch = min(rows["batch"].unique(), key=lambda b: abs(math.log(b / profile.batch_near)))
        rows = rows[rows["batch"] == batch]
        kinds = [operation_kind(column, profile.kinds) for column in columns]
        parts = rows[columns].T.groupby(kinds, sort=False).sum(min_count=1).T
        path = rows["name"].map(lambda n: short_benchmark(n).split("/", 1)[1])
        parts = rows[["name", "machine"]].join(parts).assign(path=path)
        sections.append(Profile(profile, batch, parts, list(dict.fromkeys(kinds))))
    return sections


# --- the model of the fixed costs -------------------------------------------------------------


@dataclass(frozen=True)
class FixedCosts:
    """The model of the GPU's fixed costs (overhead_model) built from the probes, the copy
    probes that measured a bandwidth (`few`: flagged, by size) and whether they are charted (one
    machine), and the model's error against the end-to-end GEMMs: per band before and after the
    library term (`bands`), and the bands the sentence states (`said`: of the GEMMs
    topics.MODEL_ERROR_SAID names where the run has them, else all; None without an error)."""

    model: OverheadModel
    copies: pd.DataFrame
    copies_chart: bool
    bias: ModelBias
    bands: pd.DataFrame | None
    said: tuple[pd.DataFrame, pd.DataFrame] | None


def fixed_costs(ctx: Context) -> FixedCosts | None:
    """The fixed costs of the summary's GPU rows; None without a probe to build a model from."""
    gpu = ctx.select({"backend": "gpu"})
    model = build_model(gpu) if len(gpu) else None
    if model is None or model.empty:
        return None
    copies = ctx.select({"backend": "gpu"}, COPY_PROBES).dropna(subset=["bytes_per_s"])
    copies = copies.assign(few=copies["_flagged"]).sort_values("bytes")
    bias, keys, bands = model_bias(ctx.summary, model), ["dtype", "host", "band"], None
    said = _said_bands(bias) if len(bias.before) else None
    if said is not None:
        bands = bias.before.merge(bias.after, on=keys, how="left", suffixes=("", "_after"))
    chart = bool(len(copies)) and not ctx.several
    return FixedCosts(model, copies, chart, bias, bands, said)


def _said_bands(bias: ModelBias) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The bands before and after the library term of the GEMMs topics.MODEL_ERROR_SAID names,
    where the run has them; else every band (the table has all)."""
    said = pd.Series(MODEL_ERROR_SAID)
    before, after = (b[(b[said.index] == said).all(axis=1)] for b in (bias.before, bias.after))
    return (bias.before, bias.after) if before.empty else (before, after)


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
