"""The generic chart kinds: structure read back from matplotlib objects, not pixels."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from gpubench_tools.report.charts import Chart, check_chart, draw, render
from gpubench_tools.units import fmt_ratio


@pytest.fixture(autouse=True)
def _closed() -> Iterator[None]:
    # Tests that call render own the figure; close what they leave so one leak can't mask another.
    yield
    plt.close("all")


def _lines_data(flagged: bool = False, band: bool = False) -> pd.DataFrame:
    n = [16, 64, 256, 1024, 4096]
    rows = []
    for side, scale in (("cpu", 1e-6), ("gpu", 1e-5)):
        for i, size in enumerate(n):
            t = scale * (1 + size / 64) ** 1.5
            rows.append(
                {
                    "n": size,
                    "time_s": t,
                    "lo": t * (0.9 if band else 1.0),
                    "hi": t * (1.1 if band else 1.0),
                    "few": flagged and i == 2,
                    "side": side,
                }
            )
    return pd.DataFrame(rows)


def _lines_chart(**kw: Any) -> Chart:
    base: dict[str, Any] = dict(
        kind="lines",
        stem="t",
        title="Time against size",
        x="n",
        y="time_s",
        series="side",
        y_low="lo",
        y_high="hi",
        flag="few",
        log_x=True,
        log_y=True,
        y_unit="s",
        x_ticks="data",
    )
    base.update(kw)
    return Chart(**base)


def _legend_texts(fig: Figure) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def _parts_data() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "n": [16, 256, 4096, 16, 256, 4096],
            "machine": ["a"] * 3 + ["b"] * 3,
            "work": [1e-9, 1e-6, 2e-3, 2e-9, 2e-6, 3e-3],
            "transfer": [5e-6, 3e-5, 3e-3, 6e-6, 4e-5, 4e-3],
            "overhead": [7e-6, 7e-6, 9e-6, 8e-6, 8e-6, 1e-5],
        }
    )


_PARTS = (("work", "work at peak"), ("transfer", "transfer"), ("overhead", "overhead"))


def _bars(fig: Figure) -> list[Rectangle]:
    return [p for ax in fig.axes for p in ax.patches if isinstance(p, Rectangle)]


def test_draw_writes_png_and_svg_and_leaves_no_figure_open(tmp_path: Path) -> None:
    stem = draw(_lines_chart(), _lines_data(flagged=True, band=True), tmp_path)
    assert stem == "t"
    png, svg = tmp_path / "t.png", tmp_path / "t.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in svg.read_bytes()[:1000]
    assert plt.get_fignums() == []


@pytest.mark.parametrize("kind", ["stacked", "heatmap"])
def test_every_kind_draws_and_closes(tmp_path: Path, kind: str) -> None:
    if kind == "stacked":
        chart = Chart("stacked", "s", "Parts", x="n", parts=_PARTS, facet="machine")
        data = _parts_data()
    else:
        chart = Chart("heatmap", "h", "Speedup", x="batch", y="hidden", value="speedup")
        data = pd.DataFrame({"batch": [1, 16, 1], "hidden": [8, 8, 64], "speedup": [0.5, 2, 30]})
    draw(chart, data, tmp_path)
    assert (tmp_path / f"{chart.stem}.png").stat().st_size > 1000
    assert (tmp_path / f"{chart.stem}.svg").stat().st_size > 1000
    assert plt.get_fignums() == []


def test_a_title_longer_than_two_lines_is_refused() -> None:
    long = "A title that goes on " * 8
    with pytest.raises(ValueError, match="title takes"):
        check_chart(_lines_chart(title=long))
    assert len(check_chart(_lines_chart(title="word " * 27))) == 2  # 135 chars: two lines
    with pytest.raises(ValueError):
        draw(_lines_chart(title=long), _lines_data(), Path("/nonexistent"))
    assert plt.get_fignums() == []


def test_check_chart_names_missing_columns_and_fields() -> None:
    with pytest.raises(ValueError, match="lacks column.*few"):
        check_chart(_lines_chart(), _lines_data().drop(columns="few"))
    with pytest.raises(ValueError, match="needs value"):
        check_chart(Chart("heatmap", "h", "Speedup", x="a", y="b"))
    with pytest.raises(ValueError, match="needs parts"):
        check_chart(Chart("stacked", "s", "Parts", x="n"))
    with pytest.raises(ValueError, match="unit"):
        check_chart(_lines_chart(y_unit="furlongs"))
    with pytest.raises(ValueError, match="subtitle"):
        check_chart(_lines_chart(subtitle="one\ntwo"))
    with pytest.raises(ValueError, match="facets"):
        check_chart(_lines_chart(facet="side"))


def test_a_failing_render_closes_its_figure() -> None:
    data = pd.DataFrame({"n": [16, 16], "work": [1.0, 2.0]})  # two rows for one bar
    with pytest.raises(ValueError, match="more than one row"):
        render(Chart("stacked", "s", "Parts", x="n", parts=(("work", "work at peak"),)), data)
    assert plt.get_fignums() == []


def test_legend_names_each_series_once_without_band_or_flag_entries_when_none() -> None:
    fig = render(_lines_chart(), _lines_data(flagged=False, band=False))
    assert _legend_texts(fig) == ["cpu", "gpu"]
    assert not any(c for ax in fig.axes for c in ax.collections)  # no band drawn either


def test_band_and_hollow_marker_entries_appear_once_when_present() -> None:
    chart = _lines_chart()
    fig = render(chart, _lines_data(flagged=True, band=True))
    texts = _legend_texts(fig)
    assert texts == ["cpu", "gpu", chart.band_label, chart.flag_label]
    ax = fig.axes[0]
    assert len(ax.collections) == 2  # one band per series
    hollow = [ln for ln in ax.get_lines() if ln.get_markerfacecolor() == "white"]
    assert len(hollow) == 2 and all(len(ln.get_xdata()) == 1 for ln in hollow)


def test_hline_diagonal_and_single_series() -> None:
    data = pd.DataFrame({"threads": [1, 2, 4], "speedup": [1.0, 1.8, 3.1]})
    chart = Chart(
        "lines",
        "s",
        "Scaling",
        x="threads",
        y="speedup",
        diagonal=True,
        hline=1.0,
        hline_label="same speed",
        y_unit="ratio",
        x_ticks="data",
    )
    fig = render(chart, data)
    assert _legend_texts(fig) == ["ideal", "same speed"]
    ax = fig.axes[0]
    assert list(ax.get_xticks()) == [1, 2, 4]
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4"]


def test_data_ticks_read_as_plain_sizes_and_time_ticks_carry_units() -> None:
    fig = render(_lines_chart(), _lines_data())
    fig.canvas.draw()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["16", "64", "256", "1024", "4096"]
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(lab.split(" ")[-1] in ("ns", "us", "ms", "s") for lab in labels)


def test_series_are_told_apart_by_marker_and_linestyle_not_only_colour() -> None:
    data = pd.DataFrame(
        {"x": np.tile([1, 2, 3], 6), "y": np.arange(18) + 1.0, "s": np.repeat(list("abcdef"), 3)}
    )
    fig = render(Chart("lines", "s", "Six", x="x", y="y", series="s"), data)
    lines = fig.axes[0].get_lines()
    styles = {(ln.get_marker(), str(ln.get_linestyle())) for ln in lines}
    assert len(styles) == 6 and len({ln.get_color() for ln in lines}) == 6


def test_normalized_bars_sum_to_one_with_totals_written_and_every_part_in_the_legend() -> None:
    chart = Chart("stacked", "s", "Parts", x="n", parts=_PARTS, facet="machine")
    data = _parts_data()
    fig = render(chart, data)
    assert _legend_texts(fig) == ["work at peak", "transfer", "overhead"]  # tiny work included
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["a", "b"]
    for ax in axes:
        ends: dict[float, float] = {}
        for bar in ax.patches:
            y = round(bar.get_y(), 6)
            ends[y] = ends.get(y, 0.0) + bar.get_width()
        assert len(ends) == 3
        assert all(v == pytest.approx(1.0) for v in ends.values())
    totals = [t.get_text() for t in axes[0].texts]
    assert totals == ["12.0 us", "38.0 us", "5.01 ms"]


def test_part_colours_are_fixed_by_name() -> None:
    one = render(Chart("stacked", "s", "P", x="n", parts=_PARTS), _parts_data().head(3))
    flipped = tuple(reversed(_PARTS))
    two = render(Chart("stacked", "s", "P", x="n", parts=flipped), _parts_data().head(3))

    def colours(fig: Figure) -> dict[str, Any]:
        return {h.get_label(): h.get_facecolor() for h in fig.legends[0].legend_handles}

    assert colours(one) == colours(two)


def test_heatmap_annotates_each_cell_and_leaves_missing_ones_blank() -> None:
    data = pd.DataFrame(
        {
            "batch": [1, 16, 1, 16, 256],
            "hidden": [8, 8, 64, 64, 8],
            "speedup": [0.04, 1.1, 3.2, 12.0, 80],
        }
    )
    chart = Chart("heatmap", "h", "Speedup", x="batch", y="hidden", value="speedup")
    fig = render(chart, data)
    ax = fig.axes[0]
    cells = {
        (round(t.get_position()[0]), round(t.get_position()[1])): t.get_text() for t in ax.texts
    }
    xs, ys = [1, 16, 256], [8, 64]
    expected = {
        (xs.index(b), ys.index(h)): fmt_ratio(v)
        for b, h, v in zip(data.batch, data.hidden, data.speedup)
    }
    assert cells == expected and len(cells) == 5  # (256, 64) is missing: no text there
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "16", "256"]
    norm = ax.images[0].norm
    assert norm.vmin * norm.vmax == pytest.approx(1.0)  # 1x sits at the centre of the map
