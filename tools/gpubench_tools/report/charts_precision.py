"""Mixed-precision chart: bf16 and fp16 speedup over fp32 against the work of one training step."""

from __future__ import annotations

import math
from pathlib import Path

from .charts_common import (
    DTYPE_COLORS,
    ChartFile,
    Line2D,
    log_flop_axis,
    machines_note,
    new_figure,
    ratio_axis,
    save,
    source_style,
)
from ..dataset import Source
from .precision_analysis import precision_lines, precision_pairs

__all__ = ["chart_precision_speedup"]

# One line style per kind of path; colour is the precision, the marker the input machine.
_PATH_STYLES = {"GPU eager": "-", "GPU graph": "--", "PyTorch": "-.", "CPU": ":"}


def _linestyle(path: str) -> str:
    return next((s for prefix, s in _PATH_STYLES.items() if path.startswith(prefix)), "-")


def chart_precision_speedup(sources: list[Source], out: Path) -> ChartFile | None:
    """Speedup of each mixed-precision path over its own fp32 run (fp32 time / mixed time)
    against flop per SGD step, one line per path and precision; the data set of the smallest
    case of each line is written beside its first point (the Iris case sits far left).
    """
    per_src = [(si, src, precision_lines(precision_pairs(src))) for si, src in enumerate(sources)]
    per_src = [(si, src, lines) for si, src, lines in per_src if lines]
    if not per_src:
        return None
    fig, (ax,) = new_figure(1, 1, w=7.2, h=4.6)
    handles = []
    for si, src, lines in per_src:
        for line in lines:
            pts = [p for p in line.pairs if math.isfinite(p.step_flop) and p.speedup > 0]
            if not pts:
                continue
            style = {**source_style(si), "linestyle": _linestyle(line.path)}
            if line.is_torch:
                style["marker"] = "x"
            color = DTYPE_COLORS.get(line.precision, "0.3")
            xs = [p.step_flop for p in pts]
            ax.plot(xs, [p.speedup for p in pts], color=color, lw=1.4, ms=4, **style)
            who = f"{src.label}: " if len(per_src) > 1 else ""
            handles.append(
                Line2D(
                    [],
                    [],
                    color=color,
                    lw=1.6,
                    label=f"{who}{line.path}, {line.precision}",
                    **style,
                )
            )
    # The named data sets (Iris, digits) are single cases on the work axis: mark where they sit.
    named = {
        (p.mixed.data, p.step_flop)
        for _, _, lines in per_src
        for line in lines
        for p in line.pairs
        if p.mixed.data != "synthetic" and math.isfinite(p.step_flop)
    }
    for data, flop in sorted(named):
        ax.annotate(
            data,
            (flop, 0.0),
            xycoords=("data", "axes fraction"),
            textcoords="offset points",
            xytext=(0, 4),
            ha="center",
            fontsize=7,
            color="0.3",
        )
    ax.axhline(1.0, color="0.4", lw=0.9, ls="-")
    ax.text(
        0.01,
        1.0,
        " same speed as fp32",
        transform=ax.get_yaxis_transform(),
        va="bottom",
        fontsize=7,
    )
    log_flop_axis(ax, label="work per SGD step (flop of the layer products)")
    ratio_axis(ax, "speedup over fp32 (fp32 time per epoch / mixed)")
    fig.legend(handles=handles, loc="outside right center", frameon=False)
    return save(
        fig,
        out,
        "precision_speedup",
        "Mixed-precision MLP training: bf16 and fp16 against fp32, same path and case"
        + machines_note(sources),
    )
