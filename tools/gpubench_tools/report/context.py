"""What every section of the report reads: the table and its summary (analysis.summary_of: typed,
every counter a column, each median's flags), the breakdown of the GPU times, the input files by
their short names, the folder the charts go to; and `Drawing`, a chart a section asks for (build
draws it). Machines are their indices here: their names are words (build.machine_labels)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..table import Table
from .analysis import breakdown, select, summary_of
from .topics import TOPICS, Topic, discovered_topics

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
    # The declared topics, then one for each workload only its rows describe
    # (topics.discovered_topics).
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
