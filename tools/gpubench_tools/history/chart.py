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
from pathlib import Path

import matplotlib

# Charts are drawn in CI and on servers without a display; Agg never needs one.
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from ..compare.engine import natural_key  # noqa: E402
from ..escape import html_text
from ..units import fmt_time  # noqa: E402
from .check import (  # noqa: E402
    FAILED,
    REGRESSION,
    SUSPECT,
    BenchVerdict,
    CheckRule,
    check_history,
    rolling_regressions,
)
from .store import History, Run  # noqa: E402

__all__ = ["PANELS_PER_PAGE", "write_charts"]

PANELS_PER_PAGE = 12
_COLUMNS = 3
_MAX_TICKS = 12
_MACHINE_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"]
_REGRESSION_COLOR = "#d62728"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "benchmarks"


def _short_commit(commit: str) -> str:
    return commit[:10]


def _families(history: History) -> dict[str, list[str]]:
    families: dict[str, list[str]] = {}
    for name, info in history.benchmarks.items():
        families.setdefault(info.family, []).append(name)
    return {f: sorted(names, key=natural_key) for f, names in sorted(families.items())}


def _draw_panel(
    ax: Axes,
    history: History,
    benchmark: str,
    family: str,
    positions: dict[int, int],
    colors: dict[int, str],
    flagged: dict[tuple[int, str], BenchVerdict],
    rule: CheckRule,
) -> None:
    for machine_id, runs in history.runs_by_machine.items():
        xs: list[int] = []
        medians: list[float] = []
        below: list[float] = []
        above: list[float] = []
        marked_x: list[int] = []
        marked_y: list[float] = []
        for run in runs:
            values = history.values(run.id, benchmark, rule.time)
            if not values:
                continue
            median = statistics.median(values)
            xs.append(positions[run.id])
            medians.append(median)
            below.append(median - min(values))
            above.append(max(values) - median)
            if (run.id, benchmark) in flagged:
                marked_x.append(positions[run.id])
                marked_y.append(median)
        if not xs:
            continue
        ax.errorbar(
            xs,
            medians,
            yerr=[below, above],
            color=colors[machine_id],
            marker="o",
            markersize=3,
            linewidth=1,
            elinewidth=0.8,
            capsize=2,
        )
        if marked_x:
            ax.plot(
                marked_x,
                marked_y,
                linestyle="none",
                marker="o",
                markersize=10,
                markerfacecolor="none",
                markeredgecolor=_REGRESSION_COLOR,
                markeredgewidth=1.5,
            )
    title = benchmark[len(family) + 1 :] if benchmark.startswith(family + "/") else benchmark
    ax.set_title(title, fontsize=7)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: fmt_time(y, 2)))
    ax.tick_params(labelsize=6)
    ax.grid(True, alpha=0.3)


def _set_run_ticks(ax: Axes, ordered_runs: list[Run]) -> None:
    step = max(1, math.ceil(len(ordered_runs) / _MAX_TICKS))
    ticks = list(range(0, len(ordered_runs), step))
    ax.set_xticks(ticks)
    ax.set_xticklabels(
        [_short_commit(ordered_runs[i].git_commit) for i in ticks], rotation=45, ha="right"
    )
    ax.set_xlim(-0.5, len(ordered_runs) - 0.5)


def _family_pages(
    history: History,
    family: str,
    names: list[str],
    ordered_runs: list[Run],
    colors: dict[int, str],
    flagged: dict[tuple[int, str], BenchVerdict],
    rule: CheckRule,
    out_dir: Path,
) -> list[Path]:
    positions = {run.id: i for i, run in enumerate(ordered_runs)}
    pages = [names[i : i + PANELS_PER_PAGE] for i in range(0, len(names), PANELS_PER_PAGE)]
    written: list[Path] = []
    for page_no, page in enumerate(pages, start=1):
        rows = math.ceil(len(page) / _COLUMNS)
        columns = min(_COLUMNS, len(page))
        fig, axes = plt.subplots(
            rows, columns, figsize=(4.2 * columns, 2.7 * rows + 0.9), squeeze=False
        )
        for ax, name in zip(axes.flat, page):
            _draw_panel(ax, history, name, family, positions, colors, flagged, rule)
            _set_run_ticks(ax, ordered_runs)
        for ax in list(axes.flat)[len(page) :]:
            ax.set_visible(False)
        suffix = f" ({page_no}/{len(pages)})" if len(pages) > 1 else ""
        fig.suptitle(f"{family}{suffix}: median and range of the repetitions per run", fontsize=9)
        handles = [
            Line2D([], [], color=colors[m.id], marker="o", markersize=3, label=m.label)
            for m in history.machines.values()
        ]
        handles.append(
            Line2D(
                [],
                [],
                linestyle="none",
                marker="o",
                markerfacecolor="none",
                markeredgecolor=_REGRESSION_COLOR,
                label="regression (check rule)",
            )
        )
        fig.legend(handles=handles, loc="lower center", ncol=2, fontsize=7, frameon=False)
        fig.tight_layout(rect=(0, 0.06 + 0.02 * (len(handles) // 2), 1, 0.97))
        name = _slug(family) + (f"-{page_no}" if len(pages) > 1 else "") + ".png"
        path = out_dir / name
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def _html_index(
    history: History,
    rule: CheckRule,
    pages: dict[str, list[Path]],
    flagged: dict[tuple[int, str], BenchVerdict],
) -> str:
    e = html_text
    runs = sorted((r for rs in history.runs_by_machine.values() for r in rs), key=_run_order)
    runs_by_id = {r.id: r for r in runs}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>gpubench history</title>',
        "<style>body{font-family:sans-serif;max-width:1300px;margin:auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
        "font-size:90%}img{max-width:100%}.reg{color:#d62728}</style></head><body>",
        "<h1>gpubench history</h1>",
        f"<p>{len(runs)} runs of {len(history.machines)} machines, from {e(runs[0].date)} to "
        f"{e(runs[-1].date)}. Times: {e(rule.time)} clock (GPU rows: CUDA-event time). Red "
        f"rings: the run at which the check would have failed (median &ge; "
        f"{rule.min_ratio:g}x the {rule.window} earlier runs, one-sided U test p &lt; "
        f"{rule.alpha:g}, in each of the {rule.confirm} newest runs).</p>",
        "<h2>Machines</h2><table><tr><th>machine</th><th>description</th><th>runs</th>"
        "<th>newest run</th></tr>",
    ]
    for machine_id, machine in history.machines.items():
        machine_runs = history.runs_by_machine.get(machine_id, [])
        newest = machine_runs[-1] if machine_runs else None
        newest_text = f"{e(newest.git_commit)} ({e(newest.date)})" if newest else ""
        parts.append(
            f"<tr><td>{e(machine.fingerprint)}</td><td>{e(machine.label)}</td>"
            f"<td>{len(machine_runs)}</td><td>{newest_text}</td></tr>"
        )
    parts.append("</table>")

    parts.append("<h2>Newest run of each machine</h2><ul>")
    for check in check_history(history, rule):
        shown = (REGRESSION, FAILED, SUSPECT)
        found = sorted(
            (v for v in check.verdicts if v.verdict in shown),
            key=lambda v: (shown.index(v.verdict), v.benchmark),
        )
        label = e(check.machine.fingerprint)
        if not found:
            parts.append(f"<li>{label}: no regression</li>")
        for v in found:
            ratios = ", ".join(f"{c.ratio:.2f}x" for c in v.newest)
            css = ' class="reg"' if v.verdict in (REGRESSION, FAILED) else ""
            parts.append(
                f"<li{css}>{label}: {e(v.verdict)}: {e(v.benchmark)}: {ratios} {e(v.note)}</li>"
            )
    parts.append("</ul>")

    if flagged:
        parts.append(
            "<h2>Every run flagged by the rule</h2><table><tr><th>commit</th>"
            "<th>date</th><th>benchmark</th><th>median ratios (newest first)</th></tr>"
        )
        for (run_id, name), v in sorted(
            flagged.items(), key=lambda item: (_run_order(runs_by_id[item[0][0]]), item[0][1])
        ):
            run = runs_by_id[run_id]
            ratios = ", ".join(f"{c.ratio:.2f}x" for c in v.newest)
            parts.append(
                f"<tr><td>{e(run.git_commit)}</td><td>{e(run.date)}</td><td>{e(name)}</td>"
                f"<td>{ratios}</td></tr>"
            )
        parts.append("</table>")

    parts.append("<h2>Families</h2><ul>")
    for family in pages:
        parts.append(f'<li><a href="#{_slug(family)}">{e(family)}</a></li>')
    parts.append("</ul>")
    for family, paths in pages.items():
        parts.append(f'<h3 id="{_slug(family)}">{e(family)}</h3>')
        for path in paths:
            parts.append(f'<p><img src="{e(path.name)}" alt="{e(family)} trend chart"></p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _run_order(run: Run) -> tuple[float, int]:
    return (run.time_utc_s, run.id)


def write_charts(history: History, rule: CheckRule, out_dir: str) -> Path:
    """Write the PNGs and index.html into out_dir; returns the path of index.html."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ordered_runs = sorted(
        (r for runs in history.runs_by_machine.values() for r in runs), key=_run_order
    )
    colors = {
        machine_id: _MACHINE_COLORS[i % len(_MACHINE_COLORS)]
        for i, machine_id in enumerate(history.machines)
    }
    flagged = rolling_regressions(history, rule)
    pages = {
        family: _family_pages(history, family, names, ordered_runs, colors, flagged, rule, out)
        for family, names in _families(history).items()
    }
    index = out / "index.html"
    index.write_text(_html_index(history, rule, pages, flagged), encoding="utf-8")
    return index
