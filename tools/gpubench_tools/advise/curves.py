"""Measured utilisation curves: achieved FLOP/s against problem size, and what they predict for a
GEMM shape nobody measured.

A curve is one (backend, dtype, shape family, thread count) series of GEMM rows: the GPU's
kernel-only rows (operands already on the device, L2 flushed) by dtype and family, the CPU's
OpenBLAS rows by dtype, family and thread count. A shape is looked up on the curve of the family
whose measured shape lies nearest (log m, n, k), among the families whose measured sizes span
its FLOP count when any do, and interpolated linearly in log FLOP and log time (the same as log
FLOP/s) between the measured sizes on either side. Along a curve time never decreases with work.

Outside the measured range the curve is extrapolated, and every answer says so:
- above the largest size the *rate* is held (a big GEMM runs at the last measured rate, the
  saturated one);
- below the smallest size the line through the two smallest sizes continues, its slope kept
  between holding the time (they were all fixed cost) and holding the rate (all arithmetic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Literal

import numpy as np

from ..dataset import Point

__all__ = [
    "GemmShape",
    "Lookup",
    "RateCurve",
    "RateTable",
    "gpu_rate_table",
    "cpu_rate_table",
    "row_seconds",
    "cpu_threads",
]

Where = Literal["measured", "interpolated", "below", "above"]
# log2 distance beyond which a requested shape is called unlike the measured ones of its curve
# (8x in one dimension, or about 4.4x in each of two).
FAR_SHAPE = 3.0


@dataclass(frozen=True)
class GemmShape:
    """C (m x n) = A (m x k) B (k x n), row-major as bench lays them out."""

    m: int
    n: int
    k: int

    @property
    def flop(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def mnk(self) -> tuple[int, int, int]:
        return self.m, self.n, self.k

    def elements(self) -> tuple[int, int, int]:
        """Elements of A, B and C."""
        return self.m * self.k, self.k * self.n, self.m * self.n

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


def row_seconds(p: Point) -> float:
    """Seconds of one GEMM in a row: the kernel's event time on the GPU, the iteration on the CPU."""
    t = p.c("t_compute") if p.is_gpu else math.nan
    return t if math.isfinite(t) and t > 0 else p.time


def cpu_threads(p: Point) -> int:
    """OpenBLAS threads of a CPU row (`blas_threads`; older files named it `threads`)."""
    t = p.c("blas_threads", p.c("threads", 1.0))
    return int(t) if math.isfinite(t) and t >= 1 else 1


@dataclass(frozen=True)
class CurvePoint:
    shape: GemmShape
    seconds: float
    run_name: str

    @property
    def rate(self) -> float:
        return self.shape.flop / self.seconds


@dataclass(frozen=True)
class Lookup:
    """One GEMM time read off a curve, with where it came from."""

    seconds: float
    backend: str
    dtype: str
    family: str
    threads: int | None
    where: Where  # measured (this exact shape), interpolated, or extrapolated below/above
    flop_range: tuple[float, float]  # the curve's measured FLOP, smallest and largest
    nearest: GemmShape  # the measured shape that chose the family
    query_mnk: tuple[int, int, int]  # the shape asked for
    floor: str | None = None  # set when a bandwidth floor, not the curve, gave the time

    @property
    def extrapolated(self) -> bool:
        return self.where in ("below", "above")

    @property
    def shape_distance(self) -> float:
        """How far the nearest measured shape lies: the Euclidean distance of log2 m, n, k."""
        return float(np.linalg.norm(_log_dims(self.nearest) - np.log2(self.query_mnk)))

    @property
    def unlike_measured(self) -> bool:
        """True when the nearest measured shape of the curve used is far from the query (log2
        distance above FAR_SHAPE), so that the curve is only a rough guide to it."""
        return self.shape_distance > FAR_SHAPE


def _log_dims(shape: GemmShape) -> np.ndarray:
    return np.log2(np.asarray(shape.mnk, dtype=float))


@dataclass
class RateCurve:
    backend: str
    dtype: str
    family: str
    threads: int | None
    points: list[CurvePoint] = field(default_factory=list)

    def lookup(self, shape: GemmShape, nearest: GemmShape) -> Lookup:
        flops = np.array([p.shape.flop for p in self.points])
        lo, hi = float(flops.min()), float(flops.max())

        def answer(seconds: float, where: Where) -> Lookup:
            return Lookup(
                seconds,
                self.backend,
                self.dtype,
                self.family,
                self.threads,
                where,
                (lo, hi),
                nearest,
                shape.mnk,
            )

        exact = [p.seconds for p in self.points if p.shape == shape]
        if exact:
            return answer(float(np.median(exact)), "measured")
        # Several shapes of a family can share a FLOP count (1024x128x128 and 16x1024x1024):
        # their log times are averaged so that the interpolation sees one value per size.
        xs, inverse = np.unique(np.log(flops), return_inverse=True)
        log_seconds = np.log([p.seconds for p in self.points])
        ys = np.bincount(inverse, weights=log_seconds) / np.bincount(inverse)
        # Within a family more work does not take less time: a size measured slower than a
        # bigger one (cuBLAS's fp32 16x128x128 takes 54 us on the H100, 1024x128x128 10 us) is
        # a quirk of that one shape's kernel choice, which the exact shape keeps (above) but
        # its neighbours should not inherit. The curve is the running minimum from the top.
        ys = np.minimum.accumulate(ys[::-1])[::-1]
        x = math.log(shape.flop)
        if x > xs[-1]:
            return answer(math.exp(ys[-1] + x - xs[-1]), "above")
        if x >= xs[0]:
            return answer(math.exp(float(np.interp(x, xs, ys))), "interpolated")
        # Below the range: continue the line through the two smallest sizes in (log FLOP,
        # log time), its slope kept in [0, 1]: 0 holds the time (the smallest size was all
        # fixed cost, as on a GPU), 1 holds the rate (it was all arithmetic), in between the
        # mix the measurements show. One size alone gives no slope: the time is held.
        slope = 0.0
        if len(xs) >= 2:
            slope = float(np.clip((ys[1] - ys[0]) / (xs[1] - xs[0]), 0.0, 1.0))
        return answer(math.exp(ys[0] + slope * (x - xs[0])), "below")

    def covers(self, flop: float) -> bool:
        flops = [p.shape.flop for p in self.points]
        return min(flops) <= flop <= max(flops)


@dataclass
class RateTable:
    """Every curve of one backend, keyed by (dtype, family, threads)."""

    backend: str
    curves: dict[tuple[str, str, int | None], RateCurve] = field(default_factory=dict)

    def add(self, dtype: str, family: str, threads: int | None, point: CurvePoint) -> None:
        key = (dtype, family, threads)
        if key not in self.curves:
            self.curves[key] = RateCurve(self.backend, dtype, family, threads)
        self.curves[key].points.append(point)

    @property
    def dtypes(self) -> list[str]:
        return sorted({d for d, _, _ in self.curves})

    def threads(self, dtype: str) -> list[int | None]:
        return sorted({t for d, _, t in self.curves if d == dtype}, key=lambda t: t or 0)

    def lookup(self, shape: GemmShape, dtype: str, threads: int | None = None) -> Lookup | None:
        """The time of `shape` on the curve of the family whose measured shape lies nearest
        (Euclidean distance of log2 m, n, k: a 64x64x4096 product is nearer a long-reduction
        family than the squares), among the families whose measured sizes span its FLOP count
        when there are any: a neighbouring family's interpolation is better evidence than this
        family's extrapolation. None when nothing of this dtype (and thread count) was measured."""
        curves = [c for (d, _, t), c in self.curves.items() if d == dtype and t == threads]
        if not curves:
            return None
        covering = [c for c in curves if c.covers(shape.flop)]
        target = _log_dims(shape)
        best: tuple[float, str, RateCurve, GemmShape] | None = None
        for curve in covering or curves:
            for p in curve.points:
                dist = float(np.linalg.norm(_log_dims(p.shape) - target))
                if best is None or (dist, curve.family) < best[:2]:
                    best = (dist, curve.family, curve, p.shape)
        assert best is not None
        return best[2].lookup(shape, best[3])


def gpu_rate_table(points: Iterable[Point]) -> RateTable:
    """The kernel-only GEMM rows, by dtype and shape family."""
    table = RateTable("gpu")
    for p in points:
        if p.is_kernel_only and p.c("flop") > 0 and row_seconds(p) > 0:
            shape = GemmShape(*p.mnk)
            table.add(p.dtype, p.shape, None, CurvePoint(shape, row_seconds(p), p.run_name))
    return table


def cpu_rate_table(points: Iterable[Point]) -> RateTable:
    """The CPU GEMM rows, by dtype, shape family and OpenBLAS thread count."""
    table = RateTable("cpu")
    for p in points:
        if p.is_matmul and p.backend == "cpu" and p.c("flop") > 0 and p.time > 0:
            shape = GemmShape(*p.mnk)
            table.add(p.dtype, p.shape, cpu_threads(p), CurvePoint(shape, p.time, p.run_name))
    return table
