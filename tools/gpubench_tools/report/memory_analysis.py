"""Device memory: what the GPU rows measured against what the model of each workload counts, the
largest batch that fits, and what allocating and freeing memory costs the host.

- Every GPU training row carries `device_bytes_peak` (the largest drop in free device memory while
  it ran, from cudaMemGetInfo) and `device_bytes_model` (the workload's own count of parameters,
  gradients, activations and workspace).
- `memory/gpu/largest_batch/net:<cnn|mlp>/data:D[/hidden:H]/precision:P` rows (label
  `workload=memory variant=largest_batch net=... precision=...`) train at about the largest batch
  the model says fits in the free memory: counters `batch` (run), `batch_largest` (the model's),
  `device_bytes_free`, `device_bytes_model`, `device_bytes_peak`, `t_step`.
- The allocation probes `overhead/alloc/{malloc,free}/{device,pinned}/bytes:B` and
  `overhead/alloc/async/bytes:B` (labels `probe=alloc_malloc|alloc_free|alloc_async`,
  `host=device|pinned`) time one call per iteration on the host clock, `t_wall` seconds per call,
  over a fixed number of Google Benchmark repetitions; the median and slowest decile are taken
  over those repetitions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..dataset import Point, Source

__all__ = [
    "ALLOC_KINDS",
    "MemoryRow",
    "FamilySummary",
    "LargestBatch",
    "AllocCost",
    "memory_rows",
    "family_summaries",
    "worst_disagreements",
    "largest_batches",
    "alloc_costs",
    "pool_savings",
    "median_and_p90",
]

# (probe label, host label) -> what the probe calls, in the order the charts and tables list them.
ALLOC_KINDS: dict[tuple[str, str], str] = {
    ("alloc_malloc", "device"): "cudaMalloc",
    ("alloc_free", "device"): "cudaFree",
    ("alloc_async", "device"): "cudaMallocAsync + cudaFreeAsync (pool)",
    ("alloc_malloc", "pinned"): "cudaMallocHost",
    ("alloc_free", "pinned"): "cudaFreeHost",
}
MALLOC, FREE, POOL = (
    ALLOC_KINDS[("alloc_malloc", "device")],
    ALLOC_KINDS[("alloc_free", "device")],
    ALLOC_KINDS[("alloc_async", "device")],
)


@dataclass
class MemoryRow:
    """A GPU row's measured and modelled device bytes."""

    point: Point
    measured_bytes: float
    modelled_bytes: float

    @property
    def family(self) -> str:
        """The row's kind: workload, variant and the precision where the label gives one
        ("mlp eager", "mlp eager bf16", "matmul cublas_kernel fp16")."""
        labels = self.point.labels
        parts = [self.point.workload or "?", labels.get("variant", "?")]
        precision = labels.get("precision", labels.get("dtype"))
        return " ".join(parts + ([precision] if precision else []))

    @property
    def ratio(self) -> float:
        """Measured over modelled: above 1 the run needed more than the model counts."""
        return self.measured_bytes / self.modelled_bytes


def memory_rows(source: Source) -> list[MemoryRow]:
    """Every GPU row with both a positive measured peak and a positive model count."""
    out = []
    for p in source.points:
        measured, modelled = p.c("device_bytes_peak"), p.c("device_bytes_model")
        if p.is_gpu and measured > 0 and modelled > 0:
            out.append(MemoryRow(p, measured, modelled))
    return out


@dataclass
class FamilySummary:
    family: str
    rows: int
    median_ratio: float
    min_ratio: float
    max_ratio: float
    median_excess_bytes: float  # median of measured - modelled


def family_summaries(rows: list[MemoryRow]) -> list[FamilySummary]:
    groups: dict[str, list[MemoryRow]] = {}
    for r in rows:
        groups.setdefault(r.family, []).append(r)
    out = []
    for family in sorted(groups):
        ratios = np.array([r.ratio for r in groups[family]])
        excess = np.array([r.measured_bytes - r.modelled_bytes for r in groups[family]])
        out.append(
            FamilySummary(
                family=family,
                rows=len(ratios),
                median_ratio=float(np.median(ratios)),
                min_ratio=float(ratios.min()),
                max_ratio=float(ratios.max()),
                median_excess_bytes=float(np.median(excess)),
            )
        )
    return out


def worst_disagreements(rows: list[MemoryRow], count: int = 8) -> list[MemoryRow]:
    """The rows whose measurement is furthest from the model, by factor either way."""
    return sorted(rows, key=lambda r: -abs(math.log(r.ratio)))[:count]


@dataclass
class LargestBatch:
    point: Point

    @property
    def net(self) -> str:
        return self.point.labels.get("net", "?")

    @property
    def data(self) -> str:
        return self.point.labels.get("data", "?")

    @property
    def case(self) -> str:
        """ "cnn, data cifar10, fp32" / "mlp, data synthetic, hidden 4096x2, bf16"."""
        hidden = _name_parameter(self.point.run_name, "hidden")
        parts = [self.net, f"data {self.data}"] + ([f"hidden {hidden}"] if hidden else [])
        return ", ".join(parts + [self.point.precision])

    def c(self, key: str) -> float:
        return self.point.c(key)


def _name_parameter(run_name: str, key: str) -> str | None:
    """The value of a `key:value` segment of a benchmark name (text the counters cannot hold,
    such as "4096x2")."""
    for segment in run_name.split("/"):
        name, sep, value = segment.partition(":")
        if sep and name == key:
            return value
    return None


def largest_batches(source: Source) -> list[LargestBatch]:
    rows = [
        LargestBatch(p)
        for p in source.points
        if p.is_gpu and p.workload == "memory" and p.labels.get("variant") == "largest_batch"
    ]
    return sorted(rows, key=lambda r: r.case)


def median_and_p90(values: list[float]) -> tuple[float, float]:
    """(median, slowest decile) of per-repetition times. The decile is the smallest value at or
    above 90% of the repetitions (the inverted CDF: with ten repetitions, the slowest but one);
    NaN with fewer than two repetitions, where no spread was measured."""
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return math.nan, math.nan
    p90 = float(np.quantile(a, 0.9, method="inverted_cdf")) if a.size >= 2 else math.nan
    return float(np.median(a)), p90


@dataclass
class AllocCost:
    kind: str  # a value of ALLOC_KINDS
    nbytes: float
    median_s: float
    p90_s: float
    repetitions: int


def alloc_costs(source: Source) -> dict[str, list[AllocCost]]:
    """Per allocation kind (in ALLOC_KINDS order), the cost per call at each size measured."""
    out: dict[str, list[AllocCost]] = {}
    for p in source.points:
        kind = ALLOC_KINDS.get((p.probe or "", p.labels.get("host", "")))
        nbytes = p.c("bytes", p.c("device_bytes"))
        if kind is None or not math.isfinite(nbytes):
            continue
        samples = p.counter_samples.get("t_wall") or [p.c("t_wall", p.time)]
        median, p90 = median_and_p90(samples)
        out.setdefault(kind, []).append(AllocCost(kind, nbytes, median, p90, len(samples)))
    order = list(ALLOC_KINDS.values())
    return {
        kind: sorted(out[kind], key=lambda a: a.nbytes) for kind in sorted(out, key=order.index)
    }


def pool_savings(costs: dict[str, list[AllocCost]]) -> list[tuple[float, float]]:
    """(bytes, (cudaMalloc + cudaFree) / pool pair) per size where all three were measured: how
    many times cheaper the warm pool's allocate-and-free is than the driver's (medians).
    """
    by_size = {
        kind: {a.nbytes: a.median_s for a in costs.get(kind, [])} for kind in (MALLOC, FREE, POOL)
    }
    sizes = sorted(set(by_size[MALLOC]) & set(by_size[FREE]) & set(by_size[POOL]))
    return [
        (n, (by_size[MALLOC][n] + by_size[FREE][n]) / by_size[POOL][n])
        for n in sizes
        if by_size[POOL][n] > 0
    ]
