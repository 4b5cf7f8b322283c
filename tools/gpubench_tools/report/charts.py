"""A few generic chart kinds drawn from one pandas table; a report topic declares a `Chart`.

- `lines`: y against x, one line per value of `series` (or markers only, `connect=False`), with
  an optional min-max band, hollow markers for flagged points (few repetitions, noisy), a
  reference line (`hline`) and the ideal diagonal.
- `stacked`: one bar per category of `x`, stacked from `parts` as shares of the bar, with the
  total time written at its end; `facet` gives one panel per value.
- `heatmap`: `value` (a ratio such as a speedup) over the `x` by `y` grid, on a log colour
  scale centred at 1, every cell annotated.

Axis convention: `x` is the column along the horizontal axis of `lines` and the category column
of `stacked` (its bars run across, one per row); `y_label` and `y_unit` describe the value axis.
`render` builds the figure (tests read it back); `draw` writes `<stem>.png` and `<stem>.svg`.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

import matplotlib

# Reports are written on servers and in CI without a display; Agg never needs one.
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib import ticker  # noqa: E402

from ..units import fmt_bytes, fmt_ratio, fmt_size, fmt_time  # noqa: E402
from .words import named  # noqa: E402

Kind = Literal["lines", "stacked", "heatmap"]
TITLE_WIDTH = 70  # characters per title line; a title may take two
SUBTITLE_WIDTH = 125  # what fits on one 8 pt line across the figure
WIDTH_IN, HEIGHT_IN, PNG_DPI = 7.5, 4.2, 130
PANELS_PER_ROW = 3  # a faceted chart's panels, at most this many side by side

# One colour per part name in every chart. Work at peak and under-utilisation are the two halves
# of compute time (dark and light blue); all four differ in lightness, so greyscale keeps them.
PART_COLORS: dict[str, str] = {
    "work at peak": "#1f4e79",
    "under-utilisation": "#9ecae1",
    "transfer": "#f28e2b",
    "overhead": "#6f6f6f",
}
_PALETTE = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000"]
_MARKERS = ["o", "s", "^", "D", "v", "P", "X"]
# Six styles against seven markers: no two of the first 42 series share both in greyscale.
_LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3))]
_REFERENCE: dict[str, Any] = {"color": "0.4", "linewidth": 1, "zorder": 1}  # hline, diagonal
_TOTAL: dict[str, Any] = {"fontsize": 7, "ha": "left", "va": "center"}  # a stacked bar's total
# The charts' look (fonts, grid, spines, SVG text kept as text with stable ids, so reruns diff
# cleanly), as a matplotlib style file beside this module.
_STYLE = str(Path(__file__).with_name("charts.mplstyle"))


def _said(label: str) -> Any:
    """A legend entry's words where a chart gives none of its own: `chart_defaults` of
    templates/words.j2."""
    return field(default_factory=lambda: named("chart_defaults", label))


@dataclass(frozen=True)
class Chart:
    kind: Kind
    stem: str  # file name without extension
    title: str  # at most two lines of TITLE_WIDTH characters
    x: str
    y: str | None = None  # lines: the y column; heatmap: the row column
    value: str | None = None  # heatmap: the cell value (a ratio)
    subtitle: str = ""  # one smaller line: where the numbers come from
    x_label: str = ""
    y_label: str = ""
    value_label: str = ""  # heatmap colour bar
    series: str | None = None
    y_low: str | None = None
    y_high: str | None = None
    band_label: str = _said("band_label")
    flag: str | None = None
    flag_label: str = _said("flag_label")
    log_x: bool = False
    log_y: bool = False
    hline: float | None = None  # y of a reference line, e.g. 1.0 for the same speed
    hline_label: str = ""
    diagonal: bool = False  # y = x
    diagonal_label: str = _said("diagonal_label")
    connect: bool = True  # lines: False draws markers only (a scatter of unrelated rows)
    x_ticks: Literal["auto", "data"] = "auto"  # "data": one tick per distinct x
    x_unit: str | None = None
    y_unit: str | None = None
    parts: tuple[tuple[str, str], ...] = ()  # stacked: (column, label), bottom to top
    facet: str | None = None


# The fields a chart of each kind cannot be drawn without, beside `x`.
_NEEDS = {"lines": ("y",), "stacked": ("parts",), "heatmap": ("y", "value")}


def check_chart(chart: Chart, data: pd.DataFrame | None = None) -> list[str]:
    """Raise ValueError for a chart no topic should ship; return the wrapped title lines."""
    lines = textwrap.wrap(chart.title, TITLE_WIDTH)
    missing = [f for f in _NEEDS.get(chart.kind, ()) if not getattr(chart, f)]
    # An axis's units are those its ticks can be written in.
    units = ", ".join(repr(u) for u in (chart.x_unit, chart.y_unit) if u not in _TICK)
    columns = [chart.x, chart.y, chart.value, chart.series, chart.y_low, chart.y_high, chart.flag]
    columns += [chart.facet, *(column for column, _ in chart.parts)]
    absent = [c for c in columns if c is not None and data is not None and c not in data.columns]
    two_lines = f"title takes {len(lines)} lines at {TITLE_WIDTH} characters; at most 2"
    one_line = f"subtitle must be one line of <= {SUBTITLE_WIDTH} chars"
    # Every rule and what breaking it says, in order: the first broken one is raised.
    rules = [
        (not lines, "a chart needs a title"),
        (len(lines) > 2, f"{two_lines} (move detail to the subtitle or the text)"),
        ("\n" in chart.subtitle or len(chart.subtitle) > SUBTITLE_WIDTH, one_line),
        (chart.kind not in _NEEDS, f"unknown kind {chart.kind!r}"),
        (missing, f"a {chart.kind} chart needs {', '.join(missing)}"),
        (chart.facet is not None and chart.kind != "stacked", "only stacked charts have facets"),
        ((chart.y_low is None) != (chart.y_high is None), "a band needs both y_low and y_high"),
        (units, f"unit {units} is not one of {', '.join(filter(None, _TICK))}"),
        (absent, f"data lacks column(s) {', '.join(absent)}"),
    ]
    for broken, said in rules:
        if broken:
            raise ValueError(f"{chart.stem}: {said}")
    return lines


# --- tick labels -------------------------------------------------------------------------------


def _plain(v: float) -> str:
    """Sizes as written in the benchmark names (16, 4096, 65536), larger ones compact."""
    if isinstance(v, (int, float, np.number)) and math.isfinite(v):
        return f"{int(round(v))}" if abs(v - round(v)) < 1e-9 and abs(v) < 1e6 else fmt_size(v)
    return str(v)


def _time_tick(v: float) -> str:
    # fmt_time keeps three significant digits; ticks read better without trailing zeros.
    if v == 0:
        return "0"
    number, unit = fmt_time(v).split(" ")
    return f"{number.rstrip('0').rstrip('.') if '.' in number else number} {unit}"


def _si(v: float, unit: str) -> str:
    """A tick of a rate: `g` digits with an SI prefix (2 TFLOP/s, 500 MB/s)."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:g} {prefix}{unit}"
    return f"{v:g} {unit}"


_TICK: dict[str | None, Callable[[float], str]] = {
    "s": _time_tick,
    "ratio": lambda v: f"{v:g}x",
    "bytes/s": lambda v: _si(v, "B/s"),
    "bytes": lambda v: fmt_bytes(v) if v else "0",
    "count": _plain,
    None: lambda v: f"{v:g}",
}


def _format_axis(ax: Axes, which: str, unit: str | None, log: bool, data_ticks: Any = None) -> None:
    axis = ax.xaxis if which == "x" else ax.yaxis
    fmt = _TICK[unit]
    formatter = ticker.FuncFormatter(lambda v, _pos: fmt(v) if v > 0 or not log else "")
    if log:
        getattr(ax, f"set_{which}scale")("log", base=2 if unit == "bytes" else 10)
    if data_ticks is not None:
        axis.set_major_locator(ticker.FixedLocator(_thin(sorted(set(data_ticks)), log)))
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _p: _TICK[unit or "count"](v)))
        axis.set_minor_locator(ticker.NullLocator())
        return
    axis.set_major_formatter(formatter)
    if not log:
        return
    if unit == "bytes":  # powers of two, not of ten, and few enough to read
        axis.set_major_locator(ticker.LogLocator(base=2, numticks=8))
    lo, hi = ax.get_xlim() if which == "x" else ax.get_ylim()
    if unit != "bytes" and 0 < lo and hi / lo < 100:
        # Under two decades the axis would show one label or none: label 2x and 5x too.
        axis.set_minor_locator(ticker.LogLocator(base=10, subs=(2.0, 5.0)))
        axis.set_minor_formatter(formatter)
    else:
        axis.set_minor_locator(ticker.NullLocator())
        axis.set_minor_formatter(ticker.NullFormatter())


def _thin(values: Sequence[float], log: bool, most: int = 10) -> list[float]:
    """At most about `most` evenly spread ticks out of the data's x values, so labels of close
    sizes (32, 48, 64) never overlap; the first and last always stay."""
    if len(values) <= most:
        return list(values)
    pos = [math.log(v) if log else v for v in values]
    gap = (pos[-1] - pos[0]) / (most - 1) * 0.95
    kept = [0]
    for i in range(1, len(values)):
        if pos[i] - pos[kept[-1]] >= gap:
            kept.append(i)
    kept[-1] = len(values) - 1
    return [values[i] for i in kept]


# --- the figure --------------------------------------------------------------------------------


def _figure(chart: Chart, title: list[str], rows: int = 1, cols: int = 1) -> tuple[Figure, Any]:
    """A figure of HTML-page size with the title block above a constrained-layout grid: the
    block is drawn as figure text and the grid kept out of it, so a two-line title and the
    smaller subtitle never collide with the panels."""
    header_pt = 8 + 11 * 1.25 * len(title) + (8 * 1.3 + 3 if chart.subtitle else 0) + 6
    height = HEIGHT_IN + (rows - 1) * 2.6 + max(0, len(title) - 1) * 0.2
    fig, axes = plt.subplots(
        rows, cols, figsize=(WIDTH_IN, height), squeeze=False, layout="constrained"
    )
    top = 1 - header_pt / (height * 72)
    fig.get_layout_engine().set(rect=(0, 0, 1, top))
    title_y = 1 - 8 / (height * 72)
    fig.text(0.5, title_y, "\n".join(title), ha="center", va="top", fontsize=11, weight="bold")
    if chart.subtitle:
        sub_y = 1 - (8 + 11 * 1.25 * len(title) + 3) / (height * 72)
        fig.text(0.5, sub_y, chart.subtitle, ha="center", va="top", fontsize=8, color="0.3")
    return fig, axes


def _legend(fig: Figure, handles: list[Any]) -> None:
    """Below the panels, outside every axes, so it never covers data."""
    if handles:
        ncol = min(len(handles), 4 if max(len(h.get_label()) for h in handles) < 28 else 2)
        fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False)


def _lines(chart: Chart, data: pd.DataFrame, fig: Figure, axes: list[Axes]) -> list[Any]:
    assert chart.y is not None
    ax = axes[0]
    data = data.dropna(subset=[chart.x, chart.y])
    if chart.log_y:  # a zero or negative time has no place on a log axis
        data = data[data[chart.y] > 0]
    groups = [(None, data)] if chart.series is None else data.groupby(chart.series, sort=False)
    handles: list[Any] = []
    banded = flagged = False
    for i, (key, rows) in enumerate(groups):
        rows = rows.sort_values(chart.x)
        style = {"color": _PALETTE[i % len(_PALETTE)], "marker": _MARKERS[i % len(_MARKERS)]}
        style["linestyle"] = _LINESTYLES[i % len(_LINESTYLES)] if chart.connect else "none"
        label = "_" if key is None else _plain(key[0] if isinstance(key, tuple) else key)
        (line,) = ax.plot(
            rows[chart.x], rows[chart.y], label=label, markersize=4.5, linewidth=1.4, **style
        )
        if key is not None:
            handles.append(line)
        if chart.y_low is not None and chart.y_high is not None:
            low, high = rows[chart.y_low].astype(float), rows[chart.y_high].astype(float)
            if (low < high).any():  # a band of zero width says nothing and gets no legend
                ax.fill_between(
                    rows[chart.x], low, high, color=style["color"], alpha=0.18, linewidth=0
                )
                banded = True
        if chart.flag is not None:
            hollow = rows[rows[chart.flag].eq(True)]
            if not hollow.empty:
                # Drawn over the filled marker, so the point reads as hollow.
                hollow_style = dict(style, linestyle="none", markerfacecolor="white")
                z = line.get_zorder() + 0.1
                ax.plot(hollow[chart.x], hollow[chart.y], markersize=4.5, zorder=z, **hollow_style)
                flagged = True
    if chart.diagonal and not data.empty:
        ends = [data[chart.x].min(), data[chart.x].max()]
        handles += ax.plot(ends, ends, label=chart.diagonal_label, linestyle="--", **_REFERENCE)
    if chart.hline is not None:
        line = ax.axhline(chart.hline, label=chart.hline_label, linestyle=(0, (4, 2)), **_REFERENCE)
        handles.append(line)
    if banded:
        handles.append(Patch(facecolor="0.5", alpha=0.3, label=chart.band_label))
    if flagged:
        handles.append(Line2D([], [], ls="none", marker="o", mfc="white", mec="0.3"))
        handles[-1].set_label(chart.flag_label)
    ticks = data[chart.x] if chart.x_ticks == "data" else None
    _format_axis(ax, "x", chart.x_unit, chart.log_x, ticks)
    _format_axis(ax, "y", chart.y_unit, chart.log_y)
    ax.set_xlabel(chart.x_label)
    ax.set_ylabel(chart.y_label)
    return handles


def _categories(values: pd.Series) -> list[Any]:
    """Distinct values: numbers ascending, names in the order the topic gave them."""
    unique = list(pd.unique(values.dropna()))
    return sorted(unique) if pd.api.types.is_numeric_dtype(values) else unique


def _part_color(label: str, i: int) -> str:
    return PART_COLORS.get(label, _PALETTE[i % len(_PALETTE)])


def _stacked_panel(chart: Chart, rows: pd.DataFrame, ax: Axes, cats: list[Any]) -> None:
    if rows[chart.x].duplicated().any():
        raise ValueError(f"{chart.stem}: more than one row per {chart.x} in a panel")
    rows = rows.set_index(chart.x).reindex(cats)
    # Medians of separate columns can leave a part a hair below zero; a bar can't draw that.
    parts = rows[[c for c, _ in chart.parts]].astype(float).fillna(0).clip(lower=0)
    total = parts.sum(axis=1)
    shares = parts.div(total.where(total > 0), axis=0).fillna(0)
    pos = np.arange(len(cats))
    ax.set_axisbelow(True)  # grid lines behind the bars, not across them
    base = np.zeros(len(cats))
    for i, (column, label) in enumerate(chart.parts):
        values = shares[column].to_numpy()
        ax.barh(pos, values, 0.7, base, color=_part_color(label, i), label=label, edgecolor="white")
        base = base + values
    ax.set_yticks(pos, [_plain(c) for c in cats])
    ax.invert_yaxis()  # the first category on top, as it reads
    ax.grid(False, axis="y")
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(ticker.PercentFormatter(1.0))
    # Totals span decades, so the share hides them: write each one past the bar's end.
    for p, t in zip(pos, total):
        if t > 0:
            ax.annotate(fmt_time(t), (1.01, p), annotation_clip=False, **_TOTAL)
    ax.set_xlabel(chart.y_label)
    ax.set_ylabel(chart.x_label)


def _stacked(chart: Chart, data: pd.DataFrame, fig: Figure, axes: list[Axes]) -> list[Any]:
    cats = _categories(data[chart.x])
    panels = [(None, data)] if chart.facet is None else list(data.groupby(chart.facet, sort=False))
    cols = min(len(panels), PANELS_PER_ROW)
    for i, (ax, (key, rows)) in enumerate(zip(axes, panels)):
        _stacked_panel(chart, rows, ax, cats)
        if key is not None:
            ax.set_title(_plain(key[0] if isinstance(key, tuple) else key), pad=6)
        if i % cols:  # panels in a row share the vertical axis's meaning: say it once, at left
            ax.set_ylabel("")
            ax.tick_params(labelleft=False)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    # Every part gets its entry, even one too thin to see in any bar.
    return [
        Patch(facecolor=_part_color(lab, i), label=lab) for i, (_, lab) in enumerate(chart.parts)
    ]


def _heatmap(chart: Chart, data: pd.DataFrame, fig: Figure, axes: list[Axes]) -> list[Any]:
    assert chart.y is not None and chart.value is not None
    ax = axes[0]
    xs, ys = _categories(data[chart.x]), _categories(data[chart.y])
    if data.duplicated([chart.x, chart.y]).any():
        raise ValueError(f"{chart.stem}: more than one {chart.value} per cell")
    grid = data.pivot(index=chart.y, columns=chart.x, values=chart.value).reindex(ys)[xs]
    values = np.array(grid.to_numpy(dtype=float), copy=True)  # pandas 3 hands out read-only views
    values[~(values > 0)] = np.nan  # a ratio at or below zero is no measurement: leave it blank
    finite = values[np.isfinite(values)]
    # Symmetric in log space so 1 (same speed) sits at the neutral middle of the colour map.
    span = max(2.0, float(np.max(np.maximum(finite, 1 / finite)))) if finite.size else 2.0
    norm = LogNorm(vmin=1 / span, vmax=span)
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="white")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
    for (r, c), v in np.ndenumerate(values):
        if np.isfinite(v):
            # White text on the saturated ends of the map, black in the pale middle.
            ink = "white" if abs(math.log10(v)) > 0.6 * math.log10(span) else "black"
            ax.text(c, r, fmt_ratio(v), ha="center", va="center", fontsize=7.5, color=ink)
    ax.set_xticks(range(len(xs)), [_plain(v) for v in xs])
    ax.set_yticks(range(len(ys)), [_plain(v) for v in ys])
    ax.grid(False)
    ax.tick_params(length=0)
    ax.spines[:].set_visible(False)
    ax.set_xlabel(chart.x_label)
    ax.set_ylabel(chart.y_label)
    bar = fig.colorbar(image, ax=ax, shrink=0.9, pad=0.02, label=chart.value_label)
    bar.ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _p: f"{v:g}x"))
    bar.ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    return []


# Each kind's drawing: into the figure's panels, returning the legend's entries.
_KINDS = {"lines": _lines, "stacked": _stacked, "heatmap": _heatmap}


def render(chart: Chart, data: pd.DataFrame) -> Figure:
    """The chart as an open Figure (the caller closes it; `draw` does)."""
    title = check_chart(chart, data)
    with plt.rc_context(fname=_STYLE):
        n = 1 if chart.facet is None else max(1, data[chart.facet].nunique())
        cols = min(n, PANELS_PER_ROW)
        fig, grid = _figure(chart, title, rows=math.ceil(n / cols), cols=cols)
        axes = [ax for row in grid for ax in row]
        try:
            _legend(fig, _KINDS[chart.kind](chart, data, fig, axes))
        except BaseException:
            plt.close(fig)
            raise
    return fig


def draw(chart: Chart, data: pd.DataFrame, out_dir: Path) -> str:
    """Write `<stem>.png` and `<stem>.svg` under out_dir; return the stem."""
    fig = render(chart, data)
    try:
        with plt.rc_context(fname=_STYLE):
            out_dir.mkdir(parents=True, exist_ok=True)
            fig.savefig(out_dir / f"{chart.stem}.png", dpi=PNG_DPI, metadata={"Software": None})
            # The PNG pass solved the layout; freeze it so the SVG shows the same arrangement.
            fig.set_layout_engine("none")
            fig.savefig(out_dir / f"{chart.stem}.svg", metadata={"Date": None, "Creator": None})
    finally:
        plt.close(fig)
    return chart.stem
