"""Topics for workloads no declaration names: a workload declared through the public API
(include/gpubench/workload.hpp, docs/your-own-workload.md) gets its speedup section, curve,
crossover, breakdown and kernel chart from its rows alone, so a user's workload needs no change
to the tools.

The rows say what a topic needs by the API's conventions: the CPU side is the workload's
`backend=cpu` rows; the GPU side its end-to-end rows (`variant` ending in `_e2e`, `host=pinned`),
the kernel-only rows (`_kernel`, no host) its utilisation chart; the axes are the rows' size
counters (`n`, `m`, ...) and `axis:<name>` counters, and the text axes their label pairs. The
speedup runs along the axis with the most values, one line per value of a second axis that varies.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pandas as pd

from .topics import E2E_GPU_TIME, DISCOVERED_PARTS, DISCOVERED_PATH, DISCOVERED_UTILISATION, Topic

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
