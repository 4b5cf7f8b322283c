"""Tiny-MLP charts: time per epoch against batch, GPU/CPU speedup grid, Iris bars, readback."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .charts_common import (
    ChartFile,
    Line2D,
    log2_size_axis,
    log_time_axis,
    machines_note,
    new_figure,
    plt,
    save,
    slug,
    source_style,
)
from ..dataset import Source
from .mlp_analysis import (
    MlpPoint,
    iris_bars,
    mlp_points,
    readback_table,
    speedup_grid,
    sweep_choice,
    sweep_lines,
)
from ..units import fmt_ratio, fmt_time

__all__ = ["chart_epoch_time", "chart_heatmap", "chart_iris", "chart_readback", "kernels_text"]

_NAME_COLORS = {
    "GPU eager": "#d62728",
    "GPU graph": "#9467bd",
    "GPU fused": "#2ca02c",
}
_CPU_PALETTE = ["#1f77b4", "#17becf", "#7f7f7f", "#bcbd22", "#8c564b"]
_READBACK_TEXT = {0: "never", 1: "every step"}


def _color(name: str, seen: dict[str, str]) -> str:
    if name not in seen:
        if name in _NAME_COLORS:
            seen[name] = _NAME_COLORS[name]
        else:
            n_cpu = sum(1 for k in seen if k not in _NAME_COLORS)
            seen[name] = _CPU_PALETTE[n_cpu % len(_CPU_PALETTE)]
    return seen[name]


def readback_text(r: int) -> str:
    return _READBACK_TEXT.get(r, f"every {r} steps")


def kernels_text(m: MlpPoint) -> str:
    """Launches per step, readable when the whole loop is one kernel (fewer than 1 per step)."""
    k = m.kernels
    if k is None:
        return ""
    if 0 < k < 1:
        return f"1 launch per {round(1 / k)} steps"
    return f"{k:.0f} launch{'es' if round(k) != 1 else ''}/step"


def chart_epoch_time(sources: list[Source], out: Path) -> ChartFile | None:
    all_pts = [(si, mlp_points(s)) for si, s in enumerate(sources)]
    merged = [m for _, pts in all_pts for m in pts]
    if not merged:
        return None
    data, readback, hiddens = sweep_choice(merged)
    if not hiddens:
        return None
    fig, axes = new_figure(1, len(hiddens), w=4.6, h=4.2, sharey=True)
    colors: dict[str, str] = {}
    for ax, hidden in zip(axes, hiddens):
        for si, pts in all_pts:
            for name, line in sweep_lines(pts, data, hidden, readback).items():
                color = _color(name, colors)
                xs = [m.batch for m in line]
                ax.plot(
                    xs, [m.t_epoch for m in line], color=color, lw=1.4, ms=3.5, **source_style(si)
                )
                lo_hi = [m.t_epoch_range for m in line]
                ax.fill_between(
                    xs, [a for a, _ in lo_hi], [b for _, b in lo_hi], color=color, alpha=0.15, lw=0
                )
        ax.set_title(f"hidden = {hidden}")
        log2_size_axis(ax, label="batch size")
    log_time_axis(axes[0], label="t_epoch (time per epoch)")
    handles = [Line2D([], [], color=c, lw=2, label=n) for n, c in colors.items()]
    if len(sources) > 1:
        handles += [
            Line2D([], [], color="0.2", label=s.label, **source_style(i))
            for i, s in enumerate(sources)
        ]
    fig.legend(
        handles=handles, loc="outside lower center", ncol=min(6, len(handles)), frameon=False
    )
    return save(
        fig,
        out,
        "mlp_epoch_time",
        f"MLP training: time per epoch against batch size (data={data}, GPU loss readback "
        f"{readback_text(readback or 0)})" + machines_note(sources),
    )


def chart_heatmap(src: Source, out: Path) -> ChartFile | None:
    pts = mlp_points(src)
    variants = [
        v
        for v in ("eager", "graph", "fused")
        if any(m.variant == v and m.data == "synthetic" for m in pts)
    ]
    grids = []
    for v in variants:
        batches, hiddens, grid = speedup_grid(pts, v)
        if any(math.isfinite(x) for row in grid for x in row):
            grids.append((v, batches, hiddens, np.array(grid, dtype=float)))
    if not grids:
        return None
    finite = np.concatenate([g[np.isfinite(g)] for _, _, _, g in grids])
    span = max(1.0, float(np.max(np.abs(np.log10(finite)))))
    fig, axes = new_figure(1, len(grids), w=4.3, h=3.6)
    im = None
    cmap = plt.get_cmap("RdBu").with_extremes(bad="0.9")  # grey: not measured
    for ax, (variant, batches, hiddens, grid) in zip(axes, grids):
        im = ax.imshow(
            np.log10(grid), cmap=cmap, vmin=-span, vmax=span, origin="lower", aspect="auto"
        )
        for (i, j), v in np.ndenumerate(grid):
            text = fmt_ratio(v) if math.isfinite(v) else "-"
            dark = math.isfinite(v) and abs(math.log10(v)) > 0.6 * span
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize=7.5,
                color="white" if dark else "black",
            )
        ax.set_xticks(range(len(batches)))
        ax.set_xticklabels([str(b) for b in batches])
        ax.set_yticks(range(len(hiddens)))
        ax.set_yticklabels([str(h) for h in hiddens])
        ax.set_xlabel("batch size")
        ax.set_ylabel("hidden width")
        ax.set_title(f"GPU {variant} vs best CPU")
        ax.grid(False)
    cbar = fig.colorbar(im, ax=axes, shrink=0.85, pad=0.01, aspect=25)
    ticks = [t for t in range(-int(span), int(span) + 1)]
    cbar.set_ticks(ticks)
    cbar.set_ticklabels([f"{10.0**t:g}x" for t in ticks])
    cbar.set_label("speedup = CPU time / GPU time (blue: GPU faster)")
    return save(
        fig,
        out,
        f"mlp_heatmap_{slug(src.label)}",
        f"MLP training speedup over batch x hidden (synthetic data) - {src.label}"
        + (f" against {src.cpu_label}" if src.mixes_machines else ""),
    )


def chart_iris(sources: list[Source], out: Path) -> ChartFile | None:
    per_src = [(si, iris_bars(mlp_points(s))) for si, s in enumerate(sources)]
    per_src = [(si, bars) for si, bars in per_src if bars]
    if not per_src:
        return None
    rows = [(si, m) for si, bars in per_src for m in bars]
    fig, (ax,) = new_figure(w=7.6, h=0.9 + 0.38 * len(rows))
    labels = []
    for y, (si, m) in enumerate(rows):
        color = "#d62728" if m.backend == "gpu" else "#1f77b4"
        ax.barh(y, m.t_epoch * 1e6, color=color, height=0.7)
        lo, hi = m.t_epoch_range
        ax.errorbar(
            m.t_epoch * 1e6,
            y,
            xerr=[[(m.t_epoch - lo) * 1e6], [(hi - m.t_epoch) * 1e6]],
            color="black",
            lw=0.8,
        )
        extra = [fmt_time(m.t_epoch)]
        if m.backend == "gpu" and kernels_text(m):
            extra.append(kernels_text(m))
        if m.readback != 0 and m.backend == "gpu":  # the CPU always has the loss on the host
            extra.append(f"loss read {readback_text(m.readback)}")
        ax.text(hi * 1e6, y, "  " + ", ".join(extra), va="center", fontsize=7.5)
        who = f"{sources[si].label}: " if len(per_src) > 1 else ""
        labels.append(f"{who}{m.name}")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    batches = sorted({m.batch for _, m in rows})
    batch_text = f"batch of {batches[0]} rows" if len(batches) == 1 else "per epoch"
    ax.set_xlabel(f"t_epoch (microseconds per epoch, {batch_text})")
    ax.set_xlim(0, ax.get_xlim()[1] * 1.45)
    ax.grid(axis="y", visible=False)
    ax.legend(
        handles=[
            plt.Rectangle((0, 0), 1, 1, color="#1f77b4", label="CPU"),
            plt.Rectangle((0, 0), 1, 1, color="#d62728", label="GPU"),
        ],
        loc="lower right",
    )
    return save(
        fig,
        out,
        "mlp_iris",
        "Iris (4-10-3 MLP, full batch): time per epoch by path" + machines_note(sources),
    )


def chart_readback(sources: list[Source], out: Path) -> ChartFile | None:
    tables = [(si, *readback_table(mlp_points(s))) for si, s in enumerate(sources)]
    tables = [(si, data, t) for si, data, t in tables if t]
    if not tables:
        return None
    fig, axes = new_figure(
        1, len(tables), w=max(6.5, 1.3 * max(len(t) for _, _, t in tables) + 2), h=4.0
    )
    legend: dict[str, object] = {}
    for ax, (si, data, table) in zip(axes, tables):
        readbacks = sorted(
            {r for v in table.values() for r in v}, key=lambda r: (r != 0, -r if r else 0)
        )
        width = 0.8 / len(readbacks)
        cmap = plt.get_cmap("Greys")
        for j, r in enumerate(readbacks):
            xs = np.arange(len(table)) + (j - (len(readbacks) - 1) / 2) * width
            vals = [v[r].t_epoch * 1e6 if r in v else np.nan for v in table.values()]
            ax.bar(
                xs,
                vals,
                width=width * 0.95,
                color=cmap(0.35 + 0.5 * j / max(1, len(readbacks) - 1)),
                label=f"loss readback {readback_text(r)}",
            )
        ax.set_xticks(range(len(table)))
        ax.set_xticklabels(list(table), rotation=20, ha="right", rotation_mode="anchor")
        ax.set_ylabel("t_epoch (microseconds)")
        who = f"{sources[si].label}, " if len(sources) > 1 else ""
        ax.set_title(f"{who}data={data}")
        ax.grid(axis="x", visible=False)
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    # One legend under the panels: inside, it would cover the tallest bar.
    fig.legend(
        list(legend.values()),
        list(legend),
        loc="outside lower center",
        ncol=len(legend),
        frameon=False,
    )
    return save(
        fig,
        out,
        "mlp_readback",
        "Cost of reading the loss back to the host (one sync per readback)"
        + machines_note(sources),
    )
