"""Tiny-MLP training rows: per-epoch times, GPU/CPU speedup grid, the Iris case, readback cost."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ..dataset import GPU_MLP_VARIANTS, Point, Source

__all__ = [
    "MlpPoint",
    "mlp_points",
    "sweep_choice",
    "sweep_lines",
    "speedup_grid",
    "iris_bars",
    "readback_table",
    "best_cpu",
]


@dataclass
class MlpPoint:
    point: Point
    backend: str  # "cpu" or "gpu"
    variant: str
    data: str
    batch: int
    hidden: int
    readback: int
    threads: int | None
    input: str
    layers: int = 1

    @property
    def t_epoch(self) -> float:
        return self.point.c("t_epoch")

    @property
    def t_epoch_range(self) -> tuple[float, float]:
        lo, hi = self.point.spread
        return self.t_epoch * lo, self.t_epoch * hi

    @property
    def kernels(self) -> float | None:
        """Kernel launches per step (files written before `kernels_per_step` existed carried
        that number as `kernels`)."""
        k = self.point.c("kernels_per_step")
        if not math.isfinite(k):
            k = self.point.c("kernels")
        return k if math.isfinite(k) else None

    @property
    def steps_per_epoch(self) -> float:
        """Optimiser steps in one epoch: samples seen per epoch over the batch size."""
        sps = self.point.c("samples_per_s")
        if math.isfinite(sps) and sps > 0 and self.batch > 0:
            return max(1.0, round(sps * self.t_epoch / self.batch))
        return 1.0

    @property
    def net(self) -> str:
        """The hidden layers as the benchmark name writes them: "512", or "4096x2" for two."""
        return f"{self.hidden}x{self.layers}" if self.layers > 1 else str(self.hidden)

    @property
    def name(self) -> str:
        if self.backend == "gpu":
            extra = "" if self.input in ("", "resident") else f", input {self.input}"
            return f"GPU {self.variant}{extra}"
        t = self.threads or 1
        return f"CPU {self.variant}, {t} thread{'s' if t > 1 else ''}"


def mlp_points(
    source: Source, layers: int | None = 1, precision: str | None = "fp32"
) -> list[MlpPoint]:
    """The MLP rows of one file. By default only nets with one hidden layer: a 64x2 net reports
    hidden=64 too, and mixing it in would put two different nets in one chart cell; and only
    fp32 rows, for the same reason (None: every precision)."""
    out = []
    for p in source.mlp(precision):
        n_layers = int(p.c("hidden_layers", 1.0))
        if layers is not None and n_layers != layers:
            continue
        variant = p.labels.get("variant", "?")
        gpu = p.is_gpu
        threads = p.c("threads")
        out.append(
            MlpPoint(
                point=p,
                backend="gpu" if gpu else "cpu",
                variant=variant,
                data=p.labels.get("data", "?"),
                batch=int(p.c("batch")),
                hidden=int(p.c("hidden", 0)),
                readback=int(p.c("readback", 0)) if math.isfinite(p.c("readback")) else 0,
                threads=int(threads) if math.isfinite(threads) and not gpu else None,
                input=p.labels.get("input", ""),
                layers=n_layers,
            )
        )
    return out


def _resident(points: list[MlpPoint]) -> list[MlpPoint]:
    """Input-transfer variants answer a different question; the main charts use resident data."""
    return [m for m in points if m.input in ("", "resident") or m.backend == "cpu"]


def _preferred_readback(points: list[MlpPoint]) -> int | None:
    """Readback 0 (never) measures training alone; else the most common setting."""
    if not points:
        return None
    values = Counter(m.readback for m in points)
    return 0 if 0 in values else values.most_common(1)[0][0]


def sweep_choice(points: list[MlpPoint]) -> tuple[str, int | None, list[int]]:
    """(data set, readback, hidden widths to show) for the time-per-epoch chart."""
    datas = {m.data for m in points}
    data = "synthetic" if "synthetic" in datas else (sorted(datas)[0] if datas else "")
    pts = [m for m in _resident(points) if m.data == data]
    readback = _preferred_readback(pts)
    hiddens = sorted({m.hidden for m in pts if m.readback == readback})
    if len(hiddens) > 3:
        hiddens = [hiddens[0], hiddens[len(hiddens) // 2], hiddens[-1]]
    return data, readback, hiddens


def sweep_lines(
    points: list[MlpPoint], data: str, hidden: int, readback: int | None
) -> dict[str, list[MlpPoint]]:
    lines: dict[str, list[MlpPoint]] = {}
    for m in _resident(points):
        # The CPU paths always have the loss on the host, whatever the readback setting says.
        same_readback = m.readback == readback or m.backend == "cpu"
        if m.data == data and m.hidden == hidden and same_readback:
            lines.setdefault(m.name, []).append(m)
    for v in lines.values():
        v.sort(key=lambda m: m.batch)
    return dict(sorted(lines.items(), key=lambda kv: (kv[0].startswith("GPU"), kv[0])))


def best_cpu(
    points: list[MlpPoint], data: str, batch: int, hidden: int, readback: int | None
) -> MlpPoint | None:
    """The fastest CPU variant/thread count for one configuration (same readback if measured)."""
    cands = [
        m
        for m in points
        if m.backend == "cpu" and m.data == data and m.batch == batch and m.hidden == hidden
    ]
    same = [m for m in cands if m.readback == readback]
    cands = same or cands
    return min(cands, key=lambda m: m.t_epoch) if cands else None


def speedup_grid(
    points: list[MlpPoint], variant: str
) -> tuple[list[int], list[int], list[list[float]]]:
    """(batches, hiddens, speedup[hidden][batch]) of one GPU variant against the best CPU run,
    on synthetic data; NaN where either side was not measured."""
    pts = [m for m in _resident(points) if m.data == "synthetic"]
    readback = _preferred_readback(pts)
    gpu = {
        (m.batch, m.hidden): m
        for m in pts
        if m.variant == variant and m.backend == "gpu" and m.readback == readback
    }
    batches = sorted({m.batch for m in pts})
    hiddens = sorted({m.hidden for m in pts})
    grid = []
    for h in hiddens:
        row = []
        for b in batches:
            g = gpu.get((b, h))
            c = best_cpu(pts, "synthetic", b, h, readback)
            row.append(
                c.t_epoch / g.t_epoch
                if g is not None and c is not None and g.t_epoch > 0
                else math.nan
            )
        grid.append(row)
    return batches, hiddens, grid


def iris_bars(points: list[MlpPoint]) -> list[MlpPoint]:
    """One bar per variant (and CPU thread count) on Iris. Each uses readback 0 where measured,
    else its least frequent readback, so that bars compare training work, not loss printing."""
    pts = [m for m in _resident(points) if m.data == "iris"]
    by_name: dict[str, list[MlpPoint]] = {}
    for m in pts:
        by_name.setdefault(m.name, []).append(m)

    def rank(m: MlpPoint) -> float:
        return 0 if m.readback == 0 else 1.0 / m.readback

    chosen = [min(ms, key=rank) for ms in by_name.values()]
    order = {"cpu": 0, "gpu": 1}
    gpu_order = {v: i for i, v in enumerate(GPU_MLP_VARIANTS)}
    chosen.sort(
        key=lambda m: (order[m.backend], gpu_order.get(m.variant, 9), m.variant, m.threads or 0)
    )
    return chosen


def readback_table(points: list[MlpPoint]) -> tuple[str, dict[str, dict[int, MlpPoint]]]:
    """(data set, {variant name: {readback: point}}) for variants measured with at least two
    readback settings at the same batch and width; Iris is preferred because it is the case
    where one synchronisation per step is largest relative to the work."""
    for data in ["iris"] + sorted({m.data for m in points} - {"iris"}):
        groups: dict[tuple[str, int, int], dict[int, MlpPoint]] = {}
        for m in _resident(points):
            if m.data == data:
                groups.setdefault((m.name, m.batch, m.hidden), {})[m.readback] = m
        multi = {k: v for k, v in groups.items() if len(v) >= 2}
        if multi:
            # One (batch, hidden) configuration: the one most variants were measured at.
            config = Counter((b, h) for _, b, h in multi).most_common(1)[0][0]
            table = {name: v for (name, b, h), v in multi.items() if (b, h) == config}
            return data, dict(
                sorted(table.items(), key=lambda kv: (kv[0].startswith("GPU"), kv[0]))
            )
    return "", {}
