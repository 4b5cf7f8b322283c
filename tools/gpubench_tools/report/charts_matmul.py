"""Matrix-multiplication charts: time, speedup with crossovers, time breakdown, utilisation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .charts_common import (
    Axes,
    Figure,
    DTYPE_COLORS,
    PHASE_COLORS,
    ChartFile,
    Line2D,
    log2_size_axis,
    log_time_axis,
    notes_below,
    machines_note,
    new_figure,
    pct_axis,
    plt,
    ratio_axis,
    save,
    slug,
    source_style,
)
from ..dataset import Source
from .matmul_analysis import (
    PHASES,
    Breakdown,
    SpeedupSeries,
    breakdowns,
    size_of,
    speedup_series,
    utilisation_series,
)
from ..overhead_model import OverheadModel
from ..units import approx, fmt_size

__all__ = [
    "chart_matmul_time",
    "chart_speedup_square",
    "chart_speedup_shapes",
    "chart_breakdown",
    "chart_utilisation",
]

_CPU_COLORS = ["#4e79a7", "#e15759", "#76b7b2", "#b07aa1"]
_PANELS = [
    ("kernel-only", "kernel only (operands already on the device)"),
    ("e2e pinned", "end to end, pinned host memory"),
    ("e2e pageable", "end to end, pageable host memory"),
]


def _source_legend(fig: Figure, sources: list[Source], loc: str = "lower right") -> list[Line2D]:
    """Proxy entries that explain the line style of each input file (only when overlaid)."""
    if len(sources) < 2:
        return []
    return [
        Line2D([], [], color="0.2", label=s.label, **source_style(i)) for i, s in enumerate(sources)
    ]


def _fig_legend(fig: Figure, handles: list, ncol: int) -> None:
    if handles:
        fig.legend(
            handles=handles, loc="outside lower center", ncol=min(ncol, len(handles)), frameon=False
        )


def chart_matmul_time(sources: list[Source], out: Path) -> ChartFile | None:
    """Time per square GEMM for every backend: the raw numbers behind every ratio."""
    fig, (ax,) = new_figure(w=7.0, h=4.6)
    drawn = False
    style_colors = {}
    palette = plt.get_cmap("tab10").colors
    handles: dict[str, Line2D] = {}
    for si, src in enumerate(sources):
        groups: dict[str, list] = {}
        for p in src.matmul_cpu():
            if p.shape == "square":
                t = int(p.c("threads", 1))
                groups.setdefault(f"CPU {p.dtype}, {t} thread{'s' if t > 1 else ''}", []).append(p)
        for p in src.matmul_kernel() + src.matmul_e2e():
            if p.shape == "square" and p.dtype == "fp32":
                name = "GPU kernel fp32" if p.is_kernel_only else f"GPU e2e {p.labels['host']} fp32"
                groups.setdefault(name, []).append(p)
        for name in sorted(groups, key=lambda n: (n.startswith("GPU"), n)):
            pts = sorted(groups[name], key=size_of)
            color = style_colors.setdefault(name, palette[len(style_colors) % len(palette)])
            xs = [size_of(p) for p in pts]
            ax.plot(xs, [p.time for p in pts], color=color, ms=3.5, lw=1.3, **source_style(si))
            ax.fill_between(
                xs,
                [p.time_min for p in pts],
                [p.time_max for p in pts],
                color=color,
                alpha=0.2,
                lw=0,
            )
            handles.setdefault(name, Line2D([], [], color=color, lw=2, label=name))
            drawn = True
    if not drawn:
        plt.close(fig)
        return None
    log2_size_axis(ax)
    log_time_axis(ax, label="time per GEMM (median; band = min..max)")
    ax.legend(
        handles=list(handles.values()) + _source_legend(fig, sources), loc="upper left", ncol=1
    )
    return save(
        fig,
        out,
        "matmul_time",
        "Time per matrix multiplication (square, n x n x n)" + machines_note(sources),
    )


def _draw_speedup_panel(
    ax: Axes, series: list[tuple[int, SpeedupSeries]], xaxis: str, multi: bool
) -> list[str]:
    notes = []
    for si, s in series:
        color = DTYPE_COLORS.get(s.dtype, "0.3")
        ax.plot(s.xs, s.speedup, color=color, ms=3.5, lw=1.4, **source_style(si))
        ax.fill_between(s.xs, s.lo, s.hi, color=color, alpha=0.2, lw=0)
        c = s.crossover
        who = f"{s.source.label} " if multi else ""
        if c.kind == "cross" and c.x is not None:
            ax.plot([c.x], [1.0], marker="|", ms=16, mew=2.2, color=color)
            notes.append(f"{who}{s.dtype}: {xaxis} ~ {approx(c.x)}")
        elif c.kind == "always_faster":
            notes.append(f"{who}{s.dtype}: GPU ahead from {xaxis}={fmt_size(s.xs[0])}")
        elif c.kind == "slower_at_largest":
            notes.append(f"{who}{s.dtype}: CPU ahead up to {xaxis}={fmt_size(s.xs[-1])}")
    ax.axhline(1.0, color="black", lw=1.0, ls="--", zorder=1)
    ax.text(
        0.01,
        1.0,
        " CPU = GPU",
        transform=ax.get_yaxis_transform(),
        va="bottom",
        ha="left",
        fontsize=7.5,
    )
    if notes:
        notes_below(ax, "crossover (speedup = 1)", notes)
    return notes


def chart_speedup_square(sources: list[Source], out: Path) -> ChartFile | None:
    all_series = [(si, s) for si, src in enumerate(sources) for s in speedup_series(src)]
    if not all_series:
        return None
    panels = [(v, t) for v, t in _PANELS if any(s.variant == v for _, s in all_series)]
    # The crossover notes sit under the panels: grow the figure so the plots keep their height.
    lines = max(sum(1 for _, s in all_series if s.variant == v) for v, _ in panels)
    fig, axes = new_figure(1, len(panels), w=4.6, h=4.4 + 0.15 * lines, sharey=True)
    dtypes: list[str] = []
    for ax, (variant, title) in zip(axes, panels):
        series = [(si, s) for si, s in all_series if s.variant == variant]
        _draw_speedup_panel(ax, series, "n", len(sources) > 1)
        for _, s in series:
            if s.dtype not in dtypes:
                dtypes.append(s.dtype)
        ax.set_title(title)
        log2_size_axis(ax)
    ratio_axis(axes[0], "speedup = CPU time / GPU time")
    for ax in axes[1:]:
        ax.set_ylabel("")
    handles = [Line2D([], [], color=DTYPE_COLORS.get(d, "0.3"), lw=2, label=d) for d in dtypes]
    handles += _source_legend(fig, sources)
    _fig_legend(fig, handles, 8)
    return save(
        fig,
        out,
        "speedup_square",
        "GPU speedup over the fastest CPU run (square GEMM; above 1 the GPU wins; | = crossover)"
        + machines_note(sources),
    )


_SHAPE_FAMILIES = {"mlp_layer": "MLP layers", "deepbench": "DeepBench"}


def chart_speedup_shapes(sources: list[Source], out: Path) -> ChartFile | None:
    """Non-square families (MLP layers, DeepBench) have no single size, and different shapes
    can share a flop count: one x slot per shape (grouped by family, ordered by work), named
    m x n x k under the axis, with one marker per precision and file side by side."""
    rows = []
    for si, src in enumerate(sources):
        for shape in _SHAPE_FAMILIES:
            rows += [(si, shape, s) for s in speedup_series(src, shape)]
    if not rows:
        return None
    families = [f for f in _SHAPE_FAMILIES if any(sh == f for _, sh, _ in rows)]
    panels = [(v, t) for v, t in _PANELS if any(s.variant == v for _, _, s in rows)]
    slots: list[list[tuple[int, int, tuple[int, int, int]]]] = []
    for variant, _ in panels:
        keys = {
            (families.index(shape), math.prod(g.mnk), g.mnk)
            for _, shape, s in rows
            if s.variant == variant
            for g in s.gpu
        }
        slots.append(sorted(keys))
    dtypes = sorted(
        {s.dtype for _, _, s in rows},
        key=lambda d: list(DTYPE_COLORS).index(d) if d in DTYPE_COLORS else 9,
    )
    combos = sorted({(si, s.dtype) for si, _, s in rows}, key=lambda c: (c[0], dtypes.index(c[1])))
    step = min(0.22, 0.7 / max(1, len(combos)))
    dodge = {c: (i - (len(combos) - 1) / 2) * step for i, c in enumerate(combos)}
    fig, axes = new_figure(
        1,
        len(panels),
        w=max(3.2, 0.45 * max(len(k) for k in slots) + 1.0),
        h=4.4,
        sharey=True,
        gridspec_kw={"width_ratios": [max(1, len(k)) for k in slots]},
    )
    for ax, (variant, title), keys in zip(axes, panels, slots):
        index = {(fam, mnk): i for i, (fam, _, mnk) in enumerate(keys)}
        for si, shape, s in rows:
            if s.variant != variant:
                continue
            color = DTYPE_COLORS.get(s.dtype, "0.3")
            fam = families.index(shape)
            xs = [index[(fam, g.mnk)] + dodge[(si, s.dtype)] for g in s.gpu]
            err = np.array([np.array(s.speedup) - s.lo, np.array(s.hi) - s.speedup])
            ax.errorbar(
                xs,
                s.speedup,
                yerr=err,
                fmt=str(source_style(si)["marker"]),
                ms=5,
                color=color,
                ecolor=color,
                elinewidth=0.8,
                lw=0,
                zorder=3,
            )
        ax.axhline(1.0, color="black", lw=1.0, ls="--", zorder=1)
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels(
            [f"{m}x{n}x{k}" for _, _, (m, n, k) in keys],
            rotation=35,
            ha="right",
            rotation_mode="anchor",
            fontsize=7.5,
        )
        ax.set_xlim(-0.6, len(keys) - 0.4)
        ax.grid(axis="x", visible=False)
        # Family names over their slots, with a divider where one family ends.
        for fam_i, fam in enumerate(families):
            where = [i for i, (f, _, _) in enumerate(keys) if f == fam_i]
            if not where:
                continue
            if where[0] > 0:
                ax.axvline(where[0] - 0.5, color="0.6", lw=0.8)
            ax.text(
                (where[0] + where[-1]) / 2,
                1.0,
                _SHAPE_FAMILIES[fam],
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="bottom",
                fontsize=7.5,
                color="0.35",
            )
        ax.set_title(title, pad=14)
        ax.set_xlabel("GEMM shape m x n x k (ordered by work, 2mnk flop)")
    ratio_axis(axes[0], "speedup = CPU time / GPU time")
    for ax in axes[1:]:
        ax.set_ylabel("")
    handles = [
        Line2D([], [], color=DTYPE_COLORS.get(d, "0.3"), marker="o", ls="", label=d) for d in dtypes
    ]
    handles += _source_legend(fig, sources)
    _fig_legend(fig, handles, 6)
    return save(
        fig,
        out,
        "speedup_shapes",
        "GPU speedup for MLP-layer and DeepBench GEMM shapes" + machines_note(sources),
    )


def chart_breakdown(src: Source, model: OverheadModel | None, out: Path) -> ChartFile | None:
    """Where the end-to-end time goes: phases stacked (absolute) and as shares of the total."""
    items = breakdowns(src)
    if not items:
        return None
    fig, axes = new_figure(len(items), 2, w=5.2, h=3.1)
    for row, b in enumerate(items):
        ax_abs, ax_share = axes[2 * row], axes[2 * row + 1]
        _draw_breakdown_abs(ax_abs, b, model)
        _draw_breakdown_share(ax_share, b)
        ax_abs.set_title(f"{b.dtype}, {b.host} host memory: time of each phase")
        ax_share.set_title(f"{b.dtype}, {b.host}: share of each phase")
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=PHASE_COLORS[k], label=f"{k} ({desc})")
        for k, desc in PHASES
    ]
    handles.append(Line2D([], [], color="black", lw=1.4, label="measured t_wall (total)"))
    if model is not None and not model.empty:
        handles.append(Line2D([], [], color="black", lw=1.2, ls="--", label="overhead model"))
    _fig_legend(fig, handles, 3)
    return save(
        fig,
        out,
        f"breakdown_{slug(src.label)}",
        f"Where the end-to-end GPU time goes - {src.label}",
    )


def _draw_breakdown_abs(ax: Axes, b: Breakdown, model: OverheadModel | None) -> None:
    """Each phase as its own line. Stacked areas on a log axis would exaggerate whichever phase
    sits at the bottom, so the stacking is left to the share panel, which is linear."""
    ns = np.array(b.ns)
    for key, _ in PHASES:
        vals = np.array(b.phases[key])
        vals = np.where(vals > 0, vals, np.nan)  # a zero phase has no place on a log axis
        ax.plot(ns, vals, color=PHASE_COLORS[key], lw=1.5, marker="o", ms=3)
    ax.plot(ns, b.total, color="black", lw=1.4)
    lo = [p.spread[0] * t for p, t in zip(b.points, b.total)]
    hi = [p.spread[1] * t for p, t in zip(b.points, b.total)]
    ax.fill_between(ns, lo, hi, color="black", alpha=0.12, lw=0)
    if model is not None:
        pred = [model.predict(p) for p in b.points]
        if all(t is not None for t in pred):
            ax.plot(ns, [t.total for t in pred], color="black", lw=1.2, ls="--")
    log2_size_axis(ax)
    log_time_axis(ax, label="time per iteration")


def _draw_breakdown_share(ax: Axes, b: Breakdown) -> None:
    idx = np.arange(len(b.ns))
    bottom = np.zeros(len(b.ns))
    for key, _ in PHASES:
        shares = np.array([b.shares(i)[key] * 100 for i in range(len(b.ns))])
        ax.bar(idx, shares, bottom=bottom, color=PHASE_COLORS[key], width=0.8)
        bottom += shares
    ax.set_xticks(idx)
    ax.set_xticklabels(
        [fmt_size(n) for n in b.ns], rotation=45 if len(b.ns) > 8 else 0, fontsize=7.5
    )
    ax.set_xlabel("matrix size n")
    ax.set_ylabel("% of iteration time")
    ax.set_ylim(0, 100)
    ax.grid(axis="x", visible=False)


def chart_utilisation(sources: list[Source], out: Path) -> ChartFile | None:
    series = [(si, s) for si, src in enumerate(sources) for s in utilisation_series(src)]
    if not series:
        return None
    backends = [b for b in ("cpu", "gpu") if any(s.backend == b for _, s in series)]
    fig, axes = new_figure(
        1, len(backends), w=5.0 if len(backends) > 1 else 6.4, h=4.3, sharey=True
    )
    colors: dict[str, object] = {}
    for ax, backend in zip(axes, backends):
        handles = []
        for si, s in series:
            if s.backend != backend:
                continue
            if s.name not in colors:
                dt = next((d for d in DTYPE_COLORS if f"kernel {d}" in s.name), None)
                if dt:
                    colors[s.name] = DTYPE_COLORS[dt]
                elif "e2e" in s.name:
                    colors[s.name] = "#8c564b" if "pinned" in s.name else "#9467bd"
                else:
                    colors[s.name] = _CPU_COLORS[
                        len([n for n in colors if n.startswith("CPU")]) % 4
                    ]
            color = colors[s.name]
            ax.plot(s.xs, s.pct, color=color, ms=3.5, lw=1.3, **source_style(si))
            ax.fill_between(s.xs, s.lo, s.hi, color=color, alpha=0.2, lw=0)
            if s.name not in [h.get_label() for h in handles]:
                handles.append(Line2D([], [], color=color, lw=2, label=s.name))
        log2_size_axis(ax)
        ax.set_title("CPU (OpenBLAS)" if backend == "cpu" else "GPU (cuBLAS)")
        ax.legend(handles=handles + _source_legend(fig, sources), loc="lower right", fontsize=7.5)
    pct_axis(axes[0], "% of theoretical peak (for that precision)")
    for ax in axes[1:]:
        ax.set_ylabel("")
        ax.yaxis.set_tick_params(labelleft=True)
    return save(
        fig,
        out,
        "utilisation",
        "Utilisation: achieved FLOP/s as % of peak (square GEMM)" + machines_note(sources),
    )
