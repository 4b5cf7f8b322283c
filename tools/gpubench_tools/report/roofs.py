"""The roofline of one machine: its measured ceilings, CPU and GPU, and every row placed under
them (roofline.placed), as a frozen record the words and the chart render.

A ceiling is a compute roof (FLOP/s: the CPU's FMA peak on one core and on all of them, the GPU's
peak per precision its rows used) or a memory roof (bytes/s: the CPU triad on one thread and on
all cores, its L2-resident level, the GPU's device triad and the driver's theoretical figure),
each with the source the context gives. A point is a row at its arithmetic intensity and the
FLOP/s it reached, named by its bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

COMPUTE_ROOF, MEMORY_ROOF = "compute", "memory"
# The context's memory ceilings: (key, side, label).
_MEMORY = (
    ("cpu_bandwidth_1thread_bytes_per_s", "cpu", "CPU triad, 1 thread"),
    ("cpu_bandwidth_all_cores_bytes_per_s", "cpu", "CPU triad, all cores"),
    ("cpu_bandwidth_cache_bytes_per_s", "cpu", "CPU L2, 1 thread"),
    ("gpu_bandwidth_measured_bytes_per_s", "gpu", "GPU device triad"),
    ("gpu_bandwidth_theoretical_bytes_per_s", "gpu", "GPU theoretical"),
    ("gpu_memory_bandwidth_bytes_per_s", "gpu", "GPU theoretical"),
)


@dataclass(frozen=True)
class Ceiling:
    side: str  # "cpu" or "gpu"
    kind: str  # COMPUTE_ROOF (value in FLOP/s) or MEMORY_ROOF (bytes/s)
    label: str
    value: float


@dataclass(frozen=True)
class Point:
    name: str
    side: str
    workload: str
    path: str  # the variant: openblas, eager, graph, fused, cublas_kernel, ...
    intensity: float  # flop per byte
    flop_per_s: float
    bound: str  # roofline.COMPUTE, MEMORY, CACHE or BELOW
    share_of_roof: float | None
    # The time it is placed by, split: at the roof that binds, and below it (None in cache).
    t_at_roof: float | None
    t_below_roof: float | None
    derived: bool  # bytes derived from the name, not counted by bench


@dataclass(frozen=True)
class BoundCount:
    side: str
    bound: str
    rows: int


@dataclass(frozen=True)
class MachineRoofline:
    machine: int
    ceilings: tuple[Ceiling, ...]
    points: tuple[Point, ...]
    counts: tuple[BoundCount, ...]  # rows per side and bound, CPU first
    # Each side's workload and path at its least and most work: the rows a table states.
    extremes: tuple[Point, ...]
    any_derived: bool


def _first(rows: pd.DataFrame, column: str) -> float | None:
    values = rows[column].dropna() if column in rows else pd.Series(dtype=float)
    return float(values.iloc[0]) if len(values) and values.iloc[0] > 0 else None


def _ceilings(rows: pd.DataFrame) -> list[Ceiling]:
    ceilings: list[Ceiling] = []
    cores = _first(rows, "context.cpu_physical_cores")
    all_cores = _first(rows, "context.cpu_peak_fp32_flops")
    if all_cores and cores:
        ceilings.append(Ceiling("cpu", COMPUTE_ROOF, "CPU fp32, 1 core", all_cores / cores))
        ceilings.append(Ceiling("cpu", COMPUTE_ROOF, f"CPU fp32, {cores:.0f} cores", all_cores))
    gpu_rows = rows[rows["backend"] == "gpu"]
    dtypes = gpu_rows["name"].str.extract(r"(?:dtype|precision):(\w+)", expand=False)
    for dtype in sorted(set(dtypes.fillna("fp32"))) if len(gpu_rows) else []:
        peak = _first(rows, f"context.gpu_peak_{dtype}_flops")
        if peak:
            ceilings.append(Ceiling("gpu", COMPUTE_ROOF, f"GPU {dtype}", peak))
    labels = set()
    for key, side, label in _MEMORY:
        value = _first(rows, f"context.{key}")
        if value and label not in labels:
            labels.add(label)
            ceilings.append(Ceiling(side, MEMORY_ROOF, label, value))
    return ceilings


def machine_roofline(summary: pd.DataFrame, machine: int) -> MachineRoofline:
    """The roofline of one machine from the placed summary (roofline.placed): its ceilings and
    the rows with a place under them."""
    rows = summary[summary["machine"] == machine]
    where = rows[rows["bound"].notna()]
    points = tuple(
        Point(
            name=str(r.name),
            side=str(r.backend),
            workload=str(r.workload),
            path=str(r.variant),
            intensity=float(r.arithmetic_intensity),
            flop_per_s=float(r.flop / r.t_placed),
            bound=str(r.bound),
            share_of_roof=None if pd.isna(r.share_of_roof) else float(r.share_of_roof),
            t_at_roof=None if pd.isna(r.t_at_roof) else float(r.t_at_roof),
            t_below_roof=None if pd.isna(r.t_below_roof) else float(r.t_below_roof),
            derived=bool(r.work_derived),
        )
        for r in where.itertuples()
    )
    counts = tuple(
        BoundCount(str(side), str(bound), int(n))
        for (side, bound), n in where.groupby(["backend", "bound"]).size().items()
    )
    kind = where["name"].str.extract(r"(?:dtype|precision):(\w+)", expand=False)
    ordered = where.assign(_kind=kind.fillna("fp32")).sort_values("flop", kind="stable")
    ends = ordered.groupby(["backend", "workload", "variant", "_kind"])
    picked = set(ends.head(1).index) | set(ends.tail(1).index)
    extremes = tuple(p for p, i in zip(points, where.index) if i in picked)
    ceilings = tuple(_ceilings(rows))
    return MachineRoofline(
        machine, ceilings, points, counts, extremes, any(p.derived for p in points)
    )


def rooflines(summary: pd.DataFrame) -> list[MachineRoofline]:
    """A roofline per machine that has rows placed under its roofs."""
    placed_rows = summary[summary["bound"].notna()]
    return [machine_roofline(summary, int(m)) for m in sorted(placed_rows["machine"].unique())]
