"""Memory charts: measured against modelled device bytes, and allocation cost against size."""

from __future__ import annotations

from pathlib import Path

from .charts_common import (
    ChartFile,
    Line2D,
    log_bytes_axis,
    log_time_axis,
    machines_note,
    new_figure,
    plt,
    ratio_axis,
    save,
    source_style,
)
from ..dataset import Source
from .memory_analysis import ALLOC_KINDS, alloc_costs, memory_rows, pool_savings

__all__ = ["chart_memory_model", "chart_alloc_cost"]

_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#7f7f7f"]
_ALLOC_COLORS = dict(
    zip(ALLOC_KINDS.values(), ["#d62728", "#ff7f0e", "#2ca02c", "#1f77b4", "#17becf"])
)


def chart_memory_model(sources: list[Source], out: Path) -> ChartFile | None:
    """One point per GPU row: modelled bytes (x) against measured peak bytes (y), coloured by
    family, with the line where the two agree."""
    per_src = [(si, src, memory_rows(src)) for si, src in enumerate(sources)]
    per_src = [(si, src, rows) for si, src, rows in per_src if rows]
    if not per_src:
        return None
    fig, (ax,) = new_figure(1, 1, w=6.4, h=4.8)
    colors: dict[str, str] = {}
    lo, hi = float("inf"), 0.0
    for si, src, rows in per_src:
        for family in sorted({r.family for r in rows}):
            color = colors.setdefault(family, _PALETTE[len(colors) % len(_PALETTE)])
            mine = [r for r in rows if r.family == family]
            ax.scatter(
                [r.modelled_bytes for r in mine],
                [r.measured_bytes for r in mine],
                color=color,
                marker=str(source_style(si)["marker"]),
                s=22,
                alpha=0.85,
            )
        lo = min(lo, *(min(r.modelled_bytes, r.measured_bytes) for r in rows))
        hi = max(hi, *(max(r.modelled_bytes, r.measured_bytes) for r in rows))
    ax.plot([lo / 2, hi * 2], [lo / 2, hi * 2], color="0.4", lw=0.9, ls="--")
    log_bytes_axis(ax, "x", "modelled bytes (device_bytes_model)")
    log_bytes_axis(ax, "y", "measured peak bytes (device_bytes_peak)")
    handles = [
        Line2D([], [], color=c, marker="o", lw=0, label=family) for family, c in colors.items()
    ]
    handles.append(Line2D([], [], color="0.4", ls="--", label="measured = modelled"))
    if len(per_src) > 1:
        handles += [
            Line2D(
                [], [], color="0.2", lw=0, marker=str(source_style(si)["marker"]), label=src.label
            )
            for si, src, _ in per_src
        ]
    fig.legend(handles=handles, loc="outside right center", frameon=False)
    return save(
        fig,
        out,
        "memory_model",
        "Device memory: measured peak against the model's count, per GPU row"
        + machines_note(sources, gpu_only=True),
    )


def chart_alloc_cost(sources: list[Source], out: Path) -> ChartFile | None:
    """Host time per allocation call against size (median solid, slowest decile dashed), and
    the pool's saving over cudaMalloc + cudaFree."""
    per_src = [(si, src, alloc_costs(src)) for si, src in enumerate(sources)]
    per_src = [(si, src, costs) for si, src, costs in per_src if costs]
    if not per_src:
        return None
    fig, (ax_t, ax_r) = new_figure(1, 2, w=5.0, h=4.2)
    handles = []
    for si, src, costs in per_src:
        marker = source_style(si)["marker"]
        for kind, points in costs.items():
            color = _ALLOC_COLORS[kind]
            xs = [a.nbytes for a in points]
            ax_t.plot(xs, [a.median_s for a in points], color=color, marker=marker, ms=3.5, lw=1.4)
            ax_t.plot(xs, [a.p90_s for a in points], color=color, lw=0.9, ls="--")
            who = f"{src.label}: " if len(per_src) > 1 else ""
            handles.append(Line2D([], [], color=color, marker=marker, label=f"{who}{kind}"))
        savings = pool_savings(costs)
        if savings:
            ax_r.plot(
                [n for n, _ in savings],
                [r for _, r in savings],
                color=_ALLOC_COLORS[ALLOC_KINDS[("alloc_async", "device")]],
                marker=marker,
                ms=3.5,
                lw=1.4,
            )
    handles.append(Line2D([], [], color="0.3", ls="--", label="slowest decile (p90)"))
    log_bytes_axis(ax_t, label="bytes per allocation")
    log_time_axis(ax_t, label="host time per call (median; dashed: slowest decile)")
    ax_t.set_title("cost of one call")
    log_bytes_axis(ax_r, label="bytes per allocation")
    ratio_axis(ax_r, "(cudaMalloc + cudaFree) / pool pair")
    ax_r.axhline(1.0, color="0.4", lw=0.9)
    ax_r.set_title("what the warm pool saves")
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    return save(
        fig,
        out,
        "alloc_cost",
        "Allocation cost against size: cudaMalloc/cudaFree, the stream-ordered pool and pinned "
        "host memory" + machines_note(sources, gpu_only=True),
    )
