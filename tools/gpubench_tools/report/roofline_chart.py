"""The roofline chart of one machine (report/roofs.MachineRoofline): its measured ceilings and
every placed row, CPU and GPU on one pair of log axes.

x is the arithmetic intensity (flop per byte, the minimum-traffic model), y the FLOP/s a row
reached. A compute roof is a horizontal line, a memory roof the diagonal bandwidth x intensity;
a row can sit under the lower of the two at its intensity, and one above a memory roof had its
data in a cache. Colour tells the side (CPU blue, GPU green, as the report's other charts), the
marker the path (training rows: eager, graph, fused), a hollow marker a row whose bytes were
derived from its name.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from .roofs import COMPUTE_ROOF, MachineRoofline

_STYLE = str(Path(__file__).with_name("charts.mplstyle"))
_SIDE_COLOR = {"cpu": "tab:blue", "gpu": "tab:green"}
_MARKERS = {"eager": "o", "graph": "s", "fused": "D", "cublas_kernel": "^", "cublas_e2e": "v"}
_DASHES = ("-", "--", ":", "-.")


def _figure(view: MachineRoofline, title: str, subtitle: str) -> Figure:
    fig = Figure(figsize=(7.5, 5.0), layout="constrained")
    ax = fig.add_subplot()
    intensities = [p.intensity for p in view.points] or [1.0]
    x = np.geomspace(min(intensities) / 4, max(intensities) * 4, 200)
    for i, ceiling in enumerate(view.ceilings):
        y = np.full_like(x, ceiling.value) if ceiling.kind == COMPUTE_ROOF else ceiling.value * x
        style = _DASHES[i % len(_DASHES)]
        ax.plot(x, y, style, color=_SIDE_COLOR[ceiling.side], lw=1, alpha=0.6, label=ceiling.label)
    for (side, path), group in _groups(view).items():
        marker = _MARKERS.get(path, "o")
        for derived, points in group.items():
            ax.scatter(
                [p.intensity for p in points], [p.flop_per_s for p in points], s=16,
                marker=marker, label=f"{side.upper()} {path}",
                facecolors="none" if derived else _SIDE_COLOR[side],
                edgecolors=_SIDE_COLOR[side],
            )  # fmt: skip
    ax.set(xscale="log", yscale="log", xlabel="flop per byte", ylabel="FLOP/s reached")
    ax.set_ylim(bottom=max(1e6, min((p.flop_per_s for p in view.points), default=1e9) / 4))
    fig.suptitle(title, fontsize=10, weight="bold")
    ax.set_title(subtitle, fontsize=8, color="0.3")
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    fig.legend(unique.values(), unique.keys(), loc="outside right upper", fontsize=7, frameon=False)
    return fig


def _groups(view: MachineRoofline) -> dict[tuple[str, str], dict[bool, list]]:
    groups: dict[tuple[str, str], dict[bool, list]] = {}
    for point in view.points:
        groups.setdefault((point.side, point.path), {}).setdefault(point.derived, []).append(point)
    return groups


def draw_roofline(
    view: MachineRoofline, title: str, subtitle: str, out_dir: Path, stem: str
) -> str:
    """Write `<stem>.png` and `<stem>.svg` under out_dir (`subtitle`: whose numbers these are, as
    on every chart of the report); return the stem."""
    fig = _figure(view, title, subtitle)
    with plt.rc_context(fname=_STYLE):
        out_dir.mkdir(parents=True, exist_ok=True)
        fig.savefig(out_dir / f"{stem}.png", dpi=110, metadata={"Software": None})
        fig.savefig(out_dir / f"{stem}.svg", metadata={"Date": None, "Creator": None})
    return stem
