"""CNN charts: time per step and images/s against batch size, and where one step's time goes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .charts_common import (
    Axes,
    ChartFile,
    Line2D,
    log2_size_axis,
    log_time_axis,
    machines_note,
    notes_below,
    new_figure,
    plt,
    save,
    source_style,
)
from .cnn_analysis import (
    LAYERS,
    OP_KINDS,
    CnnPoint,
    cnn_crossovers,
    cnn_data_set,
    cnn_lines,
    cnn_points,
    kind_shares,
    layer_shares,
    profile_batch,
    profiles_at,
)
from ..dataset import Source
from ..units import approx, fmt_time

__all__ = ["chart_cnn_steps", "chart_cnn_breakdown", "KIND_COLORS", "LAYER_COLORS"]

_LINE_COLORS = {"GPU eager": "#d62728", "GPU graph": "#9467bd", "PyTorch GPU": "#ff7f0e"}
_CPU_PALETTE = ["#1f77b4", "#17becf", "#2ca02c", "#8c564b"]
_TORCH_CPU_PALETTE = ["#7f7f7f", "#bcbd22"]
KIND_COLORS = {
    "im2col": "#4e79a7",
    "GEMM": "#59a14f",
    "bias": "#edc948",
    "pool": "#f28e2b",
    "loss": "#e15759",
    "update": "#b07aa1",
    "launch gaps": "#9c9c9c",
    "other": "#d9d9d9",
}
LAYER_COLORS = {
    "conv1": "#c6dbef",
    "conv2": "#6baed6",
    "conv3": "#2171b5",
    "fc1": "#a1d99b",
    "fc2": "#31a354",
    "loss": "#e15759",
    "update": "#b07aa1",
    "launch gaps": "#9c9c9c",
    "other": "#d9d9d9",
}
assert set(KIND_COLORS) == set(OP_KINDS) and set(LAYER_COLORS) == set(LAYERS)


def _color(name: str, seen: dict[str, str]) -> str:
    if name not in seen:
        if name in _LINE_COLORS:
            seen[name] = _LINE_COLORS[name]
        else:
            palette = _TORCH_CPU_PALETTE if name.startswith("PyTorch") else _CPU_PALETTE
            used = sum(1 for k in seen if k.startswith("PyTorch") == name.startswith("PyTorch"))
            seen[name] = palette[used % len(palette)]
    return seen[name]


def chart_cnn_steps(sources: list[Source], out: Path) -> ChartFile | None:
    """Time per SGD step and images per second against batch size, one line per path, with the
    batch where each GPU path overtakes the best CPU step marked on the time panel."""
    per_src = []
    for si, src in enumerate(sources):
        pts = cnn_points(src)
        data = cnn_data_set(pts)
        if pts:
            per_src.append((si, src, data, cnn_lines(pts, data)))
    if not per_src:
        return None
    fig, (ax_t, ax_r) = new_figure(1, 2, w=5.0, h=4.3)
    colors: dict[str, str] = {}
    notes = []
    for si, src, data, lines in per_src:
        for name, line in lines.items():
            color = _color(name, colors)
            style = source_style(si)
            if line[0].is_torch:
                style = {**style, "marker": "x"}
            xs = [m.batch for m in line]
            ax_t.plot(xs, [m.t_step for m in line], color=color, lw=1.4, ms=4, **style)
            lo_hi = [m.t_step_range for m in line]
            ax_t.fill_between(
                xs, [a for a, _ in lo_hi], [b for _, b in lo_hi], color=color, alpha=0.15, lw=0
            )
            ax_r.plot(xs, [m.images_per_s for m in line], color=color, lw=1.4, ms=4, **style)
        for c in cnn_crossovers(lines):
            who = f"{src.label}, " if len(per_src) > 1 else ""
            if c.crossover.kind == "cross" and c.crossover.x is not None:
                ax_t.axvline(c.crossover.x, color=_color(c.name, colors), lw=1.0, ls=":")
                notes.append(f"{who}{c.name}: faster from batch ~{approx(c.crossover.x)}")
            elif c.crossover.kind == "always_faster":
                notes.append(f"{who}{c.name}: faster at every batch measured")
            else:
                notes.append(f"{who}{c.name}: slower at every batch measured")
    log2_size_axis(ax_t, label="batch size (images per SGD step)")
    log_time_axis(ax_t, label="t_step (time per SGD step; band = min..max)")
    ax_t.set_title("time per training step")
    log2_size_axis(ax_r, label="batch size (images per SGD step)")
    ax_r.set_yscale("log")
    ax_r.yaxis.set_major_formatter(
        plt.FuncFormatter(lambda v, _p: f"{v / 1e3:g}k" if v >= 1e3 else f"{v:g}")
    )
    ax_r.set_ylabel("images per second")
    ax_r.set_title("training throughput")
    if notes:
        # Under the time panel, where the dotted crossover lines are.
        notes_below(ax_t, "GPU against the best CPU step", notes)
    handles = [Line2D([], [], color=c, lw=2, label=n) for n, c in colors.items()]
    if len(per_src) > 1:
        handles += [
            Line2D([], [], color="0.2", label=src.label, **source_style(si))
            for si, src, _, _ in per_src
        ]
    fig.legend(
        handles=handles, loc="outside lower center", ncol=min(4, len(handles)), frameon=False
    )
    datas = sorted({data for _, _, data, _ in per_src})
    return save(
        fig,
        out,
        "cnn_step_time",
        f"CNN training (CIFAR-10 tutorial network, data={', '.join(datas)}): time per step and "
        f"images/s against batch size" + machines_note(sources),
    )


def _bar_rows(sources: list[Source]) -> tuple[list[tuple[str, CnnPoint]], list[int]]:
    rows: list[tuple[str, CnnPoint]] = []
    batches = []
    for src in sources:
        pts = cnn_points(src)
        data = cnn_data_set(pts)
        batch = profile_batch(pts, data)
        if batch is None:
            continue
        batches.append(batch)
        for m in profiles_at(pts, data, batch):
            side = src.gpu_label if m.backend == "gpu" else src.cpu_label
            who = f"{side}: " if len(sources) > 1 or src.mixes_machines else ""
            rows.append((f"{who}{m.name}", m))
    return rows, batches


def _stack(ax: Axes, rows: list[tuple[str, CnnPoint]], group: str) -> None:
    keys, colors = (OP_KINDS, KIND_COLORS) if group == "kind" else (LAYERS, LAYER_COLORS)
    shares = [kind_shares(m) if group == "kind" else layer_shares(m) for _, m in rows]
    left = np.zeros(len(rows))
    for key in keys:
        vals = np.array([100 * s.get(key, 0.0) for s in shares])
        if not vals.any():
            continue
        ax.barh(range(len(rows)), vals, left=left, color=colors[key], height=0.7, label=key)
        for y, (x0, v) in enumerate(zip(left, vals)):
            if v >= 7:  # label the parts wide enough to hold their number
                ax.text(x0 + v / 2, y, f"{v:.0f}", ha="center", va="center", fontsize=7)
        left += vals
    ax.set_xlim(0, 100)
    ax.set_yticks(range(len(rows)))
    ax.invert_yaxis()
    ax.grid(axis="y", visible=False)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=4, fontsize=7.5, frameon=False)


def chart_cnn_breakdown(sources: list[Source], out: Path) -> ChartFile | None:
    """One stacked bar per path at the profiled batch: the share of the step each kind of
    operation takes (left) and each layer (right), with the step time beside the bars."""
    rows, batches = _bar_rows(sources)
    if not rows:
        return None
    fig, (ax_k, ax_l) = new_figure(1, 2, w=5.4, h=1.9 + 0.42 * len(rows))
    _stack(ax_k, rows, "kind")
    _stack(ax_l, rows, "layer")
    ax_k.set_yticklabels([name for name, _ in rows])
    ax_l.set_yticklabels(
        [
            f"{fmt_time(m.profiled_step)} profiled"
            + (f", t_step {fmt_time(m.t_step)}" if math.isfinite(m.t_step) else "")
            for _, m in rows
        ],
        fontsize=7.5,
    )
    ax_k.set_xlabel("% of the profiled step, by kind of operation")
    ax_l.set_xlabel("% of the profiled step, by layer (pool with its conv)")
    batch = ", ".join(str(b) for b in sorted(set(batches)))
    return save(
        fig,
        out,
        "cnn_breakdown",
        f"Where one CNN training step goes (batch {batch}, per-operation profile)"
        + machines_note(sources),
    )
