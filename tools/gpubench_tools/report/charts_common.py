"""Shared chart plumbing: headless backend, one look for every figure, axis formatters and
writing each figure as PNG and SVG."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import matplotlib

# Reports are written on servers and in CI without a display; Agg never needs one.
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.axis import Axis  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator  # noqa: E402

from ..dataset import Source  # noqa: E402
from ..units import fmt_bytes, fmt_time  # noqa: E402

__all__ = [
    "ChartFile",
    "plt",
    "Axes",
    "Figure",
    "Line2D",
    "new_figure",
    "save",
    "slug",
    "machines_note",
    "DTYPE_COLORS",
    "PHASE_COLORS",
    "source_style",
    "log2_size_axis",
    "log_bytes_axis",
    "log_time_axis",
    "log_flop_axis",
    "ratio_axis",
    "pct_axis",
]

DTYPE_COLORS: dict[str, str] = {
    "fp32": "#1f77b4",
    "tf32": "#17becf",
    "fp16": "#ff7f0e",
    "bf16": "#d62728",
    "fp64": "#2ca02c",
}
PHASE_COLORS: dict[str, str] = {
    "t_h2d": "#e15759",
    "t_compute": "#59a14f",
    "t_d2h": "#f28e2b",
    "t_overhead": "#9c9c9c",
}
_LINESTYLES = ["-", "--", ":", "-."]
_MARKERS = ["o", "s", "^", "D", "v", "P"]

plt.rcParams.update(
    {
        "figure.dpi": 110,
        "savefig.dpi": 130,
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.labelsize": 9,
        "legend.fontsize": 8,
        "xtick.labelsize": 8,
        "ytick.labelsize": 8,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "grid.linewidth": 0.6,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.fonttype": "none",  # keep SVG text as text: searchable and small
        "svg.hashsalt": "gpubench",  # stable SVG ids, so reruns diff cleanly
    }
)


@dataclass
class ChartFile:
    key: str
    title: str
    png: Path
    svg: Path


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


def new_figure(
    rows: int = 1, cols: int = 1, w: float = 5.2, h: float = 3.8, **kw: Any
) -> tuple[Figure, list[Axes]]:
    # Constrained layout keeps the suptitle, panel titles and outside legends from colliding.
    fig, axes = plt.subplots(
        rows, cols, figsize=(w * cols, h * rows), squeeze=False, layout="constrained", **kw
    )
    return fig, [ax for row in axes for ax in row]


def save(fig: Figure, out_dir: Path, key: str, title: str) -> ChartFile:
    # Wrap long titles on narrow figures instead of letting them run off the canvas.
    width_chars = max(40, int(fig.get_figwidth() * 9))
    fig.suptitle(textwrap.fill(title, width_chars), fontsize=11, fontweight="bold")
    png, svg = out_dir / f"{key}.png", out_dir / f"{key}.svg"
    # Constrained layout already fits everything inside the figure, so no bbox_inches="tight"
    # (it would draw every figure twice more). The layout from the PNG pass is frozen for the
    # SVG: both files show the same arrangement and the solver runs once.
    fig.savefig(png, metadata={"Software": None})
    fig.set_layout_engine("none")
    fig.savefig(svg, metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return ChartFile(key=key, title=title, png=png, svg=svg)


def notes_below(ax: Axes, heading: str, notes: Sequence[str]) -> None:
    """A boxed list of notes (crossovers) under the panel, not inside it: with several files and
    precisions the list is long enough to hide the curves."""
    ax.annotate(
        heading + "\n" + "\n".join(notes),
        xy=(0.0, 0.0),
        xycoords="axes fraction",
        xytext=(0, -38),
        textcoords="offset points",
        ha="left",
        va="top",
        fontsize=7.5,
        bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.7", "alpha": 0.9},
    )


def machines_note(sources: Sequence[Source], gpu_only: bool = False) -> str:
    """A title suffix for a chart that shows a reference run's GPU: both machines where the chart
    puts this run's CPU beside the reference GPU, the reference alone where it shows only GPU
    numbers. Empty when every number comes from the machine it is labelled with."""
    mixed = next((s for s in sources if s.mixes_machines), None)
    if mixed is None:
        return ""
    where = f"measured {mixed.gpu_reference.elsewhere}" if mixed.gpu_reference else ""
    if gpu_only:
        return f" - {mixed.gpu_label}, {where}"
    return f" - CPU: {mixed.cpu_label}; GPU: {mixed.gpu_label}, {where}"


def source_style(index: int) -> dict[str, object]:
    """Line style and marker that tell overlaid input files apart (colour tells series apart)."""
    return {
        "linestyle": _LINESTYLES[index % len(_LINESTYLES)],
        "marker": _MARKERS[index % len(_MARKERS)],
    }


def _no_minor(axis: Axis, fmt: Callable[[float], str] | None = None) -> None:
    """Minor ticks on a log axis cost most of the layout time and add little over many decades;
    over less than two decades the axis would show one label or none, so label 2x and 5x there."""
    lo, hi = axis.get_view_interval()
    if fmt is not None and lo > 0 and hi / lo < 100 and axis.get_scale() == "log":
        axis.set_minor_locator(LogLocator(base=10.0, subs=(2.0, 5.0)))
        axis.set_minor_formatter(_decade_formatter(fmt))
        return
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def _decade_formatter(fmt: Callable[[float], str]) -> FuncFormatter:
    return FuncFormatter(lambda v, _pos: fmt(v) if v > 0 else "")


def log2_size_axis(
    ax: Axes, axis: str = "x", label: str = "matrix size n (n x n x n GEMM)"
) -> None:
    """Powers of two read as plain integers (16, 64, 256, ...) rather than 2^4."""
    getattr(ax, f"set_{axis}scale")("log", base=2)
    target = getattr(ax, f"{axis}axis")
    target.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.0f}" if v >= 1 else f"{v:g}"))
    _no_minor(target)
    getattr(ax, f"set_{axis}label")(label)


def log_bytes_axis(ax: Axes, axis: str = "x", label: str = "bytes per copy") -> None:
    getattr(ax, f"set_{axis}scale")("log", base=2)
    target = getattr(ax, f"{axis}axis")
    target.set_major_locator(LogLocator(base=1024.0, subs=(1.0, 32.0)))
    target.set_major_formatter(_decade_formatter(fmt_bytes))
    _no_minor(target)
    getattr(ax, f"set_{axis}label")(label)


def log_time_axis(ax: Axes, axis: str = "y", label: str = "time") -> None:
    getattr(ax, f"set_{axis}scale")("log")
    target = getattr(ax, f"{axis}axis")
    target.set_major_formatter(_decade_formatter(lambda v: fmt_time(v, 1)))
    _no_minor(target, lambda v: fmt_time(v, 1))
    getattr(ax, f"set_{axis}label")(label)


def _si_compact(v: float) -> str:
    for scale, unit in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= scale:
            return f"{v / scale:g}{unit}"
    return f"{v:g}"


def log_flop_axis(ax: Axes, axis: str = "x", label: str = "work per GEMM (flop = 2mnk)") -> None:
    getattr(ax, f"set_{axis}scale")("log")
    target = getattr(ax, f"{axis}axis")
    target.set_major_formatter(_decade_formatter(_si_compact))
    _no_minor(target)
    getattr(ax, f"set_{axis}label")(label)


def ratio_axis(ax: Axes, label: str) -> None:
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_decade_formatter(lambda v: f"{v:g}x"))
    _no_minor(ax.yaxis, lambda v: f"{v:g}x")
    ax.set_ylabel(label)


def pct_axis(ax: Axes, label: str = "% of theoretical peak") -> None:
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_decade_formatter(lambda v: f"{v:g}%"))
    _no_minor(ax.yaxis, lambda v: f"{v:g}%")
    ax.set_ylabel(label)
