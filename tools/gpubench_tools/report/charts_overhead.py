"""Overhead-model charts: copy cost fits, launch and sync costs, model against measurement."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .charts_common import (
    ChartFile,
    Line2D,
    log2_size_axis,
    log_bytes_axis,
    log_time_axis,
    machines_note,
    new_figure,
    plt,
    save,
    source_style,
)
from ..dataset import Source
from .matmul_analysis import size_of
from ..overhead_model import OverheadModel
from ..units import fmt_pct, fmt_rate, fmt_time

__all__ = ["chart_copies", "chart_launch", "chart_model"]

COPY_COLORS = {
    ("h2d", "pinned"): "#1f5fa8",
    ("h2d", "pageable"): "#7fb2e5",
    ("d2h", "pinned"): "#c4480e",
    ("d2h", "pageable"): "#f4a261",
}


def chart_copies(sources: list[Source], models: list[OverheadModel], out: Path) -> ChartFile | None:
    fits = [(si, f) for si, m in enumerate(models) for f in m.copies.values()]
    if not fits:
        return None
    fig, (ax_t, ax_bw) = new_figure(1, 2, w=5.6, h=4.6)
    handles = []
    for si, f in fits:
        color = COPY_COLORS.get((f.direction, f.host), "0.3")
        style = source_style(si)
        x = np.array(f.nbytes)
        t = np.array(f.times)
        err = [t - np.array(f.times_lo), np.array(f.times_hi) - t]
        ax_t.errorbar(x, t, yerr=err, fmt=style["marker"], ms=3.5, color=color, lw=0.8)
        grid = np.geomspace(x.min(), x.max(), 200)
        ax_t.plot(grid, f.predict(grid), color=color, ls=style["linestyle"], lw=1.3)
        ax_bw.plot(x, x / t / 1e9, style["marker"], ms=3.5, color=color)
        ax_bw.plot(grid, grid / f.predict(grid) / 1e9, color=color, ls=style["linestyle"], lw=1.3)
        who = f"{sources[si].label}: " if len(sources) > 1 else ""
        handles.append(
            Line2D(
                [],
                [],
                color=color,
                ls=style["linestyle"],
                marker=style["marker"],
                ms=4,
                label=f"{who}{f.direction} {f.host}: alpha={fmt_time(f.alpha_s)}, beta={fmt_rate(f.beta_bytes_per_s)}",
            )
        )
    log_bytes_axis(ax_t)
    log_time_axis(ax_t, label="time per copy (CUDA events)")
    ax_t.set_title("copy time: points measured, lines alpha + bytes / beta")
    log_bytes_axis(ax_bw)
    ax_bw.set_yscale("log")
    ax_bw.set_ylabel("effective bandwidth (GB/s)")
    ax_bw.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _p: f"{v:g}"))
    ax_bw.set_title("effective bandwidth = bytes / time")
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncol=2 if len(handles) > 1 else 1,
        frameon=False,
    )
    return save(
        fig,
        out,
        "overhead_copies",
        "Host <-> device copies: fixed cost alpha and bandwidth beta"
        + machines_note(sources, gpu_only=True),
    )


def chart_launch(sources: list[Source], models: list[OverheadModel], out: Path) -> ChartFile | None:
    per_source = [(si, m.launch.items()) for si, m in enumerate(models) if m.launch.items()]
    if not per_source:
        return None
    names: list[str] = []
    for _, items in per_source:
        names += [n for n, _ in items if n not in names]
    fig, (ax,) = new_figure(w=7.6, h=0.5 + 0.42 * len(names) * max(1, len(per_source)) ** 0.5 + 0.8)
    height = 0.8 / len(per_source)
    palette = plt.get_cmap("tab10").colors
    for j, (si, items) in enumerate(per_source):
        values = dict(items)
        ys = np.arange(len(names)) + (j - (len(per_source) - 1) / 2) * height
        vals = [values.get(n, np.nan) * 1e6 for n in names]
        bars = ax.barh(
            ys, vals, height=height * 0.95, color=palette[j % 10], label=sources[si].label
        )
        for bar, v in zip(bars, vals):
            if np.isfinite(v):
                ax.text(
                    bar.get_width(),
                    bar.get_y() + bar.get_height() / 2,
                    f" {fmt_time(v * 1e-6)}",
                    va="center",
                    fontsize=7.5,
                )
    ax.set_yticks(np.arange(len(names)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    ax.set_xlabel("cost (microseconds)")
    ax.grid(axis="y", visible=False)
    ax.set_xlim(0, ax.get_xlim()[1] * 1.15)
    if len(per_source) > 1:
        ax.legend(loc="lower right")
    return save(
        fig,
        out,
        "overhead_launch",
        "Fixed costs of launching and synchronising (launch probes)"
        + machines_note(sources, gpu_only=True),
    )


def chart_model(sources: list[Source], models: list[OverheadModel], out: Path) -> ChartFile | None:
    usable = [(s, m) for s, m in zip(sources, models) if m.errors()]
    if not usable:
        return None
    fig, axes = new_figure(2, len(usable), w=5.4, h=2.9, sharex="col")
    palette = {"pinned": "#1f5fa8", "pageable": "#c4480e"}
    dtype_style = {"fp32": "-", "bf16": "--", "fp16": "-.", "tf32": ":"}
    for col, (src, model) in enumerate(usable):
        ax_t, ax_e = axes[col], axes[len(usable) + col]
        groups: dict[tuple[str, str], list] = {}
        for p in src.matmul_e2e():
            if p.shape == "square":
                groups.setdefault((p.dtype, p.labels.get("host", "?")), []).append(p)
        handles = []
        for (dtype, host), pts in sorted(groups.items()):
            pts.sort(key=size_of)
            pred = [model.predict(p) for p in pts]
            keep = [(p, t) for p, t in zip(pts, pred) if t is not None]
            if not keep:
                continue
            ns = [size_of(p) for p, _ in keep]
            meas = [p.c("t_wall", p.time) for p, _ in keep]
            mod = [t.total for _, t in keep]
            color = palette.get(host, "0.3")
            ls = dtype_style.get(dtype, "-")
            ax_t.plot(ns, meas, "o", ms=3.5, color=color)
            ax_t.plot(ns, mod, ls=ls, color=color, lw=1.3)
            ax_e.plot(
                ns,
                [100 * (m - x) / x for m, x in zip(mod, meas)],
                ls=ls,
                marker="o",
                ms=3,
                color=color,
            )
            handles.append(Line2D([], [], color=color, ls=ls, lw=1.5, label=f"{dtype} {host}"))
        handles.append(
            Line2D([], [], color="0.3", marker="o", ls="", ms=4, label="measured t_wall")
        )
        handles.append(Line2D([], [], color="0.3", lw=1.3, label="model (line)"))
        errs = [abs(e) for e in model.errors()]
        ax_t.set_title(f"{src.label}: median |error| {fmt_pct(float(np.median(errs)))}")
        log_time_axis(ax_t, label="end-to-end time per GEMM")
        ax_t.legend(handles=handles, loc="upper left", fontsize=7.5)
        ax_e.axhline(0, color="black", lw=0.8)
        ax_e.set_ylabel("model error (%)")
        log2_size_axis(ax_e)
    return save(
        fig,
        out,
        "overhead_model",
        "Overhead model T = T_h2d + flop/(u peak) + T_d2h + kernels t_launch + t_sync vs measured"
        + machines_note(sources, gpu_only=True),
    )
