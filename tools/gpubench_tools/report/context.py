"""What every section of the report reads: the table and its summary (analysis.summary_of: typed,
every counter a column, each median's flags), the breakdown of the GPU times, the topics (the
declared ones, then those discovered from the rows: `discovered_topics`), the input files by
their short names, the folder the charts go to; and `Drawing`, a chart a section asks for (build
draws it). Machines are their indices here: their names are words (build.machine_labels)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..table import Table
from .analysis import breakdown, select, summary_of
from .topics import DISCOVERED_PARTS, DISCOVERED_PATH, DISCOVERED_UTILISATION, E2E_GPU_TIME, TOPICS
from .topics import Topic

# The medians of too few repetitions the report states, each as (whose: this run or the
# reference run, side: "cpu" or "gpu", file).
Thin = set[tuple[str, str, str]]


def distinct_names(paths: list[str]) -> dict[str, str]:
    """Each path by its shortest distinct tail: the file name where that tells the files apart,
    else as many parent folders as it takes (two runs' `bench.json` as `a/bench.json` and
    `b/bench.json`)."""
    parts = {p: Path(p).parts or (p,) for p in dict.fromkeys(paths)}
    names: dict[str, str] = {}
    for path, own in parts.items():
        for depth in range(1, len(own) + 1):
            tail = own[-depth:]
            if all(other[-depth:] != tail for o, other in parts.items() if o != path):
                break
        names[path] = str(Path(*tail))
    return names


def _file_names(table: Table) -> dict[str, str]:
    """Every file the report may name (inputs, reference files, files with problems), by its
    shortest distinct tail."""
    files = [f for m in table.machines.itertuples() for f in m.files]
    files += [f for m in table.machines.itertuples() if m.gpu_reference for f in m.gpu_files]
    files += [*table.rows.get("file", []), *table.problems["file"]]
    return distinct_names([str(f) for f in files])


# Topics for workloads no declaration names: a workload declared through the public API
# (include/gpubench/workload.hpp, docs/your-own-workload.md) gets its speedup section, curve,
# crossover, breakdown and kernel chart from its rows alone, so a user's workload needs no change
# to the tools.
# The rows say what a topic needs by the API's conventions: the CPU side is the workload's
# `backend=cpu` rows; the GPU side its end-to-end rows (`variant` ending in `_e2e`, `host=pinned`),
# the kernel-only rows (`_kernel`, no host) its utilisation chart; the axes are the rows' size
# counters (`n`, `m`, ...) and `axis:<name>` counters, and the text axes their label pairs. The
# speedup runs along the axis with the most values, one line per value of a second axis that varies.

# The counters a numeric axis is written as (harness/schema.hpp: the size counters, then the
# `axis:` family), and the label keys a text axis may be (workload_rows.cpp's label_for).
SIZE_COUNTERS = ("m", "n", "k", "batch", "hidden", "bytes")
AXIS_PREFIX = "axis:"
TEXT_AXES = ("data", "dtype", "shape", "input", "precision", "net")
E2E_SUFFIX = "_e2e"
PINNED = "pinned"


def discovered_topics(summary: pd.DataFrame, declared: tuple[Topic, ...]) -> tuple[Topic, ...]:
    """A topic for each workload of `summary` with CPU rows and end-to-end GPU rows that no
    declared topic covers, in the order the workloads first appear."""
    if summary.empty or not {"workload", "backend", "variant"} <= set(summary.columns):
        return ()
    named = {t.cpu.get("workload") for t in declared} | {t.gpu.get("workload") for t in declared}
    e2e = (summary["backend"] == "gpu") & summary["variant"].astype(str).str.endswith(E2E_SUFFIX)
    if "host" in summary:
        e2e &= summary["host"] == PINNED
    topics = (
        _topic(str(workload), rows[rows["backend"] == "cpu"], rows[e2e[rows.index]])
        for workload, rows in summary.groupby("workload", sort=False)
        if workload not in named
    )
    return tuple(topic for topic in topics if topic is not None)


def _axes(cpu: pd.DataFrame, gpu: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The numeric and the text axes both sides carry on every row."""

    def on_both(column: str) -> bool:
        return all(column in side and side[column].notna().all() for side in (cpu, gpu))

    def labelled(key: str) -> bool:  # the table fills dtype and precision in where rows lack them
        return all(side["label"].astype(str).str.contains(f" {key}=").all() for side in (cpu, gpu))

    columns = list(dict.fromkeys([*cpu.columns, *gpu.columns]))
    numeric = [c for c in columns if c in SIZE_COUNTERS or str(c).startswith(AXIS_PREFIX)]
    text = [c for c in TEXT_AXES if on_both(c) and labelled(c)]
    return [c for c in numeric if on_both(c)], text


def _topic(workload: str, cpu: pd.DataFrame, e2e: pd.DataFrame) -> Topic | None:
    numeric, text = _axes(cpu, e2e)
    if cpu.empty or e2e.empty or not numeric:
        return None
    varying = sorted(numeric, key=lambda c: -e2e[c].nunique())
    x, rest = varying[0], [c for c in varying[1:] if e2e[c].nunique() > 1]
    x_name = x.removeprefix(AXIS_PREFIX)
    names, own = {"workload": workload, "x": x, "x_name": x_name}, {"workload": workload}
    gpu = {**own, "backend": "gpu", "variant": tuple(e2e["variant"].unique()), "host": PINNED}
    parts = _filled(DISCOVERED_PARTS, names, rows={**own, "host": PINNED})
    use = _filled(DISCOVERED_UTILISATION, names, rows={**own, "backend": "gpu", "host": None})
    return Topic(
        id=workload,
        title=workload,
        cpu={**own, "backend": "cpu"},
        gpu=gpu,
        keys=(*numeric, *text),
        x=x,
        x_name=x_name,
        series=rest[0] if rest else None,
        paths=(DISCOVERED_PATH,),
        gpu_time_name=E2E_GPU_TIME,
        parts=parts,
        utilisation=use,
    )


def _filled(declared: Any, names: dict[str, str], **given: Any) -> Any:
    """A declaration of topics.py with its text fields' "{...}" filled from `names`."""
    for field in fields(declared):
        value = getattr(declared, field.name)
        if isinstance(value, str):
            given.setdefault(field.name, value.format(**names))
    return replace(declared, **given)


@dataclass(frozen=True)
class Drawing:
    """A chart a section asks for: topics.CHARTS[name] drawn from `data` (build's one step).
    `given` holds what its "{...}" fields and its words are filled from, and the fields a drawing
    sets itself (a chart field's own name: its title, facets, parts); `gpu`: its subtitle names
    the GPU side too."""

    name: str
    data: pd.DataFrame
    given: dict[str, Any] = field(default_factory=dict)
    gpu: bool = True


@dataclass(frozen=True)
class Context:
    table: Table
    out: Path  # the folder the charts are written into
    summary: pd.DataFrame  # analysis.summary_of: a row per benchmark and machine
    breakdown: pd.DataFrame  # analysis.breakdown of the summary: the four parts of GPU times
    file_names: dict[str, str]  # every file by its shortest distinct tail
    # The declared topics, then one for each workload only its rows describe (discovered_topics).
    topics: tuple[Topic, ...] = TOPICS

    @classmethod
    def of(cls, table: Table, out: Path) -> Context:
        summary = summary_of(table.rows)
        own = discovered_topics(summary, TOPICS)
        views = [t.parts.rows for t in own if t.parts is not None]
        parts = breakdown(summary, own=views) if len(summary) else pd.DataFrame()
        return cls(table, out, summary, parts, _file_names(table), TOPICS + own)

    @property
    def several(self) -> bool:
        """Several machines: their charts overlay them, their answer rows name them."""
        return len(self.table.machines) > 1

    def select(self, *filters: dict[str, Any], parts: bool = False) -> pd.DataFrame:
        """The summary rows (the breakdown's with `parts`) that match every topics.py row filter
        given (analysis.select)."""
        rows = self.breakdown if parts else self.summary
        for filt in filters:
            rows = select(rows, filt)
        return rows

    def thin(self, rows: Any, side: str) -> Thin:
        """Of the summary rows labelled `rows`, the medians of too few repetitions (`_few`), as
        (whose: this run or the reference run, side, file): what the † footnote names."""
        rows = self.summary.loc[rows]
        few = rows[rows["_few"]]
        return {(str(w), side, str(f)) for w, f in zip(few["measured_on"], few["file"])}
