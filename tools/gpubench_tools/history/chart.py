"""Trend charts of the history and an HTML index that shows them, for reading offline.

One PNG per benchmark family (split into pages of `PANELS_PER_PAGE` benchmarks), one panel per
benchmark: the median time of every run with a bar from its fastest to its slowest repetition,
one line per machine, and a red ring on each run at which the regression check would have failed.
The x axis is the order of the runs of all machines by date, labelled with the suite commit, so
the machines of one commit line up.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

# Figures made without pyplot: drawn by Agg, never shown, and no pyplot state to close (charts are
# drawn in CI and on servers without a display).
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from ..compare.engine import natural_key
from ..escape import file_name, html_text, term_text
from ..templating import environment
from ..units import fmt_time
from .check import BenchVerdict, CheckRule, CheckSummary, check_history, rolling_regressions
from .check import summarize_checks
from .store import History
from .words import WORDS

PANELS_PER_PAGE = 12
_COLUMNS = 3
_MAX_TICKS = 12
_MACHINE_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"]
# The red ring around a flagged run, in the panels and in the legend.
# A run's median and the range of its repetitions, in the panels and (the dot) in the legend.
_DOT: dict[str, Any] = dict(marker="o", markersize=3)
_BAR: dict[str, Any] = dict(_DOT, linewidth=1, elinewidth=0.8, capsize=2)
_RING = dict(linestyle="none", marker="o", markerfacecolor="none", markeredgecolor="#d62728")


# Characters of a benchmark name in a panel title and of a machine in the legend: a 10,000-character
# name must not take the figure (and every other panel of the page) with it.
_TITLE_CHARS = 70
_LEGEND_CHARS = 80


def _label(text: str, limit: int) -> str:
    """Input text for a chart: one line, bounded, and '$' shown as itself (matplotlib would
    read "$...$" as mathematics and fail on what it cannot parse)."""
    return term_text(text, limit).replace("$", r"\$")


def _slug(text: str) -> str:
    slug = file_name(re.sub(r"[^A-Za-z0-9]+", "-", text).lower())
    return "benchmarks" if slug == "unnamed" else slug


@dataclass(frozen=True)
class IndexPage:
    """What index.html shows: the runs (how many, the oldest and the newest), the rule, the
    check of each machine's newest run (every machine: a machine is stored with its first run,
    in one transaction), every run the rule flags (by run, then name) and the chart pages of
    each family (family, anchor, PNG paths)."""

    runs: int
    first: Any
    last: Any
    rule: CheckRule
    newest: CheckSummary
    flagged: list[BenchVerdict]
    pages: list[tuple[str, str, list[Path]]]


@dataclass
class _Charts:
    """What every panel of every page shares."""

    history: History
    rule: CheckRule
    positions: dict[int, int]  # run id -> its place on the x axis (History.runs: by date)
    colors: dict[int, str]  # machine id -> line colour
    flagged: dict[tuple[int, str], BenchVerdict]  # where the check would have failed

    def families(self) -> dict[str, list[str]]:
        family = pd.Series({name: b.family for name, b in self.history.benchmarks.items()})
        return {f: sorted(names.index, key=natural_key) for f, names in family.groupby(family)}

    def panel(self, ax: Axes, benchmark: str, family: str) -> None:
        for machine_id, machine_runs in self.history.runs_by_machine.items():
            # (x, repetitions, flagged) of each run that measured the benchmark
            points = [
                (self.positions[r.id], v, (r.id, benchmark) in self.flagged)
                for r in machine_runs
                if (v := self.history.values(r.id, benchmark, self.rule.time))
            ]
            if not points:
                continue
            xs, values, marked = zip(*points)
            medians = [statistics.median(v) for v in values]
            spread = [[m - min(v) for m, v in zip(medians, values)]]
            spread += [[max(v) - m for m, v in zip(medians, values)]]
            ax.errorbar(list(xs), medians, yerr=spread, color=self.colors[machine_id], **_BAR)
            rings = [(x, m) for x, m, mark in zip(xs, medians, marked) if mark]
            if rings:
                ax.plot(*map(list, zip(*rings)), markersize=10, markeredgewidth=1.5, **_RING)
        title = benchmark[len(family) + 1 :] if benchmark.startswith(family + "/") else benchmark
        ax.set_title(_label(title, _TITLE_CHARS), fontsize=7)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: fmt_time(y, 2)))
        ax.tick_params(labelsize=6)
        ax.grid(True, alpha=0.3)
        runs = self.history.runs
        ticks = list(range(0, len(runs), max(1, math.ceil(len(runs) / _MAX_TICKS))))
        ax.set_xticks(ticks)
        labels = [_label(runs[i].git_commit[:10], 10) for i in ticks]  # short commits
        ax.set_xticklabels(labels, rotation=45, ha="right")
        ax.set_xlim(-0.5, len(runs) - 0.5)

    def pages(self, family: str, names: list[str], out_dir: Path) -> list[Path]:
        pages = [names[i : i + PANELS_PER_PAGE] for i in range(0, len(names), PANELS_PER_PAGE)]
        written: list[Path] = []
        for page_no, page in enumerate(pages, start=1):
            rows, columns = math.ceil(len(page) / _COLUMNS), min(_COLUMNS, len(page))
            fig = Figure(figsize=(4.2 * columns, 2.7 * rows + 0.9))
            axes = fig.subplots(rows, columns, squeeze=False)
            for ax, name in zip(axes.flat, page):
                self.panel(ax, name, family)
            for ax in list(axes.flat)[len(page) :]:
                ax.set_visible(False)
            suffix = f" ({page_no}/{len(pages)})" if len(pages) > 1 else ""
            what = "median and range of the repetitions per run"
            fig.suptitle(f"{_label(family, _LEGEND_CHARS)}{suffix}: {what}", fontsize=9)
            labels = [WORDS("machine_label", m=m) for m in self.history.machines.values()]
            handles = [
                Line2D([], [], color=self.colors[m], label=_label(text, _LEGEND_CHARS), **_DOT)
                for m, text in zip(self.history.machines, labels)
            ]
            handles.append(Line2D([], [], label="regression (check rule)", **_RING))
            fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=7, frameon=False)
            fig.tight_layout(rect=(0, 0.06 + 0.02 * (len(handles) // 2), 1, 0.97))
            path = out_dir / (_slug(family) + (f"-{page_no}" if len(pages) > 1 else "") + ".png")
            fig.savefig(path, dpi=100)
            written.append(path)
        return written

    def index(self, pages: dict[str, list[Path]]) -> IndexPage:
        h = self.history
        # By run (the x axis), then by name; the run is the newest a verdict compares.
        flagged = sorted(self.flagged, key=lambda key: (self.positions[key[0]], key[1]))
        newest = summarize_checks(check_history(h, self.rule), h, verbose=False)
        flags = [self.flagged[key] for key in flagged]
        slugs = [(family, _slug(family), paths) for family, paths in pages.items()]
        return IndexPage(len(h.runs), h.runs[0], h.runs[-1], self.rule, newest, flags, slugs)


def write_charts(history: History, rule: CheckRule, out_dir: str) -> Path:
    """Write the PNGs and index.html into out_dir; returns the path of index.html."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    colors = {m: _MACHINE_COLORS[i % len(_MACHINE_COLORS)] for i, m in enumerate(history.machines)}
    positions = {run.id: i for i, run in enumerate(history.runs)}
    charts = _Charts(history, rule, positions, colors, rolling_regressions(history, rule))
    families = charts.families()
    pages = {family: charts.pages(family, names, out) for family, names in families.items()}
    # Names, notes and context values come from the input: every value is escaped.
    env = environment(__package__, keep_trailing_newline=True, finalize=html_text)
    page = env.get_template("index.html.j2").render(page=charts.index(pages), words=WORDS)
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index
